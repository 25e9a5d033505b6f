// eager on CUDA: the materialized path. Per sequence and chunk of heads, cuBLAS computes the
// raw scores S = Q K^T (fp32), a row kernel applies the score rule and softmax (P rounded to the
// call's dtype, as PyTorch's math path does), and cuBLAS computes O = P V. Backward recomputes
// S and P from lse and runs dV = P^T dO, dP = dO V^T, dS, dQ = dS K, dK = dS^T Q, accumulating
// dK/dV over the GQA group in fp32. Same features as the CPU eager (all but dropout; paged KV
// forward only). It is the GPU's readable baseline, not a fast path: it reads cu_seqlens back
// to the host (a synchronization per call) and holds heads x seqlen_q x seqlen_k scores.
//
// This file is the plugin's C++ class: capabilities, support query, workspace, the cuBLAS handle
// and dispatch; eager_cuda_forward.cpp and eager_cuda_backward.cpp hold the two passes.
#include "eager_cuda_call.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_cuda/cuda_check.hpp>
#include <attnrt_kernels/reference_capabilities.hpp>

#include <cublas_v2.h>

#include <mutex>
#include <string>

namespace attnrt::plugins::eager_cuda {
namespace {

class EagerCudaPlugin {
 public:
  static constexpr const char* kName = "eager";
  static constexpr const char* kVersion = "1.0.0";
  static constexpr const char* kDescription =
      "materialized scores on CUDA (cuBLAS products, softmax kernel): the GPU's readable baseline";

  static constexpr attnrt_capabilities kCapabilities = sdk::capabilities({.devices = ATTNRT_DEVICE_BIT_CUDA,
                                                                          .dtypes = kernels::kReferenceDtypes,
                                                                          .features = kernels::kReferenceFeatures,
                                                                          .max_head_dim = 1024,
                                                                          .min_cuda_arch = 50});

  ~EagerCudaPlugin() {
    if (handle_) cublasDestroy(handle_);
  }

  size_t workspace_size(const attnrt_attention_desc& d, bool backward, int /*num_threads*/) const {
    return Layout(d, backward).total;
  }

  void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e) {
    std::lock_guard<std::mutex> lock(mutex_);  // one cuBLAS handle per instance
    prepare(d, e, false).forward(d, a);
  }

  void backward(const attnrt_attention_desc& d, const attnrt_backward_args& a, const attnrt_exec& e) {
    if (d.is_paged) throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, "backward through a paged KV cache is not supported");
    std::lock_guard<std::mutex> lock(mutex_);
    prepare(d, e, true).backward(d, a);
  }

 private:
  // Checks the workspace, makes the call's device current and binds the instance's cuBLAS
  // handle (created again after a change of device) to the call's stream and workspace.
  Call prepare(const attnrt_attention_desc& d, const attnrt_exec& e, bool backward) {
    const Layout L(d, backward);
    sdk::require_workspace(e, L.total, 0);
    cuda::use_device(d);
    if (handle_ && device_ != d.device.device_id) {
      cublasDestroy(handle_);
      handle_ = nullptr;
    }
    if (!handle_) {
      check_cublas(cublasCreate(&handle_), "cublasCreate");
      device_ = d.device.device_id;
    }
    cudaStream_t stream = static_cast<cudaStream_t>(e.stream);
    check_cublas(cublasSetStream(handle_, stream), "cublasSetStream");
    check_cublas(cublasSetWorkspace(handle_, static_cast<char*>(e.workspace) + L.cublas, kCublasWorkspace),
                 "cublasSetWorkspace");
    return Call{handle_, stream, static_cast<char*>(e.workspace), L};
  }

  // The SDK lets calls on one instance overlap; the handle's stream and workspace are per call,
  // so calls are serialized here (eager is the debugging path, not the concurrent one).
  std::mutex mutex_;
  cublasHandle_t handle_ = nullptr;
  int device_ = -1;
};

}  // namespace
}  // namespace attnrt::plugins::eager_cuda

ATTNRT_DEFINE_PLUGIN(attnrt::plugins::eager_cuda::EagerCudaPlugin)
