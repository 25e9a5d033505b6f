#!/usr/bin/env python3
"""attnrt.torch.context_parallel_attention on the GPUs of one host against torch's SDPA (issue 20).

One process per GPU (torchrun), a torch.distributed NCCL group; attnrt makes its own NCCL
communicator over the group's ranks (a unique id that rank 0 broadcasts). For each
implementation (attnrt plugin: flash_attention_2, flash_attention_3), causal and not, and each
global sequence length, every rank builds the same global q, k, v, dout (bf16, batch 1, 32 query
heads / 8 KV heads, head_dim 128, one seed), takes its zigzag shard (context_parallel_shard),
runs context_parallel_attention forward and backward (autograd), and the shards of out, lse, dq,
dk and dv are gathered (all_gather) and put back in sequence order (context_parallel_unshard).
Three results are compared on the global tensors:
  reference  torch SDPA, math backend, float32 (no TF32) on the bf16 inputs upcast, one query
             head at a time (a 32k x 32k float32 score matrix is 4 GiB per head); the query
             heads are split between the ranks, each rank checks its own and the errors are
             reduced with MAX. lse: float32 logsumexp of the masked scores.
  torch      torch SDPA in bf16 on the global tensors (its fastest backend, enable_gqa; where no
             fused backend takes GQA, K/V repeated per query head), gradients through autograd.
  attnrt     the ring.
FlashAttention's rule (as tests/gpu and hf_gptoss_check.py): attnrt's max |error| against the
reference <= 2 x torch's max |error| + floor, floor = 1e-3 x max(1, max |reference|); lse (torch
has no bf16 LSE to compare) within the floor alone. NaN never passes. A refusal (for example
"context parallel: no BlockOps for this device yet" while the CUDA merge kernels are not built)
is a failure row with its message. Prints a table on rank 0; exit status 1 on any failure.

The backend the global descriptor resolves to must be the implementation named (a fallback,
logged with its reason, fails the case).

Packed batches (varlen): --varlen L1,L2,... adds, for each implementation and causal setting, one
case of a packed batch of sequences of those lengths (each a multiple of 2 x world size for
zigzag, of the world size for contiguous): q, k, v, dout [total, heads, head_dim], the global
cu_seqlens on the host (a CPU int32 tensor), each rank's packed shard cut per sequence
(context_parallel_shard with cu_seqlens), context_parallel_attention with cu_seqlens, the shards
gathered and put back with context_parallel_unshard(..., cu_seqlens=). The reference and torch's
bf16 SDPA run sequence by sequence (the same functions, batch 1), and the comparison is the one
above on the packed tensors (lse [heads, total]). --seqlens '' skips the padded cases.

Run (two GPUs of one host; NVLink multicast stays off, the machine's rule):
  NCCL_NVLS_ENABLE=0 torchrun --nproc-per-node 2 tests/gpu/cp_torch_check.py \\
      [--implementations flash_attention_2,flash_attention_3] [--seqlens 8192,32768] [--layout zigzag] \\
      [--varlen 8192,16384,40960]
PYTHONPATH must reach an attnrt package with this tree's extension module and the CUDA plugins
(flash_attention_2, flash_attention_3) in attnrt/lib/attnrt/plugins/, LD_LIBRARY_PATH the
libraries libattnrt needs: tools/gpu_stage_python.sh stages both in .gpu-py/ and
tools/gpu_cp_check.sh runs this under torchrun with them. attnrt's NCCL communicator uses the
libnccl that torch loaded (ATTNRT_NCCL_LIBRARY overrides).
"""
from __future__ import annotations

import os

# NVLink multicast off (NCCL, PyTorch's symmetric memory, NVSHMEM) before anything makes a
# communicator: on the shared GPU machines it can take the host's GPUs out of service.
os.environ["NCCL_NVLS_ENABLE"] = "0"
os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
os.environ["NVSHMEM_DISABLE_NVLS"] = "1"

import argparse  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

