// The one exception type of libattnrt: a message that already carries its context (config
// file:line:column, override text, plugin path, tensor name), printed once at the top.
#pragma once

#include <attnrt/runtime/export.hpp>

#include <stdexcept>
#include <string>

namespace attnrt {

class ATTNRT_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace attnrt
