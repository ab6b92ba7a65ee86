"""jax_enable_x64 off: JAX's 32-bit dtype rules as a switch (spmd/core/dtypes.py).

Where data enters, where a dtype is named or defaulted, and where any operation gives a
64-bit result, x64 off gives the 32-bit type; NumPy's rules stay the default. The case table
runs in this mode too (tests/test_cases.py, a sampled subset, tests/x64_mode.py's oracle).
"""

import contextlib

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P
from spmd.config import Config
from spmd.experimental import disable_x64, enable_x64
from tests import x64_mode
from tests.cases import Case
from tests.x64_mode import restore_x64, x64_off  # noqa: F401  (fixtures)

WIDE = [np.float64, np.int64, np.uint64, np.complex128]
NARROW = {
    np.float64: np.float32,
    np.int64: np.int32,
    np.uint64: np.uint32,
    np.complex128: np.complex64,
}


def data(dtype, shape=(2, 3)):
    values = np.arange(int(np.prod(shape))).reshape(shape) % 7 + 1
    return values.astype(dtype)


# ------------------------------------------------------------------------------- the switch


def test_numpy_rules_are_the_default():
    assert spmd.config.jax_enable_x64 is True
    assert snp.zeros(2).dtype == np.float64 and snp.arange(3).dtype == np.int64
    assert (snp.asarray(np.int32([1])) + snp.asarray(np.uint32([1]))).dtype == np.int64


def test_config_update_turns_it_off_and_on(restore_x64):  # noqa: F811
    spmd.config.update("jax_enable_x64", False)
    assert spmd.config.jax_enable_x64 is False
    assert snp.zeros(2).dtype == np.float32
    spmd.config.update("jax_enable_x64", "1")
    assert spmd.config.jax_enable_x64 is True
    assert snp.zeros(2).dtype == np.float64
    with pytest.raises(spmd.ConfigError, match=r"jax_enable_x64 must be True or False.*'maybe'"):
        spmd.config.update("jax_enable_x64", "maybe")


def test_environment_variables_set_the_mode(monkeypatch):
    for env in ("SPMD_ENABLE_X64", "JAX_ENABLE_X64"):
        monkeypatch.delenv(env, raising=False)
    assert Config().jax_enable_x64 is True
    monkeypatch.setenv("JAX_ENABLE_X64", "0")
    assert Config().jax_enable_x64 is False
    monkeypatch.setenv("SPMD_ENABLE_X64", "true")  # spmd's own name wins
    assert Config().jax_enable_x64 is True
    monkeypatch.setenv("SPMD_ENABLE_X64", "2")
    with pytest.raises(spmd.ConfigError, match="SPMD_ENABLE_X64 must be True or False"):
        Config().jax_enable_x64  # noqa: B018


def test_blocks_nest_and_restore_the_mode():
    with disable_x64():
        assert spmd.config.jax_enable_x64 is False
        with enable_x64():
            assert snp.ones(1).dtype == np.float64
        assert snp.ones(1).dtype == np.float32
        with pytest.raises(ZeroDivisionError), enable_x64():
            raise ZeroDivisionError
        assert spmd.config.jax_enable_x64 is False
    assert spmd.config.jax_enable_x64 is True
    block = spmd.config.overriding("backend", "torch")
    with pytest.raises(spmd.ConfigError, match="only jax_enable_x64 can be set for a block"):
        block.__enter__()


# ---------------------------------------------------------------------------- data entering


@pytest.mark.parametrize("dtype", WIDE)
def test_64_bit_data_becomes_32_bit_where_it_enters(dtype, x64_off):  # noqa: F811
    x = data(dtype)
    want = np.dtype(NARROW[dtype])
    mesh = spmd.make_mesh((2,), ("x",))
    for made in (
        spmd.device_put(x),
        spmd.device_put(x, NamedSharding(mesh, P("x"))),
        snp.asarray(x),
        snp.array(x),
        snp.array(x.tolist()) if dtype != np.uint64 else snp.asarray(x.astype(np.uint32)),
        spmd.jit(lambda a: a)(x),
        spmd.jit(lambda a: a * 1)(x[0, 0]),  # a NumPy scalar
    ):
        assert made.dtype == want
        np.testing.assert_array_equal(
            np.asarray(made), np.asarray(x).astype(want)[: made.ndim and None]
        )


