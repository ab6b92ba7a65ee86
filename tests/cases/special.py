"""The case table's spmd.scipy.special and spmd.scipy.stats.norm rows: SciPy computes the
reference in float64, cast to the float dtype NumPy's float ufuncs give the inputs' result type
(float16 for bool, float64 for int32 and int64; a Python scalar, such as norm's default loc=0,
promotes weakly: a bool x with it is int64, so float64)."""

from __future__ import annotations

import types

import numpy as np
import scipy.special as sp
import scipy.stats as st

import spmd
import spmd.scipy.special
import spmd.scipy.stats
from spmd import ShapeError, SpmdTypeError
from tests.cases.nn import NUMPY_NN
from tests.cases.table import BOOL, FLOATS, INTS, NUMBERS, _label, add, unary


def _float64(fn):
    """SciPy's ``fn`` on float64 copies, its result in the float dtype of the inputs."""

    def reference(*xs, **kwargs):
        # Python scalars stay weak (NumPy 2's result_type): float32 with 2.0 is float32
        dtype = np.result_type(*(x if type(x) in (int, float) else np.asarray(x) for x in xs))
        xs = [np.asarray(x) for x in xs]
        dtype = dtype if dtype.kind == "f" else np.promote_types(dtype, np.float16)
        out = fn(*(x.astype(np.float64) for x in xs), **kwargs)
        if isinstance(out, tuple):
            return tuple(np.asarray(o).astype(dtype) for o in out)
        return np.asarray(out).astype(dtype)

    return reference


def _softmax_family(name):
    """SciPy's softmax or log_softmax, which refuses bools (``x - max``) itself; on an empty
    array, where SciPy's max fails, NumPy's formula: an empty result, as JAX's and spmd's."""

    def reference(x, axis=None):
        if np.asarray(x).dtype == np.bool_:
            return getattr(sp, name)(x, axis=axis)  # raises TypeError
        if np.size(x) == 0:
            return getattr(NUMPY_NN, name)(x, axis)
        return _float64(getattr(sp, name))(x, axis=axis)

    return reference


def _norm(name):
    """SciPy's norm.name with loc=0 and scale=1 (Python ints) by default, as spmd's."""
    reference = _float64(getattr(st.norm, name))
    return lambda x, loc=0, scale=1: reference(x, loc, scale)


_NAMES = ("erf", "erfc", "erfinv", "gammaln", "digamma", "expit", "logit", "ndtr", "ndtri",
          "log_ndtr", "xlogy", "xlog1py")  # fmt: skip
