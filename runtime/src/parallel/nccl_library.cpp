// Loading libnccl (nccl_library.hpp): Boost.DLL as for libcuda (src/cuda/cuda_driver.cpp), one
// load per library name, kept for the process (communicators may outlive any one transport).
#include "nccl_library.hpp"

#include <attnrt/runtime/error.hpp>

#include <fmt/format.h>

#include <boost/dll/shared_library.hpp>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

namespace attnrt::cp {
namespace nccl {
namespace {

// ncclSend / ncclRecv came with NCCL 2.7 (version code 2700: before 2.9 the code is
// major*1000 + minor*100 + patch, from 2.9 on major*10000 + minor*100 + patch).
constexpr int kMinVersion = 2700;

std::string version_text(int code) {
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
}

struct Loaded {
  boost::dll::shared_library library;
  Api api;
};

template <class Fn>
void bind(boost::dll::shared_library& lib, Fn*& fn, const char* name) {
  if (!lib.has(name)) throw Error(ATTNRT_ERROR_UNSUPPORTED, fmt::format("it has no {}", name));
  fn = &lib.get<Fn>(name);
}

std::unique_ptr<Loaded> load(const std::string& name) {
  auto l = std::make_unique<Loaded>();
  NcclLibraryInfo& info = l->api.info;
  info.path = name;
  const std::string hint =
      "NCCL comes with the CUDA toolkit's NCCL package (libnccl2) or PyTorch's nvidia-nccl-cu12 wheel; set "
      "ATTNRT_NCCL_LIBRARY to its libnccl.so.2";
  try {
    // A bare name is looked up the way the dynamic loader does; a path is opened as it is.
    const auto mode = name.find('/') == std::string::npos ? boost::dll::load_mode::search_system_folders
                                                          : boost::dll::load_mode::default_mode;
    l->library.load(name, mode | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    info.reason = fmt::format("NCCL library {} cannot be opened ({}); {}", name, e.what(), hint);
    return l;
  }
  try {
    Api& a = l->api;
    bind(l->library, a.GetVersion, "ncclGetVersion");
    bind(l->library, a.GetErrorString, "ncclGetErrorString");
    int version = 0;
    a.check(a.GetVersion(&version), "ncclGetVersion");
    info.version = version;
    info.version_text = version_text(version);
    if (version < kMinVersion) {
      info.reason = fmt::format(
          "NCCL library {} is version {}; context parallelism needs 2.7 or newer (ncclSend, "
          "ncclRecv)",
          name, info.version_text);
      return l;
    }
    bind(l->library, a.GetUniqueId, "ncclGetUniqueId");
    bind(l->library, a.CommInitRank, "ncclCommInitRank");
    bind(l->library, a.CommDestroy, "ncclCommDestroy");
    bind(l->library, a.CommAbort, "ncclCommAbort");
    bind(l->library, a.CommCount, "ncclCommCount");
    bind(l->library, a.CommUserRank, "ncclCommUserRank");
    bind(l->library, a.CommGetAsyncError, "ncclCommGetAsyncError");
    bind(l->library, a.Send, "ncclSend");
    bind(l->library, a.Recv, "ncclRecv");
    bind(l->library, a.GroupStart, "ncclGroupStart");
    bind(l->library, a.GroupEnd, "ncclGroupEnd");
    info.available = true;
  } catch (const std::exception& e) {
    info.reason = fmt::format("{} is not a usable NCCL library: {}", name, e.what());
  }
  return l;
}

std::string chosen(const std::string& library) {
  if (!library.empty()) return library;
  if (const char* env = std::getenv("ATTNRT_NCCL_LIBRARY"); env && *env) return env;
  return "libnccl.so.2";
}

const Api& loaded(const std::string& library) {
  static std::mutex mutex;
  static auto* libraries = new std::map<std::string, std::unique_ptr<Loaded>>();  // never unloaded
  const std::string name = chosen(library);
  std::lock_guard lock(mutex);
  auto& slot = (*libraries)[name];
  if (!slot) slot = load(name);
  return slot->api;
}

}  // namespace

void Api::check(Result r, const char* what) const {
  if (r == 0) return;
  const char* text = GetErrorString ? GetErrorString(r) : nullptr;
  throw Error(ATTNRT_ERROR_DEVICE, fmt::format("{}: NCCL error {} ({})", what, r, text ? text : "unknown"));
}

const Api& api(const std::string& library) {
  const Api& a = loaded(library);
  if (!a.info.available) throw Error(ATTNRT_ERROR_UNSUPPORTED, "context parallel: " + a.info.reason);
  return a;
}

}  // namespace nccl

NcclLibraryInfo nccl_library_info(const std::string& library) {
  try {
    return nccl::loaded(library).info;
  } catch (const std::exception& e) {  // not expected: load() keeps its errors in info
    NcclLibraryInfo info;
    info.reason = e.what();
    return info;
  }
}

NcclUniqueId nccl_unique_id(const std::string& library) {
  const nccl::Api& a = nccl::api(library);
  NcclUniqueId id{};
  a.check(a.GetUniqueId(&id), "ncclGetUniqueId");
  return id;
}

}  // namespace attnrt::cp
