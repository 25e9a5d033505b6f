// Thread count and thread index for the CPU kernels (OpenMP; serial when built without it).
#pragma once

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace attnrt::kernels {

// The threads a call uses: the host's request, or OpenMP's default when it asks for 0.
inline int resolve_threads(int requested) {
#if defined(_OPENMP)
  return requested > 0 ? requested : omp_get_max_threads();
#else
  (void)requested;
  return 1;
#endif
}

inline int omp_thread() {
#if defined(_OPENMP)
  return omp_get_thread_num();
#else
  return 0;
#endif
}

}  // namespace attnrt::kernels
