// Pieces of the tiled CPU attention kernels (sdpa): packing tensor rows into float tiles and
// turning a tile of raw q.k products into scores (softcap, ALiBi, mask) on 8 lanes at a time.
#pragma once

#include <attnrt_kernels/problem.hpp>
#include <attnrt_kernels/vec_math.hpp>

#include <algorithm>
#include <cstring>

namespace attnrt::kernels {

inline constexpr int64_t kMaxTileHeadDim = 512;

// Rows t0 .. t0+n of head h of sequence b, as float, into dst [n, ld]; columns dim..ld zeroed.
inline void pack_rows(const RowTensor& t, attnrt_dtype dtype, int64_t b, int64_t h, int64_t t0, int64_t n, int64_t dim,
                      float scale, float* __restrict dst, int64_t ld) {
  for (int64_t r = 0; r < n; ++r) {
    float* row = dst + r * ld;
    load_row_scaled(t.row(b, t0 + r, h), dtype, scale, row, dim);
    std::fill(row + dim, row + ld, 0.0f);
  }
}

// Same rows, transposed: dst [dim, ld] with dst[c * ld + r] = row r, column c; columns n..ld
// of dst zeroed so the padded part of a product is finite.
inline void pack_rows_transposed(const RowTensor& t, attnrt_dtype dtype, int64_t b, int64_t h, int64_t t0, int64_t n,
                                 int64_t dim, float* __restrict dst, int64_t ld) {
  float row[kMaxTileHeadDim];
  for (int64_t r = 0; r < n; ++r) {
    load_row(t.row(b, t0 + r, h), dtype, row, dim);
    for (int64_t c = 0; c < dim; ++c) dst[c * ld + r] = row[c];
  }
  for (int64_t c = 0; c < dim; ++c) std::fill(dst + c * ld + n, dst + (c + 1) * ld, 0.0f);
}

// What the score transform needs to know about one row of a tile.
struct TileRow {
  int64_t i;       // query position in its sequence
  int64_t lo, hi;  // visible keys [lo, hi)
  float slope;     // ALiBi slope, 0 without
};

// s[r][0..width) holds softmax_scale * q_i . k_(k0+j); turns it into the score of attnrt's
// descriptor, with -inf outside the row's visible keys and beyond key k0 + nk. When `capped`
// is given it receives softcap * tanh(x / softcap) (backward needs it). Rows are ld apart;
// width % 8 == 0 and width <= ld.
inline void transform_scores(float* __restrict s, int64_t ld, int64_t width, const TileRow* rows, int64_t nrows,
                             int64_t k0, int64_t nk, float softcap, int64_t diag_offset, float* __restrict capped) {
  const vec8i lane = {0, 1, 2, 3, 4, 5, 6, 7};
  const vec8f neg_inf = splat8(kNegInf);
  for (int64_t r = 0; r < nrows; ++r) {
    const TileRow& row = rows[r];
    const int32_t lo = static_cast<int32_t>(row.lo - k0);
    const int32_t hi = static_cast<int32_t>(std::min(row.hi, k0 + nk) - k0);
    const int32_t diag = static_cast<int32_t>(row.i + diag_offset - k0);
    float* sr = s + r * ld;
    // The common case inside a long sequence: every key of the tile visible, nothing to do.
    if (softcap <= 0.0f && row.slope == 0.0f && lo <= 0 && hi >= width) continue;
    for (int64_t j = 0; j < width; j += 8) {
      vec8f x = load8(sr + j);
      if (softcap > 0.0f) {
        x = softcap * tanh8(x * (1.0f / softcap));
        if (capped) store8(capped + r * ld + j, x);
      }
      const vec8i jj = lane + static_cast<int32_t>(j);
      if (row.slope != 0.0f) {
        vec8i dist = diag - jj;
        dist = dist < 0 ? -dist : dist;
        x -= row.slope * __builtin_convertvector(dist, vec8f);
      }
      x = (jj < lo) | (jj >= hi) ? neg_inf : x;
      store8(sr + j, x);
    }
  }
}

inline float row_max(const float* __restrict s, int64_t n) {
  vec8f m = splat8(kNegInf);
  for (int64_t j = 0; j < n; j += 8) {
    const vec8f x = load8(s + j);
    m = x > m ? x : m;
  }
  float r = m[0];
  for (int l = 1; l < 8; ++l) r = std::max(r, m[l]);
  return r;
}

// s[j] = exp(s[j] - m) in place; returns the sum. m must be finite and >= every s[j].
inline float exp_subtract_sum(float* __restrict s, int64_t n, float m) {
  vec8f sum = splat8(0.0f);
  for (int64_t j = 0; j < n; j += 8) {
    const vec8f p = exp8_nonpositive(load8(s + j) - m);
    store8(s + j, p);
    sum += p;
  }
  float r = 0.0f;
  for (int l = 0; l < 8; ++l) r += sum[l];
  return r;
}

// s[j] = exp(scale * s[j] - m) in place; returns the sum. m must be finite and >= scale * s[j]
// (up to rounding); scale > 0. Folds the softmax scale into the exponent's FMA.
inline float exp_scaled_subtract_sum(float* __restrict s, int64_t n, float scale, float m) {
  vec8f sum = splat8(0.0f);
  for (int64_t j = 0; j < n; j += 8) {
    const vec8f p = exp8_nonpositive(load8(s + j) * scale - m);
    store8(s + j, p);
    sum += p;
  }
  float r = 0.0f;
  for (int l = 0; l < 8; ++l) r += sum[l];
  return r;
}

inline void scale_row(float* __restrict x, int64_t n, float alpha) {
  for (int64_t j = 0; j < n; j += 8) store8(x + j, load8(x + j) * alpha);
}

}  // namespace attnrt::kernels
