#include <attnrt/harness/safetensors.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/yaml_input.hpp>  // shorten_for_message

#include <cstring>
#include <fstream>
#include <limits>

namespace attnrt {

SafetensorsFile load_safetensors(const std::filesystem::path& path) {
  const std::string where = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(where + ": cannot open safetensors file");
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  // Every entry's size and range are checked against the file before anything is allocated.
  const SafetensorsHeader header = read_safetensors_header(in, file_size, where);
  SafetensorsFile file;
  file.metadata = header.metadata;
  for (const auto& [name, e] : header.tensors) {
    const std::string tw = where + ": tensor '" + shorten_for_message(name) + "'";
    const bool narrow = e.dtype.code == kDLInt && e.dtype.bits == 64;  // stored as int32 in memory
    HostTensor t(e.shape, narrow ? dl_int32() : e.dtype);
    const uint64_t bytes = e.end - e.begin;
    in.seekg(static_cast<std::streamoff>(header.data_start + e.begin));
    if (narrow) {
      std::vector<int64_t> wide(static_cast<size_t>(t.numel()));
      in.read(reinterpret_cast<char*>(wide.data()), static_cast<std::streamsize>(bytes));
      for (int64_t i = 0; i < t.numel(); ++i) {
        if (wide[i] < std::numeric_limits<int32_t>::min() || wide[i] > std::numeric_limits<int32_t>::max()) {
          throw Error(tw + ": element " + std::to_string(i) + " (" + std::to_string(wide[i]) +
                      ") does not fit the int32 it is loaded as");
        }
        t.set(i, static_cast<double>(wide[i]));
      }
    } else {
      in.read(static_cast<char*>(t.data()), static_cast<std::streamsize>(bytes));
    }
    if (!in) throw Error(tw + ": read failed");
    file.tensors.emplace(name, std::move(t));
  }
  return file;
}

}  // namespace attnrt
