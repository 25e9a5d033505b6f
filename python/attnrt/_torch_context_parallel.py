"""attnrt.torch's context parallelism: attention over a sequence split across ranks.

Ring Attention (Liu, Zaharia, Abbeel 2023) with the causal load balance of Megatron-LM's context
parallelism and ring-flash-attention (the "zigzag" split), run by libattnrt's ring
(host_api.h's attnrt_ring_*; docs/distributed.md): every rank holds its shard of q, k and v, the
K/V shards travel around the ranks, each rank computes its queries against every block with the
backend ``implementation`` resolves to, and the partial results merge exactly by their
log-sum-exp. The backward sends the dK/dV accumulators around the ring the other way; dQ stays
on its rank. Public names are re-exported by :mod:`attnrt.torch`.
"""
from __future__ import annotations

import atexit
import math
import threading
from typing import Optional, Sequence

import torch
from torch import Tensor

import attnrt

from . import torch as _at

__all__ = ["context_parallel_attention", "context_parallel_shard", "context_parallel_unshard"]

_LAYOUTS = {"zigzag": attnrt.RingLayout.ZIGZAG, "contiguous": attnrt.RingLayout.CONTIGUOUS}
_lock = threading.Lock()
_backends: dict = {}  # global call shape -> (backend, resolved global descriptor)
_transports: dict = {}  # (process group, CUDA device index) -> attnrt.Transport over NCCL


def _layout_name(layout) -> str:
    if isinstance(layout, attnrt.RingLayout):
        return "zigzag" if layout == attnrt.RingLayout.ZIGZAG else "contiguous"
    if layout not in _LAYOUTS:
        raise ValueError(f"attnrt.torch: layout must be 'zigzag' or 'contiguous', got {layout!r}")
    return layout


def _chunks(x: Tensor, world_size: int, layout: str, dim: int, what: str) -> int:
    """The length of one chunk of x's dimension `dim` (the global sequence) under `layout`."""
    parts = _parts(world_size, layout)
    n = x.shape[dim]
    if n % parts or n == 0:
        raise ValueError(f"attnrt.torch: {what}'s dimension {dim} ({n}) is not a positive multiple of {parts} "
                         f"({layout} layout over {world_size} ranks: {parts} equal chunks)")
    return n // parts


def _parts(world_size: int, layout: str) -> int:
    """The number of equal chunks `layout` cuts a sequence into over `world_size` ranks."""
    if world_size < 1:
        raise ValueError(f"attnrt.torch: world_size must be >= 1, got {world_size}")
    return 2 * world_size if layout == "zigzag" else world_size


def _host_cu_seqlens(cu_seqlens) -> Tensor:
    """The global cu_seqlens as a contiguous CPU int32 tensor ([batch + 1], 0 first,
    non-decreasing): what the ring reads on the host. A tensor on another device is copied to the
    host (a synchronization); any sequence of ints is taken too. ValueError when malformed."""
    if isinstance(cu_seqlens, Tensor):
        if cu_seqlens.dtype.is_floating_point or cu_seqlens.dtype.is_complex or cu_seqlens.dtype == torch.bool:
            raise ValueError(f"attnrt.torch: cu_seqlens must hold integers, got {cu_seqlens.dtype}")
        t = cu_seqlens.detach()
        if t.device.type != "cpu":
            t = t.cpu()
    else:
        try:
            t = torch.tensor([int(x) for x in cu_seqlens], dtype=torch.int64)
        except (TypeError, ValueError) as e:
            raise ValueError(f"attnrt.torch: cu_seqlens must be a 1-D integer tensor or a sequence of ints ({e})") \
                from None
    if t.dim() != 1 or t.numel() < 2:
        raise ValueError(f"attnrt.torch: cu_seqlens must be 1-D [batch + 1] with batch >= 1 (the whole packed "
                         f"batch's prefix sums), got shape {list(t.shape)}")
    if t[0].item() != 0:
        raise ValueError(f"attnrt.torch: cu_seqlens[0] must be 0, got {t[0].item()}")
    lens = t[1:] - t[:-1]
    if bool((lens < 0).any()):
        raise ValueError(f"attnrt.torch: cu_seqlens must be non-decreasing (at index "
                         f"{int((lens < 0).nonzero()[0].item()) + 1})")
    if t[-1].item() > torch.iinfo(torch.int32).max:
        raise ValueError(f"attnrt.torch: cu_seqlens' total {t[-1].item()} does not fit int32")
    return t.to(torch.int32).contiguous()


