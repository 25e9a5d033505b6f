// A safetensors file (the workload's data, `workload.file`), its 8-byte length and JSON header
// read by read_safetensors_header, as load_safetensors does before it allocates anything. An
// accepted header must describe tensors load_safetensors can hold: every byte range inside the
// file's data, as many bytes as the shape and dtype need, a number of elements an int64 counts.
#include <attnrt/harness/safetensors.hpp>

#include <sstream>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnrt;
  std::istringstream in(fuzz::text_of(data, size));
  fuzz::expect_clean("read_safetensors_header", [&] {
    const SafetensorsHeader h = read_safetensors_header(in, size, "/fuzz/data.safetensors");
    fuzz::check(h.data_start >= 8 && h.data_start <= size, "the data section starts inside the file");
    for (const auto& [name, e] : h.tensors) {
      fuzz::check(e.begin <= e.end && e.end <= size - h.data_start, "a tensor's bytes lie in the data section", name);
      unsigned __int128 elements = 1;
      for (int64_t d : e.shape) {
        fuzz::check(d >= 0, "extents are >= 0", name);
        elements = elements * static_cast<uint64_t>(d);
        fuzz::check(elements <= static_cast<unsigned __int128>(INT64_MAX), "int64 counts the elements", name);
      }
      fuzz::check(elements * (e.dtype.bits / 8) == e.end - e.begin, "the bytes are what shape and dtype need", name);
    }
  });
  return 0;
}
