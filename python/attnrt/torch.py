"""attnrt's plugins as PyTorch operators: ``torch.ops.attnrt.forward`` / ``backward``.

Both are ``torch.library.custom_op`` with fake (meta) implementations, and forward has an
autograd formula (``register_autograd``) that saves the log-sum-exp for backward, so the ops
work under autograd, ``torch.compile(fullgraph=True)`` and ``torch.library.opcheck``.
Shapes are the ABI's: q [batch, seqlen_q, heads_q, head_dim], k and v
[batch, seqlen_k, heads_kv, head_dim(_v)], out [batch, seqlen_q, heads_q, head_dim_v],
lse [batch, heads_q, seqlen_q] float32, sinks [heads_q] float32 (gpt-oss).

``attention`` runs the same implementation without the operator dispatcher where nothing needs
to see the op (eager mode, plain tensors: ``_direct``), as its host time per call is most of a
small call's; under ``torch.compile``, dispatch modes or tensor subclasses it calls the ops.

Scratch memory comes from PyTorch's allocator (``torch.empty``) and the call runs on the
current stream, where PyTorch has ordered the tensors' producers (as for any of its own ops, so
tensors go over by ``torch.utils.dlpack.to_dlpack``, without ``__dlpack__``'s stream handshake);
a backend is resolved once per call shape and kept, with its workspace sizes. Under
``torch.autocast``, ``attention`` casts q/k/v to the autocast dtype, as PyTorch's own
scaled_dot_product_attention is (it is on autocast's lower-precision list).

``context_parallel_attention`` (with ``context_parallel_shard`` / ``_unshard``) runs attention
over a sequence split across ranks, ring attention through libattnrt's ring
(attnrt/_torch_context_parallel.py; docs/distributed.md).

``flex_attention``, ``create_block_mask`` and ``BlockMask`` are PyTorch's FlexAttention with the
score_mod / mask_mod as C++ source text, through the ``flex_attention`` plugin, in PyTorch
flex's [batch, heads, seqlen, head_dim] layout (attnrt/_torch_flex.py).
"""
from __future__ import annotations

import copy
import math
import threading
from typing import Optional

import torch
from torch import Tensor
from torch.utils.dlpack import to_dlpack

import attnrt

__all__ = ["BlockMask", "attention", "backend_name", "context_parallel_attention", "context_parallel_shard",
           "context_parallel_unshard", "create_block_mask", "flex_attention", "num_threads"]

# CPU calls: threads per call (0: as many as torch.get_num_threads()), and the work (q rows times
# k rows times heads) under which a call runs on one thread: forking a team for a tiny call costs
# more than the call, most of all next to torch's own OpenMP pool (another OpenMP runtime).
num_threads = 0
_SERIAL_WORK = 1 << 16

_DTYPES = {torch.float32: attnrt.DType.FP32, torch.float16: attnrt.DType.FP16, torch.bfloat16: attnrt.DType.BF16}
_lock = threading.Lock()
_runtimes: dict = {}
_backends: dict = {}


def _device_key(device: torch.device) -> str:
    if device.type == "cpu":
        return "cpu"
    if device.type == "cuda":
        return f"cuda:{device.index if device.index is not None else torch.cuda.current_device()}"
    raise attnrt.UnsupportedError(f"attnrt.torch: tensors on {device} are not supported (cpu or cuda)")


def _runtime(key: str) -> attnrt.Runtime:
    rt = _runtimes.get(key)
    if rt is None:
        rt = attnrt.Runtime(None, [f"attnrt.device={key}"])
        _runtimes[key] = rt
    return rt


class _Shape:
    """What a call shape resolved to, kept per shape: the backend, its descriptor with the LSE
    (for calls that save or return it) and without (inference), the CPU threads, the workspace
    bytes per direction (None: no backward) and what the per-call path would otherwise derive
    again: the output's shape, the LSE's, and the CUDA device index (-1 on the CPU)."""

    __slots__ = ("backend", "desc", "desc_no_lse", "threads", "workspace", "out_shape", "lse_shape", "cuda_index")


