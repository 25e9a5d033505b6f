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

/* ---- Appended for context parallelism (issue 20; docs/distributed.md).
 * Ring attention over a sequence split across N ranks: every rank holds a shard of q, k and v,
 * the K/V shards travel a ring of ranks, and each rank computes its queries against every block
 * with the backend its site resolved to, merging the partial results exactly through their
 * log-sum-exp. A rank needs three handles: the resolved backend (attnrt_resolve, on the global
 * descriptor), a transport (its end of the group), and the ring made of the two.
 *
 * Lifetimes: every handle keeps what it was made from alive (a ring its backend and transport, a
 * transport its in-process group), so they may be destroyed in any order. Calls on one ring, and
 * on one transport, must not overlap; every rank of a group makes the same ring calls in the same
 * order with the same global descriptor (the schedule is computed, not negotiated). A rank that
 * fails mid-ring aborts its group: the other ranks' calls fail too, naming it, instead of
 * waiting; an aborted group (in-process) or communicator (NCCL, one the transport created) is
 * not reused: make a new one. */

typedef struct attnrt_transport attnrt_transport;
typedef struct attnrt_in_process_group attnrt_in_process_group;
typedef struct attnrt_ring attnrt_ring;

/* How the global sequence is cut into shards. ZIGZAG (for causal attention: every rank the same
 * work): rank r holds global chunks r and 2N-1-r of 2N equal chunks, concatenated in that order.
 * CONTIGUOUS (for sliding windows: fewer blocks travel): rank r holds chunk r of N. */
typedef enum attnrt_ring_layout { ATTNRT_RING_ZIGZAG = 0, ATTNRT_RING_CONTIGUOUS = 1 } attnrt_ring_layout;

/* The in-process transport: `world_size` (>= 1) ranks as threads of this process, exchanging
 * through memory (tests, and single-process use of the ring on the CPU). It keeps NCCL's rules
 * (a message is copied when its receiver waits; sizes must match). `timeout_ms` (> 0; 0: 60 s)
 * bounds each wait, so a rank that never calls fails the others with a message instead of
 * hanging them. ATTNRT_ERROR_INVALID_ARGUMENT names a world_size or timeout out of range. */
ATTNRT_HOST_API attnrt_status attnrt_in_process_group_create(int32_t world_size, int32_t timeout_ms,
                                                             attnrt_in_process_group** group, attnrt_message* error);
ATTNRT_HOST_API void attnrt_in_process_group_destroy(attnrt_in_process_group* group);
/* Rank `rank`'s end of the group (each rank's thread uses its own; taking one rank's end twice
 * gives two handles of the same end). ATTNRT_ERROR_INVALID_ARGUMENT for a rank outside
 * [0, world_size), named with the world size. */
ATTNRT_HOST_API attnrt_status attnrt_in_process_group_transport(attnrt_in_process_group* group, int32_t rank,
                                                                attnrt_transport** transport, attnrt_message* error);

/* NCCL (GPU ranks, one process or host per GPU). libnccl.so.2 is opened at run time (`library`:
 * another file; NULL or "": ATTNRT_NCCL_LIBRARY, else libnccl.so.2); libattnrt has no link
 * dependency on it. Without a usable NCCL each of these is ATTNRT_ERROR_UNSUPPORTED naming the
 * file searched and why (not found, not NCCL, older than 2.7); NCCL's and CUDA's own failures
 * are ATTNRT_ERROR_DEVICE with their text. Not yet run on GPUs (docs/distributed.md). */

/* ncclGetUniqueId on the rank that makes the id: 128 bytes (NCCL_UNIQUE_ID_BYTES) written to
 * `unique_id`, which the host sends to every rank (torch.distributed's store, MPI_Bcast, a file). */
ATTNRT_HOST_API attnrt_status attnrt_nccl_unique_id(const char* library, uint8_t unique_id[128], attnrt_message* error);
/* A new communicator (ncclCommInitRank: every rank calls it at the same time with the same id)
 * of `world_size` ranks on CUDA device `cuda_device`, owned by the transport.
 * ATTNRT_ERROR_INVALID_ARGUMENT for a rank outside [0, world_size) or a negative device. */
