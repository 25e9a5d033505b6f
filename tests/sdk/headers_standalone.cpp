// Every SDK header compiled the way an outside author compiles it: no attnrt build flags, only
// what `pkg-config --cflags attnrt-plugin` gives, with -Wall -Wextra -Wpedantic -Werror, under
// GCC and clang, at -O2 and -O3 (tests/sdk/build_plugin_without_cmake.sh). Each SDK function is
// called from a function of its own, so the optimizer inlines it into a separate context: GCC
// 12's false -Wrestrict warnings on std::string (GCC bug 105329) appear in some contexts only.
#include <attnrt/plugin_abi.h>
#include <attnrt/extensions.hpp>
#include <attnrt/plugin.hpp>
#include <attnrt/status.hpp>
#include <attnrt/validate.hpp>

#include <string>
#include <vector>

namespace sdk = attnrt::sdk;

#define HEADERS_NOINLINE extern "C" __attribute__((noinline, used, visibility("hidden")))

HEADERS_NOINLINE void call_dtype_names(attnrt_dtype d, DLDataType t, std::string* out) {
  *out = std::string(sdk::dtype_name(d)) + sdk::dl_dtype_name(t);
}
HEADERS_NOINLINE void call_device_name(DLDevice d, std::string* out) { *out = sdk::device_name(d); }
HEADERS_NOINLINE void call_shape_string(const DLTensor* t, std::string* out) { *out = sdk::shape_string(*t); }
HEADERS_NOINLINE void call_check_tensor(const DLTensor* t, DLDataType dt, DLDevice dev) {
  sdk::check_tensor("q", t, {2, -1, 4, 64}, dt, dev);
}
HEADERS_NOINLINE void call_check_desc(const attnrt_attention_desc* d) { sdk::check_desc(*d); }
HEADERS_NOINLINE void call_check_extensions(const attnrt_attention_desc* d) { sdk::check_extensions(*d); }
HEADERS_NOINLINE void call_capability_gap(const attnrt_capabilities* c, const attnrt_attention_desc* d,
                                          std::string* out) {
  *out = sdk::capability_gap(*c, *d);
}
HEADERS_NOINLINE void call_check_forward(const attnrt_attention_desc* d, const attnrt_forward_args* a) {
  sdk::check_forward(*d, *a);
}
HEADERS_NOINLINE void call_check_backward(const attnrt_attention_desc* d, const attnrt_backward_args* a) {
  sdk::check_backward(*d, *a);
}
HEADERS_NOINLINE void call_require(const attnrt_exec* e, size_t need, const std::string* why) {
  sdk::require_workspace(*e, need, 4);
  sdk::require_supported(*why);
}
HEADERS_NOINLINE void call_extension_name(uint32_t type, std::string* out) { *out = sdk::extension_name(type); }
HEADERS_NOINLINE void call_extension_reason(const attnrt_attention_desc* d, std::string* out) {
  static constexpr uint32_t kNone[] = {0};
  *out = sdk::extension_chain_error(*d) + sdk::unimplemented_extension_reason(*d, std::span(kNone, 0));
}
HEADERS_NOINLINE attnrt_status call_guarded(attnrt_message* m) {
  return sdk::guarded(m, [] { throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, "no"); });
}

// And a whole plugin through the adapter, forward and backward.
struct Standalone {
  static constexpr const char* kName = "standalone";
  static constexpr const char* kVersion = "0.0.1";
  static constexpr const char* kDescription = "the SDK headers compiled without attnrt's build flags";
  static constexpr attnrt_capabilities kCapabilities = sdk::capabilities(
      {.devices = ATTNRT_DEVICE_BIT_CPU, .dtypes = ATTNRT_DTYPE_BIT_FP32, .features = 0, .max_head_dim = 64});
  std::string supports(const attnrt_attention_desc& d) const {
    return d.head_dim % 8 ? "head_dim " + std::to_string(d.head_dim) + " is not a multiple of 8" : "";
  }
  size_t workspace_size(const attnrt_attention_desc&, bool, int) const { return 0; }
  void forward(const attnrt_attention_desc&, const attnrt_forward_args&, const attnrt_exec&) {}
  void backward(const attnrt_attention_desc&, const attnrt_backward_args&, const attnrt_exec&) {}
};
ATTNRT_DEFINE_PLUGIN(Standalone)
