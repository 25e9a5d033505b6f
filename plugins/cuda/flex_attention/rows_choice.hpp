// The Hopper forward's choice of tile height at head_dim 64 (flex_cuda_plugin.cpp's Rows::kChoose),
// remembered per block mask. The GPU makes the choice (attnrt_flex_block_states sums each height's
// modelled cost, and of the two forward kernels launched the cheaper one runs: rows_chosen in
// flex_hopper_policy.cuh), which costs a call its sums, a memset and the other kernel's launch:
// 10-19 us at 8k-16k keys (bench/results/flex-lead-2026-11-27/). Here the first such call's sums
// are copied back to the host behind its kernels; once they have arrived, later calls with the
// same mods and block mask (the same list tensors: data, shapes and strides, and sequence
// lengths) launch the chosen kernel alone, and every kRecheck-th such call makes the choice on
// the GPU again. The choice affects speed only: both kernels compute the same result, so a block
// mask whose contents change in place (or a new one that a caching allocator puts at a freed
// one's address) runs at the height chosen before until the next check, never to a wrong answer.
// (Keyed by the tensors alone, without the mods, the benchmark's masks, made one after another,
// took each other's heights: bench/results/flex-lead-2026-11-27/ call 3.) A call under stream
// capture neither uses nor fetches a choice: the graph holds both kernels and chooses at each
// replay, as a mask rewritten between replays needs. Event queries and the pinned buffer's
// allocation run in relaxed capture mode, so that they never end another thread's capture.
#pragma once

#include <attnrt/plugin_abi.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace attnrt::plugins::flex_cuda {

class RowsChoices {
 public:
  RowsChoices() = default;
  RowsChoices(const RowsChoices&) = delete;
  RowsChoices& operator=(const RowsChoices&) = delete;
  ~RowsChoices();

  // The call's identity for the choice: the mods' linked module (`mods`: its address), the
  // device, the sequence lengths, and each list tensor's data, shape and strides.
  using Key = std::vector<int64_t>;
  static Key key(const void* mods, const attnrt_attention_desc& d, const attnrt_flex_attention& f);

  // The rows chosen for `key` (128 or 192), or 0 where no choice has come back yet or this call
  // is the one to check it.
  int chosen(const Key& key);
  // In a call that makes the choice on `stream` (its sums at `sums`, two uint64 on the device,
  // final once the stream reaches this point: after the kernel that sums them): copies them back,
  // unless a copy for `key` is under way or all kSlots copies are. Never under stream capture
  // (the caller's to check: a captured call makes the choice on the GPU at every replay).
  void fetch(const Key& key, const unsigned long long* sums, cudaStream_t stream);

 private:
  static constexpr int kSlots = 16;     // copies under way at once
  static constexpr int kRecheck = 64;   // calls a choice is used for before the GPU makes it again
  static constexpr size_t kMax = 1024;  // block masks remembered (all forgotten past it)
  struct Entry {
    int rows = 0;        // the choice, once made
    int uses = 0;        // calls that used it
    int slot = -1;       // the copy under way
    cudaEvent_t done{};  // recorded behind it
  };
  // Takes e's sums if its copy has landed (or drops them if it failed), freeing its slot.
  void collect(Entry& e);

  std::mutex mutex_;
  std::map<Key, Entry> entries_;
  unsigned long long* host_ = nullptr;  // kSlots pairs of sums, pinned
  bool host_failed_ = false;            // its allocation failed (not tried again)
  bool busy_[kSlots] = {};
};

}  // namespace attnrt::plugins::flex_cuda
