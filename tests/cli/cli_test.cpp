// The attnrt CLI end to end, on the real MiniLM fixture and the configs/ examples.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace attnrt {
namespace {

using test::run_cli;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Cli, RunsTheEmbeddedDefault) {
  const auto r = run_cli("run --iterations 2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "all-MiniLM-L6-v2")) << r.output;
  EXPECT_TRUE(contains(r.output, "varlen (76 tokens")) << r.output;
  EXPECT_TRUE(contains(r.output, "INFO: attn_implementation: attention backend: sdpa")) << r.output;
  EXPECT_TRUE(contains(r.output, "1 passed, 0 failed")) << r.output;
}

// A plugin whose backward entry refuses the call (CUDA flex_attention today): run reports the
// forward's check and the refusal as a note, and the site passes on its forward.
TEST(Cli, RunReportsABackwardRefusedAtCallTimeAndKeepsTheForward) {
  test::TempDir dir;
  const auto config = dir.path() / "refuser.yaml";
  std::ofstream(config) << "attn_implementation: " << (test::fixtures() / "flawed/backward_refuser").string()
                        << "\nworkload: {batch: 1, seqlen_q: 16, heads_q: 2, head_dim: 16, dtype: fp32}\n";
  const auto r = run_cli("run " + config.string() + " --iterations 1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "backward not run: ")) << r.output;
  EXPECT_TRUE(contains(r.output, "backward_refuser has no backward for any call yet")) << r.output;
  EXPECT_TRUE(contains(r.output, "1 passed, 0 failed")) << r.output;
}

TEST(Cli, VerlActorEagerOverrideCriticDefaultChain) {
  const auto r = run_cli(
      "run configs/examples/verl_ppo.yaml +actor_rollout_ref.model.override_config.attn_implementation=eager --json "
      "--iterations 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Logs went to stderr (merged here); the JSON is the last object printed.
  const auto j = nlohmann::json::parse(r.output.substr(r.output.find("{\n")));
  ASSERT_EQ(j["sites"].size(), 2u);
  EXPECT_EQ(j["sites"][0]["site"], "actor_rollout_ref.model");
  EXPECT_EQ(j["sites"][0]["chosen"], "eager");
  EXPECT_EQ(j["sites"][0]["fell_back"], false);
  EXPECT_EQ(j["sites"][1]["site"], "critic.model");
  EXPECT_EQ(j["sites"][1]["requested"], "flash_attention_2") << "VERL's default for an unset override_config";
  EXPECT_EQ(j["sites"][1]["chosen"], "sdpa");
  EXPECT_EQ(j["sites"][1]["fell_back"], true);
  for (const auto& s : j["sites"]) {
    EXPECT_TRUE(s["passed"].get<bool>());
    EXPECT_LT(s["max_error"]["out"].get<double>(), 1e-5);
    EXPECT_LT(s["max_error_vs_source_model"].get<double>(), 1e-5) << "matches the model's own attention output";
  }
  EXPECT_TRUE(contains(r.output, "WARNING: critic.model: flash_attention_2 requested but not usable on cpu: " +
                                     test::fa2_reason_on_cpu()))
      << r.output;
  EXPECT_TRUE(contains(r.output, "Falling back to 'sdpa'")) << r.output;
}

TEST(Cli, PathToAPluginDirectoryLoadsThatPlugin) {
  const std::string dir = (test::fixtures() / "hf_style/c_reference_hf").string();
  const auto r = run_cli(
      "resolve configs/examples/verl_ppo_eager.yaml actor_rollout_ref.model.override_config.attn_implementation=" +
      dir + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output.substr(r.output.find("[\n")));
  EXPECT_EQ(j[0]["chosen"], "c_reference");
  EXPECT_EQ(j[0]["fell_back"], false);
  EXPECT_EQ(j[1]["chosen"], "eager");
}

// sdpa's products run on oneDNN, opened at run time: without it the plugin refuses with the
// loader's reason and the site falls back to eager; with it, sdpa is chosen.
TEST(Cli, SdpaWithoutOneDnnFallsBackToEagerWithTheReason) {
  const std::string args =
      "resolve configs/examples/verl_ppo_eager.yaml actor_rollout_ref.model.override_config.attn_implementation=sdpa";
  auto r = run_cli(args + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output.substr(r.output.find("[\n")));
  EXPECT_EQ(j[0]["chosen"], "sdpa") << r.output;
  r = run_cli(args + " --json", "ATTNRT_ONEDNN_LIBRARY=/nonexistent/libdnnl.so.2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  j = nlohmann::json::parse(r.output.substr(r.output.find("[\n")));
  EXPECT_EQ(j[0]["chosen"], "eager") << r.output;
  EXPECT_EQ(j[0]["fell_back"], true) << r.output;
  EXPECT_TRUE(
      contains(r.output, "oneDNN, which sdpa's tile products run on, could not be loaded: /nonexistent/libdnnl.so.2"))
      << r.output;
}

TEST(Cli, OtherAbiMajorIsRefusedNamingBothVersions) {
  const std::string so = (test::fixtures() / "broken/libattnrt_abi2.so").string();
  const auto r = run_cli("resolve configs/examples/strict_flash.yaml attn_implementation=" + so);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.output, "plugin ABI version 2.3 is incompatible with this runtime's ABI 1.4")) << r.output;
}

TEST(Cli, StrictWithAnUnavailableBackendListsEveryReason) {
  const auto r = run_cli("run configs/examples/strict_flash.yaml");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "strict mode: 'flash_attention_2' cannot be used on cpu")) << r.output;
  EXPECT_TRUE(contains(r.output, "flash_attention_2: " + test::fa2_reason_on_cpu())) << r.output;
  EXPECT_TRUE(contains(r.output, "0 passed, 1 failed")) << r.output;
}

TEST(Cli, HubNameFromThePluginPath) {
  const std::string env = "ATTNRT_PLUGIN_PATH='" + (test::fixtures() / "hub").string() + "'";
  auto r = run_cli(
      "resolve configs/examples/verl_ppo_eager.yaml "
      "actor_rollout_ref.model.override_config.attn_implementation=acme/c_reference",
      env);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "c_reference")) << r.output;
  r = run_cli(
      "resolve configs/examples/verl_ppo_eager.yaml "
      "actor_rollout_ref.model.override_config.attn_implementation=acme/nothing",
      env);
  EXPECT_TRUE(contains(r.output, "attnrt never downloads plugins")) << r.output;
}

