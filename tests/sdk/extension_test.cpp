// The SDK's extension-chain support (ABI 1.1): reading desc.extensions only when the writer knew
// it, bounded iteration, lookup, chain validation (check_desc), the type table, and the C++
// adapter refusing required extensions a plugin class does not declare.
#include <attnrt/harness/workload.hpp>
#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using attnrt::sdk::MessageBuffer;

constexpr uint32_t kVendorA = 0xA77E0010u;
constexpr uint32_t kVendorB = 0xA77E0011u;

attnrt_attention_desc valid_desc() {
  attnrt_attention_desc d{};
  d.struct_size = sizeof d;
  d.dtype = ATTNRT_DTYPE_FP32;
  d.head_dim = d.head_dim_v = 32;
  d.heads_q = d.heads_kv = 2;
  d.batch = 1;
  d.seqlen_q = d.seqlen_k = 8;
  d.softmax_scale = 0.25f;
  d.window_left = d.window_right = -1;
  d.device = DLDevice{kDLCPU, 0};
  return d;
}

attnrt_extension block(uint32_t type, uint32_t flags = 0, const attnrt_extension* next = nullptr) {
  return attnrt_extension{sizeof(attnrt_extension), type, flags, next};
}

// Runs check_desc; "" when it accepts d, else "<status>: <message>".
std::string check_desc_error(const attnrt_attention_desc& d) {
  try {
    attnrt::sdk::check_desc(d);
  } catch (const attnrt::sdk::Error& e) {
    return std::to_string(static_cast<int>(e.status())) + ": " + e.what();
  }
  return "";
}

TEST(ExtensionChain, IteratesInOrderAndFindsByType) {
  const attnrt_extension c = block(kVendorA, ATTNRT_EXTENSION_OPTIONAL);
  const attnrt_extension b = block(kVendorB, 0, &c);
  const attnrt_extension a = block(kVendorA, 0, &b);
  attnrt_attention_desc d = valid_desc();
  d.extensions = &a;
  std::vector<const attnrt_extension*> seen;
  for (const attnrt_extension& e : attnrt::sdk::extensions(d)) seen.push_back(&e);
  EXPECT_EQ(seen, (std::vector<const attnrt_extension*>{&a, &b, &c}));
  EXPECT_EQ(attnrt::sdk::find_extension(d, kVendorA), &a) << "the first block of the type";
  EXPECT_EQ(attnrt::sdk::find_extension(d, kVendorB), &b);
  EXPECT_EQ(attnrt::sdk::find_extension(d, 0xA77E00FFu), nullptr);
  EXPECT_EQ(check_desc_error(d), "");
  d.extensions = nullptr;
  EXPECT_TRUE(attnrt::sdk::extensions(d).empty());
  EXPECT_EQ(attnrt::sdk::find_extension(d, kVendorA), nullptr);
}

TEST(ExtensionChain, AnAbi10DescriptorHasNoChainWhateverFollowsIt) {
  // A 1.0 writer's descriptor is 120 bytes: the bytes where 1.1 keeps `extensions` are not its.
  attnrt_attention_desc d = valid_desc();
  d.struct_size = ATTNRT_ATTENTION_DESC_SIZE_V1_0;
  d.extensions = reinterpret_cast<const attnrt_extension*>(uintptr_t{0x10});  // garbage, never read
  EXPECT_EQ(attnrt::sdk::first_extension(d), nullptr);
  EXPECT_TRUE(attnrt::sdk::extensions(d).empty());
  EXPECT_EQ(check_desc_error(d), "");
  EXPECT_EQ(attnrt::sdk::unimplemented_extension_reason(d, {}), "");
}

TEST(ExtensionChain, ACycleIsBoundedAndRejected) {
  attnrt_extension a = block(kVendorA, ATTNRT_EXTENSION_OPTIONAL);
  const attnrt_extension b = block(kVendorB, ATTNRT_EXTENSION_OPTIONAL, &a);
  a.next = &b;  // a -> b -> a -> ...
  attnrt_attention_desc d = valid_desc();
  d.extensions = &a;
  int n = 0;
  for (const attnrt_extension& e : attnrt::sdk::extensions(d)) {
    (void)e;
    ++n;
  }
  EXPECT_EQ(n, ATTNRT_EXTENSION_CHAIN_MAX) << "iteration stops after ATTNRT_EXTENSION_CHAIN_MAX blocks";
  EXPECT_EQ(check_desc_error(d),
            "1: desc.extensions: the chain has more than 64 blocks (ATTNRT_EXTENSION_CHAIN_MAX); is it a cycle?");
}

