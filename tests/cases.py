"""The case table: every public spmd.numpy and spmd.nn function, with the inputs it is checked on.

Each row (a :class:`Case`) is plain data: ``fn(m, *arrays)`` runs with ``m = numpy`` (the oracle)
or ``m = spmd.numpy``, keyword arguments baked in; ``shapes`` gives one shape per array argument;
``dtypes`` the dtypes the row runs on; ``domain`` what values the inputs hold. A row with
``error`` says spmd raises that error (eagerly and at trace time) for an input NumPy rejects too.

``tests/test_cases.py`` runs every row eagerly and under ``spmd.jit``; ``make_inputs`` and
``assert_matches`` are here so other tests (sharded runs, random programs) can reuse the rows.
"""

from __future__ import annotations

import math
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import spmd
from spmd import ShapeError, SpmdIndexError, SpmdTypeError

BOOL = (np.bool_,)
INTS = (np.int32, np.int64)
FLOATS = (np.float32, np.float64)
NUMBERS = (*INTS, *FLOATS)
DTYPES = (np.bool_, *NUMBERS)
NO_DTYPE = (None,)  # the dtypes of a row without array inputs
DOMAINS = ("any", "positive", "nonzero", "unit", "special")
FAMILIES = ("elementwise", "reduction", "shape", "contraction", "indexing", "creation", "nn")
SHAPES = ((), (0,), (5,), (2, 3), (2, 0, 3), (3, 4, 2))  # scalar, size 0, 1-D, 2-D, 3-D


@dataclass(frozen=True)
class Case:
    """One call checked against NumPy: ``fn(m, *make_inputs(case, dtype, seed))``."""

    name: str  # the public function: "sum", "nn.softmax", "_getitem" (x[index])
    fn: Callable = field(compare=False, repr=False)  # fn(m, *arrays), m = numpy or spmd.numpy
    shapes: tuple[tuple[int, ...], ...]  # one shape per data input (made with the run's dtype)
    label: str = ""  # the baked-in arguments, readable: "axis=0,keepdims"
    family: str = ""
    dtypes: tuple = DTYPES  # the dtypes the data inputs take, one run each
    domain: str = "any"  # the data inputs' values, see make_input
    input_dtypes: tuple = ()  # per data input: a fixed dtype instead of the run's (None keeps it)
    indices: tuple = ()  # integer index arrays (nested lists), passed after the data inputs
    error: type | None = None  # spmd raises this eagerly and under jit
    numpy_too: bool = True  # with error: NumPy rejects the input too (False: spmd is stricter)
    values: bool = True  # False: compare dtype and shape only (np.empty's values are garbage)

    @property
    def id(self) -> str:
        """``name[label]@shapes``, e.g. ``sum[axis=0,keepdims]@2x3`` (unique in CASES)."""
        shapes = ",".join("x".join(map(str, s)) if s else "()" for s in self.shapes)
        if self.input_dtypes:
            shapes += ":" + ",".join(np.dtype(d).name if d else "*" for d in self.input_dtypes)
        if self.indices:
            shapes += ":idx" + ",".join("x".join(map(str, np.shape(i))) for i in self.indices)
        return f"{self.name}[{self.label}]@{shapes}"

    @property
    def arity(self) -> int:
        return len(self.shapes) + len(self.indices)


# ---------------------------------------------------------------------------------- inputs


def make_input(shape: tuple[int, ...], dtype, seed: int, domain: str = "any") -> np.ndarray:
    """Reproducible values of ``dtype``: small integers (and two decimals for floats).

    any: [-5, 6); positive: [1, 6.5); nonzero: any without zeros; unit: [-1, 1];
    special: any with NaN, +-inf and -0.0 mixed in (floats only).
    """
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}")
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    if domain == "unit":
        if dtype.kind in "iu":
            return rng.integers(0 if dtype.kind == "u" else -1, 2, size=shape).astype(dtype)
        values = rng.integers(-100, 101, size=shape) / 100
    else:
        low = 1 if domain == "positive" else 0 if dtype.kind == "u" else -5
        values = rng.integers(low, 6, size=shape)
        if domain == "nonzero":
            values = np.where(values == 0, 3, values)
        if dtype.kind in "fc":
            values = values + rng.integers(0, 100, size=shape) / (
                200 if domain == "positive" else 100
            )
    if dtype.kind == "c":
        values = values + 1j * rng.integers(-3, 4, size=shape)
    if domain == "special" and dtype.kind in "fc":
        specials = np.array([np.nan, np.inf, -np.inf, -0.0])
        values = np.where(rng.random(size=shape) < 0.4, rng.choice(specials, size=shape), values)
    return np.asarray(values).astype(dtype)


def make_inputs(case: Case, dtype, seed: int = 0) -> list[np.ndarray]:
    """The row's arrays for one run: data inputs of ``dtype`` (or input_dtypes), then indices."""
    dtypes = case.input_dtypes or (None,) * len(case.shapes)
    data = [
        make_input(shape, fixed or dtype, seed + i, case.domain)
        for i, (shape, fixed) in enumerate(zip(case.shapes, dtypes, strict=True))
    ]
    return data + [np.asarray(index, dtype=np.intp) for index in case.indices]


# ---------------------------------------------------------------------------- comparing

RTOL = {"e": 1e-3, "f": 1e-5, "d": 1e-12, "F": 1e-5, "D": 1e-12}  # by dtype.char


