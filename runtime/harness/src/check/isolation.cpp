#include "isolation.hpp"

#include <fmt/format.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace attnrt::check {

CheckResult run_isolated(const std::string& name, const std::function<std::string()>& body, double timeout_seconds) {
  CheckResult result;
  result.name = name;
  const auto start = std::chrono::steady_clock::now();
  int fds[2];
  if (pipe(fds) != 0) {
    result.status = CheckResult::Status::kFail;
    result.detail = std::string("cannot create a pipe: ") + std::strerror(errno);
    return result;
  }
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {  // child: run, report "<P|F|S><detail>", leave without running destructors
    close(fds[0]);
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
    result.status = CheckResult::Status::kFail;
    result.detail = std::string("fork failed: ") + std::strerror(errno);
    return result;
  }
  std::string message;
  bool timed_out = false;
  char buf[4096];
  while (true) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const int wait_ms = static_cast<int>(std::max(0.0, timeout_seconds - elapsed) * 1000);
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, wait_ms);
    if (ready == 0) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    if (ready < 0 && errno == EINTR) continue;
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    message.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (timed_out) {
    result.status = CheckResult::Status::kFail;
    result.detail = fmt::format("timed out after {:.0f} s", timeout_seconds);
  } else if (WIFSIGNALED(wstatus)) {
    result.status = CheckResult::Status::kFail;
    result.detail = fmt::format("crashed with signal {} ({})", strsignal(WTERMSIG(wstatus)), WTERMSIG(wstatus));
  } else if (message.empty()) {
    result.status = CheckResult::Status::kFail;
    result.detail =
        fmt::format("the check process exited ({}) without a result", WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
  } else {
    result.status = message[0] == 'P'   ? CheckResult::Status::kPass
                    : message[0] == 'S' ? CheckResult::Status::kSkip
                                        : CheckResult::Status::kFail;
    result.detail = message.substr(1);
  }
  return result;
}

}  // namespace attnrt::check
