"""Set functions of spmd.numpy: ``unique`` (NumPy's and JAX's, with ``size=``), the Array API's
``unique_values``, ``unique_counts``, ``unique_inverse`` and ``unique_all``, and ``isin``.

How many distinct values an array holds depends on its data, so the result has no static shape:
eagerly the values are gathered and NumPy's answer is placed back on the default device; inside
a trace JAX's ``size=`` fixes the length, and the answer is a composition of a stable sort (which
gathers the flattened array, as ``explain()`` of its sort says), comparisons and gathers.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from spmd.core.axes import as_int
from spmd.core.trace import Tracer, aval_of
from spmd.errors import SpmdTypeError, SpmdValueError
from spmd.numpy.creation import asarray


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def _host_unique(x: np.ndarray, axis: Any, equal_nan: bool, size: int | None, fill: Any) -> tuple:
    values, index, inverse, counts = np.unique(
        x, return_index=True, return_inverse=True, return_counts=True, axis=axis,
        equal_nan=equal_nan,
    )  # fmt: skip
    if size is not None:
        pad = max(0, size - len(values))
        fill_value = (values[0] if len(values) else 0) if fill is None else fill
        values = np.concatenate([values[:size], np.full(pad, fill_value, values.dtype)])
        index = np.concatenate([index[:size], np.zeros(pad, index.dtype)])
        counts = np.concatenate([counts[:size], np.zeros(pad, counts.dtype)])
    if axis is None:
        inverse = inverse.reshape(x.shape)
    return values, index.astype(np.intp), inverse.astype(np.intp), counts.astype(np.intp)


def _traced_unique(x: Any, equal_nan: bool, size: int, fill: Any) -> tuple:
    """The first ``size`` distinct values of a traced ``x`` (sorted), the index of each one's
    first occurrence, each element's group and each group's count: a stable sort, the
    positions where the sorted values change, and gathers."""
    import spmd.numpy as snp

    aval = aval_of(x)
    flat = snp.reshape(x, (-1,))
    n = aval.size
    if n == 0:
        zeros = snp.zeros(size, np.intp)
        filler = 0 if fill is None else fill
        return snp.full(size, filler, aval.dtype), zeros, snp.reshape(zeros[:0], aval.shape), zeros
    order = snp.argsort(flat, kind="stable")
    ordered = flat[order]
    changes = ordered[1:] != ordered[:-1]
    if equal_nan and aval.dtype.kind in "fc":
        changes = changes & ~(snp.isnan(ordered[1:]) & snp.isnan(ordered[:-1]))
    first = snp.concatenate([snp.ones(1, bool), changes])
    group = snp.cumsum(first.astype(np.intp)) - 1
    distinct = snp.sum(first.astype(np.intp))
    starts = snp.argsort(~first, kind="stable").astype(np.intp)
    starts = snp.concatenate([starts, snp.full(size + 1, n, np.intp)])[: size + 1]
    found = snp.arange(size + 1) < distinct
    ends = snp.where(found[1:], starts[1:], n)
    starts, found = snp.where(found[:size], starts[:size], 0), found[:size]
    if fill is None:
        fill_value = ordered[0]
    else:  # a NumPy constant of the trace (or the traced fill itself)
        fill_value = (
            fill.astype(aval.dtype)
            if isinstance(fill, Tracer)
            else np.asarray(fill).astype(aval.dtype)
        )
    values = snp.where(found, ordered[starts], fill_value)
    index = snp.where(found, order[starts], 0)
    counts = snp.where(found, ends - starts, 0)
    inverse = snp.reshape(group[snp.argsort(order, kind="stable")], aval.shape)
    return values, index, inverse, counts


def _unique(fn: str, ar: Any, axis: Any, equal_nan: bool, size: Any, fill_value: Any) -> tuple:
    """(values, first indices, inverse indices, counts) as spmd arrays."""
    import spmd.numpy as snp

    if size is not None:
        size = as_int(size, f"spmd.numpy.{fn}", "size")
        if size < 0:
            raise SpmdValueError(f"spmd.numpy.{fn}: size={size} must be >= 0.")
    if not isinstance(ar, Tracer):
        found = _host_unique(np.asarray(ar), axis, equal_nan, size, fill_value)
        return tuple(snp.asarray(f) for f in found)
    aval = aval_of(ar)
    if size is None:
        raise SpmdTypeError(
            f"spmd.numpy.{fn}: ar is a traced {aval}, so how many distinct values it holds "
            f"is not known while tracing and the result has no static shape (JAX raises "
            f"ConcretizationTypeError here). Pass size= (and fill_value=) for a fixed number "
            f"of values, or call it outside jit."
        )
    if axis is not None:
        raise SpmdValueError(
            f"spmd.numpy.{fn}: axis={axis!r} with a traced ar is not supported; call it "
            f"outside jit, or pass axis=None for the distinct elements."
        )
    return _traced_unique(ar, equal_nan, size, fill_value)


def unique(
    ar: Any,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: int | None = None,
    *,
    equal_nan: bool = True,
    size: int | None = None,
    fill_value: Any = None,
    sorted: bool = True,
):
    """``numpy.unique``, sorted, with JAX's ``size=`` and ``fill_value=`` (needed under jit:
    the first ``size`` distinct values, padded with ``fill_value``, by default the smallest).
    Example: ``values, counts = unique(x, return_counts=True)``."""
    ar = asarray(ar)
    values, index, inverse, counts = _unique("unique", ar, axis, equal_nan, size, fill_value)
    extra = [r for r, wanted in ((index, return_index), (inverse, return_inverse),
                                 (counts, return_counts)) if wanted]  # fmt: skip
    return (values, *extra) if extra else values


def unique_values(x: Any, /) -> Any:
    """The Array API's ``unique_values``: the distinct elements, sorted; each NaN distinct."""
    return _unique("unique_values", asarray(x), None, False, None, None)[0]


def unique_counts(x: Any, /) -> UniqueCountsResult:
    """The Array API's ``unique_counts``: (values, counts)."""
    values, _, _, counts = _unique("unique_counts", asarray(x), None, False, None, None)
    return UniqueCountsResult(values, counts)


def unique_inverse(x: Any, /) -> UniqueInverseResult:
    """The Array API's ``unique_inverse``: (values, inverse_indices of ``x``'s shape)."""
    values, _, inverse, _ = _unique("unique_inverse", asarray(x), None, False, None, None)
    return UniqueInverseResult(values, inverse)


def unique_all(x: Any, /) -> UniqueAllResult:
    """The Array API's ``unique_all``: (values, indices, inverse_indices, counts)."""
    return UniqueAllResult(*_unique("unique_all", asarray(x), None, False, None, None))


def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False,
         *, kind: str | None = None) -> Any:  # fmt: skip
    """``numpy.isin``: whether each element of ``element`` is among ``test_elements``
    (compared pairwise; NaN is in nothing). Example: ``isin(x, [1, 2])``."""
    import spmd.numpy as snp

    element, tests = asarray(element), snp.reshape(asarray(test_elements), (-1,))
    if kind not in (None, "sort", "table"):
        raise SpmdValueError(f"spmd.numpy.isin: kind={kind!r}; pass None, 'sort' or 'table'.")
    found = snp.any(snp.expand_dims(element, -1) == tests, axis=-1)
    return snp.logical_not(found) if invert else found


# unique_all/_counts/_inverse/_values: their results' shapes depend on the data (no size=),
# so they run eagerly only; jit refuses them with the fix.
__all__ = [
    "isin",
    "unique",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
]
