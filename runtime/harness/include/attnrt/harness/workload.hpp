// The `workload:` section: what `attnrt run` computes at every attention site. Either shapes
// (random normal inputs from a seed) or a safetensors file of real q/k/v [batch, seqlen,
// heads, head_dim], whose optional attention_mask [batch, seqlen] turns the padded batch into
// varlen (FlashAttention's unpad_input).
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt/harness/host_tensor.hpp>
#include <attnrt/runtime/config.hpp>

#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace attnrt {

struct WorkloadSpec {
  std::optional<std::filesystem::path> file;  // resolved path of a safetensors file
  attnrt_dtype dtype = ATTNRT_DTYPE_FP32;
  int32_t batch = 1, seqlen_q = 128, seqlen_k = 0, heads_q = 8, heads_kv = 0, head_dim = 64, head_dim_v = 0;
  bool causal = false;
  int32_t window_left = -1, window_right = -1;
  float softcap = 0.0f;
  std::optional<float> softmax_scale;  // default 1/sqrt(head_dim)
  bool sinks = false, alibi = false;
  std::vector<int32_t> seqlens_q, seqlens_k;  // varlen lengths (random workloads)
  bool paged = false;
  int32_t page_size = 16;
  bool backward = true;
  bool return_lse = true;
  uint64_t seed = 0;
  // q, k, v and dout repeat a random block of this many elements (0: every element drawn).
  // For benchmarks only: repeated keys make scores repeat, which no correctness case wants.
  int64_t fill_period = 0;
  int iterations = 10, warmup = 2;
};

// Reads `workload:`; unknown keys warn ("did you mean"), bad values throw with file:line:col.
// Relative `file` paths resolve against the config file's folder, then `data_dir`.
WorkloadSpec read_workload(const Config& config, const std::filesystem::path& data_dir,
                           std::vector<std::string>* warnings);

struct Workload {
  attnrt_attention_desc desc{};  // device fields left for the resolver to fill
  HostTensor q, k, v, out, lse, sinks, alibi_slopes, cu_seqlens_q, cu_seqlens_k, seqused_k, block_table;
  HostTensor dout, dq, dk, dv, dsinks;
  std::optional<HostTensor> model_out;  // the source model's own attention output (file), packed like out
  std::string source;                   // "random (seed 0)" or the file and its metadata
  int64_t total_q = 0;                  // query tokens in the call
  double forward_flops = 0;             // 2 * heads_q * (head_dim + head_dim_v) * visible (q, k) pairs

  attnrt_forward_args forward_args();
  attnrt_backward_args backward_args();
  size_t tensor_bytes() const;
  // Every tensor of the call, present or not (empty() when the call does not use it).
  std::array<HostTensor*, 16> tensors() { return tensors_of<HostTensor>(*this); }
  std::array<const HostTensor*, 16> tensors() const { return tensors_of<const HostTensor>(*this); }

 private:
  template <class T, class Self>
  static std::array<T*, 16> tensors_of(Self& w) {
    return {&w.q,
            &w.k,
            &w.v,
            &w.out,
            &w.lse,
            &w.sinks,
            &w.alibi_slopes,
            &w.cu_seqlens_q,
            &w.cu_seqlens_k,
            &w.seqused_k,
            &w.block_table,
            &w.dout,
            &w.dq,
            &w.dk,
            &w.dv,
            &w.dsinks};
  }
};

Workload make_workload(const WorkloadSpec& spec);

}  // namespace attnrt
