"""attnrt from Python: resolve an attention implementation and call it on DLPack tensors.

The core (this module) depends on no framework: tensors are any object with ``__dlpack__``
(PyTorch, JAX, CuPy, NumPy >= 1.22 on the CPU). Layout and dtypes are the plugin ABI's
(sdk/include/attnrt/plugin_abi.h): q [batch, seqlen_q, heads_q, head_dim], k/v
[batch, seqlen_k, heads_kv, head_dim(_v)], out like q, lse [batch, heads_q, seqlen_q] float32;
the last dimension contiguous. ``attnrt.torch`` wraps this as PyTorch custom ops.

Context parallelism (ring attention over a sequence split across ranks; docs/distributed.md):
a :class:`Ring` made of a backend resolved for the global descriptor and a :class:`Transport`
(this rank's end of an :class:`InProcessGroup`, ranks as threads, or of an NCCL communicator,
``Transport.nccl`` from the 128 bytes of :func:`nccl_unique_id`) runs forward and backward on
this rank's shard. ``attnrt.torch.context_parallel_attention`` is the PyTorch entry point.

flex_attention (PyTorch's FlexAttention, plugin ABI 1.3/1.4): a :class:`Flex` block holds the
mods' C++ source, aux tensors, scalars and block mask; ``Runtime.resolve(desc, value, flex=f)``
compiles the mods, ``Backend.flex_forward`` / ``flex_backward`` / ``create_block_mask`` carry it.
``attnrt.torch.flex_attention`` is the PyTorch entry point.

What the library says (which backend each resolution chose, every fallback reason) goes to the
standard :mod:`logging` module, logger ``"attnrt"``, which like any library's prints nothing
until the application configures logging (``logging.basicConfig(level=logging.INFO)``).

Errors are :class:`Error` subclasses named after the host API's statuses
(:class:`InvalidArgumentError` is a ValueError, :class:`UnsupportedError` a NotImplementedError,
:class:`OutOfMemoryError` a MemoryError); ``err.status`` holds the attnrt_status value.
"""
import atexit
import logging

from . import _attnrt
from ._attnrt import (  # noqa: F401
    ABI_VERSION,
    Backend,
    Desc,
    DeviceError,
    DType,
    Error,
    Flex,
    InProcessGroup,
    InternalError,
    InvalidArgumentError,
    OutOfMemoryError,
    Ring,
    RingLayout,
    Runtime,
    Transport,
    UnsupportedError,
    nccl_unique_id,
    status_string,
)

__all__ = [
    "ABI_VERSION",
    "Backend",
    "Desc",
    "DeviceError",
    "DType",
    "Error",
    "Flex",
    "InProcessGroup",
    "InternalError",
    "InvalidArgumentError",
    "OutOfMemoryError",
    "Ring",
    "RingLayout",
    "Runtime",
    "Transport",
    "UnsupportedError",
    "dlpack",
    "nccl_unique_id",
    "status_string",
]

_logger = logging.getLogger("attnrt")
_logger.addHandler(logging.NullHandler())
_LOG_LEVELS = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR)


def _log(level: int, message: str) -> None:
    _logger.log(_LOG_LEVELS[min(level, 3)], message)


_attnrt._set_log_callback(_log)
# Before the interpreter goes: a message delivered after that would call into a dead Python.
atexit.register(_attnrt._set_log_callback, None)

_DL_CPU = 1
_DL_CUDA = 2


def dlpack(tensor, stream=None):
    """The DLPack capsule of ``tensor`` for a call on ``stream`` (an integer handle: a
    cudaStream_t; None or 0 on the CPU). The producer orders the tensor's pending work before
    ``stream`` (the array API's rule), so attnrt never assumes a default stream."""
    device_type, _ = tensor.__dlpack_device__()
    if device_type == _DL_CPU or stream is None:
        return tensor.__dlpack__()
    if device_type == _DL_CUDA and stream == 0:
        # Handle 0 is CUDA's legacy default stream (what torch.cuda.current_stream().cuda_stream
        # gives on the default stream), which DLPack spells 1: producers refuse 0 as ambiguous.
        stream = 1
    return tensor.__dlpack__(stream=stream)
