"""Array creation in spmd.numpy: NumPy's constructors of filled arrays, ranges and identity
matrices, placed on the default device (or ``out_sharding``). Their default dtypes follow the
x64 mode (float64 and int64, or float32 and int32 with jax_enable_x64 off). Arrays from data
(``array``, ``asarray``, ``copy``) are spmd/numpy/conversion.py's, and exported from here too."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from spmd.core.aval import check_dtype, host_array
from spmd.errors import (
    ShapeError,
    SpmdTypeError,
    SpmdValueError,
    SpmdZeroDivisionError,
    aval_str,
)
from spmd.numpy.allocation import allocating
from spmd.numpy.conversion import NUMPY_REFUSALS, array, asarray, copy
from spmd.numpy.device_arg import takes_device
from spmd.numpy.placement import takes_out_sharding
from spmd.prims.creation import iota_p
from spmd.runtime.constrain import constrain
from spmd.runtime.construct import make_array_from_callback
from spmd.runtime.put import as_sharding, device_put, layout_for


def _put(value: np.ndarray):
    return device_put(value)


def _tracing() -> bool:
    from spmd.core.trace import EVAL_TRACE, current_trace

    return current_trace() is not EVAL_TRACE


def _filled(name: str, shape: Any, value: Any, dtype: Any, out_sharding: Any = None):
    """``numpy.full(shape, value, dtype)`` (``value`` a scalar, or a host array that broadcasts
    to ``shape``), laid out as ``out_sharding`` (the default device when None). Eagerly, each
    device makes just its block; inside a trace, a scalar is a broadcast of one element, which
    each device expands to its block when it runs."""
    from spmd.numpy.shaping import _sizes, broadcast_to

    sizes = _sizes(shape, name)
    if np.ndim(value) == 0:
        value = _scalar_fill(value, dtype, name)
    if _tracing():
        result = broadcast_to(np.full(np.shape(value), value, dtype)[()], sizes)
        return _placed(result, out_sharding, name)
    if out_sharding is None:
        with allocating(name, sizes, dtype):
            return _put(np.full(sizes, value, dtype))

    def block(index: tuple[slice, ...]) -> np.ndarray:
        piece = value if np.ndim(value) == 0 else np.broadcast_to(value, sizes)[index]
        return np.full(_block_shape(index, sizes), piece, dtype)

    where = f"spmd.numpy.{name}(out_sharding=...)"
    sharding = as_sharding(out_sharding, where)
    layout_for(sharding, sizes, where)  # an error names this call, not the callback's
    with allocating(name, sizes, dtype):
        return make_array_from_callback(sizes, sharding, block)


def _scalar_fill(value: Any, dtype: Any, name: str) -> np.generic:
    """``value`` as ``numpy.full`` writes it into ``dtype``: cast as NumPy casts (300.7 into
    int8 wraps), refused where NumPy 2 refuses (a Python 300 into int8, "a" into int32)."""
    try:
        return np.full((), value, dtype)[()]
    except (OverflowError, TypeError, ValueError) as error:
        raise NUMPY_REFUSALS.get(type(error), SpmdValueError)(
            f"spmd.numpy.{name}: fill_value={value!r:.60} cannot become {np.dtype(dtype)}: "
            f"{error}. NumPy 2 refuses this too; give a fill that {np.dtype(dtype)} holds."
        ) from None


def _placed(result: Any, out_sharding: Any, name: str) -> Any:
    if out_sharding is None:
        return result
    return constrain(result, out_sharding, f"spmd.numpy.{name}(out_sharding=...)")


def _block_shape(index: tuple[slice, ...], sizes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(len(range(*s.indices(n))) for s, n in zip(index, sizes, strict=True))


@takes_device
def zeros(shape: Any, dtype: Any = float, *, out_sharding: Any = None):
    return _filled("zeros", shape, 0, check_dtype(dtype), out_sharding)


@takes_device
def ones(shape: Any, dtype: Any = float, *, out_sharding: Any = None):
    return _filled("ones", shape, 1, check_dtype(dtype), out_sharding)


@takes_device
def full(shape: Any, fill_value: Any, dtype: Any = None, *, out_sharding: Any = None):
    """``numpy.full``: ``fill_value`` (a scalar, or an array that broadcasts) over ``shape``.

    An spmd Array or traced fill becomes ``broadcast_to(asarray(fill_value, dtype), shape)``, as
    in JAX, so ``jit(lambda x: full((2, 3), x))`` works; the dtype is NumPy's (the fill's).
    """
    from spmd.core.trace import Tracer, aval_of
    from spmd.numpy.shaping import _sizes, astype, broadcast_to, reshape
    from spmd.runtime.array import Array

    dtype = None if dtype is None else check_dtype(dtype)
    if not isinstance(fill_value, (Array, Tracer)):
        if np.ndim(fill_value) == 0:
            fill = _scalar_fill(fill_value, dtype, "full")
            return _filled("full", shape, fill, fill.dtype, out_sharding)
        fill = host_array(fill_value, "spmd.numpy.full: fill_value")
        sizes = _sizes(shape, "full")
        kept = _fill_shape(aval_str(fill.shape, fill.dtype), fill.shape, sizes)
        fill_dtype = fill.dtype if dtype is None else dtype
        return _filled("full", sizes, fill.reshape(kept), fill_dtype, out_sharding)

    aval = aval_of(fill_value)
    if dtype is not None or aval.weak_type:  # NumPy's full gives a strong (concrete) dtype
        fill_value = astype(fill_value, aval.dtype if dtype is None else dtype)
    sizes = _sizes(shape, "full")
    kept = _fill_shape(str(aval), aval.shape, sizes)
    result = broadcast_to(reshape(fill_value, kept) if kept != aval.shape else fill_value, sizes)
    return _placed(result, out_sharding, "full")


def _fill_shape(fill: str, fill_shape: tuple[int, ...], sizes: tuple[int, ...]) -> tuple:
    """The shape ``full``'s fill_value takes: its own, less leading 1s beyond the result's
    rank (NumPy copies it into the result, which broadcasts it so). It must broadcast to
    ``sizes`` without widening them."""
    extra = max(len(fill_shape) - len(sizes), 0)
    kept = tuple(fill_shape[extra:])
    try:
        fits = np.broadcast_shapes(kept, sizes) == sizes and set(fill_shape[:extra]) <= {1}
    except ValueError:
        fits = False
    if not fits:
        raise ShapeError(
            f"spmd.numpy.full: fill_value {fill} does not fit shape {sizes}: it must broadcast "
            f"to the shape, as NumPy's full copies it into every position. Give a scalar, or "
            f"an array whose shape broadcasts to {sizes}."
        )
    return kept


@takes_device
def empty(shape: Any, dtype: Any = float, *, out_sharding: Any = None):
    return _filled("empty", shape, 0, check_dtype(dtype), out_sharding)


def _like(a: Any, dtype: Any, shape: Any) -> tuple[Any, np.dtype]:
    """The shape and dtype of a ``*_like`` result: ``a``'s unless given."""
    from spmd.core.trace import aval_of

    aval = aval_of(a)
    dtype = check_dtype(aval.dtype if dtype is None else dtype)
    return (aval.shape if shape is None else shape), dtype


