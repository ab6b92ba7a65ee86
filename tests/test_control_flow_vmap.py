"""vmap of lax.switch, lax.fori_loop with static bounds and lax.map against a Python loop over
the batch, eagerly and under jit: batched indices (each member its own branch, clamped),
batched and unbatched operands, and in_axes/out_axes other than 0."""

from __future__ import annotations

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import lax

RNG = np.random.default_rng(0)
BRANCHES_NP = [lambda a, b: a * b, lambda a, b: a + b, lambda a, b: np.maximum(a, b) - 1]
BRANCHES = [lambda a, b: a * b, lambda a, b: a + b, lambda a, b: snp.maximum(a, b) - 1]


def run(f, jitted: bool):
    return spmd.jit(f) if jitted else f


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_switch_with_a_batched_index_matches_a_loop(jitted):
    index = np.array([-2, 0, 1, 2, 5], dtype=np.int32)  # clamped to 0, 0, 1, 2, 2
    x, w = RNG.normal(size=(5, 3)), RNG.normal(size=(3,))
    got = run(spmd.vmap(lambda k, a: lax.switch(k, BRANCHES, a, w)), jitted)(index, x)
    want = [BRANCHES_NP[min(max(k, 0), 2)](x[i], w) for i, k in enumerate(index)]
    np.testing.assert_allclose(np.asarray(got), np.stack(want), rtol=1e-12)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_switch_with_one_index_over_batched_operands_matches_a_loop(jitted):
    x, w = RNG.normal(size=(4, 2)), RNG.normal(size=(2, 4))
    f = spmd.vmap(lambda a, b: lax.switch(1, BRANCHES, a, b), in_axes=(0, 1), out_axes=1)
    got = run(f, jitted)(x, w)
    want = np.stack([x[i] + w[:, i] for i in range(4)], axis=1)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


def fori_np(lower, upper, v, w):
    for i in range(lower, upper):
        v = v * w if i % 2 == 0 else v + w
    return v


@pytest.mark.parametrize("bounds", [(0, 4), (2, 5), (3, 1)], ids=["0:4", "2:5", "3:1"])
@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_static_fori_loop_matches_a_loop(bounds, jitted):
    lower, upper = bounds
    x, w = RNG.normal(size=(3, 2)), RNG.normal(size=(2, 3))

    def f(v, b):
        return lax.fori_loop(lower, upper, lambda i, c: snp.where(i % 2 == 0, c * b, c + b), v)

    got = run(spmd.vmap(f, in_axes=(0, 1)), jitted)(x, w)
    want = np.stack([fori_np(lower, upper, x[i], w[:, i]) for i in range(3)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    unbatched_w = run(spmd.vmap(f, in_axes=(0, None)), jitted)(x, w[:, 0])
    want = np.stack([fori_np(lower, upper, x[i], w[:, 0]) for i in range(3)])
    np.testing.assert_allclose(np.asarray(unbatched_w), want, rtol=1e-12)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_map_matches_a_loop(jitted):
    xs = RNG.normal(size=(2, 4, 3))  # vmapped over axis 0, mapped over axis 1
    s = RNG.normal(size=(2,))

    def f(rows, scale):
        return lax.map(lambda r: r * scale + r.sum(), rows)

    got = run(spmd.vmap(f), jitted)(xs, s)
    want = np.stack([np.stack([r * s[b] + r.sum() for r in xs[b]]) for b in range(2)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_map_over_a_pytree_with_the_batch_on_another_axis_matches_a_loop(jitted):
    a, b = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 3))  # batch on axis 1, mapped on 0

    def f(p, q):
        return lax.map(lambda t: snp.maximum(t[0], t[1]) * t[0], (p, q))

    got = run(spmd.vmap(f, in_axes=1, out_axes=0), jitted)(a, b)
    want = np.stack([np.maximum(a[:, j], b[:, j]) * a[:, j] for j in range(3)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