TEST(ExtensionChain, SixtyFourBlocksAreFineSixtyFiveAreNot) {
  std::vector<attnrt_extension> chain(65, block(kVendorA, ATTNRT_EXTENSION_OPTIONAL));
  for (size_t i = 0; i + 1 < chain.size(); ++i) chain[i].next = &chain[i + 1];
  attnrt_attention_desc d = valid_desc();
  d.extensions = &chain[1];  // 64 blocks
  EXPECT_EQ(check_desc_error(d), "");
  d.extensions = &chain[0];  // 65
  EXPECT_NE(check_desc_error(d).find("more than 64 blocks"), std::string::npos) << check_desc_error(d);
}

TEST(ExtensionChain, TooSmallAndReservedBlocksAreInvalidArguments) {
  attnrt_extension small = block(kVendorB);
  small.struct_size = 8;
  const attnrt_extension first = block(kVendorA, ATTNRT_EXTENSION_OPTIONAL, &small);
  attnrt_attention_desc d = valid_desc();
  d.extensions = &first;
  EXPECT_EQ(check_desc_error(d),
            "1: desc.extensions: block 1 has struct_size 8, smaller than the extension header's 24 bytes");
  const attnrt_extension zero{sizeof(attnrt_extension), 0, 0, nullptr};
  d.extensions = &zero;
  EXPECT_EQ(check_desc_error(d),
            "1: desc.extensions: block 0 has type 0 (ATTNRT_EXTENSION_TYPE_NONE, reserved: a zero-filled header?)");
  // check_forward validates the descriptor first: the same error before any tensor is looked at.
  attnrt_forward_args args{};
  args.struct_size = sizeof args;
  try {
    attnrt::sdk::check_forward(d, args);
    FAIL() << "check_forward accepted a malformed chain";
  } catch (const attnrt::sdk::Error& e) {
    EXPECT_EQ(e.status(), ATTNRT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("block 0 has type 0"), std::string::npos) << e.what();
  }
}

TEST(ExtensionTypes, MinorsAndNames) {
  EXPECT_EQ(attnrt::sdk::extension_abi_minor(0x80000000u), 1u) << "vendor types need the mechanism: 1.1";
  EXPECT_EQ(attnrt::sdk::extension_abi_minor(0xFFFFFFFFu), 1u);
  EXPECT_EQ(attnrt::sdk::extension_abi_minor(7), 5u) << "an attnrt type this header does not define is newer than 1.4";
  EXPECT_EQ(attnrt::sdk::standard_extension(7), nullptr);
  EXPECT_EQ(attnrt::sdk::standard_extension(0), nullptr) << "type 0 is reserved, never a real type";
  EXPECT_EQ(attnrt::sdk::extension_name(0x80000001u), "vendor extension 0x80000001");
  EXPECT_EQ(attnrt::sdk::extension_name(7), "extension type 7 (not defined in ABI 1.4)");
  // The table: reserved type 0, and flex_attention's block (ABI 1.3), the first real type.
  ASSERT_EQ(std::size(attnrt::sdk::kStandardExtensions), 2u);
  EXPECT_EQ(attnrt::sdk::kStandardExtensions[0].type, 0u);
  EXPECT_EQ(attnrt::sdk::extension_abi_minor(ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION), 3u);
  EXPECT_EQ(attnrt::sdk::extension_name(ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION), "extension 'flex_attention' (type 1)");
  for (const auto& e : attnrt::sdk::kStandardExtensions) {
    EXPECT_LT(e.type, ATTNRT_EXTENSION_TYPE_VENDOR_FIRST);
    EXPECT_LE(e.abi_minor, static_cast<uint32_t>(ATTNRT_ABI_VERSION_MINOR));
  }
}