@takes_device
def zeros_like(a: Any, dtype: Any = None, shape: Any = None, *, out_sharding: Any = None):
    """``numpy.zeros_like``: zeros in the shape and dtype of ``a`` (or those given).

    Example: ``zeros_like(x, shape=(2, 3))``."""
    sizes, dtype = _like(a, dtype, shape)
    return _filled("zeros_like", sizes, 0, dtype, out_sharding)


@takes_device
def ones_like(a: Any, dtype: Any = None, shape: Any = None, *, out_sharding: Any = None):
    """``numpy.ones_like``: ones in the shape and dtype of ``a`` (or those given).

    Example: ``ones_like(x, dtype=np.int8)``."""
    sizes, dtype = _like(a, dtype, shape)
    return _filled("ones_like", sizes, 1, dtype, out_sharding)


@takes_device
def empty_like(a: Any, dtype: Any = None, shape: Any = None, *, out_sharding: Any = None):
    """``numpy.empty_like``; its values are zeros, as in JAX. Example: ``empty_like(x)``."""
    sizes, dtype = _like(a, dtype, shape)
    return _filled("empty_like", sizes, 0, dtype, out_sharding)


@takes_device
def full_like(
    a: Any, fill_value: Any, dtype: Any = None, shape: Any = None, *, out_sharding: Any = None
):
    """``numpy.full_like``: ``fill_value`` (traced or not) in the shape and dtype of ``a`` (or
    those given). Example: ``full_like(x, 7, shape=(3,))``."""
    sizes, dtype = _like(a, dtype, shape)
    return full(sizes, fill_value, dtype, out_sharding=out_sharding)


