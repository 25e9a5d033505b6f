// The modules the plugin's call shapes found, remembered for the calls after them. Every forward
// asks for its modules several times (supports(), which the SDK's adapter runs before each call,
// then forward() itself: seven lookups at head_dim 64), and the caches behind them key a module
// by the mods' identity, whose strings each lookup built again: 1.5-2.5 us of a forward's
// 9-13 us of host time in the plugin (bench/results/flex-direct-2026-11-27, call 1's probes).
// Here a lookup compares the call's flex block with the last kEntries shapes in place
// (Mods::matches) and allocates nothing. Only modules found are remembered: a lookup that failed
// goes to its cache again, which keeps the failure's message.
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt_kernels/flex/mods.hpp>

#include <array>
#include <memory>
#include <mutex>
#include <utility>

namespace attnrt::plugins::flex_cuda {

// What a module depends on besides the mods: the kind of module (`variant`: a Hopper variant's
// blob, or null for the NVRTC module), the dtype, head_dim and GPU arch.
struct ModuleShape {
  const void* variant = nullptr;
  bool bf16 = false;
  int head_dim = 0, arch = 0;
  bool operator==(const ModuleShape&) const = default;
};

template <class Module>
class ModuleMemo {
 public:
  std::shared_ptr<const Module> find(const ModuleShape& shape, const attnrt_flex_attention* block) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Entry& e : entries_) {
      if (e.module && e.shape == shape && e.mods.matches(block)) return e.module;
    }
    return nullptr;
  }
  // `mods`: the call's (Mods::from_block of its flex block).
  void remember(const ModuleShape& shape, kernels::flex::Mods mods, std::shared_ptr<const Module> module) {
    std::lock_guard<std::mutex> lock(mutex_);
    Entry& e = entries_[next_];
    next_ = (next_ + 1) % kEntries;
    e = Entry{shape, std::move(mods), std::move(module)};
  }

 private:
  // Call shapes remembered, the oldest replaced. Each set of mods takes up to three Hopper
  // entries (forwards of 128 and 192 rows, backward): 64 keep about twenty sets in rotation.
  static constexpr size_t kEntries = 64;
  struct Entry {
    ModuleShape shape;
    kernels::flex::Mods mods;
    std::shared_ptr<const Module> module;
  };
  mutable std::mutex mutex_;
  std::array<Entry, kEntries> entries_{};
  size_t next_ = 0;
};

}  // namespace attnrt::plugins::flex_cuda
