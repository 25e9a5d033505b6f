// How attnrt times a call: `warmup` untimed calls, then the median of `iterations` timed ones.
// On a CUDA device each call is bracketed by CUDA events on `stream` (the calls are
// asynchronous); on the CPU by the steady clock.
#pragma once

#include <dlpack/dlpack.h>

#include <functional>

namespace attnrt {

double median_call_ms(DLDevice device, void* stream, int warmup, int iterations, const std::function<void()>& fn);

}  // namespace attnrt