TEST(Cli, SeedExamplesResolve) {
  auto r = run_cli("resolve configs/examples/train_gpt2_deprecated_flag.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "'use_flash_attention' is deprecated; use 'attn_implementation: flash_attention_2'"))
      << r.output;
  r = run_cli("resolve configs/examples/nanogpt_attention_backend.yaml attention_backend=manual");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "'manual' is a deprecated name; use 'eager'")) << r.output;
  // The example's path points into the default build folder; give it this build's plugin dir.
  r = run_cli(
      "run configs/examples/sink_plugin_path.yaml --iterations 1 "
      "actor_rollout_ref.model.override_config.attn_implementation=" +
      (test::plugins_dir() / "sdpa").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "window (128, 0) sinks")) << r.output;
  EXPECT_TRUE(contains(r.output, "attention backend: sdpa")) << r.output;
  EXPECT_FALSE(contains(r.output, "not usable")) << "the path itself must load: " << r.output;
}

TEST(Cli, MisspelledKeyGetsDidYouMean) {
  const auto r =
      run_cli("resolve configs/examples/verl_ppo.yaml +critic.model.override_config.attn_implementaton=eager");
  EXPECT_TRUE(contains(
      r.output, "unknown key 'attn_implementaton' next to an attention site; did you mean 'attn_implementation'?"))
      << r.output;
}

