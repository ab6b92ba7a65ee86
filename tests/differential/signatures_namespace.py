"""The table, part 3: the Array API namespace's functions (spmd/numpy/manipulation.py, sets.py,
statistics.py, binning.py, products.py).

Where NumPy lacks a keyword JAX has (``unique(size=)``, ``bincount(length=)``) the call's NumPy
side is a formula over NumPy's own function (``_Reference``); functions whose result's shape
depends on the data (``unique`` without ``size=``, ``bincount`` without ``length=``) run in the
eager placements only, as in JAX.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tests.cases.sets_and_bins import numpy_unique
from tests.differential.calls import Sig, make_call
from tests.differential.compare import Call, magnitude
from tests.differential.generate import (
    ALL_DTYPES,
    a_dtype_keyword,
    arrays,
    axes,
    axis,
    broadcast_shapes,
    dtypes,
    operand,
    shapes,
)
from tests.differential.signatures import reduction

EAGER = ("numpy_in", "eager", "sharded")
REAL = tuple(d for d in ALL_DTYPES if d.kind != "c")
NUMERIC = tuple(d for d in ALL_DTYPES if d.kind in "iuf")
real_dtypes = st.sampled_from(REAL)


def _array(draw, dtype_strategy=dtypes, **shape_options) -> np.ndarray:
    return draw(arrays(draw(dtype_strategy), draw(shapes(**shape_options))))


def custom(label: str, numpy_fn, spmd_fn, *args, **options) -> Call:
    """A call whose NumPy side is ``numpy_fn(*args)`` and spmd side ``spmd_fn(snp, *args)``."""

    def fn(m, *xs):
        return numpy_fn(*xs) if m is np else spmd_fn(m, *xs)

    return Call(fn, list(args), label, **options)


# ------------------------------------------------------------------------ manipulation


@st.composite
def manipulation(draw, name: str):
    x = _array(draw)
    n = x.ndim
    if name == "permute_dims":
        order = [a - n if draw(st.booleans()) else a for a in draw(st.permutations(range(n)))]
        if draw(st.integers(0, 7)) == 0:
            order = order[1:] if order else [0]  # too few axes (or one a 0-d lacks)
        return make_call(name, x, tuple(order))
    if name == "flip":
        return make_call(name, x, **({"axis": draw(axes(n))} if draw(st.booleans()) else {}))
    if name == "matrix_transpose":
        return make_call(name, x)
    if name == "unstack":
        return make_call(name, x, **({"axis": draw(axis(n))} if draw(st.booleans()) else {}))
    if name in ("tril", "triu"):
        kw = {"k": draw(st.integers(-3, 3))} if draw(st.booleans()) else {}
        return make_call(name, x, **kw)
    if name == "rot90":
        kw = {"axes": (draw(axis(n)), draw(axis(n)))} if draw(st.booleans()) else {}
        return make_call(name, x, draw(st.integers(-5, 5)), **kw)
    if name == "array_split":
        if draw(st.booleans()):
            sections = draw(st.integers(0 if draw(st.integers(0, 9)) == 0 else 1, 5))
        else:
            sections = sorted(draw(st.lists(st.integers(-2, 6), max_size=3)))
        return make_call(name, x, sections, **({"axis": draw(axis(n))} if n else {}))
    raise AssertionError(name)


@st.composite
def concat(draw):
    base = draw(shapes(max_dims=3))
    ax = draw(st.none() | axis(len(base)))
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        shape = list(base)
        if ax is not None and -len(base) <= ax < len(base):
            shape[ax] = draw(st.integers(0, 3))
        parts.append(draw(arrays(draw(dtypes), tuple(shape))))
    return make_call("concat", parts, **({"axis": ax} if draw(st.booleans()) else {}))


@st.composite
def spread(draw, name: str):
    """broadcast_arrays(*xs) and meshgrid(*xs, indexing=, sparse=)."""
    if name == "broadcast_arrays":
        return make_call(name, *[draw(operand(s)) for s in draw(broadcast_shapes(3))])
    count = draw(st.integers(0, 3))
    xs = [_array(draw, max_dims=2, max_side=4) for _ in range(count)]
    kw = {}
    if draw(st.booleans()):
        kw["indexing"] = draw(st.sampled_from(["xy", "ij"]))
    if draw(st.booleans()):
        kw["sparse"] = draw(st.booleans())
    return make_call(name, *xs, **kw)


@st.composite
def take_along_axis(draw):
    x = _array(draw, min_dims=1)
    if draw(st.integers(0, 4)) == 0:
        length = x.size
        indices = draw(st.lists(st.integers(-length, length - 1), max_size=4)) if length else []
        return make_call("take_along_axis", x, np.array(indices, np.int64), None)
    ax = draw(axis(x.ndim, invalid=False))
    length = x.shape[ax]
    shape = [draw(st.sampled_from([1, n])) for n in x.shape]
    shape[ax] = draw(st.integers(0, 3)) if length else 0
    values = st.integers(-length, length - 1) if length else st.just(0)
    count = int(np.prod(shape))
    indices = np.array(draw(st.lists(values, min_size=count, max_size=count)), np.int64)
    kind = draw(st.sampled_from([np.int64, np.int32, np.uint8])) if length else np.int64
    indices = indices % max(length, 1) if np.dtype(kind).kind == "u" else indices
    return make_call("take_along_axis", x, indices.reshape(shape).astype(kind), ax)


# -------------------------------------------------------------------------------- sets


@st.composite
def unique(draw, sized: bool):
    x = _array(draw, max_dims=3)
    flags = {k: draw(st.booleans()) for k in ("return_index", "return_inverse", "return_counts")}
    size = draw(st.integers(0, 8)) if sized else None
    fill = None
    if sized and draw(st.booleans()):
        fill = draw(st.sampled_from(list(np.array([0, 1], x.dtype).tolist())))
    options = dict(flags, size=size) if sized else flags
    if fill is not None:
        options["fill_value"] = fill
    label = "unique[" + ",".join(k for k, v in options.items() if v is not None) + "]"
    return custom(
        label,
        lambda a: numpy_unique(a, size, fill, *flags.values()),
        lambda m, a: m.unique(a, **options),
        x,
    )


def numpy_unique_all(x):
    """The Array API's unique_all, sorted (NumPy 2.4's may come unsorted): np.unique with
    every NaN distinct."""
    x = np.asarray(x)
    values, index, inverse, counts = np.unique(
        x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False
    )
    return values, index, inverse.reshape(x.shape), counts


ARRAY_API_UNIQUE = {
    "unique_values": lambda x: numpy_unique_all(x)[0],
    "unique_counts": lambda x: tuple(numpy_unique_all(x)[i] for i in (0, 3)),
    "unique_inverse": lambda x: tuple(numpy_unique_all(x)[i] for i in (0, 2)),
    "unique_all": numpy_unique_all,
}


@st.composite
def array_api_unique(draw, name: str):
    x = _array(draw)
    return custom(name, ARRAY_API_UNIQUE[name], lambda m, a: getattr(m, name)(a), x)


@st.composite
def isin(draw):
    element = draw(operand(draw(shapes(max_dims=3))))
    tests = draw(operand(draw(shapes(max_dims=2))))
    kw = {}
    if draw(st.booleans()):
        kw["invert"] = draw(st.booleans())
    if draw(st.integers(0, 3)) == 0:
        kw["assume_unique"] = False
    return make_call("isin", element, tests, **kw)


# ----------------------------------------------------------------------------- binning


@st.composite
def searchsorted(draw):
    dtype = draw(real_dtypes)
    a = np.sort(draw(arrays(dtype, draw(shapes(min_dims=1, max_dims=1)))))
    if draw(st.integers(0, 9)) == 0:
        a = a.reshape(1, -1)  # not 1-D: both refuse
    v = draw(operand(draw(shapes(max_dims=2)), dtype if draw(st.booleans()) else draw(real_dtypes)))
    kw = {"side": draw(st.sampled_from(["left", "right"]))} if draw(st.booleans()) else {}
    if a.ndim == 1 and draw(st.integers(0, 3)) == 0:
        shuffled = draw(st.permutations(a.tolist()))
        a = np.array(shuffled, dtype)
        kw["sorter"] = np.argsort(a, kind="stable")
    return make_call("searchsorted", a, v, **kw)


def _bincount_takes(dtype) -> bool:
    """NumPy before 2.1 refuses uint64 (no safe cast to intp); spmd follows today's NumPy."""
    try:
        np.bincount(np.zeros(0, dtype))
    except TypeError:
        return False
    return True


