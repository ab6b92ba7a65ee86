"""NumPy references: spmd.lax's slicing functions, with JAX's start indices (a negative start
is first wrapped once, start + size, then clamped into [0, size - slice_size]); spmd.nn's
float64 formulas (tests/cases/nn.py) with NumPy's result dtype for every input dtype."""

from __future__ import annotations

import types

import numpy as np

from tests.cases.nn import NUMPY_NN


def _axis(axis: int, ndim: int) -> int:
    return int(np.lib.array_utils.normalize_axis_index(axis, ndim))


def _start(start, n: int, size: int) -> int:
    start = int(np.asarray(start))
    if start < 0:
        start += n
    return min(max(start, 0), n - size)


def _block(operand: np.ndarray, starts, sizes) -> tuple:
    if len(starts) != operand.ndim or len(sizes) != operand.ndim:
        raise ValueError(f"{len(starts)} starts, {len(sizes)} sizes for a {operand.ndim}-d operand")
    for n, size in zip(operand.shape, sizes, strict=True):
        if not 0 <= size <= n:
            raise ValueError(f"a block of {size} does not fit an axis of {n}")
    return tuple(
        slice(s, s + size)
        for s, size in (
            (_start(start, n, size), size)
            for start, n, size in zip(starts, operand.shape, sizes, strict=True)
        )
    )


def dynamic_slice(operand, start_indices, slice_sizes):
    operand = np.asarray(operand)
    return operand[_block(operand, list(start_indices), list(slice_sizes))].copy()


def dynamic_update_slice(operand, update, start_indices):
    operand, update = np.asarray(operand), np.asarray(update)
    if update.dtype != operand.dtype:
        raise TypeError(f"update is {update.dtype}, operand {operand.dtype}")
    result = operand.copy()
    result[_block(operand, list(start_indices), list(update.shape))] = update
    return result


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    operand = np.asarray(operand)
    axis = _axis(axis, operand.ndim)
    starts = [start_index if d == axis else 0 for d in range(operand.ndim)]
    sizes = [slice_size if d == axis else n for d, n in enumerate(operand.shape)]
    return dynamic_slice(operand, starts, sizes)


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    operand = np.asarray(operand)
    axis = _axis(axis, operand.ndim)
    starts = [start_index if d == axis else 0 for d in range(operand.ndim)]
    return dynamic_update_slice(operand, update, starts)


def dynamic_update_index_in_dim(operand, update, index, axis):
    operand, update = np.asarray(operand), np.asarray(update)
    if update.ndim == operand.ndim - 1:
        update = np.expand_dims(update, _axis(axis, operand.ndim))
    return dynamic_update_slice_in_dim(operand, update, index, axis)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    block = dynamic_slice_in_dim(operand, index, 1, axis)
    return block if keepdims else np.squeeze(block, _axis(axis, np.ndim(operand)))


LAX = types.SimpleNamespace(
    dynamic_slice=dynamic_slice,
    dynamic_update_slice=dynamic_update_slice,
    dynamic_slice_in_dim=dynamic_slice_in_dim,
    dynamic_update_slice_in_dim=dynamic_update_slice_in_dim,
    dynamic_index_in_dim=dynamic_index_in_dim,
    dynamic_update_index_in_dim=dynamic_update_index_in_dim,
)


def _in_numpy_dtype(name: str):
    """NUMPY_NN's formula, its result in the dtype NumPy's ufuncs give ``x``'s dtype (int8 and
    bool give float16, int16 float32, wider integers float64), as NumPy's own formula would."""
    formula = getattr(NUMPY_NN, name)

    def reference(x, *args, **kwargs):
        x = np.asarray(x)
        result = np.asarray(formula(x, *args, **kwargs))
        if name == "gelu" and x.dtype.kind == "f":  # spmd takes gelu's limits at +-inf
            result = np.where(np.isinf(x), np.where(x > 0, x, 0), result).astype(result.dtype)
        if name in ("relu", "one_hot") or x.dtype.kind not in "biu":
            return result
        return result.astype(np.exp(np.zeros((), x.dtype)).dtype)

    return reference


NN = types.SimpleNamespace(**{name: _in_numpy_dtype(name) for name in vars(NUMPY_NN)})
