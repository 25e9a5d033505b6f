/*
 * libattnrt's C host API: what Python (ctypes/cffi) or any non-C++ host uses to load a
 * configuration, resolve an attention site to a backend, and call it. Plain C99; tensors are
 * DLPack DLTensors as in plugin_abi.h. Every function returns a status and, on failure,
 * writes a message into the caller's buffer. Handles are released by the matching function.
 *
 * Statuses (attnrt_status, plugin_abi.h) as a host sees them. A failing call writes a
 * NUL-terminated message saying what failed into `error` (when it is non-NULL with a nonzero
 * capacity; truncated to it); a successful one leaves `error` untouched. A status a plugin
 * returns reaches the host unchanged, its message prefixed with the plugin's name and the call.
 *  ATTNRT_ERROR_INVALID_ARGUMENT  fix the input: a NULL pointer argument (named), a malformed
 *                                 configuration file or override (file:line:column or the
 *                                 override text), a file or plugin path that does not exist, an
 *                                 unknown site, a tensor or descriptor field (named).
 *  ATTNRT_ERROR_UNSUPPORTED       well-formed, but cannot be honoured here: resolution found no
 *                                 backend (strict, or every candidate refused: the message lists
 *                                 each reason), backward asked of a backend that has none, a
 *                                 library that is no usable plugin of this runtime (not loadable,
 *                                 no entry point, another ABI major), or the plugin's own refusal.
 *  ATTNRT_ERROR_DEVICE            the device or its driver failed (CUDA error text), or the
 *                                 configured device is not available here (no CUDA, no cuda:N).
 *  ATTNRT_ERROR_OUT_OF_MEMORY     device memory (CUDA_ERROR_OUT_OF_MEMORY), host memory or a
 *                                 workspace ran out: a smaller call may succeed.
 *  ATTNRT_ERROR_INTERNAL          a bug in libattnrt or in the plugin (any other exception, or an
 *                                 unknown status from a plugin): report it with the message.
 *
 * Threads. A runtime and the backend handles resolved from it may be shared by any number of
 * threads (data-parallel workers, a thread per request stream, autograd's backward threads):
 *  - May run concurrently, on one runtime and on one backend handle: attnrt_resolve (different
 *    sites and values too), attnrt_runtime_site_*, attnrt_backend_name, attnrt_backend_forward
 *    and attnrt_backend_backward. The runtime loads each plugin library once and creates one
 *    plugin instance per library, whichever thread asks first, under a lock; every resolution
 *    that picks that library shares the instance. Each call gets a workspace of its own: CPU
 *    calls overlap; a CUDA call uses a workspace kept for its stream, so calls on different
 *    streams run side by side on the GPU (their launches take turns on the host). With several
 *    threads calling CPU backends at once, pass num_threads so that together they do not
 *    oversubscribe the cores (0 lets each call use all of them).
 *  - What a call writes belongs to that call: concurrent calls need distinct output tensors
 *    (out, lse, dq, dk, dv, dsinks) and distinct `error` messages; attnrt_resolve writes
 *    desc->device and desc->cuda_arch, so a desc being resolved must not be read by another
 *    call at the same time (resolve a copy per thread). Inputs (q, k, v, ..., a desc no call
 *    writes) may be shared.
 *  - Need external synchronisation: attnrt_runtime_destroy and attnrt_backend_release must not
 *    overlap any other call on that runtime or handle (nor each other on it). Runtimes may be
 *    created, and others destroyed, on any threads at once. A backend handle stays valid after
 *    its runtime is destroyed: it keeps its plugin loaded until it is released.
 *  - Plugins are held to the ABI's threading rule (plugin_abi.h: supports, workspace_size,
 *    forward and backward concurrently on one instance); `attnrt check` tests it (`threads`).
 */
#ifndef ATTNRT_HOST_API_H_
#define ATTNRT_HOST_API_H_

#include <attnrt/plugin_abi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* libattnrt is built with hidden visibility: these functions are what it exports. */
#define ATTNRT_HOST_API __attribute__((visibility("default")))