_BINCOUNT_DTYPES = [d for d in ALL_DTYPES if d.kind in "biu" and _bincount_takes(d)]


@st.composite
def bincount(draw, with_length: bool):
    dtype = draw(st.sampled_from(_BINCOUNT_DTYPES))
    x = draw(arrays(dtype, draw(shapes(min_dims=1, max_dims=1)), edges=False))
    if dtype.kind == "i" and (with_length or draw(st.integers(0, 7)) > 0):
        x = np.abs(x)  # negative values NumPy refuses (and JAX's length= drops) now and then
    if draw(st.integers(0, 11)) == 0:
        x = x.reshape(1, -1)
    weights = None
    if draw(st.booleans()):
        weights = draw(arrays(draw(real_dtypes), x.shape, edges=False))
    minlength = draw(st.integers(0, 9))
    if not with_length:
        kw = {"minlength": minlength} if draw(st.booleans()) else {}
        args = (x, weights) if weights is not None else (x,)
        return make_call("bincount", *args, **kw)
    length = draw(st.integers(0, 9))

    def numpy_fn(x, *w):  # JAX's length=: values at or past it count in no bin
        return np.bincount(x, *w, minlength=max(length, minlength))[:length]

    def spmd_fn(m, x, *w):
        return m.bincount(x, *w, minlength=minlength, length=length)

    args = (x, weights) if weights is not None else (x,)
    return custom(f"bincount[length={length}]", numpy_fn, spmd_fn, *args)


