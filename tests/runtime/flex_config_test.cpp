// attnrt.flex.<site> (harness/flex_config.hpp, issue 15): a site's flex_attention mods read from a
// config, every bad input an error naming file:line:column; FlexCall's block mask built from the
// mask_mod (create_block_mask's classification) and its visible-pair count; and the reference
// with a config's mods against the flex_attention plugin, including a deliberate mismatch (the
// plugin run with one config's mask, the reference with another's) that must be caught.
#include <attnrt/harness/flex_config.hpp>
#include <attnrt/harness/reference.hpp>
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/settings.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "test_support.hpp"

namespace attnrt {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kSites = {"attn_implementation"};

// A safetensors file of the given tensors: {name, dtype ("I32", "F64", ...), shape}, zero-filled
// except int32 tensors, which count up.
struct StTensor {
  std::string name, dtype;
  std::vector<int64_t> shape;
};
void write_safetensors(const fs::path& path, const std::vector<StTensor>& tensors) {
  std::string header = "{", data;
  for (const StTensor& t : tensors) {
    int64_t n = 1;
    for (int64_t e : t.shape) n *= e;
    const int64_t bytes = n * (t.dtype == "F64" || t.dtype == "I64" ? 8 : t.dtype == "F16" ? 2 : 4);
    std::string shape;
    for (int64_t e : t.shape) shape += (shape.empty() ? "" : ",") + std::to_string(e);
    if (header.size() > 1) header += ",";
    header += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[" + shape + "],\"data_offsets\":[" +
              std::to_string(data.size()) + "," + std::to_string(data.size() + bytes) + "]}";
    std::string chunk(size_t(bytes), '\0');
    if (t.dtype == "I32") {
      for (int32_t i = 0; i < n; ++i) std::memcpy(&chunk[size_t(i) * 4], &i, 4);
    }
    data += chunk;
  }
  header += "}";
  while (header.size() % 8) header += ' ';
  std::ofstream out(path, std::ios::binary);
  const uint64_t len = header.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out << header << data;
}

class FlexConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    write_safetensors(
        dir_.path() / "aux.safetensors",
        {{"doc_ids", "I32", {2, 64}}, {"bias", "F32", {8}}, {"half", "F16", {4}}, {"big", "F32", {1, 1, 1, 1, 2}}});
    std::ofstream(dir_.path() / "window.cpp") << "const int d = q_idx - kv_idx;\nreturn d >= 0 && d <= 8;\n";
  }
  // The `attnrt.flex.attn_implementation` mapping of a config file in dir_ (its body indented by
  // six spaces: its keys are at line 4 onward, column 7).
  Config config(const std::string& site_body, const std::string& site = "attn_implementation") const {
    const std::string text = "attn_implementation: flex_attention\nattnrt:\n  flex:\n    " + site + ":\n" + site_body;
    return Config::from_string(text, (dir_.path() / "x.yaml").string());
  }
  std::string error_of(const std::string& site_body, const std::string& site = "attn_implementation") const {
    try {
      read_flex(config(site_body, site), kSites);
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  }
  // "<dir>/x.yaml:4:5", and the same with ": " as a message starts.
  std::string pos(int line, int column) const {
    return (dir_.path() / "x.yaml").string() + ":" + std::to_string(line) + ":" + std::to_string(column);
  }
  std::string at(int line, int column) const { return pos(line, column) + ": "; }
  test::TempDir dir_;
};

