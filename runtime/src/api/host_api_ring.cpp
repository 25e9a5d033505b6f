// The C host API of context parallelism (host_api.h, issue 20): transports and rings over
// attnrt::cp's C++ classes. Each handle holds shared ownership of what it was made from (a ring
// its backend and transport, an in-process transport its group), so a host may destroy them in
// any order, as it may a backend handle and its runtime.
#include "host_api_internal.hpp"

#include <attnrt/host_api.h>
#include <attnrt/runtime/context_parallel.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/parallel/in_process_transport.hpp>
#include <attnrt/runtime/parallel/nccl_transport.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>

using attnrt::capi::guard;
using attnrt::capi::null_argument;

struct attnrt_in_process_group {
  std::shared_ptr<attnrt::cp::InProcessGroup> group;
};

struct attnrt_transport {
  std::shared_ptr<void> owner;  // what keeps `transport` alive: its group, or itself
  attnrt::cp::Transport* transport = nullptr;
};

struct attnrt_ring {
  std::shared_ptr<attnrt::Backend> backend;
  std::shared_ptr<attnrt_transport> transport;
  attnrt::cp::Layout layout = attnrt::cp::Layout::zigzag;
};

namespace {

std::string library_name(const char* library) { return library ? library : ""; }

DLDevice cuda_device(const char* function, int32_t device) {
  if (device < 0) throw attnrt::Error(fmt::format("{}: cuda_device must be >= 0, got {}", function, device));
  return DLDevice{kDLCUDA, device};
}

attnrt_transport* own(std::unique_ptr<attnrt::cp::Transport> t) {
  auto handle = std::make_unique<attnrt_transport>();
  handle->transport = t.get();
  handle->owner = std::shared_ptr<attnrt::cp::Transport>(std::move(t));
  return handle.release();
}

// A ring per call: RingAttention is a few references and options (the stream and thread count
// are the call's), so a host may pass the stream current at each call.
attnrt::cp::RingAttention ring_for_call(attnrt_ring& ring, int32_t num_threads, void* stream) {
  return attnrt::cp::RingAttention(*ring.backend, *ring.transport->transport,
                                   attnrt::cp::RingOptions{ring.layout, num_threads, stream, nullptr});
}

}  // namespace