ATTNRT_HOST_API attnrt_status attnrt_nccl_transport_create(const uint8_t unique_id[128], int32_t rank,
                                                           int32_t world_size, int32_t cuda_device, const char* library,
                                                           attnrt_transport** transport, attnrt_message* error);
/* Wraps `comm`, an ncclComm_t the caller created on `cuda_device` (for example the communicator
 * of the framework's process group), without taking it: the caller destroys it after the
 * transport, and aborting it on failure is the caller's (the framework's watchdog). */
ATTNRT_HOST_API attnrt_status attnrt_nccl_transport_from_comm(void* comm, int32_t cuda_device, const char* library,
                                                              attnrt_transport** transport, attnrt_message* error);

/* Any transport: its rank, its group's size (-1 for NULL), its name ("in-process", "nccl"). */
ATTNRT_HOST_API int32_t attnrt_transport_rank(const attnrt_transport* transport);
ATTNRT_HOST_API int32_t attnrt_transport_world_size(const attnrt_transport* transport);
ATTNRT_HOST_API const char* attnrt_transport_name(const attnrt_transport* transport);
ATTNRT_HOST_API void attnrt_transport_destroy(attnrt_transport* transport);
/* Blocks until the work queued on `stream` (a cudaStream_t; NULL: the legacy default stream) has
 * finished, ring transfers included, and reports a transfer that failed or made no progress.
 * attnrt_ring_forward / _backward return as soon as their work is queued, so a peer rank that
 * failed before posting its side (a malformed shard) would leave a plain cudaStreamSynchronize
 * waiting forever; this call gives up after ATTNRT_NCCL_TIMEOUT_S seconds (default 600), aborts a
 * communicator the transport created and returns ATTNRT_ERROR_DEVICE naming the cause. The
 * in-process transport has finished on return: ATTNRT_OK at once. */
ATTNRT_HOST_API attnrt_status attnrt_transport_synchronize(attnrt_transport* transport, void* stream,
                                                           attnrt_message* error);

/* A ring on this rank: `backend` computes every block (resolve it for the global descriptor),
 * `transport` is this rank's end of the group. ATTNRT_ERROR_INVALID_ARGUMENT for a NULL handle
 * or a layout outside attnrt_ring_layout (an int32_t here, so any value a C caller passes is
 * defined behaviour and gets that error). */
ATTNRT_HOST_API attnrt_status attnrt_ring_create(attnrt_backend_handle* backend, attnrt_transport* transport,
                                                 int32_t layout, attnrt_ring** ring, attnrt_message* error);
ATTNRT_HOST_API void attnrt_ring_destroy(attnrt_ring* ring);

/* Why this ring cannot run `desc` forward (is_backward 0) or backward (1): written into `reason`
 * ("" when it can), ATTNRT_OK returned either way (ATTNRT_ERROR_INVALID_ARGUMENT only for a NULL
 * ring, desc or reason). Checks what forward/backward refuse before anything is sent, for every
 * rank's blocks, so all ranks answer alike: varlen with a window or with unequal query and key
 * lengths, paged KV, sinks, ALiBi, dropout, extension blocks, a sequence the layout cannot cut
 * into equal chunks, the backend's own refusal of a block, and CUDA tensors in a libattnrt built
 * without nvcc (no CUDA BlockOps kernels). */
ATTNRT_HOST_API attnrt_status attnrt_ring_unsupported_reason(const attnrt_ring* ring, const attnrt_attention_desc* desc,
                                                             int32_t is_backward, attnrt_message* reason);

