// `attnrt run` and `attnrt bench` with flex_attention mods from a config (attnrt.flex, issue 15),
// on configs/examples/flex_document_window.yaml: the run passes against the reference with the
// same mods, forward and backward; a block mask that disagrees with the mask_mod (a wrong
// broadcast claim) fails it; a mod that does not compile fails the site with the mod's name and
// line; backends that cannot take the block are passed over (or fail the site under strict);
// bench produces rows for the config's mods.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "test_support.hpp"

namespace attnrt {
namespace {

using test::run_cli;

const std::string kExample = "configs/examples/flex_document_window.yaml";

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

nlohmann::json json_of(const std::string& output) {
  const size_t at = output.find("{\n");
  if (at == std::string::npos) return nlohmann::json{{"output", output}};
  return nlohmann::json::parse(output.substr(at, output.rfind('}') - at + 1));
}

TEST(FlexFromConfig, RunPassesAgainstTheReferenceWithTheSameModsForwardAndBackward) {
  const auto r = run_cli("run " + kExample + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = json_of(r.output);
  ASSERT_EQ(j["sites"].size(), 1u) << r.output;
  const auto& site = j["sites"][0];
  EXPECT_EQ(site["chosen"], "flex_attention");
  EXPECT_TRUE(site["passed"].get<bool>());
  EXPECT_GT(site["backward_ms"].get<double>(), 0.0) << "backward ran (the config gives score_mod_grad)";
  EXPECT_TRUE(contains(site["flex"], "block mask 8x8")) << site["flex"];
  EXPECT_TRUE(contains(site["flex"], "aux0 document_ids int32 [2, 96]")) << site["flex"];
  // The table says the same, with the mods' summary as a note.
  const auto t = run_cli("run " + kExample);
  EXPECT_EQ(t.exit_code, 0) << t.output;
  EXPECT_TRUE(contains(t.output, "PASS")) << t.output;
  EXPECT_TRUE(contains(t.output, "attn_implementation: flex_attention mods: score_mod (+grad), mask_mod")) << t.output;
}

// resolve attaches the site's flex block as run does, so both name the same backend: under auto,
// sdpa and eager are passed over with the extension's reason and flex_attention is chosen.
TEST(FlexFromConfig, ResolveSeesTheModsAsRunDoes) {
  const auto r = run_cli("resolve " + kExample + " attn_implementation=auto --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find("[\n")));
  ASSERT_EQ(j.size(), 1u) << r.output;
  EXPECT_EQ(j[0]["chosen"], "flex_attention") << r.output;
  bool sdpa_passed_over = false;
  for (const auto& a : j[0]["attempts"]) {
    if (a["candidate"] == "sdpa") sdpa_passed_over = contains(a["rejected_because"], "extension 'flex_attention'");
  }
  EXPECT_TRUE(sdpa_passed_over) << r.output;
  // A mod that does not compile fails the site's resolution with the compiler's message.
  const auto bad = run_cli("resolve " + kExample + " '++attnrt.flex.attn_implementation.score_mod=score +'");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_TRUE(contains(bad.output, "score_mod")) << bad.output;
}

// The deliberate mismatch: with broadcast_batch the block mask is built from sequence 0's
// documents alone, which sequence 1 does not share, so the plugin skips blocks (and trusts "full"
// blocks) that mask_mod says otherwise about; the reference, evaluating mask_mod on every pair,
// must fail the run.
TEST(FlexFromConfig, BlockMaskThatDisagreesWithTheMaskModFailsTheRun) {
  const auto r = run_cli("run " + kExample + " +attnrt.flex.attn_implementation.block_mask.broadcast_batch=true");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "FAIL")) << r.output;
  EXPECT_TRUE(contains(r.output, "result outside tolerance of the fp64 reference")) << r.output;
}

TEST(FlexFromConfig, ModThatDoesNotCompileFailsTheSiteNamingTheModAndLine) {
  const auto r = run_cli("run " + kExample + " '++attnrt.flex.attn_implementation.score_mod=score +'");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "attnrt.flex.attn_implementation: flex_attention: the mods do not compile"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "score_mod:2:")) << r.output;  // the expression's closing line
  EXPECT_TRUE(contains(r.output, "score_mod at override '++attnrt.flex.attn_implementation.score_mod=score +'"))
      << r.output;
}

TEST(FlexFromConfig, BackendsThatCannotTakeTheModsArePassedOverOrFailUnderStrict) {
  const auto r = run_cli("run " + kExample + " attn_implementation=sdpa --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = json_of(r.output);
  const auto& site = j["sites"][0];
  EXPECT_EQ(site["chosen"], "flex_attention");
  EXPECT_TRUE(site["fell_back"].get<bool>());
  EXPECT_TRUE(contains(site["attempts"][0]["rejected_because"], "extension 'flex_attention'")) << site.dump(2);
  const auto strict = run_cli("run " + kExample + " attn_implementation=sdpa attnrt.strict=true");
  EXPECT_EQ(strict.exit_code, 1) << strict.output;
  EXPECT_TRUE(contains(strict.output, "strict mode")) << strict.output;
  EXPECT_TRUE(contains(strict.output, "sdpa: extension 'flex_attention' (type 1) is required")) << strict.output;
}

TEST(FlexFromConfig, ScoreModWithoutGradientRunsForwardAndSaysWhyNoBackward) {
  const auto r = run_cli("run " + kExample + " '~attnrt.flex.attn_implementation.score_mod_grad'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "backward not run: attnrt.flex.attn_implementation gives a score_mod without "
                       "score_mod_grad"))
      << r.output;
}

TEST(FlexFromConfig, ConfigErrorsStopTheRunWithFileAndLine) {
  const auto r = run_cli("run " + kExample + " '+attnrt.flex.attn_implementation.mask_modd=q_idx >= kv_idx'");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "unknown key 'attnrt.flex.attn_implementation.mask_modd'; did you mean 'mask_mod'?"))
      << r.output;
  const auto missing = run_cli("run " + kExample + " attnrt.flex.attn_implementation.aux.file=nowhere.safetensors");
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_TRUE(contains(missing.output, "safetensors file 'nowhere.safetensors' not found")) << missing.output;
}

