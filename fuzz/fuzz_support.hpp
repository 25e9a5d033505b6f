// What the fuzz targets share. A target feeds its input to a runtime entry point; the entry
// point's documented failure, attnrt::Error (a message for the user), is a fine outcome. Anything
// else is a finding that libFuzzer saves the input for: another exception type (reported here
// with its type, then abort()), a crash, an ASan or UBSan report, a broken invariant (check()),
// a timeout or running out of memory.
#pragma once

#include <attnrt/runtime/error.hpp>

#include <cxxabi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <typeinfo>

namespace attnrt::fuzz {

inline std::string text_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

inline std::string type_name(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : type.name();
}

// Runs `body`; attnrt::Error is the clean refusal, any other exception aborts with its type.
template <class Body>
void expect_clean(const char* what, Body&& body) {
  try {
    body();
  } catch (const attnrt::Error&) {
    // the documented error: a message naming the input and what is wrong with it
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: %s threw %s, not attnrt::Error: %s\n", what, type_name(typeid(e)).c_str(), e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "fuzz: %s threw an exception not derived from std::exception\n", what);
    std::abort();
  }
}

// An invariant of an accepted input; breaking one is a finding.
inline void check(bool ok, const char* invariant, const std::string& detail = "") {
  if (ok) return;
  std::fprintf(stderr, "fuzz: invariant broken: %s %s\n", invariant, detail.c_str());
  std::abort();
}

}  // namespace attnrt::fuzz