/* Forward on this rank's shard. `desc` is the global descriptor, as resolved (what one call on
 * the whole sequence would take: seqlen_q = S_q, seqlen_k = S_k, causal and window fields in
 * global positions); `args` holds the shard, in layout order (shard_q = S_q / N, shard_k = S_k / N):
 *   q    [batch, shard_q, heads_q,  head_dim]      k, v  [batch, shard_k, heads_kv, head_dim(_v)]
 *   out  [batch, shard_q, heads_q,  head_dim_v]    written: this shard's rows of the whole out
 *   lse  [batch, heads_q, shard_q] float32         written when desc->return_lse (backward needs it)
 * q, k, v, out in desc->dtype, any strides with a contiguous last dimension, on desc->device.
 * Varlen (desc->is_varlen, packed self-attention): q, k, v, out are packed [total / N, heads, dim]
 * (each sequence cut into the layout's chunks of its own length), lse [heads_q, total / N], and
 * args->cu_seqlens_q / _k the whole batch's [batch + 1] int32 prefix sums in host memory (kDLCPU or
 * kDLCUDAHost), the same on every rank (context_parallel.hpp).
 * num_threads: CPU threads per block call (0: default); stream: the compute stream (CUDA) or NULL.
 * Errors: a malformed shard is ATTNRT_ERROR_INVALID_ARGUMENT naming the tensor and both shapes; a
 * refusal (attnrt_ring_unsupported_reason's) ATTNRT_ERROR_UNSUPPORTED with the reason; another
 * rank's failure ATTNRT_ERROR_DEVICE naming it; a wait that timed out, the same, saying so. */
ATTNRT_HOST_API attnrt_status attnrt_ring_forward(attnrt_ring* ring, const attnrt_attention_desc* desc,
                                                  const attnrt_forward_args* args, int32_t num_threads, void* stream,
                                                  attnrt_message* error);
/* Backward on this rank's shard: args->dout, q, k, v, out, lse as forward took and wrote them
 * (out and lse: forward's, with return_lse), dq, dk, dv written shaped like q, k, v (this shard's
 * rows of the whole-sequence gradients). The backend must have a backward. Errors as forward. */
ATTNRT_HOST_API attnrt_status attnrt_ring_backward(attnrt_ring* ring, const attnrt_attention_desc* desc,
                                                   const attnrt_backward_args* args, int32_t num_threads, void* stream,
                                                   attnrt_message* error);

/* The context parallelism the configuration asks of the site `backend` was resolved for
 * (attnrt.context_parallel: {size: N, layout: zigzag|contiguous, sites: [...]}, docs/distributed.md):
 * *size the number of ranks (1: none asked; run the backend as it is), *layout the split. A host
 * that gets size > 1 builds a ring of that many ranks with that layout (attnrt_ring_create);
 * attnrt starts no ranks itself. ATTNRT_ERROR_INVALID_ARGUMENT for a NULL argument. */
ATTNRT_HOST_API attnrt_status attnrt_backend_context_parallel(const attnrt_backend_handle* backend, int32_t* size,
                                                              attnrt_ring_layout* layout, attnrt_message* error);

/* ---- Appended for flex_attention's block masks (issue 15, plugin ABI 1.4).
 * PyTorch's create_block_mask on the backend's device: evaluates the mask_mod of the flex block on
 * desc's extension chain on every (q_idx, kv_idx) pair of every q_block_size x kv_block_size block
 * and writes the BlockMask's tensors (plugin_abi.h's attnrt_block_mask_args: kv_num_blocks and
 * kv_indices required, full_kv_*, q_* and full_q_* optional; int32 on desc->device; a leading
 * extent of 1 broadcasts over sequences or heads). The flex block's own block-mask tensors must be
 * NULL; fill them with these outputs for the attention calls. Runs on exec->stream (no workspace),
 * asynchronously for CUDA: no allocation or sync, so it can run when the mask changes (per batch
 * of documents) without stalling the stream. Errors: ATTNRT_ERROR_UNSUPPORTED when the backend's
 * plugin has none ("built against ABI 1.3; create_block_mask needs ABI 1.4") or cannot run desc;
 * ATTNRT_ERROR_INVALID_ARGUMENT naming the tensor or field; a mask_mod that does not compile,
 * ATTNRT_ERROR_INVALID_ARGUMENT with the compiler's log. */
ATTNRT_HOST_API attnrt_status attnrt_backend_create_block_mask(attnrt_backend_handle* backend,
                                                               const attnrt_attention_desc* desc,
                                                               const attnrt_block_mask_args* args,
                                                               const attnrt_exec* exec, attnrt_message* error);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNRT_HOST_API_H_ */
