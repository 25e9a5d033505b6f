// libnccl's entry points as the NCCL transport calls them, resolved at run time (nccl.h's C
// declarations: opaque handles, integers and the 128-byte unique id, so no NCCL header is needed).
#pragma once

#include <attnrt/runtime/parallel/nccl_transport.hpp>

#include <cstddef>
#include <string>

namespace attnrt::cp::nccl {

using Result = int;       // ncclResult_t; 0 is ncclSuccess
using Comm = void*;       // ncclComm_t
using Stream = void*;     // cudaStream_t (a CUstream)
constexpr int kInt8 = 0;  // ncclInt8 (ncclDataType_t): counts in bytes

struct Api {
  Result (*GetVersion)(int*) = nullptr;
  Result (*GetUniqueId)(NcclUniqueId*) = nullptr;
  Result (*CommInitRank)(Comm*, int, NcclUniqueId, int) = nullptr;
  Result (*CommDestroy)(Comm) = nullptr;
  Result (*CommAbort)(Comm) = nullptr;
  Result (*CommCount)(Comm, int*) = nullptr;
  Result (*CommUserRank)(Comm, int*) = nullptr;
  Result (*CommGetAsyncError)(Comm, Result*) = nullptr;
  Result (*Send)(const void*, size_t, int, int, Comm, Stream) = nullptr;
  Result (*Recv)(void*, size_t, int, int, Comm, Stream) = nullptr;
  Result (*GroupStart)() = nullptr;
  Result (*GroupEnd)() = nullptr;
  const char* (*GetErrorString)(Result) = nullptr;
  NcclLibraryInfo info;

  // Throws attnrt::Error (ATTNRT_ERROR_DEVICE) "<what>: NCCL error N (text)" unless r is 0.
  void check(Result r, const char* what) const;
};

// The entry points of `library` (empty: ATTNRT_NCCL_LIBRARY, else libnccl.so.2), loaded once
// per name and never unloaded. Throws attnrt::Error (ATTNRT_ERROR_UNSUPPORTED) with the reason.
const Api& api(const std::string& library);

}  // namespace attnrt::cp::nccl
