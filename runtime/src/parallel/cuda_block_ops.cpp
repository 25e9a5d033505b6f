// BlockOps on CUDA (block_ops.hpp). The kernels (cuda_block_kernels.cu) are compiled by nvcc at
// build time into a fatbin embedded in libattnrt (cuda_block_kernels_fatbin.cpp, generated) and
// loaded with cuModuleLoadData into each device's primary context, once per process; launches
// go through cuLaunchKernel with the argument structs of cuda_block_kernels.hpp. So libattnrt
// keeps no link-time CUDA dependency: the driver it already opens at run time is all it needs.
// Buffers are stream-ordered (cuMemAllocFromPoolAsync / cuMemFreeAsync) from a pool of our own
// per device whose release threshold keeps the memory between calls: steady state allocates
// nothing from the OS, and the framework's default pool is left alone.
#include "../cuda/cuda_driver.hpp"
#include "block_rows.hpp"
#include "cuda_block_kernels.hpp"

#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/parallel/block_ops.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>

// The embedded fatbin: empty when libattnrt was built without the CUDA toolkit.
extern "C" const unsigned char attnrt_cp_kernels_fatbin[];
extern "C" const size_t attnrt_cp_kernels_fatbin_size;

namespace attnrt::cp {

namespace {

namespace k = cuda_kernels;

constexpr int kAttrMultiprocessorCount = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kPoolReleaseThreshold = 4;      // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
constexpr cuda::CUresult kNoBinaryForGpu = 209;

// What one device needs, made once per process (like the primary contexts it lives in).
struct DeviceKernels {
  std::string error;  // why not, when the module could not be loaded
  cuda::CUmodule module = nullptr;
  cuda::CUfunction copy[2]{}, fill[2]{}, add[2]{}, merge[2]{};  // [0]: _v1, [1]: _v4
  cuda::CUmemoryPool pool = nullptr;
  int sms = 1;
};

DeviceKernels load_kernels(const cuda::Driver& d, DLDevice device) {
  DeviceKernels kernels;
  if (attnrt_cp_kernels_fatbin_size == 0) {
    kernels.error =
        "libattnrt was built without the CUDA toolkit, so it has no CUDA BlockOps kernels (context parallelism on "
        "CUDA needs a build configured with nvcc)";
    return kernels;
  }
  d.make_current(device);
  if (const cuda::CUresult r = d.cuModuleLoadData(&kernels.module, attnrt_cp_kernels_fatbin); r != 0) {
    const char* text = nullptr;
    d.cuGetErrorString(r, &text);
    kernels.error = fmt::format(
        "the CUDA BlockOps kernels cannot be loaded on cuda:{} (CUDA error {}: {}){}", device.device_id, r,
        text ? text : "unknown",
        r == kNoBinaryForGpu ? "; they are built for sm_80, sm_90 and PTX of compute_90: a newer driver may JIT them"
                             : "");
    return kernels;
  }
  auto get = [&](cuda::CUfunction& f, const char* name) {
    d.check(d.cuModuleGetFunction(&f, kernels.module, name), name);
  };
  get(kernels.copy[0], k::kCopyV1);
  get(kernels.copy[1], k::kCopyV4);
  get(kernels.fill[0], k::kFillV1);
  get(kernels.fill[1], k::kFillV4);
  get(kernels.add[0], k::kAddV1);
  get(kernels.add[1], k::kAddV4);
  get(kernels.merge[0], k::kMergeV1);
  get(kernels.merge[1], k::kMergeV4);
  int dev = 0;
  d.check(d.cuDeviceGet(&dev, device.device_id), "cuDeviceGet");
  d.check(d.cuDeviceGetAttribute(&kernels.sms, kAttrMultiprocessorCount, dev), "cuDeviceGetAttribute");
  cuda::MemPoolProps props;
  props.location_id = dev;
  d.check(d.cuMemPoolCreate(&kernels.pool, &props), "context parallel: cuMemPoolCreate");
  // Keep what the pool holds across synchronizations: the next ring call reuses it. (Default 0:
  // every synchronize would hand the buffers back to the OS and the next call map them again.)
  uint64_t keep = UINT64_MAX;
  d.check(d.cuMemPoolSetAttribute(kernels.pool, kPoolReleaseThreshold, &keep),
          "context parallel: cuMemPoolSetAttribute");
  return kernels;
}

// The device's kernels, loaded on first use; throws ATTNRT_ERROR_UNSUPPORTED with the reason.
const DeviceKernels& kernels_for(DLDevice device) {
  if (device.device_type != kDLCUDA) {
    throw Error(ATTNRT_ERROR_INVALID_ARGUMENT, fmt::format("context parallel: CUDA BlockOps for device_type {}",
                                                           static_cast<int>(device.device_type)));
  }
  const cuda::Driver* d = nullptr;
  try {
    d = &cuda::driver();
  } catch (const Error& e) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED, std::string("context parallel: no CUDA BlockOps: ") + e.what());
  }
  static std::mutex mutex;
  static auto* loaded = new std::map<int, DeviceKernels>();  // never unloaded, like the contexts
  std::lock_guard lock(mutex);
  auto it = loaded->find(device.device_id);
  if (it == loaded->end()) {
    DeviceKernels kernels;
    try {
      kernels = load_kernels(*d, device);
    } catch (const Error& e) {
      kernels.error = e.what();
    }
    it = loaded->emplace(device.device_id, std::move(kernels)).first;
  }
  if (!it->second.error.empty()) throw Error(ATTNRT_ERROR_UNSUPPORTED, "context parallel: " + it->second.error);
  return it->second;
}

