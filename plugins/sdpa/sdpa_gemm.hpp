// The tile products of sdpa's kernels, on oneDNN. oneDNN picks the widest vector ISA the CPU has
// at run time (AVX-512, AVX512-BF16, AMX), which a kernel built once for x86-64-v3 cannot: on
// the development machine's core it runs the fp32 128 x 128 x 64 product at 245 GFLOP/s against
// 126 for attnrt's former AVX2 microkernel, and the bf16 one at 448 (docs/perf.md, "CPU: sdpa
// vs PyTorch"). Inside the kernels' OpenMP regions each product runs on the calling thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace attnrt::plugins::sdpa {

// A failure inside an OpenMP region is remembered and reported by check() once the region is
// over (an exception must not leave one).
class GemmErrors {
 public:
  void record(int status, const char* what);
  // Throws sdk::Error (ATTNRT_ERROR_INTERNAL) naming oneDNN's status if any product failed.
  void check() const;

 private:
  std::atomic<int> first_status_{0};
  std::atomic<const char*> first_what_{nullptr};
};

// fp32:  C[m, n] (+)= A[m, k] B[k, n], through oneDNN's sgemm (row-major BLAS contract).
// A(i, kk) = a[i * sa_i + kk * sa_k]: one of sa_i, sa_k is 1 (A or its transpose stored
// row-major); B and C are row-major with leading dimensions ldb and ldc (floats).
// accumulate false: C's old contents are neither read nor kept. Thread-safe.
class TileGemm : public GemmErrors {
 public:
  void operator()(float* c, int64_t ldc, const float* a, int64_t sa_i, int64_t sa_k, const float* b, int64_t ldb,
                  int64_t m, int64_t n, int64_t k, bool accumulate);
};

// bf16:  C[m, n] (+)= A[m, k] B[k, n] with A and B bf16 (raw bits), C fp32 row-major (ldc),
// A(i, kk) = a[i * sa_i + kk * sa_k], B(kk, j) = b[kk * sb_k + j * sb_j], through oneDNN's matmul
// primitive, one per shape and thread, created on first use and kept (creation takes about a
// millisecond; sdpa uses two to five fixed shapes per call). Only where
// onednn_library().fast_bf16. Thread-safe.
class Bf16TileGemm : public GemmErrors {
 public:
  void operator()(float* c, int64_t ldc, const uint16_t* a, int64_t sa_i, int64_t sa_k, const uint16_t* b, int64_t sb_k,
                  int64_t sb_j, int64_t m, int64_t n, int64_t k, bool accumulate);
};

}  // namespace attnrt::plugins::sdpa