// The library prints nothing itself (log.hpp); the CLI prints what it hears, at the level of
// --log-level, else of the config's attnrt.log_level.
TEST(Cli, ConfigLogLevelIsTheCliLevelUnlessTheCommandLineChoseOne) {
  const std::string fallback = "configs/examples/verl_ppo.yaml";  // critic.model falls back on the CPU
  auto r = run_cli("resolve " + fallback);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "INFO: critic.model: attention backend: ")) << r.output;
  EXPECT_TRUE(contains(r.output, "WARNING: critic.model: flash_attention_2 requested but not usable")) << r.output;

  r = run_cli("resolve " + fallback + " attnrt.log_level=warning");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "INFO: ")) << r.output;
  EXPECT_TRUE(contains(r.output, "WARNING: critic.model: flash_attention_2 requested but not usable")) << r.output;

  r = run_cli("resolve " + fallback + " attnrt.log_level=off");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "WARNING: ")) << r.output;

  r = run_cli("--log-level info resolve " + fallback + " attnrt.log_level=off");
  EXPECT_TRUE(contains(r.output, "INFO: critic.model: attention backend: ")) << r.output;

  r = run_cli("resolve " + fallback + " attnrt.log_level=loud");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.output, "attnrt.log_level 'loud' is not one of debug, info, warning, error, off")) << r.output;
}

TEST(Cli, ErrorsAreOneClearLineAndNonZero) {
  auto r =
      run_cli("run configs/examples/verl_ppo.yaml actor_rollout_ref.model.override_config.attn_implementation=eager");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(
      contains(r.output, "error: override 'actor_rollout_ref.model.override_config.attn_implementation=eager': key"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "use '+actor_rollout_ref")) << r.output;

  test::TempDir dir;
  const auto bad = dir.write("bad.yaml", "attn_implementation: eager\nworkload: {batch: [1\n");
  r = run_cli("run " + bad.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.output, "error: " + bad.string() + ":")) << r.output;

  r = run_cli("run not_an_override");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.output, "neither a config file")) << r.output;
}

TEST(Cli, BenchTimesNamedBackendsAndWritesCsv) {
  const std::string csv = (std::filesystem::temp_directory_path() / "attnrt_bench_test.csv").string();
  const bool fa2 = test::fa2_reason_on_cpu() != "not installed";  // built with nvcc
  const auto r = run_cli(std::string("bench --backends sdpa,eager") + (fa2 ? ",flash_attention_2" : "") +
                         " --dtype fp32 --hdim 32 --seqlen 64,128 --mask causal --tokens 256 --hidden 64 --warmup 0"
                         " --iterations 2 --csv " +
                         csv);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(csv);
  std::string line, all;
  int rows = 0;
  std::getline(in, line);
  EXPECT_EQ(line, "case,backend,pass,ms,tflops,note");
  while (std::getline(in, line)) {
    ++rows;
    all += line + "\n";
  }
  EXPECT_EQ(rows, fa2 ? 12 : 8) << "2 seqlens x backends x fwd/bwd:\n" << all;
  EXPECT_TRUE(contains(all, "D32_S128_B2_H2_causal_fwd,sdpa,fwd,")) << all;
  // A backend that cannot run the case is reported with its reason, never timed as something else.
  if (fa2) {
    EXPECT_TRUE(contains(all, "D32_S64_B4_H2_causal_bwd,flash_attention_2,bwd,0.0000,0.00,\"device cpu")) << all;
  }
  EXPECT_FALSE(contains(all, "D32_S64_B4_H2_causal_fwd,sdpa,fwd,0.0000")) << all;
  std::filesystem::remove(csv);

  // heads = hidden / head_dim rounded down (FlashAttention's benchmark): 100 / 48 is 2 heads.
  const auto odd = run_cli(
      "bench --backends eager --dtype fp32 --hdim 48 --seqlen 32 --mask none --tokens 64"
      " --hidden 100 --warmup 0 --iterations 1 --no-backward");
  EXPECT_EQ(odd.exit_code, 0) << odd.output;
  EXPECT_TRUE(contains(odd.output, "D48_S32_B2_H2_full_fwd")) << odd.output;
  const auto too_narrow = run_cli("bench --backends eager --hdim 64 --seqlen 32 --tokens 64 --hidden 32");
  EXPECT_NE(too_narrow.exit_code, 0);
  EXPECT_TRUE(contains(too_narrow.output, "--hidden 32 hold at least one head of 64")) << too_narrow.output;

  const auto bad = run_cli("bench --backends no_such_backend");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_TRUE(contains(bad.output, "--backends: no plugin named 'no_such_backend' is installed")) << bad.output;
}