TEST(FlexFromConfig, BenchTimesTheConfigsModsAndCountsVisiblePairs) {
  const std::string shape =
      " --dtype fp32 --hdim 32 --seqlen 96 --tokens 192 --hidden 128 --mask none --warmup 0 "
      "--iterations 1";
  const auto r = run_cli("bench " + kExample + shape + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "flex_attention mods of attnrt.flex.attn_implementation")) << r.output;
  const nlohmann::json rows = json_of(r.output)["rows"];
  ASSERT_EQ(rows.size(), 2u) << r.output;  // flex_attention (the default with mods), fwd and bwd
  for (const auto& row : rows) {
    EXPECT_EQ(row["backend"], "flex_attention");
    EXPECT_EQ(row["note"], "") << row.dump();
    EXPECT_GT(row["ms"].get<double>(), 0.0);
    EXPECT_GT(row["tflops"].get<double>(), 0.0);
  }
  EXPECT_EQ(rows[0]["case"], "D32_S96_B2_H4_full_flex_fwd");
  // Another backend named beside it is n/a with its reason; a shape the aux does not cover is
  // n/a with the out-of-shape read; an unknown --flex-site is an error.
  const auto two = run_cli("bench " + kExample + shape + " --backends flex_attention,sdpa --json");
  ASSERT_EQ(two.exit_code, 0) << two.output;
  const nlohmann::json both = json_of(two.output)["rows"];
  ASSERT_EQ(both.size(), 4u);
  EXPECT_TRUE(contains(both[2]["note"], "extension 'flex_attention'")) << both[2].dump();
  const auto uncovered =
      run_cli("bench " + kExample + " --dtype fp32 --hdim 32 --seqlen 48 --tokens 192 --hidden 128 --mask none --json");
  ASSERT_EQ(uncovered.exit_code, 0) << uncovered.output;
  EXPECT_TRUE(contains(json_of(uncovered.output)["rows"][0]["note"], "read aux0 outside its shape"))
      << uncovered.output;
  const auto bad = run_cli("bench " + kExample + shape + " --flex-site critic");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(contains(bad.output, "--flex-site critic: the configuration gives no attnrt.flex.critic")) << bad.output;
}

}  // namespace
}  // namespace attnrt
