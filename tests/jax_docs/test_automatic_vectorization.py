"""JAX's "Automatic vectorization" page, ported to spmd.

Source: jax-ml/jax docs/automatic-vectorization.md at commit
cec06d116c05f0d52adfceee3d3b730fdbcb0ce5. Each code cell is copied with only the imports
swapped (``import jax`` -> ``import spmd as jax`` and so on); where a cell shows a value, the
test checks it against a NumPy loop written here, not against JAX's printout.
"""

import numpy as np

import spmd as jax
import spmd.numpy as jnp


def numpy_convolve(x, w):
    """The page's ``convolve`` as a NumPy loop: the valid-mode correlation of ``x`` with
    ``w``."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    return np.array([x[i - 1 : i + 2] @ w for i in range(1, len(x) - 1)])


def first_cells():
    x = jnp.arange(5)
    w = jnp.array([2.0, 3.0, 4.0])

    def convolve(x, w):
        output = []
        for i in range(1, len(x) - 1):
            output.append(jnp.dot(x[i - 1 : i + 2], w))
        return jnp.array(output)

    xs = jnp.stack([x, x])
    ws = jnp.stack([w, w])
    return x, w, convolve, xs, ws


def test_convolve_of_two_vectors():
    x = jnp.arange(5)
    w = jnp.array([2.0, 3.0, 4.0])

    def convolve(x, w):
        output = []
        for i in range(1, len(x) - 1):
            output.append(jnp.dot(x[i - 1 : i + 2], w))
        return jnp.array(output)

    out = convolve(x, w)
    np.testing.assert_allclose(out, numpy_convolve(np.arange(5), [2.0, 3.0, 4.0]))
    assert out.shape == (3,)


def test_stacked_batches_and_manually_batched_convolve():
    x, w, convolve, _, _ = first_cells()

    xs = jnp.stack([x, x])
    ws = jnp.stack([w, w])
    assert xs.shape == (2, 5) and ws.shape == (2, 3)

    def manually_batched_convolve(xs, ws):
        output = []
        for i in range(xs.shape[0]):
            output.append(convolve(xs[i], ws[i]))
        return jnp.stack(output)

    out = manually_batched_convolve(xs, ws)
    expected = numpy_convolve(np.arange(5), [2.0, 3.0, 4.0])
    np.testing.assert_allclose(out, np.stack([expected, expected]))


def test_manually_vectorized_convolve():
    _, _, _, xs, ws = first_cells()

    def manually_vectorized_convolve(xs, ws):
        output = []
        for i in range(1, xs.shape[-1] - 1):
            output.append(jnp.sum(xs[:, i - 1 : i + 2] * ws, axis=1))
        return jnp.stack(output, axis=1)

    out = manually_vectorized_convolve(xs, ws)
    expected = numpy_convolve(np.arange(5), [2.0, 3.0, 4.0])
    np.testing.assert_allclose(out, np.stack([expected, expected]))


def test_vmap_batches_convolve():
    _, _, convolve, xs, ws = first_cells()

    auto_batch_convolve = jax.vmap(convolve)

    out = auto_batch_convolve(xs, ws)
    expected = [numpy_convolve(a, b) for a, b in zip(np.asarray(xs), np.asarray(ws), strict=True)]
    np.testing.assert_allclose(out, np.stack(expected))


def test_vmap_in_axes_and_out_axes_one():
    _, _, convolve, xs, ws = first_cells()

    auto_batch_convolve_v2 = jax.vmap(convolve, in_axes=1, out_axes=1)

    xst = jnp.transpose(xs)
    wst = jnp.transpose(ws)

    out = auto_batch_convolve_v2(xst, wst)
    expected = [numpy_convolve(a, b) for a, b in zip(np.asarray(xs), np.asarray(ws), strict=True)]
    np.testing.assert_allclose(out, np.stack(expected, axis=1))
    assert out.shape == (3, 2)


def test_vmap_with_an_unbatched_argument():
    _, w, convolve, xs, _ = first_cells()

    batch_convolve_v3 = jax.vmap(convolve, in_axes=[0, None])

    out = batch_convolve_v3(xs, w)
    expected = [numpy_convolve(a, np.asarray(w)) for a in np.asarray(xs)]
    np.testing.assert_allclose(out, np.stack(expected))


def test_jit_of_vmap():
    _, _, convolve, xs, ws = first_cells()
    auto_batch_convolve = jax.vmap(convolve)

    jitted_batch_convolve = jax.jit(auto_batch_convolve)

    out = jitted_batch_convolve(xs, ws)
    expected = [numpy_convolve(a, b) for a, b in zip(np.asarray(xs), np.asarray(ws), strict=True)]
    np.testing.assert_allclose(out, np.stack(expected))


def test_pairwise_distances_by_nested_vmap():
    def pairwise(f, xs):
        return jax.vmap(lambda x: jax.vmap(lambda y: f(x, y))(xs))(xs)

    # The page describes pairwise(dist, xs) without running it: run it on 4 points in 3-D.
    def dist(x, y):
        return jnp.sqrt(jnp.sum((x - y) ** 2))

    points = np.random.default_rng(0).normal(size=(4, 3))
    out = pairwise(dist, jnp.asarray(points))
    expected = np.linalg.norm(points[:, None, :] - points[None, :, :], axis=-1)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
