// Context parallelism (host_api.h's attnrt_ring_*, transports and in-process group; issue 20;
// docs/distributed.md) for attnrt._attnrt. Every object owns its C handle; the C handles keep
// what they were made from alive (a ring its backend and transport, an in-process transport its
// group), so the Python objects may be dropped in any order. Calls that wait for other ranks
// (NCCL's communicator creation, the ring's forward and backward) release the GIL: ranks that
// are threads of this process run their Python side meanwhile.
#include "host_call.hpp"

#include <attnrt/host_api.h>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace attnrt_python {
namespace {

struct InProcessGroup {
  attnrt_in_process_group* handle = nullptr;
  int32_t world_size = 0;
  InProcessGroup(int32_t size, int32_t timeout_ms) : world_size(size) {
    Message msg;
    check(attnrt_in_process_group_create(size, timeout_ms, &handle, &msg.m), msg);
  }
  ~InProcessGroup() { attnrt_in_process_group_destroy(handle); }
  InProcessGroup(const InProcessGroup&) = delete;
  InProcessGroup& operator=(const InProcessGroup&) = delete;
};

struct Transport {
  attnrt_transport* handle = nullptr;
  explicit Transport(attnrt_transport* h) : handle(h) {}
  ~Transport() { attnrt_transport_destroy(handle); }
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;
};

struct Ring {
  attnrt_ring* handle = nullptr;
  attnrt_ring_layout layout;
  Ring(Backend& backend, Transport& transport, attnrt_ring_layout l) : layout(l) {
    Message msg;
    check(attnrt_ring_create(backend.handle, transport.handle, static_cast<int32_t>(l), &handle, &msg.m), msg);
  }
  ~Ring() { attnrt_ring_destroy(handle); }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
};

const char* library_arg(const std::optional<std::string>& library) { return library ? library->c_str() : nullptr; }

}  // namespace

