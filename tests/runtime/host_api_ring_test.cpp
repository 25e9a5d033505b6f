// Context parallelism through the C host API (host_api.h, issue 20): a runtime resolves the CPU
// eager or sdpa plugin for the global descriptor, every rank (a thread) takes its end of an
// in-process group and makes a ring of the two, and the shards' out, LSE, dq, dk and dv must
// equal the same backend's single call on the whole sequence (through attnrt_backend_forward /
// _backward). Then the refusals: each names what is wrong, NCCL missing included.
#include "ring_case.hpp"
#include "test_support.hpp"

#include <attnrt/host_api.h>
#include <attnrt/harness/reference.hpp>
#include <attnrt/harness/workload.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace attnrt {
namespace {

struct Msg {
  char text[4096] = {0};
  attnrt_message m{sizeof(attnrt_message), text, sizeof text};
};

bool has(const char* text, const std::string& part) { return std::string(text).find(part) != std::string::npos; }

WorkloadSpec spec_of(int32_t seqlen, bool causal) {
  WorkloadSpec s;
  s.batch = 2;
  s.seqlen_q = seqlen;
  s.heads_q = 4;
  s.heads_kv = 2;
  s.head_dim = 16;
  s.causal = causal;
  return s;
}

// A runtime with the embedded default configuration and a backend resolved for w.desc (which
// the resolution completes with the device).
struct Resolved {
  attnrt_runtime* runtime = nullptr;
  attnrt_backend_handle* backend = nullptr;
  Resolved(const char* plugin, attnrt_attention_desc& desc) {
    Msg err;
    EXPECT_EQ(attnrt_runtime_create(nullptr, nullptr, 0, &runtime, &err.m), ATTNRT_OK) << err.text;
    EXPECT_EQ(attnrt_resolve(runtime, "attn_implementation", plugin, &desc, &backend, &err.m), ATTNRT_OK) << err.text;
  }
  ~Resolved() {
    attnrt_backend_release(backend);
    attnrt_runtime_destroy(runtime);
  }
};

// Every rank of `world` as a thread: its transport, its ring, forward then backward through the
// C API. The shards' results in whole-sequence order; a failing rank's message fails the test.
// Varlen workloads (w.desc.is_varlen) pass packed shards cut per sequence and the whole batch's
// cu_seqlens.
test::RingResult run_c_ring(attnrt_backend_handle* backend, Workload& w, int world, attnrt_ring_layout layout) {
  const cp::Layout cut = layout == ATTNRT_RING_ZIGZAG ? cp::Layout::zigzag : cp::Layout::contiguous;
  const bool varlen = w.desc.is_varlen != 0;
  std::vector<int64_t> cu;
  for (int64_t i = 0; varlen && i < w.cu_seqlens_q.numel(); ++i) cu.push_back(int64_t(w.cu_seqlens_q.get(i)));
  const cp::SequenceSplit split =
      varlen ? cp::SequenceSplit() : cp::SequenceSplit(cut, world, w.desc.seqlen_q, w.desc.seqlen_k);
  attnrt_in_process_group* group = nullptr;
  Msg err;
  EXPECT_EQ(attnrt_in_process_group_create(world, 30000, &group, &err.m), ATTNRT_OK) << err.text;
  struct Rank {
    std::vector<int64_t> q_rows, k_rows;
    HostTensor q, k, v, dout, out, lse, dq, dk, dv;
    std::string error;
  };
  std::vector<Rank> ranks(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    Rank& x = ranks[r];
    if (varlen) {
      x.q_rows = x.k_rows = test::varlen_global_rows(cu, cut, world, r);
      const auto take = [](const HostTensor& t, const std::vector<int64_t>& rows) {
        return test::take_packed_rows(t, rows);
      };
      x.q = take(w.q, x.q_rows), x.k = take(w.k, x.k_rows), x.v = take(w.v, x.k_rows);
      x.dout = take(w.dout, x.q_rows), x.out = take(w.out, x.q_rows);
      x.lse = HostTensor({w.desc.heads_q, static_cast<int64_t>(x.q_rows.size())}, dl_float32());
    } else {
      x.q_rows = test::global_rows(split, r, false);
      x.k_rows = test::global_rows(split, r, true);
      x.q = test::take_rows(w.q, x.q_rows), x.k = test::take_rows(w.k, x.k_rows);
      x.v = test::take_rows(w.v, x.k_rows);
      x.dout = test::take_rows(w.dout, x.q_rows);
      x.out = test::take_rows(w.out, x.q_rows);
      x.lse = HostTensor({w.desc.batch, w.desc.heads_q, split.shard_q()}, dl_float32());
    }
    x.dq = x.q, x.dk = x.k, x.dv = x.v;
    for (HostTensor* t : {&x.out, &x.lse, &x.dq, &x.dk, &x.dv}) t->fill_nan();  // a row never written fails
  }
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      Rank& x = ranks[r];
      Msg e;
      attnrt_transport* transport = nullptr;
      attnrt_ring* ring = nullptr;
      if (attnrt_in_process_group_transport(group, r, &transport, &e.m) != ATTNRT_OK ||
          attnrt_ring_create(backend, transport, layout, &ring, &e.m) != ATTNRT_OK) {
        x.error = e.text;
        attnrt_transport_destroy(transport);
        return;
      }
      // The ring keeps the transport it was made with: the handle may go now.
      attnrt_transport_destroy(transport);
      attnrt_forward_args fa{};
      fa.struct_size = sizeof fa;
      fa.q = x.q.dl(), fa.k = x.k.dl(), fa.v = x.v.dl(), fa.out = x.out.dl(), fa.lse = x.lse.dl();
      attnrt_backward_args ba{};
      ba.struct_size = sizeof ba;
      ba.dout = x.dout.dl(), ba.q = x.q.dl(), ba.k = x.k.dl(), ba.v = x.v.dl(), ba.out = x.out.dl();
      ba.lse = x.lse.dl(), ba.dq = x.dq.dl(), ba.dk = x.dk.dl(), ba.dv = x.dv.dl();
      if (varlen) {
        fa.cu_seqlens_q = ba.cu_seqlens_q = w.cu_seqlens_q.dl();
        fa.cu_seqlens_k = ba.cu_seqlens_k = w.cu_seqlens_k.dl();
      }
      if (attnrt_ring_forward(ring, &w.desc, &fa, 1, nullptr, &e.m) != ATTNRT_OK ||
          attnrt_ring_backward(ring, &w.desc, &ba, 1, nullptr, &e.m) != ATTNRT_OK) {
        x.error = e.text;
      }
      attnrt_ring_destroy(ring);
    });
  }
  for (auto& t : threads) t.join();
  attnrt_in_process_group_destroy(group);
  test::RingResult res;
  for (int r = 0; r < world; ++r) {
    const Rank& x = ranks[r];
    EXPECT_EQ(x.error, "") << "rank " << r;
    if (varlen) {
      for (auto [t, out] :
           {std::pair{&x.out, &res.out}, {&x.lse, &res.lse}, {&x.dq, &res.dq}, {&x.dk, &res.dk}, {&x.dv, &res.dv}}) {
        test::put_packed_rows(*t, x.q_rows, cu.back(), *out);
      }
      continue;
    }
    test::put_rows(x.out, x.q_rows, w.desc.seqlen_q, res.out);
    test::put_rows(x.lse, x.q_rows, w.desc.seqlen_q, res.lse);
    test::put_rows(x.dq, x.q_rows, w.desc.seqlen_q, res.dq);
    test::put_rows(x.dk, x.k_rows, w.desc.seqlen_k, res.dk);
    test::put_rows(x.dv, x.k_rows, w.desc.seqlen_k, res.dv);
  }
  return res;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

