// Context-parallel attention end to end on the CPU (issue 20): N = 1 to 4 ranks as threads with
// the in-process transport, the CPU sdpa or eager plugin as the local kernel. out, LSE, dq, dk, dv
// gathered from the shards must equal the same plugin's single call on the whole sequence and
// the fp64 reference, for causal and not, GQA / MQA, sliding windows, seqlen_q != seqlen_k, both
// layouts, and packed varlen batches cut per sequence; refusals and a failing rank must give clear
// errors, never a hang.
#include "ring_case.hpp"
#include "test_support.hpp"

#include <attnrt/harness/reference.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/validate.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace attnrt {
namespace {

using cp::Layout;

struct Case {
  std::string name;
  int world = 2;
  Layout layout = Layout::zigzag;
  WorkloadSpec spec;
  const char* plugin = "eager";  // the reference plugin; sdpa (tiled online softmax) where named
};

WorkloadSpec base(int32_t seqlen, int32_t heads_q, int32_t heads_kv, bool causal) {
  WorkloadSpec s;
  s.batch = 2;
  s.seqlen_q = seqlen;
  s.heads_q = heads_q;
  s.heads_kv = heads_kv;
  s.head_dim = 16;
  s.causal = causal;
  return s;
}

std::vector<Case> cases() {
  std::vector<Case> c;
  // 48 tokens: 2N equal chunks for N = 1 to 4 (zigzag), N chunks (contiguous).
  c.push_back({"n1_causal", 1, Layout::zigzag, base(48, 4, 4, true)});
  c.push_back({"n2_causal_gqa", 2, Layout::zigzag, base(48, 4, 2, true), "sdpa"});
  c.push_back({"n3_noncausal_mqa", 3, Layout::zigzag, base(48, 4, 1, false)});
  c.push_back({"n4_causal_gqa", 4, Layout::zigzag, base(48, 4, 2, true), "sdpa"});
  c.push_back({"n4_causal_contiguous", 4, Layout::contiguous, base(48, 4, 2, true)});
  c.push_back({"n3_noncausal_contiguous", 3, Layout::contiguous, base(48, 2, 2, false)});
  {
    Case k{"n3_causal_window", 3, Layout::zigzag, base(48, 4, 2, true)};
    k.spec.window_left = 5;  // shorter than a chunk (8): most blocks are skipped, some cut
    k.plugin = "sdpa";
    c.push_back(k);
  }
  {
    Case k{"n4_causal_window_contiguous", 4, Layout::contiguous, base(48, 4, 2, true)};
    k.spec.window_left = 7;  // < a chunk (12): only the previous rank's block is needed
    c.push_back(k);
  }
  {
    Case k{"n2_window_both_sides", 2, Layout::zigzag, base(48, 4, 2, false)};
    k.spec.window_left = 9;
    k.spec.window_right = 3;
    c.push_back(k);
  }
  {
    Case k{"n4_window_longer_than_chunk", 4, Layout::zigzag, base(48, 4, 4, true)};
    k.spec.window_left = 17;  // spans three chunks of 6
    c.push_back(k);
  }
  {
    Case k{"n2_cross_causal_bottom_right", 2, Layout::zigzag, base(24, 4, 2, true)};
    k.spec.seqlen_k = 48;  // causal aligned bottom-right: query i sees keys up to i + 24
    c.push_back(k);
  }
  {
    Case k{"n3_softcap_head_dim_v", 3, Layout::zigzag, base(48, 4, 2, true)};
    k.spec.softcap = 5.0f;
    k.spec.head_dim_v = 8;
    c.push_back(k);
  }
  return c;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class RingMatchesSingleDevice : public ::testing::TestWithParam<Case> {};

// fp32 tolerance, relative to max(1, max |ref|). The ring computes the same sums as one call in
// another order: each block call rounds its partial out and LSE to fp32, and the merge adds an
// exp and a log1p per block (a few ulps each). With at most 8 blocks per row of 48 keys and
// unit-normal inputs (head_dim 16), the largest differences seen from the single call are
// 1.4e-6 absolute and 5.7e-7 relative (dq, N = 3, contiguous), the same size as the single
// call's own error against fp64. 5e-6 is ~9x that, and far below what a block with a wrong mask, a merge
// with a wrong weight or a dK/dV accumulator that misses its way home gives (> 1e-2: one key's
// weight in a row of at most 48).
constexpr double kTolerance = 5e-6;

double scaled(const std::vector<double>& ref) { return kTolerance * std::max(1.0, max_abs(ref)); }

TEST_P(RingMatchesSingleDevice, OutLseAndGradients) {
  const Case& c = GetParam();
  WorkloadSpec spec = c.spec;
  spec.seed = std::hash<std::string>{}(c.name);
  Workload w = make_workload(spec);
  w.desc.device = DLDevice{kDLCPU, 0};
  auto backend = test::builtin_backend(c.plugin);

  // The single call on the whole sequence, and the fp64 reference.
  attnrt_forward_args fa = w.forward_args();
  const ReferenceForward ref = reference_forward(w.desc, fa);
  const ReferenceBackward gref = reference_backward(w.desc, fa, *w.dout.dl());
  backend->forward(w.desc, fa, 1);
  attnrt_backward_args ba = w.backward_args();
  backend->backward(w.desc, ba, 1);
  const std::vector<double> out = test::values(w.out), lse = test::values(w.lse), dq = test::values(w.dq),
                            dk = test::values(w.dk), dv = test::values(w.dv);

  const test::RingResult ring = test::run_ring(*backend, w, c.world, c.layout);
  struct Check {
    const char* what;
    const std::vector<double>&got, &single, &fp64;
  };
  for (const Check& k :
       {Check{"out", ring.out, out, ref.out}, Check{"lse", ring.lse, lse, ref.lse}, Check{"dq", ring.dq, dq, gref.dq},
        Check{"dk", ring.dk, dk, gref.dk}, Check{"dv", ring.dv, dv, gref.dv}}) {
    ASSERT_EQ(k.got.size(), k.single.size()) << k.what;
    // max_abs_error is NaN when any element is NaN (a row never written), failing EXPECT_LE.
    EXPECT_LE(max_abs_error(k.got, k.single), scaled(k.single)) << k.what << " vs the single call";
    EXPECT_LE(max_abs_error(k.got, k.fp64), scaled(k.fp64) + max_abs_error(k.single, k.fp64))
        << k.what << " vs fp64 (single call's own error " << max_abs_error(k.single, k.fp64) << ")";
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& p) { return p.param.name; }

INSTANTIATE_TEST_SUITE_P(Cases, RingMatchesSingleDevice, ::testing::ValuesIn(cases()), case_name);

// bf16 and fp16: each block call rounds its partial out to the dtype before the merge (the ABI's
// out is in desc.dtype; the accumulators are fp32), one rounding more per block than the single
// call makes. FlashAttention's rule for its own tests holds, with the single call as the
// baseline: |ring - fp64| <= 2 |single - fp64| + a floor of 2 ulps of the dtype at the result's
// scale (the single call's error is itself a rounding, so a zero there must not demand zero).
TEST(ContextParallel, LowPrecisionWithinTheFlashAttentionRule) {
  for (attnrt_dtype dtype : {ATTNRT_DTYPE_BF16, ATTNRT_DTYPE_FP16}) {
    WorkloadSpec spec = base(48, 4, 2, true);
    spec.dtype = dtype;
    spec.seed = 21 + dtype;
    Workload w = make_workload(spec);
    w.desc.device = DLDevice{kDLCPU, 0};
    auto backend = test::builtin_backend("sdpa");
    attnrt_forward_args fa = w.forward_args();
    const ReferenceForward ref = reference_forward(w.desc, fa);
    const ReferenceBackward gref = reference_backward(w.desc, fa, *w.dout.dl());
    backend->forward(w.desc, fa, 1);
    attnrt_backward_args ba = w.backward_args();
    backend->backward(w.desc, ba, 1);
    const test::RingResult ring = test::run_ring(*backend, w, 4, Layout::zigzag);
    const double ulp = dtype == ATTNRT_DTYPE_BF16 ? 0x1p-8 : 0x1p-11;
    struct Check {
      const char* what;
      std::vector<double> got, single;
      const std::vector<double>& fp64;
      double ulp;
    };
    for (const Check& k : {Check{"out", ring.out, test::values(w.out), ref.out, ulp},
                           Check{"lse", ring.lse, test::values(w.lse), ref.lse, 0x1p-23},
                           Check{"dq", ring.dq, test::values(w.dq), gref.dq, ulp},
                           Check{"dk", ring.dk, test::values(w.dk), gref.dk, ulp},
                           Check{"dv", ring.dv, test::values(w.dv), gref.dv, ulp}}) {
      const double single = max_abs_error(k.single, k.fp64), got = max_abs_error(k.got, k.fp64);
      EXPECT_LE(got, 2 * single + 2 * k.ulp * std::max(1.0, max_abs(k.fp64)))
          << sdk::dtype_name(dtype) << " " << k.what << ": single call's error " << single;
    }
  }
}

// Records the order of a rank's transfers and merges/adds: the overlap the ring is built for is
// an order of calls (post an exchange, compute, then wait), which this checks on the CPU.
class LoggingTransport final : public cp::Transport {
 public:
  LoggingTransport(cp::Transport& inner, std::vector<std::string>& log) : inner_(inner), log_(log) {}
  int rank() const override { return inner_.rank(); }
  int world_size() const override { return inner_.world_size(); }
  std::string name() const override { return "logging"; }
  std::unique_ptr<cp::PendingExchange> exchange(std::span<const cp::Transfer> sends,
                                                std::span<const cp::Transfer> receives, void* stream) override {
    log_.push_back("post");
    return std::make_unique<Pending>(inner_.exchange(sends, receives, stream), log_);
  }
  void abort(const std::string& reason) override { inner_.abort(reason); }

 private:
  struct Pending final : cp::PendingExchange {
    Pending(std::unique_ptr<cp::PendingExchange> p, std::vector<std::string>& l) : inner(std::move(p)), log(l) {}
    void wait() override {
      log.push_back("wait");
      inner->wait();
    }
    std::unique_ptr<cp::PendingExchange> inner;
    std::vector<std::string>& log;
  };
  cp::Transport& inner_;
  std::vector<std::string>& log_;
};

class LoggingOps final : public cp::BlockOps {
 public:
  explicit LoggingOps(std::vector<std::string>& log) : inner_(cp::host_block_ops()), log_(log) {}
  DLDevice device() const override { return inner_->device(); }
  std::shared_ptr<void> allocate(size_t bytes, void* stream) override { return inner_->allocate(bytes, stream); }
  void upload(const void* host, void* dst, size_t bytes, void* stream) override {
    inner_->upload(host, dst, bytes, stream);
  }
  void copy(const DLTensor& src, DLTensor& dst, void* stream) override { inner_->copy(src, dst, stream); }
  void fill(DLTensor& dst, float value, void* stream) override { inner_->fill(dst, value, stream); }
  void add(DLTensor& acc, const DLTensor& part, void* stream) override {
    log_.push_back("add");
    inner_->add(acc, part, stream);
  }
  void merge(DLTensor& out_acc, DLTensor& lse_acc, const DLTensor& out_part, const DLTensor& lse_part,
             void* stream) override {
    log_.push_back("merge");
    inner_->merge(out_acc, lse_acc, out_part, lse_part, stream);
  }

 private:
  std::unique_ptr<cp::BlockOps> inner_;
  std::vector<std::string>& log_;
};

// Two ranks, causal zigzag (chunks of 12). Forward: each step's exchange is posted before its
// merges and waited after them (step 0: three calls; step 1, the last, sends nothing). Backward:
// the K/V exchange is posted before the step's calls; the dK/dV accumulator is posted after
// them and waited inside the next step only after that step's first call (its dQ add); the
// accumulators go home at the end (the last post and wait).
TEST(ContextParallel, ExchangesAreWaitedAfterTheComputeTheyOverlap) {
  WorkloadSpec spec = base(48, 4, 2, true);
  Workload w = make_workload(spec);
  w.desc.device = DLDevice{kDLCPU, 0};
  auto backend = test::builtin_backend("sdpa");
  const cp::SequenceSplit split(Layout::zigzag, 2, 48, 48);
  cp::InProcessGroup group(2, std::chrono::seconds(20));
  std::vector<std::vector<std::string>> logs(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      try {
        const auto qr = test::global_rows(split, r, false);
        HostTensor q = test::take_rows(w.q, qr), k = test::take_rows(w.k, qr), v = test::take_rows(w.v, qr);
        HostTensor dout = test::take_rows(w.dout, qr), out = test::take_rows(w.out, qr);
        HostTensor lse({2, 4, 24}, dl_float32()), dq = q, dk = k, dv = v;
        LoggingTransport transport(group.transport(r), logs[r]);
        LoggingOps ops(logs[r]);
        cp::RingAttention ring(*backend, transport, {Layout::zigzag, 1, nullptr, &ops});
        attnrt_forward_args fa{};
        fa.struct_size = sizeof fa;
        fa.q = q.dl(), fa.k = k.dl(), fa.v = v.dl(), fa.out = out.dl(), fa.lse = lse.dl();
        ring.forward(w.desc, fa);
        logs[r].push_back("|");
        attnrt_backward_args ba{};
        ba.struct_size = sizeof ba;
        ba.dout = dout.dl(), ba.q = q.dl(), ba.k = k.dl(), ba.v = v.dl(), ba.out = out.dl(), ba.lse = lse.dl();
        ba.dq = dq.dl(), ba.dk = dk.dl(), ba.dv = dv.dl();
        ring.backward(w.desc, ba);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  const std::string fwd = "post merge merge merge wait merge |";
  // Step 0: post K/V; 3 calls of (dq, dk, dv adds); post dK/dV; wait K/V. Step 1: the call's dq
  // add, then the wait for the arriving accumulator, its dk and dv adds. Home: post, wait.
  const std::string bwd = " post add add add add add add add add add post wait add wait add add post wait";
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(errors[r], "") << r;
    std::string got;
    for (const std::string& e : logs[r]) got += (got.empty() ? "" : " ") + e;
    EXPECT_EQ(got, fwd + bwd) << "rank " << r;
  }
}

// The comparison above can fail: shards cut contiguously but run as zigzag give a visibly wrong
// result (the masks of the wrong chunks), far above the tolerance.
TEST(ContextParallel, RingCutWronglyFails) {
  WorkloadSpec spec = base(48, 4, 2, true);
  spec.seed = 7;
  Workload w = make_workload(spec);
  w.desc.device = DLDevice{kDLCPU, 0};
  auto backend = test::builtin_backend("sdpa");
  attnrt_forward_args fa = w.forward_args();
  const ReferenceForward ref = reference_forward(w.desc, fa);
  const test::RingResult right = test::run_ring(*backend, w, 2, Layout::zigzag, false);
  EXPECT_LE(max_abs_error(right.out, ref.out), scaled(ref.out));
  // Contiguous shards given to ranks that believe they hold zigzag chunks: run contiguous, then
  // read the shards back as if zigzag had cut them.
  const test::RingResult wrong = test::run_ring(*backend, w, 2, Layout::contiguous, false);
  std::vector<double> misread(wrong.out.size());
  const cp::SequenceSplit zz(Layout::zigzag, 2, 48, 48), ct(Layout::contiguous, 2, 48, 48);
  const int64_t row = 4 * 16;
  for (int r = 0; r < 2; ++r) {
    const auto zr = test::global_rows(zz, r, false), cr = test::global_rows(ct, r, false);
    for (int64_t b = 0; b < 2; ++b)
      for (size_t i = 0; i < zr.size(); ++i)
        for (int64_t e = 0; e < row; ++e) misread[(b * 48 + zr[i]) * row + e] = wrong.out[(b * 48 + cr[i]) * row + e];
  }
  EXPECT_GT(max_abs_error(misread, ref.out), 0.1);
}

// A sliding window shorter than a chunk over contiguous shards needs only the previous rank's
// block: one ring step of K/V traffic instead of N - 1, and one dK/dV return hop.
TEST(ContextParallel, WindowedRingSendsOnlyTheBlocksItNeeds) {
  WorkloadSpec spec = base(48, 4, 2, true);
  spec.window_left = 7;
  spec.seed = 11;
  Workload w = make_workload(spec);
  w.desc.device = DLDevice{kDLCPU, 0};
  auto backend = test::builtin_backend("sdpa");
  const int world = 4;
  const test::RingResult windowed = test::run_ring(*backend, w, world, Layout::contiguous);
  // Per rank: forward 1 K/V send; backward 1 K/V send, 1 dK/dV send along the ring, 1 home.
  EXPECT_EQ(windowed.messages_sent, static_cast<size_t>(world * 4));
  spec.window_left = -1;
  Workload full = make_workload(spec);
  full.desc.device = DLDevice{kDLCPU, 0};
  const test::RingResult causal = test::run_ring(*backend, full, world, Layout::contiguous);
  // Per rank: (N-1) K/V sends forward, (N-1) K/V and (N-1) dK/dV sends backward, 1 home.
  EXPECT_EQ(causal.messages_sent, static_cast<size_t>(world * (3 * (world - 1) + 1)));
  EXPECT_LT(windowed.bytes_sent * 2, causal.bytes_sent);
}

TEST(ContextParallel, RefusesWhatItCannotSplit) {
  auto backend = test::builtin_backend("sdpa");
  cp::InProcessGroup group(4);
  cp::RingAttention ring(*backend, group.transport(0));
  WorkloadSpec spec = base(50, 4, 2, true);  // 50 is not a multiple of 2 * 4 = 8
  Workload w = make_workload(spec);
  w.desc.device = DLDevice{kDLCPU, 0};
  EXPECT_NE(ring.unsupported_reason(w.desc).find("seqlen_q 50 is not a positive multiple of 8"), std::string::npos)
      << ring.unsupported_reason(w.desc);

  // Varlen is split per sequence (VarlenRing* below); its lengths are checked when the shards come.
  WorkloadSpec varlen;
  varlen.seqlens_q = {16, 32};
  varlen.heads_q = 2;
  varlen.head_dim = 16;
  Workload v = make_workload(varlen);
  v.desc.device = DLDevice{kDLCPU, 0};
  EXPECT_EQ(ring.unsupported_reason(v.desc), "");

  WorkloadSpec sinks = base(48, 4, 2, true);
  sinks.sinks = true;
  Workload s = make_workload(sinks);
  s.desc.device = DLDevice{kDLCPU, 0};
  EXPECT_NE(ring.unsupported_reason(s.desc).find("sinks are not supported"), std::string::npos);
  EXPECT_EQ(ring.unsupported_reason(make_workload(base(48, 4, 2, true)).desc), "");
}

// Where the CUDA BlockOps cannot run (this machine: no GPU, or a build without nvcc), a ring on
// CUDA tensors is refused with that reason before anything is sent, never run half-way.
TEST(ContextParallel, CudaTensorsWithoutUsableCudaBlockOpsAreRefused) {
  const DLDevice gpu{kDLCUDA, 0};
  const std::string why = cp::cuda_block_ops_unavailable_reason(gpu);
  if (why.empty()) GTEST_SKIP() << "the CUDA BlockOps load here (a GPU machine): tests/gpu covers them";
  EXPECT_NE(why.find("context parallel:"), std::string::npos) << why;
  auto backend = test::builtin_backend("sdpa");
  cp::InProcessGroup group(1);
  cp::RingAttention ring(*backend, group.transport(0));
  Workload w = make_workload(base(48, 4, 2, true));
  w.desc.device = gpu;
  try {
    (void)cp::cuda_block_ops(gpu);
    ADD_FAILURE() << "cuda_block_ops made an object where " << why;
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ATTNRT_ERROR_UNSUPPORTED) << e.what();
    EXPECT_EQ(std::string(e.what()), why);
  }
  // The ring's own reason: the backend (a CPU plugin here) or the BlockOps, never "".
  EXPECT_NE(ring.unsupported_reason(w.desc), "");
}

// A rank whose shard is malformed fails with the tensor's name and both shapes, and aborts the
// group: the other ranks get an error that names it, instead of waiting for its blocks.
TEST(ContextParallel, BadShardFailsEveryRankWithItsName) {
  WorkloadSpec spec = base(48, 4, 2, true);
  Workload w = make_workload(spec);
  w.desc.device = DLDevice{kDLCPU, 0};
  auto backend = test::builtin_backend("sdpa");
  const int world = 3;
  const cp::SequenceSplit split(Layout::zigzag, world, 48, 48);
  cp::InProcessGroup group(world, std::chrono::seconds(20));
  std::vector<std::string> errors(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      const auto rows = test::global_rows(split, r, false);
      HostTensor q = test::take_rows(w.q, rows), k = test::take_rows(w.k, rows), v = test::take_rows(w.v, rows);
      HostTensor out = test::take_rows(w.out, rows);
      if (r == 1) out = HostTensor({2, 15, 4, 16}, dl_float32());  // one row short
      HostTensor lse({2, 4, 16}, dl_float32());
      attnrt_forward_args fa{};
      fa.struct_size = sizeof fa;
      fa.q = q.dl(), fa.k = k.dl(), fa.v = v.dl(), fa.out = out.dl(), fa.lse = lse.dl();
      try {
        cp::RingAttention(*backend, group.transport(r), {Layout::zigzag, 1, nullptr, nullptr}).forward(w.desc, fa);
      } catch (const Error& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_NE(errors[1].find("out must be rank 1's shard (global seqlen_q 48, seqlen_k 48 over 3 ranks, zigzag layout) "
                           "[2, 16, 4, 16], got [2, 15, 4, 16]"),
            std::string::npos)
      << errors[1];
  for (int r : {0, 2}) {
    EXPECT_NE(errors[r].find("aborted: rank 1: context parallel: out must be"), std::string::npos)
        << "rank " << r << ": " << errors[r];
  }
}

// Varlen: a packed batch of sequences of different lengths, each cut into the layout's chunks of
// its own length (context_parallel.hpp); the ring must equal the plugin's single varlen call on
// the whole batch and the fp64 reference, with the tolerance of the padded cases above (at most
// 2N blocks per row there too).
struct VarlenCase {
  std::string name;
  int world = 2;
  Layout layout = Layout::zigzag;
  std::vector<int32_t> seqlens;
  int32_t heads_q = 4, heads_kv = 2;
  bool causal = true;
  const char* plugin = "eager";
  float softcap = 0.0f;
  int32_t head_dim_v = 0;
};

void PrintTo(const VarlenCase& c, std::ostream* os) { *os << c.name; }

std::vector<VarlenCase> varlen_cases() {
  std::vector<VarlenCase> c;
  c.push_back({"n1_causal", 1, Layout::zigzag, {8, 4, 14}, 4, 4, true});
  c.push_back({"n2_causal_gqa", 2, Layout::zigzag, {16, 40, 8}, 4, 2, true, "sdpa"});
  c.push_back({"n2_noncausal", 2, Layout::zigzag, {24, 8}, 4, 4, false});
  c.push_back({"n3_causal_mqa", 3, Layout::zigzag, {12, 36, 24}, 4, 1, true});
  c.push_back({"n3_noncausal_gqa", 3, Layout::zigzag, {6, 18}, 4, 2, false, "sdpa"});
  c.push_back({"n2_causal_contiguous", 2, Layout::contiguous, {10, 4, 22}, 4, 2, true, "sdpa"});
  c.push_back({"n3_causal_gqa_contiguous", 3, Layout::contiguous, {9, 30, 15}, 4, 2, true});
  c.push_back({"n3_noncausal_contiguous", 3, Layout::contiguous, {21, 6}, 2, 2, false, "sdpa"});
  c.push_back({"n3_softcap_head_dim_v", 3, Layout::zigzag, {18, 6, 30}, 4, 2, true, "sdpa", 5.0f, 8});
  return c;
}

Workload varlen_workload(const std::vector<int32_t>& seqlens, int32_t heads_q, int32_t heads_kv, bool causal,
                         uint64_t seed) {
  WorkloadSpec spec;
  spec.seqlens_q = seqlens;
  spec.heads_q = heads_q;
  spec.heads_kv = heads_kv;
  spec.head_dim = 16;
  spec.causal = causal;
  spec.seed = seed;
  Workload w = make_workload(spec);
  w.desc.device = DLDevice{kDLCPU, 0};
  return w;
}

class VarlenRingMatchesSingleDevice : public ::testing::TestWithParam<VarlenCase> {};

TEST_P(VarlenRingMatchesSingleDevice, OutLseAndGradients) {
  const VarlenCase& c = GetParam();
  WorkloadSpec spec;
  spec.seqlens_q = c.seqlens;
  spec.heads_q = c.heads_q;
  spec.heads_kv = c.heads_kv;
  spec.head_dim = 16;
  spec.head_dim_v = c.head_dim_v;
  spec.causal = c.causal;
  spec.softcap = c.softcap;
  spec.seed = std::hash<std::string>{}(c.name);
  Workload w = make_workload(spec);
  w.desc.device = DLDevice{kDLCPU, 0};
  ASSERT_TRUE(w.desc.is_varlen);
  auto backend = test::builtin_backend(c.plugin);

  attnrt_forward_args fa = w.forward_args();
  const ReferenceForward ref = reference_forward(w.desc, fa);
  const ReferenceBackward gref = reference_backward(w.desc, fa, *w.dout.dl());
  backend->forward(w.desc, fa, 1);
  attnrt_backward_args ba = w.backward_args();
  backend->backward(w.desc, ba, 1);
  const std::vector<double> out = test::values(w.out), lse = test::values(w.lse), dq = test::values(w.dq),
                            dk = test::values(w.dk), dv = test::values(w.dv);

  const test::RingResult ring = test::run_varlen_ring(*backend, w, c.world, c.layout);
  struct Check {
    const char* what;
    const std::vector<double>&got, &single, &fp64;
  };
  for (const Check& k :
       {Check{"out", ring.out, out, ref.out}, Check{"lse", ring.lse, lse, ref.lse}, Check{"dq", ring.dq, dq, gref.dq},
        Check{"dk", ring.dk, dk, gref.dk}, Check{"dv", ring.dv, dv, gref.dv}}) {
    ASSERT_EQ(k.got.size(), k.single.size()) << k.what;
    EXPECT_LE(max_abs_error(k.got, k.single), scaled(k.single)) << k.what << " vs the single call";
    EXPECT_LE(max_abs_error(k.got, k.fp64), scaled(k.fp64) + max_abs_error(k.single, k.fp64))
        << k.what << " vs fp64 (single call's own error " << max_abs_error(k.single, k.fp64) << ")";
  }
}

std::string varlen_case_name(const ::testing::TestParamInfo<VarlenCase>& p) { return p.param.name; }

INSTANTIATE_TEST_SUITE_P(VarlenCases, VarlenRingMatchesSingleDevice, ::testing::ValuesIn(varlen_cases()),
                         varlen_case_name);

// The varlen comparison can fail: shards cut without regard to the sequences (the packed batch
// zigzagged as if it were one sequence), or cut contiguously for a zigzag ring, give results far
// above the tolerance.
TEST(ContextParallel, VarlenRingCutWronglyFails) {
  Workload w = varlen_workload({16, 40, 8}, 4, 2, true, 5);
  auto backend = test::builtin_backend("sdpa");
  attnrt_forward_args fa = w.forward_args();
  const ReferenceForward ref = reference_forward(w.desc, fa);
  const test::RingResult right = test::run_varlen_ring(*backend, w, 2, Layout::zigzag, false);
  EXPECT_LE(max_abs_error(right.out, ref.out), scaled(ref.out));
  const std::vector<int64_t> cu{0, 16, 56, 64};
  const test::RingResult contiguous = test::run_varlen_ring(*backend, w, 2, Layout::zigzag, false, [&](int r) {
    return test::varlen_global_rows(cu, Layout::contiguous, 2, r);
  });
  EXPECT_GT(max_abs_error(contiguous.out, ref.out), 0.1);
  const cp::SequenceSplit whole(Layout::zigzag, 2, 64, 64);
  const test::RingResult one_sequence = test::run_varlen_ring(
      *backend, w, 2, Layout::zigzag, false, [&](int r) { return test::global_rows(whole, r, false); });
  EXPECT_GT(max_abs_error(one_sequence.out, ref.out), 0.1);
}

// Rank 0's forward error: every refusal below comes before anything is sent, so one rank of a
// group alone gets it (and aborts the group).
std::string varlen_forward_error(int world, Workload& w, attnrt_status* status = nullptr) {
  auto backend = test::builtin_backend("sdpa");
  cp::InProcessGroup group(world, std::chrono::seconds(5));
  cp::RingAttention ring(*backend, group.transport(0), {Layout::zigzag, 1, nullptr, nullptr});
  attnrt_forward_args fa = w.forward_args();
  try {
    ring.forward(w.desc, fa);
  } catch (const Error& e) {
    if (status) *status = e.status();
    return e.what();
  }
  return "";
}

TEST(ContextParallel, VarlenRefusals) {
  auto backend = test::builtin_backend("sdpa");
  cp::InProcessGroup group(2);
  cp::RingAttention ring(*backend, group.transport(0));
  {  // a length that is not a multiple of 2N names the sequence and its length
    Workload w = varlen_workload({16, 10, 8}, 4, 2, true, 1);
    attnrt_status status = ATTNRT_OK;
    const std::string why = varlen_forward_error(2, w, &status);
    EXPECT_EQ(status, ATTNRT_ERROR_INVALID_ARGUMENT) << why;
    EXPECT_NE(why.find("sequence 1 of the packed batch has length 10, not a multiple of 4 (zigzag layout over 2 ranks"),
              std::string::npos)
        << why;
  }
  {  // a sliding window with varlen
    Workload w = varlen_workload({16, 8}, 4, 2, true, 2);
    w.desc.window_left = 4;
    const std::string why = ring.unsupported_reason(w.desc);
    EXPECT_NE(why.find("sliding windows (window_left 4, window_right -1) with varlen are not supported"),
              std::string::npos)
        << why;
    attnrt_status status = ATTNRT_OK;
    EXPECT_EQ(varlen_forward_error(2, w, &status), why);
    EXPECT_EQ(status, ATTNRT_ERROR_UNSUPPORTED);
  }
  {  // cross attention: the longest sequences differ (the descriptor says so)
    WorkloadSpec spec;
    spec.seqlens_q = {16, 8};
    spec.seqlens_k = {16, 24};
    spec.heads_q = 4;
    spec.head_dim = 16;
    Workload w = make_workload(spec);
    w.desc.device = DLDevice{kDLCPU, 0};
    EXPECT_NE(ring.unsupported_reason(w.desc).find("varlen context parallelism is self-attention: max_seqlen_q "
                                                   "(desc.seqlen_q 16) must equal max_seqlen_k (desc.seqlen_k 24)"),
              std::string::npos)
        << ring.unsupported_reason(w.desc);
  }
  {  // ... or only the lengths of one sequence (the shards tell)
    WorkloadSpec spec;
    spec.seqlens_q = {16, 8};
    spec.seqlens_k = {8, 16};
    spec.heads_q = 4;
    spec.head_dim = 16;
    Workload w = make_workload(spec);
    w.desc.device = DLDevice{kDLCPU, 0};
    EXPECT_EQ(ring.unsupported_reason(w.desc), "");
    attnrt_status status = ATTNRT_OK;
    const std::string why = varlen_forward_error(2, w, &status);
    EXPECT_EQ(status, ATTNRT_ERROR_UNSUPPORTED) << why;
    EXPECT_NE(why.find("sequence 0 of the packed batch has 16 queries and 8 keys"), std::string::npos) << why;
  }
  {  // cu_seqlens on a device: the ring needs the lengths on the host
    Workload w = varlen_workload({16, 8}, 4, 2, true, 3);
    w.cu_seqlens_q.dl()->device = DLDevice{kDLCUDA, 0};
    const std::string why = varlen_forward_error(2, w);
    EXPECT_NE(why.find("cu_seqlens_q must be in host memory"), std::string::npos) << why;
  }
  {  // no cu_seqlens at all
    Workload w = varlen_workload({16, 8}, 4, 2, true, 4);
    auto b = test::builtin_backend("sdpa");
    cp::InProcessGroup g(2, std::chrono::seconds(5));
    attnrt_forward_args fa = w.forward_args();
    fa.cu_seqlens_k = nullptr;
    try {
      cp::RingAttention(*b, g.transport(0), {Layout::zigzag, 1, nullptr, nullptr}).forward(w.desc, fa);
      ADD_FAILURE() << "no cu_seqlens_k accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("varlen needs cu_seqlens_k"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace attnrt
