// Helpers shared by attnrt bench's modes (cmd_bench.cpp, bench_context_parallel.cpp): option
// lists, and device buffers filled from one random block.
#pragma once

#include <attnrt/harness/host_tensor.hpp>
#include <attnrt/runtime/cuda_memory.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace attnrt::cli {

// "a,b,c" -> {"a", "b", "c"} (empty items dropped).
std::vector<std::string> split(const std::string& s);
// "64,128" -> {64, 128}; throws attnrt::Error naming --`what` for a non-integer or non-positive item.
std::vector<int> split_ints(const std::string& s, const char* what);

// A normal random block of 4 Mi elements of `dtype` from `seed`. Benchmarks tile it over their
// device buffers: drawing gigabytes of normals on the host took longer than the kernels' timing,
// and the scores only need realistic statistics.
HostTensor random_block(DLDataType dtype, uint64_t seed);
// Fills `buffer` with `block`'s elements repeated, starting at element `first` of the block (so
// two buffers filled from different starts do not hold the same values).
void upload_repeating(CudaBuffer& buffer, const HostTensor& block, int64_t first = 0);

}  // namespace attnrt::cli
