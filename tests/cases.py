"""The case table: every spmd.numpy function with the inputs it is checked on against NumPy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spmd.prims.elementwise import BINARY, UNARY

DTYPES = (np.bool_, np.int32, np.int64, np.float32, np.float64)
SHAPES = ((), (0,), (3,), (2, 3))


@dataclass(frozen=True)
class Case:
    name: str
    arity: int
    positive: bool = False  # inputs kept >= 1 (power's exponent, logs' domain)


CASES = [Case(name, 1, positive=name in ("sqrt", "log", "log1p")) for name in UNARY] + [
    Case(name, 2, positive=name in ("power", "floor_divide", "remainder")) for name in BINARY
]


def make_input(shape: tuple[int, ...], dtype, seed: int, positive: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    low = 1 if positive else -5
    values = rng.integers(low, 6, size=shape)
    if np.dtype(dtype).kind == "f":
        values = values + rng.random(size=shape).round(2) * (0.5 if positive else 1)
    return values.astype(dtype)