TEST(ExtensionTypes, UnimplementedReasonNamesTheFirstRequiredUnknownBlock) {
  const attnrt_extension opt = block(kVendorB, ATTNRT_EXTENSION_OPTIONAL);
  const attnrt_extension req = block(kVendorA, 0, &opt);
  attnrt_attention_desc d = valid_desc();
  d.extensions = &req;
  EXPECT_EQ(attnrt::sdk::unimplemented_extension_reason(d, {}),
            "vendor extension 0xa77e0010 is required (not flagged ATTNRT_EXTENSION_OPTIONAL) and this plugin does not "
            "implement it");
  const uint32_t implemented[] = {kVendorA};
  EXPECT_EQ(attnrt::sdk::unimplemented_extension_reason(d, implemented), "") << "the optional unknown one is a hint";
  d.extensions = &opt;
  EXPECT_EQ(attnrt::sdk::unimplemented_extension_reason(d, {}), "");
}

// ---------------------------------------------------------------- the C++ adapter

int g_supports_calls = 0;
int g_forward_calls = 0;
const attnrt_extension* g_seen = nullptr;

class Plain {  // declares no extension types
 public:
  static constexpr const char* kName = "plain";
  static constexpr const char* kVersion = "1.0.0";
  static constexpr const char* kDescription = "no extensions";
  static attnrt_capabilities capabilities() {
    return {sizeof(attnrt_capabilities), ATTNRT_DEVICE_BIT_CPU, ATTNRT_DTYPE_BIT_FP32, 0, 1, 128, 0, 0};
  }
  explicit Plain(const attnrt_host_info&) {}
  std::string supports(const attnrt_attention_desc& d) const {
    ++g_supports_calls;
    g_seen = attnrt::sdk::first_extension(d);
    return "";
  }
  size_t workspace_size(const attnrt_attention_desc&, bool, int) const { return 0; }
  void forward(const attnrt_attention_desc&, const attnrt_forward_args&, const attnrt_exec&) { ++g_forward_calls; }
  void backward(const attnrt_attention_desc&, const attnrt_backward_args&, const attnrt_exec&) { ++g_forward_calls; }
};

class WithVendorA : public Plain {
 public:
  static constexpr const char* kName = "with_vendor_a";
  static constexpr uint32_t kExtensions[] = {kVendorA};
  using Plain::Plain;
};

static_assert(!attnrt::sdk::DeclaresExtensions<Plain>);
static_assert(attnrt::sdk::DeclaresExtensions<WithVendorA>);

template <class P>
class Adapter : public ::testing::Test {
 protected:
  void SetUp() override {
    api_ = attnrt::sdk::plugin_api<P>();
    attnrt_host_info host{sizeof host, ATTNRT_ABI_VERSION_MAJOR, ATTNRT_ABI_VERSION_MINOR, nullptr, nullptr};
    MessageBuffer err;
    ASSERT_EQ(api_->create(&host, &instance_, err.get()), ATTNRT_OK) << err.text();
    g_supports_calls = g_forward_calls = 0;
    g_seen = nullptr;
  }
  void TearDown() override { api_->destroy(instance_); }
  attnrt_status supports(const attnrt_attention_desc& d, MessageBuffer& why) {
    return api_->supports(instance_, &d, why.get());
  }
  // Calls with valid tensors for valid_desc()'s shapes (the adapter checks them before anything
  // else), under d: what reaches the class is decided by d's extension chain alone.
  attnrt_status forward(const attnrt_attention_desc& d, MessageBuffer& err) {
    const attnrt_forward_args a = call_.forward_args();
    return api_->forward(instance_, &d, &a, &exec_, err.get());
  }
  attnrt_status backward(const attnrt_attention_desc& d, MessageBuffer& err) {
    const attnrt_backward_args a = call_.backward_args();
    return api_->backward(instance_, &d, &a, &exec_, err.get());
  }
  static attnrt::Workload valid_call() {
    const attnrt_attention_desc d = valid_desc();
    attnrt::WorkloadSpec spec;
    spec.batch = d.batch;
    spec.seqlen_q = d.seqlen_q;
    spec.seqlen_k = d.seqlen_k;
    spec.heads_q = d.heads_q;
    spec.heads_kv = d.heads_kv;
    spec.head_dim = d.head_dim;
    spec.head_dim_v = d.head_dim_v;
    spec.softmax_scale = d.softmax_scale;
    spec.backward = true;
    return attnrt::make_workload(spec);
  }
  attnrt::Workload call_ = valid_call();
  attnrt_exec exec_{sizeof(attnrt_exec), nullptr, nullptr, 0, 1};
  const attnrt_plugin_api* api_ = nullptr;
  attnrt_instance* instance_ = nullptr;
};

