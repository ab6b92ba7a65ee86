"""spmd.random: counter-based random numbers (Threefry-2x32), the same whatever the sharding.

Keys are explicit values, as in JAX: ``key(seed)`` makes one (a uint32[2] array),
``split`` and ``fold_in`` derive new ones, and a sampler never changes its key::

    k = spmd.random.key(0)
    k, sub = spmd.random.split(k)
    x = spmd.random.normal(sub, (1024, 64))

Element ``i`` of a result (its global row-major flat index) is computed from the counter
``i`` alone (see spmd.prims.random), so a sharded result holds exactly the numbers of the
unsharded one, and the numbers equal ``jax.random``'s (partitionable Threefry) for the same
key, shape and dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.core.aval import check_dtype
from spmd.errors import SpmdTypeError
from spmd.prims.random import (
    FLOAT_DTYPES,
    UINT_DTYPES,
    random_bits_p,
    random_normal_p,
    random_uniform_p,
    threefry_fold_in_p,
    threefry_split_p,
)
from spmd.runtime.put import device_put
from spmd.sharding.layout import canonical_shape

__all__ = ["PRNGKey", "bits", "fold_in", "key", "normal", "split", "uniform"]

_UINT64_RANGE = 2**64


def _shape(name: str, shape: int | Sequence[int]) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, (int, np.integer)) else shape
    return canonical_shape(dims, f"spmd.random.{name}(shape={shape!r})")


def _dtype(name: str, dtype: Any, allowed: tuple[np.dtype, ...]) -> np.dtype:
    result = check_dtype(dtype)
    if result not in allowed:
        names = ", ".join(d.name for d in allowed)
        raise SpmdTypeError(f"spmd.random.{name}: dtype={result} is not supported; use {names}.")
    return result


def key(seed: int) -> Any:
    """A new key (uint32[2]) from an integer seed. Example: ``spmd.random.key(0)``.

    A 64-bit seed becomes the words ``[seed >> 32, seed & 0xFFFFFFFF]`` (negative seeds in
    two's complement), as JAX's ``threefry_seed``: ``key(0)`` is ``[0, 0]``, ``key(42)`` is
    ``[0, 42]``.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise SpmdTypeError(
            f"spmd.random.key: seed must be a Python int, not {type(seed).__name__}. Inside a "
            f"jitted function, pass the key as an argument or use fold_in(key, value)."
        )
    seed = int(seed)
    if not -(2**63) <= seed < _UINT64_RANGE:
        raise SpmdTypeError(f"spmd.random.key: seed={seed} does not fit in 64 bits.")
    seed %= _UINT64_RANGE
    return device_put(np.array([seed >> 32, seed & 0xFFFFFFFF], dtype=np.uint32))


PRNGKey = key


def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    """``num`` new keys, uint32[num, 2], independent of ``key`` and of each other.

    Example: ``k1, k2 = spmd.random.split(spmd.random.key(0))``. ``num`` may also be a shape.
    """
    return threefry_split_p.bind(key, shape=_shape("split", num))


def fold_in(key: Any, data: Any) -> Any:
    """A new key from ``key`` and an integer (taken modulo 2**32), e.g. a step or a device
    index. Example: ``spmd.random.fold_in(key, step)``."""
    if isinstance(data, (int, np.integer)) and not isinstance(data, bool):
        data = int(data) % 2**32
    return threefry_fold_in_p.bind(key, data)


def bits(key: Any, shape: int | Sequence[int] = (), dtype: Any = np.uint32) -> Any:
    """Uniform random bits of an unsigned dtype. Example: ``bits(key, (4,), np.uint8)``."""
    dtype = _dtype("bits", dtype, UINT_DTYPES)
    return random_bits_p.bind(key, shape=_shape("bits", shape), dtype=dtype)


def uniform(
    key: Any,
    shape: int | Sequence[int] = (),
    dtype: Any = np.float32,
    minval: Any = 0.0,
    maxval: Any = 1.0,
) -> Any:
    """Uniform floats in ``[minval, maxval)``. Example: ``uniform(key, (3,), minval=-1.)``.

    The top mantissa bits of the random bits under the exponent of 1.0 give a float in
    [1, 2), minus 1; ``minval``/``maxval`` (cast to ``dtype``) may broadcast to ``shape``.
    """
    dtype = _dtype("uniform", dtype, FLOAT_DTYPES)
    return random_uniform_p.bind(key, minval, maxval, shape=_shape("uniform", shape), dtype=dtype)


def normal(key: Any, shape: int | Sequence[int] = (), dtype: Any = np.float32) -> Any:
    """Standard normal floats. Example: ``spmd.random.normal(key, (1024,))``.

    By the inverse error function, as JAX: ``sqrt(2) * erfinv(u)`` with ``u`` uniform in
    (-1, 1) (Giles' polynomial approximation of erfinv).
    """
    dtype = _dtype("normal", dtype, FLOAT_DTYPES)
    return random_normal_p.bind(key, shape=_shape("normal", shape), dtype=dtype)
