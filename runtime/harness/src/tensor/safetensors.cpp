#include <attnrt/harness/safetensors.hpp>
#include <attnrt/runtime/error.hpp>

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>

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

SafetensorsFile load_safetensors(const std::filesystem::path& path) {
  const std::string where = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(where + ": cannot open safetensors file");
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  uint64_t header_len = 0;
  unsigned char len_bytes[8];
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(len_bytes), 8))
    throw Error(where + ": file too short for a safetensors header");
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > file_size - 8 || header_len > (100u << 20))
    throw Error(where + ": header length " + std::to_string(header_len) + " exceeds the file");
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(header);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": malformed JSON header: " + e.what());
  }
  const uint64_t data_start = 8 + header_len;
  SafetensorsFile file;
  for (const auto& [name, entry] : j.items()) {
    if (name == "__metadata__") {
      for (const auto& [k, v] : entry.items()) file.metadata[k] = v.is_string() ? v.get<std::string>() : v.dump();
      continue;
    }
    const std::string tw = where + ": tensor '" + name + "'";
    try {
      const DLDataType dtype = dtype_from(entry.at("dtype").get<std::string>(), tw);
      const auto shape = entry.at("shape").get<std::vector<int64_t>>();
      const auto offsets = entry.at("data_offsets").get<std::vector<uint64_t>>();
      if (offsets.size() != 2 || offsets[1] < offsets[0] || data_start + offsets[1] > file_size) {
        throw Error(tw + ": data_offsets outside the file");
      }
      const bool narrow = dtype.code == kDLInt && dtype.bits == 64;  // stored as int32 in memory
      HostTensor t(shape, narrow ? dl_int32() : dtype);
      const uint64_t expected = static_cast<uint64_t>(t.numel()) * (dtype.bits / 8);
      if (offsets[1] - offsets[0] != expected) {
        throw Error(tw + ": " + std::to_string(offsets[1] - offsets[0]) + " bytes for " + std::to_string(expected) +
                    " expected");
      }
      in.seekg(static_cast<std::streamoff>(data_start + offsets[0]));
      if (narrow) {
        std::vector<int64_t> wide(t.numel());
        in.read(reinterpret_cast<char*>(wide.data()), static_cast<std::streamsize>(expected));
        for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(wide[i]));
      } else {
        in.read(static_cast<char*>(t.data()), static_cast<std::streamsize>(expected));
      }
      if (!in) throw Error(tw + ": read failed");
      file.tensors.emplace(name, std::move(t));
    } catch (const nlohmann::json::exception& e) {
      throw Error(tw + ": malformed entry: " + e.what());
    }
  }
  return file;
}

}  // namespace attnrt
