// The backward workspace of the kernels that accumulate dQ in fp32 (flash_attention_2's and
// flash_attention_3's, under any score policy): D = rowsum(dO * O) per (head, query row); then,
// unless the call is deterministic, the fp32 dQ accumulator, head_dim floats per row; then, with
// sinks, each row's share of dsinks. batch * max seqlen_q bounds the packed length of a varlen
// call. The host asks for size() through workspace_size and hands the bytes back in the call.
#pragma once

#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_cuda/cuda_check.hpp>
#include <attnrt_cuda/params.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>

namespace attnrt::cuda {

struct BackwardWorkspace {
  static constexpr size_t kAlign = 256;

  static size_t rows(const attnrt_attention_desc& d) {
    return size_t(d.heads_q) * size_t(d.batch) * size_t(d.seqlen_q);
  }
  static size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
  static size_t dq_accum_offset(const attnrt_attention_desc& d) { return aligned(rows(d) * sizeof(float)); }
  static size_t dsink_rows_offset(const attnrt_attention_desc& d) {
    return dq_accum_offset(d) + (d.deterministic ? 0 : aligned(rows(d) * size_t(d.head_dim) * sizeof(float)));
  }
  static size_t size(const attnrt_attention_desc& d, bool backward) {
    if (!backward) return 0;
    return dsink_rows_offset(d) + (d.has_sinks ? rows(d) * sizeof(float) : 0);
  }

  // Points p's workspace fields into the exec's workspace (refused by name when too small).
  static void bind(const attnrt_attention_desc& d, const attnrt_exec& e, AttentionParams& p) {
    sdk::require_workspace(e, size(d, true), 0);
    auto* ws = static_cast<unsigned char*>(e.workspace);
    p.softmax_d = reinterpret_cast<float*>(ws);
    if (!d.deterministic) p.dq_accum = reinterpret_cast<float*>(ws + dq_accum_offset(d));
    if (d.has_sinks) p.dsink_rows = reinterpret_cast<float*>(ws + dsink_rows_offset(d));
  }

  // Whether the backward has nothing to differentiate (no batch, or no rows on either side);
  // then dsinks, still an output, is set to zero here and the caller launches nothing.
  static bool nothing_to_differentiate(const AttentionParams& p, cudaStream_t stream, const char* what) {
    if (p.batch != 0 && (p.seqlen_q != 0 || p.seqlen_k != 0)) return false;
    if (p.dsinks) check_cuda(cudaMemsetAsync(p.dsinks, 0, size_t(p.heads_q) * sizeof(float), stream), what);
    return true;
  }
};

}  // namespace attnrt::cuda
