// attnrt bench --context-parallel N: ring attention (issue 20, docs/distributed.md) on N GPUs of
// one host, one process per GPU, against one GPU on the same whole sequence, in the same run.
//
// Launch: without --cp-rank, the command starts N copies of itself (rank r on cuda:r) and waits
// for them; under torchrun (RANK, WORLD_SIZE, LOCAL_RANK in the environment) each process is
// the rank torchrun says, on cuda:LOCAL_RANK. Rank 0 makes the NCCL unique id and passes it
// through a file (--cp-id-file; the launcher makes a private one, torchrun jobs name one on a
// filesystem all ranks see, default /tmp/attnrt_cp_<TORCHELASTIC_RUN_ID>_<MASTER_PORT>.id: the
// job's own, so a file a crashed earlier job left is not read as this job's id).
//
// Every case (head_dim x global seqlen x mask x backend; batch = tokens / seqlen, at least 1;
// q heads = hidden / head_dim, --heads-kv for GQA) is timed four ways, forward and backward:
//   one_gpu      the backend on the whole sequence on each rank's GPU alone (every rank runs it
//                at the same time on its own GPU; the slowest is reported);
//   ring         RingAttention over NCCL, each rank on its shard (--cp-layout, default zigzag);
//   ring_no_comm the same ring with a transport that moves nothing: the same calls on the same
//                shapes, so ring - ring_no_comm is what communication costs beyond compute;
//   exchange     one ring step's transfer alone (forward: a K/V block; backward: a K/V block and
//                the float32 dK/dV accumulators), the time communication would add unhidden.
// Each is the median of --iterations after --warmup (CUDA events), then the maximum over ranks
// (a ring step waits for the slowest rank). speedup = one_gpu / ring; efficiency = speedup / N.
// TFLOP/s count the papers' FLOPs of the whole sequence (causal: half), backward 2.5x forward.
// Rank 0 prints the table and writes the CSV.
#include "bench_support.hpp"
#include "commands.hpp"
#include "options.hpp"
#include "table.hpp"

#include <attnrt/harness/host_tensor.hpp>
#include <attnrt/harness/timing.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/context_parallel.hpp>
#include <attnrt/runtime/cuda_memory.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/parallel/nccl_transport.hpp>
#include <attnrt/runtime/parallel/null_transport.hpp>
#include <attnrt/runtime/runtime.hpp>

#include <fmt/format.h>

#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

extern char** environ;

