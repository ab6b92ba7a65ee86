"""``from_dlpack``: an spmd Array from any object with ``__dlpack__`` (a NumPy array, a
PyTorch tensor, another library's array), as the Array API standard's interchange asks.

The data is copied into spmd's own read-only blocks: another library's buffer may change
after the import, and an spmd Array never does. An spmd Array (or traced value) given back
is itself, as ``spmd.numpy.asarray`` returns it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.methods import ArrayMethods
from spmd.errors import SpmdBufferError, SpmdTypeError
from spmd.runtime.dlpack import DLPACK_CPU

__all__ = ["from_dlpack"]

_NUMPY_TAKES_DEVICE = np.lib.NumpyVersion(np.__version__) >= "2.1.0"  # np.from_dlpack(x, device=)
_HOST_DEVICE_TYPES = (DLPACK_CPU, 3)  # kDLCPU, kDLCUDAHost (pinned host memory)


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Any:
    """``numpy.from_dlpack``: ``x`` (anything with ``__dlpack__``) as an spmd Array, on
    ``device`` (a Device or Sharding; None: an spmd Array stays where it is, other data goes
    to the default device). Example: ``spmd.numpy.from_dlpack(torch.arange(3.))``.

    ``copy=False`` is refused (SpmdBufferError, a BufferError) where a copy is needed: for
    any object other than an spmd Array, and for an spmd Array moved to another device."""
    from spmd.numpy.creation import asarray
    from spmd.runtime.put import device_put

    if isinstance(x, ArrayMethods):
        if device is None or _already_on(x, device):
            return x  # immutable: it is its own copy
        if copy is False:
            raise SpmdBufferError(
                f"spmd.numpy.from_dlpack: copy=False, but moving x ({x.dtype}{list(x.shape)}, "
                f"on {x.device}) to device={device} copies it; pass copy=None or leave "
                f"device=None."
            )
        return device_put(x, device)
    if not hasattr(x, "__dlpack__"):
        raise SpmdTypeError(
            f"spmd.numpy.from_dlpack: x is a {type(x).__name__}, which has no __dlpack__ "
            f"method; pass a DLPack producer (a NumPy array, a PyTorch tensor...), or use "
            f"spmd.numpy.asarray for other data."
        )
    if copy is False:
        raise SpmdBufferError(
            f"spmd.numpy.from_dlpack: copy=False, but x (a {type(x).__name__}) can only be "
            f"imported by copying it: spmd Arrays hold read-only blocks of their own, which "
            f"x's library could otherwise change. Pass copy=None or copy=True."
        )
    return asarray(_host_view(x), copy=True, device=device)


def _host_view(x: Any) -> np.ndarray:
    """``x``'s memory as a NumPy array: shared where it is host memory, else copied there by
    its producer (``dl_device``, which only DLPack 1.0 producers and NumPy 2.1+ know)."""
    device_type = x.__dlpack_device__()[0] if hasattr(x, "__dlpack_device__") else DLPACK_CPU
    if device_type in _HOST_DEVICE_TYPES or not _NUMPY_TAKES_DEVICE:
        return np.from_dlpack(x)
    return np.from_dlpack(x, device="cpu")


def _already_on(x: Any, device: Any) -> bool:
    """Whether ``x`` is already where ``device`` (a Device or a Sharding) would put it."""
    from spmd.runtime.array import Array

    if not isinstance(x, Array):
        return False  # a traced value: device_put says where it goes
    return device == x.device or device == x.sharding
