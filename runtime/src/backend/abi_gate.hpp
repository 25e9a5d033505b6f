// The host's half of the extension rule (ABI 1.1, sdk/ABI_CHANGELOG.md): a plugin is never sent
// an extension block its ABI minor cannot know. An ABI 1.0 plugin cannot even see that
// attnrt_attention_desc has a chain, so it would compute the call without the block; it is
// refused for that call instead, with the reason, before its supports() runs, and resolution
// goes on to the next candidate. Private to libattnrt.
#pragma once

#include <attnrt/plugin_abi.h>

#include <cstdint>
#include <string>

namespace attnrt {

// "" when a plugin built against ABI <ATTNRT_ABI_VERSION_MAJOR>.<plugin_abi_minor> may receive
// desc's extension chain (no chain, or every block's type known to that minor), else why not:
// "built against ABI 1.0; vendor extension 0x80000001 needs ABI 1.1". A malformed chain is the
// caller's mistake, not a reason to try another plugin: it throws attnrt::Error
// (ATTNRT_ERROR_INVALID_ARGUMENT) naming the block. ABI 1.2's descriptor combination (is_paged
// with is_varlen: varlen queries over a paged cache) is gated the same way: "built against ABI
// 1.1; varlen queries over a paged KV cache (is_paged with is_varlen) need ABI 1.2".
std::string abi_gate_reason(const attnrt_attention_desc& desc, uint32_t plugin_abi_minor);

}  // namespace attnrt
