"""The case table's machinery: the Case row, inputs, comparing with NumPy and adding rows."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import spmd
from spmd import SpmdTypeError

BOOL = (np.bool_,)
INTS = (np.int32, np.int64)
FLOATS = (np.float32, np.float64)
NUMBERS = (*INTS, *FLOATS)
DTYPES = (np.bool_, *NUMBERS)
NO_DTYPE = (None,)  # the dtypes of a row without array inputs
DOMAINS = ("any", "positive", "nonzero", "unit", "special")
FAMILIES = ("elementwise", "reduction", "shape", "contraction", "indexing", "creation", "nn")
FAMILIES += ("control",)  # spmd.lax's control flow (tests/cases/control.py)
SHAPES = ((), (0,), (5,), (2, 3), (2, 0, 3), (3, 4, 2))  # scalar, size 0, 1-D, 2-D, 3-D
EAGER_ONLY = (
    "the result's shape depends on the input's values, so the row cannot be traced (under jit "
    "JAX raises ConcretizationTypeError, spmd SpmdTypeError): it runs eagerly only"
)


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
    # "eager" / "jit": where reverse-mode derivatives raise SpmdTypeError, as JAX's do (a loop
    # whose trip count is traced: while_loop); forward mode is still checked there
    reverse_raises: tuple[str, ...] = ()
    # The result's shape depends on the input's values (unique_values, nonzero without size=):
    # it runs eagerly only, as in JAX. Under jit it must raise SpmdTypeError (EAGER_ONLY says
    # why); the oracles that trace (vmap, derivatives, other namespaces, tasks, random
    # programs) leave it out, and the partition oracles run it eagerly on sharded inputs.
    eager_only: bool = False

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


def _keep(dtypes, rejected):
    return tuple(d for d in dtypes if d not in rejected)
