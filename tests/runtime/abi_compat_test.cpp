// ABI growth, from the host's side (sdk/ABI_CHANGELOG.md): a plugin built against the ABI 1.0
// header keeps loading and computing, but is never sent an extension chain (refused for such a
// call, with the reason, before its supports() runs; resolution falls back); 1.1 plugins refuse
// required extensions they do not implement and ignore optional ones; a malformed chain is an
// invalid argument; and `attnrt check`'s extensions check on each kind of plugin.
#include <attnrt/harness/reference.hpp>
#include <attnrt/harness/workload.hpp>
#include <attnrt/plugin.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/plugin_library.hpp>
#include <attnrt/runtime/resolver.hpp>
#include <attnrt/runtime/runtime.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../fixtures/plugins/out_scale_extension.h"
#include "test_support.hpp"

#include <cmath>
#include <cstring>
#include <map>

namespace attnrt {
namespace {

using test::error_of;

using test::fixtures;

std::filesystem::path old_plugin() { return fixtures() / "abi/c_reference_v1_0/libattnrt_c_reference_v1_0.so"; }
std::filesystem::path new_c_plugin() { return fixtures() / "plugins/c_reference/libattnrt_c_reference.so"; }
std::filesystem::path ext_plugin() { return fixtures() / "abi/ext_reference/libattnrt_ext_reference.so"; }

constexpr uint32_t kUnknownVendor = 0xA77E00FFu;  // implemented by no plugin

// fp32, GQA, causal, ragged (seqlen_q != seqlen_k), LSE: what every plugin here supports.
Workload small_workload() {
  WorkloadSpec spec;
  spec.batch = 2;
  spec.seqlen_q = 9;
  spec.seqlen_k = 13;
  spec.heads_q = 4;
  spec.heads_kv = 2;
  spec.head_dim = 16;
  spec.causal = true;
  spec.backward = false;
  spec.seed = 7;
  Workload w = make_workload(spec);
  w.desc.device = DLDevice{kDLCPU, 0};
  return w;
}

// Runs forward on NaN-poisoned outputs and returns out's bytes.
std::vector<float> run(Backend& backend, Workload& w) {
  w.out.fill_nan();
  if (!w.lse.empty()) w.lse.fill_nan();
  backend.forward(w.desc, w.forward_args(), 1);
  const float* p = w.out.data_as<float>();
  return std::vector<float>(p, p + w.out.numel());
}

double max_error_vs_reference(const Workload& w, const std::vector<float>& out, double scale = 1.0) {
  Workload copy = w;
  const ReferenceForward ref = reference_forward(copy.desc, copy.forward_args());
  double worst = 0;
  for (size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::abs(out[i] - scale * ref.out[i]));
  return worst;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ---------------------------------------------------------------- a plugin built against ABI 1.0

TEST(AbiCompat, OldHeaderPluginLoadsAsVersion10) {
  auto lib = PluginLibrary::open(old_plugin());
  EXPECT_EQ(lib->name(), "c_reference_v1_0");
  EXPECT_EQ(lib->abi_version(), "1.0");
  EXPECT_EQ(lib->api().struct_size, size_t{ATTNRT_PLUGIN_API_SIZE_V1_0});
  EXPECT_EQ(PluginLibrary::open(new_c_plugin())->abi_version(), "1.4") << "the same source, built against 1.4";
}

TEST(AbiCompat, OldHeaderPluginComputesWhatTheNewBuildAndTheReferenceCompute) {
  Backend old_backend(PluginLibrary::open(old_plugin()));
  Backend new_backend(PluginLibrary::open(new_c_plugin()));
  Workload w = small_workload();
  ASSERT_EQ(old_backend.unsupported_reason(w.desc), "");
  const std::vector<float> old_out = run(old_backend, w);
  const std::vector<float> new_out = run(new_backend, w);
  EXPECT_LT(max_error_vs_reference(w, old_out), 1e-5);
  EXPECT_EQ(std::memcmp(old_out.data(), new_out.data(), old_out.size() * sizeof(float)), 0)
      << "the same source gives the same bits under either header";
}

TEST(AbiCompat, OldHeaderPluginIsRefusedAnyExtensionByTheHost) {
  Backend backend(PluginLibrary::open(old_plugin()));
  Workload w = small_workload();
  ASSERT_EQ(backend.unsupported_reason(w.desc), "") << "without extensions it is accepted";
  for (const uint32_t flags : {0u, static_cast<uint32_t>(ATTNRT_EXTENSION_OPTIONAL)}) {
    const attnrt_extension block{sizeof(attnrt_extension), kUnknownVendor, flags, nullptr};
    w.desc.extensions = &block;
    EXPECT_EQ(backend.unsupported_reason(w.desc), "built against ABI 1.0; vendor extension 0xa77e00ff needs ABI 1.1")
        << "flags " << flags;
    // The plugin itself cannot see the chain (its descriptor ends at cuda_arch) and would accept
    // the call: the refusal is the host's, before the plugin's supports().
    sdk::MessageBuffer why;
    attnrt_instance* inst = nullptr;
    const attnrt_plugin_api& api = backend.library().api();
    attnrt_host_info host{sizeof host, ATTNRT_ABI_VERSION_MAJOR, ATTNRT_ABI_VERSION_MINOR, nullptr, nullptr};
    ASSERT_EQ(api.create(&host, &inst, why.get()), ATTNRT_OK);
    EXPECT_EQ(api.supports(inst, &w.desc, why.get()), ATTNRT_OK) << why.text();
    api.destroy(inst);
    // forward refuses too, and computes nothing.
    w.out.fill_nan();
    EXPECT_EQ(
        error_of([&] { backend.forward(w.desc, w.forward_args(), 1); }),
        "unsupported|c_reference_v1_0: forward: built against ABI 1.0; vendor extension 0xa77e00ff needs ABI 1.1");
    EXPECT_TRUE(std::isnan(w.out.data_as<float>()[0]));
  }
  w.desc.extensions = nullptr;
  EXPECT_LT(max_error_vs_reference(w, run(backend, w)), 1e-5) << "and without them it computes again";
}

TEST(AbiCompat, AnAttnrtTypeNewerThanThePluginIsNotSentToIt) {
  // Type 7 is in attnrt's own range but defined by no minor up to 1.4: a 1.4 plugin cannot know
  // it, optional or not.
  Backend backend(PluginLibrary::open(new_c_plugin()));
  Workload w = small_workload();
  const attnrt_extension block{sizeof(attnrt_extension), 7, ATTNRT_EXTENSION_OPTIONAL, nullptr};
  w.desc.extensions = &block;
  EXPECT_EQ(backend.unsupported_reason(w.desc),
            "built against ABI 1.4; extension type 7 (not defined in ABI 1.4) needs ABI 1.5");
}

TEST(AbiCompat, BackwardIsGatedToo) {
  Backend eager(PluginLibrary::open(test::plugins_dir() / "eager/libattnrt_eager.so"));
  ASSERT_TRUE(eager.has_backward());
  WorkloadSpec spec;
  spec.batch = 1;
  spec.seqlen_q = 5;
  spec.heads_q = 2;
  spec.head_dim = 8;
  spec.backward = true;
  Workload b = make_workload(spec);
  b.desc.device = DLDevice{kDLCPU, 0};
  eager.forward(b.desc, b.forward_args(), 1);
  EXPECT_EQ(error_of([&] { eager.backward(b.desc, b.backward_args(), 1); }), "") << "the plain call runs";
  b.dq.fill_nan();
  const attnrt_extension block{sizeof(attnrt_extension), 7, 0, nullptr};
  b.desc.extensions = &block;
  EXPECT_EQ(
      error_of([&] { eager.backward(b.desc, b.backward_args(), 1); }),
      "unsupported|eager: backward: built against ABI 1.4; extension type 7 (not defined in ABI 1.4) needs ABI 1.5");
  EXPECT_TRUE(std::isnan(b.dq.data_as<float>()[0])) << "nothing computed";
}

// ---------------------------------------------------------------- ABI 1.2 additions

TEST(AbiCompat, OldPluginIsNeverSentPagedVarlenQueriesOrAnAppend) {
  Backend old_backend(PluginLibrary::open(old_plugin()));
  Workload w = small_workload();
  w.desc.is_paged = 1;
  w.desc.page_size = 16;
  w.desc.is_varlen = 1;
  EXPECT_EQ(old_backend.unsupported_reason(w.desc),
            "built against ABI 1.0; varlen queries over a paged KV cache (is_paged with is_varlen) need ABI 1.2");
  EXPECT_FALSE(old_backend.has_append_kv());
  attnrt_append_kv_args a{};
  a.struct_size = sizeof a;
  const attnrt_exec exec{sizeof exec, nullptr, nullptr, 0, 1};
  EXPECT_EQ(error_of([&] { old_backend.append_kv(w.desc, a, exec); }),
            "unsupported|c_reference_v1_0: append_kv: built against ABI 1.0; append_kv needs ABI 1.2");
  // A 1.2 plugin without an append says so.
  Backend new_backend(PluginLibrary::open(new_c_plugin()));
  EXPECT_FALSE(new_backend.has_append_kv());
  EXPECT_EQ(error_of([&] { new_backend.append_kv(w.desc, a, exec); }),
            "unsupported|c_reference: append_kv: the plugin does not implement it");
  // The 1.2 reference plugins have one.
  EXPECT_TRUE(Backend(PluginLibrary::open(test::plugins_dir() / "eager/libattnrt_eager.so")).has_append_kv());
}

// ---------------------------------------------------------------- ABI 1.4 additions

TEST(AbiCompat, CreateBlockMaskIsRefusedByPluginsWithoutIt) {
  Workload w = small_workload();
  attnrt_block_mask_args a{};
  a.struct_size = sizeof a;
  const attnrt_exec exec{sizeof exec, nullptr, nullptr, 0, 1};
  Backend old_backend(PluginLibrary::open(old_plugin()));
  EXPECT_FALSE(old_backend.has_create_block_mask());
  EXPECT_EQ(error_of([&] { old_backend.create_block_mask(w.desc, a, exec); }),
            "unsupported|c_reference_v1_0: create_block_mask: built against ABI 1.0; create_block_mask needs ABI 1.4");
  Backend new_backend(PluginLibrary::open(new_c_plugin()));
  EXPECT_FALSE(new_backend.has_create_block_mask());
  EXPECT_EQ(error_of([&] { new_backend.create_block_mask(w.desc, a, exec); }),
            "unsupported|c_reference: create_block_mask: the plugin does not implement it");
  EXPECT_FALSE(Backend(PluginLibrary::open(test::plugins_dir() / "eager/libattnrt_eager.so")).has_create_block_mask());
  EXPECT_TRUE(Backend(PluginLibrary::open(test::plugins_dir() / "flex_attention/libattnrt_flex_attention.so"))
                  .has_create_block_mask());
}

// ---------------------------------------------------------------- 1.1 plugins

// Required unknown: refused with a reason naming the type, forward UNSUPPORTED. Optional unknown:
// accepted, the same bits as without it (and those are right).
void expect_unknown_extensions_handled(const std::filesystem::path& lib, const std::string& required_reason) {
  Backend backend(PluginLibrary::open(lib));
  Workload w = small_workload();
  const std::vector<float> plain = run(backend, w);
  EXPECT_LT(max_error_vs_reference(w, plain), 1e-5);

  attnrt_extension block{sizeof(attnrt_extension), kUnknownVendor, 0, nullptr};
  w.desc.extensions = &block;
  EXPECT_EQ(backend.unsupported_reason(w.desc), required_reason);
  const std::string e = error_of([&] { backend.forward(w.desc, w.forward_args(), 1); });
  EXPECT_EQ(e.rfind("unsupported|", 0), 0u) << e;
  EXPECT_TRUE(contains(e, "0xa77e00ff")) << e;

  block.flags = ATTNRT_EXTENSION_OPTIONAL;
  EXPECT_EQ(backend.unsupported_reason(w.desc), "");
  const std::vector<float> hinted = run(backend, w);
  EXPECT_EQ(std::memcmp(plain.data(), hinted.data(), plain.size() * sizeof(float)), 0);
}

TEST(AbiCompat, CxxHelperPluginRefusesRequiredAndIgnoresOptionalUnknownExtensions) {
  const auto eager = test::plugins_dir() / "eager/libattnrt_eager.so";
  ASSERT_EQ(PluginLibrary::open(eager)->abi_version(), "1.4");
  expect_unknown_extensions_handled(eager,
                                    "vendor extension 0xa77e00ff is required (not flagged "
                                    "ATTNRT_EXTENSION_OPTIONAL) and this plugin does not implement it");
}

TEST(AbiCompat, PlainC11PluginRefusesRequiredAndIgnoresOptionalUnknownExtensions) {
  expect_unknown_extensions_handled(new_c_plugin(), "required extension type 0xa77e00ff is not implemented");
}

TEST(AbiCompat, APluginHonoursTheExtensionItDeclares) {
  Backend backend(PluginLibrary::open(ext_plugin()));
  Workload w = small_workload();
  EXPECT_LT(max_error_vs_reference(w, run(backend, w)), 1e-5);
  attnrt_test_out_scale scale{{sizeof(attnrt_test_out_scale), ATTNRT_TEST_OUT_SCALE_TYPE, 0, nullptr}, -2.5f};
  w.desc.extensions = &scale.header;
  ASSERT_EQ(backend.unsupported_reason(w.desc), "");
  EXPECT_LT(max_error_vs_reference(w, run(backend, w), -2.5), 1e-5) << "out scaled by the block's -2.5";
  // Others refuse the same call instead of computing it unscaled.
  Backend eager(PluginLibrary::open(test::plugins_dir() / "eager/libattnrt_eager.so"));
  EXPECT_TRUE(contains(eager.unsupported_reason(w.desc), "vendor extension 0xa77e0001 is required"))
      << eager.unsupported_reason(w.desc);
  // An unknown required block after it is still refused; an optional one is not.
  attnrt_extension unknown{sizeof(attnrt_extension), kUnknownVendor, 0, nullptr};
  scale.header.next = &unknown;
  EXPECT_TRUE(contains(backend.unsupported_reason(w.desc), "vendor extension 0xa77e00ff is required"));
  unknown.flags = ATTNRT_EXTENSION_OPTIONAL;
  EXPECT_EQ(backend.unsupported_reason(w.desc), "");
  EXPECT_LT(max_error_vs_reference(w, run(backend, w), -2.5), 1e-5);
}

// ---------------------------------------------------------------- malformed chains

TEST(AbiCompat, AMalformedChainIsAnInvalidArgumentNotAFallback) {
  Backend backend(PluginLibrary::open(new_c_plugin()));
  Workload w = small_workload();
  attnrt_extension a{sizeof(attnrt_extension), kUnknownVendor, ATTNRT_EXTENSION_OPTIONAL, nullptr};
  a.next = &a;  // a cycle
  w.desc.extensions = &a;
  const std::string cycle =
      "desc.extensions: the chain has more than 64 blocks (ATTNRT_EXTENSION_CHAIN_MAX); is it a cycle?";
  EXPECT_EQ(error_of([&] { backend.forward(w.desc, w.forward_args(), 1); }),
            "invalid argument|c_reference: forward: " + cycle);
  EXPECT_EQ(error_of([&] { (void)backend.unsupported_reason(w.desc); }), "invalid argument|" + cycle);
  a.next = nullptr;
  a.struct_size = 16;
  EXPECT_EQ(error_of([&] { backend.forward(w.desc, w.forward_args(), 1); }),
            "invalid argument|c_reference: forward: desc.extensions: block 0 has struct_size 16, smaller than the "
            "extension header's 24 bytes");
  // Also for the old plugin: the chain is checked before the ABI gate.
  Backend old_backend(PluginLibrary::open(old_plugin()));
  EXPECT_EQ(error_of([&] {
              (void)old_backend.unsupported_reason(w.desc);
            }).rfind("invalid argument|desc.extensions: block 0", 0),
            0u);
}

// ---------------------------------------------------------------- resolution

class AbiResolution : public ::testing::Test {
 protected:
  Resolver make(std::vector<std::string> chain) {
    Settings s;
    s.fallback["cpu"] = std::move(chain);
    const Deprecations d =
        Deprecations::from_yaml(YAML::Load(std::string(embedded_config("deprecations.yaml"))), "d.yaml");
    return Resolver(registry_, s, d, {}, probe_devices().cpu);
  }
  Registry registry_{{test::plugins_dir(), fixtures() / "abi"}};
};

TEST_F(AbiResolution, TheOldPluginIsSkippedWithItsReasonAndTheChainFallsBack) {
  Resolver r = make({"ext_reference", "eager"});
  Workload w = small_workload();
  Resolution plain = r.resolve("s", "c_reference_v1_0", w.desc);
  ASSERT_TRUE(plain.ok()) << plain.error;
  EXPECT_EQ(plain.chosen, "c_reference_v1_0") << "without extensions the old plugin serves the call";

  attnrt_test_out_scale scale{{sizeof(attnrt_test_out_scale), ATTNRT_TEST_OUT_SCALE_TYPE, 0, nullptr}, 0.5f};
  w.desc.extensions = &scale.header;
  Resolution a = r.resolve("s", "c_reference_v1_0", w.desc);
  ASSERT_TRUE(a.ok()) << a.error;
  EXPECT_EQ(a.chosen, "ext_reference");
  EXPECT_TRUE(a.fell_back);
  ASSERT_EQ(a.attempts.size(), 2u);
  EXPECT_EQ(a.attempts[0].candidate, "c_reference_v1_0");
  EXPECT_EQ(a.attempts[0].reason, "built against ABI 1.0; vendor extension 0xa77e0001 needs ABI 1.1");
  EXPECT_LT(max_error_vs_reference(w, run(*a.backend, w), 0.5), 1e-5);

  // An optional hint: the old plugin is still skipped (it cannot tell a hint from a
  // requirement); the next one that can ignore it takes the call.
  const attnrt_extension hint{sizeof(attnrt_extension), kUnknownVendor, ATTNRT_EXTENSION_OPTIONAL, nullptr};
  w.desc.extensions = &hint;
  Resolution b = make({"eager"}).resolve("s", "c_reference_v1_0", w.desc);
  ASSERT_TRUE(b.ok()) << b.error;
  EXPECT_EQ(b.chosen, "eager");
  EXPECT_EQ(b.attempts[0].reason, "built against ABI 1.0; vendor extension 0xa77e00ff needs ABI 1.1");
}

// ABI 1.3's flex_attention block: a 1.0 plugin is never sent it (the host refuses it for the call
// before its supports(), which could not see the chain), a 1.3 plugin without flex refuses it by
// name, and the chain falls back to flex_attention, which computes the masked call.
TEST_F(AbiResolution, AFlexBlockSkipsOlderAndNonFlexPluginsWithTheirReasons) {
  Resolver r = make({"eager", "flex_attention"});
  Workload w = small_workload();
  const std::string mask = "kv_idx % 2 == 0";
  attnrt_flex_attention flex{};
  flex.header = {sizeof flex, ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION, 0, nullptr};
  flex.mask_mod = mask.c_str();
  w.desc.extensions = &flex.header;
  Resolution a = r.resolve("s", "c_reference_v1_0", w.desc);
  ASSERT_TRUE(a.ok()) << a.error;
  EXPECT_EQ(a.chosen, "flex_attention");
  ASSERT_EQ(a.attempts.size(), 3u);
  EXPECT_EQ(a.attempts[0].reason, "built against ABI 1.0; extension 'flex_attention' (type 1) needs ABI 1.3");
  EXPECT_EQ(a.attempts[1].reason,
            "extension 'flex_attention' (type 1) is required (not flagged ATTNRT_EXTENSION_OPTIONAL) and this plugin "
            "does not implement it");
  // Even keys only, on top of the descriptor's causal mask: the reference with the same rule.
  ReferenceMods mods;
  mods.visible = [](int64_t, int64_t, int64_t, int64_t j) { return j % 2 == 0; };
  const ReferenceForward ref = reference_forward(w.desc, w.forward_args(), &mods);
  w.out.fill_nan();
  a.backend->forward(w.desc, w.forward_args(), 1);
  EXPECT_LT(max_abs_error(*w.out.dl(), ref.out), 1e-5);
  w.desc.extensions = nullptr;
  const ReferenceForward plain = reference_forward(w.desc, w.forward_args());
  EXPECT_GT(max_abs_error(plain.out, ref.out), 1e-2) << "the mask changes the result";
}

TEST_F(AbiResolution, NoCandidateForARequiredUnknownExtensionListsEveryReason) {
  Resolver r = make({"ext_reference", "eager"});
  Workload w = small_workload();
  const attnrt_extension block{sizeof(attnrt_extension), kUnknownVendor, 0, nullptr};
  w.desc.extensions = &block;
  Resolution a = r.resolve("s", "c_reference_v1_0", w.desc);
  EXPECT_FALSE(a.ok());
  EXPECT_TRUE(contains(a.error, "- c_reference_v1_0: built against ABI 1.0; vendor extension 0xa77e00ff needs ABI 1.1"))
      << a.error;
  EXPECT_TRUE(contains(a.error, "- ext_reference: vendor extension 0xa77e00ff is required")) << a.error;
  EXPECT_TRUE(contains(a.error, "- eager: vendor extension 0xa77e00ff is required")) << a.error;
}

// ---------------------------------------------------------------- attnrt check

std::map<std::string, std::pair<std::string, std::string>> check_results(const std::filesystem::path& plugin, int* rc) {
  const auto r = test::run_cli("check '" + plugin.string() + "' --json");
  *rc = r.exit_code;
  const auto j = nlohmann::json::parse(r.output.substr(r.output.find("{\n")));
  std::map<std::string, std::pair<std::string, std::string>> m;
  for (const auto& c : j["checks"]) m[c["name"]] = {c["result"].get<std::string>(), c["detail"].get<std::string>()};
  return m;
}

TEST(AbiCheck, OldHeaderPluginPassesWithTheExtensionsCheckSkipped) {
  int rc = -1;
  const auto m = check_results(old_plugin().parent_path(), &rc);
  EXPECT_EQ(rc, 0);
  ASSERT_TRUE(m.count("extensions"));
  EXPECT_EQ(m.at("extensions").first, "SKIP");
  EXPECT_TRUE(contains(m.at("extensions").second, "built against ABI 1.0")) << m.at("extensions").second;
  EXPECT_EQ(m.at("numerics/cpu/fp32").first, "PASS") << m.at("numerics/cpu/fp32").second;
  ASSERT_TRUE(m.count("append-kv"));
  EXPECT_EQ(m.at("append-kv").first, "SKIP");
  EXPECT_TRUE(contains(m.at("append-kv").second, "built against ABI 1.0")) << m.at("append-kv").second;
}

TEST(AbiCheck, AppendKvIsCheckedWhereAdvertised) {
  int rc = -1;
  const auto eager = check_results(test::plugins_dir() / "eager", &rc);
  EXPECT_EQ(rc, 0);
  ASSERT_TRUE(eager.count("append-kv"));
  EXPECT_EQ(eager.at("append-kv").first, "PASS") << eager.at("append-kv").second;
  EXPECT_TRUE(contains(eager.at("append-kv").second, "slot_mapping")) << eager.at("append-kv").second;
  const auto c_ref = check_results(new_c_plugin().parent_path(), &rc);
  ASSERT_TRUE(c_ref.count("append-kv"));
  EXPECT_EQ(c_ref.at("append-kv").first, "SKIP") << "a 1.2 plugin without an append";
  EXPECT_TRUE(contains(c_ref.at("append-kv").second, "does not advertise")) << c_ref.at("append-kv").second;
}

TEST(AbiCheck, FlexIsCheckedWhereAdvertisedAndRefusedElsewhere) {
  int rc = -1;
  const auto flex = check_results(test::plugins_dir() / "flex_attention", &rc);
  EXPECT_EQ(rc, 0);
  ASSERT_TRUE(flex.count("flex"));
  EXPECT_EQ(flex.at("flex").first, "PASS") << flex.at("flex").second;
  EXPECT_TRUE(contains(flex.at("flex").second, "block mask")) << flex.at("flex").second;
  const auto eager = check_results(test::plugins_dir() / "eager", &rc);
  ASSERT_TRUE(eager.count("flex"));
  EXPECT_EQ(eager.at("flex").first, "SKIP");
  EXPECT_TRUE(contains(eager.at("flex").second, "refuses the block")) << eager.at("flex").second;
  const auto old = check_results(old_plugin().parent_path(), &rc);
  ASSERT_TRUE(old.count("flex"));
  EXPECT_EQ(old.at("flex").first, "SKIP");
  EXPECT_TRUE(contains(old.at("flex").second, "built against ABI 1.0")) << old.at("flex").second;
}

TEST(AbiCheck, BlockMaskIsCheckedWhereAdvertised) {
  int rc = -1;
  const auto flex = check_results(test::plugins_dir() / "flex_attention", &rc);
  EXPECT_EQ(rc, 0);
  ASSERT_TRUE(flex.count("block-mask"));
  EXPECT_EQ(flex.at("block-mask").first, "PASS") << flex.at("block-mask").second;
  const auto eager = check_results(test::plugins_dir() / "eager", &rc);
  ASSERT_TRUE(eager.count("block-mask"));
  EXPECT_EQ(eager.at("block-mask").first, "SKIP");
  EXPECT_TRUE(contains(eager.at("block-mask").second, "does not advertise")) << eager.at("block-mask").second;
  const auto old = check_results(old_plugin().parent_path(), &rc);
  EXPECT_EQ(old.at("block-mask").first, "SKIP");
  EXPECT_TRUE(contains(old.at("block-mask").second, "built against ABI 1.0")) << old.at("block-mask").second;
  // A plugin whose lists are not what mask_mod gives fails, naming the list and the row.
  const auto liar = check_results(fixtures() / "flawed/block_mask_liar", &rc);
  EXPECT_NE(rc, 0);
  ASSERT_TRUE(liar.count("block-mask"));
  EXPECT_EQ(liar.at("block-mask").first, "FAIL");
  EXPECT_TRUE(contains(liar.at("block-mask").second, "kv_num_blocks of (b, h) #0 row 0"))
      << liar.at("block-mask").second;
}

TEST(AbiCheck, Abi11PluginsPassTheExtensionsCheck) {
  for (const auto& plugin : {ext_plugin().parent_path(), new_c_plugin().parent_path()}) {
    int rc = -1;
    const auto m = check_results(plugin, &rc);
    EXPECT_EQ(rc, 0) << plugin;
    ASSERT_TRUE(m.count("extensions")) << plugin;
    EXPECT_EQ(m.at("extensions").first, "PASS") << plugin << ": " << m.at("extensions").second;
    EXPECT_TRUE(contains(m.at("extensions").second, "0xffffffff")) << m.at("extensions").second;
  }
}

TEST(AbiCheck, APluginThatIgnoresRequiredExtensionsFails) {
  int rc = -1;
  const auto m = check_results(fixtures() / "abi/ext_ignorer", &rc);
  EXPECT_EQ(rc, 1);
  ASSERT_TRUE(m.count("extensions"));
  EXPECT_EQ(m.at("extensions").first, "FAIL");
  EXPECT_TRUE(
      contains(m.at("extensions").second, "supports() accepted a required block of unknown vendor type 0xffffffff"))
      << m.at("extensions").second;
  EXPECT_EQ(m.at("numerics/cpu/fp32").first, "PASS") << "only the extensions check fails";
}

}  // namespace
}  // namespace attnrt
