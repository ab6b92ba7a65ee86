"""Fused kernels compiled by numba (spmd/core/fused_compiled.py, spmd/core/vector_math.py).

The generated chains of tests/test_fusion.py run with every kernel result large enough to
compile: exact chains give NumPy's numbers and the unfused program's bit for bit; chains
with float32 exp, tanh and logistic stay within what their conditioning allows of NumPy's.
The float32 exp is within 1 ulp of the exact result, tanh and logistic within 2; NaN, the
infinities, signed zeros, overflow and subnormal results are NumPy's. Kernels the compiled
loop does not compute as NumPy does stay on NumPy's loop and give NumPy's numbers.
"""

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P
from spmd.core import fused, fused_compiled, vector_math
from spmd.errors import ConfigError
from tests.strategies import meshes, specs
from tests.test_fusion import (
    EXAMPLES,
    SHAPES,
    _broadcast_shape,
    _run,
    _same,
    chains,
    check_exact_chain,
    fused_and_unfused,
)

COMPILED_OPS = {
    "negative": (1, "f"), "abs": (1, "bf"), "square": (1, "f"), "sqrt": (1, "f"),
    "add": (2, "f"), "subtract": (2, "f"), "multiply": (2, "f"), "true_divide": (2, "f"),
    "maximum": (2, "f"), "minimum": (2, "f"), "greater": (2, "f"), "less_equal": (2, "f"),
    "equal": (2, "bf"), "not_equal": (2, "f"), "where": (3, "bf"), "astype": (1, "bf"),
    "logical_or": (2, "b"), "bitwise_and": (2, "b"), "floor": (1, "f"),  # floor: NumPy's loop
}  # fmt: skip
SMOOTH_OPS = {"tanh": 1, "exp": 1, "sigmoid": 1, "add": 2, "multiply": 2, "subtract": 2,
              "maximum": 2}  # fmt: skip


@pytest.fixture(autouse=True)
def compile_everything(monkeypatch):
    """Every kernel result compiles, through chunks of a few elements (the NumPy loop's
    path for the kernels that do not); the list records each compiled call."""
    monkeypatch.setattr(fused, "CHUNK_BYTES", 48)
    monkeypatch.setattr(fused, "COMPILE_ELEMENTS", 0)
    calls = []
    run = fused_compiled.CompiledCode.__call__

    def counted(self, *args):
        results = run(self, *args)
        if results is not None:
            calls.append(self)
        return results

    monkeypatch.setattr(fused_compiled.CompiledCode, "__call__", counted)
    return calls


@pytest.mark.filterwarnings("ignore:invalid value encountered")
@EXAMPLES
@given(st.data())
def test_exact_chains_equal_numpy_and_unfused(data):
    check_exact_chain(data, COMPILED_OPS, [np.float32, np.float64, np.bool_])


