#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/plugin_library.hpp>

#include <boost/dll/shared_library.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.hpp"
#include "elf_check.hpp"
#include "file_trust.hpp"

namespace attnrt {
namespace fs = std::filesystem;

PluginLibrary::~PluginLibrary() = default;

namespace {

struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

// For a library that is not there: the .so files its folder does hold, so that a manifest naming
// the wrong file ("library: libmy_attention.so" where the build made libattnrt_my_attention.so)
// shows the right name. "" when the folder does not exist either.
std::string libraries_beside(const fs::path& path) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return "";
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".so") found.push_back(entry.path().filename().string());
  }
  std::sort(found.begin(), found.end());
  if (found.empty()) return fmt::format(" (no .so file in {})", dir.string());
  return fmt::format(" (the .so files in {}: {})", dir.string(), fmt::join(found, ", "));
}

}  // namespace

// Statuses: a path that names no file is the caller's mistake (INVALID_ARGUMENT, the default);
// a file that exists but cannot serve as a plugin of this runtime (not loadable here, not an
// attnrt plugin, another ABI major, a malformed function table) is UNSUPPORTED, the status a
// resolution that passes over it reports too.
std::shared_ptr<PluginLibrary> PluginLibrary::open(const fs::path& path, bool allow_writable, const PluginPins* pins,
                                                   const std::string& expected_name) {
  const std::string where = path.string();
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(where + ": no such file" + libraries_beside(path));
  if (!fs::is_regular_file(path, ec)) throw Error(where + ": not a regular file");
  if (!allow_writable && !writable_plugins_allowed_by_environment()) {
    const fs::path folder = fs::absolute(path, ec).parent_path();
    for (const fs::path& p : {path, folder}) {
      if (const std::string why = writable_by_others(p); !why.empty()) {
        throw Error(ATTNRT_ERROR_UNSUPPORTED,
                    fmt::format("{}: refused: {}{}; {}", where,
                                p == path ? "the plugin is a " : "its folder " + p.string() + " is a ", why,
                                writable_plugins_override_hint()));
      }
    }
  }
  // Before dlopen: ld.so trusts the headers, and a truncated or damaged file would kill the
  // process (SIGBUS on a segment past the end of the file) instead of failing the call.
  if (const std::string problem = elf_problem(path); !problem.empty())
    throw Error(ATTNRT_ERROR_UNSUPPORTED, where + ": not a loadable shared library (" + problem + ")");
  // Pins: hash the file through a descriptor kept open across the load, then make sure the path
  // loaded is still that file, so a swap between the two is seen.
  std::string digest;
  struct stat hashed {};
  FileDescriptor fd;
  if (pins && !pins->empty()) {
    fd.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd.fd < 0 || ::fstat(fd.fd, &hashed) != 0)
      throw Error(ATTNRT_ERROR_UNSUPPORTED, where + ": cannot be opened to check its sha256: " + std::strerror(errno));
    digest = sha256_of_fd(fd.fd, where);
    if (const std::string why = pins->refusal(expected_name, digest); !why.empty())
      throw Error(ATTNRT_ERROR_UNSUPPORTED, where + ": " + why);
  }
  // One library at a time in the process: runtimes on several threads may open one library at
  // once, and the ABI does not ask a plugin's entry point to be reentrant.
  static std::mutex open_mutex;
  std::lock_guard<std::mutex> lock(open_mutex);

  std::shared_ptr<PluginLibrary> plugin(new PluginLibrary());
  plugin->path_ = fs::absolute(path);
  plugin->sha256_ = digest;
  try {
    // RTLD_LOCAL: two plugins may carry symbols of the same name without clashing.
    // RTLD_NODELETE: a plugin may own threads that outlive its handle (an OpenMP pool, CUDA's
    // runtime threads); unmapping its code, or a runtime it pulled in, would crash them.
    const auto mode = static_cast<boost::dll::load_mode::type>(
        static_cast<unsigned>(boost::dll::load_mode::rtld_local | boost::dll::load_mode::rtld_now) | RTLD_NODELETE);
    plugin->lib_ = std::make_unique<boost::dll::shared_library>(plugin->path_, mode);
  } catch (const std::exception& e) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED, where + ": not a loadable shared library (" + e.what() + ")");
  }
  if (fd.fd >= 0) {
    struct stat loaded {};
    if (::stat(plugin->path_.c_str(), &loaded) != 0 || loaded.st_dev != hashed.st_dev || loaded.st_ino != hashed.st_ino)
      throw Error(ATTNRT_ERROR_UNSUPPORTED,
                  where + ": refused: the file was replaced while it was being checked and loaded");
  }
  if (!plugin->lib_->has(ATTNRT_PLUGIN_ENTRY_SYMBOL)) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED,
                where + ": does not export '" ATTNRT_PLUGIN_ENTRY_SYMBOL "'; not an attnrt plugin");
  }
  auto entry = plugin->lib_->get<const attnrt_plugin_api*(uint32_t, uint32_t)>(ATTNRT_PLUGIN_ENTRY_SYMBOL);
  const attnrt_plugin_api* api = entry(ATTNRT_ABI_VERSION_MAJOR, ATTNRT_ABI_VERSION_MINOR);
  if (api == nullptr) throw Error(ATTNRT_ERROR_UNSUPPORTED, where + ": " ATTNRT_PLUGIN_ENTRY_SYMBOL " returned NULL");
  // struct_size, abi_major and abi_minor are frozen across majors: safe to read before the check.
  if (api->struct_size < ATTNRT_PLUGIN_API_HEAD_SIZE) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED,
                fmt::format("{}: function table too small ({} bytes) to hold a version", where, api->struct_size));
  }
  if (api->abi_major != ATTNRT_ABI_VERSION_MAJOR) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED,
                fmt::format("{}: plugin ABI version {}.{} is incompatible with this runtime's ABI {}.{} "
                            "(major versions differ); rebuild the plugin against attnrt SDK {}.x",
                            where, api->abi_major, api->abi_minor, ATTNRT_ABI_VERSION_MAJOR, ATTNRT_ABI_VERSION_MINOR,
                            ATTNRT_ABI_VERSION_MAJOR));
  }
  if (api->struct_size < ATTNRT_PLUGIN_API_SIZE_V1_0) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED,
                fmt::format("{}: function table of {} bytes is smaller than ABI {}.0's {}", where, api->struct_size,
                            ATTNRT_ABI_VERSION_MAJOR, ATTNRT_PLUGIN_API_SIZE_V1_0));
  }
  if (api->name == nullptr || api->name[0] == '\0')
    throw Error(ATTNRT_ERROR_UNSUPPORTED, where + ": plugin has no name");
  for (const char* c = api->name; *c; ++c) {
    if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_')) {
      throw Error(ATTNRT_ERROR_UNSUPPORTED, where + ": plugin name '" + api->name + "' must match [a-z0-9_]+");
    }
  }
  const char* missing = api->capabilities == nullptr     ? "capabilities"
                        : api->create == nullptr         ? "create"
                        : api->destroy == nullptr        ? "destroy"
                        : api->supports == nullptr       ? "supports"
                        : api->workspace_size == nullptr ? "workspace_size"
                        : api->forward == nullptr        ? "forward"
                                                         : nullptr;
  if (missing) throw Error(ATTNRT_ERROR_UNSUPPORTED, where + ": function table entry '" + missing + "' is NULL");
  if (api->capabilities->struct_size < ATTNRT_CAPABILITIES_SIZE_V1_0) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED, where + ": capabilities struct is smaller than ABI 1.0's");
  }
  if ((api->capabilities->features & ATTNRT_FEATURE_BACKWARD) && api->backward == nullptr) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED, where + ": advertises backward but its backward entry is NULL");
  }
  if (!digest.empty()) {
    // A loose library or one named by path is known by its own name only now.
    if (const std::string why = pins->refusal(api->name, digest); !why.empty())
      throw Error(ATTNRT_ERROR_UNSUPPORTED, where + " (plugin '" + api->name + "'): " + why);
  }
  plugin->api_ = api;
  return plugin;
}

