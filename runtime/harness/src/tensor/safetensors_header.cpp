// The header half of the safetensors reader, apart from the tensors' storage (host_tensor.cpp) so
// that the fuzz build (fuzz/, clang) can take it alone.
#include <attnrt/harness/safetensors.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/yaml_input.hpp>  // shorten_for_message

#include <nlohmann/json.hpp>

#include <limits>

namespace attnrt {
namespace {

constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;
constexpr int kMaxHeaderDepth = 64;

DLDataType dtype_from(const std::string& name, const std::string& where) {
  if (name == "F32") return DLDataType{kDLFloat, 32, 1};
  if (name == "F16") return DLDataType{kDLFloat, 16, 1};
  if (name == "BF16") return DLDataType{kDLBfloat, 16, 1};
  if (name == "F64") return DLDataType{kDLFloat, 64, 1};
  if (name == "I32") return DLDataType{kDLInt, 32, 1};
  if (name == "I64") return DLDataType{kDLInt, 64, 1};
  throw Error(where + ": unsupported dtype '" + shorten_for_message(name) + "'");
}

// A JSON array of integers in [0, max]; nlohmann's get<int64_t>() on a float or an out-of-range
// number converts it with undefined behaviour, so each element's kind is checked first.
std::vector<uint64_t> extents(const nlohmann::json& j, const char* field, uint64_t max, const std::string& where) {
  if (!j.is_array()) throw Error(where + ": '" + field + "' must be a list of integers");
  std::vector<uint64_t> out;
  for (const nlohmann::json& e : j) {
    if (e.is_number_unsigned() && e.get<uint64_t>() <= max) {
      out.push_back(e.get<uint64_t>());
    } else if (e.is_number_integer() && !e.is_number_unsigned() && e.get<int64_t>() >= 0 &&
               static_cast<uint64_t>(e.get<int64_t>()) <= max) {
      out.push_back(static_cast<uint64_t>(e.get<int64_t>()));
    } else {
      throw Error(where + ": '" + field + "' holds " + shorten_for_message(e.dump()) +
                  "; expected integers from 0 to " + std::to_string(max));
    }
  }
  return out;
}

}  // namespace

SafetensorsHeader read_safetensors_header(std::istream& in, uint64_t file_size, const std::string& where) {
  unsigned char len_bytes[8];
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(len_bytes), 8))
    throw Error(where + ": file too short for a safetensors header");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > file_size - 8 || header_len > kMaxHeaderBytes)
    throw Error(where + ": header length " + std::to_string(header_len) + " exceeds the file");
  std::string text(header_len, '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(header_len)))
    throw Error(where + ": header of " + std::to_string(header_len) + " bytes could not be read");
  auto depth_limit = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > kMaxHeaderDepth) {
      throw Error(where + ": header nested deeper than " + std::to_string(kMaxHeaderDepth) + " levels");
    }
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, depth_limit);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": malformed JSON header: " + e.what());
  }
  if (!j.is_object()) throw Error(where + ": the header must be a JSON object, not " + std::string(j.type_name()));

  SafetensorsHeader header;
  header.data_start = 8 + header_len;
  const uint64_t data_bytes = file_size - header.data_start;
  for (const auto& [name, entry] : j.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) throw Error(where + ": '__metadata__' must be an object");
      for (const auto& [k, v] : entry.items()) header.metadata[k] = v.is_string() ? v.get<std::string>() : v.dump();
      continue;
    }
    const std::string tw = where + ": tensor '" + shorten_for_message(name) + "'";
    if (!entry.is_object()) throw Error(tw + ": expected an object with dtype, shape and data_offsets");
    if (!entry.contains("dtype") || !entry["dtype"].is_string()) throw Error(tw + ": missing string 'dtype'");
    if (!entry.contains("shape")) throw Error(tw + ": missing 'shape'");
    if (!entry.contains("data_offsets")) throw Error(tw + ": missing 'data_offsets'");
    SafetensorsEntry e;
    e.dtype = dtype_from(entry["dtype"].get<std::string>(), tw);
    // Extents as large as int64 holds; their product is checked below, before anything relies on it.
    for (uint64_t d : extents(entry["shape"], "shape", std::numeric_limits<int64_t>::max(), tw))
      e.shape.push_back(static_cast<int64_t>(d));
    const std::vector<uint64_t> offsets = extents(entry["data_offsets"], "data_offsets", data_bytes, tw);
    if (offsets.size() != 2 || offsets[1] < offsets[0]) {
      throw Error(tw + ": data_offsets must be [begin, end] with begin <= end, inside the " +
                  std::to_string(data_bytes) + " bytes of data");
    }
    e.begin = offsets[0];
    e.end = offsets[1];
    // Elements and bytes the shape needs, without overflow: the elements must be countable in
    // int64 (HostTensor::numel), whatever the order of the extents, even when one of them is 0.
    uint64_t elements = 1;
    bool empty = false;
    for (int64_t d : e.shape) {
      const auto ud = static_cast<uint64_t>(d);
      if (ud == 0) {
        empty = true;
      } else if (elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / ud) {
        throw Error(tw + ": shape " + shorten_for_message(entry["shape"].dump()) +
                    " has more elements than an int64 counts");
      } else {
        elements *= ud;
      }
    }
    const uint64_t element = e.dtype.bits / 8;
    const uint64_t bytes = empty ? 0 : (elements > data_bytes / element ? data_bytes + 1 : elements * element);
    if (bytes != e.end - e.begin) {
      throw Error(tw + ": data_offsets hold " + std::to_string(e.end - e.begin) + " bytes; its shape and dtype need " +
                  (bytes > data_bytes ? "more than the file holds" : std::to_string(bytes)));
    }
    header.tensors.emplace(name, std::move(e));
  }
  return header;
}

}  // namespace attnrt
