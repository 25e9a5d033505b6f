"""flex_attention for PyTorch (issue 15): ``attnrt.torch.flex_attention``, ``create_block_mask``
and ``BlockMask``, after PyTorch's ``torch.nn.attention.flex_attention`` (FlexAttention, Dong et
al. 2024, "Flex Attention: A Programming Model for Generating Optimized Attention Kernels").

The mods are C++ source text, not Python callables: the bodies (or single expressions) of
``float score_mod(float score, int b, int h, int q_idx, int kv_idx)``, ``bool mask_mod(int b, int
h, int q_idx, int kv_idx)`` and ``float score_mod_grad(...)`` (d score_mod / d score, which
backward needs), compiled by the plugin: on the CPU by the system C++ compiler
(``$ATTNRT_HOST_CXX``, default ``c++``), on CUDA by NVRTC, cached on disk. sdk/README.md's
"flex_attention mods" is the contract (names in scope: ``aux0``.., ``scalar0``.., ``expf``,
``tanhf``, ...). The calls go through the host API with plugin_abi.h's ``attnrt_flex_attention``
block on the descriptor (Runtime.resolve / Backend.flex_forward in attnrt's core).
"""
from __future__ import annotations

import dataclasses
import math
import threading
from typing import Optional, Sequence, Union

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

import attnrt

from . import torch as _at

__all__ = ["BlockMask", "create_block_mask", "flex_attention"]

_MASK_FIELDS = ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices", "q_num_blocks", "q_indices",
                "full_q_num_blocks", "full_q_indices")
_AUX_DTYPES = (torch.int32, torch.int64, torch.float32)
_MAX_AUX = 16  # sdk/README.md's limits (check_flex)
_MAX_SCALARS = 64

_lock = threading.Lock()
_resolved: dict = {}


def _invalid(message: str) -> attnrt.InvalidArgumentError:
    e = attnrt.InvalidArgumentError(message)
    e.status = 1  # ATTNRT_ERROR_INVALID_ARGUMENT, as the host API's own errors carry
    return e


def _unsupported(message: str) -> attnrt.UnsupportedError:
    e = attnrt.UnsupportedError(message)
    e.status = 2  # ATTNRT_ERROR_UNSUPPORTED
    return e


