// Reading a descriptor's extension chain (ABI 1.1; plugin_abi.h, attnrt_extension): the table
// of attnrt's own extension types with the minor that introduced each, iteration, lookup, the
// chain's well-formedness, and the reason a plugin refuses a required block it does not
// implement. Shared by plugins (the C++ adapter in plugin.hpp gates every call with it) and by
// the host (validate.hpp's check_desc; the runtime's ABI gate).
#ifndef ATTNRT_EXTENSIONS_HPP_
#define ATTNRT_EXTENSIONS_HPP_

#include <attnrt/plugin_abi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <span>
#include <string>

namespace attnrt::sdk {

// attnrt's own extension types, each with the ABI minor that introduced it (plugin_abi.h,
// attnrt_extension_type, lists the same): a host sends a block only to plugins of at least that
// minor. Adding a type appends a line here and to the enum (sdk/ABI_CHANGELOG.md, "Adding an
// extension type"). Type 0 is reserved and never valid.
struct StandardExtension {
  uint32_t type;
  uint32_t abi_minor;  // the minor of ATTNRT_ABI_VERSION_MAJOR that introduced it
  const char* name;    // as messages name it
};
inline constexpr StandardExtension kStandardExtensions[] = {
    {ATTNRT_EXTENSION_TYPE_NONE, 0, "none (reserved)"},
    {ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION, 3, "flex_attention"},
};

// The table's entry for `type`; NULL for a vendor type or a type this header does not define.
inline const StandardExtension* standard_extension(uint32_t type) noexcept {
  if (type == ATTNRT_EXTENSION_TYPE_NONE || type >= ATTNRT_EXTENSION_TYPE_VENDOR_FIRST) return nullptr;
  for (const StandardExtension& e : kStandardExtensions) {
    if (e.type == type) return &e;
  }
  return nullptr;
}

inline bool is_vendor_extension(uint32_t type) noexcept { return type >= ATTNRT_EXTENSION_TYPE_VENDOR_FIRST; }

// The ABI minor a plugin must be built against to know `type`: the table's minor for attnrt's
// own types; 1 (the mechanism's) for vendor types; for an attnrt type this header does not
// define, a minor newer than this header's (it was added after it).
inline uint32_t extension_abi_minor(uint32_t type) noexcept {
  if (const StandardExtension* e = standard_extension(type)) return e->abi_minor;
  if (is_vendor_extension(type)) return 1;
  return ATTNRT_ABI_VERSION_MINOR + 1;
}

// How messages name a type: "extension 'flex_attention' (type 1)", "vendor extension
// 0x80000001", "extension type 7 (not defined in ABI 1.1)".
inline std::string extension_name(uint32_t type) {
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%08x", static_cast<unsigned>(type));
  if (is_vendor_extension(type)) return std::string("vendor extension ") + hex;
  if (const StandardExtension* e = standard_extension(type)) {
    return std::string("extension '") + e->name + "' (type " + std::to_string(type) + ")";
  }
  return "extension type " + std::to_string(type) + " (not defined in ABI " + std::to_string(ATTNRT_ABI_VERSION_MAJOR) +
         "." + std::to_string(ATTNRT_ABI_VERSION_MINOR) + ")";
}

// desc.extensions when the descriptor's writer knew the field (ATTNRT_HAS_FIELD), else NULL: a
// 1.0 writer's descriptor has no chain. Read the field only through this.
inline const attnrt_extension* first_extension(const attnrt_attention_desc& desc) noexcept {
  return ATTNRT_HAS_FIELD(&desc, attnrt_attention_desc, extensions) ? desc.extensions : nullptr;
}

// The blocks of a descriptor's chain, for range-for:
//   for (const attnrt_extension& e : attnrt::sdk::extensions(desc)) { ... e.type ... }
// Ends at a NULL `next` and after ATTNRT_EXTENSION_CHAIN_MAX blocks, so a cycle cannot hang it.
// It reads each block's header: the chain must be well formed (extension_chain_error is ""),
// which the attnrt host checks before any plugin sees a call and the adapter checks again.
class ExtensionChain {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = attnrt_extension;
    using difference_type = std::ptrdiff_t;
    using pointer = const attnrt_extension*;
    using reference = const attnrt_extension&;

    iterator() = default;
    iterator(const attnrt_extension* block, size_t index) noexcept : block_(block), index_(index) {}
    reference operator*() const noexcept { return *block_; }
    pointer operator->() const noexcept { return block_; }
    iterator& operator++() noexcept {
      block_ = ++index_ < ATTNRT_EXTENSION_CHAIN_MAX ? block_->next : nullptr;
      return *this;
    }
    iterator operator++(int) noexcept {
      iterator before = *this;
      ++*this;
      return before;
    }
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.block_ == b.block_; }