def test_python_scalars_are_weak_32_bit(x64_off):  # noqa: F811
    assert snp.asarray(2.5).dtype == np.float32 and snp.asarray(3).dtype == np.int32
    assert snp.asarray(1j).dtype == np.complex64 and snp.asarray(True).dtype == np.bool_
    assert spmd.jit(lambda a: a)(2.5).dtype == np.float32
    assert spmd.jit(lambda a: a)(7).dtype == np.int32
    half = snp.ones(3, np.float16)
    assert (half * 2.0).dtype == np.float16  # weak: the array's dtype wins
    assert (snp.ones(3, np.int8) + 1).dtype == np.int8
    assert (snp.ones(3, np.int32) + 1.5).dtype == np.float32  # NumPy: float64
    assert spmd.jit(lambda a, b: a * b)(half, 2.0).dtype == np.float16


def test_ints_that_32_bits_cannot_hold_raise_instead_of_wrapping(x64_off):  # noqa: F811
    with pytest.raises(
        spmd.SpmdOverflowError, match=r"the Python int 4294967296 does not fit int32"
    ):
        snp.asarray(2**32)
    with pytest.raises(spmd.SpmdOverflowError, match=r"asarray: a \(int64\) holds 3000000000"):
        snp.asarray(np.array([1, 3_000_000_000]))
    with pytest.raises(spmd.SpmdOverflowError, match=r"argument 0 \(uint64\) holds 5000000000"):
        spmd.jit(lambda a: a)(np.array([5_000_000_000], np.uint64))
    with pytest.raises(spmd.SpmdOverflowError, match=r"Python int -2147483649 does not fit"):
        spmd.jit(lambda a: a + 1)(-(2**31) - 1)
    with pytest.raises(spmd.SpmdOverflowError, match=r"Python int 1099511627776 does not fit"):
        snp.ones(2, np.float32) + 2**40  # NumPy takes it; with x64 off JAX does not
    assert (snp.asarray(np.uint32(4_000_000_000)) + 1).dtype == np.uint32  # fits uint32


# ------------------------------------------------------------------ dtypes named or defaulted


def test_creation_defaults_are_float32_and_int32(x64_off):  # noqa: F811
    made = {
        "zeros": snp.zeros(3),
        "ones": snp.ones((2, 2)),
        "empty": snp.empty(2),
        "full": snp.full(3, 1.5),
        "full int": snp.full(3, 7),
        "arange": snp.arange(5),
        "arange float": snp.arange(0.0, 1.0, 0.25),
        "linspace": snp.linspace(0, 1, 5),
        "eye": snp.eye(3),
        "zeros_like": snp.zeros_like(np.ones(3)),
        "full_like int": snp.full_like(np.ones(3, np.int64), 2),
        "normal": spmd.random.normal(spmd.random.key(0), (3,)),
        "randint": spmd.random.randint(spmd.random.key(0), (3,), 0, 9),
    }
    traced = spmd.jit(
        lambda: (snp.zeros(3), snp.arange(5), snp.eye(2), snp.linspace(0.0, 1.0, 3))
    )()
    for name, x in [
        *made.items(),
        *zip(("zeros", "arange", "eye", "linspace"), traced, strict=True),
    ]:
        assert x.dtype in (np.float32, np.int32), (name, x.dtype)
    np.testing.assert_array_equal(np.asarray(made["arange"]), np.arange(5, dtype=np.int32))
    np.testing.assert_allclose(np.asarray(made["linspace"]), np.linspace(0, 1, 5), rtol=1e-7)


def test_a_named_64_bit_dtype_gives_the_32_bit_one(x64_off):  # noqa: F811
    x = snp.ones(3, np.float32)
    assert snp.zeros(2, dtype=np.float64).dtype == np.float32
    assert x.astype(np.float64).dtype == np.float32
    assert x.astype(np.complex128).dtype == np.complex64
    assert snp.sum(x, dtype=np.float64).dtype == np.float32
    assert snp.arange(3, dtype=np.uint64).dtype == np.uint32
    assert spmd.jit(lambda a: a.astype(np.int64))(x).dtype == np.int32


# ------------------------------------------------------------------------ operations' results


