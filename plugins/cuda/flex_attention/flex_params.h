// What flex_attention's kernels get besides AttentionParams (the policy's Params, passed as the
// kernel's second parameter): the mods' context and the block mask as per-tile states. Included
// by the plugin (host) after prelude_host.hpp and by the NVRTC program after the mods' unit, so
// both see one layout.
#ifndef ATTNRT_FLEX_PARAMS_H_
#define ATTNRT_FLEX_PARAMS_H_

namespace attnrt_flex {

enum TileState { kTileSkip = 0, kTilePartial = 1, kTileFull = 2 };

struct KernelParams {
  Context ctx;
  // [state_batch, state_heads, q_tiles, k_tiles] TileState per kernel tile (BM x BN), built from
  // the block mask each call; NULL: no block mask (every tile partial).
  const unsigned char* tile_state;
  int state_batch, state_heads;  // 1 (broadcast) or batch / heads_q
  int q_tiles, k_tiles;
  int tile_rows;     // BM: query rows per tile
  int has_mask_mod;  // 0: no mask_mod (its predicate is never evaluated)
};

}  // namespace attnrt_flex

#endif  // ATTNRT_FLEX_PARAMS_H_