// --context-parallel starts one process per rank; where a rank cannot run (no GPU here: CI has
// none), the launcher reports which rank failed and stops the others instead of waiting for them.
TEST(Cli, BenchContextParallelStartsOneProcessPerRankAndStopsOnAFailure) {
  const auto r = run_cli("bench --context-parallel 2 --backends eager --hdim 32 --seqlen 64 --iterations 1");
  EXPECT_NE(r.exit_code, 0) << r.output;
  // Rank r runs on cuda:r; whichever rank fails first is named, and the other is stopped.
  EXPECT_TRUE(contains(r.output, "device 'cuda:0' requested") || contains(r.output, "device 'cuda:1' requested"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "stopping the others")) << r.output;

  const auto no_id = run_cli("bench --context-parallel 2 --cp-rank 1");
  EXPECT_NE(no_id.exit_code, 0);
  EXPECT_TRUE(contains(no_id.output, "--cp-rank needs --cp-id-file")) << no_id.output;
  const auto one = run_cli("bench --context-parallel 1");
  EXPECT_NE(one.exit_code, 0);
  EXPECT_TRUE(contains(one.output, "--context-parallel")) << one.output;
  // Under torchrun each process is the rank the environment names, on cuda:LOCAL_RANK, and the
  // world size must be the one asked for.
  const auto torchrun = run_cli("bench --context-parallel 2 --backends eager --hdim 32 --seqlen 64",
                                "RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_PORT=29500");
  EXPECT_NE(torchrun.exit_code, 0);
  EXPECT_TRUE(contains(torchrun.output, "device 'cuda:1' requested")) << torchrun.output;
  EXPECT_FALSE(contains(torchrun.output, "stopping the others")) << torchrun.output;  // no launcher
  const auto sizes = run_cli("bench --context-parallel 2", "RANK=0 WORLD_SIZE=3 LOCAL_RANK=0");
  EXPECT_NE(sizes.exit_code, 0);
  EXPECT_TRUE(contains(sizes.output, "--context-parallel 2 but torchrun's WORLD_SIZE is 3")) << sizes.output;
  const auto layout = run_cli("bench --context-parallel 2 --cp-rank 0 --cp-id-file /nonexistent/id --cp-layout ring");
  EXPECT_NE(layout.exit_code, 0);
  EXPECT_TRUE(contains(layout.output, "--cp-layout must be zigzag or contiguous, got 'ring'")) << layout.output;
}

TEST(Cli, ListShowsPluginsAndTheDeviceMatrix) {
  const auto r = run_cli("list --matrix");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "eager")) << r.output;
  EXPECT_TRUE(contains(r.output, "yes (cpu)")) << r.output;
  EXPECT_TRUE(contains(r.output, "flash_attention_2  -> sdpa (" + test::fa2_reason_on_cpu() + ")")) << r.output;
  EXPECT_TRUE(
      contains(r.output, "flash_attention_3  -> sdpa (" + test::cuda_plugin_reason_on_cpu("flash_attention_3") + ")"))
      << r.output;
  const auto j = run_cli("list --json");
  const auto parsed = nlohmann::json::parse(j.output.substr(j.output.find("{\n")));
  EXPECT_GE(parsed["plugins"].size(), 2u);
}

}  // namespace
}  // namespace attnrt