struct Case {
  const char* name;
  int world;
  attnrt_ring_layout layout;
  const char* plugin;
  bool causal;
  bool varlen = false;  // a packed batch of 3 sequences (lengths multiples of 2 * 3)
};

class HostApiRing : public ::testing::TestWithParam<Case> {};

// The tolerance of ContextParallel's cases (context_parallel_test.cpp says why 5e-6): the C API
// adds no arithmetic, only handles.
TEST_P(HostApiRing, MatchesTheSingleCall) {
  const Case& c = GetParam();
  WorkloadSpec spec = spec_of(48, c.causal);
  spec.seed = static_cast<uint64_t>(c.world * 10 + c.layout);
  if (c.varlen) spec.seqlens_q = {12, 36, 24};
  Workload w = make_workload(spec);
  Resolved resolved(c.plugin, w.desc);
  ASSERT_NE(resolved.backend, nullptr);
  Msg err;
  attnrt_forward_args fa = w.forward_args();
  ASSERT_EQ(attnrt_backend_forward(resolved.backend, &w.desc, &fa, 1, nullptr, &err.m), ATTNRT_OK) << err.text;
  attnrt_backward_args ba = w.backward_args();
  ASSERT_EQ(attnrt_backend_backward(resolved.backend, &w.desc, &ba, 1, nullptr, &err.m), ATTNRT_OK) << err.text;
  const std::vector<double> out = test::values(w.out), lse = test::values(w.lse), dq = test::values(w.dq),
                            dk = test::values(w.dk), dv = test::values(w.dv);

  const test::RingResult ring = run_c_ring(resolved.backend, w, c.world, c.layout);
  struct Check {
    const char* what;
    const std::vector<double>&got, &single;
  };
  for (const Check& k : {Check{"out", ring.out, out}, Check{"lse", ring.lse, lse}, Check{"dq", ring.dq, dq},
                         Check{"dk", ring.dk, dk}, Check{"dv", ring.dv, dv}}) {
    ASSERT_EQ(k.got.size(), k.single.size()) << k.what;
    EXPECT_LE(max_abs_error(k.got, k.single), 5e-6 * std::max(1.0, max_abs(k.single))) << k.what;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HostApiRing,
    ::testing::Values(Case{"n2_eager_causal_zigzag", 2, ATTNRT_RING_ZIGZAG, "eager", true},
                      Case{"n3_sdpa_causal_zigzag", 3, ATTNRT_RING_ZIGZAG, "sdpa", true},
                      Case{"n3_eager_full_contiguous", 3, ATTNRT_RING_CONTIGUOUS, "eager", false},
                      Case{"n2_sdpa_causal_contiguous", 2, ATTNRT_RING_CONTIGUOUS, "sdpa", true},
                      Case{"n3_sdpa_causal_zigzag_varlen", 3, ATTNRT_RING_ZIGZAG, "sdpa", true, true},
                      Case{"n2_eager_full_contiguous_varlen", 2, ATTNRT_RING_CONTIGUOUS, "eager", false, true}),
    [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

// Handles and arguments: every failure names the function and what is wrong.
TEST(HostApiRingErrors, BadArgumentsAreNamed) {
  Msg err;
  attnrt_in_process_group* group = nullptr;
  EXPECT_EQ(attnrt_in_process_group_create(0, 0, &group, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(err.text, "attnrt_in_process_group_create: world_size must be >= 1, got 0")) << err.text;
  EXPECT_EQ(attnrt_in_process_group_create(2, -5, &group, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(err.text, "timeout_ms must be >= 0 (0: 60 s), got -5")) << err.text;
  EXPECT_EQ(group, nullptr);
  ASSERT_EQ(attnrt_in_process_group_create(2, 0, &group, &err.m), ATTNRT_OK) << err.text;
  attnrt_transport* transport = nullptr;
  EXPECT_EQ(attnrt_in_process_group_transport(group, 2, &transport, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(err.text, "attnrt_in_process_group_transport: rank 2 is outside [0, 2)")) << err.text;
  ASSERT_EQ(attnrt_in_process_group_transport(group, 1, &transport, &err.m), ATTNRT_OK) << err.text;
  attnrt_in_process_group_destroy(group);  // the transport keeps the group
  EXPECT_EQ(attnrt_transport_rank(transport), 1);
  EXPECT_EQ(attnrt_transport_world_size(transport), 2);
  EXPECT_STREQ(attnrt_transport_name(transport), "in-process");
  EXPECT_EQ(attnrt_transport_rank(nullptr), -1);
  EXPECT_EQ(attnrt_transport_synchronize(transport, nullptr, &err.m), ATTNRT_OK) << err.text;  // CPU: done
  EXPECT_EQ(attnrt_transport_synchronize(nullptr, nullptr, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(err.text, "attnrt_transport_synchronize: transport must not be NULL")) << err.text;

  attnrt_ring* ring = nullptr;
  EXPECT_EQ(attnrt_ring_create(nullptr, transport, ATTNRT_RING_ZIGZAG, &ring, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(err.text, "attnrt_ring_create: backend must not be NULL")) << err.text;
  Workload w = make_workload(spec_of(48, true));
  Resolved resolved("sdpa", w.desc);
  EXPECT_EQ(attnrt_ring_create(resolved.backend, transport, 7, &ring, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(err.text, "layout 7 is not ATTNRT_RING_ZIGZAG (0) or ATTNRT_RING_CONTIGUOUS (1)")) << err.text;
  EXPECT_EQ(ring, nullptr);
  ASSERT_EQ(attnrt_ring_create(resolved.backend, transport, ATTNRT_RING_ZIGZAG, &ring, &err.m), ATTNRT_OK) << err.text;
  attnrt_transport_destroy(transport);
  attnrt_forward_args fa = w.forward_args();
  EXPECT_EQ(attnrt_ring_forward(ring, &w.desc, nullptr, 1, nullptr, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(err.text, "attnrt_ring_forward: args must not be NULL")) << err.text;
  EXPECT_EQ(attnrt_ring_backward(nullptr, &w.desc, nullptr, 1, nullptr, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(err.text, "attnrt_ring_backward: ring must not be NULL")) << err.text;

  // The whole sequence as this rank's shard: twice the rows a shard of 2 ranks has, named before
  // anything is sent (so this lone rank does not wait for its partner).
  EXPECT_EQ(attnrt_ring_forward(ring, &w.desc, &fa, 1, nullptr, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(err.text,
                  "q must be rank 1's shard (global seqlen_q 48, seqlen_k 48 over 2 ranks, zigzag layout) "
                  "[2, 24, 4, 16], got [2, 48, 4, 16]"))
      << err.text;
  attnrt_ring_destroy(ring);
}

// What a ring cannot run is said beforehand (ATTNRT_OK and the reason), and refused by the call
// with the same reason.
TEST(HostApiRingErrors, UnsupportedReasonAndRefusal) {
  Workload w = make_workload(spec_of(50, true));  // 50 is not a multiple of 2 * 2 = 4 chunks
  Resolved resolved("sdpa", w.desc);
  Msg err, reason;
  attnrt_in_process_group* group = nullptr;
  ASSERT_EQ(attnrt_in_process_group_create(2, 1000, &group, &err.m), ATTNRT_OK) << err.text;
  attnrt_transport* transport = nullptr;
  ASSERT_EQ(attnrt_in_process_group_transport(group, 0, &transport, &err.m), ATTNRT_OK) << err.text;
  attnrt_ring* ring = nullptr;
  ASSERT_EQ(attnrt_ring_create(resolved.backend, transport, ATTNRT_RING_ZIGZAG, &ring, &err.m), ATTNRT_OK) << err.text;
  EXPECT_EQ(attnrt_ring_unsupported_reason(ring, &w.desc, 0, &reason.m), ATTNRT_OK);
  EXPECT_TRUE(has(reason.text, "seqlen_q 50 is not a positive multiple of 4")) << reason.text;
  attnrt_forward_args fa = w.forward_args();
  EXPECT_EQ(attnrt_ring_forward(ring, &w.desc, &fa, 1, nullptr, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(err.text, "seqlen_q 50 is not a positive multiple of 4")) << err.text;

  WorkloadSpec sinks = spec_of(48, true);
  sinks.sinks = true;
  Workload s = make_workload(sinks);
  s.desc.device = w.desc.device;
  EXPECT_EQ(attnrt_ring_unsupported_reason(ring, &s.desc, 1, &reason.m), ATTNRT_OK);
  EXPECT_TRUE(has(reason.text, "sinks are not supported")) << reason.text;
  attnrt_forward_args sa = s.forward_args();
  EXPECT_EQ(attnrt_ring_forward(ring, &s.desc, &sa, 1, nullptr, &err.m), ATTNRT_ERROR_UNSUPPORTED);
  EXPECT_TRUE(has(err.text, "sinks are not supported")) << err.text;

  Workload ok = make_workload(spec_of(48, true));
  ok.desc.device = w.desc.device;
  EXPECT_EQ(attnrt_ring_unsupported_reason(ring, &ok.desc, 1, &reason.m), ATTNRT_OK);
  EXPECT_STREQ(reason.text, "");
  EXPECT_EQ(attnrt_ring_unsupported_reason(ring, nullptr, 0, &reason.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(reason.text, "attnrt_ring_unsupported_reason: desc must not be NULL")) << reason.text;
  attnrt_ring_destroy(ring);
  attnrt_transport_destroy(transport);
  attnrt_in_process_group_destroy(group);
}

// A rank that fails aborts the group: its partner's call returns ATTNRT_ERROR_DEVICE naming the
// failing rank and its reason, instead of waiting for blocks that never come.
TEST(HostApiRingErrors, FailingRankFailsItsPartnerWithItsName) {
  Workload w = make_workload(spec_of(48, true));
  Resolved resolved("eager", w.desc);
  const cp::SequenceSplit split(cp::Layout::zigzag, 2, 48, 48);
  attnrt_in_process_group* group = nullptr;
  Msg err;
  ASSERT_EQ(attnrt_in_process_group_create(2, 20000, &group, &err.m), ATTNRT_OK) << err.text;
  attnrt_status status[2] = {ATTNRT_OK, ATTNRT_OK};
  std::string message[2];
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      const auto rows = test::global_rows(split, r, false);
      HostTensor q = test::take_rows(w.q, rows), k = test::take_rows(w.k, rows), v = test::take_rows(w.v, rows);
      HostTensor out = test::take_rows(w.out, rows), lse({2, 4, 24}, dl_float32());
      if (r == 1) lse = HostTensor({2, 4, 23}, dl_float32());  // one row short
      attnrt_forward_args fa{};
      fa.struct_size = sizeof fa;
      fa.q = q.dl(), fa.k = k.dl(), fa.v = v.dl(), fa.out = out.dl(), fa.lse = lse.dl();
      Msg e;
      attnrt_transport* transport = nullptr;
      attnrt_ring* ring = nullptr;
      EXPECT_EQ(attnrt_in_process_group_transport(group, r, &transport, &e.m), ATTNRT_OK) << e.text;
      EXPECT_EQ(attnrt_ring_create(resolved.backend, transport, ATTNRT_RING_ZIGZAG, &ring, &e.m), ATTNRT_OK) << e.text;
      status[r] = attnrt_ring_forward(ring, &w.desc, &fa, 1, nullptr, &e.m);
      message[r] = e.text;
      attnrt_ring_destroy(ring);
      attnrt_transport_destroy(transport);
    });
  }
  for (auto& t : threads) t.join();
  attnrt_in_process_group_destroy(group);
  EXPECT_EQ(status[1], ATTNRT_ERROR_INVALID_ARGUMENT) << message[1];
  EXPECT_TRUE(has(message[1].c_str(), "lse must be rank 1's shard")) << message[1];
  EXPECT_EQ(status[0], ATTNRT_ERROR_DEVICE) << message[0];
  EXPECT_TRUE(has(message[0].c_str(), "aborted: rank 1: context parallel: lse must be")) << message[0];
}

// Without libnccl (ATTNRT_NCCL_LIBRARY naming a file that does not exist) every NCCL entry point
// is ATTNRT_ERROR_UNSUPPORTED naming the file; arguments are checked first.
TEST(HostApiRingErrors, NcclMissingIsRefusedWithTheFile) {
  ::setenv("ATTNRT_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  Msg err;
  uint8_t id[128] = {0};
  attnrt_transport* transport = nullptr;
  EXPECT_EQ(attnrt_nccl_unique_id(nullptr, id, &err.m), ATTNRT_ERROR_UNSUPPORTED);
  EXPECT_TRUE(has(err.text, "NCCL library /nonexistent/libnccl.so.2 cannot be opened")) << err.text;
  EXPECT_EQ(attnrt_nccl_transport_create(id, 0, 2, 0, nullptr, &transport, &err.m), ATTNRT_ERROR_UNSUPPORTED);
  EXPECT_TRUE(has(err.text, "/nonexistent/libnccl.so.2")) << err.text;
  int not_a_comm = 0;
  EXPECT_EQ(attnrt_nccl_transport_from_comm(&not_a_comm, 0, nullptr, &transport, &err.m), ATTNRT_ERROR_UNSUPPORTED);
  EXPECT_TRUE(has(err.text, "/nonexistent/libnccl.so.2")) << err.text;
  EXPECT_EQ(transport, nullptr);
  ::unsetenv("ATTNRT_NCCL_LIBRARY");

  EXPECT_EQ(attnrt_nccl_transport_create(id, 2, 2, 0, "/nonexistent/libnccl.so.2", &transport, &err.m),
            ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(err.text, "attnrt_nccl_transport_create: rank 2 is outside [0, world_size 2)")) << err.text;
  EXPECT_EQ(attnrt_nccl_transport_create(id, 0, 2, -1, "/nonexistent/libnccl.so.2", &transport, &err.m),
            ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(err.text, "cuda_device must be >= 0, got -1")) << err.text;
  EXPECT_EQ(attnrt_nccl_transport_from_comm(nullptr, 0, nullptr, &transport, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(err.text, "attnrt_nccl_transport_from_comm: comm must not be NULL")) << err.text;
  EXPECT_EQ(attnrt_nccl_unique_id(nullptr, nullptr, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace attnrt