@takes_device
@takes_out_sharding
def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None):
    """``numpy.arange``. Example: ``spmd.numpy.arange(32)``."""
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    dtype = None if dtype is None else check_dtype(dtype)
    if isinstance(step, (int, float, complex, np.number)) and step == 0:
        raise SpmdZeroDivisionError(
            f"spmd.numpy.arange({start!r}, {stop!r}, step={step!r}): step is 0, so the range "
            f"never reaches stop (NumPy divides by it). Give a nonzero step, or use "
            f"linspace(start, stop, num) for a given number of values."
        )
    try:
        iota = _tracing() and _iota_params(start, stop, step, dtype)
        if iota:
            return iota_p.bind(**iota)
        with allocating("arange"):
            return _put(np.arange(start, stop, step, dtype=dtype))
    except TypeError as error:
        call = f"arange({start!r}, {stop!r}, {step!r}"
        if dtype == np.bool_:
            raise SpmdTypeError(
                f"spmd.numpy.{call}, dtype=bool): a bool range holds at most 2 values "
                f"(False, True), as in NumPy, and this one has {_length(start, stop, step)}. "
                f"Make an integer range and compare it instead, e.g. arange(n) % 2 == 1, or "
                f"convert it with arange(n).astype(bool)."
            ) from None
        raise SpmdTypeError(
            f"spmd.numpy.{call}{'' if dtype is None else f', dtype={dtype}'}): "
            f"{str(error).rstrip('.')}. "
            f"start, stop and step must be Python or NumPy numbers."
        ) from None


def _iota_params(start: Any, stop: Any, step: Any, dtype: np.dtype | None) -> dict | None:
    """iota's parameters for ``arange(start, stop, step, dtype)``, if it gives integers,
    exactly, that its dtype holds (None: NumPy computes it)."""
    integers = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                   for v in (start, stop, step))  # fmt: skip
    if not integers or step == 0 or (dtype is not None and dtype.kind not in "iu"):
        return None
    start, step = int(start), int(step)
    size = len(range(start, int(stop), step))
    dtype = check_dtype(np.arange(start, start, step, dtype=dtype).dtype)  # NumPy's, x64 mode's
    info = np.iinfo(dtype)
    last = start + step * max(0, size - 1)
    if not (info.min <= min(start, last) and max(start, last) <= info.max):
        return None
    return {"size": size, "start": start, "step": step, "dtype": dtype}


def _length(start: Any, stop: Any, step: Any) -> str:
    """How many values ``arange(start, stop, step)`` has, as text ("more than 2" if unknown)."""
    try:
        return str(max(0, math.ceil((stop - start) / step)))
    except (TypeError, ValueError, ZeroDivisionError, OverflowError):
        return "more than 2"


