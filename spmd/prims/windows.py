"""Windowed reductions as primitives, in the manner of JAX's: ``reduce_window_sum``,
``reduce_window_max`` and ``reduce_window_min`` (behind spmd.lax.reduce_window, max and
average pooling), and the linear primitives their derivatives are written with.

Every primitive takes JAX's window parameters (windows_shapes.py says what each means):
``window_dimensions``, ``window_strides``, ``padding``, ``base_dilation``,
``window_dilation``. Padding and base-dilation holes hold the reduction's identity (0, -inf,
+inf; the integer extremes; False and True for bools), so they never change a window's value.

- ``reduce_window_sum`` is linear: its transpose, ``reduce_window_sum_transpose(ct,
  operand_shape=...)``, adds each window's cotangent to every element of the window, and
  that one's transpose is the sum again.
- ``reduce_window_max`` / ``_min``: the tangent is the tangent at each window's extreme
  element (the first in window order among equals), ``select_and_gather_add(t, x,
  select=...)``, linear in ``t``; its transpose ``select_and_scatter_add(ct, x, select=...)``
  adds each window's cotangent at that element, and the two are each other's transposes.

Sharded, a dimension the window does not touch (size 1, stride 1, no padding or dilation:
a CNN's batch and channels) passes through with no communication. A dimension cut into
non-overlapping windows (window equal to stride, no padding or dilation, the size a whole
number of windows) is the pair (window, tap): split evenly over whole windows, it too needs
no communication. Any other windowed dimension is blocked: an operand split there is
gathered first, since windows reach into neighbouring blocks (there is no halo exchange).
"""

from __future__ import annotations

from spmd.core.ad import UndefinedPrimal
from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdValueError
from spmd.prims.derivatives import batch_size, batch_to_front, bind, instantiate, linear_jvp
from spmd.prims.reduction_derivatives import float_jvp
from spmd.prims.windows_impl import gather_impl, reduce_impl, scatter_impl, sum_transpose_impl
from spmd.prims.windows_shapes import (
    PARAMS,
    check_dtype,
    check_window,
    reduce_window_shape,
    window_shape,
)
from spmd.sharding.rules import Factors

SELECTS = ("max", "min")

# --- sharding ----------------------------------------------------------------------------


def _dimension(i: int, n: int, m: int, w, s, pad, b, d):
    """Dimension ``i``'s factors in the operand (size ``n``) and the result (size ``m``),
    their sizes, and those blocked from splitting."""
    if w == 1 and s == 1 and pad == (0, 0) and b == 1:
        f = f"d{i}"
        dim = (f,) if n != 1 else ()
        return dim, dim, {f: n}, ()
    if b == 1 and pad == (0, 0) and d == 1 and w == s and n == m * w and m > 1:
        whole, tap = f"o{i}", f"w{i}"
        return (whole, tap), (whole,), {whole: m, tap: w}, (tap,)
    a, z = f"in{i}", f"out{i}"
    return (a,) if n != 1 else (), (z,) if m != 1 else (), {a: n, z: m}, (a, z)


def window_dims(in_shape, out_shape, params: dict):
    """The operand's and the result's factors, their sizes and the blocked ones."""
    ins, outs, sizes, blocked = [], [], {}, []
    columns = zip(in_shape, out_shape, *(params[key] for key in PARAMS), strict=True)
    for i, column in enumerate(columns):
        a, z, size, stuck = _dimension(i, *column)
        ins.append(a)
        outs.append(z)
        sizes |= size
        blocked += stuck
    return tuple(ins), tuple(outs), sizes, frozenset(blocked)


def _notes(blocked) -> dict[str, str]:
    return dict.fromkeys(
        blocked,
        "a window dimension whose windows overlap or do not tile the blocks evenly stays whole",
    )


def _reduce_sharding(linear: str | None):
    def sharding(ins, outs, **params) -> Factors:
        a, z, sizes, blocked = window_dims(ins[0].shape, outs[0].shape, params)
        return Factors((a,), (z,), sizes, blocked=blocked, notes=_notes(blocked), linear=linear)

    return sharding