@EXAMPLES
@given(st.data())
def test_float32_transcendental_chains_near_numpy(data):
    _, _, steps = data.draw(chains(SMOOTH_OPS, [np.float32]))
    shape = data.draw(st.sampled_from(SHAPES))
    mesh = data.draw(meshes())
    spec = data.draw(specs(mesh, len(shape)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = rng.uniform(-2, 2, size=shape).astype(np.float32)
    y = rng.uniform(-2, 2, size=_broadcast_shape(data.draw, shape)).astype(np.float32)
    with np.errstate(all="ignore"):
        want = _run(np, steps, x, y)
    xs = spmd.device_put(x, NamedSharding(mesh, spec))
    got, _ = fused_and_unfused(steps, xs, y)
    eps = float(np.finfo(np.float32).eps)
    for g, w in zip(got, want, strict=True):
        g = np.asarray(g)
        assert g.dtype == w.dtype == np.float32
        scale = max(1.0, float(np.abs(w[np.isfinite(w)]).max(initial=0)))
        np.testing.assert_allclose(g, w, rtol=1024 * eps, atol=1024 * eps * scale)


@settings(max_examples=max(EXAMPLES.max_examples // 4, 1))  # two compiles per example
@given(st.data())
def test_kernels_in_stages_give_the_one_pass_loops_bytes(data):
    """A kernel with several float32 functions runs in passes over chunks of a few
    elements (the last one short), with rows and single elements among its operands; each
    element is computed by the same operations as in one pass."""
    _, _, steps = data.draw(chains(SMOOTH_OPS, [np.float32]))
    shape = data.draw(st.sampled_from([(7, 11), (3, 4, 5), (29,)]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = rng.uniform(-3, 3, size=shape).astype(np.float32)
    y = rng.uniform(-3, 3, size=_broadcast_shape(data.draw, shape)).astype(np.float32)
    run = spmd.jit(lambda v, w: _run(snp, steps, v, w))
    results = {}
    for elements in (3, 1 << 20):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(fused_compiled, "STAGE_ELEMENTS", elements)
            patch.setattr(fused_compiled, "_warn", _fail)  # every kernel compiles
            results[elements] = run(x, y)
    for staged, one_pass in zip(results[3], results[1 << 20], strict=True):
        _same(staged, np.asarray(one_pass))


def _fail(reason: str) -> None:
    raise AssertionError(reason)


def test_each_float32_function_but_the_last_ends_a_stage():
    x = np.random.default_rng(2).uniform(-3, 3, (5, 13)).astype(np.float32)
    sources = []
    compile_source = fused_compiled._compile

    def compile_kernel(source, constants):
        sources.append(source)
        return compile_source(source, constants)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fused_compiled, "STAGE_ELEMENTS", 4)
        patch.setattr(fused_compiled, "_compile", compile_kernel)
        got = spmd.jit(lambda v: _chain(snp, v) * 2)(x)
    assert [source.count("def stage") for source in sources] == [2]
    np.testing.assert_allclose(np.asarray(got), _chain(np, x) * 2, rtol=4e-7, atol=0)


def _chain(m, v):
    """benchmarks/auto_parallel.py's ten steps."""
    a = m.where(v > 0, v, v * 0.1)
    b = m.exp(a * -0.5)
    c = m.tanh(b * v + 1.0)
    return m.where(c > 0.5, c, b)


@pytest.mark.parametrize(("spec", "blocks"), [(P("x", "y"), 8), (P(None, "y"), 8), (P(), 1)])
def test_the_ten_step_chain_runs_compiled_per_block_and_equals_numpy(
    compile_everything, spec, blocks
):
    """One compiled call per block computed (a replicated value is computed once)."""
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    x = np.random.default_rng(0).standard_normal((37, 61)).astype(np.float32)
    got = spmd.jit(lambda v: _chain(snp, v))(spmd.device_put(x, NamedSharding(mesh, spec)))
    np.testing.assert_allclose(np.asarray(got), _chain(np, x), rtol=4e-7, atol=0)
    assert len(compile_everything) == blocks


@pytest.mark.parametrize(
    ("fn", "y_shape", "compiles"),
    [
        (lambda m, x, y: x * y + 1, (61,), True),  # trailing rows: a bias
        (lambda m, x, y: x * y + 1, (1, 61), True),
        (lambda m, x, y: x * y + 1, (1, 1), True),
        (lambda m, x, y: x * y + 1, (37, 1), False),  # a column: NumPy's loop
        (lambda m, x, y: m.maximum(x, y) - x, (37, 61), True),
    ],
)
def test_operands_compile_whole_as_rows_or_as_one_element(
    compile_everything, fn, y_shape, compiles
):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((37, 61)).astype(np.float32)
    y = rng.standard_normal(y_shape).astype(np.float32)
    got = spmd.jit(lambda a, b: fn(snp, a, b))(x, y)
    _same(np.asarray(got), fn(np, x, y))
    assert bool(compile_everything) == compiles


@pytest.mark.parametrize(
    "fn",
    [
        lambda m, x: (x * 3 + 1) // 2,  # integers
        lambda m, x: (x * 3.0 + 1).sum(axis=1),  # a final reduction
        lambda m, x: m.sin(x * 3.0) + 1,  # a function the loop has no vector form of
        lambda m, x: x.astype(np.float16) * 3 + 1,  # float16
        lambda m, x: m.exp(x * 0.5) - 1,  # float64 exp
    ],
)
def test_kernels_the_loop_does_not_compute_as_numpy_stay_on_numpys(compile_everything, fn):
    x = np.arange(48 * 5).reshape(48, 5) - 100
    got = spmd.jit(lambda v: fn(snp, v))(x)
    np.testing.assert_array_equal(np.asarray(got), fn(np, x))
    assert compile_everything == []


def test_specials_propagate_as_numpy(compile_everything):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 3.0, -2.0] * 8, np.float32)
    y = np.array([1.0, np.nan, 0.0, -0.0, 0.0, -1.0, np.inf, -np.inf, np.nan] * 8, np.float32)

    def f(m, a, b):
        return (
            m.maximum(a, b) + m.minimum(b, a) * 0.5,
            m.where(a > b, a / b, b - a),
            m.abs(-a) * m.sqrt(m.abs(b)),
        )

    got = spmd.jit(lambda a, b: f(snp, a, b))(x, y)
    with np.errstate(all="ignore"):
        want = f(np, x, y)
    for g, w in zip(got, want, strict=True):
        _same(np.asarray(g), w)
    assert compile_everything


def _ordered(x: np.ndarray) -> np.ndarray:
    """float32 values as integers in the same order, one apart for adjacent floats."""
    bits = x.astype(np.float32).view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


def _ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """How many float32 values lie between ``got`` and ``exact`` (float64) rounded."""
    return np.abs(_ordered(got) - _ordered(exact))


def _sampled_float32(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**32, size=1 << 18, dtype=np.uint64).astype(np.uint32)
    wide = bits.view(np.float32)
    return np.concatenate([
        wide[np.isfinite(wide)],
        rng.uniform(-110, 100, 1 << 16).astype(np.float32),
        rng.standard_normal(1 << 16).astype(np.float32) * np.float32(1e-3),
        rng.uniform(-1, 1, 1 << 16).astype(np.float32),
        rng.uniform(-10, 10, 1 << 20).astype(np.float32),
        np.array([0.50880754], np.float32),  # tanh's worst on [0, 10]: 1.90 ulps
    ])  # fmt: skip


@pytest.mark.parametrize(
    ("name", "exact", "ulps"),
    [
        ("exp32", np.exp, 1),
        ("tanh32", np.tanh, 2),  # three roundings: the two sides and their quotient
        # exp(-x) overflows float32 beyond 88.72: 1 / inf, as NumPy's and JAX's formula gives
        ("logistic32", lambda x: np.where(-x > 88.72284, 0, 1 / (1 + np.exp(-x))), 2),
    ],
)
def test_float32_functions_are_within_an_ulp_of_exact(name, exact, ulps):
    import numba

    function = getattr(vector_math, name)

    @numba.njit(error_model="numpy")
    def loop(v, out):
        for i in range(v.size):
            out[i] = function(v[i])

    x = _sampled_float32(7)
    got = np.empty_like(x)
    loop(x, got)
    with np.errstate(all="ignore"):
        want = exact(x.astype(np.float64))
    finite = np.isfinite(want.astype(np.float32))
    assert np.all(~finite | (_ulps(got, want) <= ulps)), x[finite & (_ulps(got, want) > ulps)][:5]
    assert np.array_equal(np.isinf(got), np.isinf(want.astype(np.float32)))

    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 100, -110], np.float32)
    got = np.empty_like(specials)
    loop(specials, got)
    with np.errstate(all="ignore"):
        _same(got, exact(specials.astype(np.float64)).astype(np.float32))


def test_the_numpy_engine_option_keeps_every_kernel_on_numpys_loop(compile_everything):
    x = np.linspace(-2, 2, 96, dtype=np.float32).reshape(8, 12)
    spmd.config.update("fusion_engine", "numpy")
    try:
        got = spmd.jit(lambda v: snp.tanh(v * 2) + 1)(x)
    finally:
        spmd.config.update("fusion_engine", "numba")
    np.testing.assert_array_equal(np.asarray(got), np.tanh(x * 2) + 1)
    assert compile_everything == []
    with pytest.raises(ConfigError, match="'numba' or 'numpy'"):
        spmd.config.update("fusion_engine", "numexpr")


def test_a_numba_that_fails_to_import_leaves_numpys_loop(monkeypatch, compile_everything):
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    monkeypatch.setattr(fused_compiled, "_COMPILED", {})
    fused_compiled._warn.cache_clear()
    x = np.linspace(-3, 3, 120, dtype=np.float32).reshape(10, 12)
    with pytest.warns(RuntimeWarning, match="numba does not import"):
        got = spmd.jit(lambda v: v * 3 + 2)(x)
    _same(np.asarray(got), x * 3 + 2)
    assert compile_everything == []


def test_a_kernel_that_does_not_compile_runs_on_numpys_loop_and_says_so(
    monkeypatch, compile_everything
):
    class Refused(Exception):
        pass

    def refuse(*args):
        raise Refused

    monkeypatch.setattr(fused_compiled, "_compile", lambda source, constants: refuse)
    monkeypatch.setattr(fused_compiled, "_NUMBA_ERRORS", (Refused,))
    fused_compiled._warn.cache_clear()
    x = np.linspace(-3, 3, 120, dtype=np.float32).reshape(10, 12)
    with pytest.warns(RuntimeWarning, match="did not compile"):
        got = spmd.jit(lambda v: v * 5 - 1)(x)
    _same(np.asarray(got), x * 5 - 1)
    assert compile_everything == []