@takes_device
@takes_out_sharding
def linspace(
    start: Any,
    stop: Any,
    num: int = 50,
    endpoint: bool = True,
    retstep: bool = False,
    dtype: Any = None,
    axis: int = 0,
):
    """``numpy.linspace``: ``num`` evenly spaced values from ``start`` to ``stop`` (arrays
    broadcast, the new axis at ``axis``); with ``retstep``, also the spacing, as an Array.

    Example: ``linspace(0.0, 1.0, 5, endpoint=False)``."""
    from spmd.core.axes import as_int
    from spmd.core.trace import Tracer
    from spmd.runtime.array import Array

    count = as_int(num, "spmd.numpy.linspace", "num")
    if count < 0:
        raise SpmdValueError(
            f"spmd.numpy.linspace: num={count} is negative; num is how many values to make "
            f"and must be >= 0."
        )
    dtype = None if dtype is None else check_dtype(dtype)
    axis = as_int(axis, "spmd.numpy.linspace", "axis")
    if any(isinstance(v, Tracer) for v in (start, stop)):
        values, step = _traced_linspace(start, stop, count, bool(endpoint), dtype, axis)
    else:
        start, stop = (np.asarray(v) if isinstance(v, Array) else v for v in (start, stop))
        with allocating("linspace"):
            values, step = np.linspace(start, stop, count, endpoint, True, dtype, axis)
            values, step = _put(values), _put(np.asarray(step))
    return (values, step) if retstep else values


def _traced_linspace(start: Any, stop: Any, num: int, endpoint: bool, dtype: Any, axis: int):
    """NumPy's linspace algorithm in spmd operations, for a traced ``start`` or ``stop``."""
    import spmd.numpy as snp
    from spmd.core.aval import result_dtype
    from spmd.core.trace import aval_of

    computed, _ = result_dtype(aval_of(start), aval_of(stop))
    if computed.kind not in "fc":
        computed = np.result_type(computed, np.float64)  # NumPy's ensure_inexact
    start, stop = snp.asarray(start).astype(computed), snp.asarray(stop).astype(computed)
    delta = stop - start
    rank = delta.ndim
    steps = snp.arange(num).astype(computed).reshape((-1,) + (1,) * rank)
    div = num - 1 if endpoint else num
    if div > 0:
        step = delta / div
        # if any step underflows to 0, NumPy scales all by delta after dividing
        values = snp.where(snp.any(step == 0), steps / div * delta, steps * step)
    else:
        step = snp.full((), np.nan)  # NumPy's step is the Python float nan here
        values = steps * delta
    values = values + start
    if endpoint and num > 1:
        values = snp.concatenate([values[:-1], snp.broadcast_to(stop, values.shape[1:])[None]])
    values = snp.moveaxis(values, 0, axis)
    if dtype is not None:
        values = (snp.floor(values) if dtype.kind in "iu" else values).astype(dtype)
    return values, step


@takes_device
@takes_out_sharding
def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = float):
    """``numpy.eye``: ones on the ``k``-th diagonal of an N × M matrix; inside a trace,
    ``row + k == column`` over two iotas, which each device computes for its block."""
    from spmd.core.axes import as_int
    from spmd.numpy.shaping import _sizes

    dtype = check_dtype(dtype)
    n, m = _sizes((N, N if M is None else M), "eye", "(N, M)")
    k = as_int(k, "spmd.numpy.eye", "k")
    if not _tracing():
        with allocating("eye", (n, m), dtype):
            return _put(np.eye(n, m, k, dtype=dtype))
    rows, columns = arange(int(k), int(k) + n), arange(m)
    return (rows[:, None] == columns[None, :]).astype(dtype)


__all__ = [
    "arange",
    "array",
    "asarray",
    "copy",
    "empty",
    "eye",
    "full",
    "full_like",
    "linspace",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
]
