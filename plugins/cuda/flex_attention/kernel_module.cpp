#include "kernel_module.hpp"

#include "flex_sources.hpp"

#include <attnrt/status.hpp>
#include <attnrt_kernels/flex/nvrtc.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace attnrt::plugins::flex_cuda {
namespace {

constexpr const char* kBlobMagic = "attnrt-flex-cubin-1\n";

[[noreturn]] void device_error(const std::string& what, cudaError_t e) {
  throw sdk::Error(ATTNRT_ERROR_DEVICE,
                   "flex_attention: " + what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// Where cuda_fp16.h and cuda_bf16.h are for NVRTC: $ATTNRT_CUDA_INCLUDE, $CUDA_HOME/include,
// the toolkit this plugin was built with, /usr/local/cuda/include.
std::string cuda_include_dir() {
  std::vector<std::string> candidates;
  for (const char* var : {"ATTNRT_CUDA_INCLUDE", "CUDA_HOME", "CUDA_PATH"}) {
    if (const char* v = std::getenv(var); v && *v) {
      candidates.push_back(std::string(v) + (std::string(var) == "ATTNRT_CUDA_INCLUDE" ? "" : "/include"));
    }
  }
  candidates.push_back(ATTNRT_FLEX_CUDA_INCLUDE);
  candidates.push_back("/usr/local/cuda/include");
  for (const std::string& dir : candidates) {
    if (std::filesystem::exists(dir + "/cuda_fp16.h")) return dir;
  }
  throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED,
                   "flex_attention on CUDA compiles its kernels with NVRTC and needs the CUDA headers (cuda_fp16.h); "
                   "none found (set ATTNRT_CUDA_INCLUDE to the toolkit's include folder)");
}

std::string kernel_name(const ModuleKey& k, const ForwardTile& t) {
  return "&attnrt::cuda::fa2::forward_kernel<" + std::string(k.bf16 ? "__nv_bfloat16" : "__half") + ", " +
         std::to_string(k.head_dim) + ", " + std::to_string(t.bm) + ", " + std::to_string(t.bn) + ", " +
         std::to_string(t.mt) + ", attnrt::cuda::FlexScores>";
}

std::string program_source(const ModuleKey& k) {
  return kernels::flex::translation_unit(k.mods, kernels::flex::Target::kCuda) + "#define ATTNRT_FLEX_HAS_SCORE_MOD " +
         (k.mods.score_mod.empty() ? "0" : "1") +
         "\n#include \"flex_params.h\"\n#include \"fa2_forward.cuh\"\n#include \"flex_policy.cuh\"\n";
}

}  // namespace

ForwardTile forward_tile(int head_dim) {
  const int mt = head_dim <= 128 ? 2 : 1;
  return ForwardTile{64 * mt, head_dim == 64 ? 128 : 64, mt};
}

KernelModule::~KernelModule() {
  if (library) cudaLibraryUnload(library);
}

std::shared_ptr<const KernelModule> ModuleCache::get(const ModuleKey& key) {
  const ForwardTile tile = forward_tile(key.head_dim);
  const std::string source = program_source(key);
  const std::string kernel = kernel_name(key, tile);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!disk_) disk_.emplace(kernels::flex::cache_dir());
  const std::string nvrtc = kernels::flex::nvrtc_version();
  std::string key_text = "attnrt flex cuda 1\n" + version_ + "\nnvrtc " + nvrtc + "\nsm_" + std::to_string(key.arch) +
                         "\n" + kernel + "\n" + source;
  for (const auto& h : flex_headers()) key_text += "\n" + h.include_name + "\n" + h.text;
  const std::string digest = kernels::flex::sha256_hex(key_text);
  if (auto it = loaded_.find(digest); it != loaded_.end()) return it->second;

  auto module = std::make_shared<KernelModule>();
  module->tile = tile;
  const auto start = std::chrono::steady_clock::now();
  const std::string path = disk_->get_or_create(
      digest + ".cubin",
      [&](const std::string& out) {
        std::vector<kernels::flex::NvrtcHeader> headers = flex_headers();
        const auto compiled = kernels::flex::nvrtc_compile(source, "flex_attention.cu", key.arch, {cuda_include_dir()},
                                                           headers, {kernel});
        std::ofstream(out, std::ios::binary) << kBlobMagic << compiled.lowered_names[0] << "\n" << compiled.cubin;
      },
      &module->cache_hit);
  module->compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream in(path, std::ios::binary);
  std::stringstream blob_stream;
  blob_stream << in.rdbuf();
  const std::string blob = blob_stream.str();
  const size_t name_end = blob.find('\n', std::string(kBlobMagic).size());
  if (blob.rfind(kBlobMagic, 0) != 0 || name_end == std::string::npos) {
    throw sdk::Error(ATTNRT_ERROR_INTERNAL, "flex_attention: cache entry " + path + " is not a flex kernel module");
  }
  const std::string lowered = blob.substr(std::string(kBlobMagic).size(), name_end - std::string(kBlobMagic).size());
  const char* cubin = blob.data() + name_end + 1;
  if (cudaError_t e = cudaLibraryLoadData(&module->library, cubin, nullptr, nullptr, 0, nullptr, nullptr, 0);
      e != cudaSuccess) {
    device_error("loading the compiled kernels " + path, e);
  }
  if (cudaError_t e = cudaLibraryGetKernel(&module->forward, module->library, lowered.c_str()); e != cudaSuccess) {
    device_error("finding " + lowered, e);
  }
  if (cudaError_t e = cudaLibraryGetKernel(&module->tile_states, module->library, "attnrt_flex_tile_states");
      e != cudaSuccess) {
    device_error("finding attnrt_flex_tile_states", e);
  }
  loaded_.emplace(digest, module);
  return module;
}

}  // namespace attnrt::plugins::flex_cuda
