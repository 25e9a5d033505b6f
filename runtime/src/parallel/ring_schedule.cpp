// The ring schedule (ring_schedule.hpp): the split, the masks of chunk pairs, the sub-block
// descriptor of a partially visible pair, and the per-rank plan.
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/parallel/ring_schedule.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace attnrt::cp {

const char* layout_name(Layout layout) { return layout == Layout::zigzag ? "zigzag" : "contiguous"; }

SequenceSplit::SequenceSplit(Layout layout_, int world_size_, int64_t seqlen_q_, int64_t seqlen_k_)
    : layout(layout_), world_size(world_size_), seqlen_q(seqlen_q_), seqlen_k(seqlen_k_) {
  if (world_size < 1) throw Error(fmt::format("context parallel: world size must be >= 1, got {}", world_size));
  const int n = num_chunks();
  for (auto [name, len] : {std::pair{"seqlen_q", seqlen_q}, std::pair{"seqlen_k", seqlen_k}}) {
    if (len <= 0 || len % n != 0) {
      throw Error(fmt::format(
          "context parallel: {} {} is not a positive multiple of {} ({} layout over {} ranks cuts the sequence "
          "into {} equal chunks); pad the sequence to a multiple of {}",
          name, len, n, layout_name(layout), world_size, n, n));
    }
  }
  chunk_q = seqlen_q / n;
  chunk_k = seqlen_k / n;
}

std::vector<int> SequenceSplit::chunks_of(int rank) const {
  if (layout == Layout::zigzag) return {rank, 2 * world_size - 1 - rank};
  return {rank};
}

PairMask pair_mask(const attnrt_attention_desc& desc, const SequenceSplit& split, int q_chunk, int k_chunk) {
  PairMask m;
  // Query i of the chunk is global row q_chunk * chunk_q + i, key j is k_chunk * chunk_k + j, so
  // the global rule  j_g <= i_g + seqlen_k - seqlen_q + window_right  becomes  j <= i + d + ...
  m.offset = q_chunk * split.chunk_q - k_chunk * split.chunk_k + split.seqlen_k - split.seqlen_q;
  m.window_left = desc.window_left;
  m.window_right = desc.causal ? 0 : desc.window_right;  // sdk::effective_window_right
  return m;
}

namespace {

// Rows of the chunk pair that see at least one key: [qs, qe). Row i sees keys
// [i + d - wl, i + d + wr] within [0, chunk_k); that is nonempty iff i + d + wr >= 0 and
// i + d - wl <= chunk_k - 1 (wl + wr >= 0 always).
struct RowRange {
  int64_t begin, end;
};
RowRange visible_rows(const PairMask& m, int64_t chunk_q, int64_t chunk_k) {
  const int64_t qs = m.window_right < 0 ? 0 : std::max<int64_t>(0, -m.offset - m.window_right);
  const int64_t qe = m.window_left < 0 ? chunk_q : std::min<int64_t>(chunk_q, chunk_k - m.offset + m.window_left);
  return {qs, std::max(qs, qe)};
}

}  // namespace

Visibility classify(const PairMask& m, int64_t chunk_q, int64_t chunk_k) {
  const RowRange rows = visible_rows(m, chunk_q, chunk_k);
  if (rows.begin >= rows.end) return Visibility::none;
  // Every row sees every key: the last row's left edge is at or before key 0 and the first
  // row's right edge at or after the last key.
  const bool left_open = m.window_left < 0 || chunk_q - 1 + m.offset - m.window_left <= 0;
  const bool right_open = m.window_right < 0 || m.offset + m.window_right >= chunk_k - 1;
  return left_open && right_open ? Visibility::full : Visibility::partial;
}

int64_t visible_pairs(const PairMask& m, int64_t chunk_q, int64_t chunk_k) {
  const RowRange rows = visible_rows(m, chunk_q, chunk_k);
  int64_t n = 0;
  for (int64_t i = rows.begin; i < rows.end; ++i) {
    const int64_t lo = m.window_left < 0 ? 0 : std::max<int64_t>(0, i + m.offset - m.window_left);
    const int64_t hi = m.window_right < 0 ? chunk_k - 1 : std::min<int64_t>(chunk_k - 1, i + m.offset + m.window_right);
    n += hi - lo + 1;
  }
  return n;
}

/*
 * The sub-block descriptor of a partially visible pair. In chunk coordinates query i sees key j
 * iff  i + d - wl <= j <= i + d + wr  (a term is absent when its window is -1). The plugin's rule
 * for a call of Lq queries and Lk keys is  i' + (Lk - Lq) - wl' <= j' <= i' + (Lk - Lq) + wr'
 * (bottom-right alignment), with wl', wr' >= 0 or -1: a negative offset of the band cannot be
 * written as a window. So the call takes the sub-block of rows [qs, qe) and keys [ks, ke) that
 * holds every visible pair, i = i' + qs and j = j' + ks, Lq = qe - qs, Lk = ke - ks:
 *   right edge:  j' <= i' + qs - ks + d + wr  =  i' + (Lk - Lq) + wr'
 *                => wr' = d + wr + qe - ke
 *   left edge:   j' >= i' + qs - ks + d - wl  =  i' + (Lk - Lq) - wl'
 *                => wl' = wl - (d + qe - ke)
 * Writing delta = d + qe - ke: wr' = wr + delta, wl' = wl - delta; only the ends qe and ke
 * matter, the starts cancel (bottom-right alignment is relative to the ends). The cut:
 *   qs = max(0, -d - wr)           first row whose right edge reaches key 0
 *   qe = min(Cq, Ck - d + wl)      past the last row whose left edge is inside the chunk
 *   ks = max(0, qs + d - wl)       the first visible row's left edge
 *   ke = min(Ck, qe + d + wr)      past the last visible row's right edge
 * Both windows come out >= 0: if ke = qe + d + wr then delta = -wr, wr' = 0 and wl' = wl + wr;
 * else ke = Ck <= qe + d + wr, so wr' >= 0, and wl' = wl - d - qe + Ck >= 0 because
 * qe <= Ck - d + wl. A wr' of 0 is written as causal (so a plugin without sliding windows
 * computes the diagonal blocks of plain causal attention), and a sub-block left fully visible
 * by the cut gets no mask at all.
 */
bool block_call(const attnrt_attention_desc& global, const PairMask& m, int64_t chunk_q, int64_t chunk_k,
                BlockCall& call) {
  const Visibility vis = classify(m, chunk_q, chunk_k);
  call.visibility = vis;
  call.desc = global;
  call.desc.return_lse = 1;  // the merge needs every partial LSE
  call.desc.causal = 0;
  call.desc.window_left = -1;
  call.desc.window_right = -1;
  if (vis == Visibility::none) return false;
  if (vis == Visibility::full) {
    call.q_begin = 0, call.q_end = chunk_q, call.k_begin = 0, call.k_end = chunk_k;
  } else {
    const int64_t d = m.offset, wl = m.window_left, wr = m.window_right;
    const RowRange rows = visible_rows(m, chunk_q, chunk_k);
    call.q_begin = rows.begin;
    call.q_end = rows.end;
    call.k_begin = wl < 0 ? 0 : std::max<int64_t>(0, rows.begin + d - wl);
    call.k_end = wr < 0 ? chunk_k : std::min<int64_t>(chunk_k, rows.end + d + wr);
    const int64_t delta = d + call.q_end - call.k_end;
    const int64_t lq = call.q_end - call.q_begin, lk = call.k_end - call.k_begin;
    int64_t wl2 = wl < 0 ? -1 : wl - delta;
    int64_t wr2 = wr < 0 ? -1 : wr + delta;
    // The cut may leave a sub-block whose every pair is visible: then it needs no mask.
    if (wl2 >= lk - 1) wl2 = -1;
    if (wr2 >= lq - 1) wr2 = -1;
    if (wl2 < -1 || wr2 < -1) throw Error(ATTNRT_ERROR_INTERNAL, "context parallel: negative block window (a bug)");
    call.desc.window_left = static_cast<int32_t>(wl2);
    if (wr2 == 0) {
      call.desc.causal = 1;
    } else {
      call.desc.window_right = static_cast<int32_t>(wr2);
    }
    if (wl2 < 0 && wr2 < 0) call.visibility = Visibility::full;
  }
  call.desc.seqlen_q = static_cast<int32_t>(call.q_end - call.q_begin);
  call.desc.seqlen_k = static_cast<int32_t>(call.k_end - call.k_begin);
  return true;
}

namespace {

int kv_owner(int rank, int step, int world_size) { return ((rank - step) % world_size + world_size) % world_size; }

// The last step at which `rank` sees any key of the block it holds; -1 if none.
int last_visible_step(const attnrt_attention_desc& desc, const SequenceSplit& split, int rank) {
  int last = -1;
  for (int s = 0; s < split.world_size; ++s) {
    for (int a : split.chunks_of(rank)) {
      for (int b : split.chunks_of(kv_owner(rank, s, split.world_size))) {
        if (classify(pair_mask(desc, split, a, b), split.chunk_q, split.chunk_k) != Visibility::none) last = s;
      }
    }
  }
  return last;
}

}  // namespace

namespace {

// make_ring_plan, with the fusion of fully visible pairs optional (varlen calls cannot fuse: see
// make_varlen_ring_plan).
RingPlan plan_of(const attnrt_attention_desc& desc, const SequenceSplit& split, int rank, bool fuse) {
  if (rank < 0 || rank >= split.world_size) {
    throw Error(fmt::format("context parallel: rank {} is outside [0, {})", rank, split.world_size));
  }
  RingPlan plan{split, rank, 1, {}, 0};
  int last = 0;
  for (int r = 0; r < split.world_size; ++r) last = std::max(last, last_visible_step(desc, split, r));
  plan.num_steps = last + 1;

  const std::vector<int> q_chunks = split.chunks_of(rank);
  const int nq = static_cast<int>(q_chunks.size());
  for (int s = 0; s < plan.num_steps; ++s) {
    RingStep step;
    step.step = s;
    step.kv_owner = kv_owner(rank, s, split.world_size);
    const std::vector<int> k_chunks = split.chunks_of(step.kv_owner);
    const int nk = static_cast<int>(k_chunks.size());
    // The pairs of this step, each with its call (rows relative to the chunks for now).
    std::vector<std::vector<BlockCall>> grid(nq, std::vector<BlockCall>(nk));
    std::vector<std::vector<bool>> visible(nq, std::vector<bool>(nk)), done(nq, std::vector<bool>(nk));
    for (int la = 0; la < nq; ++la) {
      for (int lb = 0; lb < nk; ++lb) {
        const PairMask m = pair_mask(desc, split, q_chunks[la], k_chunks[lb]);
        BlockCall& c = grid[la][lb];
        c.q_chunk = q_chunks[la];
        c.k_chunk = k_chunks[lb];
        visible[la][lb] = block_call(desc, m, split.chunk_q, split.chunk_k, c);
        plan.visible_pairs += visible_pairs(m, split.chunk_q, split.chunk_k);
        // Shard and block coordinates: the chunks are concatenated in chunks_of order.
        c.q_begin += la * split.chunk_q, c.q_end += la * split.chunk_q;
        c.k_begin += lb * split.chunk_k, c.k_end += lb * split.chunk_k;
      }
    }
    auto full = [&](int la, int lb) { return visible[la][lb] && grid[la][lb].visibility == Visibility::full; };
    // Fuse: a block fully visible to the whole shard is one call; one key chunk fully visible to
    // every query chunk is one call over the whole shard; one query chunk that sees every key
    // chunk fully is one call over the whole block.
    bool all_full = fuse && nq * nk > 1;
    for (int la = 0; la < nq; ++la)
      for (int lb = 0; lb < nk; ++lb) all_full = all_full && full(la, lb);
    if (all_full) {
      BlockCall c = grid[0][0];
      c.q_begin = 0, c.q_end = split.shard_q(), c.k_begin = 0, c.k_end = split.shard_k();
      c.desc.seqlen_q = static_cast<int32_t>(split.shard_q());
      c.desc.seqlen_k = static_cast<int32_t>(split.shard_k());
      step.calls.push_back(c);
      for (int la = 0; la < nq; ++la)
        for (int lb = 0; lb < nk; ++lb) done[la][lb] = true;
    }
    if (fuse && nq > 1) {
      for (int lb = 0; lb < nk; ++lb) {
        bool all = true;
        for (int la = 0; la < nq; ++la) all = all && full(la, lb) && !done[la][lb];
        if (!all) continue;
        BlockCall c = grid[0][lb];
        c.q_begin = 0, c.q_end = split.shard_q();
        c.desc.seqlen_q = static_cast<int32_t>(split.shard_q());
        step.calls.push_back(c);
        for (int la = 0; la < nq; ++la) done[la][lb] = true;
      }
    }
    if (fuse && nk > 1) {
      for (int la = 0; la < nq; ++la) {
        bool all = true;
        for (int lb = 0; lb < nk; ++lb) all = all && full(la, lb) && !done[la][lb];
        if (!all) continue;
        BlockCall c = grid[la][0];
        c.k_begin = 0, c.k_end = split.shard_k();
        c.desc.seqlen_k = static_cast<int32_t>(split.shard_k());
        step.calls.push_back(c);
        for (int lb = 0; lb < nk; ++lb) done[la][lb] = true;
      }
    }
    for (int la = 0; la < nq; ++la) {
      for (int lb = 0; lb < nk; ++lb) {
        if (visible[la][lb] && !done[la][lb]) step.calls.push_back(grid[la][lb]);
      }
    }
    plan.steps.push_back(std::move(step));
  }
  return plan;
}

}  // namespace

RingPlan make_ring_plan(const attnrt_attention_desc& desc, const SequenceSplit& split, int rank) {
  return plan_of(desc, split, rank, true);
}

std::string varlen_refusal(const attnrt_attention_desc& desc) {
  if (!desc.is_varlen) return "";
  if (desc.window_left >= 0 || (!desc.causal && desc.window_right >= 0)) {
    return fmt::format(
        "sliding windows (window_left {}, window_right {}) with varlen are not supported by context parallelism: "
        "which chunk pairs a window cuts, and where, depends on each sequence's chunk length, so one call can no "
        "longer cover a chunk pair of every sequence; split a padded batch instead",
        desc.window_left, desc.window_right);
  }
  if (desc.seqlen_q != desc.seqlen_k) {
    return fmt::format(
        "varlen context parallelism is self-attention: max_seqlen_q (desc.seqlen_q {}) must equal max_seqlen_k "
        "(desc.seqlen_k {}), and cu_seqlens_q must equal cu_seqlens_k",
        desc.seqlen_q, desc.seqlen_k);
  }
  return "";
}

/*
 * The varlen plan. Every sequence of the packed batch is cut into num_chunks equal chunks of its
 * own length c_i, and with seqlen_q == seqlen_k per sequence and no window the mask of a chunk
 * pair (a, b) does not depend on c_i: b < a is fully visible, b == a is the causal diagonal (a
 * plain causal call on equal lengths), b > a is invisible (non-causal: every pair full). So one
 * varlen call with cu_seqlens = cumsum(c_i) on both sides computes pair (a, b) of every sequence
 * at once, provided chunk a of every sequence is packed contiguously on the query side and chunk
 * b on the key side: the ring's "halves" layout (half h of a shard = chunk chunks_of(rank)[h] of
 * every sequence, packed). Pairs cannot fuse: a call over both chunks of a sequence would need
 * them adjacent, which the halves are not. The plan of one sequence of 2 rows per chunk gives
 * every pair's visibility and causal flag (2, not 1: a 1 x 1 diagonal would count as full).
 */
RingPlan make_varlen_ring_plan(const attnrt_attention_desc& desc, Layout layout, int world_size, int rank) {
  if (std::string why = varlen_refusal(desc); !why.empty()) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED, "context parallel: " + why);
  }
  const int chunks = world_size * (layout == Layout::zigzag ? 2 : 1);
  attnrt_attention_desc unit = desc;
  unit.is_varlen = 0;
  unit.batch = 1;
  unit.seqlen_q = unit.seqlen_k = 2 * chunks;
  RingPlan plan = plan_of(unit, SequenceSplit(layout, world_size, 2 * chunks, 2 * chunks), rank, false);
  // Every call's cu_seqlens are cumsum(c_i), each c_i <= max_seqlen / chunks.
  const int32_t max_chunk = (desc.seqlen_q + chunks - 1) / chunks;
  for (RingStep& step : plan.steps) {
    for (BlockCall& c : step.calls) {
      if (c.q_end - c.q_begin != 2 || c.k_end - c.k_begin != 2 || c.q_begin % 2 != 0 || c.k_begin % 2 != 0) {
        throw Error(ATTNRT_ERROR_INTERNAL, "context parallel: a varlen block call covers part of a chunk (a bug)");
      }
      const int32_t causal = c.desc.causal;
      c.q_begin /= 2, c.q_end = c.q_begin + 1;
      c.k_begin /= 2, c.k_end = c.k_begin + 1;
      c.desc = desc;
      c.desc.causal = causal;
      c.desc.window_left = c.desc.window_right = -1;
      c.desc.return_lse = 1;
      c.desc.seqlen_q = c.desc.seqlen_k = max_chunk;
    }
  }
  return plan;
}

}  // namespace attnrt::cp
