/*
 * attnrt plugin ABI: the one stable contract between the attnrt runtime (the host) and an
 * attention plugin (a shared library). Plain C99; depends only on <stddef.h>, <stdint.h> and
 * DLPack's <dlpack/dlpack.h>.
 *
 * Versioning (the rules and every version's contents: sdk/ABI_CHANGELOG.md):
 *  - ATTNRT_ABI_VERSION_MAJOR changes only on a breaking change; the host refuses a plugin whose
 *    major differs from its own, naming both versions.
 *  - ATTNRT_ABI_VERSION_MINOR changes when something is appended: a field at the end of a struct,
 *    an entry at the end of the function table, a feature bit, an extension type. Nothing is
 *    reordered, retyped, removed or given a new meaning.
 *  - Every struct begins with `struct_size` (sizeof as the writer compiled it), so a reader checks
 *    ATTNRT_HAS_FIELD(ptr, type, field) before touching a field newer than the peer. The size each
 *    version wrote is named: ATTNRT_<STRUCT>_SIZE_V<major>_<minor> (compare with these, never
 *    with a literal or with this header's sizeof). The layout is asserted at compile time below.
 *  - The first three fields of attnrt_plugin_api (struct_size, abi_major, abi_minor) are frozen
 *    across every major, so any host can read any plugin's version.
 *  - Optional feature families travel as typed extension blocks (attnrt_extension, ABI 1.1) on a
 *    chain from attnrt_attention_desc.extensions. The host never sends a chain to a plugin whose
 *    minor cannot know every block on it; a plugin refuses (in supports) a required block it does
 *    not implement, and may ignore one flagged ATTNRT_EXTENSION_OPTIONAL.
 *
 * Layout convention (FlashAttention's; strides are in elements, not bytes, as in DLPack):
 *  q     [batch, seqlen_q, heads_q,  head_dim]     (varlen: [total_q, heads_q, head_dim])
 *  k     [batch, seqlen_k, heads_kv, head_dim]     (varlen: [total_k, heads_kv, head_dim];
 *                                                   paged: [num_pages, page_size, heads_kv, head_dim])
 *  v     [batch, seqlen_k, heads_kv, head_dim_v]   (same leading dims as k)
 *  out   [batch, seqlen_q, heads_q,  head_dim_v]   (varlen: [total_q, heads_q, head_dim_v])
 *  lse   [batch, heads_q, seqlen_q] float32        (varlen: [heads_q, total_q]), natural log
 *  The last dimension of every tensor is contiguous (stride 1); other strides are free.
 */
#ifndef ATTNRT_PLUGIN_ABI_H_
#define ATTNRT_PLUGIN_ABI_H_

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATTNRT_ABI_VERSION_MAJOR 1
#define ATTNRT_ABI_VERSION_MINOR 4

/* The single symbol every plugin exports (all others hidden). Type: attnrt_plugin_entry_fn. */
#define ATTNRT_PLUGIN_ENTRY_SYMBOL "attnrt_plugin_entry"

#if defined(_WIN32)
#define ATTNRT_PLUGIN_EXPORT __declspec(dllexport)
#else
#define ATTNRT_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* Size of a struct up to and including `field`: what a reader compares with struct_size. */
#define ATTNRT_STRUCT_SIZE(type, field) (offsetof(type, field) + sizeof(((type*)0)->field))
/* True when the peer that filled *ptr knew `field` (ptr must be non-null). */
#define ATTNRT_HAS_FIELD(ptr, type, field) ((ptr)->struct_size >= ATTNRT_STRUCT_SIZE(type, field))

