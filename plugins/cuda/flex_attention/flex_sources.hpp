// The headers NVRTC compiles flex_attention's kernels from, embedded in the plugin at build time
// (flex_sources.cpp.in): flash_attention_2's forward mainloop and the attnrt_cuda pieces it
// includes, the flex policy, and stand-ins for the four standard headers they name (NVRTC has
// no C++ standard library).
#pragma once

#include <attnrt_kernels/flex/nvrtc.hpp>

#include <vector>

namespace attnrt::plugins::flex_cuda {

const std::vector<kernels::flex::NvrtcHeader>& flex_headers();

}  // namespace attnrt::plugins::flex_cuda
