"""Sorting of spmd.numpy: ``sort`` and ``argsort`` along one axis, always stably.

NumPy's ``kind`` (quicksort, mergesort, heapsort, stable) and ``stable`` choose an algorithm;
the sorted values are the same for every choice, and a stable order of equal elements is one
that any kind may give. So spmd checks them as NumPy does and then always sorts stably, which
makes ``argsort``'s answer for ties NumPy's ``kind="stable"`` answer.
"""

from __future__ import annotations

from typing import Any

from spmd.core.axes import normalize_axis
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.numpy.reductions import _one_axis
from spmd.prims.sorting import argsort_p, sort_p

_KINDS = "quicksort, mergesort, heapsort or stable"


def _check_options(fn: str, axis: Any, kind: Any, order: Any, stable: Any) -> None:
    """NumPy's checks of ``kind``, ``order`` and ``stable``, with spmd's errors."""
    if isinstance(axis, (tuple, list)):
        raise SpmdTypeError(
            f"spmd.numpy.{fn}: axis={axis!r} is a sequence, but {fn} sorts along one axis; "
            f"pass an int, or None to sort the flattened array."
        )
    if order is not None:
        raise SpmdValueError(
            f"spmd.numpy.{fn}: order={order!r} names fields of a structured array, and spmd "
            f"arrays have no fields; drop order to sort by value."
        )
    if kind is None:
        return
    if not isinstance(kind, str):
        raise SpmdTypeError(
            f"spmd.numpy.{fn}: kind={kind!r} must be a string ({_KINDS}) or None, not "
            f"{type(kind).__name__}."
        )
    if not kind or kind[0].lower() not in "qmhs":
        raise SpmdValueError(
            f"spmd.numpy.{fn}: kind={kind!r} is not a sort kind; pass {_KINDS}, or leave it "
            f"out (spmd always sorts stably)."
        )
    if stable is not None:
        raise SpmdValueError(
            f"spmd.numpy.{fn}: kind={kind!r} and stable={stable!r} were both given; NumPy "
            f"takes only one of them. Drop kind (spmd always sorts stably)."
        )


def sort(
    a: Any,
    axis: int | None = -1,
    kind: str | None = None,
    order: Any = None,
    *,
    stable=None,
    descending: bool = False,
):
    """``numpy.sort``: a sorted copy of ``a`` along ``axis`` (None: of the flattened array),
    NaN last; the Array API's ``descending=True`` reverses it. Example: ``sort(x, axis=0)``."""
    _check_options("sort", axis, kind, order, stable)
    if descending:
        from spmd.numpy.manipulation import flip

        ascending = sort(a, axis, kind, order, stable=stable)
        return flip(ascending, -1 if axis is None else axis)
    if axis is not None:
        aval = aval_of(a)
        if aval.ndim == 0:
            raise ShapeError(
                f"spmd.numpy.sort: axis={axis!r} is out of bounds for {aval}, which has no "
                f"axes; pass axis=None to sort it as a 1-element array."
            )
        axis = normalize_axis(axis, aval.ndim, "spmd.numpy.sort", str(aval))
    return sort_p.bind(a, axis=axis)


def argsort(
    a: Any,
    axis: int | None = -1,
    kind: str | None = None,
    order: Any = None,
    *,
    stable=None,
    descending: bool = False,
):
    """``numpy.argsort`` with ``kind="stable"``'s order: the indices that sort ``a`` along
    ``axis`` (None: the flattened array), equal elements in their original order, also with
    the Array API's ``descending=True``. Example: ``spmd.numpy.argsort(x, axis=-1)``."""
    _check_options("argsort", axis, kind, order, stable)
    axis = _one_axis("argsort", axis, a)
    if not descending:
        return argsort_p.bind(a, axis=axis)
    from spmd.numpy.manipulation import flip
    from spmd.numpy.shaping import reshape

    if axis is None or aval_of(a).ndim == 0:
        a, axis = reshape(a, (-1,)), 0
    # A stable ascending sort of the reversed array, reversed: ties keep their first order.
    last = aval_of(a).shape[axis] - 1
    return last - flip(argsort_p.bind(flip(a, axis), axis=axis), axis)


__all__ = ["argsort", "sort"]
