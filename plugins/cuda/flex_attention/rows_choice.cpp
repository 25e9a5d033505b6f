#include "rows_choice.hpp"

#include <attnrt_cuda/make_params.hpp>

#include <iterator>

namespace attnrt::plugins::flex_cuda {
namespace {

// Drops a failed call's error from the runtime's last error (the choice stays on the GPU).
void forget_error() { (void)cudaGetLastError(); }

// This thread's stream-capture mode set to relaxed for a scope, as PyTorch's caching allocator
// does around its event queries: under another thread's capture in global mode (PyTorch's
// default), an event query, creation or pinned allocation from this thread would otherwise be
// refused and end that capture.
class RelaxedCapture {
 public:
  RelaxedCapture() : ok_(cudaThreadExchangeStreamCaptureMode(&mode_) == cudaSuccess) {
    if (!ok_) forget_error();
  }
  ~RelaxedCapture() {
    if (ok_) (void)cudaThreadExchangeStreamCaptureMode(&mode_);
  }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;  // the thread's own, once swapped
  bool ok_;
};

}  // namespace

RowsChoices::~RowsChoices() {
  // (At process exit the driver may be gone; nothing here may throw.)
  for (auto& [key, entry] : entries_) {
    if (entry.slot >= 0) cudaEventDestroy(entry.done);
  }
  if (host_ != nullptr) cudaFreeHost(host_);
}

RowsChoices::Key RowsChoices::key(const void* mods, const attnrt_attention_desc& d, const attnrt_flex_attention& f) {
  Key k;
  k.reserve(6 + 4 * (2 + 2 * 4));  // (one allocation: the key is built per call)
  k.insert(k.end(), {reinterpret_cast<intptr_t>(mods), d.device.device_id, d.seqlen_q, d.seqlen_k, f.q_block_size,
                     f.kv_block_size});
  for (const DLTensor* t : {f.kv_num_blocks, f.kv_indices, f.full_kv_num_blocks, f.full_kv_indices}) {
    if (t == nullptr) {
      k.push_back(-1);
      continue;
    }
    k.push_back(reinterpret_cast<intptr_t>(cuda::detail::data_of(t)));
    k.push_back(t->ndim);
    for (int i = 0; i < t->ndim; ++i) {
      k.push_back(t->shape[i]);
      k.push_back(cuda::detail::stride_of(*t, i));
    }
  }
  return k;
}

int RowsChoices::chosen(const Key& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = entries_.find(key);
  if (it == entries_.end()) return 0;
  Entry& e = it->second;
  if (e.rows == 0 && e.slot >= 0) collect(e);
  if (e.rows != 0 && ++e.uses == kRecheck) {
    e.rows = e.uses = 0;  // this call makes it on the GPU and fetches it again
  }
  return e.rows;
}

void RowsChoices::collect(Entry& e) {
  RelaxedCapture relaxed;
  const cudaError_t status = cudaEventQuery(e.done);
  if (status == cudaErrorNotReady) {
    // (Not an error: cleared from the runtime's last error, so that no later check sees it.)
    if (cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();
    return;
  }
  if (status == cudaSuccess) {
    const unsigned long long* sums = host_ + 2 * e.slot;
    e.rows = sums[1] < sums[0] ? 192 : 128;  // rows_chosen's rule
  } else {
    forget_error();  // the copy failed: no choice, and a later call fetches again
  }
  cudaEventDestroy(e.done);
  busy_[e.slot] = false;
  e.slot = -1;
}

void RowsChoices::fetch(const Key& key, const unsigned long long* sums, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto it = entries_.find(key); it != entries_.end() && (it->second.rows != 0 || it->second.slot >= 0)) {
    return;
  }
  auto free_slot = [this] {
    int slot = 0;
    while (slot < kSlots && busy_[slot]) ++slot;
    return slot;
  };
  int slot = free_slot();
  if (slot == kSlots) {
    // Every slot's copy under way, or finished for a key not asked for since: collect those.
    for (auto& [other, entry] : entries_) {
      if (entry.slot >= 0) collect(entry);
    }
    slot = free_slot();
    if (slot == kSlots) return;
  }
  RelaxedCapture relaxed;
  if (host_ == nullptr) {
    if (host_failed_) return;
    if (cudaHostAlloc(reinterpret_cast<void**>(&host_), 2 * kSlots * sizeof(*host_), cudaHostAllocPortable) !=
        cudaSuccess) {
      host_ = nullptr;
      host_failed_ = true;  // (not tried again: the choice stays on the GPU)
      forget_error();
      return;
    }
  }
  cudaEvent_t done{};
  if (cudaEventCreateWithFlags(&done, cudaEventDisableTiming) != cudaSuccess) {
    forget_error();
    return;
  }
  if (cudaMemcpyAsync(host_ + 2 * slot, sums, 2 * sizeof(*sums), cudaMemcpyDeviceToHost, stream) != cudaSuccess) {
    cudaEventDestroy(done);
    forget_error();
    return;
  }
  if (cudaEventRecord(done, stream) != cudaSuccess) {
    // The copy is under way with nothing to tell when it lands: its slot is never used again.
    busy_[slot] = true;
    cudaEventDestroy(done);
    forget_error();
    return;
  }
  if (entries_.size() >= kMax) {
    for (auto it = entries_.begin(); it != entries_.end();) {
      it = it->second.slot < 0 ? entries_.erase(it) : std::next(it);
    }
  }
  busy_[slot] = true;
  entries_[key] = Entry{0, 0, slot, done};
}

}  // namespace attnrt::plugins::flex_cuda