TEST_F(FlexConfig, ReadsInlineAndFileModsAuxScalarsAndBlockMask) {
  const FlexSpecs specs =
      read_flex(config("      mask_mod: {file: window.cpp}\n"
                       "      score_mod: score * scalar0\n"
                       "      score_mod_grad: scalar0\n"
                       "      aux: {file: aux.safetensors, tensors: [bias, doc_ids]}\n"
                       "      scalars: [0.5, 2]\n"
                       "      block_mask: {q_block_size: 16, kv_block_size: 32, broadcast_heads: true}\n"),
                kSites);
  ASSERT_EQ(specs.size(), 1u);
  const FlexSiteSpec& s = specs.at("attn_implementation");
  EXPECT_EQ(s.where, pos(4, 5));
  EXPECT_EQ(s.mask_mod.text, "const int d = q_idx - kv_idx;\nreturn d >= 0 && d <= 8;\n");
  EXPECT_EQ(s.mask_mod.origin, pos(5, 18) + " (window.cpp)");
  EXPECT_EQ(s.score_mod.text, "score * scalar0");
  EXPECT_EQ(s.score_mod_grad.text, "scalar0");
  ASSERT_EQ(s.aux_names, (std::vector<std::string>{"bias", "doc_ids"}));  // in the order given: aux0, aux1
  EXPECT_EQ(s.aux[0].shape(), (std::vector<int64_t>{8}));
  EXPECT_EQ(s.aux[1].shape(), (std::vector<int64_t>{2, 64}));
  EXPECT_EQ(s.scalars, (std::vector<float>{0.5f, 2.0f}));
  EXPECT_TRUE(s.block_mask.enabled);
  EXPECT_EQ(s.block_mask.q_block_size, 16);
  EXPECT_EQ(s.block_mask.kv_block_size, 32);
  EXPECT_TRUE(s.block_mask.broadcast_heads);
  EXPECT_FALSE(s.block_mask.broadcast_batch);
  EXPECT_NE(s.source_name().find("mask_mod at " + s.mask_mod.origin), std::string::npos);
  // block_mask: true is PyTorch's default 128 x 128.
  const FlexSpecs plain = read_flex(config("      mask_mod: q_idx >= kv_idx\n      block_mask: true\n"), kSites);
  EXPECT_TRUE(plain.at("attn_implementation").block_mask.enabled);
  EXPECT_EQ(plain.at("attn_implementation").block_mask.q_block_size, 128);
  // No attnrt.flex: nothing; and read_settings knows the key (no "unknown setting" warning).
  EXPECT_TRUE(read_flex(Config::from_string("attn_implementation: sdpa\n", "y.yaml"), kSites).empty());
  std::vector<std::string> warnings;
  read_settings(config("      mask_mod: q_idx >= kv_idx\n"), &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
}

TEST_F(FlexConfig, EveryBadInputNamesFileLineAndColumn) {
  struct Bad {
    std::string body, where, message;
  };
  const std::vector<Bad> bad = {
      {"      mask_mdo: q_idx >= kv_idx\n", at(5, 7),
       "unknown key 'attnrt.flex.attn_implementation.mask_mdo'; did you mean 'mask_mod'?"},
      {"      mask_mod: {fil: window.cpp}\n", at(5, 18),
       "unknown key 'attnrt.flex.attn_implementation.mask_mod.fil'; did you mean 'file'?"},
      {"      mask_mod: {file: nowhere.cpp}\n", at(5, 18),
       "mod file '" + (dir_.path() / "nowhere.cpp").string() + "' not found"},
      {"      mask_mod: \"  \"\n", at(5, 7), "attnrt.flex.attn_implementation.mask_mod is empty"},
      {"      mask_mod: [a, b]\n", at(5, 7), "must be the mod's text or {file: path}"},
      {"      mask_mod: q_idx >= kv_idx\n      aux: {file: missing.safetensors, tensors: [x]}\n", at(6, 13),
       "safetensors file '" + (dir_.path() / "missing.safetensors").string() + "' not found"},
      {"      mask_mod: q_idx >= kv_idx\n      aux: {file: aux.safetensors, tensors: [doc_id]}\n", at(6, 36),
       "(aux0): '" + (dir_.path() / "aux.safetensors").string() +
           "' has no tensor 'doc_id'; did you mean 'doc_ids'? (it has: bias, big, doc_ids, half)"},
      {"      mask_mod: q_idx >= kv_idx\n      aux: {file: aux.safetensors, tensors: [bias, half]}\n", at(6, 36),
       "(aux1): tensor 'half' of " + (dir_.path() / "aux.safetensors").string() +
           " is float16; an aux tensor must be int32, int64 or float32"},
      {"      mask_mod: q_idx >= kv_idx\n      aux: {file: aux.safetensors, tensors: [big]}\n", at(6, 36),
       "has 5 dimensions; an aux tensor has 1 to 4"},
      {"      mask_mod: q_idx >= kv_idx\n      aux: {file: aux.safetensors, tensors: [bias, bias]}\n", at(6, 36),
       "names 'bias' twice"},
      {"      mask_mod: q_idx >= kv_idx\n      aux: {file: aux.safetensors}\n", at(6, 7),
       "needs 'tensors: [name, ...]'"},
      {"      mask_mod: q_idx >= kv_idx\n      aux: {file: aux.safetensors, tensors: "
       "[a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q]}\n",
       at(6, 36), "lists 17 tensors; a call takes at most 16"},
      {"      mask_mod: q_idx >= kv_idx\n      scalars: [1, two]\n", at(6, 7),
       "attnrt.flex.attn_implementation.scalars[1] must be a number, got 'two'"},
      {"      mask_mod: q_idx >= kv_idx\n      scalars: 3\n", at(6, 7), "scalars must be a list of numbers"},
      {"      mask_mod: q_idx >= kv_idx\n      block_mask: {q_block_size: 0}\n", at(6, 20),
       "q_block_size must be between 1 and 65536, got 0"},
      {"      mask_mod: q_idx >= kv_idx\n      block_mask: {kv_blocksize: 64}\n", at(6, 20),
       "did you mean 'kv_block_size'?"},
      {"      mask_mod: q_idx >= kv_idx\n      block_mask: {broadcast_heads: maybe}\n", at(6, 20),
       "broadcast_heads must be true or false, got 'maybe'"},
      {"      mask_mod: q_idx >= kv_idx\n      block_mask: sometimes\n", at(6, 7),
       "must be true, false or {q_block_size: N, kv_block_size: N}"},
      {"      scalars: [1]\n", at(4, 5), "gives neither a score_mod nor a mask_mod"},
      {"      mask_mod: q_idx >= kv_idx\n      score_mod_grad: 1.0f\n", at(6, 7),
       "a score_mod_grad without a score_mod"},
      {"      score_mod: score\n      block_mask: true\n", at(6, 7),
       "block_mask is built from the mask_mod, and the site gives none"},
      {"      - q_idx >= kv_idx\n", at(4, 5), "must be a mapping of the site's mods"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.body);
    const std::string e = error_of(b.body);
    EXPECT_EQ(e.rfind(b.where, 0), 0u) << e;
    EXPECT_NE(e.find(b.message), std::string::npos) << e;
  }
  // A site that is not an attention site of the config, with "did you mean".
  const std::string e = error_of("      mask_mod: q_idx >= kv_idx\n", "attn_implementaton");
  EXPECT_EQ(e.rfind(at(4, 5), 0), 0u) << e;
  EXPECT_NE(e.find("attnrt.flex names 'attn_implementaton', which is no attention site of the configuration; did you "
                   "mean 'attn_implementation'? (sites: attn_implementation)"),
            std::string::npos)
      << e;
  // attnrt.flex itself must be a mapping.
  try {
    read_flex(Config::from_string("attnrt:\n  flex: [a]\n", (dir_.path() / "x.yaml").string()), kSites);
    ADD_FAILURE() << "no error";
  } catch (const Error& err) {
    EXPECT_EQ(std::string(err.what()).rfind(at(2, 3), 0), 0u) << err.what();
  }
  // A mod file over the ABI's 64 KiB.
  std::ofstream(dir_.path() / "huge.cpp") << std::string(64 * 1024 + 1, ' ');
  EXPECT_NE(error_of("      mask_mod: {file: huge.cpp}\n").find("is 65537 bytes; a mod is at most 65536 bytes"),
            std::string::npos);
}

// A workload of `batch` sequences of 64 (fp32, GQA 4/2, head_dim 16).
Workload small_workload(int batch = 2, bool causal = false) {
  WorkloadSpec w;
  w.batch = batch;
  w.seqlen_q = 64;
  w.heads_q = 4;
  w.heads_kv = 2;
  w.head_dim = 16;
  w.causal = causal;
  w.seed = 5;
  return make_workload(w);
}

TEST_F(FlexConfig, BlockMaskFromMaskModClassifiesEveryBlockAndCountsVisiblePairs) {
  const FlexSpecs specs = read_flex(
      config("      mask_mod: q_idx >= kv_idx\n      block_mask: {q_block_size: 16, kv_block_size: 16}\n"), kSites);
  const Workload w = small_workload();
  const FlexCall call(specs.at("attn_implementation"), w);
  // Per (sequence, head) 4 x 4 blocks: the diagonal partial, below it full, above it skipped.
  EXPECT_EQ(call.partial_blocks(), 2 * 4 * 4);
  EXPECT_EQ(call.full_blocks(), 2 * 4 * 6);
  EXPECT_EQ(call.skipped_blocks(), 2 * 4 * 6);
  EXPECT_EQ(call.visible_pairs(), 2.0 * 4 * 64 * 65 / 2);
  EXPECT_EQ(call.forward_flops(), 2.0 * (16 + 16) * call.visible_pairs());
  // With the descriptor's own sliding window on top: its pairs and mask_mod's together.
  const Workload windowed = [] {
    WorkloadSpec s;
    s.batch = 1;
    s.seqlen_q = 64;
    s.heads_q = s.heads_kv = 1;
    s.head_dim = 16;
    s.window_left = 3;
    s.window_right = 3;
    return make_workload(s);
  }();
  const FlexCall both(specs.at("attn_implementation"), windowed);
  EXPECT_EQ(both.visible_pairs(), 64 * 4 - (1 + 2 + 3));  // q_idx - kv_idx in [0, 3], rows 0-2 short
}

TEST_F(FlexConfig, ModThatDoesNotCompileNamesTheModItsLineAndTheConfig) {
  const FlexSpecs specs = read_flex(
      config("      mask_mod: |\n        const int d = q_idx - kv_idx;\n        return d >= 0 &&;\n"), kSites);
  try {
    const FlexCall call(specs.at("attn_implementation"), small_workload());
    ADD_FAILURE() << "compiled";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(at(4, 5) + "attnrt.flex.attn_implementation: flex_attention: the mods do not compile", 0), 0u)
        << m;
    EXPECT_NE(m.find("mask_mod:2:"), std::string::npos) << m;
    EXPECT_NE(m.find("mask_mod at " + pos(5, 7)), std::string::npos) << m;
  }
  // An aux read outside the tensor while the block mask is built (ids for 2 sequences, 3 asked).
  const FlexSpecs oob = read_flex(config("      mask_mod: aux0(b, q_idx) == aux0(b, kv_idx)\n"
                                         "      aux: {file: aux.safetensors, tensors: [doc_ids]}\n"),
                                  kSites);
  try {
    const FlexCall call(oob.at("attn_implementation"), small_workload(3));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("read aux0 outside its shape"), std::string::npos) << e.what();
  }
}

