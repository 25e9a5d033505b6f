// FlashAttention-2 backward (Dao 2023, Algorithm 2). P is recomputed from q, k and the forward's
// lse:
//   1. softmax_d_kernel: D_i = rowsum(dO_i * O_i)                   (attnrt_cuda/backward_rows.cuh)
//   2. one CTA per block of keys of one kv head walks every visible query block of every q head
//      of its GQA group:
//        S^T = K Q^T,  P^T = exp(S^T - lse),  dV += P^T dO,  dP^T = V dO^T,
//        dS^T = P^T (dP^T - D),  dK += dS^T Q
//      and, unless the call is deterministic, dQ += dS K into an fp32 buffer by atomic adds
//      (FlashAttention-2's single pass: 5 products); dq_convert_kernel then scales and rounds it
//      into dq. head_dim <= 128: dkdv_kernel (fa2_dkdv.cuh), 8 warps of 32-key tiles. Above 128:
//      dkdv_split_kernel (fa2_dkdv_split.cuh), 4 warps of 16 keys, dV and dK in two passes.
//   3. deterministic calls instead run dq_kernel (fa2_dq.cuh): one CTA per block of queries walks
//      the visible key blocks: S = Q K^T, P, dP = dO V^T, dS = P (dP - D), dQ += dS K. That
//      second pass over S and dP costs 7 products instead of 5, in exchange for every output
//      having exactly one writer and bit-identical repeats (atomic adds land in a different
//      order on every run).
#pragma once

#include <attnrt_cuda/backward_rows.cuh>
#include "fa2_dkdv.cuh"
#include "fa2_dkdv_split.cuh"
#include "fa2_dq.cuh"
