"""One call run on NumPy and on spmd in one placement, and the comparison of the two.

A ``Call`` is ``fn(m, *args)`` with ``m`` numpy (the oracle) or spmd.numpy; its NumPy arrays
are the operands a placement moves (onto one device, into ``spmd.jit``, or onto a mesh with a
random spec); Python scalars and everything baked into ``fn`` stay as they are.

Tolerances: integers and bools agree exactly. Floats and complex numbers agree to
``rtol = K * eps * terms`` and ``atol = K * eps * scale``, with ``eps`` the result dtype's,
``terms`` the longest sum behind one result element (1 for elementwise functions) and ``scale``
a bound on the size of the summands (by default ``terms`` times the largest finite input,
so the tolerance is finite); NaNs and infinities sit in the same places. A complex number with
a NaN in either part is NaN as a whole (``numpy.isnan``'s rule, and NumPy's
``array_equal(equal_nan=True)``'s): NumPy's own BLAS and elementwise paths differ there, as
``(1+inf j) * (1+0j)`` is ``nan+inf j`` elementwise and ``nan+nan j`` in ``numpy.dot``.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

import spmd
import spmd.numpy as snp
from spmd.errors import SpmdError
from tests import strategies

K = 4  # the slack on top of eps * terms
MODES = ("numpy_in", "eager", "jit", "sharded", "sharded_jit")
FIXED_MESHES = ((8,), (2, 4), (4, 2), (2, 2, 2), (1, 8), (3,))


@dataclass
class Call:
    """``fn(m, *args)``: one call of a public function; ``label`` says what is baked in."""

    fn: Callable
    args: Sequence
    label: str
    terms: int = 1
    scale: float | None = None  # None: terms * the largest finite |input|
    values: bool = True  # False: dtype and shape only (np.empty)
    root: bool = False  # a square root of a sum (std): atol = sqrt(K * eps * scale)
    plain: bool = False  # a Python result (shape, ndim, size): equal, and of the same type

    def __repr__(self) -> str:
        shown = [
            f"{a.dtype}{list(a.shape)}={a.tolist()!r}" if isinstance(a, np.ndarray) else repr(a)
            for a in self.args
        ]
        return f"{self.label}({', '.join(shown)})"


def magnitude(*args) -> float:
    """The largest finite absolute value among the arguments (at least 1)."""
    top = 1.0
    for a in args:
        if isinstance(a, list):
            top = max(top, magnitude(*a))
            continue
        if not isinstance(a, np.ndarray | bool | int | float | complex):
            continue
        values = np.abs(np.asarray(a).astype(np.complex128 if np.iscomplexobj(a) else np.float64))
        values = values.ravel()  # in float64 first: abs of int64's minimum wraps
        values = values[np.isfinite(values)]
        if values.size:
            top = max(top, float(values.max()))
    return top


@dataclass(frozen=True)
class Placement:
    mode: str
    mesh: object = None
    specs: tuple = ()

    def __repr__(self) -> str:
        if self.mesh is None:
            return self.mode
        return f"{self.mode} on {dict(self.mesh.shape)} with {list(self.specs)}"


@functools.cache
def fixed_mesh(shape: tuple[int, ...]) -> spmd.Mesh:
    names = ("x", "y", "z")[: len(shape)]
    count = int(np.prod(shape))
    return spmd.make_mesh(shape, names, devices=spmd.devices()[:count])


def _all_on_first(mesh: spmd.Mesh, ndim: int) -> spmd.P:
    """Every mesh axis on the first dimension: the most (and most often empty) shards."""
    return spmd.P(tuple(mesh.axis_names)) if ndim else spmd.P()


@st.composite
def placements(draw, call: Call) -> Placement:
    """Eager (raw NumPy operands or device_put ones), jit, or on a mesh with random specs:
    the two sharded placements as often as the three others together."""
    mode = draw(st.sampled_from(MODES[3:] if draw(st.booleans()) else MODES[:3]))
    if not mode.startswith("sharded"):
        return Placement(mode)
    mesh = draw(st.one_of(st.sampled_from(FIXED_MESHES).map(fixed_mesh), strategies.meshes()))
    specs = tuple(
        draw(st.just(_all_on_first(mesh, a.ndim)) | strategies.specs(mesh, a.ndim))
        for a in call.args
        if isinstance(a, np.ndarray)
    )
    return Placement(mode, mesh, specs)


def numpy_outcome(call: Call):
    """NumPy's result, or the exception it raises (its warnings silenced)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return call.fn(np, *call.args)
        except Exception as error:  # NumPy's exception types vary; only "it raised" counts
            return error