def _gather_sharding(ins, outs, *, select, **params) -> Factors:
    a, z, sizes, blocked = window_dims(ins[1].shape, outs[0].shape, params)
    return Factors((a, a), (z,), sizes, blocked=blocked, notes=_notes(blocked), linear="first")


def _scatter_sharding(ins, outs, *, select, **params) -> Factors:
    a, z, sizes, blocked = window_dims(ins[1].shape, ins[0].shape, params)
    return Factors((z, a), (a,), sizes, blocked=blocked, notes=_notes(blocked), linear="first")


def _sum_transpose_sharding(ins, outs, *, operand_shape, **params) -> Factors:
    a, z, sizes, blocked = window_dims(outs[0].shape, ins[0].shape, params)
    return Factors((z,), (a,), sizes, blocked=blocked, notes=_notes(blocked), linear="one")


def _sum_transpose_block(params, in_shapes, out_shapes, in_dtypes, out_bounds) -> dict:
    """A device's operand shape is its result block's."""
    return {**params, "operand_shape": tuple(out_shapes[0])}


# --- shapes of the derivative primitives ---------------------------------------------------


def _check_select(name: str, select) -> None:
    if select not in SELECTS:
        raise SpmdValueError(f"spmd {name}: select={select!r}; give one of {SELECTS}.")


def _check_source(name: str, source: ShapedArray, x: ShapedArray, params: dict) -> None:
    expected = check_window(name, x, params)
    if source.shape != expected:
        raise ShapeError(
            f"spmd {name}: the windows of {x} give {ShapedArray(expected, x.dtype)}, but the "
            f"source is {source}; pass one value per window."
        )


def _gather_shape(t: ShapedArray, x: ShapedArray, *, select, **params) -> ShapedArray:
    _check_select("select_and_gather_add", select)
    check_dtype("select_and_gather_add", select, x)
    if t.shape != x.shape:
        raise ShapeError(f"spmd select_and_gather_add: the tangent {t} and operand {x} differ.")
    return ShapedArray(check_window("select_and_gather_add", x, params), t.dtype, t.weak_type)


def _scatter_shape(source: ShapedArray, x: ShapedArray, *, select, **params) -> ShapedArray:
    _check_select("select_and_scatter_add", select)
    check_dtype("select_and_scatter_add", select, x)
    _check_source("select_and_scatter_add", source, x, params)
    return ShapedArray(x.shape, source.dtype, source.weak_type)


def _sum_transpose_shape(source: ShapedArray, *, operand_shape, **params) -> ShapedArray:
    x = ShapedArray(tuple(operand_shape), source.dtype)
    _check_source("reduce_window_sum_transpose", source, x, params)
    return ShapedArray(x.shape, source.dtype, source.weak_type)


# --- derivatives ---------------------------------------------------------------------------


def _sum_transpose(ct, x, **params):
    if ct is None:
        return [None]
    return [bind("reduce_window_sum_transpose", ct, operand_shape=x.aval.shape, **params)]


def _sum_transpose_transpose(ct, source, *, operand_shape, **params):
    return [None if ct is None else bind("reduce_window_sum", ct, **params)]


def _chooser_jvp(select: str):
    def jvp(primals, out, tangents, **params):
        (x,), (t,) = primals, tangents
        return bind("select_and_gather_add", instantiate(t, x), x, select=select, **params)

    return float_jvp(jvp)


def _gather_jvp(primals, out, tangents, **params):
    (_, x), (t, _) = primals, tangents
    return None if t is None else bind("select_and_gather_add", t, x, **params)


def _scatter_jvp(primals, out, tangents, **params):
    (_, x), (s, _) = primals, tangents
    return None if s is None else bind("select_and_scatter_add", s, x, **params)


