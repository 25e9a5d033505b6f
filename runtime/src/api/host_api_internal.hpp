// What the C host API's source files share: the handle types behind host_api.h's opaque
// pointers, and the conversion of exceptions into a status plus a message (no exception crosses
// the C API). host_api.cpp has the runtime and backend entry points, host_api_ring.cpp those of
// context parallelism.
#pragma once

#include <attnrt/host_api.h>
#include <attnrt/plugin.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/runtime.hpp>

#include <memory>
#include <new>
#include <string>

struct attnrt_runtime {
  std::unique_ptr<attnrt::Runtime> runtime;
};

struct attnrt_backend_handle {
  std::shared_ptr<attnrt::Backend> backend;
  std::string name;
  attnrt::ContextParallelSetting context_parallel;  // the site's attnrt.context_parallel
};

namespace attnrt::capi {

// Writes the message (never empty: the status's name stands in for a blank one) and returns
// the status.
inline attnrt_status fail(attnrt_message* error, attnrt_status status, const char* message) noexcept {
  attnrt::sdk::write_message(error, message[0] ? message : attnrt::status_name(status));
  return status;
}

// A NULL pointer argument: INVALID_ARGUMENT naming the function and the argument.
inline attnrt_status null_argument(attnrt_message* error, const char* function, const char* argument) noexcept {
  try {
    return fail(error, ATTNRT_ERROR_INVALID_ARGUMENT,
                (std::string(function) + ": " + argument + " must not be NULL").c_str());
  } catch (...) {
    return fail(error, ATTNRT_ERROR_INVALID_ARGUMENT, "a pointer argument is NULL");
  }
}

// Runs fn; an exception becomes its status (host_api.h says what each means) and its message.
template <class Fn>
attnrt_status guard(attnrt_message* error, Fn&& fn) noexcept {
  try {
    fn();
    return ATTNRT_OK;
  } catch (const attnrt::Error& e) {
    return fail(error, e.status(), e.what());
  } catch (const attnrt::sdk::Error& e) {
    const attnrt_status s = e.status();  // OK, or a value outside the enum, is no failure's status
    return fail(error, s >= ATTNRT_ERROR_INVALID_ARGUMENT && s <= ATTNRT_ERROR_INTERNAL ? s : ATTNRT_ERROR_INTERNAL,
                e.what());
  } catch (const std::bad_alloc&) {
    return fail(error, ATTNRT_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return fail(error, ATTNRT_ERROR_INTERNAL, e.what());
  } catch (...) {
    return fail(error, ATTNRT_ERROR_INTERNAL, "internal error: unknown exception");
  }
}

}  // namespace attnrt::capi
