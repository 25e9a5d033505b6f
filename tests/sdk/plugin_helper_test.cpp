// The SDK's C++ helper: a class becomes a C function table, and no exception crosses it.
#include <attnrt/harness/workload.hpp>
#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>

#include <gtest/gtest.h>

#include <new>
#include <stdexcept>

namespace {

int g_mode = 0;  // which exception forward throws

class Probe {
 public:
  static constexpr const char* kName = "probe";
  static constexpr const char* kVersion = "1.2.3";
  static constexpr const char* kDescription = "helper test plugin";
  static attnrt_capabilities capabilities() {
    return {sizeof(attnrt_capabilities),
            ATTNRT_DEVICE_BIT_CPU,
            ATTNRT_DTYPE_BIT_FP32,
            ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_LSE,
            1,
            128,
            0,
            0};
  }
  explicit Probe(const attnrt_host_info& host) {
    if (host.host_abi_major != ATTNRT_ABI_VERSION_MAJOR) throw std::runtime_error("wrong host");
  }
  std::string supports(const attnrt_attention_desc& d) const {
    return d.head_dim > 128 ? "head_dim " + std::to_string(d.head_dim) + " > 128" : "";
  }
  size_t workspace_size(const attnrt_attention_desc&, bool backward, int) const { return backward ? 2 : 1; }
  void forward(const attnrt_attention_desc&, const attnrt_forward_args&, const attnrt_exec&) {
    if (g_mode == 1) throw attnrt::sdk::Error(ATTNRT_ERROR_UNSUPPORTED, "no can do");
    if (g_mode == 2) throw std::bad_alloc();
    if (g_mode == 3) throw std::logic_error("bug here");
    if (g_mode == 4) throw 42;
  }
};

struct Msg {
  char text[256] = {0};
  attnrt_message m{sizeof(attnrt_message), text, sizeof text};
};

class PluginHelper : public ::testing::Test {
 protected:
  void SetUp() override {
    api_ = attnrt::sdk::plugin_api<Probe>();
    attnrt_host_info host{sizeof host, ATTNRT_ABI_VERSION_MAJOR, ATTNRT_ABI_VERSION_MINOR, nullptr, nullptr};
    Msg err;
    ASSERT_EQ(api_->create(&host, &instance_, &err.m), ATTNRT_OK) << err.text;
  }
  void TearDown() override { api_->destroy(instance_); }
  const attnrt_plugin_api* api_ = nullptr;
  attnrt_instance* instance_ = nullptr;
};

TEST_F(PluginHelper, FillsTheTable) {
  EXPECT_EQ(api_->struct_size, sizeof(attnrt_plugin_api));
  EXPECT_EQ(api_->abi_major, static_cast<uint32_t>(ATTNRT_ABI_VERSION_MAJOR));
  EXPECT_STREQ(api_->name, "probe");
  EXPECT_STREQ(api_->version, "1.2.3");
  EXPECT_EQ(api_->capabilities->max_head_dim, 128);
  EXPECT_EQ(api_->backward, nullptr) << "a class without backward() must leave the entry NULL";
}

// A valid fp32 call the probe's capabilities cover (head_dim 64, no causal mask).
attnrt::Workload probe_call() {
  attnrt::WorkloadSpec spec;
  spec.batch = 1;
  spec.seqlen_q = spec.seqlen_k = 8;
  spec.heads_q = spec.heads_kv = 2;
  spec.head_dim = spec.head_dim_v = 64;
  spec.dtype = ATTNRT_DTYPE_FP32;
  return attnrt::make_workload(spec);
}

TEST_F(PluginHelper, SupportsReturnsTheReason) {
  attnrt::Workload w = probe_call();
  attnrt_attention_desc& d = w.desc;
  Msg why;
  EXPECT_EQ(api_->supports(instance_, &d, &why.m), ATTNRT_OK) << why.text;
  d.head_dim = d.head_dim_v = 320;  // outside the capabilities: refused before the class is asked
  EXPECT_EQ(api_->supports(instance_, &d, &why.m), ATTNRT_ERROR_UNSUPPORTED);
  EXPECT_STREQ(why.text, "head_dim 320 > 128");
  d.head_dim = d.head_dim_v = 64;
  d.softcap = 30.0f;  // a feature the capabilities lack, which the class's supports() never checks
  EXPECT_EQ(api_->supports(instance_, &d, &why.m), ATTNRT_ERROR_UNSUPPORTED);
  EXPECT_STREQ(why.text, "softcap is not supported");
  d.softcap = 0.0f;
  d.heads_q = 0;  // malformed: an argument error, not a refusal
  EXPECT_EQ(api_->supports(instance_, &d, &why.m), ATTNRT_ERROR_INVALID_ARGUMENT);
}

TEST_F(PluginHelper, ForwardIsGatedLikeSupports) {
  attnrt::Workload w = probe_call();
  const attnrt_forward_args a = w.forward_args();
  attnrt_exec e{sizeof(attnrt_exec), nullptr, nullptr, 0, 1};
  Msg err;
  w.desc.softcap = 30.0f;  // the class would compute without it: the adapter refuses first
  EXPECT_EQ(api_->forward(instance_, &w.desc, &a, &e, &err.m), ATTNRT_ERROR_UNSUPPORTED);
  EXPECT_STREQ(err.text, "softcap is not supported");
  w.desc.softcap = 0.0f;
  attnrt_forward_args no_q = a;
  no_q.q = nullptr;  // every tensor is validated before the class sees the call
  EXPECT_EQ(api_->forward(instance_, &w.desc, &no_q, &e, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.text).find("q: required tensor is NULL"), std::string::npos) << err.text;
}

TEST_F(PluginHelper, ExceptionsBecomeStatuses) {
  attnrt::Workload w = probe_call();
  const attnrt_attention_desc& d = w.desc;
  const attnrt_forward_args a = w.forward_args();
  attnrt_exec e{sizeof(attnrt_exec), nullptr, nullptr, 0, 1};
  const std::pair<attnrt_status, const char*> expected[] = {{ATTNRT_OK, ""},
                                                            {ATTNRT_ERROR_UNSUPPORTED, "no can do"},
                                                            {ATTNRT_ERROR_OUT_OF_MEMORY, "out of host memory"},
                                                            {ATTNRT_ERROR_INTERNAL, "bug here"},
                                                            {ATTNRT_ERROR_INTERNAL, "unknown exception in plugin"}};
  for (int mode = 0; mode < 5; ++mode) {
    g_mode = mode;
    Msg err;
    EXPECT_EQ(api_->forward(instance_, &d, &a, &e, &err.m), expected[mode].first) << "mode " << mode;
    EXPECT_STREQ(err.text, expected[mode].second) << "mode " << mode;
  }
  g_mode = 0;
}

TEST_F(PluginHelper, NullArgumentsAreErrorsNotCrashes) {
  Msg err;
  EXPECT_EQ(api_->forward(instance_, nullptr, nullptr, nullptr, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.text).find("must not be NULL"), std::string::npos);
  size_t bytes = 0;
  EXPECT_EQ(api_->workspace_size(instance_, nullptr, 0, 0, &bytes, nullptr), ATTNRT_ERROR_INVALID_ARGUMENT);
}

TEST(PluginHelperMessages, TruncatesToCapacity) {
  char small[6];
  attnrt_message m{sizeof m, small, sizeof small};
  attnrt::sdk::write_message(&m, "a long message");
  EXPECT_STREQ(small, "a lon");
  attnrt::sdk::write_message(nullptr, "ignored");  // no buffer: no write, no crash
}

TEST(CapabilityGap, NamesTheFirstMissingFeature) {
  attnrt_capabilities caps{
      sizeof caps, ATTNRT_DEVICE_BIT_CPU, ATTNRT_DTYPE_BIT_FP32, ATTNRT_FEATURE_CAUSAL, 1, 256, 0, 0};
  attnrt_attention_desc d{};
  d.dtype = ATTNRT_DTYPE_FP32;
  d.head_dim = d.head_dim_v = 64;
  d.heads_q = d.heads_kv = 4;
  d.window_left = d.window_right = -1;
  d.device = DLDevice{kDLCPU, 0};
  EXPECT_EQ(attnrt::sdk::capability_gap(caps, d), "");
  d.softcap = 30.0f;
  EXPECT_EQ(attnrt::sdk::capability_gap(caps, d), "softcap is not supported");
  d.softcap = 0.0f;
  d.heads_kv = 1;
  EXPECT_EQ(attnrt::sdk::capability_gap(caps, d), "GQA/MQA (heads_q != heads_kv) is not supported");
  d.heads_kv = 4;
  d.head_dim = 320;
  EXPECT_EQ(attnrt::sdk::capability_gap(caps, d), "head_dim 320 > 256");
  d.head_dim = 64;
  d.device = DLDevice{kDLCUDA, 0};
  EXPECT_EQ(attnrt::sdk::capability_gap(caps, d), "device cuda:0 is not supported");
  caps.devices |= ATTNRT_DEVICE_BIT_CUDA;
  caps.min_cuda_arch = 80;
  d.cuda_arch = 75;
  EXPECT_EQ(attnrt::sdk::capability_gap(caps, d), "compute capability sm_75 < required sm_80");
}

}  // namespace
