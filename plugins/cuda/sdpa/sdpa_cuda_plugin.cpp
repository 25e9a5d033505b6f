// sdpa on CUDA: cuDNN's fused flash attention through the cuDNN frontend's graph API (one graph
// per call shape, built once and cached: sdpa_cudnn_graphs.hpp), with libcudnn opened at run
// time (cudnn_library.hpp). Same name as the CPU sdpa plugin, its own library, so the CPU plugin
// stays free of CUDA; the registry picks by the call's device.
//
// What it computes (the ABI's score rule; cuDNN frontend docs, "Attention"): fp16/bf16, head_dim
// and head_dim_v multiples of 8 up to 256 (cuDNN decides per version and GPU; its reason is
// passed on), GQA/MQA, bottom-right causal, sliding window (left and right), varlen through
// padding masks and ragged offsets, LSE (cuDNN's Stats), forward and backward, deterministic
// backward (cuDNN's deterministic algorithm), sinks (cuDNN 9.13+: its sink_token and
// dsink_token, forward and backward; not with the deterministic backward, whose dsink_token
// differs between repeats), paged KV in the forward for decode (seqlen_q 1; cuDNN 9.15+: its page
// tables and paged cache load, block_table and seqused_k as given; a sequence with no cached key
// gets the ABI's empty row, out 0 and lse -inf, written after cuDNN). Refused with a reason, never approximated:
// softcap (cuDNN's fused kernels have no tanh cap: the score_mod graph would drop the masks), ALiBi (cuDNN's alibi_mask
// uses its own fixed slopes, not the caller's), the backward over a paged cache (cuDNN's paged path is forward only),
// paged calls with more than one query row (wrong rows on the H100: bench/results/sdpa-cudnn-sinks-2026-11-24/), packed
// queries over a paged cache, dropout (cuDNN's Philox stream is not the ABI's), fp32 (the fused engines take
// fp16/bf16), and what cuDNN's own validation rejects (e.g. sinks with one query row, sinks with varlen before
// cuDNN 9.26: its reason is passed on).
#include "cudnn_library.hpp"
#include "sdpa_cudnn_graphs.hpp"
#include "sdpa_graph_key.hpp"
#include "sdpa_varlen_kernels.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_cuda/cuda_check.hpp>
#include <attnrt_cuda/make_params.hpp>

#include <climits>
#include <initializer_list>
#include <string>

namespace attnrt::plugins::sdpa_cuda {
namespace {

using cuda::check_cuda;
using cuda::detail::data_of;
namespace kern = cuda::sdpa;

constexpr size_t kAlign = 256;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The plugin's own part of the workspace, before cuDNN's: varlen lengths and ragged offsets,
// and lse in cuDNN's padded layout when the ABI's is packed.
struct Scratch {
  size_t seq_q = 0, seq_kv = 0, ragged = 0, stats = 0, table = 0, total = 0;
  static constexpr int kRaggedArrays = 8;

  Scratch(const attnrt_attention_desc& d, bool backward) {
    size_t at = 0;
    auto take = [&](size_t bytes) {
      const size_t o = at;
      at += align_up(bytes);
      return o;
    };
    if (d.is_paged && !d.is_varlen) {  // the padding mask's lengths and cuDNN's page table
      seq_q = take(size_t(d.batch) * 4);
      seq_kv = take(size_t(d.batch) * 4);
      table = take(size_t(d.batch) * size_t((int64_t(d.seqlen_k) + d.page_size - 1) / d.page_size) * 4);
      total = at;
      return;
    }
    if (!d.is_varlen) return;
    seq_q = take(size_t(d.batch) * 4);
    seq_kv = take(size_t(d.batch) * 4);
    ragged = take(size_t(kRaggedArrays) * (d.batch + 1) * 4);
    if (backward || d.return_lse) stats = take(size_t(d.batch) * d.heads_q * d.seqlen_q * 4);
    total = at;
  }
  int32_t* ragged_array(char* ws, int i, int32_t batch) const {
    return reinterpret_cast<int32_t*>(ws + ragged) + size_t(i) * (batch + 1);
  }
};

// cuDNN's ragged offsets are int32 element offsets: every packed tensor's must fit.
void require_int32_offsets(const char* name, const DLTensor* t) {
  const int64_t rows = t->shape[0];
  const int64_t row_stride = cuda::detail::stride_of(*t, 0);
  if (rows * row_stride > INT32_MAX) {
    throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, std::string(name) + " " + sdk::shape_string(*t) +
                                                   ": its ragged offsets (elements) exceed cuDNN's int32 offsets");
  }
}

class SdpaCudaPlugin {
 public:
  static constexpr const char* kName = "sdpa";
  static constexpr const char* kVersion = "1.0.0";
  static constexpr const char* kDescription =
      "cuDNN's fused flash attention (cuDNN frontend graphs, cached per shape; libcudnn.so.9 opened at run time)";

