#include "guards.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace attnrt::check {
namespace {

// Not a byte pattern an attention output, NaN poisoning or zero-fill leaves: 0xa5a5a5a5 as fp32
// is -2.9e-16, as bf16/fp16 pairs small negatives; a plugin storing exactly that is not expected.
constexpr unsigned char kPattern = 0xa5;

// "4 bytes before out's start (nearest at byte -4)" / "8 bytes after out's end (first at byte +0)"
std::string describe_band(const unsigned char* band, bool before, const std::string& name) {
  size_t changed = 0, nearest = 0;
  bool found = false;
  for (size_t i = 0; i < kGuardBytes; ++i) {
    if (band[i] == kPattern) continue;
    ++changed;
    // Nearest to the tensor: the last changed byte before it, the first after it.
    const size_t distance = before ? kGuardBytes - i : i;
    if (!found || (before ? distance < nearest : false)) nearest = distance;
    found = true;
  }
  if (!changed) return "";
  return before ? fmt::format("{} bytes before {}'s start (nearest at byte -{})", changed, name, nearest)
                : fmt::format("{} bytes after {}'s end (first at byte +{})", changed, name, nearest);
}

}  // namespace

void GuardedOutput::Free::operator()(unsigned char* p) const { std::free(p); }

GuardedOutput::GuardedOutput(HostTensor& tensor, std::string name) : tensor_(tensor), name_(std::move(name)) {
  bytes_ = tensor.nbytes();
  const size_t total = (bytes_ + 2 * kGuardBytes + 255) / 256 * 256;
  buffer_.reset(static_cast<unsigned char*>(std::aligned_alloc(256, total)));
  if (!buffer_) throw std::bad_alloc();
  std::memset(buffer_.get(), kPattern, total);
  if (bytes_) std::memcpy(buffer_.get() + kGuardBytes, tensor.data(), bytes_);
  view_ = *tensor.dl();
  view_.data = buffer_.get() + kGuardBytes;
}

std::string GuardedOutput::finish() {
  if (bytes_) std::memcpy(tensor_.data(), buffer_.get() + kGuardBytes, bytes_);
  const std::string before = describe_band(buffer_.get(), true, name_);
  const std::string after = describe_band(buffer_.get() + kGuardBytes + bytes_, false, name_);
  if (before.empty() && after.empty()) return "";
  return fmt::format("wrote outside {}: {}{}{}", name_, before, before.empty() || after.empty() ? "" : " and ", after);
}

void UnchangedInputs::add(const HostTensor& tensor, std::string name) {
  if (tensor.empty()) return;
  const auto* p = static_cast<const unsigned char*>(tensor.data());
  copies_.push_back({&tensor, std::move(name), std::vector<unsigned char>(p, p + tensor.nbytes())});
}

std::vector<std::string> UnchangedInputs::changed() const {
  std::vector<std::string> out;
  for (const Copy& c : copies_) {
    const auto* p = static_cast<const unsigned char*>(c.tensor->data());
    size_t changed = 0, first = 0;
    for (size_t i = 0; i < c.bytes.size(); ++i) {
      if (p[i] == c.bytes[i]) continue;
      if (!changed) first = i;
      ++changed;
    }
    if (changed)
      out.push_back(fmt::format("wrote into its input {} ({} bytes changed, first at byte {}); inputs are read-only",
                                c.name, changed, first));
  }
  return out;
}

}  // namespace attnrt::check
