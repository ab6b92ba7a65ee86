"""spmd.lax.reduce_window against a plain-loop reference (tests/cases/windows.py) on sampled
windows, strides, paddings and dilations of ranks 1 to 4; max and average pooling as stax
writes them; gradients against finite differences in float64; ties, NaN and pytrees of
operands; sharded runs (a split batch needs no communication, nor whole windows split
evenly; a split windowed dimension is gathered) equal to unsharded ones, eagerly and under
jit; vmap against a loop; the implementations on the other array namespaces; and the errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P, ShapeError, SpmdTypeError, SpmdValueError, lax
from spmd.debug import count_collectives
from spmd.prims import windows_impl
from tests.cases.windows import highest, lowest, reference_reduce_window

MONOIDS = {  # computation name: (spmd's, NumPy's, init for a dtype)
    "add": (snp.add, np.add, lambda d: 0),
    "max": (snp.maximum, np.maximum, lowest),
    "min": (snp.minimum, np.minimum, highest),
    "mul": (snp.multiply, np.multiply, lambda d: 1),
}


def _geometry(rng, ndim: int) -> dict:
    """A random window of rank ``ndim``: sizes, strides, padding (string or pairs, some
    negative), dilations; some dimensions left unwindowed."""
    window = tuple(int(rng.integers(1, 4)) if rng.random() < 0.7 else 1 for _ in range(ndim))
    strides = tuple(int(rng.integers(1, 4)) for _ in range(ndim))
    if rng.random() < 0.4:
        padding = str(rng.choice(["VALID", "SAME", "SAME_LOWER"]))
    else:
        padding = tuple((int(rng.integers(-1, 3)), int(rng.integers(-1, 3))) for _ in range(ndim))
    geometry = {"window_dimensions": window, "window_strides": strides, "padding": padding}
    if rng.random() < 0.4:
        geometry["base_dilation"] = tuple(int(rng.integers(1, 3)) for _ in range(ndim))
    if rng.random() < 0.4:
        geometry["window_dilation"] = tuple(int(rng.integers(1, 3)) for _ in range(ndim))
    return geometry


def _sampled(count: int, seed: int):
    """(shape, geometry) draws whose negative padding crops no more than there is."""
    rng = np.random.default_rng(seed)
    draws = []
    while len(draws) < count:
        ndim = int(rng.integers(1, 5))
        shape = tuple(int(rng.integers(0 if rng.random() < 0.1 else 1, 7 - ndim))
                      for _ in range(ndim))  # fmt: skip
        geometry = _geometry(rng, ndim)
        if isinstance(geometry["padding"], str) or _fits(shape, geometry):
            draws.append((shape, geometry))
    return draws


def _fits(shape, geometry) -> bool:
    base = geometry.get("base_dilation", (1,) * len(shape))
    pairs = zip(shape, base, geometry["padding"], strict=True)
    return all((0 if n == 0 else 1 + b * (n - 1)) + lo + hi >= 0 for n, b, (lo, hi) in pairs)


SAMPLED = _sampled(40, seed=25)


@pytest.mark.parametrize("name", list(MONOIDS))
@pytest.mark.parametrize(("shape", "geometry"), SAMPLED, ids=[f"{s}-{g}" for s, g in SAMPLED])
def test_values_match_the_loop_reference_eagerly_and_under_jit(shape, geometry, name):
    ours, theirs, init = MONOIDS[name]
    for dtype in (np.float64, np.int32, np.float32):
        x = np.random.default_rng(1).integers(-4, 5, size=shape).astype(dtype)
        want = reference_reduce_window(x, init(dtype), theirs, **geometry)
        fn = lambda v, d=dtype: lax.reduce_window(v, init(d), ours, **geometry)  # noqa: E731
        for got in (fn(x), spmd.jit(fn)(x)):
            assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def max_pool(x, window, strides, padding="VALID"):  # stax's MaxPool over NHWC
    dims, steps = (1, *window, 1), (1, *strides, 1)
    return lax.reduce_window(x, -np.inf, lax_max(), dims, steps, padding)


def avg_pool(x, window, strides, padding="VALID"):  # stax's AvgPool (VALID: a plain mean)
    dims, steps = (1, *window, 1), (1, *strides, 1)
    return lax.reduce_window(x, 0.0, snp.add, dims, steps, padding) / math.prod(window)


def lax_max():
    return getattr(lax, "max", snp.maximum)  # lax.max is spmd.numpy.maximum where it exists


@pytest.mark.parametrize(("window", "strides", "padding"),
                         [((2, 2), (2, 2), "VALID"), ((3, 3), (2, 2), "SAME"),
                          ((3, 2), (1, 1), "VALID"), ((5, 4), (5, 4), "VALID")])  # fmt: skip
def test_max_and_average_pooling_as_stax_writes_them(window, strides, padding):
    x = np.random.default_rng(3).normal(size=(3, 5, 4, 2)).astype(np.float32)
    dims, steps = (1, *window, 1), (1, *strides, 1)
    want_max = reference_reduce_window(x, -np.inf, np.maximum, dims, steps, padding)
    np.testing.assert_allclose(max_pool(x, window, strides, padding), want_max, rtol=1e-6)
    if padding == "VALID":
        want = reference_reduce_window(x, 0, np.add, dims, steps, padding) / math.prod(window)
        np.testing.assert_allclose(avg_pool(x, window, strides), want, rtol=1e-5)


def _finite_difference(f, x, eps=1e-6):
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        grad[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


@pytest.mark.parametrize("name", ["add", "max", "min", "mul"])
@pytest.mark.parametrize(("shape", "geometry"), SAMPLED[:12], ids=[str(s) for s, _ in SAMPLED[:12]])
def test_gradients_match_finite_differences(shape, geometry, name):
    ours, theirs, init = MONOIDS[name]
    rng = np.random.default_rng(5)
    x = rng.permutation(np.linspace(-2, 2, math.prod(shape))).reshape(shape)  # no ties
    finite = np.isfinite(reference_reduce_window(x, init(x.dtype), theirs, **geometry))
    w = rng.normal(size=finite.shape)  # windows of padding alone (+-inf) are left out

    def loss(v):
        out = lax.reduce_window(v, init(x.dtype), ours, **geometry)
        return snp.sum(snp.where(finite, out, 0.0) * w)

    def reference(v):
        out = reference_reduce_window(v, init(v.dtype), theirs, **geometry)
        return float(np.sum(np.where(finite, out, 0.0) * w))

    want = _finite_difference(reference, x)
    for grad in (spmd.grad(loss), spmd.jit(spmd.grad(loss))):
        np.testing.assert_allclose(grad(x), want, rtol=1e-6, atol=1e-7)
    t = rng.normal(size=shape)
    _, tangent = spmd.jvp(loss, (x,), (t,))
    np.testing.assert_allclose(float(tangent), float(np.sum(want * t)), rtol=1e-6, atol=1e-7)


def test_the_gradient_of_a_tie_goes_to_the_first_maximal_element_and_nan_propagates():
    x = np.array([[1.0, 3.0, 3.0, 0.0], [3.0, 2.0, np.nan, 5.0]])
    pool = lambda v: lax.reduce_window(v, -np.inf, snp.maximum, (2, 2), (1, 2))  # noqa: E731
    np.testing.assert_array_equal(pool(x), [[3.0, np.nan]])
    grad = spmd.grad(lambda v: snp.sum(pool(v) * np.array([[2.0, 1.0]])))(x)
    np.testing.assert_array_equal(grad, [[0.0, 2.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]])
    ties = np.array([[2.0, 2.0], [2.0, 2.0]])
    np.testing.assert_array_equal(spmd.grad(lambda v: snp.sum(pool(v)))(ties), [[1, 0], [0, 0]])


def test_init_values_other_than_the_identity_count_once_per_window():
    x = np.arange(1.0, 6.0)
    got = lax.reduce_window(x, 1.0, snp.add, (2,), (1,), ((1, 1),), base_dilation=(2,))
    np.testing.assert_array_equal(got, [2, 2, 3, 3, 4, 4, 5, 5, 6, 6])  # holes skipped
    relu_pool = lax.reduce_window(x - 3, 0.0, snp.maximum, (2,), (2,))
    np.testing.assert_array_equal(relu_pool, [0, 1])


def test_a_pytree_of_operands_folds_pairs_argmax_pooling():
    x = np.random.default_rng(7).permutation(12).astype(np.float64).reshape(3, 4)
    index = np.arange(x.size, dtype=np.int64).reshape(x.shape)

    def pick(a, b):  # (value, index) of the larger value
        larger = b[0] > a[0]
        return snp.where(larger, b[0], a[0]), snp.where(larger, b[1], a[1])

    values, where = lax.reduce_window((x, index), (-np.inf, np.int64(-1)), pick, (2, 2), (1, 2))
    windows = [x[i : i + 2, j : j + 2] for i in range(2) for j in (0, 2)]
    np.testing.assert_array_equal(values, np.reshape([w.max() for w in windows], (2, 2)))
    np.testing.assert_array_equal(np.take(x, np.asarray(where)), values)


# --- sharded -----------------------------------------------------------------------------


def _mesh():
    return spmd.make_mesh((8,), ("x",))


@pytest.mark.parametrize("batch", [16, 5, 3])  # even, uneven, empty blocks
@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_batch_sharded_pooling_and_its_gradient_move_nothing(batch, jitted):
    x = np.random.default_rng(batch).normal(size=(batch, 6, 4, 3))
    xs = spmd.device_put(x, NamedSharding(_mesh(), P("x")))

    def step(v):  # the pools, and the gradient of sum(max_pool ** 2) (no sum: no all-reduce)
        pooled, back = spmd.vjp(lambda u: max_pool(u, (2, 2), (2, 2)), v)
        (grad,) = back(2 * pooled)
        return pooled + avg_pool(v, (3, 2), (1, 2))[:, :3], grad

    run = spmd.jit(step) if jitted else step
    with count_collectives() as counts:
        pooled, grad = run(xs)
    assert counts.total == 0, counts
    want_pooled, want_grad = step(x)
    np.testing.assert_allclose(pooled, want_pooled, rtol=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-12)
    assert pooled.sharding.spec == P("x") and grad.sharding.spec == P("x")
    if jitted:
        assert "none: every operand already lies" in spmd.jit(step).lower(xs).explain()


def test_whole_windows_split_evenly_need_no_communication():
    x = np.random.default_rng(2).normal(size=(32, 3))
    xs = spmd.device_put(x, NamedSharding(_mesh(), P("x")))
    pool = spmd.jit(lambda v: lax.reduce_window(v, -np.inf, snp.maximum, (4, 1), (4, 1)))
    with count_collectives() as counts:
        got = pool(xs)
    assert counts.total == 0 and got.sharding.spec == P("x"), counts
    np.testing.assert_array_equal(got, x.reshape(8, 4, 3).max(axis=1))


@pytest.mark.parametrize("rows", [13, 7])
def test_a_split_windowed_dimension_is_gathered_first(rows):
    x = np.random.default_rng(rows).normal(size=(rows, 4))
    xs = spmd.device_put(x, NamedSharding(_mesh(), P("x")))
    fn = lambda v: lax.reduce_window(v, 0.0, snp.add, (3, 2), (2, 1), "SAME")  # noqa: E731
    with count_collectives() as counts:
        got = spmd.jit(fn)(xs)
    assert counts.total >= 1, counts
    np.testing.assert_allclose(got, reference_reduce_window(x, 0, np.add, (3, 2), (2, 1), "SAME"))
    explained = spmd.jit(fn).lower(xs).explain()
    assert "all-gather" in explained and "reduce_window_sum (operand 0) reads it as" in explained
    assert "dimension 0 of operand 0 is gathered: a window dimension whose windows" in explained
    np.testing.assert_allclose(spmd.grad(lambda v: snp.sum(fn(v) ** 2))(xs),
                               spmd.grad(lambda v: snp.sum(fn(v) ** 2))(x), rtol=1e-12)  # fmt: skip


# --- vmap ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["add", "max", "min", "mul"])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_vmap_matches_a_loop(name, axis):
    ours, theirs, init = MONOIDS[name]
    x = np.random.default_rng(axis).normal(size=(3, 4, 5))
    geometry = {"window_dimensions": (2, 2), "window_strides": (1, 2), "padding": "SAME"}

    def one(v):
        return lax.reduce_window(v, init(v.dtype), ours, **geometry)

    got = spmd.vmap(one, in_axes=axis)(x)
    members = [np.take(x, i, axis) for i in range(x.shape[axis])]
    want = np.stack(
        [reference_reduce_window(m, init(m.dtype), theirs, **geometry) for m in members]
    )
    np.testing.assert_allclose(got, want, rtol=1e-12)
    grads = spmd.vmap(spmd.grad(lambda v: snp.sum(one(v) ** 2)), in_axes=axis)(x)
    for i in range(x.shape[axis]):
        single = spmd.grad(lambda v: snp.sum(one(v) ** 2))(np.take(x, i, axis))
        np.testing.assert_allclose(grads[i], single, rtol=1e-12)


# --- other array namespaces ----------------------------------------------------------------


@pytest.mark.parametrize("library", ["array_api_strict", "torch"])
@pytest.mark.parametrize("window", [(2, 3), (6, 4)])  # taps folded; many taps as blocks
def test_the_implementations_agree_on_other_namespaces(library, window):
    xp = pytest.importorskip(library)
    if library == "torch":
        xp = pytest.importorskip("array_api_compat.torch")
    params = {"window_dimensions": window, "window_strides": (1, 1) if window == (2, 3) else window,
              "padding": ((1, 0), (0, 0)) if window == (2, 3) else ((0, 0), (0, 0)),
              "base_dilation": (1, 1), "window_dilation": (1, 1)}  # fmt: skip
    rng = np.random.default_rng(4)
    x = rng.permutation(48).astype(np.float64).reshape(6, 8)
    x[1, 1] = np.nan
    shape = windows_impl.plan(x.shape, windows_impl.params_key(params)).out_shape
    t, ct = rng.normal(size=x.shape), rng.normal(size=shape)
    for select in ("max", "min"):
        calls = [
            lambda m, a, b, c, s=select: windows_impl.reduce_impl(s)(m, a, **params),
            lambda m, a, b, c, s=select: windows_impl.gather_impl(m, b, a, select=s, **params),
            lambda m, a, b, c, s=select: windows_impl.scatter_impl(m, c, a, select=s, **params),
            lambda m, a, b, c: windows_impl.sum_transpose_impl(
                m, c, operand_shape=x.shape, **params
            ),
        ]
        for call in calls:
            want = call(np, x, t, ct)
            got = call(xp, *(xp.asarray(v) for v in (x, t, ct)))
            np.testing.assert_array_equal(np.asarray(got), want)


# --- errors --------------------------------------------------------------------------------

ERRORS = [  # (arguments after the operand f32[4,6], error, words of its message)
    ((0.0, snp.add, (2,)), ShapeError, ["window_dimensions=(2,)", "f32[4,6]", "2 dimensions"]),
    ((0.0, snp.add, (2, 0)), SpmdValueError, ["window_dimensions=(2, 0)", "at least 1"]),
    ((0.0, snp.add, (2, 2), (1, -1)), SpmdValueError, ["window_strides=(1, -1)", "at least 1"]),
    ((0.0, snp.add, (2, 2.5)), SpmdTypeError, ["window_dimensions", "integers"]),
    ((0.0, "add", (2, 2)), SpmdTypeError, ["computation='add'", "lax.add"]),
    ((0.0, snp.add, (2, 2), None, "FULL"), SpmdValueError, ["padding='FULL'", "SAME"]),
    ((0.0, snp.add, (2, 2), None, ((1, 1),)), ShapeError, ["padding=((1, 1),)", "one (low"]),
    ((0.0, snp.add, (2, 2), None, ((-5, 0), (0, 0))), SpmdValueError, ["crops more", "f32[4,6]"]),
    ((np.zeros(2), snp.add, (2, 2)), SpmdTypeError, ["init_value has shape (2,)", "scalar"]),
    ((0.0, lambda a, b: snp.sum(a + b), (2, 2)), SpmdTypeError, ["act elementwise", "f32[]"]),
    ((0.0, lambda a, b: (a + b).astype(np.float64), (2, 2)), SpmdTypeError, ["keep the dtype"]),
]


@pytest.mark.parametrize(("args", "error", "words"), ERRORS, ids=[str(e[2][0]) for e in ERRORS])
@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_errors_name_the_argument_the_sizes_and_the_fix(args, error, words, jitted):
    x = np.zeros((4, 6), np.float32)
    fn = lambda v: lax.reduce_window(v, *args)  # noqa: E731
    with pytest.raises(error) as raised:
        (spmd.jit(fn) if jitted else fn)(x)
    for word in words:
        assert word in str(raised.value), (word, str(raised.value))


def test_dtype_errors_say_what_to_use_instead():
    with pytest.raises(SpmdTypeError, match=r"iinfo\(np.int32\).min"):
        lax.reduce_window(np.zeros((4,), np.int32), -np.inf, snp.maximum, (2,))
    with pytest.raises(SpmdTypeError, match="takes numbers, not bool"):
        lax.reduce_window(np.zeros((4,), bool), False, snp.add, (2,))
    with pytest.raises(SpmdTypeError, match="complex numbers have no order"):
        lax.reduce_window(np.zeros((4,), np.complex64), -np.inf, snp.maximum, (2,))
    with pytest.raises(SpmdValueError, match="init_value"):
        lax.reduce_window((np.zeros(3), np.zeros(3)), 0.0, snp.add, (2,))


def test_a_pending_sum_passes_through_a_windowed_sum():
    """A matmul over a split contraction leaves partial sums; the windowed sum (linear, its
    padding zeros) takes them as they are, and the one all-reduce comes after it."""
    rng = np.random.default_rng(8)
    a, b = rng.normal(size=(6, 16)), rng.normal(size=(16, 5))
    mesh = _mesh()
    a_s = spmd.device_put(a, NamedSharding(mesh, P(None, "x")))
    b_s = spmd.device_put(b, NamedSharding(mesh, P("x", None)))
    fn = lambda p, q: lax.reduce_window(p @ q, 0.0, snp.add, (2, 3), (2, 2), "SAME")  # noqa: E731
    explained = spmd.jit(fn).lower(a_s, b_s).explain()
    assert "reduce_window_sum -> P() pending sum over 'x'" in explained, explained
    with count_collectives() as counts:
        got = spmd.jit(fn)(a_s, b_s)
    assert counts.total == 1, counts
    want = reference_reduce_window(a @ b, 0, np.add, (2, 3), (2, 2), "SAME")
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
