// attnrt::sdk's error and message types: what crosses the plugin ABI as a status plus a
// message (plugin_abi.h: attnrt_status, attnrt_message), on both sides of it. A plugin's C++
// code throws Error with the status the call should return; guarded() turns any exception into
// that status and message; a host passes MessageBuffer's message to a plugin's functions.
#ifndef ATTNRT_STATUS_HPP_
#define ATTNRT_STATUS_HPP_

#include <attnrt/plugin_abi.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace attnrt::sdk {

// An error with the status it should cross the ABI as.
class Error : public std::runtime_error {
 public:
  Error(attnrt_status status, const std::string& what) : std::runtime_error(what), status_(status) {}
  attnrt_status status() const noexcept { return status_; }

 private:
  attnrt_status status_;
};

// A caller-owned attnrt_message with its storage: what a host (or a test) passes to a plugin's
// functions and reads back. Starts empty; text() is the NUL-terminated message.
struct MessageBuffer {
  static constexpr size_t kCapacity = 2048;
  char data[kCapacity] = {0};
  attnrt_message message{sizeof(attnrt_message), data, kCapacity};

  MessageBuffer() = default;
  MessageBuffer(const MessageBuffer&) = delete;  // message.data points into this object
  MessageBuffer& operator=(const MessageBuffer&) = delete;
  attnrt_message* get() noexcept { return &message; }
  const char* text() const noexcept { return data; }
  bool empty() const noexcept { return data[0] == '\0'; }
};

inline void write_message(attnrt_message* message, const char* text) noexcept {
  if (message == nullptr || message->data == nullptr || message->capacity == 0) return;
  // Truncation is intended: the caller sized the buffer.
  const size_t n = std::min(std::strlen(text), message->capacity - 1);
  std::memcpy(message->data, text, n);
  message->data[n] = '\0';
}

// Runs fn, turning any exception into a status plus message.
template <class Fn>
attnrt_status guarded(attnrt_message* message, Fn&& fn) noexcept {
  try {
    std::forward<Fn>(fn)();
    return ATTNRT_OK;
  } catch (const Error& e) {
    write_message(message, e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    write_message(message, "out of host memory");
    return ATTNRT_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    write_message(message, e.what());
    return ATTNRT_ERROR_INTERNAL;
  } catch (...) {
    write_message(message, "unknown exception in plugin");
    return ATTNRT_ERROR_INTERNAL;
  }
}

}  // namespace attnrt::sdk

#endif  // ATTNRT_STATUS_HPP_
