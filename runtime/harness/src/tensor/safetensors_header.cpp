// The header half of the safetensors reader, apart from the tensors' storage (host_tensor.cpp) so
// that the fuzz build (fuzz/, clang) can take it alone.
#include <attnrt/harness/safetensors.hpp>
#include <attnrt/runtime/error.hpp>

#include <nlohmann/json.hpp>

namespace attnrt {
namespace {

DLDataType dtype_from(const std::string& name, const std::string& where) {
  if (name == "F32") return DLDataType{kDLFloat, 32, 1};
  if (name == "F16") return DLDataType{kDLFloat, 16, 1};
  if (name == "BF16") return DLDataType{kDLBfloat, 16, 1};
  if (name == "F64") return DLDataType{kDLFloat, 64, 1};
  if (name == "I32") return DLDataType{kDLInt, 32, 1};
  if (name == "I64") return DLDataType{kDLInt, 64, 1};
  throw Error(where + ": unsupported dtype '" + name + "'");
}

}  // namespace

SafetensorsHeader read_safetensors_header(std::istream& in, uint64_t file_size, const std::string& where) {
  uint64_t header_len = 0;
  unsigned char len_bytes[8];
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(len_bytes), 8))
    throw Error(where + ": file too short for a safetensors header");
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > file_size - 8 || header_len > (100u << 20))
    throw Error(where + ": header length " + std::to_string(header_len) + " exceeds the file");
  std::string text(header_len, '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_len));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": malformed JSON header: " + e.what());
  }
  SafetensorsHeader header;
  header.data_start = 8 + header_len;
  for (const auto& [name, entry] : j.items()) {
    if (name == "__metadata__") {
      for (const auto& [k, v] : entry.items()) header.metadata[k] = v.is_string() ? v.get<std::string>() : v.dump();
      continue;
    }
    const std::string tw = where + ": tensor '" + name + "'";
    try {
      SafetensorsEntry e;
      e.dtype = dtype_from(entry.at("dtype").get<std::string>(), tw);
      e.shape = entry.at("shape").get<std::vector<int64_t>>();
      const auto offsets = entry.at("data_offsets").get<std::vector<uint64_t>>();
      if (offsets.size() != 2 || offsets[1] < offsets[0] || header.data_start + offsets[1] > file_size) {
        throw Error(tw + ": data_offsets outside the file");
      }
      e.begin = offsets[0];
      e.end = offsets[1];
      int64_t numel = 1;  // as HostTensor counts them
      for (int64_t d : e.shape) {
        if (d < 0) throw Error("tensor extent must be >= 0");
        numel *= d;
      }
      const uint64_t expected = static_cast<uint64_t>(numel) * (e.dtype.bits / 8);
      if (e.end - e.begin != expected) {
        throw Error(tw + ": " + std::to_string(e.end - e.begin) + " bytes for " + std::to_string(expected) +
                    " expected");
      }
      header.tensors.emplace(name, std::move(e));
    } catch (const nlohmann::json::exception& e) {
      throw Error(tw + ": malformed entry: " + e.what());
    }
  }
  return header;
}

}  // namespace attnrt