def numpy_result(case: Case, inputs):
    """What NumPy's ``fn`` gives (warnings about NaN, inf and empty slices silenced)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return case.fn(np, *inputs)


def assert_matches(result, expected, values: bool = True, scale: float = 1) -> None:
    """``result`` (an spmd Array, or a list/tuple of them) equals NumPy's ``expected``.

    Same type of container and length, dtype and shape; bools and integers exactly, floats to
    their dtype's rounding (times ``scale``) with NaN in the same places.
    """
    if isinstance(expected, list | tuple):
        assert isinstance(result, list | tuple), f"expected a sequence, got {type(result)}"
        assert len(result) == len(expected), f"{len(result)} results, NumPy has {len(expected)}"
        for r, e in zip(result, expected, strict=True):
            assert_matches(r, e, values, scale)
        return
    assert isinstance(result, spmd.Array), f"expected an spmd Array, got {type(result)}"
    expected = np.asarray(expected)
    got, want = f"{result.dtype}{list(result.shape)}", f"{expected.dtype}{list(expected.shape)}"
    assert got == want, f"got {got}, NumPy gives {want}"
    if not values:
        return
    got = np.asarray(result)
    if expected.dtype.kind in "fc":
        tol = RTOL[expected.dtype.char] * scale
        if not np.allclose(got, expected, rtol=tol, atol=tol, equal_nan=True):  # fast path first
            np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, equal_nan=True)
            raise AssertionError(f"not close to NumPy's (rtol=atol={tol}):\n{got}\n{expected}")
    elif not np.array_equal(got, expected):
        np.testing.assert_array_equal(got, expected)
        raise AssertionError(f"differs from NumPy's:\n{got}\n{expected}")


# ------------------------------------------------------------------------- the table

CASES: list[Case] = []


def _fmt(value) -> str:
    if isinstance(value, type | np.dtype):
        return np.dtype(value).name
    if isinstance(value, str):
        return value
    return repr(value).replace(" ", "")


def _label(*args, **kwargs) -> str:
    """``_label(2, axis=0, keepdims=True)`` -> ``2,axis=0,keepdims``."""
    parts = [_fmt(a) for a in args]
    parts += [k if v is True else f"{k}={_fmt(v)}" for k, v in kwargs.items()]
    return ",".join(parts)


def add(name, fn, *shape_sets, family, label="", **options) -> None:
    """A row per shape set (each one shape per data input) sharing ``fn``."""
    for shapes in shape_sets:
        shapes = tuple(tuple(s) for s in shapes)
        CASES.append(Case(name, fn, shapes, label=label, family=family, **options))


def call(name, *args, **kwargs) -> Callable:
    """fn(m, *xs) = m.name(*xs, *args, **kwargs)."""
    return lambda m, *xs: getattr(m, name)(*xs, *args, **kwargs)


def call_listed(name, *args, **kwargs) -> Callable:
    """fn(m, *xs) = m.name([*xs], *args, **kwargs), for concatenate and stack."""
    return lambda m, *xs: getattr(m, name)(list(xs), *args, **kwargs)


def unary(shapes):
    return [(s,) for s in shapes]


SPECIAL = {"label": "special", "dtypes": FLOATS, "domain": "special"}  # NaN, inf on floats


def rejects(dtypes, error=SpmdTypeError, label="rejects"):
    """The options of a row that raises ``error`` on ``dtypes``, as NumPy does."""
    return {"label": label, "dtypes": dtypes, "error": error}


# ------------------------------------------------------------------------ elementwise

UNARY = {  # name: (domain, dtypes NumPy rejects)
    "negative": ("any", BOOL),
    "positive": ("any", BOOL),
    "abs": ("any", ()),
    "absolute": ("any", ()),
    "sign": ("any", BOOL),
    "sqrt": ("positive", ()),
    "exp": ("any", ()),
    "log": ("positive", ()),
    "log1p": ("positive", ()),
    "expm1": ("any", ()),
    "sin": ("any", ()),
    "cos": ("any", ()),
    "tan": ("any", ()),
    "tanh": ("any", ()),
    "arcsin": ("unit", ()),
    "arccos": ("unit", ()),
    "arctan": ("any", ()),
    "floor": ("any", ()),
    "ceil": ("any", ()),
    "isnan": ("any", ()),
    "isfinite": ("any", ()),
    "logical_not": ("any", ()),
    "invert": ("any", FLOATS),
}
BINARY = {
    "add": ("any", ()),
    "subtract": ("any", BOOL),
    "multiply": ("any", ()),
    "true_divide": ("nonzero", ()),
    "divide": ("nonzero", ()),
    "floor_divide": ("nonzero", ()),
    "remainder": ("nonzero", ()),
    "mod": ("nonzero", ()),
    "power": ("positive", ()),
    "arctan2": ("any", ()),
    "maximum": ("any", ()),
    "minimum": ("any", ()),
    "logical_and": ("any", ()),
    "logical_or": ("any", ()),
    "bitwise_and": ("any", FLOATS),
    "bitwise_or": ("any", FLOATS),
    "bitwise_xor": ("any", FLOATS),
    "equal": ("any", ()),
    "not_equal": ("any", ()),
    "less": ("any", ()),
    "less_equal": ("any", ()),
    "greater": ("any", ()),
    "greater_equal": ("any", ()),
}
BINARY_SHAPES = (
    ((), ()),
    ((0,), (0,)),
    ((5,), (5,)),
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((3, 1), (1, 4)),
    ((), (2, 3)),
    ((2, 1, 3), (4, 1)),
    ((0, 3), (1, 3)),
    ((2, 0, 3), ()),
)


def _keep(dtypes, rejected):
    return tuple(d for d in dtypes if d not in rejected)


def _elementwise():
    ew = {"family": "elementwise"}
    for name, (domain, rejected) in UNARY.items():
        add(name, call(name), *unary(SHAPES), dtypes=_keep(DTYPES, rejected), domain=domain, **ew)
        if _keep(FLOATS, rejected):
            add(name, call(name), ((3, 4),), **SPECIAL, **ew)
        if domain != "any":  # outside the domain: NaN and inf in NumPy's places
            add(name, call(name), ((2, 3),), label="any", dtypes=_keep(DTYPES, rejected), **ew)
        if rejected:
            add(name, call(name), ((2, 3),), **rejects(rejected), **ew)
    for name, (domain, rejected) in BINARY.items():
        ok = _keep(DTYPES, rejected)
        add(name, call(name), *BINARY_SHAPES, dtypes=ok, domain=domain, **ew)
        if _keep(FLOATS, rejected):
            add(name, call(name), ((3, 4), (3, 4)), **SPECIAL, **ew)
        if domain != "any":  # ints to negative integer powers are an error NumPy finds in the data
            any_dtypes = FLOATS if name == "power" else ok
            add(name, call(name), ((2, 3), (2, 3)), label="any", dtypes=any_dtypes, **ew)
        if rejected:
            add(name, call(name), ((2, 3), (3,)), **rejects(rejected), **ew)
        for other in (np.int32, np.float32):  # mixed dtypes promote as in NumPy 2
            if name.startswith("bitwise") and other == np.float32:
                continue
            mixed = {"dtypes": ok, "domain": domain, "input_dtypes": (None, other)}
            add(name, call(name), ((2, 3), (3,)), **mixed, **ew)
        add(name, call(name), ((3,), (4,)), dtypes=ok, error=ShapeError, **ew)

    # Python scalars are weak: they take the array's dtype where NumPy 2 says so.
    scalars = [
        ("add", lambda m, x: m.add(x, 2), "x,2", DTYPES),
        ("add", lambda m, x: 1.5 + x, "1.5+x", DTYPES),
        ("subtract", lambda m, x: 2 - x, "2-x", NUMBERS),
        ("multiply", lambda m, x: m.multiply(x, 2.5), "x,2.5", DTYPES),
        ("multiply", lambda m, x: x * True, "x*True", DTYPES),
        ("true_divide", lambda m, x: x / 4, "x/4", DTYPES),
        ("floor_divide", lambda m, x: x // 3, "x//3", DTYPES),
        ("remainder", lambda m, x: x % 3, "x%3", DTYPES),
        ("power", lambda m, x: x**2, "x**2", DTYPES),
        ("power", lambda m, x: m.power(x, 0.5), "x,0.5", DTYPES),
        ("less", lambda m, x: x < 1.5, "x<1.5", DTYPES),
        ("equal", lambda m, x: x == 1, "x==1", DTYPES),
        ("maximum", lambda m, x: m.maximum(x, 0), "x,0", DTYPES),
        ("bitwise_and", lambda m, x: x & 3, "x&3", (np.bool_, *INTS)),
        ("negative", lambda m, x: -x, "-x", NUMBERS),
        ("invert", lambda m, x: ~x, "~x", (np.bool_, *INTS)),
        ("abs", lambda m, x: abs(x), "abs(x)", DTYPES),
    ]
    for name, fn, label, dtypes in scalars:
        add(name, fn, ((2, 3),), ((),), label=label, dtypes=dtypes, domain="positive", **ew)
    add("add", lambda m, x, y: x + y, ((2, 3), (3,)), label="x+y", **ew)
    add("subtract", lambda m, x, y: x - y, ((2, 3), (3,)), label="x-y", dtypes=NUMBERS, **ew)
    add("true_divide", lambda m, x, y: x / y, ((2, 3), (3,)), label="x/y", domain="nonzero", **ew)
    add("less_equal", lambda m, x, y: x <= y, ((2, 3), (3,)), label="x<=y", **ew)
    add(
        "bitwise_xor",
        lambda m, x, y: x ^ y,
        ((2, 3), (3,)),
        label="x^y",
        dtypes=(np.bool_, *INTS),
        **ew,
    )

    for name in ("round", "around"):
        for decimals in (0, 1, -1):
            add(
                name,
                call(name, decimals),
                *unary(SHAPES[:4]),
                label=_label(decimals),
                dtypes=NUMBERS,
                **ew,
            )
        add(name, call(name), ((3, 4),), **SPECIAL, **ew)
        add(name, call(name), ((2, 3),), label="bool", dtypes=BOOL, **ew)  # float16, as NumPy
    add("round", call("round", 1), ((2, 3),), **rejects(BOOL, label="1,rejects"), **ew)
    for args in [(-1, 4), (None, 2), (0.5, None), (3, 1)]:
        add("clip", call("clip", *args), *unary(SHAPES), label=_label(*args), **ew)
    add("clip", call("clip", -1, 1), ((3, 4),), **SPECIAL, **ew)
    add("clip", call("clip"), ((2, 3), (3,), (2, 1)), ((), (), ()), label="arrays", **ew)
    add(
        "clip",
        call("clip", 0, 2),
        ((2, 3),),
        label="0,2",
        dtypes=(np.uint8, np.int8, np.float16),
        **ew,
    )
    add(
        "where",
        call("where"),
        ((2, 3), (2, 3), (2, 3)),
        ((0,), (0,), (0,)),
        ((), (), ()),
        ((2, 1), (3,), ()),
        ((3, 1, 2), (1, 4, 1), (2,)),
        input_dtypes=(np.bool_, None, None),
        **ew,
    )
    add("where", lambda m, x, y: m.where(x > 0, x, y), ((2, 3), (3,)), label="x>0,x,y", **ew)
    add(
        "where",
        lambda m, x, y: m.where(x > 0, x, y),
        ((2, 3), (3,)),
        label="x>0,x,y",
        input_dtypes=(None, np.float32),
        **ew,
    )
    add("where", lambda m, x: m.where(x > 1, 1.5, 0), ((2, 3),), ((),), label="x>1,1.5,0", **ew)
    where = {"input_dtypes": (np.bool_, None, None), "error": ShapeError}
    add("where", call("where"), ((2, 3), (3, 4), (3, 4)), **where, **ew)


# ------------------------------------------------------------------------- reductions

REDUCE = ("sum", "mean", "prod", "max", "min", "all", "any", "std", "var", "amax", "amin")
REDUCE_AXES = (None, 0, -1, 1, (0, -1), (), 3)
ONE_AXIS = (None, 0, -1, 1, 2)
EMPTY_RAISES = ("max", "min", "amax", "amin", "argmax", "argmin")  # no identity to return


def _reduction_error(name, shape, axis):
    """(error, numpy_too) for reducing ``shape`` over ``axis``; (None, True) when it works."""
    ndim = len(shape)
    axes = tuple(range(ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis
    if ndim == 0 and isinstance(axis, int) and name not in ("argmax", "argmin", "cumsum"):
        # NumPy's legacy quirk: np.sum(0-d, axis=0) works (np.mean's does not); spmd, like
        # np.mean and JAX, says a 0-d array has no axis 0.
        return ShapeError, axis not in (0, -1)
    if ndim == 0 and isinstance(axis, int):  # argmax, argmin, cumsum treat 0-d as 1-d
        return (ShapeError, True) if axis not in (0, -1) else (None, True)
    if any(not -ndim <= a < ndim for a in axes) or len({a % ndim for a in axes}) < len(axes):
        return ShapeError, True  # out of range, or named twice
    if name in EMPTY_RAISES and (0 in shape if axis is None else any(shape[a] == 0 for a in axes)):
        return ShapeError, True
    return None, True


def _reductions():
    red = {"family": "reduction"}
    for name in (*REDUCE, "argmax", "argmin", "cumsum"):
        single = name in ("argmax", "argmin", "cumsum")
        for axis in ONE_AXIS if single else REDUCE_AXES:
            for keepdims in (None,) if name == "cumsum" else (False, True):
                kwargs = (
                    {"axis": axis} if keepdims is None else {"axis": axis, "keepdims": keepdims}
                )
                label = _label(**{k: v for k, v in kwargs.items() if v is not False})
                for shape in SHAPES:
                    error, numpy_too = _reduction_error(name, shape, axis)
                    expect = {"error": error, "numpy_too": numpy_too}
                    add(name, call(name, **kwargs), (shape,), label=label, **expect, **red)
        add(name, call(name, axis=-1), ((3, 4),), **{**SPECIAL, "label": "special,axis=-1"}, **red)
    for name in ("sum", "prod", "mean", "cumsum"):
        for dtype in (np.bool_, np.int32, np.float32, np.float64, np.complex64):
            for axis in (None, 1) if name == "cumsum" else (None, 1, (0, 2)):
                add(
                    name,
                    call(name, axis=axis, dtype=dtype),
                    ((3, 4, 2),),
                    label=_label(axis=axis, dtype=dtype),
                    **red,
                )
    for name in ("std", "var"):
        for ddof in (1, 2, 5):
            for axis in (None, 0, (1, 2), -1):
                add(
                    name,
                    call(name, axis=axis, ddof=ddof),
                    ((3, 4, 2),),
                    label=_label(axis=axis, ddof=ddof),
                    dtypes=(*DTYPES, np.complex64),
                    **red,
                )
        add(name, call(name), ((3, 4),), label="complex", dtypes=(np.complex64,), **red)
    for name in ("max", "min", "amax", "amin"):
        add(
            name,
            call(name, axis=1, initial=-1.0),
            ((2, 0, 3),),
            ((2, 4, 3),),
            label="axis=1,initial=-1.0",
            dtypes=NUMBERS,
            **red,
        )
    add("sum", call("sum"), ((3, 4),), label="uint8", dtypes=(np.uint8, np.float16), **red)
    add("mean", call("mean"), ((3, 4),), label="float16", dtypes=(np.float16,), **red)
    for name in ("sum", "mean", "max", "argmax", "cumsum", "std", "prod", "all"):
        add(
            name,
            lambda m, x, name=name: getattr(x, name)(axis=0),
            ((3, 4),),
            label="method,axis=0",
            **red,
        )


# ------------------------------------------------------------------------------ shape

SHAPE_ROWS = [  # (function, input shape, positional arguments after the array, keywords)
    ("reshape", (2, 3), ((3, 2),), {}),
    ("reshape", (2, 3), ((-1,),), {}),
    ("reshape", (2, 3), (6,), {}),
    ("reshape", (2, 3, 4), ((4, -1, 2),), {}),
    ("reshape", (2, 3, 4), ((-1, 4),), {}),
    ("reshape", (), ((1, 1),), {}),
    ("reshape", (1, 1), ((),), {}),
    ("reshape", (0, 3), ((-1, 5),), {}),
    ("reshape", (2, 0), ((0, 7),), {}),
    ("ravel", (2, 3), (), {}),
    ("ravel", (2, 3, 4), (), {}),
    ("ravel", (), (), {}),
    ("ravel", (0, 2), (), {}),
    ("transpose", (2, 3), (), {}),
    ("transpose", (2, 3, 4), (), {}),
    ("transpose", (2, 3, 4), ((2, 0, 1),), {}),
    ("transpose", (2, 3, 4), ((-1, 0, -2),), {}),
    ("transpose", (), (), {}),
    ("transpose", (0, 3), (), {}),
    ("swapaxes", (2, 3, 4), (0, -1), {}),
    ("swapaxes", (2, 3), (1, 1), {}),
    ("swapaxes", (0, 3), (-2, 1), {}),
    ("moveaxis", (2, 3, 4), (0, -1), {}),
    ("moveaxis", (2, 3, 4), ((0, 1), (-1, 0)), {}),
    ("moveaxis", (2, 3, 4, 5), ([0, 2], [3, 0]), {}),
    ("moveaxis", (0, 3), (0, 1), {}),
    ("squeeze", (1, 3, 1), (), {}),
    ("squeeze", (1, 3, 1), (-1,), {}),
    ("squeeze", (1, 3, 1), ((0, 2),), {}),
    ("squeeze", (), (), {}),
    ("squeeze", (1, 0, 1), (), {"axis": 0}),
    ("expand_dims", (2, 3), (0,), {}),
    ("expand_dims", (2, 3), (-1,), {}),
    ("expand_dims", (2, 3), ((0, -1),), {}),
    ("expand_dims", (2, 3), ((1, 3),), {}),
    ("expand_dims", (), (0,), {}),
    ("expand_dims", (0,), ((1, 2),), {}),
    ("broadcast_to", (3,), ((2, 3),), {}),
    ("broadcast_to", (2, 1), ((2, 0),), {}),
    ("broadcast_to", (), (4,), {}),
    ("broadcast_to", (1, 3), ((2, 2, 3),), {}),
    ("broadcast_to", (), ((),), {}),
    ("split", (6,), (3,), {}),
    ("split", (6, 4), (2,), {"axis": -1}),
    ("split", (5,), ([3, 1],), {}),
    ("split", (5,), ([-2, 10],), {}),
    ("split", (0, 3), (3,), {}),
    ("split", (6,), ([],), {}),
    ("split", (4, 6), ([1, 4],), {"axis": 1}),
    ("split", (2, 6, 2), (3,), {"axis": 1}),
    ("tile", (3,), (2,), {}),
    ("tile", (2, 3), ((2, 1),), {}),
    ("tile", (2, 3), ((2, 1, 2),), {}),
    ("tile", (2, 3, 4), (2,), {}),
    ("tile", (), (3,), {}),
    ("tile", (), ((),), {}),
    ("tile", (2, 3), (0,), {}),
    ("tile", (2, 0), ((3, 2),), {}),
    ("repeat", (3,), (2,), {}),
    ("repeat", (2, 3), (2,), {}),
    ("repeat", (2, 3), (2,), {"axis": 0}),
    ("repeat", (2, 3), ([1, 0, 2],), {"axis": -1}),
    ("repeat", (2, 3), ([2],), {"axis": 1}),
    ("repeat", (2, 3, 2), (3,), {"axis": 1}),
    ("repeat", (), (3,), {}),
    ("repeat", (0, 2), (3,), {"axis": 0}),
    ("repeat", (2, 3), (0,), {}),
]
SHAPE_ERRORS = [  # (function, input shape, positional arguments, keywords, error)
    ("reshape", (2, 3), ((4, 2),), {}, ShapeError),
    ("reshape", (6,), ((-1, -1),), {}, ShapeError),
    ("transpose", (2, 3), ((0,),), {}, ShapeError),
    ("swapaxes", (2, 3), (3, 0), {}, ShapeError),
    ("moveaxis", (2, 3, 4), ([0, 1], [1]), {}, ShapeError),
    ("squeeze", (2, 1), (0,), {}, ShapeError),
    ("expand_dims", (2, 3), (3,), {}, ShapeError),
    ("broadcast_to", (2,), ((3,),), {}, ShapeError),
    ("swapaxes", (), (0, 0), {}, ShapeError),
    ("moveaxis", (), (0, 0), {}, ShapeError),
    ("split", (5,), (2,), {}, ShapeError),
    ("split", (), (1,), {}, ShapeError),
    ("tile", (3,), (-1,), {}, ShapeError),
    ("repeat", (3,), ([1, 2],), {"axis": 0}, ShapeError),
    ("repeat", (3,), (2,), {"axis": 1}, ShapeError),
]
JOIN_ROWS = [  # (function, input shapes, axis)
    ("concatenate", [(2, 3), (4, 3)], 0),
    ("concatenate", [(2, 3), (2, 1)], -1),
    ("concatenate", [(2, 0), (2, 3), (2, 2)], 1),
    ("concatenate", [(0, 3), (0, 3)], 0),
    ("concatenate", [(3,)], 0),
    ("concatenate", [(2, 3, 2), (2, 1, 2)], 1),
    ("concatenate", [(2, 3), (3,)], None),
    ("concatenate", [(), (2,)], None),
    ("stack", [(2, 3), (2, 3)], 0),
    ("stack", [(2, 3), (2, 3), (2, 3)], -1),
    ("stack", [(2, 3), (2, 3)], 1),
    ("stack", [(), ()], 0),
    ("stack", [(0, 2), (0, 2)], -2),
    ("stack", [(2, 3, 2)], 3),
]
JOIN_ERRORS = [
    ("concatenate", [(2, 2), (2, 3)], 0),
    ("concatenate", [(2, 2), (2,)], 0),
    ("concatenate", [(), ()], 0),
    ("concatenate", [(2,), (2,)], 1),
    ("stack", [(2,), (3,)], 0),
]
ASTYPE_TARGETS = (*DTYPES, np.uint8, np.int8, np.float16, np.complex64)


def _shape():
    sh = {"family": "shape"}
    for name, shape, args, kwargs in SHAPE_ROWS:
        add(name, call(name, *args, **kwargs), (shape,), label=_label(*args, **kwargs), **sh)
    for name, shape, args, kwargs, error in SHAPE_ERRORS:
        add(
            name,
            call(name, *args, **kwargs),
            (shape,),
            label=_label(*args, **kwargs),
            error=error,
            **sh,
        )
    for name, shapes, axis in JOIN_ROWS:
        add(name, call_listed(name, axis=axis), shapes, label=_label(axis=axis), **sh)
    for name, shapes, axis in JOIN_ERRORS:
        add(
            name,
            call_listed(name, axis=axis),
            shapes,
            label=_label(axis=axis),
            error=ShapeError,
            **sh,
        )
    for name, shapes in (("concatenate", [(2, 3), (4, 3), (1, 3)]), ("stack", [(2, 3)] * 3)):
        for other in DTYPES:  # mixed dtypes promote as in NumPy 2
            add(
                name,
                call_listed(name),
                shapes,
                label="mixed",
                input_dtypes=(None, other, None),
                **sh,
            )
        for first, other in ((np.int8, np.uint8), (np.uint64, np.int64)):
            add(
                name,
                call_listed(name),
                shapes,
                label="mixed," + _label(first),
                dtypes=(first,),
                input_dtypes=(None, other, None),
                **sh,
            )
    for target in ASTYPE_TARGETS:
        add(
            "astype",
            call("astype", target),
            *unary([(), (0,), (2, 3), (3, 1, 2)]),
            label=_label(target),
            **sh,
        )
        add(
            "astype",
            lambda m, x, t=target: x.astype(t),
            ((2, 3),),
            label="method," + _label(target),
            **sh,
        )
    add(
        "astype",
        call("astype", np.int32),
        ((3, 4),),
        label="special,int32",
        dtypes=FLOATS,
        domain="special",
        **sh,
    )
    add("reshape", lambda m, x: x.reshape(2, -1), ((2, 3, 4),), label="method,2,-1", **sh)
    add("transpose", lambda m, x: x.T, ((2, 3, 4),), ((),), label=".T", **sh)


# ------------------------------------------------------------------------ contraction

MATMUL_SHAPES = [
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((2, 2, 3), (2, 3, 4)),
    ((1, 2, 3), (5, 3, 4)),
    ((4, 2, 3), (3, 2)),
    ((3,), (2, 3, 4)),
    ((2, 1, 2, 3), (4, 3, 1)),
    ((0, 3), (3, 4)),
    ((2, 0), (0, 4)),
    ((0, 2, 3), (1, 3, 0)),
]
MIXED = (
    (np.int32, np.float32),
    (np.bool_, np.int32),
    (np.int8, np.uint8),
    (np.float32, np.float64),
)
DOT_SHAPES = [
    ((), ()),
    ((), (3,)),
    ((2, 3), ()),
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((2, 3, 4), (5, 4, 2)),
    ((2, 0), (0, 3)),
    ((4,), (2, 4, 3)),
]
TENSORDOT = [
    ((2, 3, 4), (3, 4, 5), 2),
    ((2, 3), (3, 4), 1),
    ((2, 3), (4,), 0),
    ((3, 4, 2), (4, 5, 3), ([0, 1], [2, 0])),
    ((3, 4, 2), (4, 5, 3), ((-3, -2), (-1, 0))),
    ((2, 3), (3, 2), ([0, 1], [1, 0])),
    ((0, 3), (3, 0), 1),
    ((2, 3), (2, 3), 2),
    ((), (), 0),
]
EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ijk->kji", [(2, 3, 4)]),
    ("ba", [(2, 3)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(0,), (0,)]),
    ("i,i->i", [(1,), (3,)]),
    ("i,i->i", [(1,), (0,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ij,kj->ik", [(2, 3), (4, 3)]),
    ("ij,j->i", [(2, 3), (3,)]),
    ("ijk,ik->j", [(2, 3, 4), (2, 4)]),
    ("ii,ij->j", [(3, 3), (3, 2)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (1, 3, 4)]),
    ("...ij,jk", [(2, 2, 3), (3, 4)]),
    ("i...->...", [(2, 3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("i,i,i->", [(3,), (3,), (3,)]),
    (",ij->ij", [(), (2, 3)]),
    ("->", [()]),
    ("ij->j", [(0, 3)]),
]


def _contraction():
    co = {"family": "contraction"}
    add("matmul", call("matmul"), *MATMUL_SHAPES, **co)
    add("matmul", lambda m, x, y: x @ y, *MATMUL_SHAPES, label="x@y", **co)
    for a, b in MIXED:
        add(
            "matmul",
            call("matmul"),
            ((2, 3), (3, 4)),
            ((3,), (2, 3, 2)),
            label="mixed",
            dtypes=(a,),
            input_dtypes=(None, b),
            **co,
        )
    add(
        "matmul",
        call("matmul"),
        ((), (3,)),
        ((3,), ()),
        ((3, 4), (5, 6)),
        ((2, 4, 5), (3, 5, 6)),
        error=ShapeError,
        **co,
    )
    add("dot", call("dot"), *DOT_SHAPES, **co)
    add(
        "dot",
        call("dot"),
        ((2, 3), (3,)),
        ((), (2,)),
        label="mixed",
        input_dtypes=(None, np.int32),
        **co,
    )
    add("dot", call("dot"), ((2, 3), (4,)), error=ShapeError, **co)
    for a, b, axes in TENSORDOT:
        add("tensordot", call("tensordot", axes=axes), (a, b), label=_label(axes=axes), **co)
    add(
        "tensordot",
        call("tensordot", axes=([1], [0])),
        ((2, 3), (4, 3)),
        label="axes=([1],[0])",
        error=ShapeError,
        **co,
    )
    add("outer", call("outer"), ((3,), (4,)), ((2, 2), (3,)), ((), (0,)), ((0,), ()), **co)
    add("outer", call("outer"), ((3,), (4,)), label="mixed", input_dtypes=(None, np.float32), **co)
    for subscripts, shapes in EINSUM:
        add("einsum", _einsum(subscripts), shapes, label=subscripts, **co)
    add(
        "einsum",
        _einsum("ij,jk->ik"),
        ((2, 3), (3, 4)),
        label="mixed",
        input_dtypes=(None, np.float32),
        **co,
    )
    add("einsum", _einsum("ij,jk->ik"), ((2, 3), (4, 5)), label="ij,jk->ik", error=ShapeError, **co)


def _einsum(subscripts):
    return lambda m, *xs: m.einsum(subscripts, *xs)


# --------------------------------------------------------------------------- indexing

INDEX_SHAPES = [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4), (4, 1, 3)]
SLICE_STEPS = [None, 1, 2, 3, -1, -2]


def _bound(rng, size):
    return None if rng.random() < 0.3 else int(rng.integers(-size - 2, size + 3))


def _index_array(rng, size, common):
    """Values in [-size, size) of a shape that broadcasts to ``common``."""
    shape = [
        1 if rng.random() < 0.3 else d for d in common[int(rng.integers(0, len(common) + 1)) :]
    ]
    if size == 0 and np.prod(shape) > 0:
        return None
    values = rng.integers(-size, max(size, 1), size=shape)
    return values.tolist() if rng.random() < 0.25 and values.size else values


def random_index(rng, shape):
    """A random NumPy index for ``shape``: ints, slices, None, Ellipsis and index arrays."""
    common = tuple(int(d) for d in rng.integers(0, 3, size=rng.integers(0, 3)))
    use_arrays, entries, axis, ellipsis = rng.random() < 0.7, [], 0, False
    while axis < len(shape) and (ellipsis or rng.random() < 0.9):
        kind, size = rng.choice(["int", "slice", "none", "ellipsis", "array", "array"]), shape[axis]
        if kind == "none":
            entries.append(None)
            continue
        if kind == "ellipsis" and not ellipsis:
            ellipsis = True
            entries.append(Ellipsis)
            axis += int(rng.integers(0, len(shape) - axis + 1))
            continue
        entry = None
        if kind == "int" and size:
            entry = int(rng.integers(-size, size))
        elif kind == "array" and use_arrays:
            entry = _index_array(rng, size, common)
        if entry is None:
            entry = slice(
                _bound(rng, size), _bound(rng, size), SLICE_STEPS[rng.integers(len(SLICE_STEPS))]
            )
        entries.append(entry)
        axis += 1
    if rng.random() < 0.2:
        entries.append(None)
    if len(entries) == 1 and rng.random() < 0.5:
        return entries[0]
    return tuple(entries)


def _is_array(entry) -> bool:
    return isinstance(entry, np.ndarray | list)


def _index_label(index) -> str:
    def one(e):
        if e is None:
            return "None"
        if e is Ellipsis:
            return "..."
        if isinstance(e, slice):
            parts = ["" if v is None else str(v) for v in (e.start, e.stop, e.step)]
            return ":".join(parts[:2] if e.step is None else parts)
        if _is_array(e):
            kind = (
                "mask" if np.asarray(e).dtype == bool else "list" if isinstance(e, list) else "arr"
            )
            return f"{kind}{'x'.join(map(str, np.shape(e))) or '()'}"
        return str(e)

    if isinstance(index, tuple):
        return "(" + ",".join(map(one, index)) + ("," if len(index) == 1 else "") + ")"
    return one(index)


def _getitem_rows(shape, index, *, dtypes=DTYPES, traced=True, error=None):
    """x[index] with its arrays as constants, and (``traced``) with them passed as inputs."""
    entries = list(index) if isinstance(index, tuple) else [index]
    label = _index_label(index)
    add(
        "_getitem",
        lambda m, x: x[index],
        (shape,),
        label=label,
        family="indexing",
        dtypes=dtypes,
        error=error,
    )
    positions = [i for i, e in enumerate(entries) if _is_array(e) and np.asarray(e).dtype != bool]
    if not (traced and positions):
        return

    def fn(m, x, *arrays):
        full = list(entries)
        for position, value in zip(positions, arrays, strict=True):
            full[position] = value
        return x[tuple(full) if isinstance(index, tuple) else full[0]]

    arrays = tuple(np.asarray(entries[p]).tolist() for p in positions)
    add(
        "_getitem",
        fn,
        (shape,),
        label="traced:" + label,
        family="indexing",
        dtypes=dtypes,
        indices=arrays,
        error=error,
    )


PLACEMENT = [  # NumPy's placement of advanced-index dimensions, on a (3, 4, 5) array
    (0, slice(None), [1, 2]),  # separated advanced indices move to the front
    ([0, 1], None, [1, 2]),  # None separates them too
    (slice(None), 0, [1, 2]),  # adjacent: stay in place
    (Ellipsis, [[0], [1]], [0, 2]),
    ([[0, 1]], slice(1, None), np.array([[1], [0]])),
    (np.array(1), slice(None), np.array(2)),
    (slice(None, None, -1), Ellipsis, -1),
    (Ellipsis, None),
    (slice(None), [0], Ellipsis, [1]),  # an empty ellipsis still separates them
    ([0], [1], Ellipsis),
    (),
    (slice(1, None), slice(None, None, -2), slice(4, 0, -3)),
    (-1, slice(-2, None), 2),
]
_MASK_BASE = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
MASKS = [  # concrete boolean masks, on a (3, 4, 5) array
    _MASK_BASE > 20,
    (_MASK_BASE[:, 0, 0] > 10, slice(1, None)),
    (slice(None), _MASK_BASE[0, :, 0] % 2 == 0, [0, 2]),
    ([0, 2], slice(None), _MASK_BASE[0, 0] % 2 == 1),
    np.zeros((3, 4), bool),
]
TAKE = [  # (shape, indices, axis, mode)
    ((3, 4), [0, 2, -1], 1, None),
    ((3, 4), [[0, 2], [1, 1]], 0, "raise"),
    ((3, 4), 5, None, None),
    ((3, 4), [[0, 11], [-12, 3]], None, None),
    ((2, 3, 4), [1, 0], -2, None),
    ((3, 4), [9, -7, 2], 1, "wrap"),
    ((3, 4), [9, -7, 2], 1, "clip"),
    ((5,), [], 0, None),
    ((3, 0), [], 1, None),
    ((0, 3), [0, 2], 1, None),
    ((), [0, 0], None, None),
]
INDEX_ERRORS = [  # (shape, index): SpmdIndexError, eagerly and at trace time
    ((3,), 3),
    ((3, 4), (slice(None), -5)),
    ((3, 4), (Ellipsis, [0, 4])),
    ((0,), [0]),
    ((3, 4), (0, 0, 0)),
    ((), 0),
]


def _indexing():
    seen = set()
    for seed in range(12):  # random basic and advanced indices, each run on one dtype
        rng = np.random.default_rng(seed)
        for n in range(40):
            shape, before = INDEX_SHAPES[n % len(INDEX_SHAPES)], len(CASES)
            _getitem_rows(shape, random_index(rng, shape), dtypes=(DTYPES[(n + seed) % 5],))
            new, CASES[before:] = CASES[before:], []
            CASES.extend(case for case in new if case.id not in seen)  # indices repeat now and then
            seen.update(case.id for case in new)
    for index in PLACEMENT:
        _getitem_rows((3, 4, 5), index)
    for index in MASKS:
        _getitem_rows((3, 4, 5), index)
    _getitem_rows((3, 4), np.array(2))  # a 0-d index array: traced, it is an int under jit
    _getitem_rows((3, 4), (np.array(-1), slice(None, None, 2)))
    _getitem_rows((3, 4), (np.array([[0], [-1]]), slice(None, None, -1)))
    _getitem_rows((3, 4), (slice(None), np.array([1, 0, 1])))
    _getitem_rows((0, 4), (slice(None), np.array([[3, -4]])))
    for shape, index in INDEX_ERRORS:
        _getitem_rows(shape, index, traced=False, error=SpmdIndexError)
    ix = {"family": "indexing"}
    for shape, indices, axis, mode in TAKE:
        kwargs = {"axis": axis} if mode is None else {"axis": axis, "mode": mode}
        label = _label(indices, **kwargs)
        add(
            "take",
            lambda m, x, i, kw=kwargs: m.take(x, i, **kw),
            (shape,),
            label=label,
            indices=(indices,),
            **ix,
        )
        add(
            "take",
            lambda m, x, i=indices, kw=kwargs: m.take(x, i, **kw),
            (shape,),
            label="const:" + label,
            **ix,
        )
    add(
        "take",
        lambda m, x: m.take(x, np.array([True, False]), axis=0),
        ((5,),),
        label="bools",
        **ix,
    )
    add(
        "take",
        call("take", [0, 4], axis=1),
        ((3, 4),),
        label="[0,4],axis=1",
        error=SpmdIndexError,
        **ix,
    )
    add(
        "take", call("take", [0], axis=2), ((3, 4),), label="[0],axis=2", error=SpmdIndexError, **ix
    )


# --------------------------------------------------------------------------- creation


def _creation():
    cr = {"family": "creation"}
    fixed = [
        ("zeros", lambda m: m.zeros((2, 3)), ""),
        ("zeros", lambda m: m.zeros(4, dtype=np.int32), "4,int32"),
        ("zeros", lambda m: m.zeros(()), "()"),
        ("ones", lambda m: m.ones((0, 2), dtype=np.float32), "(0,2),float32"),
        ("ones", lambda m: m.ones(3), "3"),
        ("zeros", lambda m: m.zeros((0, 4), np.bool_), "(0,4),bool"),
        ("empty", lambda m: m.empty((2, 3)), "(2,3)"),
        ("empty", lambda m: m.empty(0), "0"),
        ("full", lambda m: m.full((2, 2), 7), "(2,2),7"),
        ("full", lambda m: m.full(3, 1.5, dtype=np.float32), "3,1.5,float32"),
        ("full", lambda m: m.full((), True), "(),True"),
        ("full", lambda m: m.full((2, 0), 1.5), "(2,0),1.5"),
        ("arange", lambda m: m.arange(5), "5"),
        ("arange", lambda m: m.arange(0), "0"),
        ("arange", lambda m: m.arange(1.0, 3.0, 0.5), "1.0,3.0,0.5"),
        ("arange", lambda m: m.arange(0, 10, 3, dtype=np.int32), "0,10,3,int32"),
        ("arange", lambda m: m.arange(5, 1, -1), "5,1,-1"),
        ("linspace", lambda m: m.linspace(0, 1, 5), "0,1,5"),
        ("linspace", lambda m: m.linspace(0, 1, 4, endpoint=False), "0,1,4,endpoint=False"),
        ("linspace", lambda m: m.linspace(2, 3, 0), "2,3,0"),
        ("linspace", lambda m: m.linspace(-1, 1, 1), "-1,1,1"),
        ("eye", lambda m: m.eye(3), "3"),
        ("eye", lambda m: m.eye(2, 4, k=1, dtype=np.int64), "2,4,k=1,int64"),
        ("eye", lambda m: m.eye(4, 3, k=-1), "4,3,k=-1"),
        ("eye", lambda m: m.eye(0), "0"),
        ("array", lambda m: m.array([[1, 2], [3, 4]]), "[[1,2],[3,4]]"),
        ("array", lambda m: m.array([1, 2], dtype=np.float32), "[1,2],float32"),
        ("array", lambda m: m.array(2.5), "2.5"),
        ("array", lambda m: m.array([]), "[]"),
        ("asarray", lambda m: m.asarray([True, False]), "[True,False]"),
        ("asarray", lambda m: m.asarray(3), "3"),
        ("zeros_like", lambda m: m.zeros_like(np.ones((2, 3), np.float32)), "numpy"),
        ("ones_like", lambda m: m.ones_like(np.ones(3, np.int32)), "numpy"),
        ("full_like", lambda m: m.full_like(np.ones(2, np.float32), 3), "numpy"),
    ]
    for name, fn, label in fixed:
        add(name, fn, (), label=label, dtypes=NO_DTYPE, values=name != "empty", **cr)
    # Below, the dtype argument is a (dummy) input's dtype: a row runs on every dtype.
    scalar = ((),)
    add("zeros", lambda m, x: m.zeros((2, 3), dtype=x.dtype), scalar, label="dtype", **cr)
    add("ones", lambda m, x: m.ones((0, 3), x.dtype), scalar, label="dtype", **cr)
    add("ones", lambda m, x: m.ones((), x.dtype), scalar, label="(),dtype", **cr)
    add(
        "empty",
        lambda m, x: m.empty((3, 1), dtype=x.dtype),
        scalar,
        label="dtype",
        values=False,
        **cr,
    )
    add("full", lambda m, x: m.full((2, 3), 2, dtype=x.dtype), scalar, label="2,dtype", **cr)
    add("full", lambda m, x: m.full((2, 3), x), scalar, ((3,),), label="(2,3),x", **cr)
    add(
        "arange",
        lambda m, x: m.arange(1, 7, 2, dtype=x.dtype),
        scalar,
        label="dtype",
        dtypes=NUMBERS,
        **cr,
    )
    add("arange", lambda m, x: m.arange(2, dtype=x.dtype), scalar, label="2,dtype", **cr)
    add(
        "arange",
        lambda m, x: m.arange(3, dtype=x.dtype),
        scalar,
        label="3,rejects",
        dtypes=BOOL,
        error=SpmdTypeError,
        **cr,
    )
    add("linspace", lambda m, x: m.linspace(0, 10, 4, dtype=x.dtype), scalar, label="dtype", **cr)
    add("eye", lambda m, x: m.eye(3, dtype=x.dtype), scalar, label="dtype", **cr)
    add("eye", lambda m, x: m.eye(2, 3, k=-1, dtype=x.dtype), scalar, label="k=-1,dtype", **cr)
    add("array", lambda m, x: m.array(x), *unary(SHAPES[:4]), label="x", **cr)
    add(
        "array",
        lambda m, x: m.array(x, dtype=np.float32),
        *unary(SHAPES[:4]),
        label="x,float32",
        **cr,
    )
    add("asarray", lambda m, x: m.asarray(x), *unary(SHAPES[:4]), label="x", **cr)
    add(
        "asarray",
        lambda m, x: m.asarray(x, dtype=np.int64),
        *unary(SHAPES[:4]),
        label="x,int64",
        **cr,
    )
    for name in ("zeros_like", "ones_like"):
        add(name, call(name), *unary(SHAPES), **cr)
        add(name, call(name, dtype=np.float32), ((2, 3),), label="float32", **cr)
    add("full_like", call("full_like", 3), *unary(SHAPES), label="3", **cr)
    add("full_like", call("full_like", 2.5), ((2, 3),), label="2.5", **cr)
    add("full_like", call("full_like"), ((2, 3), ()), label="x,fill", **cr)
    add("full_like", call("full_like", 1, dtype=np.float32), ((2, 3),), label="1,float32", **cr)


# --------------------------------------------------------------------------------- nn


def _float_formula(formula, rejects_bool=""):
    """A NumPy reference computed in float64, in the dtype NumPy's own formula would give."""

    def reference(x, *args, **kwargs):
        x = np.asarray(x)
        if rejects_bool and x.dtype == np.bool_:
            raise TypeError(f"numpy boolean {rejects_bool} is not supported")
        result = np.asarray(formula(x.astype(np.float64), *args, **kwargs))
        return result.astype(x.dtype) if x.dtype.kind == "f" else result

    return reference


