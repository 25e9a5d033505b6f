#include "abi_gate.hpp"

#include <attnrt/runtime/error.hpp>
#include <attnrt/validate.hpp>

#include <fmt/format.h>

namespace attnrt {

std::string abi_gate_reason(const attnrt_attention_desc& desc, uint32_t plugin_abi_minor) {
  try {
    sdk::check_extensions(desc);  // bounded: reads desc.extensions only when its writer knew it
  } catch (const sdk::Error& e) {
    throw Error(e.status(), e.what());
  }
  if (desc.is_paged && desc.is_varlen && plugin_abi_minor < 2) {
    return fmt::format(
        "built against ABI {}.{}; varlen queries over a paged KV cache (is_paged with is_varlen) "
        "need ABI {}.2",
        ATTNRT_ABI_VERSION_MAJOR, plugin_abi_minor, ATTNRT_ABI_VERSION_MAJOR);
  }
  for (const attnrt_extension& block : sdk::extensions(desc)) {
    // Optional blocks too: a plugin of an older minor cannot tell a hint from a requirement.
    const uint32_t needed = sdk::extension_abi_minor(block.type);
    if (plugin_abi_minor < needed) {
      return fmt::format("built against ABI {}.{}; {} needs ABI {}.{}", ATTNRT_ABI_VERSION_MAJOR, plugin_abi_minor,
                         sdk::extension_name(block.type), ATTNRT_ABI_VERSION_MAJOR, needed);
    }
  }
  return "";
}

}  // namespace attnrt
