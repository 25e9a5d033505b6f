// The attnrt command-line tool's subcommands. Each returns the process exit code; errors that
// stop a command are thrown as attnrt::Error and printed once by main().
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace attnrt {
struct Resolution;
}

namespace attnrt::cli {

// A resolution as JSON (resolve --json, run --json): request, choice, every attempt's reason.
nlohmann::json resolution_json(const Resolution& r);

struct CommonArgs {
  std::vector<std::string> positional;  // CONFIG files (*.yaml / *.yml) and overrides, in order
  bool json = false;
  int threads = 0;
  int iterations = 0;  // 0: the workload's own
  bool matrix = false;
  std::string junit;   // check: JUnit XML output file
  double timeout = 0;  // check: seconds per check (0: default)
};

// attnrt bench: the FlashAttention papers' shapes (see cmd_bench.cpp).
struct BenchArgs {
  std::string backends = "flash_attention_2";
  bool backends_given = false;  // --backends on the command line (else flex cases time flex_attention)
  // The site whose attnrt.flex mods every case carries ("": the config's only flex site, if any).
  std::string flex_site;
  std::string hdims = "64,128";
  std::string seqlens = "512,1024,2048,4096,8192,16384";
  std::string masks = "both";  // none | causal | both
  std::string dtype = "bf16";
  int tokens = 16384, hidden = 2048;
  int warmup = 5, iterations = 30;
  bool forward = true, backward = true;
  bool deterministic = false;  // desc.deterministic for every case
  int heads_kv = 0;            // GQA: key/value heads (0: as many as query heads)
  int window_left = -1;        // sliding window: keys visible left of the diagonal (-1: none)
  bool sinks = false;          // per-head sink logits (random normals)
  std::string csv;
  // --decode: decode (seqlen_q 1) over a KV cache instead of the papers' shapes (issue 17)
  bool decode = false;
  std::string decode_shapes = "1x65536,16x8192,64x2048,256x1024";  // batch x cached keys
  std::string page_sizes = "16,64";                                // paged backends; 0: contiguous
  std::string gqa = "4,8";                                         // query heads per KV head
  // Token layout of the cache (each page, or each sequence when contiguous): nhd [tokens, heads,
  // head_dim] (vLLM's, the ABI's compact layout) or hnd [heads, tokens, head_dim] (FlashInfer's
  // HND; PyTorch's [batch, heads, keys, head_dim]), given to the plugin through strides.
  std::string kv_layouts = "nhd";
  // --context-parallel N: ring attention on N GPUs against one (bench_context_parallel.cpp)
  int context_parallel = 0;
  std::string cp_layout = "zigzag";  // zigzag | contiguous
  int cp_rank = -1;                  // set by the launcher for each rank it starts
  std::string cp_id_file;            // where rank 0 leaves the NCCL unique id
};

int list_command(const CommonArgs& args);
int bench_command(const CommonArgs& args, const BenchArgs& bench);
int context_parallel_bench(const CommonArgs& args, const BenchArgs& bench);
int resolve_command(const CommonArgs& args);
int run_command(const CommonArgs& args);
int check_command(const CommonArgs& args);
// attnrt lock: `output` "" writes attnrt.lock beside the first config file (or here).
int lock_command(const CommonArgs& args, const std::string& output);

}  // namespace attnrt::cli
