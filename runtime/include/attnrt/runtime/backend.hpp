// A resolved attention backend: one plugin instance, called with host-allocated workspace.
// Every call is validated by the host before the plugin sees it (sdk/validate.hpp), so a bad
// tensor is reported by name even when a third-party plugin checks nothing.
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt/runtime/cuda_memory.hpp>
#include <attnrt/runtime/export.hpp>
#include <attnrt/runtime/plugin_library.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace attnrt {

class ATTNRT_API Backend {
 public:
  // Creates an instance of `library`'s plugin. Throws attnrt::Error with the plugin's message.
  explicit Backend(std::shared_ptr<PluginLibrary> library);
  ~Backend();
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  std::string name() const { return library_->name(); }
  const PluginLibrary& library() const { return *library_; }
  bool has_backward() const { return library_->api().backward != nullptr; }

  // "" when the plugin accepts desc, else its reason (or the capability gap, or the error).
  std::string unsupported_reason(const attnrt_attention_desc& desc) const;

  // Runs forward / backward with `num_threads` CPU threads (0: plugin default) or, for CUDA
  // tensors, on `stream` (cudaStream_t; NULL: the default stream), asynchronously. Throws
  // attnrt::Error prefixed with the plugin's name. Workspace is allocated by the host on the
  // call's device and kept for reuse; workspace_bytes() reports the last call's.
  void forward(const attnrt_attention_desc& desc, const attnrt_forward_args& args, int num_threads = 0,
               void* stream = nullptr);
  void backward(const attnrt_attention_desc& desc, const attnrt_backward_args& args, int num_threads = 0,
                void* stream = nullptr);
  size_t workspace_bytes() const { return workspace_used_; }

 private:
  void* workspace(const attnrt_attention_desc& desc, bool backward, int num_threads, size_t* bytes);
  [[noreturn]] void fail(const char* what, attnrt_status status, const char* message) const;

  std::shared_ptr<PluginLibrary> library_;
  attnrt_instance* instance_ = nullptr;
  std::mutex workspace_mutex_;
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, FreeDeleter> workspace_;
  size_t workspace_capacity_ = 0;
  CudaBuffer cuda_workspace_;  // CUDA calls: grown like workspace_, on the call's device
  size_t workspace_used_ = 0;
};

ATTNRT_API const char* status_name(attnrt_status status);

}  // namespace attnrt
