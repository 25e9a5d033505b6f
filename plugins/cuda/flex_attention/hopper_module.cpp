#include "hopper_module.hpp"

#include "cuda_library.hpp"

#include <attnrt/status.hpp>
#include <attnrt_kernels/flex/nvrtc.hpp>

#if ATTNRT_FLEX_HOPPER
#include <nvJitLink.h>
#endif

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace attnrt::plugins::flex_cuda {
namespace {

constexpr const char* kBlobMagic = "attnrt-flex-hopper-cubin-1\n";

// The mods' unit with the C entry points the prebuilt kernel calls (flex_hopper_policy.cuh).
std::string mods_source(const kernels::flex::Mods& mods) {
  return kernels::flex::translation_unit(mods, kernels::flex::Target::kCuda) +
         "extern \"C\" __device__ float attnrt_flex_score_mod(const attnrt_flex::Context& c, float score, int b, "
         "int h, int q_idx, int kv_idx) { return attnrt_flex_user::score_mod(c, score, b, h, q_idx, kv_idx); }\n"
         "extern \"C\" __device__ bool attnrt_flex_mask_mod(const attnrt_flex::Context& c, int b, int h, int q_idx, "
         "int kv_idx) { return attnrt_flex_user::mask_mod(c, b, h, q_idx, kv_idx); }\n"
         "extern \"C\" __device__ float attnrt_flex_score_mod_grad(const attnrt_flex::Context& c, float score, int b, "
         "int h, int q_idx, int kv_idx) { return attnrt_flex_user::score_mod_grad(c, score, b, h, q_idx, kv_idx); }\n";
}

#if ATTNRT_FLEX_HOPPER
std::string nvjitlink_version() {
  unsigned major = 0, minor = 0;
  if (nvJitLinkVersion(&major, &minor) != NVJITLINK_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

// The blob's digest, once per blob (the cache key covers the kernel's bytes, not only the
// plugin's version).
const std::string& blob_digest(const HopperBlob& blob) {
  static std::mutex mutex;
  static std::map<const HopperBlob*, std::string> digests;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = digests.try_emplace(&blob);
  if (inserted) it->second = kernels::flex::sha256_hex(blob.bytes);
  return it->second;
}

// nvJitLink, with link-time optimization, of the variant's LTO-IR and the mods' for sm_90a.
std::string link_cubin(const HopperBlob& blob, const std::string& mods_ltoir) {
  const char* options[] = {"-arch=sm_90a", "-lto", "-O3"};
  nvJitLinkHandle handle = nullptr;
  if (nvJitLinkCreate(&handle, 3, options) != NVJITLINK_SUCCESS) {
    throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED,
                     "flex_attention: nvJitLink " + nvjitlink_version() + " could not start a link for sm_90a");
  }
  std::unique_ptr<nvJitLinkHandle, void (*)(nvJitLinkHandle*)> guard(&handle,
                                                                     [](nvJitLinkHandle* h) { nvJitLinkDestroy(h); });
  auto log = [&] {
    size_t size = 0;
    std::string text;
    if (nvJitLinkGetErrorLogSize(handle, &size) == NVJITLINK_SUCCESS && size > 0) {
      text.resize(size);
      nvJitLinkGetErrorLog(handle, text.data());
      while (!text.empty() && (text.back() == '\0' || text.back() == '\n')) text.pop_back();
    }
    return text;
  };
  auto step = [&](nvJitLinkResult r, const std::string& what) {
    if (r != NVJITLINK_SUCCESS) {
      throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, "flex_attention: nvJitLink " + nvjitlink_version() + " " + what +
                                                     " (error " + std::to_string(int(r)) + "): " + log());
    }
  };
  step(nvJitLinkAddData(handle, NVJITLINK_INPUT_FATBIN, blob.bytes.data(), blob.bytes.size(),
                        std::string(blob.name).c_str()),
       "could not read the kernel " + std::string(blob.name));
  step(nvJitLinkAddData(handle, NVJITLINK_INPUT_LTOIR, mods_ltoir.data(), mods_ltoir.size(), "attnrt_flex_mods"),
       "could not read the mods");
  step(nvJitLinkComplete(handle), "could not link the mods into " + std::string(blob.name));
  size_t size = 0;
  step(nvJitLinkGetLinkedCubinSize(handle, &size), "gave no cubin");
  std::string cubin(size, '\0');
  step(nvJitLinkGetLinkedCubin(handle, cubin.data()), "gave no cubin");
  return cubin;
}
#else
std::string nvjitlink_version() { return "none"; }
std::string link_cubin(const HopperBlob&, const std::string&) {
  throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, "flex_attention: this build has no nvJitLink (no Hopper forward)");
}
#endif

}  // namespace