def _resolve(q, k, v, has_sinks, implementation, softmax_scale, causal, window_left, window_right, softcap) -> _Shape:
    """The backend and resolved descriptors for this call shape (cached: resolution, and its
    logging, happen once per shape, not per call)."""
    key = (q.device, q.dtype, q.shape, k.shape, v.shape, implementation, has_sinks, softmax_scale, causal, window_left,
           window_right, softcap, num_threads)  # torch.Size is a tuple: hashed as one, no copy
    hit = _backends.get(key)
    if hit is not None:
        return hit
    if q.dtype not in _DTYPES:
        raise attnrt.UnsupportedError(f"attnrt.torch: q dtype {q.dtype} is not supported (float32, float16, bfloat16)")
    dev = _device_key(q.device)
    with _lock:
        hit = _backends.get(key)
        if hit is not None:
            return hit
        d = attnrt.Desc()
        d.dtype = _DTYPES[q.dtype]
        d.batch, d.seqlen_q, d.heads_q, d.head_dim = (int(x) for x in q.shape)
        d.seqlen_k, d.heads_kv = int(k.shape[1]), int(k.shape[2])
        d.head_dim_v = int(v.shape[3])
        d.softmax_scale = softmax_scale
        d.causal = int(causal)
        d.window_left = window_left
        d.window_right = window_right
        d.softcap = softcap
        d.has_sinks = int(has_sinks)
        d.return_lse = 1
        e = _Shape()
        # Resolved with the LSE, which backward needs: an inference call runs the same backend
        # without it (one allocation and one kernel store fewer).
        _bind(e, _runtime(dev).resolve(d, implementation), d, q.device,
              d.batch * d.heads_q * d.seqlen_q * d.seqlen_k)
        e.out_shape = (d.batch, d.seqlen_q, d.heads_q, d.head_dim_v)
        e.lse_shape = (d.batch, d.heads_q, d.seqlen_q)
        _backends[key] = e
        return e


def _bind(e, backend, d, device: torch.device, work: int, flex=None) -> None:
    """Fills e (a _Shape, or flex_attention's entry) with what a call shape resolved to: the
    backend, the resolved descriptor d (with the LSE) and a copy without it, the CPU threads for
    `work` score pairs, the workspace bytes per direction (asked once; the forward's for either
    descriptor; backward None where the plugin has none) and the CUDA device index (-1 on the
    CPU). flex: the attnrt.Flex block the calls carry, if any."""
    e.backend = backend
    e.desc = d
    e.desc_no_lse = copy.copy(d)  # with the device resolution bound
    e.desc_no_lse.return_lse = 0
    e.threads = 0
    if device.type == "cpu":
        e.threads = 1 if work < _SERIAL_WORK else (num_threads or torch.get_num_threads())
    e.workspace = [max(backend.workspace_size(d, False, e.threads, flex),
                       backend.workspace_size(e.desc_no_lse, False, e.threads, flex)), None]
    try:
        e.workspace[1] = backend.workspace_size(d, True, e.threads, flex)
    except attnrt.UnsupportedError:
        pass
    e.cuda_index = -1
    if device.type == "cuda":
        e.cuda_index = device.index if device.index is not None else torch.cuda.current_device()


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _current_stream(index: int) -> int:
    """The current CUDA stream of device `index` as an integer (0 on the CPU, index -1)."""
    if index < 0:
        return 0
    if _raw_stream is not None:  # what Triton's launcher uses: no Stream object per call
        return _raw_stream(index)
    return torch.cuda.current_stream(index).cuda_stream


def _stream(t: Tensor) -> int:
    """The current stream of t's device (0 on the CPU)."""
    return _current_stream(t.device.index if t.is_cuda else -1)


def _workspace(n: Optional[int], e: _Shape, backward: bool, like: Tensor, flex=None) -> Optional[Tensor]:
    """The call's scratch memory from PyTorch's allocator; None where the call needs none."""
    if n is None:  # not asked at resolution (no backward there): ask now, for its error
        n = e.backend.workspace_size(e.desc, backward, e.threads, flex)
    if n == 0:
        return None
    # 255 bytes more than asked: the binding uses the block's first 256-byte aligned address.
    return torch.empty(n + 255, dtype=torch.uint8, device=like.device)


_functorch = torch._C._functorch


def _unit_stride(*tensors: Tensor) -> tuple:
    """The tensors, each copied only where its last dimension is not contiguous (the ABI's rows
    take any stride, their elements none)."""
    return tuple(t if t.stride(-1) == 1 else t.contiguous() for t in tensors)


