"""array_api_strict: the standard's reference namespace, for tests. A NumPy call that leaks
into device code fails on its arrays, so a run on this backend proves device code uses only
the array namespace it is given."""

from __future__ import annotations

from typing import Any

import array_api_strict
import numpy as np

from spmd.backends.base import Backend

_ARRAY = type(array_api_strict.asarray(0))


class StrictBackend(Backend):
    name = "array_api_strict"
    platform = "cpu"
    xp = array_api_strict

    def from_numpy(self, array: np.ndarray, index: int) -> Any:
        return array_api_strict.asarray(array)

    def to_numpy(self, buffer: Any) -> np.ndarray:
        return np.asarray(buffer)  # shares memory; NumPy 2.0's DLPack cannot export read-only

    def is_buffer(self, value: Any) -> bool:
        return isinstance(value, _ARRAY)


BACKEND = StrictBackend()