@st.composite
def histogram(draw):
    a = draw(arrays(draw(real_dtypes), draw(shapes(max_dims=2)), edges=False))
    kw = {}
    if draw(st.booleans()):
        kw["bins"] = draw(st.integers(1, 5))
    elif draw(st.booleans()):
        kw["bins"] = np.unique(np.array(draw(st.lists(st.sampled_from([-3.0, -1, 0, 0.5, 2, 6]),
                                                      min_size=2, max_size=4))))  # fmt: skip
    if draw(st.booleans()) and not isinstance(kw.get("bins"), np.ndarray):
        low = draw(st.sampled_from([-4.0, -1.0, 0.0]))
        kw["range"] = (low, low + draw(st.sampled_from([0.0, 1.0, 5.0])))
    if draw(st.booleans()):  # NumPy's cumulative path for edges cannot sum booleans: left out
        kinds = real_dtypes.filter(
            lambda d: d.kind != "b" or "bins" not in kw or np.ndim(kw["bins"]) == 0
        )
        kw["weights"] = draw(arrays(draw(kinds), a.shape, edges=False))
    if draw(st.integers(0, 3)) == 0:
        kw["density"] = draw(st.booleans())
    return make_call("histogram", a, terms=max(a.size, 1), scale=max(a.size, 1) * 8, **kw)


@st.composite
def interp(draw):
    x = draw(arrays(draw(real_dtypes), draw(shapes(max_dims=2))))
    n = draw(st.integers(1, 5))
    xp = np.array(sorted(draw(st.lists(st.sampled_from([-3.0, -1, 0, 0.5, 1, 2.5, 6]),
                                       min_size=n, max_size=n, unique=True))))  # fmt: skip
    xp = xp.astype(draw(st.sampled_from([np.float64, np.float32, np.int64]))) if xp.size else xp
    fp = draw(arrays(draw(real_dtypes), xp.shape, edges=False))
    kw = {}
    for key in ("left", "right"):
        if draw(st.integers(0, 3)) == 0:
            kw[key] = draw(st.sampled_from([-1.5, 0.0, 7.0]))
    scale = 4 * magnitude(x, fp) * (magnitude(fp) + 1)
    return make_call("interp", x, np.unique(xp), fp, scale=scale, **kw)


