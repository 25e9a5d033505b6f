// load, exports, abi, manifest, create: what the kit can tell from the library file, its C table
// and its manifest, without an attention call.
#include "checks.hpp"
#include "fixtures.hpp"
#include "isolation.hpp"

#include <attnrt/harness/conformance.hpp>
#include <attnrt/runtime/manifest.hpp>
#include <attnrt/runtime/plugin_library.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

namespace attnrt::check {
namespace {

constexpr uint64_t kKnownFeatures = (ATTNRT_FEATURE_CREATE_BLOCK_MASK << 1) - 1;

}  // namespace

std::string check_load(const std::filesystem::path& lib) {
  auto l = PluginLibrary::open(lib);
  return fmt::format("{} {} (ABI {}), {}", l->name(), l->version(), l->abi_version(),
                     describe_devices(l->capabilities()));
}

std::string check_exports(const std::filesystem::path& lib) {
  const auto syms = elf_exported_symbols(lib);
  if (syms.size() == 1 && syms[0] == ATTNRT_PLUGIN_ENTRY_SYMBOL)
    return std::string("exactly " ATTNRT_PLUGIN_ENTRY_SYMBOL);
  throw CheckFailed(fmt::format("expected only " ATTNRT_PLUGIN_ENTRY_SYMBOL ", found {} symbol(s): {}", syms.size(),
                                fmt::join(syms.begin(), syms.begin() + std::min<size_t>(syms.size(), 8), ", ")));
}

std::string check_abi(const std::filesystem::path& lib) {
  auto l = PluginLibrary::open(lib);
  const attnrt_plugin_api& api = l->api();
  const attnrt_capabilities& c = l->capabilities();
  std::vector<std::string> problems;
  if (api.abi_minor > ATTNRT_ABI_VERSION_MINOR)
    problems.push_back(
        fmt::format("built against a newer minor ({}.{}) than this kit ({}.{}): newer fields are not checked",
                    api.abi_major, api.abi_minor, ATTNRT_ABI_VERSION_MAJOR, ATTNRT_ABI_VERSION_MINOR));
  if (!api.version || !api.description) problems.push_back("version and description must not be NULL");
  if (!c.devices) problems.push_back("capabilities.devices is empty");
  if (!c.dtypes) problems.push_back("capabilities.dtypes is empty");
  if (c.features & ~kKnownFeatures)
    problems.push_back(fmt::format("unknown feature bits {:#x}", c.features & ~kKnownFeatures));
  if (c.min_head_dim < 1 || (c.max_head_dim > 0 && c.max_head_dim < c.min_head_dim))
    problems.push_back("head_dim range is empty");
  if (!(c.features & ATTNRT_FEATURE_BACKWARD) && api.backward)
    problems.push_back("has a backward entry but does not advertise backward");
  const bool has_append = api.abi_minor >= 2 && ATTNRT_HAS_FIELD(&api, attnrt_plugin_api, append_kv) && api.append_kv;
  if (c.features & ATTNRT_FEATURE_APPEND_KV && !has_append)
    problems.push_back("advertises APPEND_KV (ABI 1.2) without an append_kv entry");
  if (!(c.features & ATTNRT_FEATURE_APPEND_KV) && has_append)
    problems.push_back("has an append_kv entry but does not advertise APPEND_KV");
  const bool has_mask =
      api.abi_minor >= 4 && ATTNRT_HAS_FIELD(&api, attnrt_plugin_api, create_block_mask) && api.create_block_mask;
  if (c.features & ATTNRT_FEATURE_CREATE_BLOCK_MASK && !has_mask)
    problems.push_back("advertises CREATE_BLOCK_MASK (ABI 1.4) without a create_block_mask entry");
  if (!(c.features & ATTNRT_FEATURE_CREATE_BLOCK_MASK) && has_mask)
    problems.push_back("has a create_block_mask entry but does not advertise CREATE_BLOCK_MASK");
  if (c.features & ATTNRT_FEATURE_CREATE_BLOCK_MASK && !(c.features & ATTNRT_FEATURE_FLEX_ATTENTION))
    problems.push_back("advertises CREATE_BLOCK_MASK without FLEX_ATTENTION (the mask is for its flex calls)");
  if (!problems.empty() && !(problems.size() == 1 && api.abi_minor > ATTNRT_ABI_VERSION_MINOR))
    throw CheckFailed(fmt::format("{}", fmt::join(problems, "; ")));
  return fmt::format("ABI {}.{}, table {} bytes, capabilities {} bytes", api.abi_major, api.abi_minor, api.struct_size,
                     c.struct_size);
}

std::string check_manifest(const PluginRecord& record) {
  if (!record.manifest) throw CheckSkipped("a loose library, no manifest");
  auto l = PluginLibrary::open(record.library);
  const Manifest& m = *record.manifest;
  if (m.name != l->name())
    throw CheckFailed(
        fmt::format("{} says '{}' but the library calls itself '{}'", m.source.string(), m.name, l->name()));
  if (!m.version.empty() && m.version != l->version())
    throw CheckFailed(
        fmt::format("{} says version {} but the library says {}", m.source.string(), m.version, l->version()));
  return fmt::format("{}: name {}{}", m.source.filename().string(), m.name,
                     m.aliases.empty() ? "" : fmt::format(", aliases {}", fmt::join(m.aliases, ", ")));
}

std::string check_create(const std::filesystem::path& lib) {
  for (int i = 0; i < 3; ++i) RawPlugin raw(lib);
  return "create/destroy x3";
}

}  // namespace attnrt::check