/* A compile-time assertion usable at file scope in C99, C11 and C++ (`name` must be an
 * identifier unique in this header): the layout asserts at the end of the header use it, so a
 * compiler or a local edit that moves a field breaks the plugin's own build, not a user's run. */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define ATTNRT_STATIC_ASSERT(cond, name) static_assert(cond, #name)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define ATTNRT_STATIC_ASSERT(cond, name) _Static_assert(cond, #name)
#else /* C99: an array of negative size is a compile error */
#define ATTNRT_STATIC_ASSERT(cond, name) typedef char attnrt_static_assert_##name[(cond) ? 1 : -1]
#endif

/* ---------------------------------------------------------------- status and messages */

/* Every function returns a status; non-OK statuses come with a NUL-terminated message written
 * into the caller's buffer (attnrt_message), truncated to its capacity. */
typedef enum attnrt_status {
  ATTNRT_OK = 0,
  ATTNRT_ERROR_INVALID_ARGUMENT = 1, /* a tensor or field is malformed: the message names it */
  ATTNRT_ERROR_UNSUPPORTED = 2,      /* well-formed, but this plugin cannot honour it: the reason */
  ATTNRT_ERROR_DEVICE = 3,           /* the device or its driver failed (CUDA error text) */
  ATTNRT_ERROR_OUT_OF_MEMORY = 4,    /* workspace too small or device memory exhausted */
  ATTNRT_ERROR_INTERNAL = 5          /* a bug in the plugin; the message says where */
} attnrt_status;

/* Caller-owned buffer for a message. The callee writes at most capacity bytes, NUL included. */
typedef struct attnrt_message {
  size_t struct_size;
  char* data;      /* may be NULL when capacity is 0: the callee then writes nothing */
  size_t capacity; /* bytes */
} attnrt_message;

/* ---------------------------------------------------------------- capabilities */

typedef enum attnrt_device_bits {
  ATTNRT_DEVICE_BIT_CPU = 1u << 0,
  ATTNRT_DEVICE_BIT_CUDA = 1u << 1
} attnrt_device_bits;

typedef enum attnrt_dtype_bits {
  ATTNRT_DTYPE_BIT_FP32 = 1u << 0,
  ATTNRT_DTYPE_BIT_FP16 = 1u << 1,
  ATTNRT_DTYPE_BIT_BF16 = 1u << 2
} attnrt_dtype_bits;

/* Features a plugin may advertise. Advertising is a promise checked by `attnrt check`; the
 * per-call support query still has the last word for a given descriptor. */
typedef enum attnrt_feature_bits {
  ATTNRT_FEATURE_GQA = 1ull << 0,            /* heads_q a multiple of heads_kv (MQA: heads_kv 1) */
  ATTNRT_FEATURE_CAUSAL = 1ull << 1,         /* bottom-right aligned causal mask */
  ATTNRT_FEATURE_SLIDING_WINDOW = 1ull << 2, /* window_left / window_right */
  ATTNRT_FEATURE_SOFTCAP = 1ull << 3,        /* softcap * tanh(score / softcap) */
  ATTNRT_FEATURE_SINKS = 1ull << 4,          /* per-head sink logits in the denominator */
  ATTNRT_FEATURE_ALIBI = 1ull << 5,          /* ALiBi slopes */
  ATTNRT_FEATURE_VARLEN = 1ull << 6,         /* cu_seqlens_q / cu_seqlens_k */
  ATTNRT_FEATURE_PAGED_KV = 1ull << 7,       /* block_table, page_size, seqused_k */
  ATTNRT_FEATURE_DROPOUT = 1ull << 8,        /* dropout_p > 0 */
  ATTNRT_FEATURE_LSE = 1ull << 9,            /* returns the log-sum-exp */
  ATTNRT_FEATURE_BACKWARD = 1ull << 10,      /* implements backward */
  ATTNRT_FEATURE_DETERMINISTIC = 1ull << 11, /* bit-identical repeats when deterministic != 0 */
  ATTNRT_FEATURE_HEAD_DIM_V = 1ull << 12,    /* head_dim_v != head_dim */
  /* ---- ABI 1.2 */
  ATTNRT_FEATURE_APPEND_KV = 1ull << 13,      /* implements append_kv (writes tokens into a paged cache) */
  ATTNRT_FEATURE_PAGED_VARLEN_Q = 1ull << 14, /* is_paged with is_varlen: packed queries over a paged
                                                 cache (chunked prefill) */
  /* ---- ABI 1.3 */
  ATTNRT_FEATURE_FLEX_ATTENTION = 1ull << 15, /* implements the flex_attention extension block
                                                 (score_mod, mask_mod, block mask) */
  /* ---- ABI 1.4 */
  ATTNRT_FEATURE_CREATE_BLOCK_MASK = 1ull << 16 /* implements create_block_mask (a flex block mask
                                                   from mask_mod, on the call's device) */
} attnrt_feature_bits;

/* A plugin's static declaration of what it can do; owned by the plugin, valid while loaded. */
typedef struct attnrt_capabilities {
  size_t struct_size;
  uint32_t devices;      /* attnrt_device_bits */
  uint32_t dtypes;       /* attnrt_dtype_bits */
  uint64_t features;     /* attnrt_feature_bits */
  int32_t min_head_dim;  /* smallest head_dim / head_dim_v accepted */
  int32_t max_head_dim;  /* largest head_dim / head_dim_v accepted */
  int32_t min_cuda_arch; /* CUDA only: lowest compute capability, major*10+minor (80); 0: any */
  int32_t max_cuda_arch; /* CUDA only: highest compute capability; 0: no upper bound */
} attnrt_capabilities;

/* ---------------------------------------------------------------- extensions (ABI 1.1) */

/*
 * A typed extension block (the PJRT C API's extension chain): a feature family that is not part
 * of every call (flex_attention's score/mask mods and block masks, fp8 descales, a KV-cache
 * append, ...) travels as one block on a singly linked chain reached from
 * attnrt_attention_desc.extensions, instead of as ever more fields of the core descriptor.
 *
 * Every extension struct begins with this header as its first member (so a pointer to the block
 * is a pointer to its header) and grows append-only like every other struct, its own struct_size
 * telling a reader which of its fields the writer knew.
 *
 * Ownership: the chain and every block on it are owned by the caller and valid for the duration
 * of the call they came with (supports, workspace_size, forward or backward); a plugin never
 * frees, modifies or keeps a pointer into them after returning.
 *
 * What a plugin must do (ABI >= 1.1): walk the chain; for a block whose `type` it implements,
 * honour it; for one it does not implement, refuse the call in supports() (and forward/backward)
 * with a reason naming the type, unless its flags hold ATTNRT_EXTENSION_OPTIONAL, in which case
 * it may ignore the block. The host never sends a chain to a plugin built against a minor older
 * than a block's (ABI 1.0 plugins never receive a chain), and validates the chain first: every
 * block's struct_size >= ATTNRT_EXTENSION_SIZE_V1_1, no block of the reserved type 0, at most
 * ATTNRT_EXTENSION_CHAIN_MAX blocks (a NULL `next` ends the chain, so no entry is NULL).
 */
typedef struct attnrt_extension {
  size_t struct_size;                  /* bytes of the whole block as its writer compiled it,
                                          header included (>= ATTNRT_EXTENSION_SIZE_V1_1) */
  uint32_t type;                       /* attnrt_extension_type, or a vendor type
                                          (>= ATTNRT_EXTENSION_TYPE_VENDOR_FIRST) */
  uint32_t flags;                      /* attnrt_extension_flags bits (0: required); other
                                          bits are reserved and written as 0 */
  const struct attnrt_extension* next; /* the next block; NULL ends the chain */
} attnrt_extension;

typedef enum attnrt_extension_flags {
  /* A hint that does not change the result (a tuning preference, a cache key, ...): a plugin
   * that does not know the type may ignore the block. Without it the block is required: a
   * plugin that does not implement it must refuse the call, naming the type. */
  ATTNRT_EXTENSION_OPTIONAL = 1u << 0
} attnrt_extension_flags;

/* attnrt's own extension types: every type below ATTNRT_EXTENSION_TYPE_VENDOR_FIRST, each listed
 * with the ABI minor that introduced it (a host sends it only to plugins of at least that minor;
 * attnrt::sdk::kStandardExtensions in extensions.hpp holds the same table for C++). ABI 1.1
 * introduced the mechanism with no type. */
typedef enum attnrt_extension_type {
  ATTNRT_EXTENSION_TYPE_NONE = 0,          /* reserved, never valid: what a zero-filled header holds */
  ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION = 1 /* ABI 1.3: attnrt_flex_attention */
} attnrt_extension_type;

/* Types from here up are vendor or experimental extensions, outside attnrt's numbering: the
 * plugin and the caller that use one agree on it; attnrt only carries it. Pick a number unlikely
 * to collide (for example 0x80000000 | a hash of your reverse-DNS name); 0xFFFFFFFF is kept by
 * `attnrt check` as a type no plugin implements. Any plugin of ABI >= 1.1 may receive one, and
 * refuses it when it is required and unknown. */
#define ATTNRT_EXTENSION_TYPE_VENDOR_FIRST 0x80000000u

/* The most blocks a chain may hold: a longer chain (or a cycle) is ATTNRT_ERROR_INVALID_ARGUMENT. */
#define ATTNRT_EXTENSION_CHAIN_MAX 64

/* ---------------------------------------------------------------- flex_attention (ABI 1.3) */

/*
 * PyTorch's FlexAttention (torch.nn.attention.flex_attention; Dong et al. 2024, "Flex Attention:
 * A Programming Model for Generating Optimized Attention Kernels") as an extension block of type
 * ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION: user code that modifies each score and masks pairs, and
 * an optional block-sparse mask that says which tiles hold any visible pair.
 *
 * The mods are source text, the bodies of these functions (the SDK README's "flex_attention
 * mods" section is the contract: the identifiers a body may use and how it is compiled):
 *   float score_mod(float score, int b, int h, int q_idx, int kv_idx)  (NULL or "": returns score)
 *   bool  mask_mod(int b, int h, int q_idx, int kv_idx)                (NULL or "": true)
 *   float score_mod_grad(float score, int b, int h, int q_idx, int kv_idx)
 *         d score_mod / d score at `score`, for backward (NULL: a backward with a score_mod is
 *         refused; without a score_mod the gradient is 1)
 * b is the sequence (batch index, or varlen sequence), h the query head, q_idx and kv_idx the
 * query's and key's positions within their sequence counted from 0 (top-left, as PyTorch's
 * flex). `score` is the descriptor's score, softmax_scale * q . k in natural-log units after
 * its softcap and ALiBi (a plugin that cannot combine those with mods refuses the call). With
 * the block, the descriptor's rule becomes
 *   s_ij = score_mod(score_ij, b, h, i, j)
 *   masked: the descriptor's causal / window rule, or !mask_mod(b, h, i, j), or (i, j) in a block
 *           the block mask does not list
 * and everything else (sinks, LSE, a row with no visible key) is unchanged. Sources may read
 * aux tensors as aux0, aux1, ... (read-only views: aux0(i, j) indexes with the tensor's
 * strides, aux0.size(d) its shape) and scalars as scalar0, scalar1, ... (float).
 *
 * The block mask (PyTorch's BlockMask, field for field; int32, on desc.device): the queries of
 * a sequence are cut into blocks of q_block_size rows and its keys into blocks of kv_block_size;
 * for sequence b, query head h and query block m, the key blocks
 *   kv_indices[b, h, m, 0 .. kv_num_blocks[b, h, m])            may hold visible pairs (mask_mod
 *                                                               is evaluated there)
 *   full_kv_indices[b, h, m, 0 .. full_kv_num_blocks[b, h, m])  hold only visible pairs (mask_mod
 *                                                               is not evaluated; optional)
 * and every other key block is fully masked (skipped). A dimension of size 1 in b or h
 * broadcasts. q_num_blocks / q_indices (and full_q_*) are the transpose, [b, h, key block,
 * query blocks], for backward: optional, a plugin that needs them derives them when absent.
 * kv_num_blocks NULL: no block mask (every tile is visited and mask_mod is evaluated on all).
 * The host checks shapes and dtypes, not that the lists agree with mask_mod: as in PyTorch, a
 * "full" block is trusted (mask_mod is not evaluated there) and an unlisted block is skipped.
 */
typedef struct attnrt_flex_attention {
  attnrt_extension header;            /* type ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION; struct_size: the block's */
  const char* score_mod;              /* NUL-terminated body, or NULL */
  const char* mask_mod;               /* NUL-terminated body, or NULL */
  const char* score_mod_grad;         /* NUL-terminated body, or NULL */
  const char* source_name;            /* where the mods came from ("mods.yaml:12"), for compile errors; may be NULL */
  int32_t num_aux;                    /* entries of aux */
  int32_t num_scalars;                /* entries of scalars */
  const DLTensor* const* aux;         /* [num_aux] tensors on desc.device: int32, int64 or float32, 1-4 dims */
  const float* scalars;               /* [num_scalars], host memory */
  int32_t q_block_size;               /* rows per query block of the block mask (PyTorch's default 128) */
  int32_t kv_block_size;              /* keys per key block (128) */
  const DLTensor* kv_num_blocks;      /* [B, H, num_q_blocks] int32, or NULL: no block mask */
  const DLTensor* kv_indices;         /* [B, H, num_q_blocks, max_kv_blocks] int32 */
  const DLTensor* full_kv_num_blocks; /* like kv_num_blocks, or NULL */
  const DLTensor* full_kv_indices;    /* like kv_indices, or NULL */
  const DLTensor* q_num_blocks;       /* [B, H, num_kv_blocks] int32, or NULL */
  const DLTensor* q_indices;          /* [B, H, num_kv_blocks, max_q_blocks] int32 */
  const DLTensor* full_q_num_blocks;  /* or NULL */
  const DLTensor* full_q_indices;     /* or NULL */
} attnrt_flex_attention;

/* ---------------------------------------------------------------- the attention descriptor */

typedef enum attnrt_dtype { ATTNRT_DTYPE_FP32 = 0, ATTNRT_DTYPE_FP16 = 1, ATTNRT_DTYPE_BF16 = 2 } attnrt_dtype;

/*
 * What one attention call computes, independent of where its tensors live. Carries every
 * feature, including those a plugin rejects: a plugin that cannot honour a field must refuse
 * the call (ATTNRT_ERROR_UNSUPPORTED plus a reason), never ignore the field.
 *
 * Scores (FlashAttention-2's convention, Dao 2023; gpt-oss for sinks):
 *   s_ij = softmax_scale * q_i . k_j
 *   if softcap > 0:        s_ij = softcap * tanh(s_ij / softcap)
 *   if alibi:              s_ij -= slope_h * |i + seqlen_k - seqlen_q - j|
 *   masked (s_ij = -inf):  j > i + seqlen_k - seqlen_q + window_right   (causal: window_right 0)
 *                          j < i + seqlen_k - seqlen_q - window_left    (window_left >= 0)
 *   p_ij = exp(s_ij) / (exp(sink_h) + sum_j exp(s_ij))   (sink term only with sinks)
 *   out_i = sum_j p_ij v_j;   lse_i = log(exp(sink_h) + sum_j exp(s_ij))
 * A query row with no visible key gives out_i = 0 and lse_i = -inf (or sink_h with sinks).
 * With varlen, i, j, seqlen_q and seqlen_k are per sequence.
 *
 * Paged KV (vLLM's PagedAttention): k/v are [num_pages, page_size, heads_kv, head_dim(_v)];
 * token t of sequence b is row t % page_size of page block_table[b, t / page_size]; seqused_k[b]
 * is that sequence's number of keys (its queries are the last ones: causal is bottom-right), and
 * block_table entries past ceil(seqused_k[b] / page_size) are never read (they may hold -1).
 * ABI 1.2: is_paged may be combined with is_varlen (ATTNRT_FEATURE_PAGED_VARLEN_Q): the queries
 * (q, out, lse) are packed by cu_seqlens_q ([total_q, heads_q, head_dim], chunked prefill), the
 * keys come from the paged cache by seqused_k, and cu_seqlens_k is not read (may be NULL). A host
 * never sends that combination to a plugin built against ABI < 1.2.
 */
typedef struct attnrt_attention_desc {
  size_t struct_size;
  attnrt_dtype dtype; /* of q, k, v, out (and dout, dq, dk, dv) */
  int32_t head_dim;   /* of q and k */
  int32_t head_dim_v; /* of v and out */
  int32_t heads_q;
  int32_t heads_kv;      /* heads_q % heads_kv == 0; 1 is MQA */
  int32_t batch;         /* number of sequences (varlen: cu_seqlens length - 1) */
  int32_t seqlen_q;      /* per sequence; varlen: max_seqlen_q */
  int32_t seqlen_k;      /* per sequence; varlen: max_seqlen_k; paged: max over seqused_k */
  float softmax_scale;   /* usually 1/sqrt(head_dim) */
  int32_t causal;        /* nonzero: bottom-right aligned causal mask */
  int32_t window_left;   /* keys visible to the left of the diagonal; -1: unlimited */
  int32_t window_right;  /* keys visible to the right of the diagonal; -1: unlimited */
  float softcap;         /* 0: off */
  int32_t has_sinks;     /* sinks tensor [heads_q] float32 is given */
  int32_t has_alibi;     /* alibi_slopes tensor [heads_q] or [batch, heads_q] float32 */
  int32_t is_varlen;     /* cu_seqlens_q/k are given; q/k/v are packed */
  int32_t is_paged;      /* k/v are pages; block_table and seqused_k are given */
  int32_t page_size;     /* tokens per page when is_paged */
  float dropout_p;       /* probability of dropping a p_ij; 0: off */
  int32_t deterministic; /* nonzero: repeats must be bit-identical (backward included) */
  uint64_t dropout_seed; /* Philox seed and offset of the dropout mask (FlashAttention's) */
  uint64_t dropout_offset;
  int32_t return_lse; /* nonzero: forward writes lse */
  DLDevice device;    /* where every tensor of the call lives */
  int32_t cuda_arch;  /* CUDA: major*10+minor of `device`, filled by the host; else 0 */
  /* ---- ABI 1.1 (read only when ATTNRT_HAS_FIELD(desc, attnrt_attention_desc, extensions)) */
  const attnrt_extension* extensions; /* the first extension block; NULL: none. Owned by the
                                         caller, valid for the call (see attnrt_extension) */
} attnrt_attention_desc;

/* ---------------------------------------------------------------- calls */

/* Host-provided execution context. Plugins allocate nothing behind the host's back: scratch
 * memory comes from `workspace`, sized by the plugin's workspace_size answer. */
typedef struct attnrt_exec {
  size_t struct_size;
  void* stream;          /* CUDA: cudaStream_t (NULL: default stream); CPU: unused */
  void* workspace;       /* on desc.device, aligned to 256 bytes; may be NULL if size 0 */
  size_t workspace_size; /* bytes */
  int32_t num_threads;   /* CPU: threads the call may use; 0: the plugin's default */
} attnrt_exec;

/* Tensors of a forward call. Optional tensors are NULL when their descriptor flag is off. */
typedef struct attnrt_forward_args {
  size_t struct_size;
  const DLTensor* q;
  const DLTensor* k;
  const DLTensor* v;
  DLTensor* out;
  DLTensor* lse;                /* written when desc.return_lse */
  const DLTensor* sinks;        /* [heads_q] float32 */
  const DLTensor* alibi_slopes; /* [heads_q] or [batch, heads_q] float32 */
  const DLTensor* cu_seqlens_q; /* [batch + 1] int32, prefix sums of query lengths */
  const DLTensor* cu_seqlens_k; /* [batch + 1] int32 */
  const DLTensor* seqused_k;    /* [batch] int32: keys used per sequence (paged, optional varlen) */
  const DLTensor* block_table;  /* [batch, max_pages_per_seq] int32 page indices (paged) */
} attnrt_forward_args;

/* Tensors of a backward call (FlashAttention-2, Algorithm 2): recomputes p from q, k and lse. */
typedef struct attnrt_backward_args {
  size_t struct_size;
  const DLTensor* dout; /* like out */
  const DLTensor* q;
  const DLTensor* k;
  const DLTensor* v;
  const DLTensor* out;
  const DLTensor* lse; /* as written by forward */
  DLTensor* dq;        /* like q */
  DLTensor* dk;        /* like k (summed over the heads_q / heads_kv group) */
  DLTensor* dv;        /* like v */
  DLTensor* dsinks;    /* [heads_q] float32, written when desc.has_sinks */
  const DLTensor* sinks;
  const DLTensor* alibi_slopes;
  const DLTensor* cu_seqlens_q;
  const DLTensor* cu_seqlens_k;
  const DLTensor* seqused_k;
  const DLTensor* block_table;
} attnrt_backward_args;

/* ABI 1.2: tensors of a KV-cache append (vLLM's reshape_and_cache, FlashInfer's
 * append_paged_kv_cache): token n of k_new / v_new is written to row slot_mapping[n] % page_size
 * of page slot_mapping[n] / page_size of k_cache / v_cache; a negative slot (a padding token) is
 * skipped. The descriptor of the call gives dtype, heads_kv, head_dim, head_dim_v, page_size and
 * device (the paged attention descriptor the caller already has; its other fields are not read).
 * Slots must be distinct (two writers of one slot: either value lands). */
typedef struct attnrt_append_kv_args {
  size_t struct_size;
  const DLTensor* k_new;        /* [num_tokens, heads_kv, head_dim] */
  const DLTensor* v_new;        /* [num_tokens, heads_kv, head_dim_v] */
  const DLTensor* slot_mapping; /* [num_tokens] int64: page * page_size + row; < 0: skip */
  DLTensor* k_cache;            /* [num_pages, page_size, heads_kv, head_dim], written */
  DLTensor* v_cache;            /* [num_pages, page_size, heads_kv, head_dim_v], written (may share
                                   k_cache's allocation through strides) */
} attnrt_append_kv_args;

/* ABI 1.4: the tensors create_block_mask writes (PyTorch's create_block_mask(mask_mod, B, H,
 * Q_LEN, KV_LEN, BLOCK_SIZE), with the BlockMask's fields as plugin_abi.h's attnrt_flex_attention
 * names them). The call's descriptor carries the flex block on its chain: its mask_mod, aux,
 * scalars, q_block_size and kv_block_size are read; its own block-mask tensors must be NULL. Every
 * pair (q_idx < seqlen_q, kv_idx < seqlen_k, top-left) of every block is evaluated; a block with
 * no visible pair is skipped, one with only visible pairs is full, any other partial. All tensors
 * are int32 on desc.device, with Bm = 1 or batch and Hm = 1 or heads_q (1: mask_mod is evaluated
 * at b = 0 / h = 0 and the mask broadcasts, as PyTorch's B=None / H=None), the same in all of
 * them; MQ = ceil(seqlen_q / q_block_size), MK = ceil(seqlen_k / kv_block_size):
 *   kv_num_blocks [Bm, Hm, MQ], kv_indices [Bm, Hm, MQ, MK]       partial blocks, ascending
 *   full_kv_num_blocks, full_kv_indices (the same shapes)        full blocks; NULL pair: the
 *                                                                 full blocks are listed as partial
 *   q_num_blocks [Bm, Hm, MK], q_indices [Bm, Hm, MK, MQ]         the transpose, for backward; NULL
 *   full_q_num_blocks, full_q_indices (the same shapes)          pair: not written
 * Entries of an index row past its count are 0. With varlen or paged descriptors, seqlen_q and
 * seqlen_k are the longest sequence's: the mask is valid for every shorter one, whose kernels
 * never visit blocks past its end (a block cut by the end stays as classified: a full block is
 * full on its part, a partial one is evaluated). No mask_mod: every block is full. */
typedef struct attnrt_block_mask_args {
  size_t struct_size;
  DLTensor* kv_num_blocks;      /* required */
  DLTensor* kv_indices;         /* required */
  DLTensor* full_kv_num_blocks; /* optional pair */
  DLTensor* full_kv_indices;
  DLTensor* q_num_blocks; /* optional pair */
  DLTensor* q_indices;
  DLTensor* full_q_num_blocks; /* optional pair */
  DLTensor* full_q_indices;
} attnrt_block_mask_args;

/* Host services offered to a plugin instance. */
typedef enum attnrt_log_level {
  ATTNRT_LOG_DEBUG = 0,
  ATTNRT_LOG_INFO = 1,
  ATTNRT_LOG_WARNING = 2,
  ATTNRT_LOG_ERROR = 3
} attnrt_log_level;

typedef struct attnrt_host_info {
  size_t struct_size;
  uint32_t host_abi_major;
  uint32_t host_abi_minor;
  /* Optional logger; may be called from any thread. NULL: the plugin stays silent. */
  void (*log)(void* user_data, attnrt_log_level level, const char* text);
  void* log_user_data;
} attnrt_host_info;

/* An opaque plugin instance (handles, caches); created and destroyed through the API. */
typedef struct attnrt_instance attnrt_instance;

/*
 * The function table a plugin returns. Owned by the plugin, static, valid while it is loaded.
 * Threading: create/destroy must not overlap other calls on the same instance; supports,
 * workspace_size, forward and backward may be called concurrently from several threads on one
 * instance, as long as their output tensors and workspaces do not overlap.
 */
typedef struct attnrt_plugin_api {
  size_t struct_size;      /* frozen across majors */
  uint32_t abi_major;      /* frozen across majors: ATTNRT_ABI_VERSION_MAJOR built with */
  uint32_t abi_minor;      /* frozen across majors */
  const char* name;        /* registered name, e.g. "sdpa": [a-z0-9_]+ */
  const char* version;     /* the plugin's own version, e.g. "1.2.0" */
  const char* description; /* one line, shown by `attnrt list` */
  const attnrt_capabilities* capabilities;

  attnrt_status (*create)(const attnrt_host_info* host, attnrt_instance** instance, attnrt_message* error);
  void (*destroy)(attnrt_instance* instance);

  /* ATTNRT_OK if this instance can compute `desc` exactly as described; otherwise
   * ATTNRT_ERROR_UNSUPPORTED and a human-readable reason ("head_dim 320 > 256"). */
  attnrt_status (*supports)(attnrt_instance* instance, const attnrt_attention_desc* desc, attnrt_message* reason);

  /* Bytes of workspace forward (is_backward 0) or backward (1) needs for `desc` with
   * `num_threads` threads (CPU; 0 for the default). */
  attnrt_status (*workspace_size)(attnrt_instance* instance, const attnrt_attention_desc* desc, int32_t is_backward,
                                  int32_t num_threads, size_t* bytes, attnrt_message* error);

  attnrt_status (*forward)(attnrt_instance* instance, const attnrt_attention_desc* desc,
                           const attnrt_forward_args* args, const attnrt_exec* exec, attnrt_message* error);

  /* NULL when the plugin has no backward (and does not advertise ATTNRT_FEATURE_BACKWARD). */
  attnrt_status (*backward)(attnrt_instance* instance, const attnrt_attention_desc* desc,
                            const attnrt_backward_args* args, const attnrt_exec* exec, attnrt_message* error);

  /* ---- ABI 1.2 (read only when ATTNRT_HAS_FIELD(api, attnrt_plugin_api, append_kv)) */
  /* Writes new tokens into a paged KV cache (attnrt_append_kv_args), asynchronously on
   * exec->stream for CUDA; needs no workspace. NULL when the plugin has none (and does not
   * advertise ATTNRT_FEATURE_APPEND_KV). */
  attnrt_status (*append_kv)(attnrt_instance* instance, const attnrt_attention_desc* desc,
                             const attnrt_append_kv_args* args, const attnrt_exec* exec, attnrt_message* error);

  /* ---- ABI 1.4 (read only when ATTNRT_HAS_FIELD(api, attnrt_plugin_api, create_block_mask)) */
  /* Builds a flex block mask from the mask_mod of desc's flex block (attnrt_block_mask_args),
   * asynchronously on exec->stream for CUDA; needs no workspace (the outputs are its scratch).
   * NULL when the plugin has none (and does not advertise ATTNRT_FEATURE_CREATE_BLOCK_MASK). */
  attnrt_status (*create_block_mask)(attnrt_instance* instance, const attnrt_attention_desc* desc,
                                     const attnrt_block_mask_args* args, const attnrt_exec* exec,
                                     attnrt_message* error);
} attnrt_plugin_api;

/* The entry point: returns the plugin's static function table (never NULL for a valid plugin).
 * Takes the host's version so a plugin may log a mismatch; the host makes the decision. */
typedef const attnrt_plugin_api* (*attnrt_plugin_entry_fn)(uint32_t host_abi_major, uint32_t host_abi_minor);

/* ---------------------------------------------------------------- sizes per version */

/*
 * The bytes each ABI version's writer knew, per struct: ATTNRT_STRUCT_SIZE up to that version's
 * last field (tail padding excluded, so a writer's struct_size, its sizeof, is at least this).
 * A reader compares a peer's struct_size with these, never with a literal or with this header's
 * sizeof (which grows with every minor). A struct that did not grow in a minor has no constant
 * for it: its previous one still applies. sdk/ABI_CHANGELOG.md lists what each version added.
 */
/* The frozen head of attnrt_plugin_api (struct_size, abi_major, abi_minor), the same in every
 * major: what a host reads before it knows whether it can read anything else. */
#define ATTNRT_PLUGIN_API_HEAD_SIZE ATTNRT_STRUCT_SIZE(attnrt_plugin_api, abi_minor)

/* ABI 1.0 */
#define ATTNRT_MESSAGE_SIZE_V1_0 ATTNRT_STRUCT_SIZE(attnrt_message, capacity)
#define ATTNRT_CAPABILITIES_SIZE_V1_0 ATTNRT_STRUCT_SIZE(attnrt_capabilities, max_cuda_arch)
#define ATTNRT_ATTENTION_DESC_SIZE_V1_0 ATTNRT_STRUCT_SIZE(attnrt_attention_desc, cuda_arch)
#define ATTNRT_EXEC_SIZE_V1_0 ATTNRT_STRUCT_SIZE(attnrt_exec, num_threads)
#define ATTNRT_FORWARD_ARGS_SIZE_V1_0 ATTNRT_STRUCT_SIZE(attnrt_forward_args, block_table)
#define ATTNRT_BACKWARD_ARGS_SIZE_V1_0 ATTNRT_STRUCT_SIZE(attnrt_backward_args, block_table)
#define ATTNRT_HOST_INFO_SIZE_V1_0 ATTNRT_STRUCT_SIZE(attnrt_host_info, log_user_data)
#define ATTNRT_PLUGIN_API_SIZE_V1_0 ATTNRT_STRUCT_SIZE(attnrt_plugin_api, backward)

/* ABI 1.1: the extension header, and attnrt_attention_desc.extensions */
#define ATTNRT_EXTENSION_SIZE_V1_1 ATTNRT_STRUCT_SIZE(attnrt_extension, next)
#define ATTNRT_ATTENTION_DESC_SIZE_V1_1 ATTNRT_STRUCT_SIZE(attnrt_attention_desc, extensions)

/* ABI 1.2: the function table's append_kv, and attnrt_append_kv_args */
#define ATTNRT_PLUGIN_API_SIZE_V1_2 ATTNRT_STRUCT_SIZE(attnrt_plugin_api, append_kv)
#define ATTNRT_APPEND_KV_ARGS_SIZE_V1_2 ATTNRT_STRUCT_SIZE(attnrt_append_kv_args, v_cache)

/* ABI 1.3: the flex_attention extension block */
#define ATTNRT_FLEX_ATTENTION_SIZE_V1_3 ATTNRT_STRUCT_SIZE(attnrt_flex_attention, full_q_indices)

/* ABI 1.4: the function table's create_block_mask, and attnrt_block_mask_args */
#define ATTNRT_PLUGIN_API_SIZE_V1_4 ATTNRT_STRUCT_SIZE(attnrt_plugin_api, create_block_mask)
#define ATTNRT_BLOCK_MASK_ARGS_SIZE_V1_4 ATTNRT_STRUCT_SIZE(attnrt_block_mask_args, full_q_indices)

/* ---------------------------------------------------------------- layout asserts */

/* On every target: struct_size first, the function table's frozen head, appended fields after
 * the previous version's end (so an older writer's struct_size can never claim them). */
ATTNRT_STATIC_ASSERT(offsetof(attnrt_plugin_api, struct_size) == 0, plugin_api_struct_size_at_0);
ATTNRT_STATIC_ASSERT(offsetof(attnrt_plugin_api, abi_major) == sizeof(size_t), plugin_api_abi_major_frozen);
ATTNRT_STATIC_ASSERT(offsetof(attnrt_plugin_api, abi_minor) == sizeof(size_t) + 4, plugin_api_abi_minor_frozen);
ATTNRT_STATIC_ASSERT(offsetof(attnrt_message, struct_size) == 0, message_struct_size_at_0);
ATTNRT_STATIC_ASSERT(offsetof(attnrt_capabilities, struct_size) == 0, capabilities_struct_size_at_0);
ATTNRT_STATIC_ASSERT(offsetof(attnrt_attention_desc, struct_size) == 0, attention_desc_struct_size_at_0);
ATTNRT_STATIC_ASSERT(offsetof(attnrt_exec, struct_size) == 0, exec_struct_size_at_0);
ATTNRT_STATIC_ASSERT(offsetof(attnrt_forward_args, struct_size) == 0, forward_args_struct_size_at_0);
ATTNRT_STATIC_ASSERT(offsetof(attnrt_backward_args, struct_size) == 0, backward_args_struct_size_at_0);
ATTNRT_STATIC_ASSERT(offsetof(attnrt_host_info, struct_size) == 0, host_info_struct_size_at_0);
ATTNRT_STATIC_ASSERT(offsetof(attnrt_extension, struct_size) == 0, extension_struct_size_at_0);
ATTNRT_STATIC_ASSERT(offsetof(attnrt_attention_desc, extensions) >= ATTNRT_ATTENTION_DESC_SIZE_V1_0,
                     attention_desc_v1_1_appended);
ATTNRT_STATIC_ASSERT(offsetof(attnrt_plugin_api, append_kv) >= ATTNRT_PLUGIN_API_SIZE_V1_0, plugin_api_v1_2_appended);
ATTNRT_STATIC_ASSERT(offsetof(attnrt_append_kv_args, struct_size) == 0, append_kv_args_struct_size_at_0);
ATTNRT_STATIC_ASSERT(offsetof(attnrt_flex_attention, header) == 0, flex_attention_header_at_0);
ATTNRT_STATIC_ASSERT(offsetof(attnrt_plugin_api, create_block_mask) >= ATTNRT_PLUGIN_API_SIZE_V1_2,
                     plugin_api_v1_4_appended);
ATTNRT_STATIC_ASSERT(offsetof(attnrt_block_mask_args, struct_size) == 0, block_mask_args_struct_size_at_0);

/* On LP64 targets (8-byte pointers and size_t: x86-64, aarch64 Linux and macOS; also Win64),
 * the values themselves, which tests/sdk/abi_layout_test.cpp pins too. */
#if defined(UINTPTR_MAX) && defined(SIZE_MAX) && UINTPTR_MAX == 0xffffffffffffffffu && SIZE_MAX == 0xffffffffffffffffu
ATTNRT_STATIC_ASSERT(offsetof(attnrt_plugin_api, abi_major) == 8, lp64_plugin_api_abi_major_at_8);
ATTNRT_STATIC_ASSERT(offsetof(attnrt_plugin_api, abi_minor) == 12, lp64_plugin_api_abi_minor_at_12);
ATTNRT_STATIC_ASSERT(ATTNRT_PLUGIN_API_HEAD_SIZE == 16, lp64_plugin_api_head_size);
ATTNRT_STATIC_ASSERT(ATTNRT_MESSAGE_SIZE_V1_0 == 24, lp64_message_size_v1_0);
ATTNRT_STATIC_ASSERT(ATTNRT_CAPABILITIES_SIZE_V1_0 == 40, lp64_capabilities_size_v1_0);
ATTNRT_STATIC_ASSERT(ATTNRT_ATTENTION_DESC_SIZE_V1_0 == 120, lp64_attention_desc_size_v1_0);
ATTNRT_STATIC_ASSERT(ATTNRT_EXEC_SIZE_V1_0 == 36, lp64_exec_size_v1_0); /* sizeof: 40 */
ATTNRT_STATIC_ASSERT(ATTNRT_FORWARD_ARGS_SIZE_V1_0 == 96, lp64_forward_args_size_v1_0);
ATTNRT_STATIC_ASSERT(ATTNRT_BACKWARD_ARGS_SIZE_V1_0 == 136, lp64_backward_args_size_v1_0);
ATTNRT_STATIC_ASSERT(ATTNRT_HOST_INFO_SIZE_V1_0 == 32, lp64_host_info_size_v1_0);
ATTNRT_STATIC_ASSERT(ATTNRT_PLUGIN_API_SIZE_V1_0 == 96, lp64_plugin_api_size_v1_0);
ATTNRT_STATIC_ASSERT(ATTNRT_EXTENSION_SIZE_V1_1 == 24, lp64_extension_size_v1_1);
ATTNRT_STATIC_ASSERT(ATTNRT_ATTENTION_DESC_SIZE_V1_1 == 128, lp64_attention_desc_size_v1_1);
ATTNRT_STATIC_ASSERT(ATTNRT_PLUGIN_API_SIZE_V1_2 == 104, lp64_plugin_api_size_v1_2);
ATTNRT_STATIC_ASSERT(ATTNRT_APPEND_KV_ARGS_SIZE_V1_2 == 48, lp64_append_kv_args_size_v1_2);
ATTNRT_STATIC_ASSERT(ATTNRT_FLEX_ATTENTION_SIZE_V1_3 == 152, lp64_flex_attention_size_v1_3);
ATTNRT_STATIC_ASSERT(ATTNRT_PLUGIN_API_SIZE_V1_4 == 112, lp64_plugin_api_size_v1_4);
ATTNRT_STATIC_ASSERT(ATTNRT_BLOCK_MASK_ARGS_SIZE_V1_4 == 72, lp64_block_mask_args_size_v1_4);
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNRT_PLUGIN_ABI_H_ */