import attnrt  # noqa: E402
import attnrt.torch as at  # noqa: E402
import attnrt._torch_context_parallel as _cp  # noqa: E402

FLOOR = 1e-3  # bf16, times max(1, max |reference|)


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--implementations", default="flash_attention_2,flash_attention_3")
    p.add_argument("--seqlens", default="8192,32768", help="global sequence lengths ('': no padded cases)")
    p.add_argument("--varlen", default="", help="lengths of the sequences of one packed batch (varlen case; "
                   "'': none)")
    p.add_argument("--causal", default="0,1")
    p.add_argument("--layout", default="zigzag", choices=["zigzag", "contiguous"])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def global_inputs(a, seqlen, seed, device):
    """The same bf16 q, k, v, dout [batch, seq, heads, head_dim] on every rank (one seed)."""
    g = torch.Generator(device=device).manual_seed(seed)
    shape_q = (a.batch, seqlen, a.heads, a.head_dim)
    shape_kv = (a.batch, seqlen, a.kv_heads, a.head_dim)
    q, k, v, dout = (torch.randn(s, generator=g, device=device).to(torch.bfloat16)
                     for s in (shape_q, shape_kv, shape_kv, shape_q))
    return q, k, v, dout


def packed_inputs(a, lens, seed, device):
    """The same bf16 q, k, v, dout [total, heads, head_dim] of a packed batch of sequences of
    lengths `lens` on every rank (one seed), and its cu_seqlens: a CPU int32 tensor, since the
    ring reads the lengths on the host."""
    g = torch.Generator(device=device).manual_seed(seed)
    total = sum(lens)
    q, k, v, dout = (torch.randn(s, generator=g, device=device).to(torch.bfloat16)
                     for s in ((total, a.heads, a.head_dim), (total, a.kv_heads, a.head_dim),
                               (total, a.kv_heads, a.head_dim), (total, a.heads, a.head_dim)))
    cu = torch.tensor([0] + list(lens)).cumsum(0).to(torch.int32)
    return q, k, v, dout, cu


def gather(shard, world, layout, dim=1, cu_seqlens=None):
    """Every rank's shard of a tensor (all_gather) put back in global sequence order (a packed
    batch's with cu_seqlens)."""
    parts = [torch.empty_like(shard) for _ in range(world)]
    dist.all_gather(parts, shard.contiguous())
    return at.context_parallel_unshard(parts, layout, dim, cu_seqlens=cu_seqlens)


def run_attnrt(a, impl, causal, q, k, v, dout, rank, world, cu_seqlens=None):
    """context_parallel_attention forward and backward on this rank's shards; the global out,
    lse, dq, dk, dv (gathered), or the error message (every rank's, joined) if any rank failed.
    cu_seqlens: q, k, v, dout are a packed batch [total, heads, dim] with these global offsets."""
    seq_dim, lse_dim = (1, 2) if cu_seqlens is None else (0, 1)
    shards = [at.context_parallel_shard(t, rank, world, a.layout, seq_dim, cu_seqlens=cu_seqlens).contiguous()
              .requires_grad_() for t in (q, k, v)]
    error = ""
    try:
        out, lse = at.context_parallel_attention(*shards, implementation=impl, causal=causal, layout=a.layout,
                                                 return_lse=True, cu_seqlens=cu_seqlens)
        out.backward(at.context_parallel_shard(dout, rank, world, a.layout, seq_dim, cu_seqlens=cu_seqlens)
                     .contiguous())
        if q.is_cuda:
            torch.cuda.synchronize()  # a failure on the GPU surfaces here, inside the try
    except Exception as e:  # any rank's failure must reach the others, or they wait in all_gather
        error = f"{type(e).__name__}: {e}"
    # Every rank learns whether any failed, so all take the same path below.
    errors = [None] * world
    dist.all_gather_object(errors, error)
    if any(errors):
        return None, " | ".join(f"rank {r}: {e}" for r, e in enumerate(errors) if e)
    got = [gather(out.detach(), world, a.layout, seq_dim, cu_seqlens),
           gather(lse, world, a.layout, lse_dim, cu_seqlens)]
    got += [gather(s.grad, world, a.layout, seq_dim, cu_seqlens) for s in shards]
    return got, ""


