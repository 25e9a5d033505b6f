// The host's compiler for flex_attention mods: the system C++ compiler turns a kHost
// translation unit (mods.hpp) into a shared object in the disk cache, which is then loaded
// (Boost.DLL) and its entry points looked up. Compiled units stay loaded for the compiler's life.
// Used by the CPU flex_attention plugin and by the harness, whose fp64 reference and block-mask
// builder evaluate a config's mods (attnrt/harness/flex_config.hpp); each passes its own version,
// so the two never share a cache entry.
#pragma once

#include <attnrt_kernels/flex/disk_cache.hpp>
#include <attnrt_kernels/flex/eval.hpp>
#include <attnrt_kernels/flex/mods.hpp>

#include <boost/dll/shared_library.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace attnrt::kernels::flex {

struct CompiledMods {
  boost::dll::shared_library library;
  HostFns fns;
  std::string path;  // the cache entry
  bool cache_hit = false;
};

class HostCompiler {
 public:
  // `version` (the plugin's, or another user's own) joins the cache key, so a new plugin never
  // loads an old plugin's objects.
  explicit HostCompiler(std::string version);

  // The compiled mods (from memory, the disk cache, or the compiler). Throws
  // Error(ATTNRT_ERROR_INVALID_ARGUMENT) with the compiler's messages when they do not compile,
  // Error(ATTNRT_ERROR_UNSUPPORTED) when there is no compiler.
  std::shared_ptr<const CompiledMods> get(const Mods& mods);

  // The compiler command: $ATTNRT_HOST_CXX, else "c++" (found on PATH).
  const std::string& compiler() const { return compiler_; }

 private:
  std::string identity();  // `<compiler> --version`'s first line, once (mutex_ held)
  void compile(const std::string& source, const std::string& output) const;

  std::string version_, compiler_, identity_;
  std::optional<DiskCache> cache_;  // made on the first get()
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const CompiledMods>> loaded_;
};

}  // namespace attnrt::kernels::flex
