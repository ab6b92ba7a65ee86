"""Statistics of spmd.numpy as compositions of its reductions, sorts and elementwise functions:
the NaN-ignoring reductions (``nansum`` ... ``nanvar``), ``median``/``percentile``/``quantile``,
``cov``/``corrcoef``, ``nan_to_num`` and the Array API's ``cumulative_sum``.

A quantile sorts along its axis (which gathers that axis when it is sharded, as ``explain()`` of
the sort says); the rest shard as the reductions and elementwise steps they are made of.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.axes import normalize_axis
from spmd.core.trace import Tracer, aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.numpy.creation import asarray


def _snp():
    import spmd.numpy as snp

    return snp


def _floating(a: Any) -> bool:
    return aval_of(a).dtype.kind in "fc"


def _filled(a: Any, value: Any) -> Any:
    """``a`` with its NaNs replaced by ``value`` (integers and booleans hold no NaN)."""
    snp = _snp()
    return snp.where(snp.isnan(a), np.asarray(value, aval_of(a).dtype), a) if _floating(a) else a


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``numpy.nansum``: ``sum`` counting NaN as zero."""
    a = asarray(a)
    return _snp().sum(_filled(a, 0), axis, dtype, out, keepdims, initial=initial, where=where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``numpy.nanprod``: ``prod`` counting NaN as one."""
    a = asarray(a)
    return _snp().prod(_filled(a, 1), axis, dtype, out, keepdims, initial=initial, where=where)


def _nan_extreme(name: str, a, axis, out, keepdims, initial, where):
    snp = _snp()
    a = asarray(a)
    reduce = getattr(snp, name[3:])
    if not _floating(a):
        return reduce(a, axis, out, keepdims, initial=initial, where=where)
    far = -np.inf if name == "nanmax" else np.inf
    if aval_of(a).dtype.kind == "c":  # the first or last complex number in lexicographic order
        far = complex(far, far)
    if initial is not None and not np.isnan(initial):
        # NumPy's fmin/fmax reduction starts from it: a slice of NaNs gives it (a NaN initial
        # is ignored as the NaNs are)
        return reduce(_filled(a, far), axis, out, keepdims, initial=initial, where=where)
    initial = None if initial is None else far
    result = reduce(_filled(a, far), axis, out, keepdims, initial=initial, where=where)
    every_nan = snp.all(snp.isnan(a), axis=axis, keepdims=keepdims, where=where)
    return snp.where(every_nan, np.asarray(np.nan, aval_of(a).dtype), result)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """``numpy.nanmax``: ``max`` ignoring NaN (NaN where a slice is all NaN)."""
    return _nan_extreme("nanmax", a, axis, out, keepdims, initial, where)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """``numpy.nanmin``: ``min`` ignoring NaN (NaN where a slice is all NaN)."""
    return _nan_extreme("nanmin", a, axis, out, keepdims, initial, where)


def _present(fn: str, a: Any, where: Any, dtype: Any) -> Any:
    """The elements a NaN-ignoring mean counts (``where``, as given, for integers and booleans,
    whose NaN functions are NumPy's plain ones)."""
    snp = _snp()
    if not _floating(a):
        return where
    if dtype is not None and np.dtype(dtype).kind not in "fc":
        raise SpmdTypeError(
            f"spmd.numpy.{fn}: a is {aval_of(a)} and dtype={np.dtype(dtype)}; for floating a "
            f"the dtype must be floating too (as NumPy's): pass a float dtype or none."
        )
    present = snp.logical_not(snp.isnan(a))
    return present if where is None else snp.logical_and(present, where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """``numpy.nanmean``: the mean of the elements that are not NaN (NaN for none)."""
    a = asarray(a)
    return _snp().mean(a, axis, dtype, out, keepdims, where=_present("nanmean", a, where, dtype))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None):  # fmt: skip
    """``numpy.nanvar``: ``var`` of the elements that are not NaN."""
    a = asarray(a)
    present = _present("nanvar", a, where, dtype)
    return _snp().var(a, axis, dtype, out, ddof, keepdims, mean=mean, correction=correction,
                      where=present)  # fmt: skip


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None):  # fmt: skip
    """``numpy.nanstd``: ``std`` of the elements that are not NaN."""
    a = asarray(a)
    present = _present("nanstd", a, where, dtype)
    return _snp().std(a, axis, dtype, out, ddof, keepdims, mean=mean, correction=correction,
                      where=present)  # fmt: skip


_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
             *, weights=None):  # fmt: skip
    """``numpy.quantile``: the ``q``-th quantiles (0 <= q <= 1) along ``axis`` by sorting;
    NaN where a slice holds NaN. Methods: linear, lower, higher, nearest, midpoint."""
    return _quantile("quantile", a, q, axis, out, method, keepdims, weights, 1)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None):  # fmt: skip
    """``numpy.percentile``: ``quantile`` with ``q`` in percent."""
    return _quantile("percentile", a, q, axis, out, method, keepdims, weights, 100)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``numpy.median``: the 0.5 quantile along ``axis``."""
    return _quantile("median", a, 0.5, axis, out, "linear", keepdims, None, 1)


def _quantile(fn, a, q, axis, out, method, keepdims, weights, scale):
    snp = _snp()
    if out is not None or weights is not None:
        what = "out=" if out is not None else "weights="
        raise SpmdValueError(f"spmd.numpy.{fn}: {what} is not supported; drop it.")
    if method not in _METHODS:
        raise SpmdValueError(f"spmd.numpy.{fn}: method={method!r}; pass one of {_METHODS}.")
    a = asarray(a)
    aval = aval_of(a)
    if isinstance(q, Tracer):
        raise SpmdTypeError(
            f"spmd.numpy.{fn}: q is a traced {aval_of(q)}; pass q as a Python number or list "
            f"or a NumPy array (mark it static under jit)."
        )
    take, dtype = _quantile_dtype(fn, aval, q, method)
    if dtype != aval.dtype and aval.dtype.kind in "iub":
        a = a.astype(dtype)  # integers interpolate in floats (NumPy's wrap in their own dtype)
    if axis is None:
        axes, kept = tuple(range(aval.ndim)), tuple(1 for _ in aval.shape)
        data = snp.reshape(a, (-1,))
    else:
        axes = (normalize_axis(axis, aval.ndim, f"spmd.numpy.{fn}", str(aval)),)
        kept = tuple(1 if i in axes else n for i, n in enumerate(aval.shape))
        data = snp.moveaxis(a, axes[0], -1)
    n = aval_of(data).shape[-1]
    if n == 0 and fn == "median":  # NumPy's median of nothing is NaN (its quantile raises)
        return snp.full(kept if keepdims else aval_of(data).shape[:-1], np.nan, dtype)
    if n == 0:
        raise ShapeError(f"spmd.numpy.{fn}: a is {aval}; the quantile of no elements is undefined.")
    q_host = np.asarray(q, dtype=np.float64) / scale
    if np.any((q_host < 0) | (q_host > 1)):
        raise SpmdValueError(f"spmd.numpy.{fn}: q={q!r} must lie in [0, {scale}].")
    ordered = snp.sort(data, axis=-1)
    position = q_host * (n - 1)
    below = np.floor(position).astype(np.intp)
    above = np.minimum(below + 1, n - 1)
    fraction = position - below
    if fn == "median":  # NumPy's: the mean of the middle one or two (the middle inf is inf)
        result = snp.mean(ordered[..., (n - 1) // 2 : n // 2 + 1], axis=-1)
    elif method in ("lower", "linear") and take:
        result = ordered[..., below]
    elif method == "higher":
        result = ordered[..., np.ceil(position).astype(np.intp)]
    elif method == "nearest":
        result = ordered[..., np.around(position).astype(np.intp)]
    else:  # NumPy's lerp: the gap in a's dtype, then in the result's
        t = np.where(fraction == 0, 0.0, 0.5) if method == "midpoint" else fraction
        t = np.asarray(t, dtype)
        low, high = ordered[..., below], ordered[..., above]
        gap = (high - low).astype(dtype)
        low, high = low.astype(dtype), high.astype(dtype)
        result = snp.where(t >= 0.5, high - gap * (1 - t), low + gap * t)
    if aval_of(data).dtype.kind == "f":
        has_nan = snp.any(snp.isnan(data), axis=-1)
        has_nan = snp.reshape(has_nan, aval_of(has_nan).shape + (1,) * q_host.ndim)
        result = snp.where(has_nan, np.asarray(np.nan, dtype), result)
    if q_host.ndim:
        batch = aval_of(result).ndim - q_host.ndim
        result = snp.moveaxis(
            result, tuple(range(batch, batch + q_host.ndim)), tuple(range(q_host.ndim))
        )
    if keepdims:
        result = snp.reshape(result, q_host.shape + kept)
    return result


def _quantile_dtype(fn: str, aval: Any, q: Any, method: str) -> tuple[bool, np.dtype]:
    """(whether the quantile picks elements, the result's dtype), as NumPy's: lower, higher,
    nearest (and linear at integer ``q``) pick elements of ``a``'s dtype; the others interpolate
    in ``a``'s and the fractions' dtype (float64, or ``q``'s float dtype; a Python number
    ``q`` is weak); a median averages (integers and booleans in float64)."""
    kind = aval.dtype.kind
    if kind == "c" and fn != "median":
        raise SpmdTypeError(f"spmd.numpy.{fn}: a is {aval}; it must hold real numbers.")
    q_dtype = np.asarray(q).dtype
    take = method in ("lower", "higher", "nearest") or (
        fn == "quantile" and method == "linear" and q_dtype.kind in "iu"
    )
    if take:
        return True, aval.dtype
    if fn == "median":
        return False, np.dtype(np.float64) if kind in "iub" else aval.dtype
    if kind == "b":
        raise SpmdTypeError(
            f"spmd.numpy.{fn}: a is {aval}; method={method!r} interpolates, which booleans "
            f"cannot (as in NumPy): cast a with astype(float), or pick method='lower'."
        )
    if type(q) in (int, float):
        return False, np.dtype(np.float64) if kind in "iu" else aval.dtype
    fractions = q_dtype if q_dtype.kind == "f" else np.dtype(np.float64)
    return False, np.result_type(aval.dtype, fractions)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):  # fmt: skip
    """``numpy.cov``: the covariance matrix of the variables in ``m``'s rows (columns with
    ``rowvar=False``), normalized by N - 1 (N with ``bias``, N - ``ddof`` with ``ddof``)."""
    snp = _snp()
    if fweights is not None or aweights is not None:
        raise SpmdValueError(
            "spmd.numpy.cov: fweights= and aweights= are not supported; drop them."
        )
    x = asarray(m)
    y = None if y is None else asarray(y)
    for name, v in (("m", x), ("y", y)):
        if v is not None and aval_of(v).ndim > 2:
            raise ShapeError(
                f"spmd.numpy.cov: {name} is {aval_of(v)}; it must have at most 2 dimensions."
            )
    kinds = [aval_of(v).dtype for v in (x, y) if v is not None]
    wanted = np.result_type(*kinds, np.float64) if dtype is None else np.dtype(dtype)
    # as NumPy's: m's columns are the variables (rowvar=False) unless m is 1-D; y's unless it
    # is a single row
    x = _variables(x, rowvar or aval_of(x).ndim == 1)
    if aval_of(x).shape[0] == 0:
        return snp.zeros((0, 0), np.float64)
    if y is not None:
        y = _variables(y, rowvar or aval_of(y).ndim < 2 or aval_of(y).shape[0] == 1)
        x = snp.concatenate([x, y], axis=0)
    x = x.astype(wanted)
    ddof = (0 if bias else 1) if ddof is None else ddof
    count = aval_of(x).shape[1]
    centered = x - snp.mean(x, axis=1, keepdims=True)
    product = snp.matmul(centered, snp.conjugate(centered).T)
    return snp.squeeze(product / np.asarray(max(count - ddof, 0), wanted).real)


def _variables(x: Any, rowvar: bool) -> Any:
    """NumPy's ``array(x, ndmin=2)``, transposed unless ``rowvar``."""
    x = _snp().reshape(x, (1, -1)) if aval_of(x).ndim < 2 else x
    return x if rowvar else x.T


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """``numpy.corrcoef``: the covariance matrix scaled to unit diagonal, clipped to [-1, 1]."""
    snp = _snp()
    c = cov(x, y, rowvar, dtype=dtype)
    if aval_of(c).ndim == 0:
        return c / c
    spread = snp.sqrt(snp.real(snp.diagonal(c)))
    c = c / spread[:, None] / spread[None, :]
    return c if aval_of(c).dtype.kind == "c" else snp.clip(c, -1, 1)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """``numpy.nan_to_num``: NaN -> ``nan``, +inf -> ``posinf`` (default the dtype's largest),
    -inf -> ``neginf`` (its most negative); integers and booleans unchanged."""
    snp = _snp()
    x = asarray(x)
    dtype = aval_of(x).dtype
    if dtype.kind == "c":
        return snp.real(nan_to_num(snp.real(x), copy, nan, posinf, neginf)) + 1j * nan_to_num(
            snp.imag(x), copy, nan, posinf, neginf
        )
    if dtype.kind != "f":
        return x
    info = np.finfo(dtype)
    big = np.asarray(info.max if posinf is None else posinf, dtype)
    small = np.asarray(info.min if neginf is None else neginf, dtype)
    x = snp.where(snp.isnan(x), np.asarray(nan, dtype), x)
    return snp.where(x == np.inf, big, snp.where(x == -np.inf, small, x))


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """The Array API's ``cumulative_sum``: ``cumsum`` along ``axis`` (optional for 1-D), with
    a leading zero when ``include_initial``."""
    snp = _snp()
    x = asarray(x)
    aval = aval_of(x)
    if aval.ndim == 0:  # as NumPy's: one element along one axis
        x = snp.reshape(x, (1,))
        aval = aval_of(x)
    if axis is None:
        if aval.ndim > 1:
            raise SpmdValueError(
                f"spmd.numpy.cumulative_sum: x is {aval}; pass axis= for arrays of more than "
                f"one dimension."
            )
        axis = 0
    axis = normalize_axis(axis, aval.ndim, "spmd.numpy.cumulative_sum", str(aval))
    total = snp.cumsum(x, axis=axis, dtype=dtype)
    if not include_initial:
        return total
    shape = tuple(1 if i == axis else n for i, n in enumerate(aval.shape))
    return snp.concatenate([snp.zeros(shape, aval_of(total).dtype), total], axis=axis)


__all__ = [
    "corrcoef",
    "cov",
    "cumulative_sum",
    "median",
    "nan_to_num",
    "nanmax",
    "nanmean",
    "nanmin",
    "nanprod",
    "nanstd",
    "nansum",
    "nanvar",
    "percentile",
    "quantile",
]
