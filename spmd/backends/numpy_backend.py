"""The default backend: NumPy arrays in this process's memory, the buffers themselves."""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.backends.base import Backend
from spmd.core.buffer_pool import POOL


class NumpyBackend(Backend):
    name = "numpy"
    platform = "cpu"
    xp = np

    def from_numpy(self, array: np.ndarray, index: int) -> np.ndarray:
        return array

    def to_numpy(self, buffer: Any) -> np.ndarray:
        return buffer

    def result(self, value: Any, dtype: np.dtype, index: int) -> np.ndarray | None:
        if type(value) is not np.ndarray:  # NumPy gives scalars for 0-d results
            value = np.asarray(value, dtype)
        return self.freeze(value) if value.dtype == dtype else None

    def freeze(self, buffer: np.ndarray) -> np.ndarray:
        if buffer.flags.writeable:
            base = buffer.base
            if not buffer.flags.owndata and base is not None and not POOL.owns(base):
                buffer = buffer.copy()  # a view of something someone else may write to
            buffer.flags.writeable = False
        return buffer

    def is_buffer(self, value: Any) -> bool:
        return type(value) is np.ndarray

    def dtype_of(self, buffer: np.ndarray) -> np.dtype:
        return buffer.dtype

    def native_dtype(self, dtype: np.dtype) -> np.dtype:
        return np.dtype(dtype)

    def astype(self, buffer: np.ndarray, dtype: np.dtype) -> np.ndarray:
        return buffer.astype(dtype)


BACKEND = NumpyBackend()
