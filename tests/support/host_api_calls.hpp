// What the threaded host-API tests (tests/runtime/host_api_threads_test.cpp on the CPU,
// tests/gpu/host_api_threads_gpu_test.cpp on CUDA) share: a runtime created through the C host
// API, one call's outcome, and the bit-for-bit comparison of two outcomes.
#pragma once

#include <attnrt/host_api.h>
#include <attnrt/harness/host_tensor.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace attnrt::test {

struct Message {
  char text[4096] = {0};
  attnrt_message m{sizeof(attnrt_message), text, sizeof text};
};

// attnrt_runtime_create with the embedded default configuration and `overrides`; destroyed at
// scope exit.
class HostRuntime {
 public:
  explicit HostRuntime(const std::vector<std::string>& overrides) {
    std::vector<const char*> argv;
    for (const std::string& o : overrides) argv.push_back(o.c_str());
    Message err;
    status_ = attnrt_runtime_create(nullptr, argv.data(), argv.size(), &runtime_, &err.m);
    message_ = err.text;
  }
  ~HostRuntime() { attnrt_runtime_destroy(runtime_); }
  HostRuntime(const HostRuntime&) = delete;
  HostRuntime& operator=(const HostRuntime&) = delete;

  attnrt_runtime* get() const { return runtime_; }
  attnrt_status status() const { return status_; }
  const std::string& message() const { return message_; }

 private:
  attnrt_runtime* runtime_ = nullptr;
  attnrt_status status_ = ATTNRT_OK;
  std::string message_;
};

// What one resolution and its forward and backward calls gave, in host memory.
struct Outcome {
  attnrt_status resolve = ATTNRT_OK, forward = ATTNRT_OK, backward = ATTNRT_OK;
  std::string backend;  // the resolved backend's name
  std::string message;  // the failing step's message
  HostTensor out, lse, dq, dk, dv, dsinks;

  bool ran_backward() const { return resolve == ATTNRT_OK && forward == ATTNRT_OK && backward == ATTNRT_OK; }
};

// A tensor shaped like t, filled with NaN so that a kernel that skips an element shows.
inline HostTensor poisoned_like(const HostTensor& t) {
  if (t.empty()) return {};
  HostTensor p(t.shape(), t.dtype());
  p.fill_nan();
  return p;
}

inline bool same_bits(const HostTensor& a, const HostTensor& b) {
  if (a.empty() || b.empty()) return a.empty() == b.empty();
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// "" when got equals want bit for bit (statuses, backend, message, every tensor), else what
// differs.
inline std::string difference(const Outcome& want, const Outcome& got) {
  std::string d;
  if (got.resolve != want.resolve || got.forward != want.forward || got.backward != want.backward) {
    d += fmt::format(" statuses {}/{}/{} (want {}/{}/{});", static_cast<int>(got.resolve),
                     static_cast<int>(got.forward), static_cast<int>(got.backward), static_cast<int>(want.resolve),
                     static_cast<int>(want.forward), static_cast<int>(want.backward));
  }
  if (got.backend != want.backend) d += " backend '" + got.backend + "' (want '" + want.backend + "');";
  if (got.message != want.message) d += " message '" + got.message + "' (want '" + want.message + "');";
  const std::pair<const char*, const HostTensor Outcome::*> tensors[] = {
      {"out", &Outcome::out}, {"lse", &Outcome::lse}, {"dq", &Outcome::dq},
      {"dk", &Outcome::dk},   {"dv", &Outcome::dv},   {"dsinks", &Outcome::dsinks}};
  for (const auto& [name, member] : tensors) {
    if (!same_bits(want.*member, got.*member)) d += std::string(" ") + name + " differs;";
  }
  return d;
}

// Fails the test with each thread's problems (the first 20 of them; problems[t] is thread t's).
inline void expect_no_problems(const std::vector<std::vector<std::string>>& problems) {
  size_t count = 0;
  for (size_t t = 0; t < problems.size(); ++t) {
    for (const std::string& p : problems[t]) {
      if (++count <= 20) ADD_FAILURE() << "thread " << t << ": " << p;
    }
  }
  EXPECT_EQ(count, 0u) << "calls that differ from the single-threaded run";
}

}  // namespace attnrt::test