typedef struct attnrt_runtime attnrt_runtime;
typedef struct attnrt_backend_handle attnrt_backend_handle;

/* Loads config_path (NULL: the embedded default configuration) and applies Hydra-style
 * overrides ("+a.b=v", ...). Errors name file:line:column or the override. */
ATTNRT_HOST_API attnrt_status attnrt_runtime_create(const char* config_path, const char* const* overrides,
                                                    size_t num_overrides, attnrt_runtime** runtime,
                                                    attnrt_message* error);
ATTNRT_HOST_API void attnrt_runtime_destroy(attnrt_runtime* runtime);

/* Attention sites found in the configuration, and the implementation each asks for. The
 * strings live as long as the runtime. */
ATTNRT_HOST_API size_t attnrt_runtime_site_count(const attnrt_runtime* runtime);
ATTNRT_HOST_API const char* attnrt_runtime_site_name(const attnrt_runtime* runtime, size_t index);
ATTNRT_HOST_API const char* attnrt_runtime_site_value(const attnrt_runtime* runtime, size_t index);

/* Resolves `value` (a name, alias, auto, path or org/name; NULL: the configured value of
 * `site`) for `desc` on the configured device. desc->device and desc->cuda_arch are filled by
 * the runtime. On ATTNRT_ERROR_UNSUPPORTED the message lists every candidate's reason. */
ATTNRT_HOST_API attnrt_status attnrt_resolve(attnrt_runtime* runtime, const char* site, const char* value,
                                             attnrt_attention_desc* desc, attnrt_backend_handle** backend,
                                             attnrt_message* error);
ATTNRT_HOST_API const char* attnrt_backend_name(const attnrt_backend_handle* backend);
ATTNRT_HOST_API void attnrt_backend_release(attnrt_backend_handle* backend);

/* Calls the backend; the runtime validates every tensor first and provides the workspace.
 * num_threads: CPU threads (0: default); stream: CUDA stream or NULL. */
ATTNRT_HOST_API attnrt_status attnrt_backend_forward(attnrt_backend_handle* backend, const attnrt_attention_desc* desc,
                                                     const attnrt_forward_args* args, int32_t num_threads, void* stream,
                                                     attnrt_message* error);
ATTNRT_HOST_API attnrt_status attnrt_backend_backward(attnrt_backend_handle* backend, const attnrt_attention_desc* desc,
                                                      const attnrt_backward_args* args, int32_t num_threads,
                                                      void* stream, attnrt_message* error);

/* ---- Appended for framework hosts (issue 18): scratch memory owned by the caller.
 * A framework (PyTorch's caching allocator, a CUDA graph) supplies the workspace and the stream
 * of each call, so the call path allocates nothing, synchronises nothing and copies nothing
 * between host and device: a CUDA call made this way can be captured in a CUDA graph. The
 * resolved handle is the per-call object: resolve once per descriptor shape, then call. */

/* The status's name ("ok", "invalid argument", "unsupported", "device error", "out of memory",
 * "internal error"; "unknown status" for any other value). Static storage, never NULL. */
ATTNRT_HOST_API const char* attnrt_status_string(attnrt_status status);

/* Bytes of workspace the *_with_workspace call below needs for `desc` (as resolved: desc->device
 * filled), forward (is_backward 0) or backward (1), with `num_threads` CPU threads (0: default;
 * pass the exec.num_threads of the call). ATTNRT_ERROR_UNSUPPORTED for backward on a backend
 * that has none. Concurrent with any call on the handle. */
ATTNRT_HOST_API attnrt_status attnrt_backend_workspace_size(attnrt_backend_handle* backend,
                                                            const attnrt_attention_desc* desc, int32_t is_backward,
                                                            int32_t num_threads, size_t* bytes, attnrt_message* error);