def _linear_in_first(name: str, transposed: str):
    """The transpose of ``name(v, x)``, linear in ``v``: ``transposed(ct, x)``."""

    def transpose(ct, v, x, **params):
        if isinstance(x, UndefinedPrimal) or not isinstance(v, UndefinedPrimal):
            raise RuntimeError(f"internal error: {name} is linear in its first operand only")
        return [None if ct is None else bind(transposed, ct, x, **params), None]

    return transpose


# --- batching ------------------------------------------------------------------------------


def _unit_window_at(params: dict, d: int) -> dict:
    """``params`` with a dimension of window 1 (no stride, padding or dilation) at ``d``."""
    unit = {"window_dimensions": 1, "window_strides": 1, "padding": (0, 0),
            "base_dilation": 1, "window_dilation": 1}  # fmt: skip
    return {**params, **{key: (*params[key][:d], unit[key], *params[key][d:]) for key in PARAMS}}


def _one_operand_batch(name: str):
    def batch(args, dims, **params):
        (x,), (d,) = args, dims
        params = _unit_window_at(params, d)
        if "operand_shape" in params:
            shape = params["operand_shape"]
            params["operand_shape"] = (*shape[:d], aval_of(x).shape[d], *shape[d:])
        return bind(name, x, **params), d

    return batch


def _two_operand_batch(name: str):
    def batch(args, dims, **params):
        size = batch_size(args, dims)
        args = [batch_to_front(a, d, size) for a, d in zip(args, dims, strict=True)]
        return bind(name, *args, **_unit_window_at(params, 0)), 0

    return batch


# --- the primitives ------------------------------------------------------------------------


def _reduce_primitive(op: str) -> Primitive:
    name = f"reduce_window_{op}"
    return Primitive(
        name,
        Rules(
            shape=reduce_window_shape(op, name),
            impl=reduce_impl(op),
            sharding=_reduce_sharding("one" if op == "sum" else None),
            jvp=linear_jvp(name) if op == "sum" else _chooser_jvp(op),
            transpose=_sum_transpose if op == "sum" else None,
            batch=_one_operand_batch(name),
        ),
    )


reduce_window_sum_p = _reduce_primitive("sum")
reduce_window_max_p = _reduce_primitive("max")
reduce_window_min_p = _reduce_primitive("min")

reduce_window_sum_transpose_p = Primitive(
    "reduce_window_sum_transpose",
    Rules(
        shape=_sum_transpose_shape,
        impl=sum_transpose_impl,
        sharding=_sum_transpose_sharding,
        local_params=_sum_transpose_block,
        jvp=linear_jvp("reduce_window_sum_transpose"),
        transpose=_sum_transpose_transpose,
        batch=_one_operand_batch("reduce_window_sum_transpose"),
    ),
)
select_and_gather_add_p = Primitive(
    "select_and_gather_add",
    Rules(
        shape=_gather_shape,
        impl=gather_impl,
        sharding=_gather_sharding,
        jvp=_gather_jvp,
        transpose=_linear_in_first("select_and_gather_add", "select_and_scatter_add"),
        batch=_two_operand_batch("select_and_gather_add"),
    ),
)
select_and_scatter_add_p = Primitive(
    "select_and_scatter_add",
    Rules(
        shape=_scatter_shape,
        impl=scatter_impl,
        sharding=_scatter_sharding,
        jvp=_scatter_jvp,
        transpose=_linear_in_first("select_and_scatter_add", "select_and_gather_add"),
        batch=_two_operand_batch("select_and_scatter_add"),
    ),
)

REDUCTIONS = {"sum": reduce_window_sum_p, "max": reduce_window_max_p, "min": reduce_window_min_p}

__all__ = [
    "REDUCTIONS",
    "reduce_window_max_p",
    "reduce_window_min_p",
    "reduce_window_sum_p",
    "reduce_window_sum_transpose_p",
    "select_and_gather_add_p",
    "select_and_scatter_add_p",
    "window_shape",
]
