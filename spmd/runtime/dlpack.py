"""DLPack export of an Array (the Array API's ``__dlpack__`` and ``__dlpack_device__``).

An Array on one device, or fully replicated, exports that device's block without a copy:
through NumPy's own producer where the device is host memory (NumPy's view of a PyTorch CPU
or array_api_strict block), through the backend library's (CuPy, PyTorch CUDA) on an
accelerator. A sharded Array has no one block: it is gathered to the host first (a copy, so
``copy=False`` refuses it).

spmd's NumPy blocks are read-only. DLPack 1.0 capsules (a consumer's ``max_version`` of
(1, 0) or later, on NumPy 2.1+) carry that flag; an older consumer's capsule cannot say it,
so such a consumer is handed a writeable copy, and ``copy=False`` refuses instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.errors import SpmdBufferError
from spmd.runtime.buffers import host_view

DLPACK_CPU = 1  # DLDeviceType kDLCPU
_VERSIONED_NUMPY = np.lib.NumpyVersion(np.__version__) >= "2.1.0"  # __dlpack__(max_version=)


def host_block(array: Any) -> tuple[Any, bool]:
    """The buffer ``array`` exports and whether it is a gathered copy: its one device's (or,
    fully replicated, the first device's) block, as NumPy sees it where the device is host
    memory; else the gathered host value."""
    buffers = array._buffers
    if len(buffers) == 1 or (array.is_fully_replicated and buffers):
        device, block = next(iter(buffers.items()))
        if device.platform != "cpu":
            return block, False
        view = np.asarray(host_view(device, block)).view()
        view.flags.writeable = False  # a PyTorch block is writeable memory; spmd's is not
        return view, False
    return array._value(), True


def dlpack_device(array: Any) -> tuple[int, int]:
    """``(device type, device id)`` of the block ``export`` would hand out."""
    block, _ = host_block(array)
    if isinstance(block, np.ndarray):
        return (DLPACK_CPU, 0)
    return block.__dlpack_device__()


def export(
    array: Any,
    *,
    stream: Any = None,
    max_version: tuple[int, int] | None = None,
    dl_device: tuple[int, int] | None = None,
    copy: bool | None = None,
) -> Any:
    """``array.__dlpack__(...)``: a DLPack capsule of its block (see the module docstring)."""
    block, gathered = host_block(array)
    if not isinstance(block, np.ndarray):  # an accelerator's: its library's
        asked = {"stream": stream, "max_version": max_version, "dl_device": dl_device}
        asked["copy"] = copy
        return block.__dlpack__(**{k: v for k, v in asked.items() if v is not None})
    if stream is not None:
        raise SpmdBufferError(
            f"__dlpack__: stream={stream!r}, but this Array is in host memory (kDLCPU), "
            f"which has no streams; leave stream=None."
        )
    if dl_device is not None and tuple(dl_device) != (DLPACK_CPU, 0):
        raise SpmdBufferError(
            f"__dlpack__: dl_device={tuple(dl_device)!r}, but this Array is in host memory, "
            f"DLPack device ({DLPACK_CPU}, 0) (kDLCPU), and spmd does not move it elsewhere; "
            f"leave dl_device=None or pass ({DLPACK_CPU}, 0)."
        )
    versioned = _VERSIONED_NUMPY and max_version is not None and max_version[0] >= 1
    if gathered and copy is False:
        raise _copy_refused(array, "it is sharded, so its blocks are gathered into one")
    if versioned:  # NumPy flags the capsule read-only, and copied where it copies
        return block.__dlpack__(max_version=max_version, copy=True if gathered else copy)
    if copy is True or not block.flags.writeable:
        if copy is False:
            raise _copy_refused(
                array,
                f"a DLPack {'0.x' if max_version is None else max_version} capsule cannot mark "
                f"its memory read-only, so a writeable copy would be exported",
                " A consumer asking for max_version=(1, 0) shares the read-only memory"
                + ("." if _VERSIONED_NUMPY else " on NumPy 2.1 or later."),
            )
        block = np.array(block, copy=True)
    return block.__dlpack__()


def _copy_refused(array: Any, why: str, hint: str = "") -> SpmdBufferError:
    return SpmdBufferError(
        f"__dlpack__: copy=False, but this Array ({array.dtype}{list(array.shape)}) cannot be "
        f"exported without a copy: {why}. Pass copy=None (copy only when needed) or "
        f"copy=True.{hint}"
    )
