"""Control flow partitioned: loops and branches under jit with sharded operands (their carry
kept sharded, a predicate from sharded data reduced first), and inside shard_map and pmap
bodies with collectives in the loop body. NumPy (and Python loops) is the oracle."""

from __future__ import annotations

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import lax
from spmd.sharding import NamedSharding
from spmd.sharding import PartitionSpec as P


def _mesh():
    return spmd.make_mesh((2, 4), ("x", "y"))


def _put(x, mesh, spec):
    return spmd.device_put(x, NamedSharding(mesh, spec))


@pytest.mark.parametrize("shape", [(8, 4), (7, 5), (3, 2)])  # even, uneven, empty blocks
def test_fori_loop_keeps_its_carry_sharded(shape):
    mesh = _mesh()
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) / 7.0

    def f(a):
        return lax.fori_loop(0, 5, lambda i, c: c * 1.5 + a, snp.zeros_like(a))

    g = spmd.jit(f)
    xs = _put(x, mesh, P("x", "y"))
    g(xs)
    with spmd.debug.count_collectives() as counts:
        out = g(xs)
    expected = np.zeros_like(x)
    for _ in range(5):
        expected = expected * 1.5 + x
    np.testing.assert_allclose(np.asarray(out), expected)
    assert out.sharding.spec == P("x", "y")
    assert counts.total == 0, counts  # the carry never leaves its devices


def test_while_loop_predicate_from_sharded_data_is_reduced_once_per_iteration():
    mesh = _mesh()
    x = np.arange(1.0, 33.0).reshape(8, 4)

    def f(a):
        return lax.while_loop(lambda c: snp.sum(c) < 1e5, lambda c: c * 2.0, a)

    g = spmd.jit(f)
    xs = _put(x, mesh, P("x", "y"))
    g(xs)
    with spmd.debug.count_collectives() as counts:
        out = g(xs)
    expected, trips = x.copy(), 0
    while expected.sum() < 1e5:
        expected, trips = expected * 2.0, trips + 1
    np.testing.assert_allclose(np.asarray(out), expected)
    assert out.sharding.spec == P("x", "y")
    assert trips > 1
    assert dict(counts) == {"all-reduce": trips + 1}, counts  # the predicate's sum only
    text = g.lower(xs).as_text()
    assert "  cond {" in text and "  body {" in text and "all_reduce" in text


def test_scan_over_sharded_xs_stacks_sharded_ys():
    mesh = _mesh()
    xs = np.arange(6 * 8 * 3, dtype=np.float64).reshape(6, 8, 3) / 10.0
    init = np.ones((8, 3))

    def f(c, x):
        return lax.scan(lambda c, x: (c * 0.5 + snp.sin(x), c + x), c, x)

    g = spmd.jit(f)
    carry, ys = g(_put(init, mesh, P("x")), _put(xs, mesh, P(None, "x", "y")))
    c, expected_ys = init.copy(), []
    for x in xs:
        expected_ys.append(c + x)
        c = c * 0.5 + np.sin(x)
    np.testing.assert_allclose(np.asarray(carry), c)
    np.testing.assert_allclose(np.asarray(ys), np.stack(expected_ys))
    assert ys.sharding.spec[1:] != ()  # the ys stay split along their slices' axes


def test_cond_on_an_index_from_sharded_data():
    mesh = _mesh()
    x = np.arange(32.0).reshape(8, 4) - 10.0

    def f(a):
        return lax.cond(snp.sum(a) > 0, lambda v: v * 2.0, lambda v: v - 1.0, a)

    g = spmd.jit(f)
    for data in (x, -x):
        out = g(_put(data, mesh, P("x", "y")))
        expected = data * 2.0 if data.sum() > 0 else data - 1.0
        np.testing.assert_allclose(np.asarray(out), expected)


def test_grad_through_a_scan_under_jit_with_sharded_operands():
    mesh = _mesh()
    rng = np.random.default_rng(0)
    w = rng.normal(size=(8, 4))
    xs = rng.normal(size=(5, 8, 4))

    def loss(w, xs):
        def step(c, x):
            c = snp.tanh(c * w + x)
            return c, snp.sum(c)

        c, ys = lax.scan(step, snp.zeros_like(w), xs)
        return snp.sum(ys) + snp.sum(c * c)

    grad = spmd.jit(spmd.grad(loss))(_put(w, mesh, P("x", "y")), _put(xs, mesh, P(None, "x")))

    def numpy_loss(w):
        c, total = np.zeros_like(w), 0.0
        for x in xs:
            c = np.tanh(c * w + x)
            total += c.sum()
        return total + (c * c).sum()

    eps, fd = 1e-6, np.zeros_like(w)
    for i in np.ndindex(w.shape):
        d = np.zeros_like(w)
        d[i] = eps
        fd[i] = (numpy_loss(w + d) - numpy_loss(w - d)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(grad), fd, rtol=1e-6, atol=1e-8)


def test_collective_matmul_as_a_ring_of_ppermutes_in_a_fori_loop():
    mesh = spmd.make_mesh((4,), ("i",))
    n = 4
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(8, 8)), rng.normal(size=(8, 5))

    def block(a_block, b_block):  # a split by columns, b by rows: a @ b summed in a ring
        me = lax.axis_index("i")

        def step(k, carry):
            acc, piece = carry
            owner = (me + k) % n  # whose rows of b this piece of a multiplies
            rows = lax.dynamic_slice_in_dim(b_full, owner * 2, 2, axis=0)
            acc = acc + piece @ rows
            piece = lax.ppermute(piece, "i", [(j, (j - 1) % n) for j in range(n)])
            return acc, piece

        b_full = lax.all_gather(b_block, "i", tiled=True)
        zeros = lax.pcast(snp.zeros((8, 5)), ("i",), to="varying")
        acc, _ = lax.fori_loop(0, n, step, (zeros, a_block))
        return acc[None]  # every device's whole product

    g = spmd.jit(
        spmd.shard_map(block, mesh=mesh, in_specs=(P(None, "i"), P("i")), out_specs=P("i"))
    )
    out = g(a, b)
    np.testing.assert_allclose(np.asarray(out), np.stack([a @ b] * n), rtol=1e-12)
    text = g.lower(a, b).as_text()
    body = text[text.index("body {") :]
    assert "ppermute" in body


