/* A plugin that does nothing: every call returns ATTNRT_OK at once. The dispatch benchmark
 * (dispatch_bench.cpp) calls it directly through its function table and through libattnrt, so
 * the difference is what the runtime adds per call (issue 19: at most 1 microsecond). CPU, every
 * dtype and feature the host checks arguments for, no workspace. Plain C against plugin_abi.h. */
#include <attnrt/plugin_abi.h>

static const attnrt_capabilities kCaps = {
    sizeof(attnrt_capabilities),
    ATTNRT_DEVICE_BIT_CPU,
    ATTNRT_DTYPE_BIT_FP32 | ATTNRT_DTYPE_BIT_FP16 | ATTNRT_DTYPE_BIT_BF16,
    ATTNRT_FEATURE_GQA | ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_VARLEN | ATTNRT_FEATURE_LSE | ATTNRT_FEATURE_BACKWARD,
    1,
    256,
    0,
    0};

struct attnrt_instance {
  int unused;
};
static struct attnrt_instance g_instance;

static attnrt_status create(const attnrt_host_info* host, attnrt_instance** instance, attnrt_message* error) {
  (void)host;
  (void)error;
  *instance = &g_instance;
  return ATTNRT_OK;
}

static void destroy(attnrt_instance* instance) { (void)instance; }

static attnrt_status supports(attnrt_instance* instance, const attnrt_attention_desc* desc, attnrt_message* reason) {
  (void)instance;
  (void)desc;
  (void)reason;
  return ATTNRT_OK;
}

static attnrt_status workspace_size(attnrt_instance* instance, const attnrt_attention_desc* desc, int32_t is_backward,
                                    int32_t num_threads, size_t* bytes, attnrt_message* error) {
  (void)instance;
  (void)desc;
  (void)is_backward;
  (void)num_threads;
  (void)error;
  *bytes = 0;
  return ATTNRT_OK;
}

static attnrt_status forward(attnrt_instance* instance, const attnrt_attention_desc* desc,
                             const attnrt_forward_args* args, const attnrt_exec* exec, attnrt_message* error) {
  (void)instance;
  (void)desc;
  (void)args;
  (void)exec;
  (void)error;
  return ATTNRT_OK;
}

static attnrt_status backward(attnrt_instance* instance, const attnrt_attention_desc* desc,
                              const attnrt_backward_args* args, const attnrt_exec* exec, attnrt_message* error) {
  (void)instance;
  (void)desc;
  (void)args;
  (void)exec;
  (void)error;
  return ATTNRT_OK;
}

static const attnrt_plugin_api kApi = {sizeof(attnrt_plugin_api),
                                       ATTNRT_ABI_VERSION_MAJOR,
                                       ATTNRT_ABI_VERSION_MINOR,
                                       "noop",
                                       "1.0.0",
                                       "returns at once (dispatch benchmark)",
                                       &kCaps,
                                       create,
                                       destroy,
                                       supports,
                                       workspace_size,
                                       forward,
                                       backward,
                                       0 /* append_kv */};

ATTNRT_PLUGIN_EXPORT const attnrt_plugin_api* attnrt_plugin_entry(uint32_t host_major, uint32_t host_minor) {
  (void)host_major;
  (void)host_minor;
  return &kApi;
}
