#include "kernel_module.hpp"

#include "cuda_library.hpp"
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

constexpr const char* kBlobMagic = "attnrt-flex-cubin-2\n";
// flash_attention_2's split dK/dV tile (fa2_launch.cuh, Config::kSplitBN / kSplitBM up to
// head_dim 128, the head dims flex compiles).
constexpr int kSplitBN = 64, kSplitBM = 64;

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

std::string type_name(const ModuleKey& k) { return k.bf16 ? "__nv_bfloat16" : "__half"; }

// The module's kernels as NVRTC name expressions, in KernelModule's order: forward, D, the split
// dK/dV pair, the dQ conversions (flash_attention_2's accumulator layout, then the Hopper
// backward's swizzled one) and, on sm_90, the wide dK/dV kernel (a trap elsewhere).
std::vector<std::string> kernel_names(const ModuleKey& k, const ForwardTile& t) {
  if (k.mask_only) return {};  // extern "C" kernels only
  const std::string T = type_name(k), HD = std::to_string(k.head_dim);
  const std::string flex = "attnrt::cuda::FlexScores", split = "&attnrt::cuda::fa2::dkdv_split_kernel<" + T + ", " +
                                                               HD + ", " + std::to_string(kSplitBN) + ", " +
                                                               std::to_string(kSplitBM) + ", attnrt::cuda::fa2::DkDv::";
  std::vector<std::string> names = {
      "&attnrt::cuda::fa2::forward_kernel<" + T + ", " + HD + ", " + std::to_string(t.bm) + ", " +
          std::to_string(t.bn) + ", " + std::to_string(t.mt) + ", " + flex + ">",
      "&attnrt::cuda::softmax_d_kernel<" + T + ", " + HD + ", attnrt::cuda::StandardScores>",
      split + "kDvOnly, false, " + flex + ">",
      split + "kDkOnly, true, " + flex + ">",
      "&attnrt::cuda::dq_convert_kernel<" + T + ", " + HD + ", false>",
      "&attnrt::cuda::dq_convert_kernel<" + T + ", " + HD + ", true>"};
  if (k.arch >= 90) names.push_back("&attnrt::cuda::fa2::dkdv_kernel<" + T + ", " + HD + ", true, " + flex + ">");
  return names;
}

std::string program_source(const ModuleKey& k) {
  if (k.mask_only) {
    kernels::flex::Mods mask = k.mods;
    mask.score_mod.clear();
    mask.score_mod_grad.clear();
    return kernels::flex::translation_unit(mask, kernels::flex::Target::kCuda) +
           "#define ATTNRT_FLEX_HAS_SCORE_MOD 0\n#include \"flex_params.h\"\n#include \"flex_block_mask.cuh\"\n";
  }
  // The backward's launch shapes, as the kernels define them (read back by the plugin, in
  // BackwardShapes' order).
  const std::string HD = std::to_string(k.head_dim), BN = std::to_string(kSplitBN), BM = std::to_string(kSplitBM);
  const std::string wide = "attnrt::cuda::fa2::DkDvTile<" + HD + ", true>::";
  const std::string split = "attnrt::cuda::fa2::SplitDkDvTile<" + HD + ", " + BN + ", " + BM + ", ";
  const std::string shapes = "extern \"C\" __device__ long long attnrt_flex_backward_shapes[9] = {" + wide +
                             "kThreads, " + wide + "kBN, " + wide + "kBM, (long long)" + wide + "kSmemBytes, " + split +
                             "false>::kThreads, " + BN + ", " + BM + ", (long long)" + split +
                             "false>::kSmemBytes, (long long)" + split + "true>::kSmemBytes};\n";
  return kernels::flex::translation_unit(k.mods, kernels::flex::Target::kCuda) + "#define ATTNRT_FLEX_HAS_SCORE_MOD " +
         (k.mods.score_mod.empty() ? "0" : "1") +
         "\n#include \"flex_params.h\"\n#include \"fa2_forward.cuh\"\n#include \"fa2_dkdv.cuh\"\n"
         "#include \"fa2_dkdv_split.cuh\"\n#include \"flex_policy.cuh\"\n" +
         shapes;
}

}  // namespace

ForwardTile forward_tile(int head_dim) {
  const int mt = head_dim <= 128 ? 2 : 1;
  return ForwardTile{64 * mt, head_dim == 64 ? 128 : 64, mt};
}

KernelModule::~KernelModule() {
  if (library) cudaLibraryUnload(library);
}

// The embedded headers' digest, once: they are fixed for a build, and hashing them on every
// call cost about 0.2 ms of host time per forward.
const std::string& headers_digest() {
  static const std::string digest = [] {
    std::string text;
    for (const auto& h : flex_headers()) text += "\n" + h.include_name + "\n" + h.text;
    return kernels::flex::sha256_hex(text);
  }();
  return digest;
}