def test_while_loop_with_a_psum_predicate_inside_shard_map():
    mesh = spmd.make_mesh((4,), ("i",))
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])

    def block(v):
        def cond(c):
            return lax.psum(snp.sum(c), "i") < 1000.0

        def body(c):
            return c * 2.0 + lax.psum(snp.sum(c), "i") / 100.0

        return lax.while_loop(cond, body, v)

    g = spmd.jit(spmd.shard_map(block, mesh=mesh, in_specs=P("i"), out_specs=P("i")))
    out = g(x)
    expected = x.copy()
    while expected.sum() < 1000.0:
        expected = expected * 2.0 + expected.sum() / 100.0
    np.testing.assert_allclose(np.asarray(out), expected)


def test_a_varying_predicate_with_collectives_in_the_body_is_refused():
    mesh = spmd.make_mesh((4,), ("i",))

    def block(v):
        return lax.while_loop(lambda c: snp.sum(c) < 100.0, lambda c: c + lax.psum(c, "i"), v)

    g = spmd.jit(spmd.shard_map(block, mesh=mesh, in_specs=P("i"), out_specs=P("i")))
    with pytest.raises(spmd.SpmdError, match=r"predicate varies over mesh axes.*psum"):
        g(np.arange(1.0, 9.0))


def test_a_varying_predicate_without_collectives_runs_per_device():
    mesh = spmd.make_mesh((4,), ("i",))
    x = np.arange(1.0, 9.0)

    def block(v):
        return lax.while_loop(lambda c: snp.sum(c) < 50.0, lambda c: c * 2.0, v)

    out = spmd.jit(spmd.shard_map(block, mesh=mesh, in_specs=P("i"), out_specs=P("i")))(x)
    expected = []
    for piece in x.reshape(4, 2):
        while piece.sum() < 50.0:
            piece = piece * 2.0
        expected.append(piece)
    np.testing.assert_allclose(np.asarray(out), np.concatenate(expected))


def test_pmap_scan_with_psum():
    x = np.arange(8 * 3, dtype=np.float64).reshape(8, 3)

    def f(row):
        def step(c, v):
            total = lax.psum(v, "d")
            return c + total, total * c

        return lax.scan(step, 0.0, row)

    carry, ys = spmd.pmap(f, axis_name="d")(x)
    sums = x.sum(axis=0)
    c, expected = 0.0, []
    for s in sums:
        expected.append(s * c)
        c = c + s
    np.testing.assert_allclose(np.asarray(carry), np.full(8, c))
    np.testing.assert_allclose(np.asarray(ys), np.tile(expected, (8, 1)))


def test_explain_names_the_collectives_inside_loop_bodies():
    mesh = _mesh()
    x = np.arange(32.0).reshape(8, 4)

    def f(a):
        return lax.while_loop(lambda c: snp.max(c) < 100.0, lambda c: c + 3.0, a)

    explained = spmd.jit(f).lower(_put(x, mesh, P("x", "y"))).explain()
    assert "in the cond of while (each iteration)" in explained


def test_a_loop_without_collectives_runs_each_devices_own_uneven_block():
    mesh = spmd.make_mesh((4,), ("i",))
    x = np.arange(10.0)  # blocks of 3, 3, 3 and 1

    def block(b):
        return lax.fori_loop(0, 3, lambda i, v: v * 2 + b, b)

    f = spmd.jit(spmd.shard_map(block, mesh=mesh, in_specs=P("i"), out_specs=P("i")))
    expected = x.copy()
    for _ in range(3):
        expected = expected * 2 + x
    np.testing.assert_array_equal(np.asarray(f(x)), expected)


def test_a_loop_with_collectives_over_uneven_blocks_is_refused():
    mesh = spmd.make_mesh((4,), ("i",))

    def block(b):
        return lax.fori_loop(0, 2, lambda i, v: v + lax.psum(v.sum(), "i"), b)

    f = spmd.jit(spmd.shard_map(block, mesh=mesh, in_specs=P("i"), out_specs=P("i")))
    with pytest.raises(spmd.ShapeError, match="split unevenly"):
        f(np.arange(10.0))


def test_a_body_giving_one_value_twice_gives_two_values():
    # Each of the cond's outputs lets go of its blocks at its own last use.
    mesh = spmd.make_mesh((2,), ("a",))
    x = spmd.device_put(np.float64(0.7), spmd.NamedSharding(mesh, P()))
    w = spmd.device_put(np.float64(-0.3), spmd.NamedSharding(mesh, P()))

    def f(x, w):
        return lax.cond(snp.sum(x > 0), lambda a, b: a + b, lambda a, b: a * b, x, w)

    grads = spmd.jit(lambda x, w: spmd.grad(f, argnums=(0, 1))(x, w))(x, w)
    assert [float(g) for g in grads] == [1.0, 1.0]
    twice = spmd.jit(lambda x: lax.cond(x > 0, lambda a: (a, a), lambda a: (a, -a), x))
    a, b = twice(x)
    assert float(snp.sin(a) + 0.0) == float(np.sin(0.7)) and float(b * 2.0) == 1.4