def _axes(axis, ndim):
    return tuple(range(ndim)) if axis is None else axis if isinstance(axis, tuple) else (axis,)


def _lse(x, axis=None, keepdims=False):
    axes = _axes(axis, x.ndim)
    top = np.max(x, axis=axes, keepdims=True, initial=-np.inf)
    top = np.where(np.isfinite(top), top, 0)
    out = np.log(np.sum(np.exp(x - top), axis=axes, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axes)


def _softmax(x, axis=-1):
    return np.exp(x - _lse(x, axis, keepdims=True))


_erfc = np.vectorize(math.erfc, otypes=[np.float64])
NUMPY_NN = types.SimpleNamespace(  # float64 reference formulas of spmd.nn
    sigmoid=_float_formula(lambda x: 1 / (1 + np.exp(-x)), "negative"),
    relu=lambda x: np.maximum(x, 0),
    gelu=_float_formula(
        lambda x, approximate=True: (
            # 0.5 * (1 + tanh(u)) written as 1 / (1 + exp(-2u)), which does not cancel for x << 0
            x / (1 + np.exp(-2 * np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
            if approximate
            else 0.5 * x * _erfc(-x / np.sqrt(2))
        )
    ),
    softmax=_float_formula(_softmax, "subtract"),
    log_softmax=_float_formula(lambda x, axis=-1: x - _lse(x, axis, keepdims=True), "subtract"),
    logsumexp=_float_formula(_lse),
    one_hot=lambda x, num_classes, dtype=np.float32, axis=-1: np.moveaxis(
        np.asarray(x)[..., None] == np.arange(num_classes), -1, axis
    ).astype(dtype),
)


def nn(m):
    """spmd.nn for m = spmd.numpy, its NumPy reference for m = numpy."""
    return NUMPY_NN if m is np else spmd.nn


def nn_call(name, *args, **kwargs) -> Callable:
    return lambda m, *xs: getattr(nn(m), name)(*xs, *args, **kwargs)


def _nn():
    kw = {"family": "nn"}
    shapes = unary(((), (0,), (7,), (3, 5), (2, 3, 4)))
    for name, rejects in (("sigmoid", BOOL), ("relu", ()), ("gelu", ())):
        add("nn." + name, nn_call(name), *shapes, dtypes=_keep(DTYPES, rejects), **kw)
        if rejects:
            add("nn." + name, nn_call(name), ((3,),), dtypes=rejects, error=SpmdTypeError, **kw)
    # Both forms take bools, as integers, in float64 (jax.nn.gelu promotes both to a float).
    add(
        "nn.gelu",
        nn_call("gelu", approximate=False),
        *shapes,
        label="approximate=False",
        **kw,
    )
    add(
        "nn.sigmoid",
        nn_call("sigmoid"),
        ((3, 4),),
        label="special",
        dtypes=FLOATS,
        domain="special",
        **kw,
    )
    for name in ("softmax", "log_softmax"):
        add("nn." + name, nn_call(name), *shapes[2:], dtypes=NUMBERS, **kw)
        for axis in (0, -1, (0, 2), 1):
            add(
                "nn." + name,
                nn_call(name, axis=axis),
                ((2, 3, 4),),
                ((2, 0, 3),),
                label=_label(axis=axis),
                dtypes=NUMBERS,
                **kw,
            )
        add("nn." + name, nn_call(name), ((3,),), dtypes=BOOL, error=SpmdTypeError, **kw)
        add(
            "nn." + name,
            nn_call(name, axis=()),
            ((),),
            ((2, 3),),
            label="axis=()",
            dtypes=NUMBERS,
            **kw,
        )
        add("nn." + name, nn_call(name, axis=2), ((2, 3),), label="axis=2", error=ShapeError, **kw)
        add("nn." + name, nn_call(name), ((),), error=ShapeError, **kw)  # no axis -1
    for axis in (None, 0, -1, (0, 2)):
        for keepdims in (False, True):
            add(
                "nn.logsumexp",
                nn_call("logsumexp", axis=axis, keepdims=keepdims),
                ((2, 3, 4),),
                ((2, 0, 3),),
                label=_label(axis=axis, keepdims=keepdims),
                **kw,
            )
    add("nn.logsumexp", nn_call("logsumexp"), *shapes, **kw)
    add(
        "nn.logsumexp",
        nn_call("logsumexp", axis=-1),
        ((3, 4),),
        label="special,axis=-1",
        dtypes=FLOATS,
        domain="special",
        **kw,
    )
    for args, kwargs in [
        ((4,), {}),
        ((4,), {"dtype": np.int32, "axis": 0}),
        ((3,), {"dtype": np.bool_, "axis": 1}),
        ((1,), {"axis": -2}),
    ]:
        shapes = ((2, 3), (0,), ()) if kwargs.get("axis", -1) in (0, -1) else ((2, 3), (0,))
        add(
            "nn.one_hot",
            nn_call("one_hot", *args, **kwargs),
            *unary(shapes),
            label=_label(*args, **kwargs),
            **kw,
        )


_elementwise()
_reductions()
_shape()
_contraction()
_indexing()
_creation()
_nn()


def cases_for(*, names=None, family=None, dtype=None, errors=False) -> list[Case]:
    """The rows of these functions / this family that run on ``dtype``; with or without errors."""
    return [
        case
        for case in CASES
        if (names is None or case.name in names)
        and (family is None or case.family == family)
        and (dtype is None or dtype in case.dtypes)
        and (case.error is not None) == errors
    ]


# Rows spmd gets wrong today: (row id, dtype name or None for every dtype) -> the bug. Each
# runs on its own, marked xfail(strict=True), so fixing the bug means deleting its entry.
KNOWN_BUGS: dict[str, tuple[tuple, str]] = {}  # row id: (the dtypes it fails on, the bug)


# Rounding upstream can flip these (floor, comparisons, branches): random programs skip them.
DISCONTINUOUS = {"sign", "floor", "ceil", "round", "around", "floor_divide", "remainder", "mod"}
DISCONTINUOUS |= {"where", "argmax", "argmin", "nn.relu", "nn.one_hot", "_getitem", "take"}


def _broadcasts(small, shape) -> bool:
    return not small or all(
        s in (1, d) for s, d in zip(small[::-1], shape[-len(small) :][::-1], strict=True)
    )


def shape_preserving(shape=(3, 4)) -> list[tuple[str, Case]]:
    """Rows that can be steps of a random program on float arrays of ``shape``.

    Each is ``("map", row)``: the row, given one or two float arrays of ``shape``, returns one of
    that shape and dtype; or ``("center", row)``: it returns one that broadcasts against them
    (a reduction), and the step subtracts it. One row per function and arguments (name and
    label), continuous in its inputs, finite on its domain, float32 and float64 alike.
    """
    steps, seen = [], set()
    for case in CASES:
        key = (case.name, case.label)
        if (
            key in seen
            or case.error is not None
            or case.indices
            or case.input_dtypes
            or case.family == "creation"
            or case.name in DISCONTINUOUS
            or case.domain == "special"
            or len(case.shapes) not in (1, 2)
            or not set(FLOATS) <= set(case.dtypes)
        ):
            continue
        seen.add(key)
        kinds = set()
        for dtype in FLOATS:
            x = make_input(shape, dtype, 0, case.domain)
            try:
                out = numpy_result(case, [x] * len(case.shapes))
            except Exception:  # the row's arguments do not fit ``shape``
                kinds.add(None)
                continue
            if not isinstance(out, np.ndarray) or out.dtype != dtype or not np.isfinite(out).all():
                kinds.add(None)
            elif out.shape == shape:
                kinds.add("map")
            elif out.ndim <= len(shape) and _broadcasts(out.shape, shape):
                kinds.add("center")
            else:
                kinds.add(None)
        if len(kinds) == 1 and None not in kinds:
            steps.append((kinds.pop(), case))
    return steps
