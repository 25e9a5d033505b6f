// What flex_attention's kernels get besides AttentionParams (the policy's Params, passed as the
// kernel's second parameter): the mods' context and the block mask as per-block states. Included
// by the plugin (host) after prelude_host.hpp and by the NVRTC program after the mods' unit, so
// both see one layout.
#ifndef ATTNRT_FLEX_PARAMS_H_
#define ATTNRT_FLEX_PARAMS_H_

namespace attnrt_flex {

enum TileState { kTileSkip = 0, kTilePartial = 1, kTileFull = 2 };

// One of a PyTorch BlockMask's (count, indices) pairs, kv_num_blocks / kv_indices or the full
// pair, as attnrt_flex_block_states reads it (flex_policy.cuh): int32 [Bm, Hm, MQ] and
// [Bm, Hm, MQ, width], as element strides (0 on a broadcast batch or head extent of 1). A row's
// first `count` entries (clamped to [0, width]) are its key blocks.
struct List {
  const int* num;
  const int* idx;
  long long num_stride[3], idx_stride[4];
  int width;
};

struct KernelParams {
  Context ctx;
  // [state_batch, state_heads, q_blocks, k_blocks] TileState per block of the block mask
  // (q_block x kv_block, PyTorch's BlockMask blocks), built from its lists each call; NULL: no
  // block mask (every block partial). Every kernel's tiles divide the blocks (the plugin checks),
  // so a tile's state is its block's.
  const unsigned char* tile_state;
  int state_batch, state_heads;  // 1 (broadcast) or batch / heads_q
  int q_blocks, k_blocks;
  int q_block, kv_block;  // rows and keys per block
  int forward_bn;         // keys per step of the forward kernel (its block walk counts in steps)
  int has_mask_mod;       // 0: no mask_mod (its predicate is never evaluated)
  // The Hopper forward's choice of tile height at head_dim 64 (flex_hopper_policy.cuh,
  // rows_chosen): NULL, the launched kernel runs; else the modelled cost of the forward's tiles
  // of 128 and of 192 rows over the block mask ([0], [1]; attnrt_flex_block_states sums them), and
  // of the two kernels launched the cheaper one runs, the other returns at once.
  const unsigned long long* tile_walks;
};

}  // namespace attnrt_flex

#endif  // ATTNRT_FLEX_PARAMS_H_
