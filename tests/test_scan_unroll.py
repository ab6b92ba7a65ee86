"""``scan(..., unroll=k)`` and ``fori_loop(..., unroll=k)``: the same values and derivatives
as ``unroll=1`` (and as a Python loop), eagerly, under jit on a mesh and under grad, for
sampled lengths (0 and 1 included), unroll factors and directions; JAX's errors for the rest."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import P, lax
from spmd.errors import SpmdTypeError

RNG = np.random.default_rng(7)
CASES = [
    (int(n), unroll, bool(reverse))
    for n, unroll, reverse in zip(
        RNG.integers(0, 10, 16),
        [1, 2, 3, 4, True, False, 12, 2, 5, True, 3, 1, 2, 9, 4, 6],
        RNG.integers(0, 2, 16),
        strict=True,
    )
]


def body(c, x):
    c = c * snp.cos(x[0]) + x[1]
    return c, (c * 2.0, x[0] - c.sum())


def python_scan(init, xs, reverse):
    c, ys = init, []
    order = reversed(range(len(xs[0]))) if reverse else range(len(xs[0]))
    found = {}
    for t in order:
        c = c * np.cos(xs[0][t]) + xs[1][t]
        found[t] = (c * 2.0, xs[0][t] - c.sum())
    for t in range(len(xs[0])):
        ys.append(found[t])
    stacked = tuple(
        np.stack([y[k] for y in ys]) if ys else np.zeros((0, *shape))
        for k, shape in enumerate([init.shape, init.shape])
    )
    return c, stacked


def inputs(n):
    return np.ones(4), (RNG.normal(size=(n, 4)), RNG.normal(size=(n, 4)))


@pytest.mark.parametrize(("n", "unroll", "reverse"), CASES)
def test_unrolled_scan_gives_the_python_loops_values(n, unroll, reverse):
    init, xs = inputs(n)
    want_c, want_ys = python_scan(init, xs, reverse)
    for run in (lax.scan, lambda *a, **k: spmd.jit(lambda i, x: lax.scan(body, i, x, **k))(*a)):
        if run is lax.scan:
            c, ys = lax.scan(body, init, xs, reverse=reverse, unroll=unroll)
        else:
            c, ys = run(init, xs, reverse=reverse, unroll=unroll)
        np.testing.assert_allclose(np.asarray(c), want_c, rtol=1e-12, atol=1e-12)
        for got, want in zip(ys, want_ys, strict=True):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("n", "unroll", "reverse"), CASES[:8])
def test_unrolled_scan_has_the_same_gradient(n, unroll, reverse):
    init, xs = inputs(n)

    def loss(init, xs, unroll):
        c, (ys, zs) = lax.scan(body, init, xs, reverse=reverse, unroll=unroll)
        return (c * c).sum() + (ys * ys).sum() + zs.sum()

    want = spmd.grad(loss, argnums=(0, 1))(init, xs, 1)
    got = spmd.grad(loss, argnums=(0, 1))(init, xs, unroll)
    for a, b in zip(spmd.tree_util.tree_leaves(got), spmd.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)


def test_unrolled_scan_partitions_a_sharded_carry():
    mesh = spmd.make_mesh((8,), ("x",))
    init = spmd.device_put(np.ones(12), spmd.NamedSharding(mesh, P("x")))  # uneven blocks
    xs = RNG.normal(size=(7, 12))

    @spmd.jit
    def run(c, xs):
        return lax.scan(lambda c, x: (c * snp.sin(x) + x, c.sum()), c, xs, unroll=3)

    c, ys = run(init, xs)
    want_c, want_ys = np.ones(12), []
    for x in xs:
        want_ys.append(want_c.sum())
        want_c = want_c * np.sin(x) + x
    np.testing.assert_allclose(np.asarray(c), want_c, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(ys), want_ys, rtol=1e-12)


@pytest.mark.parametrize("unroll", [1, 2, 3, True])
def test_fori_loop_unroll(unroll):
    x = RNG.normal(size=5)
    got = lax.fori_loop(0, 7, lambda i, v: v * 0.9 + i, x, unroll=unroll)
    want = x.copy()
    for i in range(7):
        want = want * 0.9 + i
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


@pytest.mark.parametrize("unroll", [0, -2, 1.5, "2"])
def test_scan_refuses_an_unroll_that_is_not_a_positive_int(unroll):
    with pytest.raises(SpmdTypeError, match="unroll must be a bool or a positive int"):
        lax.scan(body, np.ones(4), inputs(3)[1], unroll=unroll)


def test_fori_loop_refuses_unroll_with_traced_bounds():
    @spmd.jit
    def run(n, x):
        return lax.fori_loop(0, n, lambda i, v: v + 1.0, x, unroll=2)

    with pytest.raises(SpmdTypeError, match="unroll=2 needs static bounds"):
        run(3, np.ones(2))
