"""Fused elementwise kernels under jit (spmd/transforms/fusion.py, spmd/core/fused.py).

Generated chains of elementwise operations over every dtype, shapes with 0- and 1-sized
axes, meshes and specs (uneven ones included) give NumPy's numbers: exactly where the
operations are exact, within a few ulps for transcendental functions; and exactly what the
same program gives with fusion off. The printed program and explain() name what fused.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P
from spmd.core import fused
from spmd.core.interpret import fused_program
from spmd.experimental import disable_x64
from tests.strategies import meshes, specs

DTYPES = [np.float32, np.int32, np.float64, np.bool_, np.float16, np.uint8, np.complex64,
          np.int8, np.int64, np.uint16, np.complex128, np.int16, np.uint32, np.uint64]  # fmt: skip
SHAPES = [(6, 5), (8, 1), (1, 7), (0, 4), (5, 0), (9,), (1,), (4, 3, 2), (2, 1, 5)]
EXAMPLES = settings(max_examples=int(os.environ.get("SPMD_FUSION_EXAMPLES", "60")))

# name -> (arity, the dtype kinds its first operand may have)
EXACT_OPS = {
    "negative": (1, "iufc"), "abs": (1, "biufc"), "square": (1, "iufc"), "sign": (1, "iuf"),
    "floor": (1, "f"), "ceil": (1, "f"), "trunc": (1, "f"), "sqrt": (1, "f"),
    "logical_not": (1, "biufc"), "invert": (1, "biu"), "isnan": (1, "fc"),
    "conjugate": (1, "c"), "add": (2, "biufc"), "subtract": (2, "iufc"),
    "multiply": (2, "biufc"), "true_divide": (2, "iufc"), "floor_divide": (2, "iuf"),
    "remainder": (2, "iuf"), "maximum": (2, "biuf"), "minimum": (2, "biuf"),
    "copysign": (2, "f"), "left_shift": (2, "iu"), "right_shift": (2, "iu"),
    "bitwise_and": (2, "biu"), "bitwise_xor": (2, "biu"), "logical_or": (2, "biufc"),
    "greater": (2, "biuf"), "less_equal": (2, "biuf"), "equal": (2, "biufc"),
    "not_equal": (2, "biufc"), "where": (3, "biufc"), "astype": (1, "biufc"),
    "power": (2, "iuf"),
}  # fmt: skip
SMOOTH_OPS = {"sin": 1, "cos": 1, "tanh": 1, "exp": 1, "arctan": 1, "expm1": 1, "log1p": 1,
              "add": 2, "multiply": 2, "subtract": 2}  # fmt: skip
LITERALS = {"b": [True, False], "i": [0, 1, 3], "u": [0, 2, 5], "f": [0.5, -1.5, 2.0, 0.0],
            "c": [1 + 2j, -0.5j]}  # fmt: skip


def _apply(m, name: str, args: list, param=None):
    """Operation ``name`` of module ``m`` (NumPy or spmd.numpy) on ``args``."""
    if name == "astype":
        return args[0].astype(param)
    if name == "where":
        return m.where(*args)
    if name == "log1p":
        return m.log1p(m.abs(args[0]))
    if name == "sigmoid":  # spmd.nn's logistic; NumPy's numbers by JAX's formula
        return 1 / (1 + np.exp(-args[0])) if m is np else spmd.nn.sigmoid(args[0])
    return getattr(m, name)(*args)


def _run(m, steps, x, y):
    """The chain: each step's operation on earlier values ("x", "y", or an index),
    literals; its results are the last value and a middle one (two kernel outputs)."""
    values = [x]
    for name, refs, param in steps:
        args = [values[r] if isinstance(r, int) else y if r == "y" else r[1] for r in refs]
        values.append(_apply(m, name, args, param))
    return values[-1], values[len(values) // 2]


def _sample(dtype) -> np.ndarray:
    return np.zeros(1, dtype)


@st.composite
def chains(draw, ops: dict, dtypes: list):
    """Steps that NumPy computes (each checked on one-element samples of the dtypes)."""
    x_dtype = np.dtype(draw(st.sampled_from(dtypes)))
    y_dtype = np.dtype(draw(st.sampled_from([x_dtype, *dtypes[:2]])))
    kinds = [x_dtype]
    steps = []
    for _ in range(draw(st.integers(3, 10))):
        name = draw(st.sampled_from(sorted(ops)))
        arity = ops[name] if isinstance(ops[name], int) else ops[name][0]
        first = draw(st.integers(0, len(kinds) - 1))
        allowed = ops[name] if isinstance(ops[name], int) else ops[name][1]
        if not isinstance(allowed, int) and kinds[first].kind not in allowed:
            continue
        refs = [first]
        for _ in range(arity - 1):
            choice = draw(st.integers(0, 3))
            if choice == 0:
                refs.append("y")
            elif choice == 1:
                kind = kinds[first].kind if kinds[first].kind in LITERALS else "f"
                if name in ("left_shift", "right_shift", "power"):
                    refs.append(("literal", draw(st.sampled_from([0, 1, 2]))))
                else:
                    refs.append(("literal", draw(st.sampled_from(LITERALS[kind]))))
            else:
                refs.append(draw(st.integers(0, len(kinds) - 1)))
        param = np.dtype(draw(st.sampled_from(dtypes))) if name == "astype" else None
        if name == "where":  # the condition: a boolean value, the last one made
            conditions = [k for k, dtype in enumerate(kinds) if dtype == np.bool_]
            if not conditions:
                continue
            refs = [conditions[-1], refs[0], refs[1]]
        samples = [
            _sample(kinds[r]) if isinstance(r, int) else _sample(y_dtype) if r == "y" else r[1]
            for r in refs
        ]
        try:
            with np.errstate(all="ignore"):
                result = _apply(np, name, samples, param)
        except (TypeError, ValueError, OverflowError):
            continue
        if name in ("left_shift", "right_shift", "power") and not isinstance(refs[1], tuple):
            continue  # shifts and powers by literals only: negative counts are NumPy's errors
        steps.append((name, tuple(refs), param))
        kinds.append(np.asarray(result).dtype)
    return x_dtype, y_dtype, steps


def _values(dtype, shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.integers(-20, 20, size=shape)
    if dtype == np.bool_:
        return values > 0
    if dtype.kind == "u":
        values = np.abs(values)
    if dtype.kind == "c":
        return (values / 4 + 1j * rng.integers(-9, 9, size=shape)).astype(dtype)
    return (values / (4 if dtype.kind == "f" else 1)).astype(dtype)


def _broadcast_shape(draw, shape: tuple) -> tuple:
    """A shape that broadcasts to ``shape``: its suffix, with some axes of size 1."""
    start = draw(st.integers(0, len(shape)))
    return tuple(1 if draw(st.booleans()) else d for d in shape[start:])


def _same(got, want) -> None:
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    assert np.array_equal(got, want, equal_nan=True), (got, want)
    if want.dtype.kind == "f":
        numbers = ~np.isnan(want)
        assert np.array_equal(np.signbit(got)[numbers], np.signbit(want)[numbers])


def _fused_count(fn, *args) -> int:
    return fn.lower(*args).as_text().count("fused_elementwise")


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    """Chunks of a few elements, so that small arrays run through many chunks of every
    shape (a kernel reads the size when it is made); a result of one chunk or less runs
    its members on the whole operands."""
    monkeypatch.setattr(fused, "CHUNK_BYTES", 48)


@pytest.fixture
def fusion_off():
    def turn_off():
        spmd.config.update("fusion", False)

    yield turn_off
    spmd.config.update("fusion", True)


def check_exact_chain(data, ops: dict, dtypes: list) -> None:
    """A drawn chain of ``ops`` over ``dtypes``, mesh and spec gives NumPy's numbers under
    jit, and the unfused program's bytes."""
    x_dtype, y_dtype, steps = data.draw(chains(ops, dtypes))
    shape = data.draw(st.sampled_from(SHAPES))
    mesh = data.draw(meshes())
    spec = data.draw(specs(mesh, len(shape)))
    seed = data.draw(st.integers(0, 2**16))
    x = _values(x_dtype, shape, seed)
    y = _values(y_dtype, _broadcast_shape(data.draw, shape), seed + 1)
    with np.errstate(all="ignore"):
        want = _run(np, steps, x, y)
    xs = spmd.device_put(x, NamedSharding(mesh, spec))
    got, unfused = fused_and_unfused(steps, xs, y)
    for g, w, u in zip(got, want, unfused, strict=True):
        _same(g, w)
        assert np.asarray(g).tobytes() == np.asarray(u).tobytes()