extern "C" {

attnrt_status attnrt_in_process_group_create(int32_t world_size, int32_t timeout_ms, attnrt_in_process_group** group,
                                             attnrt_message* error) {
  if (!group) return null_argument(error, "attnrt_in_process_group_create", "group");
  *group = nullptr;
  return guard(error, [&] {
    if (world_size < 1) {
      throw attnrt::Error(fmt::format("attnrt_in_process_group_create: world_size must be >= 1, got {}", world_size));
    }
    if (timeout_ms < 0) {
      throw attnrt::Error(
          fmt::format("attnrt_in_process_group_create: timeout_ms must be >= 0 (0: 60 s), got {}", timeout_ms));
    }
    const std::chrono::milliseconds timeout =
        timeout_ms == 0 ? std::chrono::seconds(60) : std::chrono::milliseconds(timeout_ms);
    auto handle = std::make_unique<attnrt_in_process_group>();
    handle->group = std::make_shared<attnrt::cp::InProcessGroup>(world_size, timeout);
    *group = handle.release();
  });
}

void attnrt_in_process_group_destroy(attnrt_in_process_group* group) { delete group; }

attnrt_status attnrt_in_process_group_transport(attnrt_in_process_group* group, int32_t rank,
                                                attnrt_transport** transport, attnrt_message* error) {
  if (!group || !transport) {
    return null_argument(error, "attnrt_in_process_group_transport", !group ? "group" : "transport");
  }
  *transport = nullptr;
  return guard(error, [&] {
    if (rank < 0 || rank >= group->group->world_size()) {
      throw attnrt::Error(fmt::format("attnrt_in_process_group_transport: rank {} is outside [0, {})", rank,
                                      group->group->world_size()));
    }
    auto handle = std::make_unique<attnrt_transport>();
    handle->transport = &group->group->transport(rank);
    handle->owner = group->group;
    *transport = handle.release();
  });
}

attnrt_status attnrt_nccl_unique_id(const char* library, uint8_t unique_id[128], attnrt_message* error) {
  if (!unique_id) return null_argument(error, "attnrt_nccl_unique_id", "unique_id");
  return guard(error, [&] {
    const attnrt::cp::NcclUniqueId id = attnrt::cp::nccl_unique_id(library_name(library));
    std::memcpy(unique_id, id.bytes, sizeof id.bytes);
  });
}

attnrt_status attnrt_nccl_transport_create(const uint8_t unique_id[128], int32_t rank, int32_t world_size,
                                           int32_t cuda_device_index, const char* library, attnrt_transport** transport,
                                           attnrt_message* error) {
  if (!unique_id || !transport) {
    return null_argument(error, "attnrt_nccl_transport_create", !unique_id ? "unique_id" : "transport");
  }
  *transport = nullptr;
  return guard(error, [&] {
    if (world_size < 1 || rank < 0 || rank >= world_size) {
      throw attnrt::Error(
          fmt::format("attnrt_nccl_transport_create: rank {} is outside [0, world_size {})", rank, world_size));
    }
    const DLDevice device = cuda_device("attnrt_nccl_transport_create", cuda_device_index);
    attnrt::cp::NcclUniqueId id;
    std::memcpy(id.bytes, unique_id, sizeof id.bytes);
    *transport = own(std::make_unique<attnrt::cp::NcclTransport>(id, rank, world_size, device, library_name(library)));
  });
}

attnrt_status attnrt_nccl_transport_from_comm(void* comm, int32_t cuda_device_index, const char* library,
                                              attnrt_transport** transport, attnrt_message* error) {
  if (!comm || !transport) {
    return null_argument(error, "attnrt_nccl_transport_from_comm", !comm ? "comm" : "transport");
  }
  *transport = nullptr;
  return guard(error, [&] {
    const DLDevice device = cuda_device("attnrt_nccl_transport_from_comm", cuda_device_index);
    *transport = own(std::make_unique<attnrt::cp::NcclTransport>(comm, device, library_name(library)));
  });
}

int32_t attnrt_transport_rank(const attnrt_transport* transport) {
  return transport ? transport->transport->rank() : -1;
}

int32_t attnrt_transport_world_size(const attnrt_transport* transport) {
  return transport ? transport->transport->world_size() : -1;
}

const char* attnrt_transport_name(const attnrt_transport* transport) {
  // Static storage: the two transports' names are literals.
  if (!transport) return nullptr;
  return transport->transport->name() == "nccl" ? "nccl" : "in-process";
}

void attnrt_transport_destroy(attnrt_transport* transport) { delete transport; }

attnrt_status attnrt_transport_synchronize(attnrt_transport* transport, void* stream, attnrt_message* error) {
  if (!transport) return null_argument(error, "attnrt_transport_synchronize", "transport");
  return guard(error, [&] { transport->transport->synchronize(stream); });
}

attnrt_status attnrt_ring_create(attnrt_backend_handle* backend, attnrt_transport* transport, int32_t layout,
                                 attnrt_ring** ring, attnrt_message* error) {
  if (!backend || !transport || !ring) {
    return null_argument(error, "attnrt_ring_create", !backend ? "backend" : !transport ? "transport" : "ring");
  }
  *ring = nullptr;
  return guard(error, [&] {
    if (layout != ATTNRT_RING_ZIGZAG && layout != ATTNRT_RING_CONTIGUOUS) {
      throw attnrt::Error(
          fmt::format("attnrt_ring_create: layout {} is not ATTNRT_RING_ZIGZAG (0) or ATTNRT_RING_CONTIGUOUS (1)",
                      static_cast<int>(layout)));
    }
    auto handle = std::make_unique<attnrt_ring>();
    handle->backend = backend->backend;
    // The ring shares the transport handle's ownership: a copy of the handle keeps its owner.
    handle->transport = std::make_shared<attnrt_transport>(*transport);
    handle->layout = layout == ATTNRT_RING_ZIGZAG ? attnrt::cp::Layout::zigzag : attnrt::cp::Layout::contiguous;
    *ring = handle.release();
  });
}

void attnrt_ring_destroy(attnrt_ring* ring) { delete ring; }

attnrt_status attnrt_ring_unsupported_reason(const attnrt_ring* ring, const attnrt_attention_desc* desc,
                                             int32_t is_backward, attnrt_message* reason) {
  if (!ring || !desc || !reason) {
    return null_argument(reason, "attnrt_ring_unsupported_reason", !ring ? "ring" : !desc ? "desc" : "reason");
  }
  return guard(reason, [&] {
    const attnrt::cp::RingAttention r(*ring->backend, *ring->transport->transport,
                                      attnrt::cp::RingOptions{ring->layout, 0, nullptr, nullptr});
    attnrt::sdk::write_message(reason, r.unsupported_reason(*desc, is_backward != 0).c_str());
  });
}

attnrt_status attnrt_ring_forward(attnrt_ring* ring, const attnrt_attention_desc* desc, const attnrt_forward_args* args,
                                  int32_t num_threads, void* stream, attnrt_message* error) {
  if (!ring || !desc || !args) {
    return null_argument(error, "attnrt_ring_forward", !ring ? "ring" : !desc ? "desc" : "args");
  }
  return guard(error, [&] { ring_for_call(*ring, num_threads, stream).forward(*desc, *args); });
}

attnrt_status attnrt_ring_backward(attnrt_ring* ring, const attnrt_attention_desc* desc,
                                   const attnrt_backward_args* args, int32_t num_threads, void* stream,
                                   attnrt_message* error) {
  if (!ring || !desc || !args) {
    return null_argument(error, "attnrt_ring_backward", !ring ? "ring" : !desc ? "desc" : "args");
  }
  return guard(error, [&] { ring_for_call(*ring, num_threads, stream).backward(*desc, *args); });
}

attnrt_status attnrt_backend_context_parallel(const attnrt_backend_handle* backend, int32_t* size,
                                              attnrt_ring_layout* layout, attnrt_message* error) {
  if (!backend || !size || !layout) {
    return null_argument(error, "attnrt_backend_context_parallel", !backend ? "backend" : !size ? "size" : "layout");
  }
  *size = backend->context_parallel.size;
  *layout = backend->context_parallel.layout == "contiguous" ? ATTNRT_RING_CONTIGUOUS : ATTNRT_RING_ZIGZAG;
  return ATTNRT_OK;
}

}  // extern "C"