def _programs():
    """(name, function, inputs, NumPy's 64-bit result dtype): promotions to 64 bits."""
    i32, u32 = np.array([3, -4, 5], np.int32), np.array([7, 1, 2], np.uint32)
    f32 = np.array([0.5, -1.5, 2.0], np.float32)
    return [
        ("int32 + uint32", lambda a, b: a + b, (i32, u32), np.int64),
        ("sum(int32)", lambda a, b: snp.sum(a), (i32, u32), np.int64),
        ("mean(int32)", lambda a, b: snp.mean(a), (i32, u32), np.float64),
        ("int32 / int32", lambda a, b: a / a, (i32, u32), np.float64),
        ("int32 * float32", lambda a, b: a * b, (i32, f32), np.float64),
        ("cumsum(uint32)", lambda a, b: snp.cumsum(b), (i32, u32), np.uint64),
        ("argmax", lambda a, b: snp.argmax(a), (i32, u32), np.int64),
        ("where", lambda a, b: snp.where(a > 0, a, b), (i32, u32), np.int64),
        ("matmul", lambda a, b: a @ b, (i32, u32), np.int64),
        ("sqrt(int32)", lambda a, b: snp.sqrt(b), (i32, u32), np.float64),
    ]


@pytest.mark.parametrize(
    ("name", "fn", "inputs", "wide"), _programs(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_results_numpy_makes_64_bit_are_32_bit(name, fn, inputs, wide, x64_off):  # noqa: F811
    with enable_x64():
        numpy_side = fn(*map(snp.asarray, inputs))
    assert numpy_side.dtype == wide  # the case this test is about
    want = np.asarray(numpy_side).astype(NARROW[wide])
    mesh = spmd.make_mesh((3,), ("x",))
    on_mesh = [spmd.device_put(x, NamedSharding(mesh, P("x"))) for x in inputs]
    for run in (
        fn(*map(snp.asarray, inputs)),
        spmd.jit(fn)(*inputs),
        spmd.jit(fn)(*on_mesh),
        fn(*on_mesh),
    ):
        assert run.dtype == NARROW[wide], (name, run.dtype)
        np.testing.assert_allclose(np.asarray(run), want, rtol=1e-6)


def test_the_program_converts_after_the_operation(x64_off):  # noqa: F811
    text = str(spmd.make_jaxpr(lambda a, b: a + b)(np.int32([1]), np.uint32([1])))
    assert "c:i64[1] = add a b" in text and "convert_element_type" in text, text
    plain = str(spmd.make_jaxpr(lambda a, b: a + b)(np.int32([1]), np.int32([1])))
    assert "convert_element_type" not in plain, plain


def test_arrays_made_with_x64_on_become_32_bit_in_operations():
    wide = snp.arange(4.0)
    with disable_x64():
        assert (wide + 1).dtype == np.float32
        assert snp.sum(wide).dtype == np.float32
        assert spmd.jit(lambda a: a)(wide).dtype == np.float32
        assert snp.asarray(wide).dtype == np.float32
        np.testing.assert_array_equal(np.asarray(wide * 2), np.arange(4.0, dtype=np.float32) * 2)


def test_jit_retraces_when_the_mode_changes():
    traces = []

    def f(x):
        traces.append(1)
        return x / 2

    jitted = spmd.jit(f)
    x = np.arange(3, dtype=np.int32)
    assert jitted(x).dtype == np.float64
    with disable_x64():
        assert jitted(x).dtype == np.float32
        assert jitted(x).dtype == np.float32
    assert jitted(x).dtype == np.float64
    assert len(traces) == 2


def test_derivatives_and_vmap_keep_32_bits(x64_off):  # noqa: F811
    weights = np.array([1, -2, 3], np.int32)

    def loss(x):
        return snp.sum(snp.sin(x) * weights) / weights.size

    x = snp.asarray(np.array([0.1, 0.2, 0.3], np.float32))
    grad = spmd.grad(loss)(x)
    assert grad.dtype == np.float32
    np.testing.assert_allclose(np.asarray(grad), np.cos([0.1, 0.2, 0.3]) * weights / 3, rtol=1e-6)
    jacobian = spmd.jacfwd(lambda v: v * weights)(x)
    assert jacobian.dtype == np.float32
    np.testing.assert_allclose(np.asarray(jacobian), np.diag(weights).astype(np.float32))
    mapped = spmd.vmap(lambda row: snp.mean(row))(np.arange(6, dtype=np.int64).reshape(2, 3))
    assert mapped.dtype == np.float32
    np.testing.assert_allclose(np.asarray(mapped), [1.0, 4.0])


def test_shard_map_body_results_are_32_bit(x64_off):  # noqa: F811
    mesh = spmd.make_mesh((4,), ("x",))
    body = spmd.shard_map(lambda a: a / 2, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    x = np.arange(8, dtype=np.int32)
    for out in (body(x), spmd.jit(body)(x)):
        assert out.dtype == np.float32
        np.testing.assert_allclose(np.asarray(out), x / 2)


def test_promotion_is_numpys_made_32_bit_not_jaxs_lattice(x64_off):  # noqa: F811
    """What docs/ARCHITECTURE.md says: JAX gives float16 here; spmd gives NumPy's float32."""
    result = snp.ones(2, np.int16) + snp.ones(2, np.float16)
    assert result.dtype == np.float32


def test_dtype_queries_answer_for_the_mode(x64_off):  # noqa: F811
    assert snp.result_type(np.float64) == np.float32
    assert snp.result_type(np.int32, np.uint32) == np.int32
    assert snp.result_type(snp.ones(2, np.int32), 1.5) == np.float32
    defaults = snp.__array_namespace_info__().default_dtypes()
    assert defaults == {
        "real floating": np.float32,
        "complex floating": np.complex64,
        "integral": np.int32,
        "indexing": np.int32,
    }
    with enable_x64():
        assert snp.result_type(np.int32, np.uint32) == np.int64
        assert snp.__array_namespace_info__().default_dtypes()["integral"] == np.int64


def test_the_case_table_oracle_with_x64_off_can_fail(monkeypatch):
    """tests/x64_mode.py's check is not vacuous: wrong values, a wrong dtype, a missing
    error, and NumPy's 64-bit rules (the mode left on) all fail it."""
    sin = Case("sin", lambda m, x: m.sin(x), ((2, 3),))
    x64_mode.check_case_32(sin, np.float64)
    for wrong in (
        lambda m, x: m.sin(x) + (1e-3 if m is snp else 0),
        lambda m, x: m.sin(x).astype(np.float16) if m is snp else m.sin(x),
    ):
        with pytest.raises(AssertionError, match="x64 off, eager"):
            x64_mode.check_case_32(Case("sin", wrong, ((2, 3),)), np.float32)
    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        x64_mode.check_case_32(Case("sin", sin.fn, ((2,),), error=ValueError), np.int32)
    total = Case("sum", lambda m, x: m.sum(x), ((2, 3),))
    x64_mode.check_case_32(total, np.int32)
    monkeypatch.setattr(x64_mode, "disable_x64", contextlib.nullcontext)
    with pytest.raises(AssertionError, match="got int64"):
        x64_mode.check_case_32(total, np.int32)


def test_python_scalars_held_as_arrays_have_the_32_bit_dtype(x64_off):  # noqa: F811
    """A Python scalar computes as NumPy's 64-bit default; what holds it as an array (a
    broadcast, a reduction, a loop's stacked outputs) still gives the 32-bit type."""
    for run in (lambda f, *a: f(*a), lambda f, *a: spmd.jit(f)(*a)):
        assert run(lambda a: snp.broadcast_to(a, (3,)), 2).dtype == np.int32
        assert run(lambda a: snp.mean(a), 2.0).dtype == np.float32
        assert run(lambda a: snp.stack([a, a]), 1.5).dtype == np.float32
        ys = run(lambda c0: spmd.lax.scan(lambda c, _: (c + 1, c), c0, None, length=4)[1], 0)
        assert ys.dtype == np.int32 and np.asarray(ys).tolist() == [0, 1, 2, 3]


def test_gradient_through_a_loop_keeps_32_bits(x64_off):  # noqa: F811
    x = np.random.default_rng(0).normal(size=(4, 3))

    def loop(v):
        step = lambda i, c: snp.tanh(c) * v[i] + snp.sin(v[i])  # noqa: E731
        return spmd.lax.fori_loop(0, v.shape[0], step, v[0])

    def numpy_loop(v):
        c = v[0]
        for i in range(v.shape[0]):
            c = np.tanh(c) * v[i] + np.sin(v[i])
        return c.sum()

    eps, want = 1e-6, np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        want[index] = (numpy_loop(x + step) - numpy_loop(x - step)) / (2 * eps)
    for grad in (
        spmd.grad(lambda v: snp.sum(loop(v))),
        spmd.jit(spmd.grad(lambda v: snp.sum(loop(v)))),
    ):
        got = grad(x)
        assert got.dtype == np.float32
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5)