def fused_and_unfused(steps, xs, y) -> tuple:
    """The chain under jit, fused and with fusion off."""
    got = spmd.jit(lambda v, w: _run(snp, steps, v, w))(xs, y)
    spmd.config.update("fusion", False)
    try:
        unfused = spmd.jit(lambda v, w: _run(snp, steps, v, w))(xs, y)
    finally:
        spmd.config.update("fusion", True)
    return got, unfused


@pytest.mark.filterwarnings("ignore:Casting complex values to real")
@EXAMPLES
@given(st.data())
def test_exact_chains_equal_numpy_and_unfused(data):
    check_exact_chain(data, EXACT_OPS, DTYPES)


def _within_ulps(got, want, ulps: int) -> None:
    """``got`` and ``want`` (real or complex) equal, or within ``ulps`` units in the last
    place of the larger, part by part; NaNs where NaNs are."""
    for a, b in ((got.real, want.real), (got.imag, want.imag)):
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        gap = np.abs(a.astype(np.float64) - b) <= ulps * np.spacing(np.maximum(abs(a), abs(b)))
        assert np.all(same | gap), (a[~(same | gap)], b[~(same | gap)])


@EXAMPLES
@given(st.data())
def test_transcendental_chains_within_a_few_ulps_of_unfused_and_near_numpy(data):
    dtype = np.dtype(data.draw(st.sampled_from([np.float16, np.float32, np.float64,
                                                np.complex64, np.complex128])))  # fmt: skip
    _, _, steps = data.draw(chains(SMOOTH_OPS, [dtype]))
    shape = data.draw(st.sampled_from(SHAPES))
    mesh = data.draw(meshes())
    spec = data.draw(specs(mesh, len(shape)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = rng.uniform(-2, 2, size=shape).astype(dtype)
    y = rng.uniform(-2, 2, size=_broadcast_shape(data.draw, shape)).astype(dtype)
    with np.errstate(all="ignore"):
        want = _run(np, steps, x, y)
    xs = spmd.device_put(x, NamedSharding(mesh, spec))
    got, unfused = fused_and_unfused(steps, xs, y)
    eps = float(np.finfo(dtype).eps)
    for g, u, w in zip(got, unfused, want, strict=True):
        g, u = np.asarray(g), np.asarray(u)
        assert g.dtype == u.dtype == w.dtype
        _within_ulps(g, u, 4)
        # NumPy's whole-array numbers, within what the chain's conditioning allows
        scale = max(1.0, float(np.abs(w[np.isfinite(w)]).max(initial=0)))
        np.testing.assert_allclose(g, w, rtol=1024 * eps, atol=1024 * eps * scale)


MESH = None


def _grid():
    global MESH
    if MESH is None:
        MESH = spmd.make_mesh((2, 4), ("x", "y"))
    return MESH


def _chain(m):
    def f(v):
        a = m.where(v > 0, v, 0.1 * v)
        b = m.exp(-a * a)
        c = b * 3 + v
        d = m.tanh(c)
        e = m.where(d > 0.5, d, c)
        return e * 0.5 + 1

    return f


def test_ten_step_chain_is_one_step_that_equals_numpy():
    x = np.random.default_rng(0).standard_normal((64, 48), dtype=np.float32)
    xs = spmd.device_put(x, NamedSharding(_grid(), P("x", "y")))
    jitted = spmd.jit(_chain(snp))
    text = jitted.lower(xs).as_text()
    assert text.count("fused_elementwise[steps=13]") == 1
    assert " = tanh " in text and " = exp " in text  # the members, printed in braces
    _same(jitted(xs), _chain(np)(x))


def test_explain_names_the_fused_steps_and_the_arrays_they_make():
    x = np.ones((16, 8), np.float32)
    xs = spmd.device_put(x, NamedSharding(_grid(), P("x", "y")))
    explained = spmd.jit(lambda v: 2 * snp.sin(v) + 1).lower(xs).explain()
    assert "Fused" in explained
    assert "3 steps fused into one: b = sin, c = multiply, d = add; arrays made: d" in explained


def test_a_value_read_after_the_kernel_is_made_as_an_array():
    x = np.arange(32, dtype=np.float64).reshape(8, 4)
    xs = spmd.device_put(x, NamedSharding(_grid(), P("x")))

    def f(v):
        a = snp.sin(v) * 2
        total = a.sum()  # a reduction reads a: the kernel gives it back
        return a + 1, total

    jitted = spmd.jit(f)
    text = jitted.lower(xs).as_text()
    assert "fused_elementwise[steps=2]" in text and " = add b 1" in text
    out, total = jitted(xs)
    _same(out, np.sin(x) * 2 + 1)
    np.testing.assert_allclose(np.asarray(total), (np.sin(x) * 2).sum(), rtol=1e-12)


def test_steps_on_other_values_move_before_the_kernel():
    x = np.linspace(-1, 1, 48, dtype=np.float32).reshape(8, 6)
    b = np.arange(6, dtype=np.float32)
    xs = spmd.device_put(x, NamedSharding(_grid(), P("x")))
    bs = spmd.device_put(b, NamedSharding(_grid(), P()))

    def f(v, w):
        return snp.tanh(v * 2 + (w * 3 + 1)) - 1  # w's steps lie between v's

    jitted = spmd.jit(f)
    text = jitted.lower(xs, bs).as_text()
    assert text.count("fused_elementwise[steps=4]") == 1, text
    assert text.index("multiply b 3") < text.index("fused_elementwise")
    _same(jitted(xs, bs), np.tanh(x * 2 + (b * 3 + 1)) - 1)


def test_a_resharding_ends_a_kernel():
    x = np.arange(64, dtype=np.float64).reshape(8, 8)
    xs = spmd.device_put(x, NamedSharding(_grid(), P("x", "y")))

    def f(v):
        a = snp.cos(v) + 1
        return (a.T * 2 + v) - 3

    jitted = spmd.jit(f)
    text = jitted.lower(xs).as_text()
    assert text.count("fused_elementwise") == 2, text
    _same(jitted(xs), (np.cos(x) + 1).T * 2 + x - 3)


def test_where_selects_bits_as_numpy_does():
    special = [np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.5]
    for dtype in (np.float16, np.float32, np.float64, np.complex64, np.complex128):
        x = np.array(special * 4, dtype).reshape(4, 8)
        y = np.array(special[::-1] * 4, dtype).reshape(4, 8)
        xs = spmd.device_put(x, NamedSharding(_grid(), P("x", "y")))
        ys = spmd.device_put(y, NamedSharding(_grid(), P("x", "y")))

        def f(v, w):
            return snp.where(snp.isnan(v) | (v.real > w.real), v + 0, w * 1), snp.maximum(v, w)

        got = spmd.jit(f)(xs, ys)
        want = (np.where(np.isnan(x) | (x.real > y.real), x + 0, y * 1), np.maximum(x, y))
        for g, w in zip(got, want, strict=True):
            assert np.asarray(g).tobytes() == w.tobytes(), dtype


def test_integer_semantics_are_numpys():
    x = np.array([[-128, -7, -1, 0, 1, 7, 127, 100]] * 4, np.int8)
    y = np.array([[3, -2, 0, 5, -1, 0, 2, 9]] * 4, np.int8)
    xs = spmd.device_put(x, NamedSharding(_grid(), P("x", "y")))

    def f(m, v, w):
        return (v * 3 + 100, v // w, v % w, (v << 3) >> 1, -v, m.abs(v), v.astype(np.uint8) + 1)

    with np.errstate(all="ignore"):
        want = f(np, x, y)
    got = spmd.jit(lambda v, w: f(snp, v, w))(xs, y)
    for g, w in zip(got, want, strict=True):
        _same(g, w)


def test_conversions_are_numpys_astype():
    x = np.array([[np.nan, np.inf, -np.inf, -0.0, 2.7, -2.7, 300.5, 1e10]] * 2, np.float64)
    xs = spmd.device_put(x, NamedSharding(_grid(), P(None, "y")))
    for dtype in (np.int8, np.uint16, np.int64, np.bool_, np.float16, np.complex64):
        with np.errstate(all="ignore"):
            want = (x * 1).astype(dtype) + np.zeros((), dtype)
        got = spmd.jit(lambda v, d=dtype: (v * 1).astype(d) + np.zeros((), d))(xs)
        _same(got, want)


def test_x64_off_keeps_32_bit_dtypes_and_the_unfused_numbers(fusion_off):
    x = np.linspace(-3, 3, 48).reshape(8, 6)

    def f(v):
        return snp.where(v > 0.5, snp.exp(v) * 2.5, v // 2 + 1), (v * 3).astype(int) + 7

    with disable_x64():
        xs = spmd.device_put(x, NamedSharding(_grid(), P("x")))
        jitted = spmd.jit(f)
        assert _fused_count(jitted, xs) == 1
        fused = jitted(xs)
        fusion_off()
        unfused = spmd.jit(f)(xs)
    assert [np.asarray(v).dtype for v in fused] == [np.float32, np.int32]
    for a, b in zip(fused, unfused, strict=True):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


def test_fusion_off_runs_every_step_on_its_own(fusion_off):
    x = np.ones((8, 8), np.float32)
    xs = spmd.device_put(x, NamedSharding(_grid(), P("x", "y")))
    fusion_off()
    jitted = spmd.jit(lambda v: 2 * snp.sin(v) + 1)
    assert _fused_count(jitted, xs) == 0
    _same(jitted(xs), 2 * np.sin(x) + 1)


def test_environment_variable_turns_fusion_off():
    code = (
        "import numpy as np, spmd, spmd.numpy as snp\n"
        "m = spmd.make_mesh((2, 4), ('x', 'y'))\n"
        "x = spmd.device_put(np.ones((8, 8)), spmd.NamedSharding(m, spmd.P('x', 'y')))\n"
        "print(spmd.jit(lambda v: 2 * snp.sin(v) + 1).lower(x).as_text())\n"
    )
    env = os.environ | {"SPMD_FUSION": "0", "SPMD_NUM_CPU_DEVICES": "8"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "fused_elementwise" not in done.stdout and " = sin " in done.stdout


def test_a_loop_body_fuses_and_loops_to_numpys_result():
    x = np.linspace(0, 1, 64).reshape(8, 8)
    xs = spmd.device_put(x, NamedSharding(_grid(), P("x", "y")))

    def f(v):
        return spmd.lax.fori_loop(0, 3, lambda i, c: snp.tanh(c * 1.5 + 0.25) - 0.5, v)

    jitted = spmd.jit(f)
    assert _fused_count(jitted, xs) == 1
    want = x
    for _ in range(3):
        want = np.tanh(want * 1.5 + 0.25) - 0.5
    _same(jitted(xs), want)


def test_results_of_one_chunk_or_less_run_the_members_on_whole_operands(monkeypatch):
    monkeypatch.setattr(fused, "CHUNK_BYTES", fused.CHUNK_BYTES * 1000)
    x = np.linspace(-2, 2, 64, dtype=np.float32).reshape(8, 8)
    xs = spmd.device_put(x, NamedSharding(_grid(), P("x", "y")))
    _same(spmd.jit(_chain(snp))(xs), _chain(np)(x))


def test_kernel_chunks_cover_every_element_once():
    x = np.arange(2 * 3 * 5, dtype=np.float64).reshape(2, 3, 5)
    for row, column in [
        (np.arange(5.0), np.ones((3, 1))),
        (np.ones((1, 1, 5)), np.ones((2, 1, 1))),
    ]:
        for elements in (1, 2, 4, 5, 7, 15, 16, 29):
            chunks, inner = fused._chunks(x.shape, (x.shape, row.shape, column.shape), elements)
            seen = np.zeros(x.shape, int)
            for rows, key, row_key, column_key, out_key in chunks:
                seen[out_key] += 1
                chunk_shape = (rows, *inner)
                assert x[key].shape == seen[out_key].shape == chunk_shape
                np.broadcast_shapes(row[row_key].shape, column[column_key].shape, chunk_shape)
                assert np.prod(chunk_shape) <= elements
            assert (seen == 1).all(), elements


def test_one_device_programs_fuse_and_equal_the_unfused(fusion_off):
    x = np.linspace(-3, 3, 120, dtype=np.float32).reshape(12, 10)

    def f(v):
        return _chain(snp)(v), snp.exp(v) * 2

    program = spmd.jit(f).lower(x).program
    fused_equations = [e.primitive.name for e in fused_program(program).equations]
    assert fused_equations.count("fused_elementwise") == 1, fused_equations
    got = spmd.jit(f)(x)
    fusion_off()
    unfused = spmd.jit(f)(x)
    for g, u, w in zip(got, unfused, (_chain(np)(x), np.exp(x) * 2), strict=True):
        assert np.asarray(g).tobytes() == np.asarray(u).tobytes()
        _same(g, w)


def test_devices_of_another_array_library_run_unfused():
    """NumPy is the kernels' engine: on devices computing with another library (here the
    Array API's strict namespace), programs run step by step, with the same numbers."""
    code = (
        "import numpy as np, spmd, spmd.numpy as snp\n"
        "m = spmd.make_mesh((2, 4), ('x', 'y'))\n"
        "x = np.linspace(-1, 1, 64).reshape(8, 8)\n"
        "xs = spmd.device_put(x, spmd.NamedSharding(m, spmd.P('x', 'y')))\n"
        "f = spmd.jit(lambda v: 2 * snp.sin(v) + 1)\n"
        "print(f.lower(xs).as_text())\n"
        "assert np.array_equal(np.asarray(f(xs)), 2 * np.sin(x) + 1)\n"
    )
    env = os.environ | {"SPMD_BACKEND": "array_api_strict", "SPMD_NUM_CPU_DEVICES": "8"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "fused_elementwise" not in done.stdout and " = sin " in done.stdout


@pytest.mark.parametrize("shape", [(6, 300), (5, 4, 70), (3, 1), (0, 9)])
def test_a_final_reduction_over_trailing_axes_joins_the_kernel(fusion_off, shape):
    """Chunks hold whole rows of the reduced axes, which NumPy reduces (pairwise, for sums)
    as it reduces the whole array's: the same bits as unfused."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(np.float32)
    x.flat[::7] = np.nan
    trailing = tuple(range(1, len(shape)))

    def f(m, v):
        w = m.where(m.isnan(v), 0.0, v)
        return (
            (w * w + 1).sum(axis=trailing),
            m.max(v * 2, axis=trailing[-1:], keepdims=True),
            (w > 0).any(axis=trailing),
            (w * 3).astype(np.int8).sum(axis=trailing),
        )

    mesh = spmd.make_mesh((2,), ("x",), devices=spmd.devices()[:2])
    xs = spmd.device_put(x, NamedSharding(mesh, P("x")))
    jitted = spmd.jit(lambda v: f(snp, v))
    text = jitted.lower(xs).as_text()
    assert text.count("fused_elementwise") == 4 and " = reduce_sum" in text, text
    got = jitted(xs)
    fusion_off()
    unfused = spmd.jit(lambda v: f(snp, v))(xs)
    with np.errstate(all="ignore"):
        want = f(np, x)
    for g, u, w in zip(got, unfused, want, strict=True):
        assert np.asarray(g).tobytes() == np.asarray(u).tobytes()
        _same(g, w)


def test_a_leading_axis_reduction_is_a_step_of_its_own_and_a_split_trailing_one_fuses():
    x = np.arange(48, dtype=np.float64).reshape(8, 6)
    xs = spmd.device_put(x, NamedSharding(_grid(), P("x", "y")))

    def f(m, v):
        return (v * 2 + 1).sum(axis=0), (v * 3 - 1).sum(axis=1)

    jitted = spmd.jit(lambda v: f(snp, v))
    text = jitted.lower(xs).as_text()
    # axis 0: a step of its own; axis 1 ends the second kernel, its blocks' partial sums
    # all-reduced after it, as unfused
    assert "fused_elementwise[steps=2]" in text and "fused_elementwise[steps=3]" in text, text
    assert "= reduce_sum[axes=(0,)" in text and text.count("all_reduce") == 2, text
    for g, w in zip(jitted(xs), f(np, x), strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-14)