  static constexpr attnrt_capabilities kCapabilities = sdk::capabilities(
      {.devices = ATTNRT_DEVICE_BIT_CUDA,
       .dtypes = ATTNRT_DTYPE_BIT_FP16 | ATTNRT_DTYPE_BIT_BF16,
       .features = ATTNRT_FEATURE_GQA | ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SLIDING_WINDOW | ATTNRT_FEATURE_VARLEN |
                   ATTNRT_FEATURE_LSE | ATTNRT_FEATURE_BACKWARD | ATTNRT_FEATURE_DETERMINISTIC |
                   ATTNRT_FEATURE_HEAD_DIM_V | ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_PAGED_KV,
       .min_head_dim = 8,
       .max_head_dim = 256,
       .min_cuda_arch = 80});

  // Beyond the capabilities: cuDNN loadable, a CUDA device, head dims, the backward's own limit
  // below, and cuDNN's own verdict on the call's graph (built here and cached, so that the call
  // itself builds nothing).
  std::string supports(const attnrt_attention_desc& d) const {
    const CudnnLibrary& lib = cudnn_library();
    if (!lib.loaded) return lib.error;
    if (std::string why = device_reason(); !why.empty()) return lib.version_string() + ": " + why;
    if (d.head_dim % 8 != 0 || d.head_dim_v % 8 != 0) {
      return lib.version_string() + ": head_dim " + std::to_string(d.head_dim) + " / head_dim_v " +
             std::to_string(d.head_dim_v) + " must be multiples of 8 for cuDNN's fused attention";
    }
    if (d.seqlen_q == 0 || d.seqlen_k == 0 || d.batch == 0) {
      return lib.version_string() + ": empty calls (batch, seqlen_q or seqlen_k 0) are not run through cuDNN";
    }
    // cuDNN's backward has no single query over a single key (its frontend refuses seqlen_q =
    // seqlen_k = 1; varlen: the maxima), while its forward runs it. The plugin advertises backward,
    // so the call is refused here, not once its backward is asked for. A rule, not the frontend's
    // validation of the backward graph: with that validation in supports(), forward calls on a
    // cache hit took ~10 us more host time on the H100 (bench/results/sdpa-cudnn-host-2026-11-23/).
    if (d.seqlen_q == 1 && d.seqlen_k == 1) {
      return lib.version_string() +
             ": cuDNN's fused attention has no backward for seqlen_q = seqlen_k = 1 (one query, one key; "
             "cuDNN frontend: \"s_q = s_kv = 1 is not supported.\")";
    }
    // Sinks with ragged (varlen) tensors: cuDNN's forward builds, its backward reads out of
    // bounds before 9.26 (the frontend refuses that backward graph), so the call is refused here.
    if (d.has_sinks && d.is_varlen && lib.version < 92600) {
      return lib.version_string() +
             ": sinks with varlen need cuDNN 9.26 or newer (the backward of ragged graphs with a sink token reads out "
             "of bounds before it; cuDNN frontend)";
    }
    // cuDNN's paged path, given more than one query row per sequence (multi-token decode, chunked
    // prefill; causal bottom-right, windows), returned non-finite rows in the paged GPU tests on
    // the H100 with cuDNN 9.19; its decode (one row) matched the reference in every case.
    if (d.is_paged && d.seqlen_q > 1) {
      return lib.version_string() +
             ": paged KV through cuDNN is offered for decode (seqlen_q 1) only: with more query rows its results did "
             "not match the reference (paged_attention takes those calls)";
    }
    // cuDNN's dsink_token is reduced in no fixed order, even with its deterministic algorithm:
    // two backward calls differed in dsinks on the H100 (bench/results/sdpa-cudnn-sinks-2026-11-24/).
    if (d.has_sinks && d.deterministic) {
      return lib.version_string() +
             ": deterministic backward with sinks is not offered (cuDNN's dsink_token reduction differs between "
             "repeats)";
    }
    return graph_support_reason(forward_key(d, nullptr));
  }

  // cuDNN's workspace for the graph with compact strides (the call's own strides may pick
  // another graph; forward checks its need against what it is given) plus the plugin's scratch.
  size_t workspace_size(const attnrt_attention_desc& d, bool backward, int /*num_threads*/) const {
    if (!cudnn_library().loaded || !device_reason().empty() || d.batch == 0 || d.seqlen_q == 0 || d.seqlen_k == 0) {
      return 0;
    }
    if (backward && d.is_paged) return 0;  // refused when called: cuDNN's paged path is forward only
    const GraphKey key = backward ? backward_key(d, nullptr) : forward_key(d, nullptr);
    return Scratch(d, backward).total + align_up(graph_workspace_size(key));
  }

