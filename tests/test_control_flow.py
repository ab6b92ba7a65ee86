"""lax.cond, switch, while_loop, fori_loop, scan, map and select as primitives holding
Programs: NumPy and Python-loop oracles, programs that do not grow with the trip count,
derivatives against float64 finite differences, vmap against a loop, jit on meshes, shard_map
bodies, and the errors JAX raises."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import P, lax

RNG = np.random.default_rng(0)


def finite_difference(f, x, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        grad[i] = (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return grad


def body(c, x):
    c = c * snp.sin(x) + x
    return c, c * c


def scan_loss(x):
    carry, ys = lax.scan(body, snp.ones(3), x)
    return (carry * carry).sum() + ys.sum()


def python_scan(init, xs):
    c, ys = init, []
    for x in xs:
        c = c * np.sin(x) + x
        ys.append(c * c)
    return c, np.stack(ys)


@pytest.mark.parametrize("jitted", [False, True])
def test_cond_and_switch_match_python(jitted):
    x = RNG.normal(size=4)

    def f(p, k, x):
        a = lax.cond(p, lambda v: snp.sin(v), lambda v: snp.cos(v), x)
        b = lax.switch(k, [lambda v: v + 1, lambda v: v * 2, lambda v: -v], x)
        return a, b

    g = spmd.jit(f) if jitted else f
    for p in (True, False):
        for k in (-3, 0, 1, 2, 9):
            a, b = g(p, k, x)
            np.testing.assert_allclose(a, np.sin(x) if p else np.cos(x), rtol=1e-12)
            want = [x + 1, x * 2, -x][min(max(k, 0), 2)]
            np.testing.assert_allclose(b, want, rtol=1e-12)


def test_cond_takes_integer_predicates_and_the_old_operand_form():
    x = np.arange(3.0)
    np.testing.assert_array_equal(spmd.jit(lambda p: lax.cond(p, lambda: x, lambda: -x))(2), x)
    got = lax.cond(False, 1.0, lambda a: a + x, 2.0, lambda b: b * x)
    np.testing.assert_array_equal(got, 2.0 * x)


def test_while_loop_and_fori_loop_with_traced_bounds():
    def collatz(n):
        return lax.while_loop(
            lambda c: c[0] != 1,
            lambda c: (snp.where(c[0] % 2 == 0, c[0] // 2, 3 * c[0] + 1), c[1] + 1),
            (n, 0),
        )[1]

    def steps(n):
        count = 0
        while n != 1:
            n, count = (n // 2 if n % 2 == 0 else 3 * n + 1), count + 1
        return count

    for n in (1, 6, 27):
        assert int(spmd.jit(collatz)(n)) == steps(n)
    f = spmd.jit(lambda lo, hi, v: lax.fori_loop(lo, hi, lambda i, v: v * 2 + i, v))
    want = np.arange(3.0)
    for i in range(2, 6):
        want = want * 2 + i
    np.testing.assert_array_equal(f(2, 6, np.arange(3.0)), want)
    np.testing.assert_array_equal(f(6, 2, np.arange(3.0)), np.arange(3.0))


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_pytrees_and_map(reverse):
    xs = {"a": RNG.normal(size=(5, 2)), "b": RNG.normal(size=5)}

    def f(c, x):
        return (c[0] + x["a"], c[1] * x["b"]), {"s": c[0].sum()}

    (c0, c1), ys = lax.scan(f, (np.zeros(2), 1.0), xs, reverse=reverse)
    order = range(4, -1, -1) if reverse else range(5)
    w0, w1, ws = np.zeros(2), 1.0, {}
    for i in order:
        ws[i] = w0.sum()
        w0, w1 = w0 + xs["a"][i], w1 * xs["b"][i]
    np.testing.assert_allclose(c0, w0, rtol=1e-12)
    np.testing.assert_allclose(c1, w1, rtol=1e-12)
    np.testing.assert_allclose(ys["s"], [ws[i] for i in range(5)], rtol=1e-12)
    rows = RNG.normal(size=(7, 3))
    for batch in (None, 2, 7):
        np.testing.assert_allclose(
            lax.map(lambda r: (r * r).sum(), rows, batch_size=batch), (rows * rows).sum(1)
        )


def test_select():
    p = np.array([True, False, True])
    np.testing.assert_array_equal(lax.select(p, np.ones(3), np.zeros(3)), [1.0, 0.0, 1.0])
    with pytest.raises(spmd.SpmdTypeError, match="pred must be boolean"):
        lax.select(np.ones(3), np.ones(3), np.zeros(3))
    with pytest.raises(spmd.SpmdTypeError, match="same shape and dtype"):
        lax.select(p, np.ones(3), np.zeros(3, np.float32))


def test_programs_do_not_grow_with_the_trip_count():
    def text(n):
        f = lambda x: lax.scan(lambda c, _: (c * 2.0, c), x, None, length=n)  # noqa: E731
        return str(spmd.make_jaxpr(f)(np.ones(2))).replace(str(n), "N")

    assert "scan[" in text(10) and len(text(10)) == len(text(10_000))
    g = lambda x: lax.fori_loop(0, 10_000, lambda i, v: v + 1.0, x)  # noqa: E731
    assert len(str(spmd.make_jaxpr(g)(np.ones(2)))) < 2000
    np.testing.assert_array_equal(g(np.ones(2)), [10_001.0, 10_001.0])


def test_scan_matches_python_and_its_gradient_matches_finite_differences():
    x = RNG.normal(size=(4, 3))
    carry, ys = lax.scan(body, snp.ones(3), x)
    want_c, want_ys = python_scan(np.ones(3), x)
    np.testing.assert_allclose(carry, want_c, rtol=1e-12)
    np.testing.assert_allclose(ys, want_ys, rtol=1e-12)
    for fn in (scan_loss, spmd.jit(scan_loss)):
        np.testing.assert_allclose(spmd.grad(fn)(x), finite_difference(scan_loss, x), rtol=1e-6)


def test_gradients_of_cond_switch_and_static_fori_loop():
    x = RNG.normal(size=3)

    def f(x):
        a = lax.cond(x.sum() > 0, lambda v: (v**3).sum(), lambda v: snp.sin(v).sum(), x)
        b = lax.switch(1, [lambda v: v.sum(), lambda v: (v * v * 2).sum()], x)
        c = lax.fori_loop(0, 3, lambda i, v: v * snp.cos(v) + i, x).sum()
        return a + b + c

    for point in (x, -np.abs(x)):
        np.testing.assert_allclose(spmd.grad(f)(point), finite_difference(f, point), rtol=1e-6)


def test_scan_with_a_closure_and_checkpoint_in_the_body():
    w = RNG.normal(size=3)

    def f(w, x):
        step = spmd.checkpoint(lambda c, xi: (snp.tanh(c * w + xi), c.sum()))
        carry, ys = lax.scan(step, snp.zeros(3), x)
        return carry.sum() + (ys * ys).sum()

    x = RNG.normal(size=(5, 3))
    np.testing.assert_allclose(
        spmd.grad(f)(w, x), finite_difference(lambda v: f(v, x), w), rtol=1e-6
    )
    np.testing.assert_allclose(
        spmd.grad(f, argnums=1)(w, x), finite_difference(lambda v: f(w, v), x), rtol=1e-6
    )


def test_jvp_of_while_loop_and_its_reverse_mode_error():
    def f(v):
        return lax.while_loop(lambda v: v.sum() < 50, lambda v: v * snp.exp(v * 0.1), v)

    x, t = np.array([1.0, 2.0]), np.array([0.3, -0.2])
    _, tangent = spmd.jvp(f, (x,), (t,))
    eps = 1e-6
    np.testing.assert_allclose(tangent, (f(x + eps * t) - f(x - eps * t)) / (2 * eps), rtol=1e-6)
    with pytest.raises(spmd.SpmdTypeError, match="Reverse-mode differentiation does not work"):
        spmd.grad(lambda v: f(v).sum())(x)


def test_vmap_matches_a_python_loop():
    preds = np.array([True, False, True])
    xs = RNG.normal(size=(3, 4, 2))

    def f(p, x):
        y = lax.cond(p, lambda v: v * 2, lambda v: v - 1, x)
        c, ys = lax.scan(lambda c, r: (c + r, c.sum()), snp.zeros(2), y)
        n = lax.while_loop(lambda v: v < x.sum() * 10 + 100, lambda v: v * 2, 1.0)
        return c, ys, n

    got = spmd.vmap(f)(preds, xs)
    for i in range(3):
        want = f(preds[i], xs[i])
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g[i], w, rtol=1e-12)


@pytest.mark.parametrize("n", [8, 9, 3])
def test_jit_on_sharded_operands_including_uneven_splits(n):
    mesh = spmd.make_mesh((4,), ("i",))
    x = RNG.normal(size=(n, 2))
    xs = spmd.device_put(x, spmd.NamedSharding(mesh, P("i")))

    def f(xs):
        c, ys = lax.scan(body, snp.ones(2), xs)
        return lax.cond(c.sum() > 0, lambda: ys, lambda: -ys)

    c, ys = python_scan(np.ones(2), x)
    np.testing.assert_allclose(spmd.jit(f)(xs), ys if c.sum() > 0 else -ys, rtol=1e-12)


@pytest.mark.parametrize("jitted", [False, True])
def test_inside_shard_map(jitted):
    mesh = spmd.make_mesh((2,), ("i",))

    def block(b):
        init = lax.pcast(snp.zeros(()), "i", to="varying")
        c, ys = lax.scan(lambda c, x: (c + x, c), init, b)
        return lax.cond(c > 4, lambda: ys, lambda: ys * 0)

    g = spmd.shard_map(block, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    got = (spmd.jit(g) if jitted else g)(np.arange(6.0))
    np.testing.assert_array_equal(got, [0.0, 0.0, 0.0, 0.0, 3.0, 7.0])


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: lax.cond(np.ones(2) > 0, lambda: 1.0, lambda: 2.0), spmd.SpmdTypeError,
         "must be a scalar"),
        (lambda: lax.cond(1.5, lambda: 1.0, lambda: 2.0), spmd.SpmdTypeError,
         "boolean or integer"),
        (lambda: lax.cond(True, lambda: np.ones(2), lambda: np.ones(3)), spmd.SpmdTypeError,
         r"identical types, but false_fun's output out has type float64\[3\] and "
         r"true_fun's has type float64\[2\]"),
        (lambda: lax.cond(True, lambda: {"a": np.int32(1)}, lambda: {"a": np.float32(1)}),
         spmd.SpmdTypeError, r"out\['a'\]"),
        (lambda: lax.cond(True, lambda: (1.0,), lambda: 1.0), spmd.SpmdTypeError,
         "same pytree structure"),
        (lambda: lax.switch(1.0, [lambda: 1.0], ), spmd.SpmdTypeError, "integer scalar"),
        (lambda: lax.while_loop(lambda v: v, lambda v: v + 1, 0), spmd.SpmdTypeError,
         "boolean scalar"),
        (lambda: lax.while_loop(lambda v: v[0] < 3, lambda v: (v[0] + 1, v[1].astype(np.float32)),
                                (0, np.ones(2))), spmd.SpmdTypeError, r"carry\[1\]"),
        (lambda: lax.fori_loop(0.0, 3, lambda i, v: v, 1.0), spmd.SpmdTypeError,
         "lower must be an integer"),
        (lambda: spmd.jit(lambda n: lax.scan(lambda c, x: (c, x), 0.0, None, length=n))(3),
         spmd.SpmdTypeError, "length must be a static int"),
        (lambda: lax.scan(lambda c, x: (c, x), 0.0, (np.zeros(2), np.zeros(3))), spmd.ShapeError,
         r"sizes \[2, 3\]"),
    ],
)  # fmt: skip
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def _psum_loop_reference(x: np.ndarray, blocks: int, steps: int) -> np.ndarray:
    """Each device's value after ``steps`` of ``v + psum(v)``, by a loop over the devices."""
    values = [block.sum() for block in np.split(x, blocks)]
    for _ in range(steps):
        total = sum(values)
        values = [v + total for v in values]
    return np.array(values)


