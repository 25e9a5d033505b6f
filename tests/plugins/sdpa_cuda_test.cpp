// sdpa on CUDA (cuDNN) where no GPU is needed: the descriptor -> cuDNN graph key mapping
// (plugins/cuda/sdpa/sdpa_graph_key.hpp), and the plugin itself on a machine without a GPU or
// without libcudnn: it loads, and refuses calls with the reason instead of failing to load.
#include "../../plugins/cuda/sdpa/sdpa_graph_key.hpp"

#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/device.hpp>
#include <attnrt/runtime/registry.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "test_support.hpp"

namespace attnrt {
namespace {

using plugins::sdpa_cuda::backward_key;
using plugins::sdpa_cuda::forward_key;
using plugins::sdpa_cuda::GraphKey;
using plugins::sdpa_cuda::GraphKeyHash;

attnrt_attention_desc cuda_desc(int32_t batch = 2, int32_t sq = 128, int32_t sk = 256) {
  attnrt_attention_desc d{};
  d.struct_size = sizeof d;
  d.dtype = ATTNRT_DTYPE_BF16;
  d.head_dim = d.head_dim_v = 128;
  d.heads_q = 8;
  d.heads_kv = 2;
  d.batch = batch;
  d.seqlen_q = sq;
  d.seqlen_k = sk;
  d.softmax_scale = 0.125f;
  d.window_left = d.window_right = -1;
  d.return_lse = 1;
  d.device = DLDevice{kDLCUDA, 0};
  d.cuda_arch = 90;
  return d;
}

TEST(SdpaCudaGraphKey, MasksFollowCuDnnsBounds) {
  attnrt_attention_desc d = cuda_desc();
  GraphKey k = forward_key(d, nullptr);
  EXPECT_EQ(k.right_bound, -1);
  EXPECT_EQ(k.left_bound, -1);
  d.causal = 1;  // bottom-right causal: right bound 0
  k = forward_key(d, nullptr);
  EXPECT_EQ(k.right_bound, 0);
  EXPECT_EQ(k.left_bound, -1);
  d.window_left = 63;  // keys i+off-63 .. i+off visible: cuDNN keeps j > i + off - left_bound
  k = forward_key(d, nullptr);
  EXPECT_EQ(k.right_bound, 0);
  EXPECT_EQ(k.left_bound, 64);
  d.causal = 0;
  d.window_left = 0;
  d.window_right = 5;
  k = forward_key(d, nullptr);
  EXPECT_EQ(k.right_bound, 5);
  EXPECT_EQ(k.left_bound, 1);  // window_left 0: the diagonal alone on the left
  d.window_left = -1;
  k = forward_key(d, nullptr);
  EXPECT_EQ(k.left_bound, -1);
}

TEST(SdpaCudaGraphKey, CompactStridesWithoutTensors) {
  const attnrt_attention_desc d = cuda_desc(2, 128, 256);
  const GraphKey k = forward_key(d, nullptr);
  EXPECT_EQ(k.q.head, 128);
  EXPECT_EQ(k.q.row, 8 * 128);
  EXPECT_EQ(k.q.batch, 128 * 8 * 128);
  EXPECT_EQ(k.k.row, 2 * 128);
  EXPECT_EQ(k.k.batch, 256 * 2 * 128);
  EXPECT_EQ(k.stats, 1);
  EXPECT_EQ(k.backward, 0);
}

TEST(SdpaCudaGraphKey, TensorsGiveTheirOwnStrides) {
  attnrt_attention_desc d = cuda_desc(1, 4, 4);
  d.heads_q = d.heads_kv = 2;
  d.head_dim = d.head_dim_v = 8;
  // q as a slice of a packed qkv [1, 4, 3*2, 8]: row stride 48, head stride 8.
  int64_t shape[4] = {1, 4, 2, 8}, strides[4] = {192, 48, 8, 1};
  DLTensor q{};
  q.ndim = 4;
  q.shape = shape;
  q.strides = strides;
  q.dtype = DLDataType{kDLBfloat, 16, 1};
  attnrt_forward_args a{};
  a.struct_size = sizeof a;
  a.q = a.k = a.v = &q;
  a.out = &q;
  const GraphKey k = forward_key(d, &a);
  EXPECT_EQ(k.q.row, 48);
  EXPECT_EQ(k.q.head, 8);
  EXPECT_EQ(k.q.batch, 192);
  EXPECT_FALSE(k == forward_key(d, nullptr)) << "other strides, other graph";
}

TEST(SdpaCudaGraphKey, VarlenDropsBatchStrides) {
  attnrt_attention_desc d = cuda_desc(3, 300, 300);
  d.is_varlen = 1;
  const GraphKey k = forward_key(d, nullptr);
  EXPECT_EQ(k.varlen, 1);
  EXPECT_EQ(k.q.batch, 0);
  EXPECT_EQ(k.k.batch, 0);
  EXPECT_EQ(k.q.row, 8 * 128);
}

TEST(SdpaCudaGraphKey, EqualCallsShareAKeyAndOthersDoNot) {
  const attnrt_attention_desc d = cuda_desc();
  EXPECT_TRUE(forward_key(d, nullptr) == forward_key(d, nullptr));
  EXPECT_EQ(GraphKeyHash{}(forward_key(d, nullptr)), GraphKeyHash{}(forward_key(d, nullptr)));
  auto differs = [&](auto mutate, const char* what) {
    attnrt_attention_desc e = d;
    mutate(e);
    EXPECT_FALSE(forward_key(d, nullptr) == forward_key(e, nullptr)) << what;
  };
  differs([](attnrt_attention_desc& e) { e.softmax_scale = 0.1f; }, "softmax_scale");
  differs([](attnrt_attention_desc& e) { e.dtype = ATTNRT_DTYPE_FP16; }, "dtype");
  differs([](attnrt_attention_desc& e) { e.return_lse = 0; }, "return_lse");
  differs([](attnrt_attention_desc& e) { e.device.device_id = 1; }, "device");
  differs([](attnrt_attention_desc& e) { e.seqlen_k = 255; }, "seqlen_k");
  differs([](attnrt_attention_desc& e) { e.heads_kv = 8; }, "heads_kv");
  attnrt_attention_desc det = d;
  det.deterministic = 1;
  EXPECT_FALSE(backward_key(d, nullptr) == backward_key(det, nullptr)) << "deterministic backward";
  EXPECT_FALSE(forward_key(d, nullptr) == backward_key(d, nullptr));
}

// The CUDA sdpa plugin, by name and device, from the build's plugin folder.
std::shared_ptr<Backend> cuda_sdpa() {
  static Registry registry({test::plugins_dir()});
  const PluginRecord* rec = registry.find("sdpa", "cuda");
  if (!rec) throw std::runtime_error("the CUDA sdpa plugin is not built");
  return std::make_shared<Backend>(registry.load(*rec));
}

TEST(SdpaCudaPlugin, SharesTheNameWithTheCpuPlugin) {
  Registry registry({test::plugins_dir()});
  const PluginRecord* cpu = registry.find("sdpa", "cpu");
  const PluginRecord* cuda = registry.find("sdpa", "cuda");
  ASSERT_NE(cpu, nullptr);
  ASSERT_NE(cuda, nullptr);
  EXPECT_NE(cpu, cuda);
  EXPECT_NE(cuda->library, cpu->library);
}

// Refusals that hold on any machine: the capabilities' gaps (softcap, ALiBi, packed queries over
// a paged cache, dropout, fp32, head_dim > 256) each with its reason. (Sinks and paged KV are
// advertised: cuDNN's sink_token and page tables.)
TEST(SdpaCudaPlugin, RefusesWhatCuDnnCannotComputeExactly) {
  std::shared_ptr<Backend> b = cuda_sdpa();
  auto refused = [&](auto mutate, const char* needle) {
    attnrt_attention_desc d = cuda_desc();
    mutate(d);
    const std::string why = b->unsupported_reason(d);
    EXPECT_NE(why.find(needle), std::string::npos) << "reason was: '" << why << "'";
  };
  refused([](attnrt_attention_desc& d) { d.softcap = 30.0f; }, "softcap");
  refused([](attnrt_attention_desc& d) { d.has_alibi = 1; }, "ALiBi");
  refused(
      [](attnrt_attention_desc& d) {
        d.is_paged = 1;
        d.page_size = 16;
        d.is_varlen = 1;
      },
      "paged");
  refused([](attnrt_attention_desc& d) { d.dropout_p = 0.1f; }, "dropout");
  refused([](attnrt_attention_desc& d) { d.dtype = ATTNRT_DTYPE_FP32; }, "dtype fp32");
  refused([](attnrt_attention_desc& d) { d.head_dim = d.head_dim_v = 320; }, "head_dim 320 > 256");
  refused([](attnrt_attention_desc& d) { d.cuda_arch = 75; }, "sm_75");
  refused(
      [](attnrt_attention_desc& d) {
        d.device = DLDevice{kDLCPU, 0};
        d.cuda_arch = 0;
      },
      "device cpu");
}

// Without a GPU the plugin loads and refuses a CUDA call, naming the cuDNN it opened and why.
TEST(SdpaCudaPlugin, RefusesWithoutAGpu) {
  if (!probe_devices().cuda.empty()) GTEST_SKIP() << "a CUDA device is present: tests/gpu runs the plugin";
  const std::string why = cuda_sdpa()->unsupported_reason(cuda_desc());
  EXPECT_FALSE(why.empty());
  const bool no_cudnn = why.find("cuDNN could not be loaded") != std::string::npos;
  const bool no_gpu = why.find("CUDA device") != std::string::npos && why.find("cuDNN 9.") != std::string::npos;
  EXPECT_TRUE(no_cudnn || no_gpu) << why;
  attnrt_attention_desc d = cuda_desc();
  EXPECT_EQ(cuda_sdpa()->required_workspace(d, false, 0), 0u) << "nothing to size where nothing can run";
}

// Without libcudnn (ATTNRT_CUDNN_LIBRARY naming a file that does not exist, in a fresh process,
// since the library is opened once per process): a refusal with the reason, not a crash.
TEST(SdpaCudaPluginDeathTest, RefusesWithoutCuDnn) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("ATTNRT_CUDNN_LIBRARY", "/nonexistent/libcudnn.so.9", 1);
        const std::string why = cuda_sdpa()->unsupported_reason(cuda_desc());
        std::cerr << "reason: " << why << std::endl;
        std::exit(why.find("cuDNN could not be loaded") != std::string::npos ? 0 : 1);
      },
      testing::ExitedWithCode(0), "reason: cuDNN could not be loaded: /nonexistent/libcudnn.so.9");
}

}  // namespace
}  // namespace attnrt