SCIPY_SPECIAL = types.SimpleNamespace(
    **{name: _float64(getattr(sp, name)) for name in _NAMES},
    logsumexp=lambda a, axis=None, b=None, keepdims=False, return_sign=False: (
        NUMPY_NN.logsumexp(a, axis, keepdims)  # SciPy's fails on empty arrays
        if b is None
        else _float64(lambda a, b: sp.logsumexp(a, axis, b, keepdims, return_sign))(a, b)
    ),
    polygamma=lambda n, x: _float64(lambda v: sp.polygamma(n, v))(x),
    softmax=_softmax_family("softmax"),
    log_softmax=_softmax_family("log_softmax"),
)
SCIPY_NORM = types.SimpleNamespace(
    **{name: _norm(name) for name in ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf")}
)


def _special_module(m):
    return SCIPY_SPECIAL if m is np else spmd.scipy.special


def special_call(name, *args, **kwargs):
    def fn(m, *xs):
        return getattr(_special_module(m), name)(*xs, *args, **kwargs)

    return fn


def norm_call(name, **kwargs):
    def fn(m, *xs):
        module = SCIPY_NORM if m is np else spmd.scipy.stats.norm
        return getattr(module, name)(*xs, **kwargs)

    return fn


def _special():
    kw = {"family": "nn"}  # FAMILIES (tests/cases/table.py) has no "special": the partition
    # and task tests take rows by those families
    shapes = unary(((), (0,), (7,), (3, 5), (2, 3, 4)))
    pos = {"domain": "positive"}
    for name, options in (("erf", {}), ("erfc", {}), ("erfinv", {"domain": "unit"}),
                          ("gammaln", pos), ("digamma", pos), ("expit", {}),
                          ("ndtr", {}), ("log_ndtr", {})):  # fmt: skip
        add("scipy.special." + name, special_call(name), *shapes, **options, **kw)
    for name in ("erf", "erfc", "ndtr", "expit"):
        add("scipy.special." + name, special_call(name), ((3, 4),), label="special",
            dtypes=FLOATS, domain="special", **kw)  # fmt: skip
    for n in (0, 1, 2):
        add("scipy.special.polygamma", lambda m, x, n=n: _special_module(m).polygamma(n, x),
            *shapes, label=_label(n), **pos, **kw)  # fmt: skip
    add("scipy.special.polygamma", lambda m, x: _special_module(m).polygamma(1, x), ((3,),),
        label="complex", dtypes=(np.complex128,), error=SpmdTypeError, numpy_too=False,
        **kw)  # fmt: skip
    # logit's and ndtri's domain is (0, 1): "unit" inputs squashed into it
    for name in ("logit", "ndtri"):
        add("scipy.special." + name, lambda m, x, name=name: special_call(name)(m, (x + 1.5) / 3),
            *shapes, dtypes=FLOATS, **kw)  # fmt: skip
        add("scipy.special." + name, special_call(name), ((7,),), label="bool,int",
            dtypes=BOOL + INTS, domain="unit", **kw)  # fmt: skip
    for name in ("xlogy", "xlog1py"):
        add("scipy.special." + name, special_call(name), ((5,), (5,)), ((2, 3), (3,)),
            ((2, 0), (0,)), ((), ()), ((), (3,)), **pos, **kw)  # fmt: skip
        add("scipy.special." + name, lambda m, x, y, name=name: special_call(name)(m, x - 3, y),
            ((4, 3), (4, 3)), label="zeros", dtypes=FLOATS, **pos, **kw)  # fmt: skip
    for axis in (None, 0, -1, (0, 2)):
        for keepdims in (False, True):
            add("scipy.special.logsumexp", special_call("logsumexp", axis=axis,
                keepdims=keepdims), ((2, 3, 4),), ((2, 0, 3),),
                label=_label(axis=axis, keepdims=keepdims), **kw)  # fmt: skip
    add("scipy.special.logsumexp", lambda m, a, b: _special_module(m).logsumexp(a, -1, b=b),
        ((3, 4), (3, 4)), ((3, 4), (4,)), label="b", dtypes=FLOATS, **pos, **kw)  # fmt: skip
    add("scipy.special.logsumexp", lambda m, a, b: _special_module(m).logsumexp(
        a, 0, b=b - 3.5, return_sign=True), ((3, 4), (3, 4)), label="b,return_sign",
        dtypes=FLOATS, **pos, **kw)  # fmt: skip
    for name in ("softmax", "log_softmax"):
        for axis in (None, 1):
            add("scipy.special." + name, special_call(name, axis=axis), ((2, 3, 4),),
                *([((3,),), ((),), ((0,),)] if axis is None else [((2, 0, 3),)]),
                label=_label(axis=axis), dtypes=NUMBERS, **kw)  # fmt: skip
        add("scipy.special." + name, special_call(name), ((3,),), ((),), label="bool",
            dtypes=BOOL, error=SpmdTypeError, **kw)  # fmt: skip
        add("scipy.special." + name, special_call(name, axis=1), ((3,),), label="axis=1",
            dtypes=FLOATS, error=ShapeError, **kw)  # fmt: skip
    for name in ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"):
        add("scipy.stats.norm." + name, norm_call(name), *shapes, **kw)
        add("scipy.stats.norm." + name, lambda m, x, loc, scale, name=name: norm_call(name)(
            m, x, loc, scale), ((2, 3), (3,), (2, 1)), label="loc,scale", dtypes=FLOATS,
            **pos, **kw)  # fmt: skip
    add("scipy.stats.norm.ppf", lambda m, q: norm_call("ppf")(m, (q + 1.5) / 3), *shapes,
        dtypes=FLOATS, **kw)  # fmt: skip
    add("scipy.stats.norm.ppf", norm_call("ppf"), ((7,),), label="bool,int", dtypes=BOOL + INTS,
        domain="unit", **kw)  # fmt: skip
    add("scipy.stats.norm.ppf", lambda m, q, loc: norm_call("ppf")(m, (q + 1.5) / 3, loc, 2.0),
        ((2, 3), (3,)), label="loc,scale=2", dtypes=FLOATS, **kw)  # fmt: skip