  void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e) {
    cuda::use_device(d);
    const GraphKey key = forward_key(d, &a);
    const Scratch s(d, false);
    if (e.workspace_size < s.total) sdk::require_workspace(e, s.total, 0);
    char* ws = static_cast<char*>(e.workspace);
    cudaStream_t stream = static_cast<cudaStream_t>(e.stream);
    GraphPointers p;
    p.q = data_of(a.q);
    p.k = data_of(a.k);
    p.v = data_of(a.v);
    p.out = data_of(a.out);
    if (d.has_sinks) {
      cuda::detail::require_compact("sinks", a.sinks);
      p.sinks = static_cast<const float*>(data_of(a.sinks));
    }
    if (d.return_lse) {
      cuda::detail::require_compact("lse", a.lse);
      p.stats = static_cast<float*>(data_of(a.lse));
    }
    if (d.is_paged) {
      if (cuda::detail::stride_of(*a.block_table, 1) != 1) {
        throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, "block_table " + sdk::shape_string(*a.block_table) +
                                                       ": cuDNN's page table needs contiguous rows");
      }
      cuda::detail::require_compact("seqused_k", a.seqused_k);
      const int32_t max_pages = int32_t((int64_t(d.seqlen_k) + d.page_size - 1) / d.page_size);
      if (a.block_table->shape[1] < max_pages) {
        throw sdk::Error(ATTNRT_ERROR_INVALID_ARGUMENT, "block_table " + sdk::shape_string(*a.block_table) +
                                                            ": fewer than the " + std::to_string(max_pages) +
                                                            " pages of seqlen_k " + std::to_string(d.seqlen_k));
      }
      int32_t* table = reinterpret_cast<int32_t*>(ws + s.table);
      check_cuda(kern::paged_table(
                     static_cast<const int32_t*>(data_of(a.block_table)), cuda::detail::stride_of(*a.block_table, 0),
                     static_cast<const int32_t*>(data_of(a.seqused_k)), d.page_size, d.batch, max_pages, table, stream),
                 "preparing the page table");
      p.block_table = table;
      p.seq_len_q = reinterpret_cast<int32_t*>(ws + s.seq_q);
      p.seq_len_kv = reinterpret_cast<int32_t*>(ws + s.seq_kv);
      check_cuda(kern::paged_lengths(static_cast<const int32_t*>(data_of(a.seqused_k)), d.seqlen_q, d.batch,
                                     p.seq_len_q, p.seq_len_kv, stream),
                 "preparing paged lengths");
    }
    if (d.is_varlen) {
      prepare_varlen(d, a, s, ws, p, {a.q, a.k, a.v, a.out}, stream);
      if (d.return_lse) p.stats = reinterpret_cast<float*>(ws + s.stats);
    }
    graph_execute(key, p, ws + s.total, e.workspace_size - s.total, stream);
    if (d.is_paged) {
      kern::EmptyRows er;
      er.seqused_k = static_cast<const int32_t*>(data_of(a.seqused_k));
      er.out = static_cast<uint16_t*>(data_of(a.out));
      er.out_batch_stride = cuda::detail::stride_of(*a.out, 0);
      er.out_head_stride = cuda::detail::stride_of(*a.out, 2);
      er.lse = d.return_lse ? p.stats : nullptr;
      er.sinks = p.sinks;
      er.batch = d.batch;
      er.heads = d.heads_q;
      er.head_dim_v = d.head_dim_v;
      check_cuda(kern::paged_empty_rows(er, stream), "writing empty rows");
    }
    if (d.is_varlen && d.return_lse) {
      check_cuda(kern::lse_padded_to_packed(p.stats, static_cast<float*>(data_of(a.lse)),
                                            static_cast<const int32_t*>(data_of(a.cu_seqlens_q)), d.batch, d.heads_q,
                                            d.seqlen_q, a.lse->shape[1], stream),
                 "writing lse");
    }
  }

  void backward(const attnrt_attention_desc& d, const attnrt_backward_args& a, const attnrt_exec& e) {
    cuda::use_device(d);
    if (d.is_paged) {
      throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, cudnn_library().version_string() +
                                                     ": no backward over a paged KV cache (cuDNN's paged "
                                                     "attention is forward only)");
    }
    // cuDNN's verdict on the graph comes with graph_execute's lookup (UNSUPPORTED, its reason).
    const GraphKey key = backward_key(d, &a);
    const Scratch s(d, true);
    if (e.workspace_size < s.total) sdk::require_workspace(e, s.total, 0);
    char* ws = static_cast<char*>(e.workspace);
    cudaStream_t stream = static_cast<cudaStream_t>(e.stream);
    cuda::detail::require_compact("lse", a.lse);
    GraphPointers p;
    p.q = data_of(a.q);
    p.k = data_of(a.k);
    p.v = data_of(a.v);
    p.out = const_cast<void*>(static_cast<const void*>(data_of(a.out)));
    p.dout = data_of(a.dout);
    p.dq = data_of(a.dq);
    p.dk = data_of(a.dk);
    p.dv = data_of(a.dv);
    p.stats = static_cast<float*>(data_of(a.lse));
    if (d.has_sinks) {
      cuda::detail::require_compact("sinks", a.sinks);
      cuda::detail::require_compact("dsinks", a.dsinks);
      p.sinks = static_cast<const float*>(data_of(a.sinks));
      p.dsinks = static_cast<float*>(data_of(a.dsinks));
    }
    if (d.is_varlen) {
      prepare_varlen(d, a, s, ws, p, {a.q, a.k, a.v, a.out, a.dout, a.dq, a.dk, a.dv}, stream);
      float* padded = reinterpret_cast<float*>(ws + s.stats);
      check_cuda(kern::lse_packed_to_padded(p.stats, padded, static_cast<const int32_t*>(data_of(a.cu_seqlens_q)),
                                            d.batch, d.heads_q, d.seqlen_q, a.lse->shape[1], stream),
                 "reading lse");
      p.stats = padded;
    }
    graph_execute(key, p, ws + s.total, e.workspace_size - s.total, stream);
  }

 private:
  // "" when a CUDA device can be used here (asked once per process).
  static const std::string& device_reason() {
    static const std::string why = [] {
      int n = 0;
      const cudaError_t err = cudaGetDeviceCount(&n);
      if (err != cudaSuccess) {
        return std::string("no usable CUDA device (cudaGetDeviceCount: ") + cudaGetErrorName(err) + ": " +
               cudaGetErrorString(err) + ")";
      }
      return n > 0 ? std::string() : std::string("no CUDA device");
    }();
    return why;
  }

  // Sequence lengths and ragged offsets of the call's packed tensors (in `tensors`' order:
  // q, k, v, out[, dout, dq, dk, dv]) into the scratch; their pointers into p.
  template <class Args>
  static void prepare_varlen(const attnrt_attention_desc& d, const Args& a, const Scratch& s, char* ws,
                             GraphPointers& p, std::initializer_list<const DLTensor*> tensors, cudaStream_t stream) {
    // Tensor i's offsets are cu_seqlens_q's (q, out, dout, dq) or cu_seqlens_k's (k, v, dk, dv).
    static constexpr const char* kNames[] = {"q", "k", "v", "out", "dout", "dq", "dk", "dv"};
    static constexpr int32_t kFromK[] = {0, 1, 1, 0, 0, 0, 1, 1};
    cuda::detail::require_compact("cu_seqlens_q", a.cu_seqlens_q);
    cuda::detail::require_compact("cu_seqlens_k", a.cu_seqlens_k);
    cuda::detail::require_compact("seqused_k", a.seqused_k);
    kern::VarlenPrepare vp;
    vp.cu_seqlens_q = static_cast<const int32_t*>(data_of(a.cu_seqlens_q));
    vp.cu_seqlens_k = static_cast<const int32_t*>(data_of(a.cu_seqlens_k));
    vp.seqused_k = static_cast<const int32_t*>(data_of(a.seqused_k));
    vp.batch = d.batch;
    vp.seq_len_q = reinterpret_cast<int32_t*>(ws + s.seq_q);
    vp.seq_len_kv = reinterpret_cast<int32_t*>(ws + s.seq_kv);
    int32_t** slots[] = {&p.ragged_q,    &p.ragged_k,  &p.ragged_v,  &p.ragged_out,
                         &p.ragged_dout, &p.ragged_dq, &p.ragged_dk, &p.ragged_dv};
    int i = 0;
    for (const DLTensor* t : tensors) {
      require_int32_offsets(kNames[i], t);
      int32_t* offsets = s.ragged_array(ws, i, d.batch);
      vp.targets[i] = {offsets, cuda::detail::stride_of(*t, 0), kFromK[i]};
      *slots[i] = offsets;
      ++i;
    }
    vp.num_targets = i;
    p.seq_len_q = vp.seq_len_q;
    p.seq_len_kv = vp.seq_len_kv;
    check_cuda(kern::varlen_prepare(vp, stream), "preparing varlen offsets");
  }
};

}  // namespace
}  // namespace attnrt::plugins::sdpa_cuda

ATTNRT_DEFINE_PLUGIN(attnrt::plugins::sdpa_cuda::SdpaCudaPlugin)