std::string PluginLibrary::sha256() const { return sha256_.empty() ? sha256_of_file(path_) : sha256_; }

std::string PluginLibrary::abi_version() const {
  return std::to_string(api_->abi_major) + "." + std::to_string(api_->abi_minor);
}

std::string describe_dtypes(uint32_t bits) {
  std::string s;
  auto add = [&](bool on, const char* w) {
    if (on) s += (s.empty() ? "" : ", ") + std::string(w);
  };
  add(bits & ATTNRT_DTYPE_BIT_FP32, "fp32");
  add(bits & ATTNRT_DTYPE_BIT_FP16, "fp16");
  add(bits & ATTNRT_DTYPE_BIT_BF16, "bf16");
  return s;
}

std::string describe_features(uint64_t bits) {
  static const std::pair<uint64_t, const char*> names[] = {{ATTNRT_FEATURE_GQA, "gqa"},
                                                           {ATTNRT_FEATURE_CAUSAL, "causal"},
                                                           {ATTNRT_FEATURE_SLIDING_WINDOW, "window"},
                                                           {ATTNRT_FEATURE_SOFTCAP, "softcap"},
                                                           {ATTNRT_FEATURE_SINKS, "sinks"},
                                                           {ATTNRT_FEATURE_ALIBI, "alibi"},
                                                           {ATTNRT_FEATURE_VARLEN, "varlen"},
                                                           {ATTNRT_FEATURE_PAGED_KV, "paged"},
                                                           {ATTNRT_FEATURE_DROPOUT, "dropout"},
                                                           {ATTNRT_FEATURE_LSE, "lse"},
                                                           {ATTNRT_FEATURE_BACKWARD, "backward"},
                                                           {ATTNRT_FEATURE_DETERMINISTIC, "deterministic"},
                                                           {ATTNRT_FEATURE_HEAD_DIM_V, "head_dim_v"},
                                                           {ATTNRT_FEATURE_APPEND_KV, "append_kv"},
                                                           {ATTNRT_FEATURE_PAGED_VARLEN_Q, "paged_varlen_q"},
                                                           {ATTNRT_FEATURE_FLEX_ATTENTION, "flex_attention"},
                                                           {ATTNRT_FEATURE_CREATE_BLOCK_MASK, "create_block_mask"}};
  std::string s;
  for (const auto& [bit, name] : names) {
    if (bits & bit) s += (s.empty() ? "" : ", ") + std::string(name);
  }
  return s;
}

std::string describe_devices(const attnrt_capabilities& caps) {
  std::string s;
  if (caps.devices & ATTNRT_DEVICE_BIT_CPU) s = "cpu";
  if (caps.devices & ATTNRT_DEVICE_BIT_CUDA) {
    s += s.empty() ? "cuda" : ", cuda";
    if (caps.min_cuda_arch > 0) s += " sm" + std::to_string(caps.min_cuda_arch) + "+";
    if (caps.max_cuda_arch > 0) s += " (<= sm" + std::to_string(caps.max_cuda_arch) + ")";
  }
  return s;
}

}  // namespace attnrt