def run_spmd(call: Call, placement: Placement):
    """spmd's result of ``call`` in ``placement`` (exceptions propagate)."""
    args = list(call.args)
    where = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    if placement.mode in ("eager", "jit"):
        for i in where:
            args[i] = spmd.device_put(args[i]) if placement.mode == "eager" else args[i]
    elif placement.mesh is not None:
        for i, spec in zip(where, placement.specs, strict=True):
            args[i] = spmd.device_put(args[i], spmd.NamedSharding(placement.mesh, spec))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if not placement.mode.endswith("jit"):
            return call.fn(snp, *args)

        def traced(*arrays):
            full = list(args)
            for i, array in zip(where, arrays, strict=True):
                full[i] = array
            return call.fn(snp, *full)

        return spmd.jit(traced)(*[args[i] for i in where])


def tolerance(dtype: np.dtype, call: Call) -> tuple[float, float]:
    """(rtol, atol) for a float or complex result of ``call``."""
    eps = float(np.finfo(dtype).eps)
    scale = call.scale if call.scale is not None else call.terms * magnitude(*call.args)
    assert np.isfinite(scale), f"the table's scale for {call.label} is {scale}: use magnitude()"
    if call.root:
        return K * eps * max(call.terms, 1), float(np.sqrt(K * eps * scale))
    return K * eps * max(call.terms, 1), K * eps * scale


def _close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    if want.dtype.kind == "c":  # NaN in either part: NaN as a whole, in both or in neither
        nan = np.isnan(got) | np.isnan(want)
        parts = _close(got.real, want.real, rtol, atol) & _close(got.imag, want.imag, rtol, atol)
        return np.where(nan, np.isnan(got) & np.isnan(want), parts)
    return np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def _python(result):
    if isinstance(result, tuple):
        return tuple(_python(r) for r in result)
    return int(np.asarray(result)) if isinstance(result, spmd.Array) else result


def assert_agrees(result, expected, call: Call) -> None:
    """spmd's ``result`` equals NumPy's ``expected``: container, dtype, shape and values."""
    if call.plain:  # under jit the ints come back as 0-d Arrays, as in JAX
        result = _python(result)
        assert type(result) is type(expected) and result == expected, (
            f"spmd gives {result!r}, NumPy {expected!r}"
        )
        return
    if isinstance(expected, list | tuple):
        assert isinstance(result, list | tuple), f"expected a sequence, got {type(result)}"
        assert len(result) == len(expected), f"{len(result)} results, NumPy has {len(expected)}"
        for r, e in zip(result, expected, strict=True):
            assert_agrees(r, e, call)
        return
    assert isinstance(result, spmd.Array), f"expected an spmd Array, got {type(result)}"
    expected = np.asarray(expected)
    got, want = f"{result.dtype}{list(result.shape)}", f"{expected.dtype}{list(expected.shape)}"
    assert got == want, f"got {got}, NumPy gives {want}"
    if not call.values:
        return
    values = np.asarray(result)
    if expected.dtype.kind in "fc":
        rtol, atol = tolerance(expected.dtype, call)
        wide = np.complex128 if expected.dtype.kind == "c" else np.float64  # a finite atol
        close = _close(values.astype(wide), expected.astype(wide), rtol, atol)
        assert close.all(), (
            f"not close to NumPy's (rtol={rtol:.3g}, atol={atol:.3g}) at "
            f"{np.argwhere(~close).tolist()[:5]}:\n"
            f"spmd  {values.tolist()}\nnumpy {expected.tolist()}"
        )
    else:
        assert np.array_equal(values, expected), (
            f"differs from NumPy's:\nspmd  {values.tolist()}\nnumpy {expected.tolist()}"
        )


def check(call: Call, placement: Placement, plain_errors: frozenset = frozenset()) -> None:
    """spmd agrees with NumPy on ``call`` in ``placement``: the same result, or both raise
    (spmd an SpmdError subclass, or a built-in type named in ``plain_errors``)."""
    try:
        _check(call, placement, plain_errors)
    except AssertionError as error:
        raise AssertionError(f"{call!r} in {placement!r}:\n{error}") from error


def _check(call: Call, placement: Placement, plain_errors: frozenset) -> None:
    expected = numpy_outcome(call)
    try:
        result = run_spmd(call, placement)
    except Exception as error:
        if not isinstance(expected, Exception):
            raise AssertionError(
                f"spmd raised {type(error).__name__}: {error}\nNumPy gives {expected!r}"
            ) from error
        if not isinstance(error, SpmdError) and type(error).__name__ not in plain_errors:
            raise AssertionError(
                f"NumPy raises {type(expected).__name__} ({expected}); spmd raises "
                f"{type(error).__name__}, not an SpmdError: {error}"
            ) from error
        return
    if isinstance(expected, Exception):
        raise AssertionError(
            f"NumPy raises {type(expected).__name__}: {expected}\nspmd gives {result!r}"
        )
    assert_agrees(result, expected, call)