def test_a_collective_in_a_loop_body_runs_under_jit():
    mesh = spmd.make_mesh((2,), ("i",))

    def block(b):
        return lax.fori_loop(0, 2, lambda i, v: v + lax.psum(v, "i"), b.sum(keepdims=True))

    g = spmd.shard_map(block, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    x = np.arange(4.0)
    np.testing.assert_array_equal(np.asarray(spmd.jit(g)(x)), _psum_loop_reference(x, 2, 2))


def test_a_collective_in_a_loop_body_of_an_eager_shard_map_runs_compiled():
    mesh = spmd.make_mesh((2,), ("i",))

    def block(b):
        return lax.fori_loop(0, 2, lambda i, v: v + lax.psum(v, "i"), b.sum(keepdims=True))

    g = spmd.shard_map(block, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    x = np.arange(4.0)
    np.testing.assert_array_equal(np.asarray(g(x)), _psum_loop_reference(x, 2, 2))


@pytest.mark.parametrize("jitted", [False, True])
def test_fori_loop_index_from_python_bounds_keeps_a_float32_carry_float32(jitted):
    x = np.linspace(-1, 1, 6).astype(np.float32)

    def f(v):
        return lax.fori_loop(0, 3, lambda i, v: v * i + v + i, v)

    expected = x.copy()
    for i in range(3):
        expected = expected * np.float32(i) + expected + np.float32(i)
    got = (spmd.jit(f) if jitted else f)(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6)


def test_fori_loop_index_from_numpy_bounds_is_their_dtype():
    x = np.ones(3, np.float32)
    with pytest.raises(spmd.SpmdTypeError, match="float64"):
        lax.fori_loop(np.int64(0), np.int64(2), lambda i, v: v + i, x)


def test_weak_carries_that_feed_each_other_are_promoted_together():
    def step(c):
        return c[1], c[1] + 1.0

    got = lax.while_loop(lambda c: c[0] < 3, step, (2.0, 2.5))
    c = (2.0, 2.5)
    while c[0] < 3:
        c = step(c)
    assert [float(x) for x in got] == list(c)
    assert all(x.dtype == np.float64 for x in got)
