// Reader for the safetensors format (Hugging Face): an 8-byte little-endian header length, a
// JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {...}}, then raw data.
#pragma once

#include <attnrt/harness/host_tensor.hpp>

#include <cstdint>
#include <filesystem>
#include <istream>
#include <map>
#include <string>
#include <vector>

namespace attnrt {

struct SafetensorsFile {
  std::map<std::string, HostTensor> tensors;
  std::map<std::string, std::string> metadata;
};

// One tensor of a header, checked: its bytes lie inside the file and are as many as its shape
// and dtype need.
struct SafetensorsEntry {
  DLDataType dtype{};          // as stored (I64 is stored; load_safetensors narrows it to I32)
  std::vector<int64_t> shape;  // every extent >= 0
  uint64_t begin = 0;          // byte offsets into the data section (after the header), end >= begin
  uint64_t end = 0;
};

struct SafetensorsHeader {
  uint64_t data_start = 0;  // file offset of the data section: 8 + the header's length
  std::map<std::string, SafetensorsEntry> tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__"; values that are not strings as JSON
};

// Reads and checks the length and the JSON header at the start of `in`, a file of `file_size`
// bytes (header of at most 100 MiB, nested at most 64 levels; every entry's dtype, shape and byte
// range), so that nothing is allocated for a tensor before its size is known to be in the file.
// Throws attnrt::Error naming `where` and what is malformed.
SafetensorsHeader read_safetensors_header(std::istream& in, uint64_t file_size, const std::string& where);

// Loads every tensor (F32, F16, BF16, F64, I32, I64 -> I32 checked) into host memory.
// Throws attnrt::Error naming the file and what is malformed.
SafetensorsFile load_safetensors(const std::filesystem::path& path);

}  // namespace attnrt