   private:
    const attnrt_extension* block_ = nullptr;
    size_t index_ = 0;
  };

  explicit ExtensionChain(const attnrt_extension* first) noexcept : first_(first) {}
  iterator begin() const noexcept { return iterator(first_, 0); }
  iterator end() const noexcept { return iterator(); }
  bool empty() const noexcept { return first_ == nullptr; }

 private:
  const attnrt_extension* first_;
};

inline ExtensionChain extensions(const attnrt_attention_desc& desc) noexcept {
  return ExtensionChain(first_extension(desc));
}

// The first block of `type` on desc's chain, or NULL. Cast it to the type's struct only after
// checking its struct_size (ATTNRT_HAS_FIELD) for the fields you read.
inline const attnrt_extension* find_extension(const attnrt_attention_desc& desc, uint32_t type) noexcept {
  for (const attnrt_extension& e : extensions(desc)) {
    if (e.type == type) return &e;
  }
  return nullptr;
}

// desc's flex_attention block (ABI 1.3), or NULL when the chain holds none. The block's
// struct_size is checked by validate.hpp's check_desc (check_flex): read it after that.
inline const attnrt_flex_attention* flex_block(const attnrt_attention_desc& desc) noexcept {
  return reinterpret_cast<const attnrt_flex_attention*>(find_extension(desc, ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION));
}

// "" when desc's chain is well formed, else what is wrong with it: a block smaller than the
// header, a block of the reserved type 0, more than ATTNRT_EXTENSION_CHAIN_MAX blocks (a
// cycle, usually). (A NULL `next` ends the chain, so a chain has no NULL entry.) validate.hpp's
// check_desc throws it as ATTNRT_ERROR_INVALID_ARGUMENT.
inline std::string extension_chain_error(const attnrt_attention_desc& desc) {
  size_t index = 0;
  for (const attnrt_extension* e = first_extension(desc); e != nullptr; e = e->next, ++index) {
    if (index == ATTNRT_EXTENSION_CHAIN_MAX) {
      return "desc.extensions: the chain has more than " + std::to_string(ATTNRT_EXTENSION_CHAIN_MAX) +
             " blocks (ATTNRT_EXTENSION_CHAIN_MAX); is it a cycle?";
    }
    if (e->struct_size < ATTNRT_EXTENSION_SIZE_V1_1) {
      return "desc.extensions: block " + std::to_string(index) + " has struct_size " + std::to_string(e->struct_size) +
             ", smaller than the extension header's " + std::to_string(ATTNRT_EXTENSION_SIZE_V1_1) + " bytes";
    }
    if (e->type == ATTNRT_EXTENSION_TYPE_NONE) {
      return "desc.extensions: block " + std::to_string(index) +
             " has type 0 (ATTNRT_EXTENSION_TYPE_NONE, reserved: a zero-filled header?)";
    }
  }
  return "";
}

// Why a plugin that implements the extension types `implemented` must refuse desc: the first
// required block (flags without ATTNRT_EXTENSION_OPTIONAL) of another type, named; "" when
// there is none. Optional blocks of unknown types are never a reason. The C++ adapter calls it
// for you with the class's kExtensions; a plugin that fills its own function table calls it
// first in supports() (and forward/backward).
inline std::string unimplemented_extension_reason(const attnrt_attention_desc& desc,
                                                  std::span<const uint32_t> implemented) {
  for (const attnrt_extension& e : extensions(desc)) {
    if (e.flags & ATTNRT_EXTENSION_OPTIONAL) continue;
    if (std::find(implemented.begin(), implemented.end(), e.type) != implemented.end()) continue;
    return extension_name(e.type) +
           " is required (not flagged ATTNRT_EXTENSION_OPTIONAL) and this plugin does not "
           "implement it";
  }
  return "";
}

// A plugin class that implements extension types says so with
//   static constexpr uint32_t kExtensions[] = {MY_EXTENSION_TYPE, ...};
template <class Plugin>
concept DeclaresExtensions = requires {
  std::span<const uint32_t>(Plugin::kExtensions);
};

// The extension types Plugin implements: its kExtensions, or none.
template <class Plugin>
constexpr std::span<const uint32_t> implemented_extensions() noexcept {
  if constexpr (DeclaresExtensions<Plugin>) {
    return std::span<const uint32_t>(Plugin::kExtensions);
  } else {
    return {};
  }
}

}  // namespace attnrt::sdk

#endif  // ATTNRT_EXTENSIONS_HPP_
