// An example third-party attnrt plugin: attention with ALiBi linear biases (Press et al.,
// "Train Short, Test Long", ICLR 2022, eq. 1: softmax(q_i K^T + m_h * [-(i-1), ..., 0])), in
// fp32 on the CPU, one query row at a time. Supports GQA/MQA, bottom-right causal masks, ALiBi
// slopes per head or per (sequence, head), and the log-sum-exp; refuses everything else with a
// reason, so attnrt falls back instead of computing something else.
//
// It uses only the installed SDK: the C ABI (attnrt/plugin_abi.h), the C++ helper that turns
// this class into the C function table (attnrt/plugin.hpp), and the argument checks
// (attnrt/validate.hpp).
#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {

// Element (row, head, c) of a [batch, seqlen, heads, dim] tensor whose last dim is contiguous.
struct View {
  const char* base;
  int64_t s0, s1, s2;  // element strides of the first three dims
  explicit View(const DLTensor* t)
      : base(static_cast<const char*>(t->data) + t->byte_offset),
        s0(t->strides ? t->strides[0] : t->shape[1] * t->shape[2] * t->shape[3]),
        s1(t->strides ? t->strides[1] : t->shape[2] * t->shape[3]),
        s2(t->strides ? t->strides[2] : t->shape[3]) {}
  float* row(int64_t b, int64_t i, int64_t h) const {
    return const_cast<float*>(reinterpret_cast<const float*>(base)) + b * s0 + i * s1 + h * s2;
  }
};

class AlibiAttention {
 public:
  static constexpr const char* kName = "alibi_attention";
  static constexpr const char* kVersion = "0.1.0";
  static constexpr const char* kDescription = "example third-party plugin: fp32 ALiBi attention on the CPU";

  // What it computes. The SDK's adapter refuses everything else (with the reason) before forward
  // runs, and validates every tensor, so forward below only computes.
  static constexpr attnrt_capabilities kCapabilities =
      attnrt::sdk::capabilities({.devices = ATTNRT_DEVICE_BIT_CPU,
                                 .dtypes = ATTNRT_DTYPE_BIT_FP32,
                                 .features = ATTNRT_FEATURE_GQA | ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_ALIBI |
                                             ATTNRT_FEATURE_LSE | ATTNRT_FEATURE_DETERMINISTIC,
                                 .min_head_dim = 1,
                                 .max_head_dim = 256});

  // One row of scores per call: the host provides it (plugins allocate nothing themselves).
  size_t workspace_size(const attnrt_attention_desc& d, bool, int) const { return sizeof(float) * d.seqlen_k; }

  void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e) {
    attnrt::sdk::require_workspace(e, workspace_size(d, false, 0), 1);
    const View q(a.q), k(a.k), v(a.v), out(a.out);
    float* scores = static_cast<float*>(e.workspace);
    const float* slopes = d.has_alibi ? static_cast<const float*>(a.alibi_slopes->data) : nullptr;
    const int64_t group = d.heads_q / d.heads_kv;
    const float neg_inf = -std::numeric_limits<float>::infinity();
    for (int64_t b = 0; b < d.batch; ++b) {
      for (int64_t h = 0; h < d.heads_q; ++h) {
        const float slope = !slopes ? 0.0f : a.alibi_slopes->ndim == 2 ? slopes[b * d.heads_q + h] : slopes[h];
        for (int64_t i = 0; i < d.seqlen_q; ++i) {
          const int64_t diag = i + d.seqlen_k - d.seqlen_q;  // bottom-right alignment
          const int64_t visible = d.causal ? std::min<int64_t>(d.seqlen_k, std::max<int64_t>(0, diag + 1)) : d.seqlen_k;
          float m = neg_inf;
          for (int64_t j = 0; j < visible; ++j) {
            float dot = 0.0f;
            const float* qi = q.row(b, i, h);
            const float* kj = k.row(b, j, h / group);
            for (int64_t c = 0; c < d.head_dim; ++c) dot += qi[c] * kj[c];
            scores[j] = dot * d.softmax_scale - slope * static_cast<float>(std::llabs(diag - j));
            m = std::max(m, scores[j]);
          }
          float z = 0.0f;
          for (int64_t j = 0; j < visible; ++j) z += (scores[j] = std::exp(scores[j] - m));
          float* o = out.row(b, i, h);
          for (int64_t c = 0; c < d.head_dim_v; ++c) {
            float acc = 0.0f;
            for (int64_t j = 0; j < visible; ++j) acc += scores[j] * v.row(b, j, h / group)[c];
            o[c] = z > 0.0f ? acc / z : 0.0f;
          }
          if (d.return_lse) {
            float* lse = static_cast<float*>(a.lse->data);
            const int64_t* st = a.lse->strides;
            const int64_t idx = st ? b * st[0] + h * st[1] + i * st[2] : (b * d.heads_q + h) * d.seqlen_q + i;
            lse[idx] = z > 0.0f ? m + std::log(z) : neg_inf;
          }
        }
      }
    }
  }
};

}  // namespace

ATTNRT_DEFINE_PLUGIN(AlibiAttention)