HopperModule::~HopperModule() {
  if (library) cudaLibraryUnload(library);
}

std::shared_ptr<const HopperModule> HopperCache::get(const HopperBlob& blob, const kernels::flex::Mods& mods) {
  // A call shape seen before: its module (or its failure) by the blob and the mods' identity,
  // with no translation unit built and no digest (per call); a failed link is not retried.
  std::string key_text = std::string(blob.name) + "\n" + mods.identity();
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = loaded_.find(key_text); it != loaded_.end()) return it->second;
  if (auto it = failed_.find(key_text); it != failed_.end()) throw it->second;
  try {
    std::shared_ptr<const HopperModule> module = load(blob, mods_source(mods));
    loaded_.emplace(std::move(key_text), module);
    return module;
  } catch (const sdk::Error& e) {
    failed_.emplace(std::move(key_text), e);
    throw;
  }
}

std::shared_ptr<const HopperModule> HopperCache::load(const HopperBlob& blob, const std::string& source) {
  if (!disk_) disk_.emplace(kernels::flex::cache_dir());
  const std::string digest = kernels::flex::sha256_hex(
      "attnrt flex hopper 1\n" + version_ + "\nnvrtc " + kernels::flex::nvrtc_version() + "\nnvjitlink " +
      nvjitlink_version() + "\n" + std::string(blob.name) + " " + blob_digest(blob) + "\n" + source);

  auto module = std::make_shared<HopperModule>();
  const auto start = std::chrono::steady_clock::now();
  const std::string path = disk_->get_or_create(
      digest + ".hopper.cubin",
      [&](const std::string& out) {
        const std::string ltoir = kernels::flex::nvrtc_compile_ltoir(source, "flex_attention_mods.cu", 90);
        const std::string cubin = link_cubin(blob, ltoir);
        std::ofstream file(out, std::ios::binary);
        file << kBlobMagic << cubin;
      },
      &module->cache_hit);
  module->compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  const std::string entry = bytes.str();
  if (entry.rfind(kBlobMagic, 0) != 0) {
    throw sdk::Error(ATTNRT_ERROR_INTERNAL, "flex_attention: cache entry " + path + " is not a Hopper flex module");
  }
  const char* cubin = entry.data() + std::string_view(kBlobMagic).size();
  if (cudaError_t e = cudaLibraryLoadData(&module->library, cubin, nullptr, nullptr, 0, nullptr, nullptr, 0);
      e != cudaSuccess) {
    device_error("loading the linked Hopper kernel " + path, e);
  }
  module->kernel =
      library_kernel(module->library, blob.backward ? "attnrt_flex_hopper_backward" : "attnrt_flex_hopper_forward");
  long long shape[5] = {0};
  read_library_array(module->library, "attnrt_flex_hopper_shape", shape, 5);
  module->threads = static_cast<int>(shape[0]);
  module->smem = static_cast<size_t>(shape[1]);
  module->bm = static_cast<int>(shape[2]);
  module->bn = static_cast<int>(shape[3]);
  module->max_walk = static_cast<int>(shape[4]);
  return module;
}

}  // namespace attnrt::plugins::flex_cuda