// The plugin with one config's mods against the reference with the same mods (passes) and with
// another config's, whose mask differs by one position (must fail): the reference really
// evaluates the config's mods.
TEST_F(FlexConfig, ReferenceWithTheConfigsModsAgreesWithThePluginAndCatchesAnotherMask) {
  const std::string common =
      "      score_mod: score - scalar0 * float(q_idx - kv_idx)\n"
      "      score_mod_grad: \"1.0f\"\n"
      "      scalars: [0.1]\n"
      "      block_mask: {q_block_size: 16, kv_block_size: 16}\n";
  const FlexSpecs eight = read_flex(config("      mask_mod: {file: window.cpp}\n" + common), kSites);
  const FlexSpecs seven =
      read_flex(config("      mask_mod: q_idx - kv_idx >= 0 && q_idx - kv_idx <= 7\n" + common), kSites);
  Workload w = small_workload();
  FlexCall call(eight.at("attn_implementation"), w), other(seven.at("attn_implementation"), w);
  attnrt_attention_desc d = w.desc;
  call.attach(d);
  const auto backend = test::builtin_backend("flex_attention");
  attnrt_forward_args fa = w.forward_args();
  backend->forward(d, fa, 0);
  const ReferenceMods same = call.reference_mods(), differ = other.reference_mods();
  const ReferenceForward ref = reference_forward(d, fa, &same), wrong = reference_forward(d, fa, &differ);
  call.check_reads();
  EXPECT_LT(max_abs_error(*w.out.dl(), ref.out), 1e-5);
  EXPECT_GT(max_abs_error(*w.out.dl(), wrong.out), 1e-2);
  // Backward, with score_mod_grad, against the reference's gradients.
  attnrt_backward_args ba = w.backward_args();
  backend->backward(d, ba, 0);
  const ReferenceBackward g = reference_backward(d, fa, *w.dout.dl(), &same);
  EXPECT_LT(max_abs_error(*w.dq.dl(), g.dq), 1e-4);
  EXPECT_LT(max_abs_error(*w.dk.dl(), g.dk), 1e-4);
  EXPECT_LT(max_abs_error(*w.dv.dl(), g.dv), 1e-4);
  EXPECT_EQ(call.backward_refusal(), "");
  // Without score_mod_grad a backward is refused, with the reason.
  const FlexSpecs no_grad = read_flex(config("      score_mod: score * 0.5f\n"), kSites);
  const FlexCall ng(no_grad.at("attn_implementation"), w);
  EXPECT_NE(ng.backward_refusal().find("score_mod without score_mod_grad"), std::string::npos);
}

}  // namespace
}  // namespace attnrt