def _plain(t: Tensor) -> Tensor:
    """t without torch.func's grad-tracking wrappers (the memory is the wrapped tensor's), for
    _FuncAttention under grad and vjp; a vmap batch in the backward is refused, not flattened (a
    forward under vmap alone runs through the op and PyTorch's per-sample fallback)."""
    while _functorch.is_functorch_wrapped_tensor(t):
        if not _functorch.is_gradtrackingtensor(t):
            raise NotImplementedError("attnrt.torch.attention's backward has no vmap rule (jacrev, vmap over grad): "
                                      "take the gradients of the batch as a whole")
        t = _functorch.get_unwrapped(t)
    return t


def _dl(t: Optional[Tensor]):
    # The call runs on the current stream, where PyTorch ordered t's producers. to_dlpack refuses
    # a tensor that requires grad; detach only those (a detach per tensor is 0.3 us).
    if t is None:
        return None
    return to_dlpack(t.detach() if t.requires_grad else t)


def _dl_unwrapped(t: Optional[Tensor]):
    """_dl inside a torch.func transform, whose tensors (ours included) come wrapped."""
    return None if t is None else _dl(_plain(t))


def _forward_impl(q: Tensor, k: Tensor, v: Tensor, sinks: Optional[Tensor], implementation: str,
                  softmax_scale: float, causal: bool, window_left: int, window_right: int,
                  softcap: float, need_lse: bool = True) -> tuple[Tensor, Optional[Tensor]]:
    """out and lse (None when need_lse is false: an inference call, whose LSE nobody reads)."""
    e = _resolve(q, k, v, sinks is not None, implementation, softmax_scale, causal, window_left, window_right, softcap)
    out = q.new_empty(e.out_shape)
    lse = q.new_empty(e.lse_shape, dtype=torch.float32) if need_lse else None
    ws = _workspace(e.workspace[0], e, False, q)
    dl = _dl_unwrapped if _functorch_active() else _dl
    e.backend.forward_with_workspace(e.desc if need_lse else e.desc_no_lse, dl(q), dl(k), dl(v), dl(out), dl(lse),
                                     dl(sinks), dl(ws), _current_stream(e.cuda_index), e.threads)
    return out, lse


@torch.library.custom_op("attnrt::forward", mutates_args=(), device_types=("cpu", "cuda"))
def _forward(q: Tensor, k: Tensor, v: Tensor, sinks: Optional[Tensor], implementation: str, softmax_scale: float,
             causal: bool, window_left: int, window_right: int, softcap: float) -> tuple[Tensor, Tensor]:
    return _forward_impl(q, k, v, sinks, implementation, softmax_scale, causal, window_left, window_right, softcap)


@_forward.register_fake
def _(q, k, v, sinks, implementation, softmax_scale, causal, window_left, window_right, softcap):
    b, sq, hq, _ = q.shape
    return q.new_empty((b, sq, hq, v.shape[3])), q.new_empty((b, hq, sq), dtype=torch.float32)


def _backward_impl(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, sinks: Optional[Tensor],
                   implementation: str, softmax_scale: float, causal: bool, window_left: int, window_right: int,
                   softcap: float) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """dq, dk, dv and dsinks ([heads_q] float32; empty without sinks)."""
    e = _resolve(q, k, v, sinks is not None, implementation, softmax_scale, causal, window_left, window_right, softcap)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    dsinks = q.new_empty((q.shape[2] if sinks is not None else 0,), dtype=torch.float32)
    ws = _workspace(e.workspace[1], e, True, q)
    dl = _dl_unwrapped if _functorch_active() else _dl
    e.backend.backward_with_workspace(e.desc, dl(dout), dl(q), dl(k), dl(v), dl(out), dl(lse), dl(dq), dl(dk), dl(dv),
                                      dl(dsinks) if sinks is not None else None, dl(sinks), dl(ws),
                                      _current_stream(e.cuda_index), e.threads)
    return dq, dk, dv, dsinks