def _varlen_segments(cu: Tensor, world_size: int, layout: str):
    """Where each sequence's chunks go: (rank, shard_row, global_row, rows) for every non-empty
    chunk, in global order, adjacent pieces of a rank merged. Rank r's shard is, for each sequence
    i in order, its chunks r and 2N-1-r (zigzag; contiguous: chunk r) of c_i = len_i / chunks rows
    (tests/support/ring_case.hpp's varlen_global_rows). ValueError naming the first sequence whose
    length is not a multiple of the number of chunks."""
    parts = _parts(world_size, layout)
    offsets = cu.tolist()
    halves = [(r, 2 * world_size - 1 - r) for r in range(world_size)] if layout == "zigzag" else \
        [(r,) for r in range(world_size)]
    owner = {ch: (r, h) for r, mine in enumerate(halves) for h, ch in enumerate(mine)}
    pieces = []
    done = 0  # sum of c_j over the sequences before i: each rank's shard holds len(mine) * done rows before i
    for i in range(len(offsets) - 1):
        start, n = offsets[i], offsets[i + 1] - offsets[i]
        if n % parts:
            raise ValueError(f"attnrt.torch: sequence {i} of the packed batch has length {n}, not a multiple of "
                             f"{parts} ({layout} layout over {world_size} ranks cuts every sequence into {parts} "
                             f"equal chunks); pad it to a multiple of {parts}")
        c = n // parts
        if c:
            for ch in range(parts):
                r, h = owner[ch]
                pieces.append([r, len(halves[r]) * done + h * c, start + ch * c, c])
        done += c
    merged = []
    for p in pieces:
        last = merged[-1] if merged else None
        if last and last[0] == p[0] and last[1] + last[3] == p[1] and last[2] + last[3] == p[2]:
            last[3] += p[3]
        else:
            merged.append(p)
    return merged


def context_parallel_shard(x: Tensor, rank: int, world_size: int, layout: str = "zigzag", dim: Optional[int] = None,
                           cu_seqlens=None) -> Tensor:
    """Rank ``rank``'s shard of the global tensor ``x`` along ``dim``, the sequence dimension
    (None: 1, for the [batch, seqlen, heads, head_dim] layout of
    :func:`context_parallel_attention`; 0 with ``cu_seqlens``, for a packed [total, heads, dim]).

    ``zigzag`` (Megatron-LM, ring-flash-attention): global chunks ``rank`` and
    ``2 * world_size - 1 - rank`` of ``2 * world_size`` equal chunks, concatenated in that order
    (a new tensor); ``contiguous``: chunk ``rank`` of ``world_size`` (a view of x). Any dtype and
    device. ValueError when the length is not a multiple of the number of chunks or rank is
    outside [0, world_size).

    ``cu_seqlens``: x is a packed batch of sequences (varlen) and cu_seqlens the whole batch's
    [batch + 1] prefix sums (a tensor on any device, or a sequence of ints; the last equals x's
    length along ``dim``). Each sequence is cut into the layout's chunks of its own length, and
    the shard is, for each sequence in order, its chunks ``rank`` and ``2 * world_size - 1 -
    rank`` (contiguous: chunk ``rank``), concatenated: total / world_size rows (a new tensor).
    ValueError naming the sequence whose length is not a multiple of the number of chunks."""
    layout = _layout_name(layout)
    if cu_seqlens is None:
        dim = 1 if dim is None else dim
        c = _chunks(x, world_size, layout, dim, "x")
        if not 0 <= rank < world_size:
            raise ValueError(f"attnrt.torch: rank {rank} is outside [0, {world_size})")
        if layout == "contiguous":
            return x.narrow(dim, rank * c, c)
        return torch.cat((x.narrow(dim, rank * c, c), x.narrow(dim, (2 * world_size - 1 - rank) * c, c)), dim)
    dim = 0 if dim is None else dim
    cu = _host_cu_seqlens(cu_seqlens)
    _check_packed_length(x.shape[dim], cu, dim, "x")
    segments = _varlen_segments(cu, world_size, layout)
    if not 0 <= rank < world_size:
        raise ValueError(f"attnrt.torch: rank {rank} is outside [0, {world_size})")
    mine = sorted((s for s in segments if s[0] == rank), key=lambda s: s[1])
    if not mine:
        return x.narrow(dim, 0, 0)
    if len(mine) == 1:
        return x.narrow(dim, mine[0][2], mine[0][3])
    return torch.cat([x.narrow(dim, g, n) for _, _, g, n in mine], dim)


