// Reader for the safetensors format (Hugging Face): an 8-byte little-endian header length, a
// JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {...}}, then raw data.
#pragma once

#include <attnrt/harness/host_tensor.hpp>

#include <filesystem>
#include <map>
#include <string>

namespace attnrt {

struct SafetensorsFile {
  std::map<std::string, HostTensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Loads every tensor (F32, F16, BF16, F64, I32, I64 -> I32 checked) into host memory.
// Throws attnrt::Error naming the file and what is malformed.
SafetensorsFile load_safetensors(const std::filesystem::path& path);

}  // namespace attnrt
