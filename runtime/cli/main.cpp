// attnrt: resolve and run attention backends from YAML configuration.
#include "commands.hpp"
#include "options.hpp"

#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/log.hpp>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace {

// "WARNING: ..." / "INFO: ...", the seeds' log style, on stderr.
class UpperLevelFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const char* name = msg.level == spdlog::level::warn    ? "WARNING"
                       : msg.level == spdlog::level::err   ? "ERROR"
                       : msg.level == spdlog::level::info  ? "INFO"
                       : msg.level == spdlog::level::debug ? "DEBUG"
                                                           : "TRACE";
    dest.append(name, name + std::char_traits<char>::length(name));
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<UpperLevelFlag>(); }
};

void setup_logging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("attnrt");
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<UpperLevelFlag>('*').set_pattern("%^%*%$: %v");
  logger->set_formatter(std::move(formatter));
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level));
  // libattnrt is quiet unless its host listens: the CLI is a host that prints what it hears.
  const auto library_level = attnrt::parse_log_level(level == "trace" ? "debug" : level);
  attnrt::set_log_callback(
      [logger](attnrt::LogLevel l, std::string_view message) {
        const spdlog::level::level_enum as = l == attnrt::LogLevel::kDebug  ? spdlog::level::debug
                                             : l == attnrt::LogLevel::kInfo ? spdlog::level::info
                                             : l == attnrt::LogLevel::kWarn ? spdlog::level::warn
                                                                            : spdlog::level::err;
        logger->log(as, "{}", message);
      },
      library_level.value_or(attnrt::LogLevel::kInfo));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "attnrt: a plugin-based attention runtime. Resolves attn_implementation values from YAML "
      "configuration (with Hydra-style overrides) to attention plugins and runs them."};
  app.require_subcommand(1);
  bool verbose = false;
  std::string log_level = "info";
  app.add_flag("-v,--verbose", verbose, "Debug logging and full error detail");
  app.add_option("--log-level", log_level, "debug | info | warning | error | off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warning", "error", "off"}));

  attnrt::cli::CommonArgs args;
  auto* list = app.add_subcommand("list", "List the plugins found, what they support, and whether each is usable here");
  list->add_flag("--matrix", args.matrix, "Also print the implementation x device matrix");
  list->add_flag("--json", args.json, "Print JSON");
  list->add_option("args", args.positional, "Optional CONFIG (for plugin_dirs and fallback chains) and overrides");

  auto* resolve =
      app.add_subcommand("resolve", "Show the backend each attention site resolves to, with every fallback reason");
  resolve->add_option("args", args.positional,
                      "[CONFIG.yaml] [OVERRIDES...]  e.g. +critic.model.override_config.attn_implementation=eager");
  resolve->add_flag("--json", args.json, "Print JSON");

  auto* run =
      app.add_subcommand("run", "Run every attention site's backend on the configured workload, check and time it");
  run->add_option("args", args.positional, "[CONFIG.yaml] [OVERRIDES...]; no CONFIG: the embedded default");
  run->add_flag("--json", args.json, "Print JSON");
  run->add_option("--threads", args.threads, "CPU threads per call (0: attnrt.num_threads)")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--iterations", args.iterations, "Timed repeats (0: the workload's)")->check(CLI::NonNegativeNumber);

  std::string lock_output;
  auto* lock = app.add_subcommand(
      "lock",
      "Write a lockfile with the sha256 of every plugin library the configuration can resolve to (use it with "
      "attnrt.lockfile: then only those files are loaded)");
  lock->add_option("args", args.positional, "Optional CONFIG and overrides");
  lock->add_option("-o,--output", lock_output, "Lockfile to write (default: attnrt.lock beside CONFIG, or here)");
  lock->add_flag("--json", args.json, "Print JSON");

  auto* check =
      app.add_subcommand("check",
                         "Conformance kit: load, ABI, manifest, numerics of every advertised feature, "
                         "support query, bad arguments, threads, determinism, leaks (each check in a child process, "
                         "under a time limit)");
  check
      ->add_option("args", args.positional,
                   "PLUGIN (name, .so path, plugin directory or org/name) [CONFIG.yaml] [OVERRIDES...]")
      ->required();
  check->add_flag("--json", args.json, "Print JSON");
  check->add_option("--junit", args.junit, "Also write JUnit XML to this file");
  check
      ->add_option("--timeout", args.timeout,
                   "Seconds per check before it counts as hung (default: 5 s + 20 x eager's time on the same calls)")
      ->check(CLI::PositiveNumber);

  attnrt::cli::BenchArgs bench_args;
  auto* bench = app.add_subcommand("bench",
                                   "Time backends on FlashAttention's benchmark shapes (CUDA events on a GPU); "
                                   "TFLOP/s per case, CSV/JSON");
  bench->add_option("args", args.positional, "[CONFIG.yaml] [OVERRIDES...] (e.g. attnrt.device=cuda)");
  CLI::Option* backends_option = bench->add_option(
      "--backends", bench_args.backends,
      "Comma-separated plugin names (default: flash_attention_2; flex_attention when the cases carry flex mods)");
  bench->add_option("--flex-site", bench_args.flex_site,
                    "Every case carries this site's flex_attention mods (attnrt.flex.SITE of the config; the "
                    "default when the config gives mods for one site only)");
  CLI::Option* hdim_option =
      bench->add_option("--hdim", bench_args.hdims, "Comma-separated head dims")->capture_default_str();
  bench->add_option("--seqlen", bench_args.seqlens, "Comma-separated sequence lengths")->capture_default_str();
  bench->add_option("--mask", bench_args.masks, "none, causal or both")->capture_default_str();
  bench->add_option("--dtype", bench_args.dtype, "fp16, bf16 or fp32")->capture_default_str();
  bench->add_option("--tokens", bench_args.tokens, "batch x seqlen")->capture_default_str()->check(CLI::PositiveNumber);
  bench
      ->add_option("--hidden", bench_args.hidden,
                   "heads x head_dim (heads = hidden / head_dim rounded down, as FlashAttention's benchmark)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  bench->add_option("--warmup", bench_args.warmup, "Untimed calls first")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  bench->add_option("--iterations", bench_args.iterations, "Timed calls (median)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  bench->add_flag("!--no-forward", bench_args.forward, "Skip the forward pass");
  bench->add_flag("!--no-backward", bench_args.backward, "Skip the backward pass");
  bench->add_flag("--deterministic", bench_args.deterministic,
                  "Ask for bit-identical repeats (flash_attention_2: the two-pass backward without atomics)");
  bench->add_option("--heads-kv", bench_args.heads_kv, "Key/value heads (GQA; default: as many as query heads)")
      ->check(CLI::PositiveNumber);
  bench->add_option("--window", bench_args.window_left, "Sliding window: keys visible left of the diagonal")
      ->check(CLI::NonNegativeNumber);
  bench->add_flag("--sinks", bench_args.sinks, "Per-head sink logits in every case (gpt-oss)");
  bench->add_flag("--decode", bench_args.decode,
                  "Decode shapes (seqlen_q 1, causal) over a KV cache; reports effective bandwidth, K+V bytes / time. "
                  "--heads-kv defaults to 8 and --hdim to 128 here");
  bench->add_option("--decode-shapes", bench_args.decode_shapes, "With --decode: batch x cached keys, comma-separated")
      ->capture_default_str();
  bench
      ->add_option("--page-size", bench_args.page_sizes,
                   "With --decode: page sizes of the paged cache (0: a contiguous cache), comma-separated")
      ->capture_default_str();
  bench->add_option("--gqa", bench_args.gqa, "With --decode: query heads per KV head, comma-separated")
      ->capture_default_str();
  bench
      ->add_option("--kv-layout", bench_args.kv_layouts,
                   "With --decode: nhd ([tokens, heads, head_dim] per page) and/or hnd ([heads, tokens, head_dim] "
                   "per page, through strides), comma-separated")
      ->capture_default_str();
  bench
      ->add_option("--context-parallel", bench_args.context_parallel,
                   "Ring attention on this many GPUs (one process each, NCCL) against one GPU on the same sequence; "
                   "started by this command or by torchrun")
      ->check(CLI::Range(2, 1024));
  bench->add_option("--cp-layout", bench_args.cp_layout, "With --context-parallel: zigzag or contiguous shards")
      ->capture_default_str();
  bench
      ->add_option("--cp-rank", bench_args.cp_rank,
                   "With --context-parallel: this process's rank (set by the launcher)")
      ->group("");
  bench->add_option("--cp-id-file", bench_args.cp_id_file,
                    "With --context-parallel: the file through which rank 0 passes the NCCL unique id");
  bench->add_option("--csv", bench_args.csv, "Also write case,backend,pass,ms,tflops,note rows to this file");
  bench->add_flag("--json", args.json, "Print JSON");

  CLI11_PARSE(app, argc, argv);
  std::string level = verbose ? "debug" : log_level;
  if (level == "warning") level = "warn";
  setup_logging(level);
  attnrt::cli::set_log_level_from_command_line(verbose || app.get_option("--log-level")->count() > 0);

  try {
    if (list->parsed()) return attnrt::cli::list_command(args);
    if (resolve->parsed()) return attnrt::cli::resolve_command(args);
    if (check->parsed()) return attnrt::cli::check_command(args);
    if (lock->parsed()) return attnrt::cli::lock_command(args, lock_output);
    if (bench->parsed()) {
      if (bench_args.decode && hdim_option->count() == 0) bench_args.hdims = "128";  // the decode shapes
      bench_args.backends_given = backends_option->count() > 0;
      return attnrt::cli::bench_command(args, bench_args);
    }
    return attnrt::cli::run_command(args);
  } catch (const std::exception& e) {
    std::string message = e.what();
    if (!verbose) {
      // One clear line; -v keeps the multi-line detail (for example every fallback reason).
      const auto nl = message.find('\n');
      if (nl != std::string::npos) message = message.substr(0, nl) + " (run with -v for details)";
    }
    std::fprintf(stderr, "error: %s\n", message.c_str());
    return 1;
  }
}
