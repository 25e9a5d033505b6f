#include "isolation.hpp"

#include <fmt/format.h>

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>

namespace attnrt::check {
namespace {

// What the child tells the parent while it runs, in memory shared between them (mapped before
// the fork): the parent reads it to stretch a derived time limit and, once the child is gone,
// to say what it was doing. Lock-free 64-bit atomics are address-free, so they work across
// processes.
struct Progress {
  std::atomic<int64_t> kit_ns{0};
  std::atomic<int64_t> eager_ns{0};
  char what[256] = {0};  // NUL-terminated; written by the child, read after it ended
};
static_assert(std::atomic<int64_t>::is_always_lock_free);

Progress* g_progress = nullptr;  // set in the child only

int64_t to_ns(double seconds) { return static_cast<int64_t>(seconds * 1e9); }
double to_seconds(int64_t ns) { return static_cast<double>(ns) * 1e-9; }

double limit_seconds(const TimeLimit& limit, const Progress& p) {
  if (limit.fixed_seconds > 0) return limit.fixed_seconds;
  return limit.floor_seconds + limit.eager_factor * to_seconds(p.eager_ns.load()) + to_seconds(p.kit_ns.load());
}

std::string describe_limit(const TimeLimit& limit, const Progress& p) {
  if (limit.fixed_seconds > 0) return fmt::format("the limit is {:g} s (--timeout)", limit.fixed_seconds);
  return fmt::format(
      "the limit is {:g} s + {:g} x eager's {:.3f} s on the same calls, plus {:.2f} s in the kit's own code (the fp64 "
      "reference, eager); --timeout S sets a fixed one",
      limit.floor_seconds, limit.eager_factor, to_seconds(p.eager_ns.load()), to_seconds(p.kit_ns.load()));
}

}  // namespace

void report_case(std::string_view what) {
  if (!g_progress) return;
  const size_t n = std::min(what.size(), sizeof g_progress->what - 1);
  std::memcpy(g_progress->what, what.data(), n);
  g_progress->what[n] = '\0';
}

void report_kit_time(double seconds) {
  if (g_progress) g_progress->kit_ns += to_ns(seconds);
}

void report_eager_time(double seconds) {
  if (g_progress) g_progress->eager_ns += to_ns(seconds);
}

CheckResult run_isolated(const std::string& name, const std::function<std::string()>& body, const TimeLimit& limit) {
  CheckResult result;
  result.name = name;
  const auto start = std::chrono::steady_clock::now();
  auto fail = [&](const std::string& detail) {
    result.status = CheckResult::Status::kFail;
    result.detail = detail;
    return result;
  };
  void* shared = mmap(nullptr, sizeof(Progress), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return fail(std::string("cannot map shared memory: ") + std::strerror(errno));
  Progress* progress = new (shared) Progress();
  struct Unmap {
    void* p;
    ~Unmap() { munmap(p, sizeof(Progress)); }
  } unmap{shared};
  int fds[2];
  if (pipe(fds) != 0) return fail(std::string("cannot create a pipe: ") + std::strerror(errno));
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {  // child: run, report "<P|F|S><detail>", leave without running destructors
    close(fds[0]);
    // A crash must end the child by its signal, which the parent names: none of the host's
    // handlers stays (AddressSanitizer's, Python's faulthandler or a JVM's would report it and
    // exit with a status instead, or go on).
    for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) signal(sig, SIG_DFL);
    g_progress = progress;
    char status = 'P';
    std::string detail;
    try {
      detail = body();
    } catch (const CheckSkipped& e) {
      status = 'S';
      detail = e.what();
    } catch (const std::exception& e) {
      status = 'F';
      detail = e.what();
    } catch (...) {
      status = 'F';
      detail = "unknown exception";
    }
    const std::string message = status + detail;
    size_t written = 0;
    while (written < message.size()) {
      const ssize_t n = write(fds[1], message.data() + written, message.size() - written);
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return fail(std::string("fork failed: ") + std::strerror(errno));
  }
  std::string message;
  bool timed_out = false;
  char buf[4096];
  while (true) {
    // A derived limit grows while the check reports eager's and the kit's time: look again at
    // least every 100 ms.
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double remaining = limit_seconds(limit, *progress) - elapsed;
    if (remaining <= 0) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min(remaining, 0.1) * 1000) + 1);
    if (ready == 0) continue;
    if (ready < 0 && errno == EINTR) continue;
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    message.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.limit_seconds = limit_seconds(limit, *progress);
  const std::string in_case = progress->what[0] ? fmt::format(" during {}", progress->what) : "";
  if (timed_out) {
    return fail(
        fmt::format("timed out{} after {:.1f} s: {}", in_case, result.seconds, describe_limit(limit, *progress)));
  }
  if (WIFSIGNALED(wstatus)) {
    return fail(fmt::format("crashed with signal {} ({}){}", strsignal(WTERMSIG(wstatus)), WTERMSIG(wstatus), in_case));
  }
  if (message.empty()) {
    return fail(fmt::format("the check process exited ({}){} without a result",
                            WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1, in_case));
  }
  result.status = message[0] == 'P'   ? CheckResult::Status::kPass
                  : message[0] == 'S' ? CheckResult::Status::kSkip
                                      : CheckResult::Status::kFail;
  result.detail = message.substr(1);
  return result;
}

}  // namespace attnrt::check