@dataclasses.dataclass(frozen=True, eq=False)
class BlockMask:
    """PyTorch's BlockMask, field for field (torch.nn.attention.flex_attention.BlockMask): which
    BLOCK_SIZE[0] x BLOCK_SIZE[1] tiles of the score matrix hold any visible pair.

    All tensors are int32 on the mask's device, with Bm = 1 or batch and Hm = 1 or heads (1
    broadcasts, as PyTorch's B=None / H=None), MQ = ceil(Q_LEN / BLOCK_SIZE[0]) query blocks and
    MK = ceil(KV_LEN / BLOCK_SIZE[1]) key blocks; lists are ascending, entries past a row's
    count 0:

    - kv_num_blocks [Bm, Hm, MQ], kv_indices [Bm, Hm, MQ, MK]: the partial key blocks of each
      query block (mask_mod is evaluated there);
    - full_kv_num_blocks, full_kv_indices (same shapes, or None): the full ones (every pair
      visible: mask_mod is skipped);
    - q_num_blocks, q_indices, full_q_num_blocks, full_q_indices [Bm, Hm, MK(, MQ)]: the
      transpose, for backward (None: the plugin derives it).

    Blocks listed nowhere are skipped. mask_mod is the C++ source the mask was built from (used
    by flex_attention when it is given no mask_mod), aux and scalars what that source reads
    (aux0.., scalar0..), seq_lengths (Q_LEN, KV_LEN). Built by create_block_mask, or by hand
    with these fields (flex_attention checks the shapes; as in PyTorch, the lists are trusted).
    """

    kv_num_blocks: Tensor
    kv_indices: Tensor
    full_kv_num_blocks: Optional[Tensor]
    full_kv_indices: Optional[Tensor]
    q_num_blocks: Optional[Tensor]
    q_indices: Optional[Tensor]
    full_q_num_blocks: Optional[Tensor]
    full_q_indices: Optional[Tensor]
    BLOCK_SIZE: tuple
    mask_mod: Optional[str]
    seq_lengths: tuple
    aux: tuple = ()
    scalars: tuple = ()

    @property
    def shape(self) -> tuple:
        """(Bm, Hm, Q_LEN, KV_LEN), as PyTorch's BlockMask.shape."""
        return (*self.kv_num_blocks.shape[:2], *self.seq_lengths)

    def sparsity(self) -> float:
        """Percentage of blocks that are skipped (not computed), as PyTorch's BlockMask.sparsity."""
        total = self.kv_num_blocks.shape[0] * self.kv_num_blocks.shape[1]
        for n, size in zip(self.seq_lengths, self.BLOCK_SIZE):
            total *= -(-n // size)
        computed = int(self.kv_num_blocks.sum())
        if self.full_kv_num_blocks is not None:
            computed += int(self.full_kv_num_blocks.sum())
        return 100.0 * (1.0 - computed / total) if total else 0.0

    def to_dense(self) -> Tensor:
        """[Bm, Hm, MQ, MK] int32: 1 where a block is listed (partial or full), as PyTorch's."""
        dense = _listed(self.kv_num_blocks, self.kv_indices)
        if self.full_kv_num_blocks is not None:
            dense |= _listed(self.full_kv_num_blocks, self.full_kv_indices)
        return dense

    def to(self, device) -> "BlockMask":
        """The same mask with its tensors (and aux) on `device`."""
        moved = {f: (getattr(self, f).to(device) if getattr(self, f) is not None else None) for f in _MASK_FIELDS}
        return dataclasses.replace(self, aux=tuple(a.to(device) for a in self.aux), **moved)

    @property
    def device(self) -> torch.device:
        return self.kv_num_blocks.device


def _listed(num: Tensor, idx: Tensor) -> Tensor:
    """[..., rows, MK] int32 with 1 at the first num[..., r] entries of idx[..., r, :]."""
    cols = idx.shape[-1]
    valid = torch.arange(cols, device=idx.device) < num[..., None]
    dense = torch.zeros(*idx.shape[:-1], cols + 1, dtype=torch.int32, device=idx.device)
    # Entries past a row's count go to a spare column, dropped below.
    dense.scatter_(-1, torch.where(valid, idx.long(), cols), 1)
    return dense[..., :cols]


def _check_mod(name: str, source) -> Optional[str]:
    if source is None or isinstance(source, str):
        return source
    raise TypeError(f"flex_attention: {name} must be C++ source text (str; sdk/README.md's \"flex_attention mods\") "
                    f"or None, got {type(source).__name__}: attnrt compiles mods from source, not from Python "
                    f"callables")


def _check_aux(aux: Sequence[Tensor], device: torch.device, grad: bool) -> tuple:
    aux = tuple(aux)
    if len(aux) > _MAX_AUX:
        raise _invalid(f"flex_attention: aux holds {len(aux)} tensors, at most {_MAX_AUX}")
    for i, a in enumerate(aux):
        if not isinstance(a, Tensor):
            raise TypeError(f"flex_attention: aux[{i}] must be a torch.Tensor, got {type(a).__name__}")
        if a.dtype not in _AUX_DTYPES:
            raise _invalid(f"flex_attention: aux[{i}] (aux{i}, shape {tuple(a.shape)}) must be int32, int64 or "
                           f"float32, got {a.dtype}")
        if not 1 <= a.dim() <= 4:
            raise _invalid(f"flex_attention: aux[{i}] (aux{i}) must have 1 to 4 dimensions, got shape "
                           f"{tuple(a.shape)}")
        if a.device != device:
            raise _invalid(f"flex_attention: aux[{i}] (aux{i}, shape {tuple(a.shape)}) is on {a.device}, the call "
                           f"on {device}")
        if grad and a.requires_grad:
            raise NotImplementedError(f"flex_attention: aux[{i}] (aux{i}, shape {tuple(a.shape)}) requires grad, "
                                      f"but aux tensors are constants of the mods (no gradient flows to them): "
                                      f"pass aux{i}.detach()")
    return aux


def _check_scalars(scalars: Sequence[float]) -> tuple:
    scalars = tuple(scalars)
    if len(scalars) > _MAX_SCALARS:
        raise _invalid(f"flex_attention: scalars holds {len(scalars)} values, at most {_MAX_SCALARS}")
    out = []
    for i, s in enumerate(scalars):
        if isinstance(s, Tensor):
            if s.numel() != 1:
                raise _invalid(f"flex_attention: scalars[{i}] must be a number, got a tensor of shape "
                               f"{tuple(s.shape)}")
            s = s.item()
        try:
            out.append(float(s))
        except (TypeError, ValueError):
            raise TypeError(f"flex_attention: scalars[{i}] must be a float, got {type(s).__name__}") from None
    return tuple(out)


def _block_size(BLOCK_SIZE) -> tuple:
    bs = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
    if len(bs) != 2 or not all(isinstance(x, int) and x > 0 for x in bs):
        raise _invalid(f"BLOCK_SIZE must be a positive int or a (Q_BLOCK_SIZE, KV_BLOCK_SIZE) pair, got {BLOCK_SIZE!r}")
    return bs


def _dl(t: Optional[Tensor]):
    return None if t is None else _at._dl(t)


def _flex(score_mod, mask_mod, score_mod_grad, aux, scalars, block_mask: Optional[BlockMask]) -> attnrt.Flex:
    """The call's extension block (attnrt.Flex), holding DLPack views of aux and the mask."""
    mask = {}
    block_size = (128, 128)
    if block_mask is not None:
        mask = {f: _dl(getattr(block_mask, f)) for f in _MASK_FIELDS}
        block_size = block_mask.BLOCK_SIZE
    return attnrt.Flex(score_mod, mask_mod, score_mod_grad, None, [_dl(a) for a in aux], list(scalars),
                       int(block_size[0]), int(block_size[1]), **mask)


class _Resolved:
    """What a flex call shape resolved to, kept per shape and mods: the backend, its descriptor
    with the LSE and without (inference), CPU threads, workspace bytes per direction (backward
    None: not asked yet, or no backward) and the CUDA device index (-1 on the CPU)."""

    __slots__ = ("backend", "desc", "desc_no_lse", "threads", "workspace", "cuda_index")


def _resolve(key, device: torch.device, fill, flex: attnrt.Flex, implementation: str, work: int) -> _Resolved:
    """The backend for `key` (resolved once: the plugin compiles the mods then), its descriptor
    made by fill(desc)."""
    hit = _resolved.get(key)
    if hit is not None:
        return hit
    dev = _at._device_key(device)
    with _lock:
        hit = _resolved.get(key)
        if hit is not None:
            return hit
        d = attnrt.Desc()
        fill(d)
        d.return_lse = 1
        e = _Resolved()
        _at._bind(e, _at._runtime(dev).resolve(d, implementation, flex=flex), d, device, work, flex)
        _resolved[key] = e
        return e


@dataclasses.dataclass
class _Call:
    """One flex_attention call's settings, kept by autograd for backward: plain Python and
    tensors only (the attnrt objects are looked up again by `key`), since an autograd graph may
    outlive attnrt's extension module at interpreter exit."""

    key: tuple
    score_mod: Optional[str]
    mask_mod: Optional[str]
    score_mod_grad: Optional[str]
    aux: tuple
    scalars: tuple
    block_mask: Optional[BlockMask]

    def flex(self, aux=None) -> attnrt.Flex:
        return _flex(self.score_mod, self.mask_mod, self.score_mod_grad, self.aux if aux is None else aux,
                     self.scalars, self.block_mask)


def _abi(t: Tensor) -> Tensor:
    """[batch, heads, seqlen, dim] (PyTorch's flex layout) as the ABI's [batch, seqlen, heads,
    dim]: a view, no copy."""
    return t.transpose(1, 2)


def _forward(q: Tensor, k: Tensor, v: Tensor, c: _Call, flex: attnrt.Flex, need_lse: bool):
    e = _resolved[c.key]
    b, h, s, _ = q.shape
    out = q.new_empty((b, h, s, v.shape[3]))  # PyTorch's layout, contiguous; the ABI gets a view
    lse = q.new_empty((b, h, s), dtype=torch.float32) if need_lse else None
    ws = _at._workspace(e.workspace[0], e, False, q, flex)
    e.backend.flex_forward(e.desc if need_lse else e.desc_no_lse, flex, _dl(_abi(q)), _dl(_abi(k)), _dl(_abi(v)),
                           _dl(_abi(out)), _dl(lse), _dl(ws), _at._current_stream(e.cuda_index), e.threads)
    return out, lse


class _FlexFunction(torch.autograd.Function):
    """flex_attention's forward and backward (FlashAttention-2's backward through the plugin,
    which recomputes the probabilities from q, k and the LSE and multiplies dS by
    score_mod_grad). The aux tensors are saved too, so that one changed in place before
    backward is an error, as for any saved tensor."""

    @staticmethod
    def forward(ctx, q, k, v, c, flex, return_lse):
        out, lse = _forward(q, k, v, c, flex, True)
        ctx.call = c
        ctx.save_for_backward(q, k, v, out, lse, *c.aux)
        ctx.set_materialize_grads(False)  # an unused output's gradient comes as None
        return (out, lse) if return_lse else out

    @staticmethod
    @once_differentiable
    def backward(ctx, dout, dlse=None):
        c = ctx.call
        if dlse is not None:
            raise NotImplementedError("attnrt.torch.flex_attention: the gradient through the returned lse is not "
                                      "supported (the plugin's backward takes d out only); use lse.detach() where "
                                      "it enters the loss")
        if dout is None:
            return None, None, None, None, None, None
        if c.score_mod and not c.score_mod_grad:
            raise NotImplementedError("attnrt.torch.flex_attention: backward through a score_mod needs "
                                      "score_mod_grad, the C++ source of d score_mod / d score (for example "
                                      "\"const float t = tanhf(score / scalar0); return 1.0f - t * t;\" for "
                                      "softcap); the forward was called without it")
        q, k, v, out, lse, *aux = ctx.saved_tensors
        e = _resolved[c.key]
        flex = c.flex(tuple(aux))
        if dout.stride(-1) != 1:
            dout = dout.contiguous()
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        ws = _at._workspace(e.workspace[1], e, True, q, flex)
        e.backend.flex_backward(e.desc, flex, _dl(_abi(dout)), _dl(_abi(q)), _dl(_abi(k)), _dl(_abi(v)),
                                _dl(_abi(out)), _dl(lse), _dl(_abi(dq)), _dl(_abi(dk)), _dl(_abi(dv)), _dl(ws),
                                _at._current_stream(e.cuda_index), e.threads)
        return dq, dk, dv, None, None, None


def _check_qkv(q, k, v, enable_gqa: bool):
    for name, t in (("query", q), ("key", k), ("value", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"flex_attention: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 4:
            raise _invalid(f"flex_attention: {name} must be [batch, heads, seqlen, head_dim] (4 dimensions), got "
                           f"shape {tuple(t.shape)}")
    if q.dtype not in _at._DTYPES:
        raise _unsupported(f"flex_attention: query dtype {q.dtype} (shape {tuple(q.shape)}) is not supported "
                           f"(float32, float16, bfloat16)")
    for name, t in (("key", k), ("value", v)):
        if t.dtype != q.dtype:
            raise _invalid(f"flex_attention: {name} dtype {t.dtype} (shape {tuple(t.shape)}) differs from query's "
                           f"{q.dtype}: query, key and value must have the same dtype")
        if t.device != q.device:
            raise _invalid(f"flex_attention: {name} is on {t.device}, query on {q.device}")
    shapes = f"query {tuple(q.shape)}, key {tuple(k.shape)}, value {tuple(v.shape)}"
    if not q.shape[0] == k.shape[0] == v.shape[0]:
        raise _invalid(f"flex_attention: query, key and value must have the same batch size, got {shapes}")
    if k.shape[1] != v.shape[1] or k.shape[2] != v.shape[2]:
        raise _invalid(f"flex_attention: key and value must have the same heads and seqlen, got {shapes}")
    if q.shape[3] != k.shape[3]:
        raise _invalid(f"flex_attention: query and key must have the same head_dim, got {shapes}")
    hq, hkv = q.shape[1], k.shape[1]
    if hq != hkv:
        if not enable_gqa:
            raise _invalid(f"flex_attention: query has {hq} heads and key/value {hkv}: pass enable_gqa=True for "
                           f"grouped-query attention ({shapes})")
        if hkv == 0 or hq % hkv != 0:
            raise _invalid(f"flex_attention: with enable_gqa, query heads ({hq}) must be a multiple of key/value "
                           f"heads ({hkv}) ({shapes})")


def _check_block_mask(bm, q: Tensor, k: Tensor):
    if not isinstance(bm, BlockMask):
        raise TypeError(f"flex_attention: block_mask must be an attnrt.torch.BlockMask (create_block_mask), got "
                        f"{type(bm).__name__}")
    sq, sk = q.shape[2], k.shape[2]
    if tuple(bm.seq_lengths) != (sq, sk):
        raise _invalid(f"flex_attention: block_mask was made for (Q_LEN, KV_LEN) {tuple(bm.seq_lengths)}, the call "
                       f"has query {tuple(q.shape)} and key {tuple(k.shape)} (seqlen {sq} and {sk})")
    qb, kb = _block_size(bm.BLOCK_SIZE)
    mq, mk = -(-sq // qb), -(-sk // kb)
    if bm.kv_num_blocks is None or bm.kv_indices is None:
        raise _invalid("flex_attention: block_mask.kv_num_blocks and kv_indices are required")
    bh = tuple(bm.kv_num_blocks.shape[:2])
    for f in _MASK_FIELDS:
        t = getattr(bm, f)
        partner = getattr(bm, f.replace("num_blocks", "indices") if "num_blocks" in f else
                          f.replace("indices", "num_blocks"))
        if t is None:
            if partner is not None:
                raise _invalid(f"flex_attention: block_mask.{f} is None but its partner is given (they come "
                               f"together)")
            continue
        if not isinstance(t, Tensor) or t.dtype != torch.int32:
            raise _invalid(f"flex_attention: block_mask.{f} must be an int32 tensor, got "
                           f"{getattr(t, 'dtype', type(t).__name__)}")
        if t.device != q.device:
            raise _invalid(f"flex_attention: block_mask.{f} (shape {tuple(t.shape)}) is on {t.device}, query on "
                           f"{q.device}")
        rows = mq if f.startswith(("kv_", "full_kv_")) else mk
        want = (*bh, rows) if "num_blocks" in f else (*bh, rows, t.shape[-1] if t.dim() == 4 else -1)
        if tuple(t.shape) != want or bh[0] not in (1, q.shape[0]) or bh[1] not in (1, q.shape[1]):
            raise _invalid(f"flex_attention: block_mask.{f} has shape {tuple(t.shape)}, expected "
                           f"{want} ([1 or batch {q.shape[0]}, 1 or heads {q.shape[1]}, "
                           f"{'query' if rows == mq else 'key'} blocks {rows}{', ...' if len(want) == 4 else ''}] "
                           f"for seqlen {sq} x {sk} in blocks of {qb} x {kb})")


def _same(a: Tensor, b: Tensor) -> bool:
    return a is b or (a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride() and
                      a.dtype == b.dtype and a.device == b.device)


def _mods_and_constants(mask_mod, aux, scalars, bm: Optional[BlockMask]):
    """The mask_mod, aux and scalars of the call: a block mask's own when the call gives no
    mask_mod. Every mod reads one list, so the call's aux / scalars must then be empty (the
    mask's are used) or begin with the mask's (a score_mod's own follow them)."""
    if bm is None or mask_mod is not None or bm.mask_mod is None:
        return mask_mod, aux, scalars
    mask_aux, mask_scalars = tuple(bm.aux), tuple(bm.scalars)
    if not aux:
        aux = mask_aux
    elif len(aux) < len(mask_aux) or not all(_same(a, b) for a, b in zip(aux, mask_aux)):
        raise _invalid(f"flex_attention: the block mask's mask_mod reads its own aux ({len(mask_aux)} tensors), and "
                       f"every mod of a call reads the same list: pass aux=() to use the mask's, or an aux that "
                       f"begins with block_mask.aux")
    if not scalars:
        scalars = mask_scalars
    elif tuple(scalars[:len(mask_scalars)]) != mask_scalars:
        raise _invalid(f"flex_attention: the block mask's mask_mod reads its own scalars {mask_scalars}, and every "
                       f"mod of a call reads the same list: pass scalars=() to use the mask's, or scalars that "
                       f"begin with block_mask.scalars")
    return bm.mask_mod, aux, scalars


def flex_attention(q: Tensor, k: Tensor, v: Tensor, *, score_mod: Optional[str] = None,
                   mask_mod: Optional[str] = None, score_mod_grad: Optional[str] = None,
                   block_mask: Optional[BlockMask] = None, aux: Sequence[Tensor] = (),
                   scalars: Sequence[float] = (), scale: Optional[float] = None, enable_gqa: bool = False,
                   return_lse: bool = False, implementation: str = "flex_attention"):
    """PyTorch's FlexAttention (torch.nn.attention.flex_attention.flex_attention; Dong et al.
    2024) through attnrt's ``flex_attention`` plugin, with the mods as C++ source text.

    Computes, for query i and key j of sequence b and query head h (positions from 0, top-left):
    ``s = score_mod(scale * q_i . k_j, b, h, i, j)``, masked (-inf) where ``!mask_mod(b, h, i, j)``
    or where the block mask lists the pair's block nowhere, ``out_i = softmax(s_i) @ v``,
    ``lse_i = logsumexp(s_i)``. A query with no visible key gives out 0 and lse -inf.

    Args:
        q: [batch, heads_q, seqlen_q, head_dim] (PyTorch flex's layout; any strides, passed to
            the plugin as views, a non-contiguous last dimension copied), float32, float16 or
            bfloat16. k: [batch, heads_kv, seqlen_k, head_dim], v: [batch, heads_kv, seqlen_k,
            head_dim_v], same dtype and device.
        score_mod, mask_mod, score_mod_grad: C++ bodies or single expressions (sdk/README.md's
            "flex_attention mods"): ``float score_mod(float score, int b, int h, int q_idx, int
            kv_idx)`` (score already scaled, natural-log units), ``bool mask_mod(int b, int h, int
            q_idx, int kv_idx)``, ``float score_mod_grad(...)`` = d score_mod / d score. None: the
            identity / every pair visible. Example: ``score_mod="scalar0 * tanhf(score /
            scalar0)"``, ``mask_mod="q_idx >= kv_idx"``.
        block_mask: a BlockMask (create_block_mask) for seqlen_q x seqlen_k: blocks it does not
            list are skipped. Its mask_mod (and its aux / scalars) is used when mask_mod is None.
        aux: tensors the mods read as aux0, aux1, ... (int32, int64 or float32, 1-4 dims, on q's
            device; at most 16); constants: no gradient flows to them.
        scalars: floats the mods read as scalar0, ... (at most 64).
        scale: softmax scale; None: 1 / sqrt(head_dim).
        enable_gqa: allow heads_q a multiple of heads_kv (grouped-query attention; h is the
            query head).
        return_lse: also return lse.
        implementation: the attnrt plugin (name, alias or path); the CPU and CUDA plugins are
            both "flex_attention".

    Returns:
        out [batch, heads_q, seqlen_q, head_dim_v] in q's dtype (contiguous), and with
        return_lse, lse [batch, heads_q, seqlen_q] float32 in natural log (as PyTorch returns it).

    Autograd: differentiable in q, k and v (the plugin's backward). With a score_mod, backward
    needs score_mod_grad: without it the forward runs and backward raises NotImplementedError
    (as PyTorch does for an op without a derivative), so no gradient is ever silently wrong. The
    gradient through the returned lse is not supported (NotImplementedError at backward), nor a
    second derivative. Runs eagerly (no custom op: not traced by torch.compile or torch.func).

    Raises:
        attnrt.InvalidArgumentError (a ValueError) naming the tensor or argument and its shape
        (mismatched shapes, dtypes or devices, a block mask of another size);
        attnrt.UnsupportedError (a NotImplementedError) for an unsupported dtype, or when no
        plugin can run the call, with each plugin's reason: a mod that does not compile is
        refused with the compiler's messages (``mask_mod:1:18: error: ...``); TypeError for a
        mod that is not a str (a Python callable).
    """
    _check_qkv(q, k, v, enable_gqa)
    score_mod = _check_mod("score_mod", score_mod)
    mask_mod = _check_mod("mask_mod", mask_mod)
    score_mod_grad = _check_mod("score_mod_grad", score_mod_grad)
    if block_mask is not None:
        _check_block_mask(block_mask, q, k)
    mask_mod, aux, scalars = _mods_and_constants(mask_mod, tuple(aux), tuple(scalars), block_mask)
    needs_grad = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)
    aux = _check_aux(aux, q.device, torch.is_grad_enabled())
    scalars = _check_scalars(scalars)
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    scale = float(scale)
    q, k, v = _at._unit_stride(q, k, v)

    mask_key = None
    if block_mask is not None:
        mask_key = (tuple(block_mask.BLOCK_SIZE), tuple(getattr(block_mask, f) is not None for f in _MASK_FIELDS))
    key = ("flex", q.device, q.dtype, q.shape, k.shape, v.shape, implementation, scale, score_mod, mask_mod,
           score_mod_grad, tuple((a.dtype, a.dim()) for a in aux), len(scalars), mask_key, _at.num_threads)
    c = _Call(key, score_mod, mask_mod, score_mod_grad, aux, scalars, block_mask)
    flex = c.flex()

    def fill(d):
        b, hq, sq, hd = (int(x) for x in q.shape)
        d.dtype = _at._DTYPES[q.dtype]
        d.batch, d.heads_q, d.seqlen_q, d.head_dim = b, hq, sq, hd
        d.heads_kv, d.seqlen_k = int(k.shape[1]), int(k.shape[2])
        d.head_dim_v = int(v.shape[3])
        d.softmax_scale = scale

    _resolve(key, q.device, fill, flex, implementation, q.shape[0] * q.shape[1] * q.shape[2] * k.shape[2])
    if needs_grad:
        return _FlexFunction.apply(q, k, v, c, flex, bool(return_lse))
    out, lse = _forward(q, k, v, c, flex, bool(return_lse))
    return (out, lse) if return_lse else out


def create_block_mask(mask_mod: Optional[str], B: Optional[int], H: Optional[int], Q_LEN: int, KV_LEN: int,
                      device: Union[str, torch.device] = "cuda", BLOCK_SIZE: Union[int, tuple] = 128,
                      aux: Sequence[Tensor] = (), scalars: Sequence[float] = (),
                      implementation: str = "flex_attention") -> BlockMask:
    """PyTorch's create_block_mask (torch.nn.attention.flex_attention.create_block_mask) with the
    mask_mod as C++ source: evaluates mask_mod on every (q_idx, kv_idx) pair of every
    BLOCK_SIZE block, on `device`, through the plugin's create_block_mask (plugin ABI 1.4), and
    returns the BlockMask: a block with no visible pair is skipped, one with only visible pairs
    is full (mask_mod not evaluated there by flex_attention), any other partial.

    Args:
        mask_mod: ``bool mask_mod(int b, int h, int q_idx, int kv_idx)`` body or expression (as
            flex_attention's); None: every block full.
        B, H: batch and heads the mask is made for; None: 1, broadcast over every batch / head
            (mask_mod evaluated at b = 0 / h = 0), as in PyTorch.
        Q_LEN, KV_LEN: query and key lengths.
        device: where the mask is built and lives ("cuda" by default, as PyTorch's).
        BLOCK_SIZE: an int, or (Q_BLOCK_SIZE, KV_BLOCK_SIZE); 128 by default.
        aux, scalars: what mask_mod reads (aux0.., scalar0..), kept on the mask.
        implementation: the attnrt plugin that builds it.

    Returns:
        BlockMask with every field (kv_*, full_kv_*, q_*, full_q_*: int32 [B or 1, H or 1, ...]).

    Raises:
        attnrt.InvalidArgumentError (a ValueError) for a bad size or argument, or a mask_mod that
        does not compile (the compiler's messages); attnrt.UnsupportedError when no plugin on
        `device` builds block masks.
    """
    mask_mod = _check_mod("mask_mod", mask_mod)
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:  # "cuda": the current device, as tensors made there say
        device = torch.device("cuda", torch.cuda.current_device())
    for name, n, can_be_none in (("B", B, True), ("H", H, True), ("Q_LEN", Q_LEN, False), ("KV_LEN", KV_LEN, False)):
        if n is None and can_be_none:
            continue
        if not isinstance(n, int) or isinstance(n, bool) or n < (1 if can_be_none else 0):
            raise _invalid(f"create_block_mask: {name} must be a {'positive' if can_be_none else 'non-negative'} "
                           f"int{' or None' if can_be_none else ''}, got {n!r}")
    qb, kb = _block_size(BLOCK_SIZE)
    aux = _check_aux(aux, device, False)
    scalars = _check_scalars(scalars)
    bm, hm = B or 1, H or 1
    flex = attnrt.Flex(None, mask_mod, None, None, [_dl(a) for a in aux], list(scalars), qb, kb)
    cuda = device.type == "cuda"
    key = ("block_mask", device, bm, hm, Q_LEN, KV_LEN, mask_mod, tuple((a.dtype, a.dim()) for a in aux),
           len(scalars), (qb, kb), implementation, _at.num_threads)

    def fill(d):
        # A descriptor the plugins accept for any mask: what create_block_mask reads is the
        # batch, heads and lengths (CUDA's flex_attention compiles head_dim 64 and 128, half types).
        d.dtype = attnrt.DType.BF16 if cuda else attnrt.DType.FP32
        d.head_dim = d.head_dim_v = 128 if cuda else 64
        d.batch, d.heads_q, d.heads_kv = bm, hm, hm
        d.seqlen_q, d.seqlen_k = Q_LEN, KV_LEN
        d.softmax_scale = 1.0

    e = _resolve(key, device, fill, flex, implementation, bm * hm * Q_LEN * KV_LEN)
    mq, mk = -(-Q_LEN // qb), -(-KV_LEN // kb)
    t = {}
    for f in _MASK_FIELDS:
        rows, cols = (mq, mk) if f.endswith("kv_num_blocks") or f.endswith("kv_indices") else (mk, mq)
        shape = (bm, hm, rows) if f.endswith("num_blocks") else (bm, hm, rows, cols)
        t[f] = torch.empty(shape, dtype=torch.int32, device=device)
    e.backend.create_block_mask(e.desc, flex, *(_dl(t[f]) for f in _MASK_FIELDS), _at._current_stream(e.cuda_index),
                                e.threads)
    return BlockMask(**t, BLOCK_SIZE=(qb, kb), mask_mod=mask_mod, seq_lengths=(Q_LEN, KV_LEN), aux=aux,
                     scalars=scalars)
