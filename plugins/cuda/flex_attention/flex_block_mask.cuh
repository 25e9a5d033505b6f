// create_block_mask on CUDA (ABI 1.4, plugin_abi.h attnrt_block_mask_args): PyTorch's
// create_block_mask with the user's mask_mod compiled into the module beside the attention
// kernels. Three launches on the call's stream, with no workspace: the outputs are the scratch.
//   attnrt_flex_mask_classify: one CTA per block evaluates its pairs, eight rows a thread between
//     votes (stopping once it has seen a visible and a hidden one), and writes the block's state
//     into kv_indices[b, h, m, n];
//   attnrt_flex_mask_columns (when q_* is asked for): one thread per (b, h, key block) reads its
//     column of states and writes the transposed lists;
//   attnrt_flex_mask_rows: one thread per (b, h, query block) compacts its row of states in place
//     into the partial list (an entry is written at or before the one it was read from) and the
//     full list, then zeroes the rest.
// Compiled by NVRTC after the mods' unit and flex_params.h (kernel_module.cpp).
#pragma once

// A (count, indices) output pair with its element strides; num NULL: not asked for.
struct AttnrtFlexOut {
  int* num;
  int* idx;
  long long num_stride[3], idx_stride[4];
};

struct AttnrtFlexMaskShape {
  int bm, hm, mq, mk;      // outputs' extents: sequences (1: broadcast), heads (1), query and key blocks
  int seqlen_q, seqlen_k;  // the pairs evaluated
  int q_block, kv_block;   // block sizes
  int has_mask;            // 0: every block is full
  int full_kv, full_q;     // the full pairs are asked for (else full blocks join the partial lists)
};

namespace attnrt_flex_mask {
__device__ __forceinline__ int* at(const AttnrtFlexOut& o, int b, int h, int r, int c) {
  return o.idx + b * o.idx_stride[0] + h * o.idx_stride[1] + r * o.idx_stride[2] + c * o.idx_stride[3];
}
// Ends row r of a list: its count, and zeros past it up to `width` entries.
__device__ __forceinline__ void close(const AttnrtFlexOut& o, int b, int h, int r, int count, int width) {
  o.num[b * o.num_stride[0] + h * o.num_stride[1] + r * o.num_stride[2]] = count;
  for (int c = count; c < width; ++c) *at(o, b, h, r, c) = 0;
}
}  // namespace attnrt_flex_mask

extern "C" __global__ void attnrt_flex_mask_classify(attnrt_flex::Context ctx, AttnrtFlexOut kv,
                                                     AttnrtFlexMaskShape s) {
  // A block's pairs as rows x columns: thread t takes column t % cols (and every cols-th after
  // it) of rows t / cols, t / cols + step, ...: 32-bit counters and no division per pair (a
  // 64-bit division per pair ran at half the speed).
  const int cols = min(s.kv_block, static_cast<int>(blockDim.x)), step = static_cast<int>(blockDim.x) / cols;
  const int col = static_cast<int>(threadIdx.x) % cols, row = static_cast<int>(threadIdx.x) / cols;
  const bool active = row < step;
  const long long blocks = static_cast<long long>(s.bm) * s.hm * s.mq * s.mk;
  for (long long id = blockIdx.x; id < blocks; id += gridDim.x) {
    const int n = static_cast<int>(id % s.mk), m = static_cast<int>(id / s.mk % s.mq);
    const int h = static_cast<int>(id / s.mk / s.mq % s.hm), b = static_cast<int>(id / s.mk / s.mq / s.hm);
    int state = attnrt_flex::kTileFull;
    if (s.has_mask) {
      const int i0 = m * s.q_block, j0 = n * s.kv_block;
      const int rows = min(s.seqlen_q - i0, s.q_block), width = min(s.seqlen_k - j0, s.kv_block);
      bool visible = false, hidden = false;
      int any_visible = 0, any_hidden = 0;
      // Eight rows a thread between votes: the vote costs two barriers.
      for (int base = 0; base < rows; base += 8 * step) {
        if (active) {
#pragma unroll 2
          for (int u = 0; u < 8; ++u) {
            const int i = base + u * step + row;
            if (i >= rows) break;
            for (int j = col; j < width; j += cols) {
              if (attnrt_flex_user::mask_mod(ctx, b, h, i0 + i, j0 + j)) {
                visible = true;
              } else {
                hidden = true;
              }
            }
          }
        }
        any_visible = __syncthreads_or(visible);
        any_hidden = __syncthreads_or(hidden);
        if (any_visible && any_hidden) break;
      }
      state = !any_visible ? attnrt_flex::kTileSkip : any_hidden ? attnrt_flex::kTilePartial : attnrt_flex::kTileFull;
    }
    if (threadIdx.x == 0) *attnrt_flex_mask::at(kv, b, h, m, n) = state;
  }
}

extern "C" __global__ void attnrt_flex_mask_columns(AttnrtFlexOut kv, AttnrtFlexOut q, AttnrtFlexOut full_q,
                                                    AttnrtFlexMaskShape s) {
  const long long id = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= static_cast<long long>(s.bm) * s.hm * s.mk) return;
  const int n = static_cast<int>(id % s.mk), h = static_cast<int>(id / s.mk % s.hm),
            b = static_cast<int>(id / s.mk / s.hm);
  int partial = 0, full = 0;
  for (int m = 0; m < s.mq; ++m) {
    const int state = *attnrt_flex_mask::at(kv, b, h, m, n);
    if (state == attnrt_flex::kTileFull && s.full_q) {
      *attnrt_flex_mask::at(full_q, b, h, n, full++) = m;
    } else if (state != attnrt_flex::kTileSkip) {
      *attnrt_flex_mask::at(q, b, h, n, partial++) = m;
    }
  }
  attnrt_flex_mask::close(q, b, h, n, partial, s.mq);
  if (s.full_q) attnrt_flex_mask::close(full_q, b, h, n, full, s.mq);
}

extern "C" __global__ void attnrt_flex_mask_rows(AttnrtFlexOut kv, AttnrtFlexOut full_kv, AttnrtFlexMaskShape s) {
  const long long id = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= static_cast<long long>(s.bm) * s.hm * s.mq) return;
  const int m = static_cast<int>(id % s.mq), h = static_cast<int>(id / s.mq % s.hm),
            b = static_cast<int>(id / s.mq / s.hm);
  int partial = 0, full = 0;
  for (int n = 0; n < s.mk; ++n) {
    const int state = *attnrt_flex_mask::at(kv, b, h, m, n);
    if (state == attnrt_flex::kTileFull && s.full_kv) {
      *attnrt_flex_mask::at(full_kv, b, h, m, full++) = n;
    } else if (state != attnrt_flex::kTileSkip) {
      *attnrt_flex_mask::at(kv, b, h, m, partial++) = n;
    }
  }
  attnrt_flex_mask::close(kv, b, h, m, partial, s.mk);
  if (s.full_kv) attnrt_flex_mask::close(full_kv, b, h, m, full, s.mk);
}
