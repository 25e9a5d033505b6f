// The two-GPU ring test's device helpers (context_parallel_2gpu_kernels.cu): random inputs, the
// fp64 reference on sampled query rows and key columns, and error reductions. Plain C++ types
// only, so the C++20 test (context_parallel_2gpu.cpp) and the C++17 CUDA file share it.
#pragma once

#include <cstdint>

namespace attnrt::cp_test {

// One attention problem, batch 1: q [S, hq, d], k/v [S, hkv, d], out/dout [S, hq, d] (bf16),
// lse [hq, S] (fp32). Query i sees key j iff i - window_left <= j <= i + window_right, with -1
// meaning unlimited (causal: window_right 0); seqlen_q == seqlen_k.
struct Problem {
  int64_t seqlen = 0;
  int heads_q = 0, heads_kv = 0, head_dim = 0;
  int window_left = -1, window_right = -1;
  float scale = 1.0f;
};

// Fills n bf16 values with pseudo-random normals (a hash of seed and index: the same on every rank).
void fill_random_bf16(void* dst, int64_t n, uint64_t seed, float stddev, void* stream);

// fp64 reference for `rows.size()` sampled query rows (all q heads): out [R, hq, d], lse [R, hq],
// dq [R, hq, d], from the bf16 inputs as they are. Exact (no input from any kernel under test).
void reference_rows(const Problem& p, const void* q, const void* k, const void* v, const void* dout,
                    const int64_t* rows_dev, int num_rows, double* out, double* lse, double* dq, void* stream);

// fp64 reference of dk and dv for sampled key columns (all kv heads): [C, hkv, d] each. Uses, for
// every query row i, lse_i and D_i = dout_i . out_i from the given (single-GPU) lse and out:
// computing them exactly would need the whole attention in fp64 (FlashAttention's backward uses
// its forward's fp32 LSE and out the same way).
void reference_cols(const Problem& p, const void* q, const void* k, const void* v, const void* dout, const void* out,
                    const float* lse, const int64_t* cols_dev, int num_cols, double* dk, double* dv, void* stream);

// The rule's baseline (docs/gpu.md): PyTorch's materialized attention in bf16 (FlashAttention's
// attention_ref with upcast=False), emulated in fp64 with its roundings, on the same samples and
// shapes as reference_rows / reference_cols (the eager lse is of its bf16 scores, in fp32 math).
// A materialized [S, S] score matrix would not fit at 64k and beyond; these are exact emulations
// of its rows and columns.
void eager_rows(const Problem& p, const void* q, const void* k, const void* v, const void* dout,
                const int64_t* rows_dev, int num_rows, double* out, double* lse, double* dq, void* stream);
void eager_cols(const Problem& p, const void* q, const void* k, const void* v, const void* dout, const void* out,
                const float* lse, const int64_t* cols_dev, int num_cols, double* dk, double* dv, void* stream);

// max |a[i] - b[map(i)]| for the rows of a shard against the global tensor: a is [rows, width]
// (bf16, or fp32 when is_f32), b the global [S, width]; shard row r is global row
// chunk_start[r / chunk] + r % chunk. Non-finite in a or b gives +inf. Also counts non-finite
// values of a into *nonfinite (device int64).
void max_diff_rows(const void* a, const void* b, bool is_f32, int64_t rows, int64_t width, const int64_t* chunk_starts,
                   int64_t chunk, double* result_dev, unsigned long long* nonfinite_dev, void* stream);

// atomically max-es *result_dev (double, >= 0) with the largest finite |a| of n elements.
void max_abs(const void* a, bool is_f32, int64_t n, double* result_dev, void* stream);

// The same for lse: a [heads, rows], b [heads, S] (fp32).
void max_diff_lse(const float* a, const float* b, int heads, int64_t rows, int64_t seqlen, const int64_t* chunk_starts,
                  int64_t chunk, double* result_dev, unsigned long long* nonfinite_dev, void* stream);

}  // namespace attnrt::cp_test
