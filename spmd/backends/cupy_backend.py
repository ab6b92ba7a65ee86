"""CuPy arrays, one device per GPU."""

from __future__ import annotations

from typing import Any

import array_api_compat.cupy as cupy_xp
import cupy
import numpy as np

from spmd.backends.base import Backend


class CupyBackend(Backend):
    name = "cupy"
    platform = "gpu"
    xp = cupy_xp

    def device_count(self) -> int:
        try:
            return cupy.cuda.runtime.getDeviceCount()
        except cupy.cuda.runtime.CUDARuntimeError:
            return 0

    def from_numpy(self, array: np.ndarray, index: int) -> Any:
        with cupy.cuda.Device(index):
            return cupy.asarray(array)

    def to_numpy(self, buffer: Any) -> np.ndarray:
        return cupy.asnumpy(buffer)

    def is_buffer(self, value: Any) -> bool:
        return isinstance(value, cupy.ndarray)


BACKEND = GPU_BACKEND = CupyBackend()