k::Rows rows_of(const DLTensor& t, DLDevice device, const char* what) {
  if (t.device.device_type != kDLCUDA || t.device.device_id != device.device_id) {
    throw Error(ATTNRT_ERROR_INTERNAL,
                fmt::format("context parallel: {} is not on cuda:{} (device_type {}, id {})", what, device.device_id,
                            static_cast<int>(t.device.device_type), t.device.device_id));
  }
  k::Rows r;
  if (t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1) {
    r.type = k::kF32;
  } else if (t.dtype.code == kDLFloat && t.dtype.bits == 16 && t.dtype.lanes == 1) {
    r.type = k::kF16;
  } else if (t.dtype.code == kDLBfloat && t.dtype.bits == 16 && t.dtype.lanes == 1) {
    r.type = k::kBF16;
  } else {
    throw Error(ATTNRT_ERROR_INTERNAL, fmt::format("context parallel: {} is not float32, float16 or bfloat16", what));
  }
  r.base = static_cast<char*>(t.data) + t.byte_offset;
  const RowLayout l = row_layout(t, what);
  for (int d = 0; d < 3; ++d) {
    r.shape[d] = l.shape[d];
    r.stride[d] = l.stride[d];
  }
  r.cols = l.cols;
  return r;
}

int64_t rows(const k::Rows& r) { return r.shape[0] * r.shape[1] * r.shape[2]; }

// Whether every row of r starts on a 4-element boundary (16 bytes for float32, 8 for 16-bit), so
// the _v4 kernels may use vector accesses. `cols` is checked by the caller.
bool aligned4(const k::Rows& r) {
  const size_t bytes = r.type == k::kF32 ? 16 : 8;
  if (reinterpret_cast<uintptr_t>(r.base) % bytes != 0) return false;
  for (int i = 0; i < 3; ++i) {
    if (r.shape[i] > 1 && r.stride[i] % 4 != 0) return false;
  }
  return true;
}

class CudaBlockOps final : public BlockOps {
 public:
  explicit CudaBlockOps(DLDevice device) : device_(device), kernels_(kernels_for(device)), d_(cuda::driver()) {}

  DLDevice device() const override { return device_; }

  std::shared_ptr<void> allocate(size_t bytes, void* stream) override {
    d_.make_current(device_);
    cuda::CUdeviceptr p = 0;
    const size_t rounded = std::max<size_t>((bytes + 255) / 256 * 256, 256);
    d_.check(d_.cuMemAllocFromPoolAsync(&p, rounded, kernels_.pool, static_cast<cuda::CUstream>(stream)),
             fmt::format("context parallel: allocating {} bytes on cuda:{}", bytes, device_.device_id).c_str());
    const cuda::Driver* d = &d_;
    const DLDevice device = device_;
    return {reinterpret_cast<void*>(p), [d, device, stream](void* q) {
              // Released in stream order: after everything queued on `stream` so far, which
              // includes the waits for the transfers that used the buffer. No throw in a deleter.
              try {
                d->make_current(device);
              } catch (const Error&) {
                return;  // the context is gone (process exit)
              }
              d->cuMemFreeAsync(reinterpret_cast<cuda::CUdeviceptr>(q), static_cast<cuda::CUstream>(stream));
            }};
  }

