"""lax's windowed reductions: ``reduce_window``, as jax.lax.reduce_window, and through it max
and average pooling (stax's and flax's pools are reduce_window with lax.max or lax.add).

A computation recognised as a monoid (lax.add, lax.max, lax.min, or spmd.numpy's and NumPy's
add, maximum, minimum) binds one primitive of spmd/prims/windows.py, which shards, vmaps
and differentiates (max pooling's gradient goes to each window's first maximal element).
Any other computation, a product (multiply) or several operands at once (a pytree) is folded
over the window's taps with spmd.numpy's functions, applied to whole arrays: the
computation must act elementwise, as jnp's and lax's binary functions do.

As XLA computes it, each window starts from ``init_value`` and takes in its elements only:
padding and base-dilation holes are skipped. With a monoid's identity as ``init_value`` (0
for add, -inf or the integer minimum for max, ...) that is the plain windowed reduction;
another ``init_value`` is combined once with each window's result (``max(0, window)``).
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spmd import numpy as snp
from spmd.core.trace import Tracer, aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.lax.padtype import padding_pairs, padtype_to_pads
from spmd.prims.windows import REDUCTIONS
from spmd.prims.windows_impl import params_key, plan
from spmd.prims.windows_shapes import dilate, identity, window_shape
from spmd.tree_util import tree_flatten, tree_unflatten

__all__ = ["reduce_window"]

WHO = "spmd.lax.reduce_window"
_MONOID_FUNCTIONS = {  # spmd.lax's add, max, min and mul are spmd.numpy's functions
    "sum": (snp.add, np.add, operator.add),
    "max": (snp.maximum, np.maximum),
    "min": (snp.minimum, np.minimum),
    "prod": (snp.multiply, np.multiply, operator.mul),
}
_MONOIDS = {id(f): op for op, functions in _MONOID_FUNCTIONS.items() for f in functions}
_COMBINE = {"sum": snp.add, "max": snp.maximum, "min": snp.minimum}


def reduce_window(
    operand: Any,
    init_value: Any,
    computation: Callable,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int] | None = None,
    padding: str | Sequence[tuple[int, int]] = "VALID",
    base_dilation: Sequence[int] | None = None,
    window_dilation: Sequence[int] | None = None,
) -> Any:
    """``computation`` folded over each window of ``operand``, starting from ``init_value``.

    Padding is "VALID", "SAME", "SAME_LOWER" or (low, high) pairs; ``base_dilation`` puts
    holes between the operand's elements, ``window_dilation`` between a window's taps.
    Example, max pooling 2x2 with stride 2 over NHWC images::

        reduce_window(x, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    """
    operands, tree = tree_flatten(operand)
    inits, init_tree = tree_flatten(init_value)
    if init_tree != tree:
        raise SpmdValueError(
            f"{WHO}: operand is {tree} but init_value is {init_tree}; give one init_value "
            f"per operand, in the same structure."
        )
    if not operands:
        raise SpmdValueError(f"{WHO}: operand holds no arrays; pass at least one.")
    if not callable(computation):
        raise SpmdTypeError(
            f"{WHO}: computation={computation!r} is not callable; pass a binary function such "
            f"as lax.add, lax.max or spmd.numpy.maximum."
        )
    operands = [snp.asarray(x) for x in operands]
    avals = [aval_of(x) for x in operands]
    if len({a.shape for a in avals}) > 1:
        raise ShapeError(
            f"{WHO}: the operands are {', '.join(map(str, avals))}; they must share one shape."
        )
    params = window_params(avals[0], window_dimensions, window_strides, padding, base_dilation,
                           window_dilation)  # fmt: skip
    inits = [_init(value, aval) for value, aval in zip(inits, avals, strict=True)]
    op = _MONOIDS.get(id(computation)) if len(operands) == 1 else None
    if op in REDUCTIONS:
        (x,), (init,), (aval,) = operands, inits, avals
        out = REDUCTIONS[op].bind(x, **params)
        if isinstance(init, Tracer) or init != identity(op, aval.dtype):
            out = _COMBINE[op](init, out)
        return tree_unflatten(tree, [out])
    return tree_unflatten(tree, _fold(operands, inits, avals, computation, tree, params))


# --- arguments -----------------------------------------------------------------------------


def _ints(name: str, values: Any, ndim: int, aval, example: str) -> tuple[int, ...]:
    try:
        values = tuple(operator.index(v) for v in values)
    except TypeError:
        raise SpmdTypeError(
            f"{WHO}: {name}={values!r}; give {ndim} integers, one per dimension of the "
            f"operand {aval}, e.g. {example}."
        ) from None
    if len(values) != ndim:
        raise ShapeError(
            f"{WHO}: {name}={values} has {len(values)} entries, but the operand {aval} has "
            f"{ndim} dimensions; give one per dimension, e.g. {example}."
        )
    if any(v < 1 for v in values):
        raise SpmdValueError(
            f"{WHO}: {name}={values}: every entry must be at least 1 (a dimension the window "
            f"does not cross has 1), e.g. {example}."
        )
    return values


def window_params(aval, window_dimensions, window_strides, padding, base_dilation,
                  window_dilation) -> dict:  # fmt: skip
    """The primitives' parameters, checked: SpmdError naming the argument and the fix."""
    ndim = aval.ndim
    ones = (1,) * ndim
    example = str(tuple([2] * min(ndim, 2) + [1] * max(ndim - 2, 0)))
    window = _ints("window_dimensions", window_dimensions, ndim, aval, example)
    strides = ones if window_strides is None else _ints("window_strides", window_strides,
                                                         ndim, aval, example)  # fmt: skip
    base = ones if base_dilation is None else _ints("base_dilation", base_dilation, ndim, aval,
                                                   str(ones))  # fmt: skip
    wdil = ones if window_dilation is None else _ints("window_dilation", window_dilation,
                                                      ndim, aval, str(ones))  # fmt: skip
    if isinstance(padding, str):
        dilated = tuple(map(dilate, window, wdil))
        pads = tuple(padtype_to_pads(aval.shape, dilated, strides, padding, WHO))
    else:
        pads = padding_pairs(padding, ndim, WHO)
        if len(pads) != ndim:
            raise ShapeError(
                f"{WHO}: padding={pads} has {len(pads)} pairs, but the operand {aval} has "
                f"{ndim} dimensions; give one (low, high) pair per dimension."
            )
        for n, b, (lo, hi) in zip(aval.shape, base, pads, strict=True):
            if dilate(n, b) + lo + hi < 0:
                raise SpmdValueError(
                    f"{WHO}: padding={pads} crops more than the operand {aval} holds (after "
                    f"base_dilation={base}); make the negative padding smaller."
                )
    return {"window_dimensions": window, "window_strides": strides, "padding": pads,
            "base_dilation": base, "window_dilation": wdil}  # fmt: skip


def _init(value: Any, aval) -> Any:
    """``init_value`` as a scalar of the operand's dtype (a traced one must have it)."""
    if isinstance(value, Tracer):
        got = aval_of(value)
        if got.shape != () or got.dtype != aval.dtype:
            raise SpmdTypeError(
                f"{WHO}: init_value is {got}, the operand {aval}; a traced init_value must "
                f"be a scalar of the operand's dtype, e.g. x.dtype.type(0)."
            )
        return value
    held = np.asarray(value)
    if held.ndim != 0:
        raise SpmdTypeError(
            f"{WHO}: init_value has shape {held.shape}; it must be a scalar (one per operand)."
        )
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cast = held.astype(aval.dtype)
        same = bool(cast == held) or (bool(np.isnan(held)) and bool(np.isnan(cast)))
    if not same:
        raise SpmdTypeError(
            f"{WHO}: init_value {held.item()!r} is not a value of the operand's dtype "
            f"{aval.dtype}; pass one that is (for max over integers, "
            f"np.iinfo(np.{aval.dtype}).min instead of -inf)."
        )
    return aval.dtype.type(cast)


# --- the fold ------------------------------------------------------------------------------


def _tap_masks(shape, params: dict):
    """Per tap, where it reads an operand element (not padding or a hole): True (everywhere),
    False (nowhere) or a NumPy bool array broadcasting to the result."""
    p = plan(tuple(shape), params_key(params))
    buffer = p.buffer or p.in_shape
    real = []
    for size, where in zip(buffer, p.place[:-1], strict=True):
        line = np.zeros(size, bool)
        line[where] = True
        real.append(line)
    masks = []
    for tap in p.taps:
        lines = [line[s] for line, s in zip(real, tap[:-1], strict=True)]
        if all(line.all() for line in lines):
            masks.append(True)
        elif not all(line.any() for line in lines):
            masks.append(False)
        else:
            ndim = len(lines)
            mask = np.ones((1,) * ndim, bool)
            for i, line in enumerate(lines):
                mask = mask & line.reshape([-1 if j == i else 1 for j in range(ndim)])
            masks.append(mask)
    return p, masks


def _fold(operands, inits, avals, computation, tree, params) -> list:
    """Each window folded tap by tap: ``acc = computation(acc, element)`` where the tap
    reads an element of the operand, starting from ``init_value``."""
    out_shape = window_shape(avals[0].shape, **params)
    if math.prod(out_shape) == 0:
        return [snp.zeros(out_shape, a.dtype) for a in avals]
    p, masks = _tap_masks(avals[0].shape, params)
    # A concrete init stays a NumPy scalar: a constant of the traced program, not an Array.
    fills = [init if isinstance(init, Tracer) else np.asarray(init) for init in inits]
    buffers = [x if p.buffer is None else _buffer(x, fill, params)
               for x, fill in zip(operands, fills, strict=True)]  # fmt: skip
    acc = [snp.broadcast_to(fill, out_shape) for fill in fills]
    for tap, mask in zip(p.taps, masks, strict=True):
        if mask is False:
            continue
        pieces = [b[tap] for b in buffers]
        new = computation(tree_unflatten(tree, acc), tree_unflatten(tree, pieces))
        leaves = _check_result(new, tree, out_shape, avals, computation)
        if mask is not True:
            leaves = [snp.where(mask, n, a) for n, a in zip(leaves, acc, strict=True)]
        acc = leaves
    return acc


def _buffer(x, fill, params: dict):
    """``x`` with ``fill`` in its base-dilation holes and positive padding (the plan's
    buffer: negative padding is left to the taps)."""
    for axis, (b, (lo, hi)) in enumerate(zip(params["base_dilation"], params["padding"],
                                             strict=True)):  # fmt: skip
        shape = aval_of(x).shape
        n = shape[axis]
        if b > 1 and n > 1:
            holes = snp.broadcast_to(fill, shape)
            x = snp.stack([x] + [holes] * (b - 1), axis=axis + 1)
            x = x.reshape((*shape[:axis], n * b, *shape[axis + 1 :]))
            x = x[(slice(None),) * axis + (slice(0, dilate(n, b)),)]
        parts = []
        for count in (max(lo, 0), max(hi, 0)):
            side = list(aval_of(x).shape)
            side[axis] = count
            parts.append(snp.broadcast_to(fill, tuple(side)) if count else None)
        if parts[0] is not None or parts[1] is not None:
            x = snp.concatenate([part for part in (parts[0], x, parts[1]) if part is not None],
                                axis=axis)  # fmt: skip
    return x


def _check_result(new, tree, out_shape, avals, computation) -> list:
    leaves, got = tree_flatten(new)
    if got != tree:
        raise SpmdTypeError(
            f"{WHO}: computation {computation!r} returned {got}, but the operands are {tree}; "
            f"it must return the structure it takes."
        )
    leaves = [snp.asarray(leaf) for leaf in leaves]
    for leaf, aval in zip(leaves, avals, strict=True):
        have = aval_of(leaf)
        if have.shape != out_shape or have.dtype != aval.dtype:
            raise SpmdTypeError(
                f"{WHO}: computation {computation!r} gave {have} for operand {aval}, whose "
                f"windows give {out_shape}; it must act elementwise and keep the dtype "
                f"(supported without folding: lax.add, lax.max, lax.min)."
            )
    return leaves
