// The one exception type of libattnrt: a message that already carries its context (config
// file:line:column, override text, plugin path, tensor name), printed once at the top, and the
// ABI status it stands for, which the C host API returns unchanged (host_api.h lists what each
// status means to a host).
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt/runtime/export.hpp>

#include <stdexcept>
#include <string>

namespace attnrt {

class ATTNRT_API Error : public std::runtime_error {
 public:
  // Malformed input: a configuration or override, a manifest, a file or device named by the
  // configuration, a tensor or descriptor field. Status ATTNRT_ERROR_INVALID_ARGUMENT.
  explicit Error(const std::string& what) : Error(ATTNRT_ERROR_INVALID_ARGUMENT, what) {}
  // Any other failure: a plugin's own status, an unavailable device, exhausted memory, ...
  // ATTNRT_OK and values outside the enum are stored as ATTNRT_ERROR_INTERNAL: an Error is
  // never a success.
  Error(attnrt_status status, const std::string& what)
      : std::runtime_error(what),
        status_(status >= ATTNRT_ERROR_INVALID_ARGUMENT && status <= ATTNRT_ERROR_INTERNAL ? status
                                                                                           : ATTNRT_ERROR_INTERNAL) {}

  attnrt_status status() const noexcept { return status_; }

 private:
  attnrt_status status_;
};

}  // namespace attnrt
