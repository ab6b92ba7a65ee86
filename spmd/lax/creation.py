"""lax's array makers and dtype conversions: iota, broadcasted_iota, full, full_like,
convert_element_type, bitcast_convert_type.

iota binds the ``iota`` creation primitive (each device makes its own block), and
bitcast_convert_type its own (spmd/prims/bitcast.py); the others compose spmd.numpy's full,
astype and real with lax.broadcast_in_dim.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.core.aval import check_dtype
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.lax import operator_checks as check
from spmd.lax.operators import broadcast_in_dim
from spmd.numpy import asarray, astype, real
from spmd.numpy import full as numpy_full
from spmd.prims.bitcast import bitcast_convert_type_p
from spmd.prims.creation import iota_p
from spmd.runtime.constrain import constrain

__all__ = [
    "bitcast_convert_type",
    "broadcasted_iota",
    "convert_element_type",
    "full",
    "full_like",
    "iota",
]


def _numeric(fn: str, dtype: Any) -> np.dtype:
    dtype = check_dtype(dtype)
    if dtype.kind not in "iuf":
        raise SpmdTypeError(
            f"spmd.lax.{fn}: dtype={dtype} is not an integer or floating dtype; iota counts "
            f"0, 1, 2, ... in one, e.g. {fn}(np.int32, ...)."
        )
    return dtype


def iota(dtype: Any, size: int, *, sharding: Any = None) -> Any:
    """``0, 1, ..., size - 1`` in ``dtype`` (integer or floating). Example:
    ``iota(np.int32, 4)``."""
    dtype = _numeric("iota", dtype)
    size = check.static_int(size, "iota", "size")
    if size < 0:
        raise ShapeError(f"spmd.lax.iota: size={size} is negative; pass a size >= 0.")
    out = iota_p.bind(size=size, start=0, step=1, dtype=dtype)
    return out if sharding is None else constrain(out, sharding, "spmd.lax.iota(sharding=...)")


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int, *, sharding: Any = None):
    """An array of ``shape`` whose entries count along ``dimension``: ``out[..., i, ...] =
    i``. Example: ``broadcasted_iota(np.int32, (2, 3), 1)`` is ``[[0, 1, 2], [0, 1, 2]]``."""
    shape = check.sizes(shape, "broadcasted_iota", "shape")
    dimension = check.static_int(dimension, "broadcasted_iota", "dimension")
    if not 0 <= dimension < len(shape):
        raise ShapeError(
            f"spmd.lax.broadcasted_iota: dimension={dimension} is outside [0, {len(shape)}) "
            f"for shape={shape}; count along one of its dimensions."
        )
    count = iota(dtype, shape[dimension])
    return broadcast_in_dim(count, shape, (dimension,), out_sharding=sharding)


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None, *, sharding: Any = None):
    """An array of ``shape`` filled with the scalar ``fill_value`` (traced or not), in
    ``dtype`` or the fill's. Example: ``full((2, 3), 0.5, np.float32)``."""
    shape = check.sizes(shape, "full", "shape")
    check.scalar("full", fill_value, "fill_value")
    dtype = None if dtype is None else check_dtype(dtype)
    return numpy_full(shape, fill_value, dtype, out_sharding=sharding)


def full_like(
    x: Any, fill_value: Any, dtype: Any = None, shape: Sequence[int] | None = None,
    sharding: Any = None,
) -> Any:  # fmt: skip
    """``full`` with ``x``'s shape and dtype unless ``shape`` or ``dtype`` are given.
    Example: ``full_like(x, 1)``."""
    aval = aval_of(x)
    shape = aval.shape if shape is None else check.sizes(shape, "full_like", "shape")
    return full(shape, fill_value, aval.dtype if dtype is None else dtype, sharding=sharding)


def convert_element_type(operand: Any, new_dtype: Any) -> Any:
    """``operand`` in ``new_dtype``: a complex operand to a real dtype keeps its real part
    (as JAX), floats to integers truncate toward zero. Example:
    ``convert_element_type(x, np.int32)``."""
    new_dtype = check_dtype(new_dtype, "new_dtype")
    operand = asarray(operand)
    source = aval_of(operand).dtype
    if source.kind == "c" and new_dtype.kind != "c":
        operand = real(operand)
    return operand if aval_of(operand).dtype == new_dtype else astype(operand, new_dtype)


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    """``operand``'s bytes read as ``new_dtype``. A narrower dtype adds a trailing dimension
    of the width ratio, a wider one takes the operand's last dimension (which must be the
    ratio) away. Example: ``bitcast_convert_type(np.float32(1.0), np.int32)`` is
    ``1065353216``."""
    new_dtype = check_dtype(new_dtype, "new_dtype")
    return bitcast_convert_type_p.bind(asarray(operand), new_dtype=new_dtype)
