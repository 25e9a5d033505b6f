// What the extension module's source files share: a status turned into a C++ exception (the
// module's translator makes it attnrt.Error's subclass for the status), a message buffer, DLPack
// tensors held for one call, the resolved-backend handle that rings are made from, and the
// forward / backward call with the GIL released.
#ifndef ATTNRT_PYTHON_HOST_CALL_HPP_
#define ATTNRT_PYTHON_HOST_CALL_HPP_

#include <attnrt/host_api.h>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace attnrt_python {

namespace nb = nanobind;

struct StatusError {
  attnrt_status status;
  std::string message;
};

struct Message {
  char text[4096];  // not zeroed whole: a call that succeeds (most) never reads it
  attnrt_message m{sizeof(attnrt_message), text, sizeof text};
  Message() { text[0] = '\0'; }
};

inline void check(attnrt_status status, const Message& msg) {
  if (status != ATTNRT_OK) throw StatusError{status, msg.text};
}

// A DLPack tensor held for the duration of a call: the ndarray keeps the producer's memory alive,
// `dl` is what the host API reads (strides always given, in elements; no tensor of the API has
// more than kMaxDims dimensions, and one with more is passed without strides for the host API to
// refuse by its rank).
struct Tensor {
  static constexpr size_t kMaxDims = 8;
  nb::ndarray<> array;
  int64_t strides[kMaxDims] = {0};
  DLTensor dl{};

  Tensor() = default;
  void hold(nb::ndarray<> a) {
    array = std::move(a);
    const size_t ndim = array.ndim();
    if (ndim <= kMaxDims) {
      int64_t expected = 1;
      for (size_t i = ndim; i-- > 0;) {
        strides[i] = array.stride_ptr() ? array.stride_ptr()[i] : expected;
        expected *= array.shape(i);
      }
    }
    dl.data = const_cast<void*>(array.data());
    dl.device = DLDevice{static_cast<DLDeviceType>(array.device_type()), array.device_id()};
    dl.ndim = static_cast<int32_t>(ndim);
    const nb::dlpack::dtype t = array.dtype();
    dl.dtype = DLDataType{t.code, t.bits, t.lanes};
    dl.shape = const_cast<int64_t*>(array.shape_ptr());
    dl.strides = ndim <= kMaxDims ? strides : const_cast<int64_t*>(array.stride_ptr());
    dl.byte_offset = 0;
  }
};

using OptArray = std::optional<nb::ndarray<>>;

// The tensors of one call (at most kMax: the backward arguments' count), kept where they are,
// without a heap allocation per call.
struct Call {
  static constexpr size_t kMax = 20;
  std::array<Tensor, kMax> held;
  size_t count = 0;
  DLTensor* add(const OptArray& a) {
    if (!a) return nullptr;
    if (count == kMax) throw std::logic_error("attnrt binding: more than 20 tensors in one call");
    Tensor& t = held[count++];
    t.hold(*a);
    return &t.dl;
  }
};

// The arguments every forward has (the dense ones; varlen, paged and ALiBi are the caller's to
// add), held in c.
inline attnrt_forward_args dense_forward_args(Call& c, const nb::ndarray<>& q, const nb::ndarray<>& k,
                                              const nb::ndarray<>& v, const nb::ndarray<>& out, const OptArray& lse,
                                              const OptArray& sinks) {
  attnrt_forward_args a{};
  a.struct_size = sizeof a;
  a.q = c.add(q);
  a.k = c.add(k);
  a.v = c.add(v);
  a.out = c.add(out);
  a.lse = c.add(lse);
  a.sinks = c.add(sinks);
  return a;
}

// The same for a backward.
inline attnrt_backward_args dense_backward_args(Call& c, const nb::ndarray<>& dout, const nb::ndarray<>& q,
                                                const nb::ndarray<>& k, const nb::ndarray<>& v,
                                                const nb::ndarray<>& out, const nb::ndarray<>& lse,
                                                const nb::ndarray<>& dq, const nb::ndarray<>& dk,
                                                const nb::ndarray<>& dv, const OptArray& dsinks,
                                                const OptArray& sinks) {
  attnrt_backward_args a{};
  a.struct_size = sizeof a;
  a.dout = c.add(dout);
  a.q = c.add(q);
  a.k = c.add(k);
  a.v = c.add(v);
  a.out = c.add(out);
  a.lse = c.add(lse);
  a.dq = c.add(dq);
  a.dk = c.add(dk);
  a.dv = c.add(dv);
  a.dsinks = c.add(dsinks);
  a.sinks = c.add(sinks);
  return a;
}

// A resolved backend (attnrt_resolve's handle), released with the Python object; a ring made
// from it keeps the backend itself alive (host_api.h).
struct Backend {
  attnrt_backend_handle* handle = nullptr;
  explicit Backend(attnrt_backend_handle* h) : handle(h) {}
  ~Backend() { attnrt_backend_release(handle); }
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  std::string name() const { return attnrt_backend_name(handle); }
};

// The caller's workspace: a byte buffer (any DLPack tensor on the call's device) that is
// over-allocated by up to 255 bytes; the call uses its first 256-byte aligned address.
inline attnrt_exec make_exec(const OptArray& workspace, uintptr_t stream, int32_t num_threads) {
  attnrt_exec exec{sizeof(attnrt_exec), reinterpret_cast<void*>(stream), nullptr, 0, num_threads};
  if (workspace) {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(workspace->data());
    size_t bytes = workspace->nbytes();
    const uintptr_t aligned = (begin + 255) / 256 * 256;
    bytes = bytes > aligned - begin ? bytes - (aligned - begin) : 0;
    exec.workspace = bytes ? reinterpret_cast<void*>(aligned) : nullptr;
    exec.workspace_size = bytes;
  }
  return exec;
}

// One call that takes an attnrt_exec (forward, backward, append_kv, create_block_mask) with the
// GIL released, into the caller's workspace always (none when `workspace` is None): nothing is
// allocated on this path.
template <class Args, class WithWorkspace>
inline void call_with_workspace(const Backend& self, const attnrt_attention_desc& desc, const Args& a,
                                const OptArray& workspace, uintptr_t stream, int32_t num_threads,
                                WithWorkspace with_workspace) {
  Message msg;
  attnrt_status status;
  {
    nb::gil_scoped_release release;
    const attnrt_exec exec = make_exec(workspace, stream, num_threads);
    status = with_workspace(self.handle, &desc, &a, &exec, &msg.m);
  }
  check(status, msg);
}

// The same into the caller's workspace when one is given, else into attnrt's own.
template <class Args, class Plain, class WithWorkspace>
inline void call_backend(const Backend& self, const attnrt_attention_desc& desc, const Args& a,
                         const OptArray& workspace, uintptr_t stream, int32_t num_threads, Plain plain,
                         WithWorkspace with_workspace) {
  if (workspace) return call_with_workspace(self, desc, a, workspace, stream, num_threads, with_workspace);
  Message msg;
  attnrt_status status;
  {
    nb::gil_scoped_release release;
    status = plain(self.handle, &desc, &a, num_threads, reinterpret_cast<void*>(stream), &msg.m);
  }
  check(status, msg);
}

// ring_bindings.cpp: InProcessGroup, Transport, Ring, RingLayout and nccl_unique_id.
void bind_context_parallel(nb::module_& m);

}  // namespace attnrt_python

#endif  // ATTNRT_PYTHON_HOST_CALL_HPP_