using AdapterPlain = Adapter<Plain>;
using AdapterWithVendorA = Adapter<WithVendorA>;

TEST_F(AdapterPlain, ReportsAbi14) {
  EXPECT_EQ(api_->abi_major, 1u);
  EXPECT_EQ(api_->abi_minor, 4u);
}

TEST_F(AdapterPlain, RefusesARequiredBlockItDoesNotDeclareBeforeTheClassSeesIt) {
  const attnrt_extension req = block(kVendorA);
  attnrt_attention_desc d = valid_desc();
  d.extensions = &req;
  MessageBuffer why;
  EXPECT_EQ(supports(d, why), ATTNRT_ERROR_UNSUPPORTED);
  EXPECT_STREQ(why.text(),
               "vendor extension 0xa77e0010 is required (not flagged ATTNRT_EXTENSION_OPTIONAL) and this "
               "plugin does not implement it");
  MessageBuffer err, berr;
  EXPECT_EQ(forward(d, err), ATTNRT_ERROR_UNSUPPORTED);
  EXPECT_STREQ(err.text(), why.text());
  EXPECT_EQ(backward(d, berr), ATTNRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(g_supports_calls, 0);
  EXPECT_EQ(g_forward_calls, 0) << "forward must refuse what supports refuses";
}

TEST_F(AdapterPlain, PassesAnOptionalUnknownBlockThrough) {
  const attnrt_extension opt = block(kVendorA, ATTNRT_EXTENSION_OPTIONAL);
  attnrt_attention_desc d = valid_desc();
  d.extensions = &opt;
  MessageBuffer why, err;
  EXPECT_EQ(supports(d, why), ATTNRT_OK) << why.text();
  EXPECT_EQ(g_seen, &opt) << "the class sees the chain and may read hints";
  EXPECT_EQ(forward(d, err), ATTNRT_OK) << err.text();
  EXPECT_EQ(g_forward_calls, 1);
}

TEST_F(AdapterPlain, RefusesAMalformedChainAsInvalidArgument) {
  attnrt_extension a = block(kVendorA, ATTNRT_EXTENSION_OPTIONAL);
  a.next = &a;
  attnrt_attention_desc d = valid_desc();
  d.extensions = &a;
  MessageBuffer why, err;
  EXPECT_EQ(supports(d, why), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(why.text()).find("is it a cycle?"), std::string::npos) << why.text();
  EXPECT_EQ(forward(d, err), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(g_supports_calls + g_forward_calls, 0);
}

TEST_F(AdapterPlain, A10DescriptorIsNeverReadPastItsSize) {
  attnrt_attention_desc d = valid_desc();
  d.struct_size = ATTNRT_ATTENTION_DESC_SIZE_V1_0;
  d.extensions = reinterpret_cast<const attnrt_extension*>(uintptr_t{0x10});  // would crash if read
  MessageBuffer why;
  EXPECT_EQ(supports(d, why), ATTNRT_OK) << why.text();
  EXPECT_EQ(g_seen, nullptr);
}

TEST_F(AdapterWithVendorA, ADeclaredRequiredBlockReachesTheClassAnUndeclaredOneDoesNot) {
  const attnrt_extension a = block(kVendorA);
  attnrt_attention_desc d = valid_desc();
  d.extensions = &a;
  MessageBuffer why, err;
  EXPECT_EQ(supports(d, why), ATTNRT_OK) << why.text();
  EXPECT_EQ(g_seen, &a);
  EXPECT_EQ(forward(d, err), ATTNRT_OK) << err.text();
  const attnrt_extension b = block(kVendorB, 0, &a);
  d.extensions = &b;
  MessageBuffer why_b;
  EXPECT_EQ(supports(d, why_b), ATTNRT_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(why_b.text()).find("vendor extension 0xa77e0011 is required"), std::string::npos)
      << why_b.text();
}

}  // namespace
