// One loaded plugin library: opened with Boost.DLL, its entry symbol called, its ABI version
// and function table checked. Every way a file can fail to be a usable plugin becomes an
// attnrt::Error naming the path and the problem.
//
// Threads: open() runs one at a time in the process (a plugin's entry point need not be
// reentrant); an opened PluginLibrary is immutable and may be shared by any threads.
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt/runtime/export.hpp>
#include <attnrt/runtime/pins.hpp>

#include <filesystem>
#include <memory>
#include <string>

namespace boost::dll {
class shared_library;
}

namespace attnrt {

class ATTNRT_API PluginLibrary {
 public:
  // Loads `path` and validates it:
  //  - the file exists;
  //  - neither it nor its folder is writable by other users, nor owned by another user than
  //    this one or root (else refused with the reason; `allow_writable`, or the environment's
  //    ATTNRT_ALLOW_WRITABLE_PLUGINS=1, skips this check on purpose);
  //  - with `pins` (pins.hpp), its sha256 is allowed for `expected_name` (the name the registry
  //    knows it by; "" when unknown until it is loaded), checked again against its own name once
  //    loaded; the file hashed is the file loaded (same device and inode);
  //  - its ELF structure is sound for this host before the dynamic loader sees it (class,
  //    machine, every segment and section inside the file, ...; elf_check.hpp), else the
  //    reason, never a crash;
  //  - it is a loadable shared library (else: the loader's message);
  //  - it exports ATTNRT_PLUGIN_ENTRY_SYMBOL (else: "not an attnrt plugin");
  //  - its ABI major equals ATTNRT_ABI_VERSION_MAJOR (else: both versions named);
  //  - its function table and capabilities are complete for ABI 1.0.
  // Every refusal of a file that exists is status UNSUPPORTED and names the path.
  static std::shared_ptr<PluginLibrary> open(const std::filesystem::path& path, bool allow_writable = false,
                                             const PluginPins* pins = nullptr, const std::string& expected_name = "");
  ~PluginLibrary();

  const attnrt_plugin_api& api() const { return *api_; }
  const attnrt_capabilities& capabilities() const { return *api_->capabilities; }
  const std::filesystem::path& path() const { return path_; }
  std::string name() const { return api_->name; }
  std::string version() const { return api_->version ? api_->version : ""; }
  std::string abi_version() const;
  // The sha256 of the library file: the one checked against pins at load, else computed now.
  std::string sha256() const;

 private:
  PluginLibrary() = default;
  std::unique_ptr<boost::dll::shared_library> lib_;
  const attnrt_plugin_api* api_ = nullptr;
  std::filesystem::path path_;
  std::string sha256_;  // when pins were checked
};

// "fp32, fp16, bf16" / "gqa, causal, ..." / "cpu, cuda sm80+": capability words for listings.
ATTNRT_API std::string describe_dtypes(uint32_t dtype_bits);
ATTNRT_API std::string describe_features(uint64_t feature_bits);
ATTNRT_API std::string describe_devices(const attnrt_capabilities& caps);

}  // namespace attnrt
