// leaks: a plugin's memory must not grow with its calls. A forward that leaks 4 MiB per call
// passes every numerics check and shows only as a training job's memory climbing; here one
// instance makes a few hundred calls in the check's own process, and the heap in use and the
// resident memory are read before and after every one of them.
#include "checks.hpp"
#include "fixtures.hpp"
#include "isolation.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__SANITIZE_ADDRESS__)
// The sanitizers' allocator interface (LLVM's sanitizer/allocator_interface.h; GCC ships no header
// for it, libasan has the function).
extern "C" size_t __sanitizer_get_current_allocated_bytes();
#endif

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace attnrt::check {
namespace {

// Calls first made and not measured: thread pools, caches and lazily built tables are set up
// on a first call and kept, which is no leak.
constexpr int kWarmupCalls = 5;
constexpr int kCalls = 300;
constexpr int kInstances = 50;
// Growth allowed over all the measured calls: allocator bookkeeping and page rounding, far
// below what a per-call leak adds over kCalls calls (a 4 KiB-per-call leak adds 1.2 MiB).
constexpr int64_t kHeapSlack = int64_t{1} << 20;
constexpr int64_t kResidentSlack = int64_t{4} << 20;

struct Memory {
  int64_t heap = 0;      // bytes malloc has handed out and not got back (glibc; 0 elsewhere)
  int64_t resident = 0;  // resident pages, whatever allocated them (mmap, a custom allocator)
};

// Under AddressSanitizer (tools/test.sh's build-asan) malloc is ASan's: the heap in use is its
// count, and resident memory is left out, since ASan keeps freed blocks resident in its
// quarantine (256 MiB by default) to catch a use after free: a plugin that allocates and frees on every call
// would grow by what it frees. A leak through mmap is then seen by the other builds only.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kResidentMeasured = false;
#else
constexpr bool kResidentMeasured = true;
#endif

// Reads without allocating, so that the reading does not move the heap it measures.
Memory memory_now() {
  Memory m;
#if defined(__SANITIZE_ADDRESS__)
  m.heap = static_cast<int64_t>(__sanitizer_get_current_allocated_bytes());
#elif defined(__GLIBC__)
  const struct mallinfo2 info = mallinfo2();
  m.heap = static_cast<int64_t>(info.uordblks + info.hblkhd);
#endif
  if (!kResidentMeasured) return m;
  char buf[128] = {0};
  const int fd = open("/proc/self/statm", O_RDONLY);
  if (fd >= 0) {
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    long long size = 0, resident = 0;
    if (n > 0 && std::sscanf(buf, "%lld %lld", &size, &resident) == 2) m.resident = resident * sysconf(_SC_PAGESIZE);
  }
  return m;
}

std::string mib(int64_t bytes) { return fmt::format("{:+.2f} MiB", static_cast<double>(bytes) / (1 << 20)); }

// A small call: a per-call leak shows in its count, not its size, and a few hundred of these
// take well under a second for a naive plugin.
WorkloadSpec leak_spec(const attnrt_capabilities& caps) {
  WorkloadSpec s = base_spec(caps, first_dtype(caps));
  s.seqlen_q = 16;
  s.seqlen_k = 24;
  s.heads_q = s.heads_kv = 2;
  return s;
}

// One call of `raw` on w: forward, then backward when `backward`. "" or the error.
std::string call(const RawPlugin& raw, Workload& w, bool backward, std::vector<char>& ws, std::vector<char>& ws_bwd) {
  sdk::MessageBuffer err;
  const attnrt_forward_args fa = w.forward_args();
  if (raw.forward(w.desc, fa, ws, err) != ATTNRT_OK) return std::string("forward: ") + err.text();
  if (backward) {
    const attnrt_backward_args ba = w.backward_args();
    if (raw.backward(w.desc, ba, ws_bwd, err) != ATTNRT_OK) return std::string("backward: ") + err.text();
  }
  return "";
}

}  // namespace

std::string check_leaks(const std::filesystem::path& lib, const std::filesystem::path& eager) {
  RawPlugin raw(lib);
  const attnrt_capabilities& caps = raw.lib->capabilities();
  Workload w = cpu_workload(leak_spec(caps), caps);
  if (!raw.unsupported(w.desc).empty()) w = cpu_workload(base_spec(caps, first_dtype(caps)), caps);
  if (const std::string why = raw.unsupported(w.desc); !why.empty()) {
    throw CheckSkipped("the plugin refuses the base call: " + why);
  }
  const bool backward = (caps.features & ATTNRT_FEATURE_BACKWARD) && raw.api().backward;
  report_eager_time_for(eager, w, backward, kWarmupCalls + kCalls);
  const char* what = backward ? "forward + backward" : "forward";

  std::vector<char> ws, ws_bwd;
  for (int i = 0; i < kWarmupCalls; ++i) {
    report_case(fmt::format("warm-up call {}: {}", i + 1, what));
    if (const std::string e = call(raw, w, backward, ws, ws_bwd); !e.empty())
      throw CheckFailed(fmt::format("warm-up call {} failed: {}", i + 1, e));
  }
  // Fails as soon as the growth passes the slack, so a large leak costs little memory here.
  auto check_growth = [](const Memory& from, int done, const char* unit) {
    const Memory now = memory_now();
    const int64_t heap = now.heap - from.heap, resident = now.resident - from.resident;
    if (heap <= kHeapSlack && resident <= kResidentSlack) return;
    throw CheckFailed(
        fmt::format("memory grows with every {}: {} per {} (heap in use {}, resident {} after {} of "
                    "them; allowed: {} heap, {} resident)",
                    unit, mib((heap > kHeapSlack ? heap : resident) / done), unit, mib(heap), mib(resident), done,
                    mib(kHeapSlack), mib(kResidentSlack)));
  };
  const Memory before = memory_now();
  for (int i = 1; i <= kCalls; ++i) {
    report_case(fmt::format("call {} of {}: {}", i, kCalls, what));
    if (const std::string e = call(raw, w, backward, ws, ws_bwd); !e.empty())
      throw CheckFailed(fmt::format("call {} failed: {}", i, e));
    check_growth(before, i, "call");
  }
  const Memory after_calls = memory_now();

  // Instances: create and destroy must give back what they take.
  const attnrt_host_info host{sizeof host, ATTNRT_ABI_VERSION_MAJOR, ATTNRT_ABI_VERSION_MINOR, nullptr, nullptr};
  const Memory before_instances = memory_now();
  for (int i = 1; i <= kInstances; ++i) {
    report_case(fmt::format("instance {} of {}: create, destroy", i, kInstances));
    attnrt_instance* inst = nullptr;
    sdk::MessageBuffer err;
    if (raw.api().create(&host, &inst, err.get()) != ATTNRT_OK)
      throw CheckFailed(fmt::format("create {} failed: {}", i, err.text()));
    raw.api().destroy(inst);
    check_growth(before_instances, i, "instance");
  }
  report_case("");
  const Memory end = memory_now();
  const std::string resident = kResidentMeasured ? "resident " + mib(after_calls.resident - before.resident)
                                                 : std::string("resident not measured (AddressSanitizer build)");
  return fmt::format("{} calls ({}): heap in use {}, {}; {} instances: heap in use {}", kCalls, what,
                     mib(after_calls.heap - before.heap), resident, kInstances, mib(end.heap - before_instances.heap));
}

}  // namespace attnrt::check