def run_torch_bf16(q, k, v, dout, causal):
    """torch's own bf16 SDPA on the global tensors: out, dq, dk, dv in [batch, seq, heads, dim]."""
    qt, kt, vt = (t.transpose(1, 2).detach().requires_grad_() for t in (q, k, v))
    fused = [SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
    try:
        with sdpa_kernel(fused):
            out = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, enable_gqa=True)
        how = "enable_gqa"
    except RuntimeError:  # no fused backend takes GQA in this torch: K/V repeated per query head
        groups = q.shape[2] // k.shape[2]
        with sdpa_kernel(fused):
            out = F.scaled_dot_product_attention(qt, kt.repeat_interleave(groups, 1), vt.repeat_interleave(groups, 1),
                                                 is_causal=causal)
        how = "K/V repeated"
    out.backward(dout.transpose(1, 2))
    return [out.detach().transpose(1, 2), qt.grad.transpose(1, 2), kt.grad.transpose(1, 2),
            vt.grad.transpose(1, 2)], how


def reference_heads(q, k, v, dout, causal, heads):
    """fp32 math SDPA for the query heads `heads`: out, lse, dq for those heads and those heads'
    contributions to dk, dv (summed into float32 tensors of every KV head)."""
    b, s, hq, d = q.shape
    groups = hq // k.shape[2]
    out = torch.zeros(b, s, len(heads), d, device=q.device)
    lse = torch.zeros(b, len(heads), s, device=q.device)
    dq = torch.zeros_like(out)
    dk = torch.zeros(k.shape, device=q.device)
    dv = torch.zeros(v.shape, device=q.device)
    scale = 1.0 / math.sqrt(d)
    for i, h in enumerate(heads):
        j = h // groups
        qh = q[:, :, h].float().unsqueeze(1).requires_grad_()  # [b, 1, s, d]
        kh = k[:, :, j].float().unsqueeze(1).requires_grad_()
        vh = v[:, :, j].float().unsqueeze(1).requires_grad_()
        with sdpa_kernel([SDPBackend.MATH]):
            o = F.scaled_dot_product_attention(qh, kh, vh, is_causal=causal, scale=scale)
        o.backward(dout[:, :, h].float().unsqueeze(1))
        out[:, :, i], dq[:, :, i] = o.detach()[:, 0], qh.grad[:, 0]
        dk[:, :, j] += kh.grad[:, 0]
        dv[:, :, j] += vh.grad[:, 0]
        with torch.no_grad():
            scores = (qh[:, 0] @ kh[:, 0].transpose(-1, -2)) * scale  # [b, s, s]
            if causal:
                scores.masked_fill_(torch.ones(s, s, dtype=torch.bool, device=q.device).triu_(1), float("-inf"))
            lse[:, i] = torch.logsumexp(scores, dim=-1)
        del qh, kh, vh, o, scores
    return out, lse, dq, dk, dv


def max_error(got, ref):
    e = (got.float() - ref).abs().max()
    return e if not torch.isnan(got).any() else torch.tensor(float("nan"), device=ref.device)


def reduce_max(values, device):
    # NaN (from max_error) travels as +inf, which never passes: a reduction need not keep NaN.
    t = torch.nan_to_num(torch.tensor(values, dtype=torch.float64, device=device), nan=float("inf"))
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


