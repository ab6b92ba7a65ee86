"""Device buffers seen from the host: each device's buffers are its backend's arrays
(spmd/backends/), and what lays blocks out (device_put, the Communicator, gathering an Array)
reads and writes them as NumPy arrays, sharing memory wherever the device is this process's
memory (NumPy, PyTorch on CPU, array_api_strict)."""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.errors import SpmdTypeError
from spmd.sharding.device import Device


def host_view(device: Device, buffer: Any) -> np.ndarray:
    """``buffer`` of ``device`` as a NumPy array, only to be read (a scalar stays one)."""
    if device.backend == "numpy" or not device.library.is_buffer(buffer):
        return buffer
    return device.library.to_numpy(buffer)


def on_device(device: Device, array: np.ndarray) -> Any:
    """``array`` as a buffer of ``device``. On NumPy devices it is ``array`` itself, which
    nobody may write to after; other libraries share only read-only memory (a writeable
    array is someone's who may still write to it, so it is copied)."""
    if device.backend == "numpy":
        return array
    array = np.asarray(array)
    library = device.library
    if array.dtype not in library.dtypes_stored():
        raise SpmdTypeError(
            f"the {library.name} backend has no {array.dtype} arrays, so {device} cannot hold "
            f"this {array.dtype}{list(array.shape)} value; cast it to a dtype it has "
            f"({', '.join(sorted(d.name for d in library.dtypes_stored()))}), or choose another "
            f"backend with SPMD_BACKEND."
        )
    if array.flags.writeable:
        array = np.array(array, copy=True)
    return library.from_numpy(array, device.local_index)


def host_views(buffers: dict[Device, Any]) -> dict[Device, np.ndarray]:
    return {d: host_view(d, b) for d, b in buffers.items()}


def on_devices(arrays: dict[Device, np.ndarray]) -> dict[Device, Any]:
    return {d: on_device(d, a) for d, a in arrays.items()}


class Stacked:
    """A loop's per-step results stacked along a new leading axis of ``length``, step by step
    as they come: on NumPy written into one array made at the first step (a list stacked at
    the end would hold every step twice at its peak); other libraries stack at the end."""

    def __init__(self, xp, length: int, device: Device | None = None) -> None:
        self.xp, self.length, self.device = xp, length, device
        self.array: np.ndarray | None = None
        self.pieces: dict[int, Any] = {}

    def put(self, step: int, value: Any) -> None:
        if self.xp is not np:
            self.pieces[step] = value
            return
        if self.array is None:
            value = np.asarray(value)
            self.array = np.empty((self.length, *value.shape), value.dtype)
        self.array[step] = value

    def result(self, shape: tuple[int, ...], dtype) -> Any:
        """The stacked array (``shape`` and ``dtype``: one step's, for a loop of no steps)."""
        if self.array is not None:
            return self.array
        if self.pieces:
            return self.xp.stack([self.pieces[i] for i in sorted(self.pieces)])
        empty = np.zeros((0, *shape), dtype)
        return on_device(self.device, empty) if self.device else self.xp.asarray(empty)