/* attnrt_backend_forward / _backward with the caller's execution context (plugin_abi.h's
 * attnrt_exec, struct_size >= ATTNRT_EXEC_SIZE_V1_0): exec->stream (CUDA: cudaStream_t, NULL the
 * default stream), exec->workspace on desc->device, aligned to 256 bytes, of exec->workspace_size
 * bytes, at least attnrt_backend_workspace_size's answer for the same desc, direction and
 * exec->num_threads (NULL allowed when that answer is 0). A workspace too small, NULL or
 * misaligned is ATTNRT_ERROR_INVALID_ARGUMENT naming the exec field. The workspace belongs to
 * the call until its work on the stream is done; concurrent calls need distinct workspaces.
 * Tensors are validated as in attnrt_backend_forward; CUDA calls return once enqueued. */
ATTNRT_HOST_API attnrt_status attnrt_backend_forward_with_workspace(attnrt_backend_handle* backend,
                                                                    const attnrt_attention_desc* desc,
                                                                    const attnrt_forward_args* args,
                                                                    const attnrt_exec* exec, attnrt_message* error);
ATTNRT_HOST_API attnrt_status attnrt_backend_backward_with_workspace(attnrt_backend_handle* backend,
                                                                     const attnrt_attention_desc* desc,
                                                                     const attnrt_backward_args* args,
                                                                     const attnrt_exec* exec, attnrt_message* error);

/* ---- Appended for paged KV caches (issue 17, plugin ABI 1.2).
 * Writes new tokens into a paged KV cache through a slot mapping (vLLM's reshape_and_cache,
 * FlashInfer's append_paged_kv_cache; plugin_abi.h's attnrt_append_kv_args): token n of
 * args->k_new / v_new [num_tokens, heads_kv, head_dim(_v)] goes to row slot_mapping[n] % page_size
 * of page slot_mapping[n] / page_size of args->k_cache / v_cache [num_pages, page_size,
 * heads_kv, head_dim(_v)]; slot_mapping is int64 [num_tokens], a negative slot (a padding
 * token) is skipped. `desc` is the paged attention descriptor the backend was resolved for
 * (dtype, heads_kv, head_dim, head_dim_v, page_size, device are read). Runs on exec->stream
 * (struct_size >= ATTNRT_EXEC_SIZE_V1_0; no workspace needed), asynchronously for CUDA: no
 * allocation, sync or host copy, so it can be captured in a CUDA graph beside the attention call.
 * ATTNRT_ERROR_UNSUPPORTED when the backend's plugin has no append ("built against ABI 1.1;
 * append_kv needs ABI 1.2", or none implemented); ATTNRT_ERROR_INVALID_ARGUMENT naming the tensor
 * for a malformed argument (on the CPU also a slot outside the cache). */
ATTNRT_HOST_API attnrt_status attnrt_backend_append_kv(attnrt_backend_handle* backend,
                                                       const attnrt_attention_desc* desc,
                                                       const attnrt_append_kv_args* args, const attnrt_exec* exec,
                                                       attnrt_message* error);

/* ---- Appended for a quiet library (issue 19).
 * libattnrt prints nothing by itself. What it has to say (each resolution's choice and every
 * fallback reason, plugin folders passed over, configuration warnings, and what plugins log
 * through attnrt_host_info.log, prefixed with the plugin's name) goes to the callback installed
 * here, and without one is dropped, unless the environment asks for it with
 * ATTNRT_LOG_LEVEL=debug|info|warn|error (then written to stderr as "attnrt: WARNING: ...").
 * The callback is process-wide (messages name their site or plugin) and receives messages at
 * `min_level` (plugin_abi.h's attnrt_log_level) and above: fn(user_data, level, message), the
 * message NUL-terminated and valid only during the call. It may be called from any thread that
 * creates a runtime or resolves, and from a plugin's calls if the plugin logs, concurrently: it
 * must be thread-safe and must not call attnrt_set_log_callback. fn NULL removes it
 * (ATTNRT_LOG_LEVEL then no longer applies either). Returns once no message is being delivered
 * to the old callback, so its user_data may be freed then. ATTNRT_ERROR_INVALID_ARGUMENT for a
 * min_level outside the enum. */
typedef void (*attnrt_log_fn)(void* user_data, attnrt_log_level level, const char* message);
ATTNRT_HOST_API attnrt_status attnrt_set_log_callback(attnrt_log_fn fn, void* user_data, attnrt_log_level min_level);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNRT_HOST_API_H_ */
