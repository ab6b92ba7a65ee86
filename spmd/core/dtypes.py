"""JAX's two dtype modes: ``jax_enable_x64`` on (the default: NumPy's dtypes, float64 and
int64 included) or off (JAX's 32-bit defaults), and what each dtype becomes in the mode.

With x64 off each 64-bit dtype stands for its 32-bit one, as JAX's ``canonicalize_dtype``
has it: float64 -> float32, int64 -> int32, uint64 -> uint32, complex128 -> complex64. The
mode is applied where a dtype can arise, and nowhere else:

- data entering spmd (device_put, asarray and array, jit's arguments and what it returns,
  constants a trace captures): ``canonical_host``; an integer the 32-bit type cannot hold
  raises rather than wrap (a Python int must fit int32, as in JAX);
- a dtype named by the caller, or a creation function's default (``check_dtype`` in
  spmd/core/aval.py);
- every primitive's operands and results (``Primitive.bind``, spmd/core/primitive.py): an
  operand of a 64-bit dtype (an Array made while x64 was on) is converted first, and a
  result that NumPy's promotion makes 64-bit (int32 + uint32 -> int64, sum(int32) -> int64,
  int32 / int32 -> float64) is converted after, by a ``convert_element_type`` step that the
  program records, so every trace (eager, jit, grad, vmap, shard_map) sees the 32-bit type.

Implementations and the executor never read the mode: a program holds its decisions. A
Python scalar is weak (its kind is what promotion reads: ``float16_array * 2.0`` is
float16) and is typed as NumPy computes it (float64, int64); a weak result is converted to
a strong array of its 32-bit type, so no value outside a trace is 64-bit.

Promotion is NumPy's, then canonicalized (not JAX's lattice): the two agree on all 32-bit
inputs except an integer wider than 8 bits with float16 (JAX: float16; spmd: float32, as
NumPy gives), and where JAX keeps a result weak (a strong integer array with a Python float
is a weak float32 in JAX; spmd's Arrays are never weak).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from spmd.config import config
from spmd.errors import SpmdOverflowError

TO_32 = {
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}


# Whether 64-bit dtypes are in use: ``spmd.config.jax_enable_x64``, or the innermost
# ``enable_x64``/``disable_x64`` block's (read on every bind, hence the fast reader).
x64_enabled: Callable[[], bool] = config.reader("jax_enable_x64")


def canonical_dtype(dtype: np.dtype) -> np.dtype:
    """``dtype`` as the current mode has it: itself with x64 on, its 32-bit stand-in off."""
    if x64_enabled():
        return dtype
    return TO_32.get(dtype, dtype)


def is_canonical(dtype: np.dtype) -> bool:
    return dtype not in TO_32 or x64_enabled()


def check_python_int(value: int, argument: str) -> None:
    """With x64 off, a Python int becomes an int32: one that does not fit raises, as in JAX."""
    info = np.iinfo(np.int32)
    if not info.min <= value <= info.max:
        raise SpmdOverflowError(
            f"{argument}: the Python int {value} does not fit int32, which Python ints become "
            f"with jax_enable_x64 off (as in JAX). Turn it on with "
            f"spmd.config.update('jax_enable_x64', True) (or spmd.experimental.enable_x64()), "
            f"or pass an array of another dtype, e.g. np.uint32({value})."
        )


def canonical_host(value: Any, argument: str) -> Any:
    """A NumPy array or scalar in the current mode's dtype: converted from 64 bits with x64
    off (integers that the 32-bit type cannot hold raise instead of wrapping), as it is
    otherwise."""
    dtype = value.dtype
    target = canonical_dtype(dtype)
    if target == dtype:
        return value
    if dtype.kind in "iu" and value.size:
        info = np.iinfo(target)
        low, high = value.min(), value.max()
        if low < info.min or high > info.max:
            bad = low if low < info.min else high
            raise SpmdOverflowError(
                f"{argument} ({dtype}) holds {bad}, which {target} cannot hold: with "
                f"jax_enable_x64 off, {dtype} data becomes {target}, as in JAX. Turn it on "
                f"with spmd.config.update('jax_enable_x64', True) (or within "
                f"spmd.experimental.enable_x64()), or give values in [{info.min}, {info.max}]."
            )
    if isinstance(value, np.generic):
        return target.type(value)
    return value.astype(target)