@torch.library.custom_op("attnrt::backward", mutates_args=(), device_types=("cpu", "cuda"))
def _backward(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, sinks: Optional[Tensor],
              implementation: str, softmax_scale: float, causal: bool, window_left: int, window_right: int,
              softcap: float) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """dq, dk, dv and dsinks ([heads_q] float32; empty without sinks)."""
    return _backward_impl(dout, q, k, v, out, lse, sinks, implementation, softmax_scale, causal, window_left,
                          window_right, softcap)


@_backward.register_fake
def _(dout, q, k, v, out, lse, sinks, implementation, softmax_scale, causal, window_left, window_right, softcap):
    dsinks = q.new_empty((q.shape[2] if sinks is not None else 0,), dtype=torch.float32)
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v), dsinks


def _setup_context(ctx, inputs, output):
    q, k, v, sinks, *params = inputs
    out, lse = output
    ctx.params = params
    ctx.has_sinks = sinks is not None
    ctx.save_for_backward(q, k, v, out, lse, sinks)
    ctx.mark_non_differentiable(lse)


def _grads(ctx, dout, backward):
    """The inputs' gradients from what _setup_context saved, through `backward` (the op, or its
    implementation): dq, dk, dv, dsinks (None without sinks), and None for each parameter."""
    q, k, v, out, lse, sinks = ctx.saved_tensors
    dq, dk, dv, dsinks = backward(dout.contiguous(), q, k, v, out, lse, sinks, *ctx.params)
    return (dq, dk, dv, dsinks if ctx.has_sinks else None) + (None,) * len(ctx.params)


def _grad(ctx, dout, _dlse):
    return _grads(ctx, dout, torch.ops.attnrt.backward)


_forward.register_autograd(_grad, setup_context=_setup_context)


class _Attention(torch.autograd.Function):
    """The same forward and backward as the ops' autograd formula, without the operator
    dispatcher: what `attention` runs in eager mode (see _direct). The forward takes ctx: the
    setup_context form (_FuncAttention) costs about 16 us more per call. Without return_lse it
    returns out alone (the LSE still saved for backward): one output fewer for autograd to wrap;
    the parameters come as one tuple (apply's cost grows with its argument count)."""

    @staticmethod
    def forward(ctx, q, k, v, sinks, return_lse, params):
        out, lse = _forward_impl(q, k, v, sinks, *params)
        ctx.params = params
        ctx.has_sinks = sinks is not None
        ctx.save_for_backward(q, k, v, out, lse, sinks)
        if not return_lse:
            return out
        ctx.mark_non_differentiable(lse)
        return out, lse

    @staticmethod
    def backward(ctx, dout, *_dlse):
        return _grads(ctx, dout, _backward_impl)[:4] + (None, None)  # none for return_lse and params


class _FuncAttention(torch.autograd.Function):
    """_Attention in the form torch.func's grad and vjp accept (a separate setup_context; they
    refuse the custom op's generated autograd.Function)."""

    @staticmethod
    def forward(q, k, v, sinks, *params):
        return _forward_impl(q, k, v, sinks, *params)

    setup_context = staticmethod(_setup_context)

    @staticmethod
    def backward(ctx, dout, _dlse):
        return _grads(ctx, dout, _plain_backward)


def _plain_backward(*args):
    """_backward_impl on tensors that torch.func may have wrapped (saved under grad or vjp, dout
    from its vjp function, also called after the transform has returned)."""
    return _backward_impl(*(_plain(a) if isinstance(a, Tensor) else a for a in args))


_dispatch_modes = getattr(torch._C, "_len_torch_dispatch_stack", None)
_functorch_active = getattr(torch._C, "_are_functorch_transforms_active", lambda: True)
_any_autocast = getattr(torch._C, "_is_any_autocast_enabled", lambda: True)


def _op_unobserved(tensors) -> bool:
    """Whether nothing but attnrt needs to see the op: not under torch.compile (which traces the
    op), a TorchDispatchMode (FakeTensorMode, FlopCounterMode, ...) or a torch function mode, and
    plain tensors, not subclasses (DTensor, ...)."""
    if torch.compiler.is_compiling() or _dispatch_modes is None or _dispatch_modes() > 0:
        return False
    if torch._C._is_torch_function_mode_enabled():
        return False
    q, k, v, sinks = tensors
    if type(q) is not Tensor or type(k) is not Tensor or type(v) is not Tensor:
        return False
    return sinks is None or type(sinks) is Tensor