std::shared_ptr<const KernelModule> ModuleCache::get(const ModuleKey& key) {
  // A call shape seen before: its module by what the program is made of (the mods' identity,
  // dtype, head_dim, arch, kind), with no program text built and no digest (per call).
  std::string short_key = key.mods.identity() + (key.bf16 ? "\nbf16 " : "\nfp16 ") + std::to_string(key.head_dim) +
                          " sm_" + std::to_string(key.arch) + (key.mask_only ? " mask" : "");
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = loaded_.find(short_key); it != loaded_.end()) return it->second;
  const ForwardTile tile = forward_tile(key.head_dim);
  const std::string source = program_source(key);
  const std::vector<std::string> kernels = kernel_names(key, tile);
  std::string key_text = std::string(key.mask_only ? "attnrt flex cuda mask 1" : "attnrt flex cuda 4") + "\n" +
                         version_ + "\nsm_" + std::to_string(key.arch) + "\n";
  for (const std::string& k : kernels) key_text += k + "\n";
  key_text += source;
  if (!disk_) disk_.emplace(kernels::flex::cache_dir());
  const std::string digest = kernels::flex::sha256_hex(key_text + "\nnvrtc " + kernels::flex::nvrtc_version() +
                                                       "\nheaders " + headers_digest());

  auto module = std::make_shared<KernelModule>();
  module->tile = tile;
  const auto start = std::chrono::steady_clock::now();
  // The cache entry: the magic, the lowered names one per line, then the cubin.
  const std::string path = disk_->get_or_create(
      digest + ".cubin",
      [&](const std::string& out) {
        std::vector<kernels::flex::NvrtcHeader> headers = flex_headers();
        const auto compiled =
            kernels::flex::nvrtc_compile(source, "flex_attention.cu", key.arch, {cuda_include_dir()}, headers, kernels);
        std::ofstream file(out, std::ios::binary);
        file << kBlobMagic;
        for (const std::string& name : compiled.lowered_names) file << name << "\n";
        file << compiled.cubin;
      },
      &module->cache_hit);
  module->compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream in(path, std::ios::binary);
  std::stringstream blob_stream;
  blob_stream << in.rdbuf();
  const std::string blob = blob_stream.str();
  std::vector<std::string> lowered;
  size_t at = std::string(kBlobMagic).size();
  for (size_t i = 0; i < kernels.size() && blob.rfind(kBlobMagic, 0) == 0; ++i) {
    const size_t end = blob.find('\n', at);
    if (end == std::string::npos) break;
    lowered.push_back(blob.substr(at, end - at));
    at = end + 1;
  }
  if (lowered.size() != kernels.size()) {
    throw sdk::Error(ATTNRT_ERROR_INTERNAL, "flex_attention: cache entry " + path + " is not a flex kernel module");
  }
  if (cudaError_t e = cudaLibraryLoadData(&module->library, blob.data() + at, nullptr, nullptr, 0, nullptr, nullptr, 0);
      e != cudaSuccess) {
    device_error("loading the compiled kernels " + path, e);
  }
  if (key.mask_only) {
    module->mask_classify = library_kernel(module->library, "attnrt_flex_mask_classify");
    module->mask_columns = library_kernel(module->library, "attnrt_flex_mask_columns");
    module->mask_rows = library_kernel(module->library, "attnrt_flex_mask_rows");
    loaded_.emplace(std::move(short_key), module);
    return module;
  }
  cudaKernel_t* slots[] = {&module->forward,       &module->softmax_d,  &module->dkdv_split_dv,
                           &module->dkdv_split_dk, &module->dq_convert, &module->dq_convert_swizzled,
                           &module->dkdv_wide};
  for (size_t i = 0; i < lowered.size(); ++i) *slots[i] = library_kernel(module->library, lowered[i]);
  module->block_states = library_kernel(module->library, "attnrt_flex_block_states");
  long long shapes[9] = {0};
  read_library_array(module->library, "attnrt_flex_backward_shapes", shapes, 9);
  BackwardShapes& bs = module->backward;
  bs.wide_threads = static_cast<int>(shapes[0]);
  bs.wide_bn = static_cast<int>(shapes[1]);
  bs.wide_bm = static_cast<int>(shapes[2]);
  bs.wide_smem = static_cast<size_t>(shapes[3]);
  bs.split_threads = static_cast<int>(shapes[4]);
  bs.split_bn = static_cast<int>(shapes[5]);
  bs.split_bm = static_cast<int>(shapes[6]);
  bs.split_dv_smem = static_cast<size_t>(shapes[7]);
  bs.split_dk_smem = static_cast<size_t>(shapes[8]);
  loaded_.emplace(std::move(short_key), module);
  return module;
}

}  // namespace attnrt::plugins::flex_cuda