def _check_packed_length(n: int, cu: Tensor, dim: int, what: str) -> None:
    total = int(cu[-1].item())
    if n != total:
        raise ValueError(f"attnrt.torch: {what}'s dimension {dim} ({n}) differs from the packed batch's total "
                         f"length cu_seqlens[-1] = {total}")


def context_parallel_unshard(shards: Sequence[Tensor], layout: str = "zigzag", dim: Optional[int] = None,
                             cu_seqlens=None) -> Tensor:
    """The global tensor from every rank's shard (``shards[r]`` rank r's, as
    :func:`context_parallel_shard` cuts them; for example what ``torch.distributed.all_gather``
    collects): the inverse of context_parallel_shard over ranks 0..N-1, with the same ``dim``
    (None: 1; 0 with ``cu_seqlens``) and ``cu_seqlens`` (the global prefix sums of a packed
    batch). ValueError when the shards differ in shape, a zigzag shard's length is odd, or (with
    cu_seqlens) a shard is not total / N long or a sequence cannot be cut."""
    layout = _layout_name(layout)
    if not shards:
        raise ValueError("attnrt.torch: context_parallel_unshard needs at least one shard")
    dim = (0 if cu_seqlens is not None else 1) if dim is None else dim
    shape = shards[0].shape
    for r, s in enumerate(shards):
        if s.shape != shape:
            raise ValueError(f"attnrt.torch: shard {r} has shape {list(s.shape)}, shard 0 {list(shape)}")
    if cu_seqlens is not None:
        cu = _host_cu_seqlens(cu_seqlens)
        segments = _varlen_segments(cu, len(shards), layout)
        _check_packed_length(shape[dim] * len(shards), cu, dim, f"{len(shards)} shards (joined)")
        if not segments:
            return torch.cat(list(shards), dim)
        return torch.cat([shards[r].narrow(dim, at, n) for r, at, _, n in segments], dim)
    if layout == "contiguous":
        return torch.cat(list(shards), dim)
    n = shape[dim]
    if n % 2:
        raise ValueError(f"attnrt.torch: a zigzag shard holds two equal chunks; shard length {n} (dimension {dim}) "
                         "is odd")
    firsts = [s.narrow(dim, 0, n // 2) for s in shards]
    seconds = [s.narrow(dim, n // 2, n // 2) for s in reversed(shards)]
    return torch.cat(firsts + seconds, dim)


# ---- Transports


def _nccl_library() -> Optional[str]:
    """The libnccl this process already has mapped (PyTorch's, from its nvidia-nccl wheel), so
    attnrt's communicator runs on the same NCCL as torch.distributed; None: attnrt's own search
    (ATTNRT_NCCL_LIBRARY, else libnccl.so.2), also whenever ATTNRT_NCCL_LIBRARY is set."""
    import os

    if os.environ.get("ATTNRT_NCCL_LIBRARY"):
        return None
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip()
                if "/libnccl.so" in path and os.path.exists(path):
                    return path
    except OSError:
        pass
    return None


def _release_transports() -> None:
    # Before the interpreter (and CUDA) go: each communicator is destroyed while its device lives.
    _transports.clear()


def _nccl_transport(group, device: torch.device) -> "attnrt.Transport":
    """This rank's end of an attnrt NCCL communicator over the ranks of `group` on `device`,
    made once per (group, device): rank 0 of the group makes the unique id
    (attnrt_nccl_unique_id), broadcast_object_list gives it to the others (over the group's own
    backend), and every rank creates the communicator (ncclCommInitRank, blocking until all have
    joined). A failure on rank 0 is broadcast too, so every rank raises it instead of waiting."""
    import torch.distributed as dist

    index = device.index if device.index is not None else torch.cuda.current_device()
    key = (group, index)
    t = _transports.get(key)
    if t is not None:
        return t
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    library = _nccl_library()
    message = [None]
    if rank == 0:
        try:
            message[0] = ("id", attnrt.nccl_unique_id(library))
        except attnrt.Error as e:
            message[0] = ("error", type(e).__name__, str(e))
    backend = str(dist.get_backend(group))
    dist.broadcast_object_list(message, src=dist.get_global_rank(group, 0), group=group,
                               device=torch.device("cuda", index) if "nccl" in backend else None)
    if message[0][0] == "error":
        raise getattr(attnrt, message[0][1], attnrt.Error)(f"attnrt.torch: rank 0 of the group could not make an "
                                                           f"NCCL unique id: {message[0][2]}")
    t = attnrt.Transport.nccl(message[0][1], rank, world, index, library)
    if not _transports:
        atexit.register(_release_transports)
    _transports[key] = t
    return t


def _forget(transport) -> None:
    """Drops a cached NCCL transport after a ring call on it failed with another rank's failure
    (DeviceError): its communicator may be aborted, and an aborted one is not reused (host_api.h);
    the next call makes a new one. Refusals (raised before anything is sent) keep it."""
    for key in [key for key, t in _transports.items() if t is transport]:
        del _transports[key]


def _transport_for(q: Tensor, group, transport) -> "attnrt.Transport":
    if transport is not None:
        if group is not None:
            raise ValueError("attnrt.torch.context_parallel_attention: pass group or transport, not both")
        return transport
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("attnrt.torch.context_parallel_attention: torch.distributed is not initialised "
                           "(init_process_group), and no transport= was given")
    if group is None:
        group = dist.group.WORLD
    if q.device.type != "cuda":
        raise attnrt.UnsupportedError(
            f"attnrt.torch.context_parallel_attention: tensors on {q.device} with a torch.distributed group "
            f"({dist.get_backend(group)}): attnrt has no gloo transport, and its NCCL transport needs CUDA "
            "tensors. On the CPU pass transport= (attnrt.InProcessGroup(n).transport(rank): ranks as threads "
            "of one process)")
    return _nccl_transport(group, q.device)


# ---- The ring call


def _resolve(q: Tensor, k: Tensor, v: Tensor, world: int, has_sinks: bool, implementation: str, params: tuple,
             varlen: Optional[tuple] = None):
    """The backend resolved for the global descriptor (what one call on the whole sequence
    would take: every rank asks with the same one) and that descriptor; cached per shape.
    varlen: (batch, max_seqlen) of a packed batch (q, k, v [rows, heads, dim])."""
    softmax_scale, causal, window_left, window_right, softcap = params
    if q.dtype not in _at._DTYPES:
        raise attnrt.UnsupportedError(f"attnrt.torch: q dtype {q.dtype} is not supported (float32, float16, bfloat16)")
    dev = _at._device_key(q.device)
    key = (dev, world, implementation, q.dtype, q.shape, k.shape, v.shape, has_sinks, params, varlen)
    hit = _backends.get(key)
    if hit is not None:
        return hit
    with _lock:
        if key not in _backends:
            d = attnrt.Desc()
            d.dtype = _at._DTYPES[q.dtype]
            if varlen is None:
                d.batch, shard_q, d.heads_q, d.head_dim = (int(x) for x in q.shape)
                d.seqlen_q, d.seqlen_k = shard_q * world, int(k.shape[1]) * world
                d.heads_kv, d.head_dim_v = int(k.shape[2]), int(v.shape[3])
            else:  # the global varlen call: the batch's sequences, seqlen_q = seqlen_k = the longest
                d.batch, d.seqlen_q = varlen
                d.seqlen_k = d.seqlen_q
                _, d.heads_q, d.head_dim = (int(x) for x in q.shape)
                d.heads_kv, d.head_dim_v = int(k.shape[1]), int(v.shape[2])
                d.is_varlen = 1
            d.softmax_scale = softmax_scale
            d.causal = int(causal)
            d.window_left, d.window_right = window_left, window_right
            d.softcap = softcap
            d.has_sinks = int(has_sinks)
            d.return_lse = 1
            _backends[key] = (_at._runtime(dev).resolve(d, implementation), d)
        return _backends[key]


def _threads(q: Tensor, k: Tensor, varlen: Optional[tuple] = None, world: int = 1) -> int:
    """CPU threads per block call, as attention() picks them for a call of one block's size
    (varlen: the shard's rows against a chunk of the longest sequence, an upper bound)."""
    if not q.is_cpu:
        return 0
    if varlen is None:
        work = q.shape[0] * q.shape[2] * q.shape[1] * k.shape[1]
    else:
        work = q.shape[1] * q.shape[0] * max(1, varlen[1] // world)
    return 1 if work < _at._SERIAL_WORK else (_at.num_threads or torch.get_num_threads())


def _check_shards(q: Tensor, k: Tensor, v: Tensor, varlen: bool = False) -> None:
    if varlen:
        for name, t in (("q", q), ("k", k), ("v", v)):
            if t.dim() != 3:
                raise ValueError(f"attnrt.torch.context_parallel_attention: with cu_seqlens {name} must be this "
                                 f"rank's packed shard [total / world_size, heads, head_dim], got shape "
                                 f"{list(t.shape)}")
        if v.shape[:2] != k.shape[:2]:
            raise ValueError(f"attnrt.torch.context_parallel_attention: v {list(v.shape)} must match k "
                             f"{list(k.shape)} in rows and heads_kv")
        if k.shape[0] != q.shape[0]:
            raise ValueError(f"attnrt.torch.context_parallel_attention: k has {k.shape[0]} rows, q {q.shape[0]}: "
                             "varlen context parallelism is self-attention (one packed batch for q, k and v)")
        return
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != 4:
            raise ValueError(f"attnrt.torch.context_parallel_attention: {name} must be this rank's shard "
                             f"[batch, shard_len, heads, head_dim], got shape {list(t.shape)}")
    if v.shape[:3] != k.shape[:3]:
        raise ValueError(f"attnrt.torch.context_parallel_attention: v {list(v.shape)} must match k "
                         f"{list(k.shape)} in batch, shard_len and heads_kv")
    if k.shape[0] != q.shape[0]:
        raise ValueError(f"attnrt.torch.context_parallel_attention: k's batch {k.shape[0]} differs from q's "
                         f"{q.shape[0]}")


class _RingCall:
    """What one call and its backward use: the ring, its transport, the global descriptor, the
    CPU threads per block call and, for a packed batch, the global cu_seqlens (a CPU int32
    tensor: the ring reads them on the host)."""

    __slots__ = ("ring", "transport", "desc", "threads", "cu_seqlens")

    def __init__(self, ring, transport, desc, threads, cu_seqlens=None):
        self.ring, self.transport, self.desc, self.threads = ring, transport, desc, threads
        self.cu_seqlens = cu_seqlens

    def cu(self):
        """The cu_seqlens as DLPack (host memory, kDLCPU), or None."""
        return None if self.cu_seqlens is None else _at._dl(self.cu_seqlens)


def _ring_forward(call: _RingCall, q, k, v, sinks):
    if call.cu_seqlens is None:
        b, sq, hq, _ = q.shape
        out = q.new_empty((b, sq, hq, v.shape[3]))
        lse = q.new_empty((b, hq, sq), dtype=torch.float32)
    else:  # packed: out [rows, heads, dim_v], the ABI's varlen LSE [heads, rows]
        rows, hq, _ = q.shape
        out = q.new_empty((rows, hq, v.shape[2]))
        lse = q.new_empty((hq, rows), dtype=torch.float32)
    s = _at._stream(q)
    try:
        call.ring.forward(call.desc, _at._dl(q), _at._dl(k), _at._dl(v), _at._dl(out),
                          lse=_at._dl(lse), sinks=_at._dl(sinks), stream=s, num_threads=call.threads,
                          cu_seqlens_q=call.cu(), cu_seqlens_k=call.cu())
    except attnrt.DeviceError:
        _forget(call.transport)
        raise
    return out, lse


class _RingAttention(torch.autograd.Function):
    """Forward saves out and the LSE; backward is the ring's backward (every rank's backward
    takes part in one ring, so every rank must run it, as with any collective)."""

    @staticmethod
    def forward(ctx, q, k, v, sinks, call):
        out, lse = _ring_forward(call, q, k, v, sinks)
        ctx.call = call
        ctx.save_for_backward(q, k, v, out, lse, sinks)
        ctx.mark_non_differentiable(lse)
        return out, lse

    @staticmethod
    def backward(ctx, dout, _dlse):
        q, k, v, out, lse, sinks = ctx.saved_tensors
        dout = dout.contiguous()
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        s = _at._stream(q)
        call = ctx.call
        try:
            call.ring.backward(call.desc, _at._dl(dout), _at._dl(q), _at._dl(k), _at._dl(v),
                               _at._dl(out), _at._dl(lse), _at._dl(dq), _at._dl(dk), _at._dl(dv),
                               sinks=_at._dl(sinks), stream=s, num_threads=call.threads,
                               cu_seqlens_q=call.cu(), cu_seqlens_k=call.cu())
        except attnrt.DeviceError:
            _forget(call.transport)
            raise
        return dq, dk, dv, None, None


def _context_parallel_attention(q: Tensor, k: Tensor, v: Tensor, group=None, *, transport=None,
                                layout: str = "zigzag", implementation: str = "sdpa",
                                softmax_scale: Optional[float] = None, causal: bool = False, window_left: int = -1,
                                window_right: int = -1, softcap: float = 0.0, sinks: Optional[Tensor] = None,
                                return_lse: bool = False, cu_seqlens=None, max_seqlen: Optional[int] = None):
    """Attention over a sequence split across the ranks of ``group`` (ring attention): this
    rank's rows of what :func:`attnrt.torch.attention` on the whole sequence returns.

    q [batch, shard_q, heads_q, head_dim], k and v [batch, shard_k, heads_kv, head_dim(_v)]:
    this rank's shard in ``layout`` order (:func:`context_parallel_shard`; the global sequence
    is shard_len x world_size long), float32, float16 or bfloat16, last dimension contiguous.
    Returns out [batch, shard_q, heads_q, head_dim_v] (this rank's rows of the whole-sequence
    output) and, with return_lse, lse [batch, heads_q, shard_q] float32. Differentiable in q,
    k and v: the backward is the ring's (dq for this shard's queries, dk/dv for this shard's
    keys); every rank must call forward and backward in the same order, as for a collective.

    layout: ``"zigzag"`` (Megatron-LM / ring-flash-attention: global chunks r and 2N-1-r of
    2N; every rank the same causal work) or ``"contiguous"`` (chunk r of N; for sliding windows,
    where only the blocks a window reaches travel). implementation, softmax_scale, causal,
    window_left/right (global positions, bottom-right aligned), softcap: as attention(), and one
    backend, resolved for the global descriptor, computes every block.

    The group of ranks: ``transport=`` an :class:`attnrt.Transport` (for example
    ``attnrt.InProcessGroup(n).transport(rank)``, ranks as threads of this process: tests and
    CPU use), else ``group``, a torch.distributed ProcessGroup (None: the default group) with
    CUDA tensors: an attnrt NCCL communicator over the group's ranks on q's device, made on the
    first call per (group, device) from a unique id that the group's rank 0 broadcasts, and
    kept. CUDA calls run on the current stream. CPU tensors with a torch.distributed group are
    refused (attnrt has no gloo transport).

    Packed batches (varlen, self-attention): ``cu_seqlens``, the whole batch's [batch + 1]
    prefix sums (the global ones, the same on every rank: a CPU int32 tensor, or any sequence of
    ints; a tensor on a GPU is copied to the host, a synchronization per call, since the ring
    reads the lengths on the host), and ``max_seqlen``, the longest sequence (None: computed from
    cu_seqlens). q, k, v are then this rank's packed shards [total / N, heads, head_dim(_v)] as
    ``context_parallel_shard(x, rank, N, layout, cu_seqlens=cu_seqlens)`` cuts them (each
    sequence into the layout's chunks of its own length; every length a multiple of 2N zigzag,
    N contiguous: pad each sequence). Returns out [total / N, heads_q, head_dim_v] and, with
    return_lse, lse [heads_q, total / N] float32 (the ABI's varlen LSE). A sliding window with
    varlen is refused by the ring with its reason.

    Errors (attnrt.Error subclasses, with libattnrt's message): a shard whose length the layout
    cannot cut into equal chunks (varlen: naming the sequence and its length), or of the wrong
    shape, is InvalidArgumentError naming the tensor; what the ring cannot do yet (sinks, ALiBi,
    varlen with a window; tensors on a CUDA device until its merge kernels exist) is
    UnsupportedError naming the feature; another rank's failure is DeviceError naming that rank.
    torch.compile: the call is a graph break (it runs eagerly between compiled graphs);
    ``fullgraph=True`` refuses it. torch.func transforms are refused.
    """
    if softmax_scale is None:
        softmax_scale = 1.0 / math.sqrt(q.shape[-1])
    varlen, cu = None, None
    if cu_seqlens is not None:
        cu = _host_cu_seqlens(cu_seqlens)
        longest = int((cu[1:] - cu[:-1]).max().item())
        if max_seqlen is None:
            max_seqlen = longest
        elif int(max_seqlen) < longest:
            raise ValueError(f"attnrt.torch.context_parallel_attention: max_seqlen {max_seqlen} is less than the "
                             f"longest sequence of cu_seqlens ({longest})")
        varlen = (cu.numel() - 1, int(max_seqlen))
    elif max_seqlen is not None:
        raise ValueError("attnrt.torch.context_parallel_attention: max_seqlen without cu_seqlens (it describes a "
                         "packed batch)")
    _check_shards(q, k, v, varlen is not None)
    device = q.device.type
    if device in ("cuda", "cpu") and torch.is_autocast_enabled(device):
        low = torch.get_autocast_dtype(device)  # as attention(): autocast treats SDPA this way
        q, k, v = (t.to(low) if t.dtype != low and t.is_floating_point() else t for t in (q, k, v))
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
    if sinks is not None and sinks.dtype != torch.float32:
        sinks = sinks.float()
    if _at._functorch_active():
        raise NotImplementedError("attnrt.torch.context_parallel_attention has no torch.func rule (grad, vjp, "
                                  "vmap): take gradients with torch.autograd")
    layout = _layout_name(layout)
    t = _transport_for(q, group, transport)
    params = (float(softmax_scale), bool(causal), int(window_left), int(window_right), float(softcap))
    backend, desc = _resolve(q, k, v, t.world_size, sinks is not None, implementation, params, varlen)
    call = _RingCall(attnrt.Ring(backend, t, _LAYOUTS[layout]), t, desc, _threads(q, k, varlen, t.world_size), cu)
    if torch.is_grad_enabled() and any(x is not None and x.requires_grad for x in (q, k, v)):
        out, lse = _RingAttention.apply(q, k, v, sinks, call)
    else:
        out, lse = _ring_forward(call, q, k, v, sinks)
    return (out, lse) if return_lse else out


def _no_compile(fn):
    # A collective that drives a C ring (and NCCL) from Python has nothing for Dynamo to trace:
    # it runs as a graph break, with this reason where the torch version takes one.
    reason = ("attnrt.torch.context_parallel_attention is a collective over a C ring, run eagerly "
              "between compiled graphs; fullgraph=True cannot include it")
    try:
        return torch.compiler.disable(fn, reason=reason)
    except TypeError:  # torch < 2.7: no reason argument
        return torch.compiler.disable(fn)


context_parallel_attention = _no_compile(_context_parallel_attention)
context_parallel_attention.__doc__ = _context_parallel_attention.__doc__