  void upload(const void* host, void* dst, size_t bytes, void* stream) override {
    if (bytes == 0) return;
    d_.make_current(device_);
    d_.check(d_.cuMemcpyHtoDAsync(reinterpret_cast<cuda::CUdeviceptr>(dst), host, bytes,
                                  static_cast<cuda::CUstream>(stream)),
             fmt::format("context parallel: uploading {} bytes to cuda:{}", bytes, device_.device_id).c_str());
  }

  void copy(const DLTensor& src, DLTensor& dst, void* stream) override {
    same_shape(src, dst, "copy");
    k::CopyArgs a{rows_of(dst, device_, "copy destination"), rows_of(src, device_, "copy source")};
    const bool v4 = a.dst.cols % 4 == 0 && aligned4(a.dst) && aligned4(a.src);
    launch(kernels_.copy[v4], rows(a.dst) * (a.dst.cols / (v4 ? 4 : 1)), &a, stream);
  }

  void fill(DLTensor& dst, float value, void* stream) override {
    k::FillArgs a{rows_of(dst, device_, "fill destination"), value};
    const bool v4 = a.dst.cols % 4 == 0 && aligned4(a.dst);
    launch(kernels_.fill[v4], rows(a.dst) * (a.dst.cols / (v4 ? 4 : 1)), &a, stream);
  }

  void add(DLTensor& acc, const DLTensor& part, void* stream) override {
    same_shape(acc, part, "add");
    k::AddArgs a{rows_of(acc, device_, "accumulator"), rows_of(part, device_, "partial result")};
    if (a.acc.type != k::kF32) throw Error(ATTNRT_ERROR_INTERNAL, "context parallel: an accumulator must be float32");
    const bool v4 = a.acc.cols % 4 == 0 && aligned4(a.acc) && aligned4(a.part);
    launch(kernels_.add[v4], rows(a.acc) * (a.acc.cols / (v4 ? 4 : 1)), &a, stream);
  }

  void merge(DLTensor& out_acc, DLTensor& lse_acc, const DLTensor& out_part, const DLTensor& lse_part,
             void* stream) override {
    same_shape(out_acc, out_part, "merge (out)");
    same_shape(lse_acc, lse_part, "merge (lse)");
    if (out_acc.ndim != 4 || lse_acc.ndim != 3 || lse_acc.shape[0] != out_acc.shape[0] ||
        lse_acc.shape[1] != out_acc.shape[2] || lse_acc.shape[2] != out_acc.shape[1]) {
      throw Error(ATTNRT_ERROR_INTERNAL, "context parallel: merge: out is not [b, l, h, d] with lse [b, h, l]");
    }
    k::MergeArgs a{rows_of(out_acc, device_, "merged out"), rows_of(out_part, device_, "partial out"),
                   rows_of(lse_acc, device_, "merged lse"), rows_of(lse_part, device_, "partial lse")};
    if (a.out_acc.type != k::kF32 || a.lse_acc.type != k::kF32 || a.lse_part.type != k::kF32) {
      throw Error(ATTNRT_ERROR_INTERNAL, "context parallel: merge accumulators and LSEs must be float32");
    }
    const bool v4 = a.out_acc.cols % 4 == 0 && aligned4(a.out_acc) && aligned4(a.out_part);
    launch(kernels_.merge[v4], rows(a.out_acc) * 32, &a, stream);  // a warp per row
  }

 private:
  // `threads` work items, grid-stride: at most 16 blocks of 256 threads per SM in flight.
  template <class Args>
  void launch(cuda::CUfunction f, int64_t threads, Args* args, void* stream) {
    if (threads <= 0) return;
    const int64_t blocks = std::min<int64_t>((threads + k::kThreads - 1) / k::kThreads, int64_t(kernels_.sms) * 16);
    void* params[] = {args};
    d_.make_current(device_);
    d_.check(d_.cuLaunchKernel(f, static_cast<unsigned>(blocks), 1, 1, k::kThreads, 1, 1, 0,
                               static_cast<cuda::CUstream>(stream), params, nullptr),
             "context parallel: launching a BlockOps kernel");
  }

  DLDevice device_;
  const DeviceKernels& kernels_;
  const cuda::Driver& d_;
};

}  // namespace

std::unique_ptr<BlockOps> cuda_block_ops(DLDevice device) { return std::make_unique<CudaBlockOps>(device); }

std::string cuda_block_ops_unavailable_reason(DLDevice device) {
  try {
    (void)kernels_for(device);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace attnrt::cp