def check_case(a, impl, causal, seqlen, rank, world, device):
    """One row of the grid on every rank: (comparisons, failures); rank 0 prints them."""
    case = f"{impl} {'causal' if causal else 'full'} S{seqlen}"
    t0 = time.time()
    q, k, v, dout = global_inputs(a, seqlen, a.seed + seqlen + causal, device)
    got, error = run_attnrt(a, impl, causal, q, k, v, dout, rank, world)
    # The backend the ring's global descriptor resolves to (attnrt falls back when a plugin
    # refuses): a fallback would test another kernel than the one named.
    used = at.backend_name(q, k, v, impl, causal=causal)
    if not error and used != impl:
        error = f"{impl} resolved to {used} (the log above says why)"
    if error:
        if rank == 0:
            print(f"{case:<40} FAIL {error}", flush=True)
        return 1, 1
    base, how = run_torch_bf16(q, k, v, dout, causal)
    # The reference of this rank's query heads: out, lse, dq of those heads; dk and dv get their
    # contributions only, complete after the sum over ranks.
    heads = list(range(rank * a.heads // world, (rank + 1) * a.heads // world))
    ref = reference_heads(q, k, v, dout, causal, heads)
    dist.all_reduce(ref[3])
    dist.all_reduce(ref[4])
    h0, h1 = heads[0], heads[-1] + 1
    pairs = [("out", got[0][:, :, h0:h1], base[0][:, :, h0:h1], ref[0]), ("lse", got[1][:, h0:h1], None, ref[1]),
             ("dq", got[2][:, :, h0:h1], base[1][:, :, h0:h1], ref[2]), ("dk", got[3], base[2], ref[3]),
             ("dv", got[4], base[3], ref[4])]
    return compare(case, pairs, f"attnrt backend {used}; torch bf16 SDPA with {how}", t0, rank, device)


def check_varlen_case(a, impl, causal, lens, rank, world, device):
    """One packed batch (varlen) on every rank: (comparisons, failures); rank 0 prints them. The
    reference and torch's bf16 SDPA run per sequence (batch 1) and are packed back."""
    case = f"{impl} {'causal' if causal else 'full'} {'+'.join(map(str, lens))}"
    t0 = time.time()
    q, k, v, dout, cu = packed_inputs(a, lens, a.seed + sum(lens) + causal, device)
    got, error = run_attnrt(a, impl, causal, q, k, v, dout, rank, world, cu_seqlens=cu)
    # The backend the ring's global varlen descriptor resolved to (the call's own cache entry).
    shard_q = q.shape[0] // world
    varlen = (len(lens), max(lens))
    params = (1.0 / math.sqrt(a.head_dim), bool(causal), -1, -1, 0.0)
    try:
        used = _cp._resolve(q[:shard_q], k[:shard_q], v[:shard_q], world, False, impl, params, varlen)[0].name
    except attnrt.Error as e:
        used = f"nothing ({e})"
    if not error and used != impl:
        error = f"{impl} resolved to {used} (the log above says why)"
    if error:
        if rank == 0:
            print(f"{case:<40} FAIL {error}", flush=True)
        return 1, 1
    heads = list(range(rank * a.heads // world, (rank + 1) * a.heads // world))
    h0, h1 = heads[0], heads[-1] + 1
    base, ref = [], []
    for i in range(len(lens)):
        s = slice(int(cu[i]), int(cu[i + 1]))
        one = [t[s].unsqueeze(0) for t in (q, k, v, dout)]  # [1, len, heads, dim]
        b, how = run_torch_bf16(*one, causal)
        base.append([t[0] for t in b])
        ref.append(reference_heads(*one, causal, heads))
        del one, b
    base = [torch.cat([p[j] for p in base], 0) for j in range(4)]  # out, dq, dk, dv packed
    # out, dq, dk, dv [total, heads, dim] and lse [heads, total] of this rank's query heads.
    ref = [torch.cat([p[j][0] for p in ref], 1 if j == 1 else 0) for j in range(5)]
    dist.all_reduce(ref[3])
    dist.all_reduce(ref[4])
    pairs = [("out", got[0][:, h0:h1], base[0][:, h0:h1], ref[0]), ("lse", got[1][h0:h1], None, ref[1]),
             ("dq", got[2][:, h0:h1], base[1][:, h0:h1], ref[2]), ("dk", got[3], base[2], ref[3]),
             ("dv", got[4], base[3], ref[4])]
    return compare(case, pairs, f"attnrt backend {used}; torch bf16 SDPA per sequence with {how}", t0, rank, device)


def compare(case, pairs, note, t0, rank, device):
    """FlashAttention's rule on each (what, attnrt, torch or None, reference) of `pairs`, the
    errors reduced with MAX over the ranks: (comparisons, failures); rank 0 prints the rows."""
    values = []
    for _, g, b, r in pairs:
        values += [max_error(g, r).item(), max_error(b, r).item() if b is not None else 0.0, r.abs().max().item()]
    values = reduce_max(values, device)
    failures = 0
    for i, (what, _, b, _) in enumerate(pairs):
        err, torch_err, ref_max = values[3 * i:3 * i + 3]
        floor = FLOOR * max(1.0, ref_max)
        ok = err <= (2 * torch_err if b is not None else 0.0) + floor  # False for NaN (carried as inf)
        failures += not ok
        if rank == 0:
            shown = f"{torch_err:10.3e}" if b is not None else f"{'-':>10}"
            print(f"{case:<40} {what:<4} {err:10.3e} {shown} {floor:9.1e}  {'PASS' if ok else 'FAIL'}", flush=True)
    if rank == 0:
        print(f"{'':<40} ({time.time() - t0:.1f} s; {note})", flush=True)
    return len(pairs), failures


def main():
    a = parse()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    logging.basicConfig(level=logging.INFO if rank == 0 else logging.WARNING, format=f"rank {rank}: %(name)s: "
                        "%(message)s")  # attnrt's resolutions and any fallback reason
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=device)
    torch.backends.cuda.matmul.allow_tf32 = False  # the reference is float32 arithmetic
    torch.backends.cudnn.allow_tf32 = False
    if a.heads % world or a.heads % a.kv_heads:
        raise SystemExit(f"--heads {a.heads} must be a multiple of the world size {world} and of --kv-heads")
    lens = [int(x) for x in a.varlen.split(",") if x]
    chunks = 2 * world if a.layout == "zigzag" else world
    if any(n <= 0 or n % chunks for n in lens):
        raise SystemExit(f"--varlen {a.varlen}: every length must be a positive multiple of {chunks} ({a.layout} "
                         f"layout over {world} ranks)")
    if rank == 0:
        nccl = torch.cuda.nccl.version()
        library = (_cp._nccl_library() or os.environ.get("ATTNRT_NCCL_LIBRARY")
                   or "libnccl.so.2")
        print(f"torch {torch.__version__}, {world} x {torch.cuda.get_device_name(device)}, torch's NCCL "
              f"{nccl if isinstance(nccl, int) else '.'.join(map(str, nccl))}; attnrt's NCCL library {library}; "
              f"batch {a.batch}, heads {a.heads}/{a.kv_heads}, head_dim {a.head_dim}, bf16, layout {a.layout}; "
              f"NCCL_NVLS_ENABLE={os.environ['NCCL_NVLS_ENABLE']}", flush=True)
        print(f"{'case':<40} {'what':<4} {'attnrt':>10} {'torch':>10} {'floor':>9}  result", flush=True)
    rows = failures = 0
    t_start = time.time()
    for impl in a.implementations.split(","):
        for causal in (bool(int(c)) for c in a.causal.split(",")):
            for seqlen in (int(s) for s in a.seqlens.split(",") if s):
                n, bad = check_case(a, impl, causal, seqlen, rank, world, device)
                rows, failures = rows + n, failures + bad
                torch.cuda.empty_cache()
            if lens:
                n, bad = check_varlen_case(a, impl, causal, lens, rank, world, device)
                rows, failures = rows + n, failures + bad
                torch.cuda.empty_cache()
    if rank == 0:
        print(f"{rows - failures}/{rows} comparisons pass ({time.time() - t_start:.1f} s)", flush=True)
    dist.barrier()
    _cp._release_transports()  # attnrt's communicator before torch's group
    dist.destroy_process_group()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