# ----------------------------------------------------------------------------- products


@st.composite
def product(draw, name: str):
    dtype = draw(dtypes)
    k = draw(st.integers(0, 4))
    if name in ("vecdot", "inner"):
        first, second = draw(broadcast_shapes(2, max_dims=3))
        first, second = (*first, k), (*second, k)
        if draw(st.integers(0, 9)) == 0:
            second = (*second[:-1], k + 1)
    elif name == "kron":
        first, second = draw(shapes(max_dims=3, max_side=3)), draw(shapes(max_dims=3, max_side=3))
    else:  # convolve, correlate
        first, second = (draw(st.integers(0, 5)),), (draw(st.integers(0, 5)),)
    a = draw(arrays(dtype, first))
    b = draw(arrays(dtype if draw(st.booleans()) else draw(dtypes), second))
    if name in (
        "inner",
        "convolve",
        "correlate",
    ):  # NumPy's BLAS paths skip zero factors at NaN and inf
        a, b = (np.where(np.isfinite(v), v, 1).astype(v.dtype) for v in (a, b))
    terms = max(k, first[0] if name in ("convolve", "correlate") else 1, 1)
    scale = terms * magnitude(a) * magnitude(b)
    kw = {}
    if name == "vecdot" and draw(st.booleans()):
        kw["axis"] = draw(axis(max(len(first), len(second))))
    if name in ("convolve", "correlate") and draw(st.booleans()):
        kw["mode"] = draw(st.sampled_from(["full", "same", "valid"]))
    return make_call(name, a, b, terms=terms, scale=scale, **kw)


# --------------------------------------------------------------------------- statistics

_NAN_BASE = {"nansum": "sum", "nanprod": "prod", "nanmean": "mean", "nanvar": "var",
             "nanstd": "std", "nanmax": "max", "nanmin": "min"}  # fmt: skip


def nan_reduction(name: str, **options):
    """The reduction's own strategy, calling the NaN-ignoring function instead."""

    def renamed(call: Call) -> Call:
        call.label = call.label.replace(_NAN_BASE[name], name, 1)
        inner = call.fn
        call.fn = lambda m, *xs: inner(_Renamed(m, _NAN_BASE[name], name), *xs)
        return call

    return reduction(_NAN_BASE[name], **options).map(renamed)


class _Renamed:
    """``m`` with ``m.<base>`` answered by ``m.<name>``."""

    def __init__(self, m, base: str, name: str):
        self._m, self._base, self._name = m, base, name

    def __getattr__(self, attribute: str):
        return getattr(self._m, self._name if attribute == self._base else attribute)


@st.composite
def quantile(draw, name: str):
    dtype = draw(st.sampled_from(ALL_DTYPES))
    # NumPy interpolates integers in their own dtype, which wraps (the median of int8 [-128, 0]
    # is 64): no extremes
    x = draw(arrays(dtype, draw(shapes(max_dims=3)), edges=dtype.kind not in "iu"))
    kw = {}
    if draw(st.booleans()):
        kw["axis"] = draw(st.none() | axis(x.ndim))
    if draw(st.booleans()):
        kw["keepdims"] = draw(st.booleans())
    args = [x]
    if name != "median":
        top = 100 if name == "percentile" else 1
        qs = st.sampled_from([0, 0.25, 0.5, 0.6, 1]).map(lambda q: q * top)
        q = draw(st.one_of(qs, st.lists(qs, min_size=1, max_size=3)))  # a list: static q
        args.append(q)
        if draw(st.booleans()):
            kw["method"] = draw(st.sampled_from(["linear", "lower", "higher", "nearest",
                                                 "midpoint"]))  # fmt: skip
    return make_call(name, *args, terms=4, scale=4 * magnitude(x), **kw)


_NUMPY_2_1 = np.lib.NumpyVersion(np.__version__) >= "2.1.0"


