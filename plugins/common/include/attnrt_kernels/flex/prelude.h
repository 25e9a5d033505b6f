// What flex_attention mods see besides their parameters (the SDK README's "flex_attention mods"
// is the contract): aux tensors as read-only views, scalars, and the call context they come
// from. This file is both a header of the plugins (which fill Context) and the text placed
// before every compiled mod (embedded at build time), so the two can never disagree. It is
// compiled by the host C++ compiler (CPU path) and by NVRTC (CUDA path): no includes, no
// standard library, `long long` for 64-bit. The includer defines ATTNRT_FLEX_FN (inline, or
// __device__ __forceinline__) and, on the host, ATTNRT_FLEX_CHECKED to bounds-check aux reads.
#ifndef ATTNRT_FLEX_PRELUDE_H_
#define ATTNRT_FLEX_PRELUDE_H_

namespace attnrt_flex {

enum { kMaxAux = 16, kMaxScalars = 64, kMaxAuxDims = 4 };

// One call's aux tensors and scalars (attnrt_flex_attention.aux / .scalars), by index.
struct Context {
  const void* aux[kMaxAux];
  long long shape[kMaxAux][kMaxAuxDims];
  long long stride[kMaxAux][kMaxAuxDims];  // in elements, as DLPack's
  float scalars[kMaxScalars];
  int* error;  // host: set to 1 + the aux index of the first out-of-bounds read; NULL on a GPU
};

// auxN in a mod: auxN(i, j) reads element [i, j] through the tensor's strides; auxN.size(d) is
// extent d. An index count different from the tensor's rank does not compile.
template <class T, int N>
struct View {
  const T* data;
  const long long* shape;
  const long long* stride;
  int index;
  const Context* ctx;

  ATTNRT_FLEX_FN long long size(int d) const { return d >= 0 && d < N ? shape[d] : 0; }

  template <class... I>
  ATTNRT_FLEX_FN T operator()(I... i) const {
    static_assert(sizeof...(I) == N, "an aux tensor is indexed with as many indices as it has dimensions");
    const long long idx[N] = {static_cast<long long>(i)...};
    long long offset = 0;
    for (int d = 0; d < N; ++d) {
#ifdef ATTNRT_FLEX_CHECKED
      if (idx[d] < 0 || idx[d] >= shape[d]) {
        if (ctx->error != 0) __atomic_store_n(ctx->error, index + 1, __ATOMIC_RELAXED);
        return T(0);
      }
#endif
      offset += idx[d] * stride[d];
    }
    return data[offset];
  }
};

template <class T, int N>
ATTNRT_FLEX_FN View<T, N> view(const Context& c, int i) {
  return View<T, N>{static_cast<const T*>(c.aux[i]), c.shape[i], c.stride[i], i, &c};
}

}  // namespace attnrt_flex

#endif  // ATTNRT_FLEX_PRELUDE_H_