void bind_context_parallel(nb::module_& m) {
  nb::enum_<attnrt_ring_layout>(m, "RingLayout",
                                "How the global sequence is cut into shards (host_api.h): ZIGZAG, rank r holds "
                                "chunks r and 2N-1-r of 2N; CONTIGUOUS, chunk r of N")
      .value("ZIGZAG", ATTNRT_RING_ZIGZAG)
      .value("CONTIGUOUS", ATTNRT_RING_CONTIGUOUS);

  nb::class_<InProcessGroup>(m, "InProcessGroup",
                             "world_size ranks as threads of this process, exchanging through memory with NCCL's "
                             "rules (tests, and the ring on the CPU); timeout_ms bounds each wait (0: 60 s)")
      .def(nb::init<int32_t, int32_t>(), nb::arg("world_size"), nb::arg("timeout_ms") = 0)
      .def_ro("world_size", &InProcessGroup::world_size)
      .def(
          "transport",
          [](InProcessGroup& self, int32_t rank) {
            attnrt_transport* t = nullptr;
            Message msg;
            check(attnrt_in_process_group_transport(self.handle, rank, &t, &msg.m), msg);
            return new Transport(t);
          },
          nb::arg("rank"), "Rank `rank`'s end of the group (a Transport; it keeps the group alive)");

  nb::class_<Transport>(m, "Transport",
                        "One rank's end of a group: from InProcessGroup.transport, Transport.nccl or "
                        "Transport.nccl_from_comm")
      .def_prop_ro("rank", [](const Transport& t) { return attnrt_transport_rank(t.handle); })
      .def_prop_ro("world_size", [](const Transport& t) { return attnrt_transport_world_size(t.handle); })
      .def_prop_ro("name", [](const Transport& t) { return std::string(attnrt_transport_name(t.handle)); })
      .def(
          "synchronize",
          [](Transport& t, uintptr_t stream) {
            Message msg;
            attnrt_status status;
            {
              nb::gil_scoped_release release;  // may wait up to ATTNRT_NCCL_TIMEOUT_S
              status = attnrt_transport_synchronize(t.handle, reinterpret_cast<void*>(stream), &msg.m);
            }
            check(status, msg);
          },
          nb::arg("stream") = 0,
          "Blocks until the work on `stream` (a cudaStream_t as an integer; 0: the legacy default stream), "
          "the ring's transfers included, has finished; raises DeviceError when a transfer failed or made no "
          "progress within ATTNRT_NCCL_TIMEOUT_S (a peer that failed before sending), where "
          "torch.cuda.synchronize() would wait forever")
      .def_static(
          "nccl",
          [](nb::bytes unique_id, int32_t rank, int32_t world_size, int32_t cuda_device,
             std::optional<std::string> library) {
            if (unique_id.size() != 128) {
              throw StatusError{ATTNRT_ERROR_INVALID_ARGUMENT,
                                "Transport.nccl: unique_id must be the 128 bytes of nccl_unique_id(), got " +
                                    std::to_string(unique_id.size())};
            }
            uint8_t id[128];
            std::memcpy(id, unique_id.c_str(), sizeof id);
            attnrt_transport* t = nullptr;
            Message msg;
            attnrt_status status;
            {
              nb::gil_scoped_release release;  // ncclCommInitRank waits for every rank
              status =
                  attnrt_nccl_transport_create(id, rank, world_size, cuda_device, library_arg(library), &t, &msg.m);
            }
            check(status, msg);
            return new Transport(t);
          },
          nb::arg("unique_id"), nb::arg("rank"), nb::arg("world_size"), nb::arg("cuda_device"),
          nb::arg("library").none() = nb::none(),
          "A new NCCL communicator (every rank calls at the same time with the same id) on CUDA device "
          "cuda_device, owned by the transport. library: libnccl to open (None: ATTNRT_NCCL_LIBRARY, else "
          "libnccl.so.2)")
      .def_static(
          "nccl_from_comm",
          [](uintptr_t comm, int32_t cuda_device, std::optional<std::string> library) {
            attnrt_transport* t = nullptr;
            Message msg;
            check(attnrt_nccl_transport_from_comm(reinterpret_cast<void*>(comm), cuda_device, library_arg(library), &t,
                                                  &msg.m),
                  msg);
            return new Transport(t);
          },
          nb::arg("comm"), nb::arg("cuda_device"), nb::arg("library").none() = nb::none(),
          "Wraps the caller's ncclComm_t (an integer address) without taking it: the caller destroys it after "
          "the transport");

  m.def(
      "nccl_unique_id",
      [](std::optional<std::string> library) {
        uint8_t id[128];
        Message msg;
        check(attnrt_nccl_unique_id(library_arg(library), id, &msg.m), msg);
        return nb::bytes(reinterpret_cast<const char*>(id), sizeof id);
      },
      nb::arg("library").none() = nb::none(),
      "ncclGetUniqueId: the 128 bytes that rank 0 makes and the host sends to every rank");

  nb::class_<Ring>(m, "Ring",
                   "Ring attention on this rank: backend (resolved for the global descriptor) computes every "
                   "block, transport is this rank's end of the group")
      .def(nb::init<Backend&, Transport&, attnrt_ring_layout>(), nb::arg("backend"), nb::arg("transport"),
           nb::arg("layout") = ATTNRT_RING_ZIGZAG)
      .def_ro("layout", &Ring::layout)
      .def(
          "unsupported_reason",
          [](const Ring& self, const attnrt_attention_desc& desc, bool backward) {
            Message msg;
            check(attnrt_ring_unsupported_reason(self.handle, &desc, backward ? 1 : 0, &msg.m), msg);
            return std::string(msg.text);
          },
          nb::arg("desc"), nb::arg("backward") = false,
          "Why this ring cannot run desc (the global descriptor): '' when it can; the same on every rank")
      .def(
          "forward",
          [](Ring& self, const attnrt_attention_desc& desc, nb::ndarray<> q, nb::ndarray<> k, nb::ndarray<> v,
             nb::ndarray<> out, OptArray lse, OptArray sinks, uintptr_t stream, int32_t num_threads,
             OptArray cu_seqlens_q, OptArray cu_seqlens_k) {
            Call c;
            attnrt_forward_args a = dense_forward_args(c, q, k, v, out, lse, sinks);
            a.cu_seqlens_q = c.add(cu_seqlens_q);
            a.cu_seqlens_k = c.add(cu_seqlens_k);
            Message msg;
            attnrt_status status;
            {
              nb::gil_scoped_release release;
              status =
                  attnrt_ring_forward(self.handle, &desc, &a, num_threads, reinterpret_cast<void*>(stream), &msg.m);
            }
            check(status, msg);
          },
          nb::arg("desc"), nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"), nb::arg("lse").none() = nb::none(),
          nb::arg("sinks").none() = nb::none(), nb::arg("stream") = 0, nb::arg("num_threads") = 0,
          nb::arg("cu_seqlens_q").none() = nb::none(), nb::arg("cu_seqlens_k").none() = nb::none(),
          "Forward on this rank's shard (attnrt_ring_forward): desc global, q/k/v/out/lse the shard's; varlen "
          "(desc.is_varlen): q/k/v/out packed [total / N, heads, dim], lse [heads, total / N], cu_seqlens_q/k the "
          "whole batch's [batch + 1] int32 prefix sums in host memory")
      .def(
          "backward",
          [](Ring& self, const attnrt_attention_desc& desc, nb::ndarray<> dout, nb::ndarray<> q, nb::ndarray<> k,
             nb::ndarray<> v, nb::ndarray<> out, nb::ndarray<> lse, nb::ndarray<> dq, nb::ndarray<> dk,
             nb::ndarray<> dv, OptArray sinks, uintptr_t stream, int32_t num_threads, OptArray cu_seqlens_q,
             OptArray cu_seqlens_k) {
            Call c;
            attnrt_backward_args a = dense_backward_args(c, dout, q, k, v, out, lse, dq, dk, dv, std::nullopt, sinks);
            a.cu_seqlens_q = c.add(cu_seqlens_q);
            a.cu_seqlens_k = c.add(cu_seqlens_k);
            Message msg;
            attnrt_status status;
            {
              nb::gil_scoped_release release;
              status =
                  attnrt_ring_backward(self.handle, &desc, &a, num_threads, reinterpret_cast<void*>(stream), &msg.m);
            }
            check(status, msg);
          },
          nb::arg("desc"), nb::arg("dout"), nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"), nb::arg("lse"),
          nb::arg("dq"), nb::arg("dk"), nb::arg("dv"), nb::arg("sinks").none() = nb::none(), nb::arg("stream") = 0,
          nb::arg("num_threads") = 0, nb::arg("cu_seqlens_q").none() = nb::none(),
          nb::arg("cu_seqlens_k").none() = nb::none(),
          "Backward on this rank's shard (attnrt_ring_backward): dq, dk, dv written; varlen as forward");
}

}  // namespace attnrt_python