@st.composite
def covariance(draw, name: str):
    dtype = draw(st.sampled_from(NUMERIC))
    m = draw(arrays(dtype, draw(shapes(min_dims=1, max_dims=2, min_side=1, max_side=4))))
    args = [m]
    if draw(st.integers(0, 3)) == 0:
        args.append(draw(arrays(dtype, m.shape, edges=False)))
    kw = {"rowvar": draw(st.booleans())} if draw(st.booleans()) else {}
    if not _NUMPY_2_1 and kw.get("rowvar") is False and m.shape[0] == 1:
        kw["rowvar"] = True  # NumPy 2.0 read one row with rowvar=False as NumPy 2.1 does not
    if name == "cov" and draw(st.booleans()):
        kw[draw(st.sampled_from(["bias", "ddof"]))] = draw(st.sampled_from([0, 1]))
    terms = max(m.size, 1)
    top = magnitude(*args)
    scale = 0.0 if name == "corrcoef" else terms * top**2
    return make_call(name, *args, terms=4 * terms, scale=scale, **kw)


@st.composite
def nan_to_num(draw):
    x = _array(draw)
    kw = {}
    for key in ("nan", "posinf", "neginf"):
        if draw(st.integers(0, 2)) == 0:
            kw[key] = draw(st.sampled_from([0.0, -1.0, 2.5, 100.0]))
    return make_call("nan_to_num", x, **kw)


@st.composite
def cumulative_sum(draw):
    x = _array(draw, max_dims=3)
    kw = {}
    if x.ndim != 1 or draw(st.booleans()):
        kw["axis"] = draw(axis(x.ndim)) if x.ndim != 1 or draw(st.booleans()) else None
    if draw(st.integers(0, 3)) == 0:
        kw["dtype"] = draw(a_dtype_keyword())
    if draw(st.booleans()):
        kw["include_initial"] = draw(st.booleans())
    return make_call("cumulative_sum", x, terms=max(x.size, 1), **kw)


def _sig(name, strategy, *args, modes=None, form="", **kwargs) -> Sig:
    extra = {"modes": modes} if modes else {}
    return Sig(name, lambda: strategy(*args, **kwargs), form=form, **extra)


MANIPULATION = ("permute_dims", "flip", "matrix_transpose", "unstack", "tril", "triu", "rot90",
                "array_split")  # fmt: skip
SIGS = [
    *[_sig(n, manipulation, n) for n in MANIPULATION],
    _sig("concat", concat),
    *[_sig(n, spread, n) for n in ("broadcast_arrays", "meshgrid")],
    _sig("take_along_axis", take_along_axis),
    # how many distinct values there are sets the result's shape: eager placements only, but
    # with JAX's size= every placement
    _sig("unique", unique, False, modes=EAGER),
    _sig("unique", unique, True, form="size"),
    *[_sig(n, array_api_unique, n, modes=EAGER) for n in ARRAY_API_UNIQUE],
    _sig("isin", isin),
    _sig("searchsorted", searchsorted),
    _sig("bincount", bincount, False, modes=EAGER),
    _sig("bincount", bincount, True, form="length"),
    _sig("histogram", histogram),
    _sig("interp", interp),
    *[_sig(n, product, n) for n in ("vecdot", "inner", "kron", "convolve", "correlate")],
    _sig("nansum", nan_reduction, "nansum", dtype_kw=True, initial=True),
    _sig("nanprod", nan_reduction, "nanprod", dtype_kw=True, initial=True),
    _sig("nanmean", nan_reduction, "nanmean", dtype_kw=True),
    _sig("nanvar", nan_reduction, "nanvar", dtype_kw=True, ddof=True),
    _sig("nanstd", nan_reduction, "nanstd", dtype_kw=True, ddof=True),
    *[_sig(n, nan_reduction, n, initial=True) for n in ("nanmax", "nanmin")],
    *[_sig(n, quantile, n) for n in ("median", "quantile", "percentile")],
    *[_sig(n, covariance, n) for n in ("cov", "corrcoef")],
    _sig("nan_to_num", nan_to_num),
    _sig("cumulative_sum", cumulative_sum),
]
