"""Keys of spmd.random: making one from a seed, deriving new ones (split, fold_in), and JAX's
key_data/wrap_key_data, which here convert nothing: a key is its raw uint32[2] data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import spmd.numpy as snp
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.prims.random import threefry_fold_in_p, threefry_split_p
from spmd.random.arguments import shape_arg
from spmd.runtime.put import device_put

_UINT64_RANGE = 2**64


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
    return threefry_split_p.bind(key, shape=shape_arg("split", num, "num"))


def fold_in(key: Any, data: Any) -> Any:
    """A new key from ``key`` and an integer (taken modulo 2**32), e.g. a step or a device
    index. Example: ``spmd.random.fold_in(key, step)``."""
    if isinstance(data, (int, np.integer)) and not isinstance(data, bool):
        data = int(data) % 2**32
    return threefry_fold_in_p.bind(key, data)


def _check_key_data(name: str, data: Any) -> None:
    aval = aval_of(data)
    if aval.dtype != np.uint32:
        raise SpmdTypeError(
            f"spmd.random.{name}: key data must be uint32 (spmd's keys are raw uint32[..., 2] "
            f"arrays), not {aval}; make keys with spmd.random.key(seed) or split."
        )
    if aval.ndim == 0 or aval.shape[-1] != 2:
        raise ShapeError(
            f"spmd.random.{name}: key data must have a trailing dimension of 2 (two words per "
            f"Threefry key), but it is {aval}."
        )


def key_data(keys: Any) -> Any:
    """The uint32 data of a key or an array of keys (shape ``(..., 2)``): spmd's keys are
    their data already, so this returns them as an array. Example: ``key_data(key(0))``."""
    _check_key_data("key_data", keys)
    return snp.asarray(keys)


def wrap_key_data(key_bits_array: Any, *, impl: Any = None, dtype: Any = None) -> Any:
    """Keys from uint32 key data of shape ``(..., 2)``: spmd's keys are that data, so this
    returns it as an array. Only the Threefry-2x32 implementation exists (``impl`` and
    ``dtype`` may name it). Example: ``wrap_key_data(np.array([0, 42], np.uint32))``."""
    for what, value in (("impl", impl), ("dtype", dtype)):
        if value is not None and str(value) not in ("threefry2x32", "key<fry>"):
            raise SpmdValueError(
                f"spmd.random.wrap_key_data: {what}={value!r} is not supported; spmd's keys "
                f"are Threefry-2x32 keys only (leave {what} out, or pass 'threefry2x32')."
            )
    _check_key_data("wrap_key_data", key_bits_array)
    return snp.asarray(key_bits_array)