namespace attnrt::cli {
namespace {

namespace fs = std::filesystem;

// A compact [d0, d1, d2, d3] (or 3-d) tensor in a device buffer of its own.
struct DeviceTensor {
  CudaBuffer buffer;
  std::vector<int64_t> shape;
  DLTensor dl{};
  DeviceTensor(DLDevice device, DLDataType dtype, std::vector<int64_t> s) : shape(std::move(s)) {
    int64_t n = 1;
    for (int64_t x : shape) n *= x;
    buffer = CudaBuffer(device, size_t(n) * dtype.bits / 8);
    dl.data = buffer.data();
    dl.device = device;
    dl.ndim = int32_t(shape.size());
    dl.dtype = dtype;
    dl.shape = shape.data();
  }
};

// q, k, v, out, lse, dout, dq, dk, dv of one call: the whole sequence or one rank's shard.
struct CallTensors {
  DeviceTensor q, k, v, out, lse, dout, dq, dk, dv;
  CallTensors(DLDevice device, DLDataType dt, int64_t batch, int64_t seq, int64_t heads_q, int64_t heads_kv, int64_t hd,
              const HostTensor& block)
      : q(device, dt, {batch, seq, heads_q, hd}),
        k(device, dt, {batch, seq, heads_kv, hd}),
        v(device, dt, {batch, seq, heads_kv, hd}),
        out(device, dt, {batch, seq, heads_q, hd}),
        lse(device, dl_float32(), {batch, heads_q, seq}),
        dout(device, dt, {batch, seq, heads_q, hd}),
        dq(device, dt, {batch, seq, heads_q, hd}),
        dk(device, dt, {batch, seq, heads_kv, hd}),
        dv(device, dt, {batch, seq, heads_kv, hd}) {
    // Different starts into the block, so q, k, v and dout are not the same values.
    const int64_t n = block.numel();
    upload_repeating(q.buffer, block, 0);
    upload_repeating(k.buffer, block, n / 5);
    upload_repeating(v.buffer, block, 2 * n / 5);
    upload_repeating(dout.buffer, block, 3 * n / 5);
  }
  attnrt_forward_args forward_args() {
    attnrt_forward_args a{};
    a.struct_size = sizeof a;
    a.q = &q.dl;
    a.k = &k.dl;
    a.v = &v.dl;
    a.out = &out.dl;
    a.lse = &lse.dl;
    return a;
  }
  attnrt_backward_args backward_args() {
    attnrt_backward_args a{};
    a.struct_size = sizeof a;
    a.dout = &dout.dl;
    a.q = &q.dl;
    a.k = &k.dl;
    a.v = &v.dl;
    a.out = &out.dl;
    a.lse = &lse.dl;
    a.dq = &dq.dl;
    a.dk = &dk.dl;
    a.dv = &dv.dl;
    return a;
  }
};

// The largest `value` of any rank, on every rank: N - 1 ring steps, each passing on the largest
// value seen so far (so no collective beyond the transport is needed).
double max_over_ranks(cp::Transport& transport, DLDevice device, double value) {
  const int n = transport.world_size();
  CudaBuffer send(device, sizeof(double)), receive(device, sizeof(double));
  for (int step = 0; step + 1 < n; ++step) {
    send.upload(&value, sizeof value);
    const cp::Transfer s{cp::ring_next(transport.rank(), n), send.data(), sizeof(double)},
        r{cp::ring_prev(transport.rank(), n), receive.data(), sizeof(double)};
    transport.exchange({&s, 1}, {&r, 1}, nullptr)->wait();
    transport.synchronize(nullptr);  // throws, instead of waiting forever, when a peer has failed
    double other = 0;
    receive.download(&other, sizeof other);
    value = std::max(value, other);
  }
  return value;
}

struct Role {
  int rank = 0, world_size = 1, device = 0;
  std::string id_file;
};

cp::NcclUniqueId share_unique_id(const Role& role) {
  cp::NcclUniqueId id{};
  if (role.rank == 0) {
    id = cp::nccl_unique_id();
    const std::string tmp = role.id_file + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f.write(id.bytes, sizeof id.bytes);
      if (!f) throw Error("--cp-id-file: cannot write " + tmp);
    }
    fs::rename(tmp, role.id_file);  // whole or absent: a reader never sees half an id
    return id;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (true) {
    std::ifstream f(role.id_file, std::ios::binary);
    if (f && f.read(id.bytes, sizeof id.bytes) && f.gcount() == sizeof id.bytes) return id;
    if (std::chrono::steady_clock::now() > deadline) {
      throw Error(fmt::format("rank {}: no NCCL unique id from rank 0 in {} after 120 s", role.rank, role.id_file));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::vector<std::string> own_command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  std::string item;
  while (std::getline(f, item, '\0')) argv.push_back(item);
  return argv;
}

// The launcher: N copies of this command, rank r on cuda:r; the first failure stops the others.
int launch_ranks(const BenchArgs& b) {
  const int n = b.context_parallel;
  char dir_template[] = "/tmp/attnrt_cp_XXXXXX";
  if (!mkdtemp(dir_template)) throw Error("attnrt bench --context-parallel: cannot make a temporary folder");
  const std::string id_file = std::string(dir_template) + "/nccl.id";
  std::vector<std::string> base = own_command_line();
  if (base.empty()) throw Error("attnrt bench --context-parallel: cannot read /proc/self/cmdline");
  base[0] = fs::read_symlink("/proc/self/exe").string();
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> argv = base;
    for (const std::string& x : {std::string("--cp-rank"), std::to_string(r), std::string("--cp-id-file"), id_file}) {
      argv.push_back(x);
    }
    std::vector<char*> cargv;
    for (std::string& x : argv) cargv.push_back(x.data());
    cargv.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, cargv[0], nullptr, nullptr, cargv.data(), environ) != 0) {
      for (pid_t p : pids) kill(p, SIGTERM);
      throw Error(fmt::format("attnrt bench --context-parallel: cannot start rank {}", r));
    }
    pids.push_back(pid);
  }
  int rc = 0;
  for (size_t left = pids.size(); left > 0; --left) {
    int status = 0;
    const pid_t done = wait(&status);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    if (code != 0 && rc == 0) {
      rc = code;
      const auto it = std::find(pids.begin(), pids.end(), done);
      fmt::print(stderr, "attnrt bench --context-parallel: rank {} exited with {}; stopping the others\n",
                 it - pids.begin(), code);
      for (pid_t p : pids) {
        if (p != done) kill(p, SIGTERM);
      }
    }
  }
  std::error_code ec;
  fs::remove_all(dir_template, ec);
  return rc;
}

Role role_of(const BenchArgs& b) {
  Role role;
  if (b.cp_rank >= 0) {
    role.rank = role.device = b.cp_rank;
    role.world_size = b.context_parallel;
  } else {
    const char* rank = std::getenv("RANK");
    const char* world = std::getenv("WORLD_SIZE");
    const char* local = std::getenv("LOCAL_RANK");
    role.rank = std::atoi(rank);
    role.world_size = std::atoi(world);
    role.device = local ? std::atoi(local) : role.rank;
    if (role.world_size != b.context_parallel) {
      throw Error(
          fmt::format("--context-parallel {} but torchrun's WORLD_SIZE is {}", b.context_parallel, role.world_size));
    }
    const char* port = std::getenv("MASTER_PORT");
    const char* run_id = std::getenv("TORCHELASTIC_RUN_ID");
    role.id_file = fmt::format("/tmp/attnrt_cp_{}_{}.id", run_id ? run_id : "none", port ? port : "0");
  }
  if (!b.cp_id_file.empty()) role.id_file = b.cp_id_file;
  if (role.id_file.empty()) throw Error("--cp-rank needs --cp-id-file");
  if (role.rank < 0 || role.rank >= role.world_size) {
    throw Error(fmt::format("rank {} is outside [0, {})", role.rank, role.world_size));
  }
  return role;
}

int run_rank(const CommonArgs& common, const BenchArgs& b, const Role& role) {
  CommonArgs args = common;
  args.positional.push_back(fmt::format("attnrt.device=cuda:{}", role.device));
  Runtime rt(runtime_options(args));
  use_config_log_level(rt);
  const DeviceInfo device = rt.resolver().device();
  if (device.dl.device_type != kDLCUDA) throw Error("attnrt bench --context-parallel runs on CUDA devices");
  const bool lead = role.rank == 0;
  std::vector<std::pair<std::string, std::shared_ptr<Backend>>> backends;
  for (const std::string& name : split(b.backends)) {
    const PluginRecord* rec = rt.registry().find(name, "cuda");
    if (!rec) throw Error(fmt::format("--backends: no plugin named '{}' is installed", name));
    backends.emplace_back(name, std::make_shared<Backend>(rt.registry().load(*rec)));
  }
  const cp::Layout layout = b.cp_layout == "contiguous" ? cp::Layout::contiguous : cp::Layout::zigzag;
  const std::vector<int> hdims = split_ints(b.hdims, "hdim"), seqlens = split_ints(b.seqlens, "seqlen");
  std::vector<bool> masks;
  if (b.masks == "both" || b.masks == "none") masks.push_back(false);
  if (b.masks == "both" || b.masks == "causal") masks.push_back(true);
  if (masks.empty()) throw Error("--mask must be none, causal or both, got '" + b.masks + "'");
  const attnrt_dtype dtype = parse_dtype(b.dtype);
  const DLDataType dt = dl_dtype_of(dtype);

  cp::NcclTransport nccl(share_unique_id(role), role.rank, role.world_size, device.dl);
  if (lead) std::remove(role.id_file.c_str());  // every rank has joined: the id is used up
  cp::NullTransport none(role.rank, role.world_size);
  const HostTensor block = random_block(dt, 1000 + uint64_t(role.rank));
  const int n = role.world_size;
  if (lead) {
    fmt::print(stderr, "attnrt bench --context-parallel {} ({} layout, NCCL) on {} ({}), {}\n", n, b.cp_layout,
               device.label(), device.name, b.dtype);
  }

  std::ofstream csv;
  if (lead && !b.csv.empty()) {
    csv.open(b.csv);
    if (!csv) throw Error("cannot write " + b.csv);
    csv << "case,backend,pass,ranks,layout,ms_one_gpu,ms_ring,ms_ring_no_comm,ms_exchange,speedup,efficiency,"
           "tflops_one_gpu,tflops_ring,note\n"
        << std::flush;
  }
  Table table(
      {"CASE", "BACKEND", "PASS", "1 GPU ms", "RING ms", "NO-COMM ms", "EXCHANGE ms", "SPEEDUP", "TFLOP/s RING"});
  for (int hd : hdims) {
    for (int seqlen : seqlens) {
      if (b.hidden % hd != 0) throw Error(fmt::format("--hidden {} must divide by head_dim {}", b.hidden, hd));
      for (bool causal : masks) {
        attnrt_attention_desc d{};
        d.struct_size = sizeof d;
        d.dtype = dtype;
        d.batch = std::max(1, b.tokens / seqlen);
        d.seqlen_q = d.seqlen_k = seqlen;
        d.heads_q = b.hidden / hd;
        d.heads_kv = b.heads_kv > 0 ? b.heads_kv : d.heads_q;
        if (d.heads_q % d.heads_kv != 0) {
          throw Error(fmt::format("--heads-kv {} must divide the {} query heads", d.heads_kv, d.heads_q));
        }
        d.head_dim = d.head_dim_v = hd;
        d.softmax_scale = 1.0f / std::sqrt(float(hd));
        d.causal = causal ? 1 : 0;
        d.window_left = b.window_left;
        d.window_right = -1;
        d.return_lse = 1;
        d.deterministic = b.deterministic ? 1 : 0;
        d.device = device.dl;
        d.cuda_arch = device.cuda_arch;
        std::string id = fmt::format("D{}_S{}_B{}_H{}_{}", hd, seqlen, d.batch, d.heads_q, causal ? "causal" : "full");
        if (d.heads_kv != d.heads_q) id += fmt::format("_KV{}", d.heads_kv);
        if (b.window_left >= 0) id += fmt::format("_W{}", b.window_left);
        const double flops = 4.0 * d.batch * d.heads_q * double(seqlen) * seqlen * hd * (causal ? 0.5 : 1.0);
        const int64_t chunks = layout == cp::Layout::zigzag ? 2 * n : n;
        if (seqlen % chunks != 0) {
          throw Error(fmt::format("--seqlen {} must divide into the {} chunks of a {} ring of {}", seqlen, chunks,
                                  b.cp_layout, n));
        }
        const int64_t shard = seqlen / n;
        for (auto& [name, backend] : backends) {
          auto time = [&](const std::function<void()>& fn) {
            return median_call_ms(device.dl, nullptr, b.warmup, b.iterations, fn);
          };
          cp::RingOptions options;
          options.layout = layout;
          cp::RingAttention ring(*backend, nccl, options), ring_no_comm(*backend, none, options);
          std::array<double, 2> one{}, full{}, quiet{}, moved{};  // [fwd, bwd], this rank's medians
          std::array<std::string, 2> why;
          for (int pass = 0; pass < 2; ++pass) {
            why[pass] = ring.unsupported_reason(d, pass == 1);
            if (why[pass].empty() && pass == 1 && !b.backward) why[pass] = "skipped (--no-backward)";
          }
          // Every rank takes the same branches: the reasons depend only on the descriptor. An
          // error on one rank ends its process (the ring aborts the group first), and the
          // launcher (or torchrun) stops the others.
          {
            {  // one GPU, the whole sequence
              CallTensors t(device.dl, dt, d.batch, seqlen, d.heads_q, d.heads_kv, hd, block);
              attnrt_forward_args fa = t.forward_args();
              attnrt_backward_args ba = t.backward_args();
              if (why[0].empty()) one[0] = time([&] { backend->forward(d, fa, 0); });
              if (why[1].empty()) {
                backend->forward(d, fa, 0);
                one[1] = time([&] { backend->backward(d, ba, 0); });
              }
            }
            CallTensors t(device.dl, dt, d.batch, shard, d.heads_q, d.heads_kv, hd, block);
            attnrt_forward_args fa = t.forward_args();
            attnrt_backward_args ba = t.backward_args();
            if (why[0].empty()) {
              full[0] = time([&] { ring.forward(d, fa); });
              quiet[0] = time([&] { ring_no_comm.forward(d, fa); });
            }
            if (why[1].empty()) {
              ring.forward(d, fa);
              full[1] = time([&] { ring.backward(d, ba); });
              quiet[1] = time([&] { ring_no_comm.backward(d, ba); });
            }
            // One step's messages: the K/V block (bf16/fp16), and in backward also the float32
            // dK/dV accumulators, which travel the ring beside it (twice the block's bytes at
            // 16-bit; bench/results/cp-2gpu-2026-11-26's calls 3 and 4 sent four times).
            const size_t kv_bytes = 2 * size_t(t.k.buffer.size());
            const size_t dkv_bytes = kv_bytes * 4 / (dt.bits / 8);
            CudaBuffer out_buf(device.dl, kv_bytes + dkv_bytes), in_buf(device.dl, kv_bytes + dkv_bytes);
            for (int pass = 0; pass < 2; ++pass) {
              if (!why[pass].empty()) continue;
              const size_t bytes = pass == 0 ? kv_bytes : kv_bytes + dkv_bytes;
              const cp::Transfer s{cp::ring_next(role.rank, n), out_buf.data(), bytes},
                  r{cp::ring_prev(role.rank, n), in_buf.data(), bytes};
              moved[pass] = time([&] { nccl.exchange({&s, 1}, {&r, 1}, nullptr)->wait(); });
            }
          }
          for (int pass = 0; pass < 2; ++pass) {
            const char* pass_name = pass == 0 ? "fwd" : "bwd";
            if (pass == 0 && !b.forward) continue;
            if (pass == 1 && !b.backward) continue;
            if (!why[pass].empty()) {
              if (lead) {
                table.add({id, name, pass_name, "-", "-", "-", "-", "-", "n/a: " + why[pass]});
                if (csv)
                  csv << fmt::format("{},{},{},{},{},0,0,0,0,0,0,0,0,\"{}\"\n", id, name, pass_name, n, b.cp_layout,
                                     why[pass])
                      << std::flush;
              }
              continue;
            }
            const double o = max_over_ranks(nccl, device.dl, one[pass]),
                         f = max_over_ranks(nccl, device.dl, full[pass]),
                         q = max_over_ranks(nccl, device.dl, quiet[pass]),
                         m = max_over_ranks(nccl, device.dl, moved[pass]);
            const double scale = pass == 0 ? 1.0 : 2.5, speedup = o / f;
            if (lead) {
              table.add({id, name, pass_name, fmt::format("{:.2f}", o), fmt::format("{:.2f}", f),
                         fmt::format("{:.2f}", q), fmt::format("{:.3f}", m), fmt::format("{:.2f}x", speedup),
                         fmt::format("{:.1f}", scale * flops / (f * 1e-3) / 1e12)});
              if (csv) {
                csv << fmt::format("{},{},{},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.2f},{:.2f},\"\"\n", id,
                                   name, pass_name, n, b.cp_layout, o, f, q, m, speedup, speedup / n,
                                   scale * flops / (o * 1e-3) / 1e12, scale * flops / (f * 1e-3) / 1e12)
                    << std::flush;
              }
              fmt::print(stderr, "{} {} {}: 1 GPU {:.2f} ms, ring {:.2f} ms ({:.2f}x), no comm {:.2f} ms\n", id, name,
                         pass_name, o, f, speedup, q);
            }
          }
        }
      }
    }
  }
  if (lead) table.print();
  return 0;
}

}  // namespace

int context_parallel_bench(const CommonArgs& args, const BenchArgs& b) {
  if (b.context_parallel < 2) throw Error("--context-parallel needs 2 or more ranks");
  if (b.decode) throw Error("--context-parallel does not time --decode shapes");
  if (b.sinks) throw Error("--context-parallel: the ring refuses sinks (docs/distributed.md)");
  if (b.cp_layout != "zigzag" && b.cp_layout != "contiguous") {
    throw Error("--cp-layout must be zigzag or contiguous, got '" + b.cp_layout + "'");
  }
  const bool torchrun = std::getenv("WORLD_SIZE") && std::getenv("RANK");
  if (b.cp_rank < 0 && !torchrun) return launch_ranks(b);
  return run_rank(args, b, role_of(b));
}

}  // namespace attnrt::cli
