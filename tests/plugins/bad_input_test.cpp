// Bad arguments come back as errors that name the tensor and the expectation, never a crash
// or a silently wrong result: through the runtime (which validates first) and straight through
// each plugin's C function table (which must validate on its own).
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/error.hpp>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace attnrt {
namespace {

struct Msg {
  char text[2048] = {0};
  attnrt_message m{sizeof(attnrt_message), text, sizeof text};
};

Workload small() {
  WorkloadSpec s;
  s.batch = 2;
  s.seqlen_q = 16;
  s.heads_q = 4;
  s.heads_kv = 2;
  s.head_dim = 32;
  Workload w = make_workload(s);
  w.desc.device = DLDevice{kDLCPU, 0};
  return w;
}

// (mutation, expected message fragment)
using Mutation = std::function<void(attnrt_attention_desc&, attnrt_forward_args&, Workload&, std::vector<HostTensor>&)>;

std::vector<std::pair<Mutation, std::string>> mutations() {
  return {
      {[](auto&, auto& a, auto&, auto&) { a.q = nullptr; }, "q: required tensor is NULL"},
      {[](auto&, auto& a, auto&, auto& keep) {
         keep.emplace_back(std::vector<int64_t>{2, 16, 2, 32}, dl_float64());
         a.k = keep.back().dl();
       },
       "k: expected dtype float32, got float64"},
      {[](auto&, auto& a, auto&, auto& keep) {
         keep.emplace_back(std::vector<int64_t>{2, 16, 2, 16}, dl_float32());
         a.v = keep.back().dl();
       },
       "v: expected shape [2, 16, 2, 32], got [2, 16, 2, 16]"},
      {[](auto&, auto& a, auto&, auto& keep) {
         keep.emplace_back(std::vector<int64_t>{2, 16, 4}, dl_float32());
         a.out = keep.back().dl();
       },
       "out: expected 4 dimensions"},
      {[](auto&, auto& a, auto& w, auto&) {
         static DLTensor shifted;
         shifted = *w.q.dl();
         shifted.byte_offset = 2;  // not a multiple of 4 bytes
         a.q = &shifted;
       },
       "q: data pointer + byte_offset is not aligned"},
      {[](auto&, auto& a, auto& w, auto&) {
         static DLTensor strided;
         static int64_t strides[4] = {2048, 128, 64, 2};
         strided = *w.k.dl();
         strided.strides = strides;
         a.k = &strided;
       },
       "k: last dimension must be contiguous"},
      {[](auto&, auto& a, auto& w, auto&) {
         static DLTensor on_gpu;
         on_gpu = *w.v.dl();
         on_gpu.device = DLDevice{kDLCUDA, 0};
         a.v = &on_gpu;
       },
       "v: expected on cpu, got cuda:0"},
      {[](auto& d, auto&, auto&, auto&) { d.heads_kv = 3; }, "heads_q (4) must be a multiple of heads_kv (3)"},
      {[](auto& d, auto&, auto&, auto&) { d.head_dim = 0; }, "desc.head_dim must be > 0"},
      {[](auto& d, auto&, auto&, auto&) { d.window_left = -5; }, "window_left/window_right must be >= -1"},
      {[](auto& d, auto& a, auto&, auto&) {
         d.return_lse = 1;
         a.lse = nullptr;
       },
       "lse: required tensor is NULL"},
  };
}

TEST(BadInput, RuntimeAndPluginsRejectEachMistakeByName) {
  for (const char* plugin : {"eager", "sdpa"}) {
    auto be = test::builtin_backend(plugin);
    const attnrt_plugin_api& api = be->library().api();
    attnrt_host_info host{sizeof host, ATTNRT_ABI_VERSION_MAJOR, ATTNRT_ABI_VERSION_MINOR, nullptr, nullptr};
    attnrt_instance* inst = nullptr;
    ASSERT_EQ(api.create(&host, &inst, nullptr), ATTNRT_OK);
    for (const auto& [mutate, expected] : mutations()) {
      Workload w = small();
      std::vector<HostTensor> keep;
      keep.reserve(4);
      attnrt_attention_desc d = w.desc;
      attnrt_forward_args a = w.forward_args();
      mutate(d, a, w, keep);
      // Through the runtime.
      try {
        be->forward(d, a);
        ADD_FAILURE() << plugin << ": accepted, expected '" << expected << "'";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << plugin << ": " << e.what();
      }
      // Straight through the plugin, with a big enough workspace.
      std::vector<char> ws(1 << 22);
      attnrt_exec exec{sizeof exec, nullptr, ws.data(), ws.size(), 1};
      Msg err;
      EXPECT_EQ(api.forward(inst, &d, &a, &exec, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT) << plugin << ": " << expected;
      EXPECT_NE(std::string(err.text).find(expected), std::string::npos) << plugin << ": " << err.text;
    }
    api.destroy(inst);
  }
}

TEST(BadInput, TooSmallWorkspaceIsOutOfMemoryNotAnOverrun) {
  Workload w = small();
  attnrt_forward_args a = w.forward_args();
  for (const char* plugin : {"eager", "sdpa"}) {
    auto be = test::builtin_backend(plugin);
    const attnrt_plugin_api& api = be->library().api();
    attnrt_host_info host{sizeof host, ATTNRT_ABI_VERSION_MAJOR, ATTNRT_ABI_VERSION_MINOR, nullptr, nullptr};
    attnrt_instance* inst = nullptr;
    ASSERT_EQ(api.create(&host, &inst, nullptr), ATTNRT_OK);
    char tiny[16];
    attnrt_exec exec{sizeof exec, nullptr, tiny, sizeof tiny, 1};
    Msg err;
    EXPECT_EQ(api.forward(inst, &w.desc, &a, &exec, &err.m), ATTNRT_ERROR_OUT_OF_MEMORY) << plugin;
    EXPECT_NE(std::string(err.text).find("workspace of 16 bytes is too small"), std::string::npos) << err.text;
    api.destroy(inst);
  }
}

TEST(BadInput, MalformedCuSeqlensAreCaught) {
  WorkloadSpec s;
  s.seqlens_q = {5, 7};
  s.heads_q = 2;
  s.head_dim = 16;
  Workload w = make_workload(s);
  w.desc.device = DLDevice{kDLCPU, 0};
  w.cu_seqlens_q.data_as<int32_t>()[1] = 9;  // [0, 9, 12]: sequence 0 longer than max_seqlen 7
  attnrt_forward_args a = w.forward_args();
  try {
    test::builtin_backend("sdpa")->forward(w.desc, a);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cu_seqlens_q: sequence 0 has length 9 > max_seqlen 7"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace attnrt
