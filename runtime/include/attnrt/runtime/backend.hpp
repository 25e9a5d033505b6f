// A resolved attention backend: one plugin instance, called with host-allocated workspace.
// Every call is validated by the host before the plugin sees it (sdk/validate.hpp), so a bad
// tensor is reported by name even when a third-party plugin checks nothing.
//
// Threads: one Backend is shared by every thread whose resolution picked its library.
// unsupported_reason, forward and backward may run concurrently (the plugin ABI allows it on one
// instance), each call with a workspace of its own: a CPU call borrows a host block for its
// duration (calls overlap); a CUDA call uses its stream's block (calls on different streams
// overlap on the GPU; their launches take turns on the host), kept for reuse until the Backend
// goes: one block per stream ever used. Concurrent calls need distinct outputs. Construction
// and destruction must not overlap other calls (shared_ptr owners ensure it).
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt/runtime/cuda_memory.hpp>
#include <attnrt/runtime/export.hpp>
#include <attnrt/runtime/plugin_library.hpp>

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
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
  // call's device and kept for reuse; workspace_bytes() reports the last call's (with
  // concurrent calls: one of the last).
  void forward(const attnrt_attention_desc& desc, const attnrt_forward_args& args, int num_threads = 0,
               void* stream = nullptr);
  void backward(const attnrt_attention_desc& desc, const attnrt_backward_args& args, int num_threads = 0,
                void* stream = nullptr);
  size_t workspace_bytes() const { return workspace_used_.load(std::memory_order_relaxed); }

  // For a framework that owns scratch memory (host_api.h, issue 18): the bytes forward
  // (backward false) or backward needs for desc with num_threads, and calls that use the
  // caller's exec (stream, workspace on desc.device aligned to 256 bytes and at least that large,
  // num_threads) as they are. Nothing is allocated, synchronised or logged on their path; a
  // workspace too small or misaligned is ATTNRT_ERROR_INVALID_ARGUMENT naming exec's field.
  size_t required_workspace(const attnrt_attention_desc& desc, bool backward, int num_threads);
  void forward(const attnrt_attention_desc& desc, const attnrt_forward_args& args, const attnrt_exec& exec);
  void backward(const attnrt_attention_desc& desc, const attnrt_backward_args& args, const attnrt_exec& exec);

  // ABI 1.2: writes new tokens into a paged KV cache (attnrt_append_kv_args) on exec's stream (no
  // workspace). A plugin built against ABI < 1.2, or one without an append, is refused
  // (ATTNRT_ERROR_UNSUPPORTED: "built against ABI 1.1; append_kv needs ABI 1.2").
  bool has_append_kv() const;
  void append_kv(const attnrt_attention_desc& desc, const attnrt_append_kv_args& args, const attnrt_exec& exec);

  // ABI 1.4: builds a flex block mask from the mask_mod of desc's flex block
  // (attnrt_block_mask_args) on exec's stream (no workspace). Refused like append_kv for a plugin
  // built against ABI < 1.4 or one that has none ("built against ABI 1.3; create_block_mask needs
  // ABI 1.4").
  bool has_create_block_mask() const;
  void create_block_mask(const attnrt_attention_desc& desc, const attnrt_block_mask_args& args,
                         const attnrt_exec& exec);

 private:
  class HostWorkspace;  // a CPU call's borrowed block (backend.cpp)
  // The plugin's exec for an entry appended in ABI 1.`minor` (`what`), after checking that the
  // plugin's table has it (entry non-null) and that the caller's exec is one.
  attnrt_exec appended_entry_exec(const char* what, uint32_t minor, bool has_field, bool entry_set,
                                  const attnrt_exec& exec) const;
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  struct HostBlock {
    std::unique_ptr<void, FreeDeleter> data;
    size_t capacity = 0;
  };
  // A CUDA workspace's owner: the stream that orders its uses. NULL (under per-thread default
  // streams) and cudaStreamPerThread name another stream on every thread, so they add the thread.
  using StreamKey = std::tuple<int, void*, std::thread::id>;

  size_t workspace_size(const attnrt_attention_desc& desc, bool backward, int num_threads);
  void check_forward(const attnrt_attention_desc& desc, const attnrt_forward_args& args) const;
  void check_backward(const attnrt_attention_desc& desc, const attnrt_backward_args& args) const;
  // The caller's exec, checked against what the plugin asks for, as the plugin gets it.
  attnrt_exec caller_exec(const char* what, const attnrt_attention_desc& desc, bool backward, const attnrt_exec& exec);
  void* cuda_workspace(const attnrt_attention_desc& desc, void* stream, size_t bytes);
  // Runs `invoke(exec, error)`, the plugin's forward or backward, with a workspace of its own.
  template <class Invoke>
  void call(const char* what, const attnrt_attention_desc& desc, bool backward, int num_threads, void* stream,
            Invoke&& invoke);
  [[noreturn]] void fail(const char* what, attnrt_status status, const char* message) const;

  std::shared_ptr<PluginLibrary> library_;
  attnrt_instance* instance_ = nullptr;
  // Blocks not lent to a running CPU call: as many as calls ever overlapped, less those running.
  std::mutex host_mutex_;
  std::vector<HostBlock> free_host_blocks_;
  // Held while a CUDA call enqueues its work: a call on the same stream must not replace (free)
  // the block under it.
  std::mutex cuda_mutex_;
  std::map<StreamKey, CudaBuffer> cuda_workspaces_;
  std::atomic<size_t> workspace_used_{0};
};

ATTNRT_API const char* status_name(attnrt_status status);

}  // namespace attnrt