def _direct(tensors) -> bool:
    """Whether `attention` may skip the custom op: the operator dispatcher's Python path costs
    about 7 us a call on the development machine's CPU, a third of the whole call. When nothing
    else sees the op (_op_unobserved), outside torch.func transforms, on cpu/cuda."""
    return _op_unobserved(tensors) and not _functorch_active() and (tensors[0].is_cpu or tensors[0].is_cuda)


def _under_grad_transform(tensors) -> bool:
    """Whether a torch.func transform is active with nothing else that sees the op: grad and vjp
    then run _FuncAttention. A forward under vmap alone still goes to the op (PyTorch's
    per-sample fallback)."""
    return _functorch_active() and _op_unobserved(tensors)


def attention(q: Tensor, k: Tensor, v: Tensor, *, implementation: str = "sdpa", softmax_scale: Optional[float] = None,
              causal: bool = False, window_left: int = -1, window_right: int = -1, softcap: float = 0.0,
              sinks: Optional[Tensor] = None, return_lse: bool = False):
    """Attention through the attnrt plugin `implementation` (a name, alias, path or auto).

    q [batch, seqlen_q, heads_q, head_dim], k/v [batch, seqlen_k, heads_kv, head_dim(_v)] (last
    dimension contiguous; other strides free); returns out [batch, seqlen_q, heads_q, head_dim_v]
    and, with return_lse, lse [batch, heads_q, seqlen_q] float32. window_left/right: keys visible
    left/right of the (bottom-right aligned) diagonal, -1 unlimited; sinks [heads_q] float32 (another
    floating dtype is converted to float32, its gradient comes back in that dtype).
    An argument the plugin cannot honour raises attnrt.UnsupportedError with the reason."""
    if softmax_scale is None:
        softmax_scale = 1.0 / math.sqrt(q.shape[-1])
    if _any_autocast():
        device = q.device.type
        if device in ("cuda", "cpu") and torch.is_autocast_enabled(device):
            # As autocast treats torch's own SDPA: the inputs in the autocast dtype (a model's
            # RoPE leaves q and k in float32 while v comes out of a linear layer in bfloat16).
            low = torch.get_autocast_dtype(device)
            q, k, v = (t.to(low) if t.dtype != low and t.is_floating_point() else t for t in (q, k, v))
    q, k, v = _unit_stride(q, k, v)
    if sinks is not None and sinks.dtype != torch.float32:
        # A model cast to bf16/fp16 casts gpt-oss's sinks parameter too; the ABI takes float32.
        # The conversion is exact, and autograd casts dsinks back to the parameter's dtype.
        sinks = sinks.float()
    params = (implementation, float(softmax_scale), bool(causal), int(window_left), int(window_right), float(softcap))
    needs_grad = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad or
                                              (sinks is not None and sinks.requires_grad))
    if _direct((q, k, v, sinks)):
        if needs_grad:
            return _Attention.apply(q, k, v, sinks, return_lse, params)
        out, lse = _forward_impl(q, k, v, sinks, *params, need_lse=return_lse)
    elif needs_grad and _under_grad_transform((q, k, v, sinks)):
        out, lse = _FuncAttention.apply(q, k, v, sinks, *params)
    else:
        out, lse = torch.ops.attnrt.forward(q, k, v, sinks, *params)
    return (out, lse) if return_lse else out


def backend_name(q: Tensor, k: Tensor, v: Tensor, implementation: str = "sdpa", **kwargs) -> str:
    """The plugin that `attention` with these arguments runs (after fallback, if any)."""
    scale = kwargs.get("softmax_scale") or 1.0 / math.sqrt(q.shape[-1])
    e = _resolve(q, k, v, kwargs.get("sinks") is not None, implementation, float(scale),
                 bool(kwargs.get("causal", False)), int(kwargs.get("window_left", -1)),
                 int(kwargs.get("window_right", -1)), float(kwargs.get("softcap", 0.0)))
    return e.backend.name


# Context parallelism (after the helpers above, which it uses).
from ._torch_context_parallel import (  # noqa: E402
    context_parallel_attention,
    context_parallel_shard,
    context_parallel_unshard,
)
from ._torch_flex import BlockMask, create_block_mask, flex_attention  # noqa: E402
