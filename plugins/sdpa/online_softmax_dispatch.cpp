// Picks the online_softmax build for this CPU (baseline code: it runs before anything wide).
#include "online_softmax.hpp"

namespace attnrt::plugins::sdpa {

bool cpu_has_avx512() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

bool cpu_has_avx512bf16() {
#if defined(__x86_64__)
  return cpu_has_avx512() && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

OnlineSoftmaxFn online_softmax() {
  static const OnlineSoftmaxFn fn = cpu_has_avx512bf16() ? &online_softmax_avx512bf16
                                    : cpu_has_avx512()   ? &online_softmax_avx512
                                                         : &online_softmax_avx2;
  return fn;
}

ProbabilitiesAndDsFn probabilities_and_ds() {
  static const ProbabilitiesAndDsFn fn = cpu_has_avx512bf16() ? &probabilities_and_ds_avx512bf16
                                         : cpu_has_avx512()   ? &probabilities_and_ds_avx512
                                                              : &probabilities_and_ds_avx2;
  return fn;
}

SplitToBf16Fn split_to_bf16() {
  static const SplitToBf16Fn fn = cpu_has_avx512bf16() ? &split_to_bf16_avx512bf16
                                  : cpu_has_avx512()   ? &split_to_bf16_avx512
                                                       : &split_to_bf16_avx2;
  return fn;
}

}  // namespace attnrt::plugins::sdpa
