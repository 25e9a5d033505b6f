// Catching a plugin that writes outside its outputs (issue 19): for one call, each output lives in
// a buffer with kGuardBytes of a fixed pattern before and after it, and each input is compared
// with a copy afterwards. An off-by-one store past the end, a row too many, or scratch kept in q
// shows as changed bytes; a wild write farther away is left to the crash isolation.
#pragma once

#include <attnrt/harness/host_tensor.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace attnrt::check {

inline constexpr size_t kGuardBytes = 4096;

// An output for one call: dl() points into a guarded copy of `tensor`'s bytes; finish() copies
// the result back and says what was written outside ("" when nothing).
class GuardedOutput {
 public:
  GuardedOutput(HostTensor& tensor, std::string name);
  GuardedOutput(const GuardedOutput&) = delete;
  GuardedOutput& operator=(const GuardedOutput&) = delete;
  DLTensor* dl() { return &view_; }
  std::string finish();

 private:
  struct Free {
    void operator()(unsigned char* p) const;
  };
  HostTensor& tensor_;
  std::string name_;
  size_t bytes_ = 0;
  std::unique_ptr<unsigned char, Free> buffer_;
  DLTensor view_{};
};

// Inputs that must come back unchanged: copies taken now, compared by changed().
class UnchangedInputs {
 public:
  void add(const HostTensor& tensor, std::string name);
  // "wrote into its input q (4 bytes changed, first at byte 0)", one per input changed.
  std::vector<std::string> changed() const;

 private:
  struct Copy {
    const HostTensor* tensor;
    std::string name;
    std::vector<unsigned char> bytes;
  };
  std::vector<Copy> copies_;
};

}  // namespace attnrt::check
