"""Derivatives through shard_map (every collective, against the coordinate-loop reference
with finite differences), pmap, nested pmap, with_sharding_constraint and checkpoint."""

from __future__ import annotations

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P
from spmd.lax import pmean, psum
from tests import test_shard_map as ref

EPS = 1e-6


def directional(f_numpy, x, t):
    return (f_numpy(x + EPS * t) - f_numpy(x - EPS * t)) / (2 * EPS)


def pre(b):
    return b * b * 0.5 - b  # nonlinear, so that the collective's input depends on where it is


def even_cases():
    return [p for p in ref.collective_cases(120) if not p.values[5]][::3]


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize(("mesh_key", "shape", "spec", "name", "params", "uneven"), even_cases())
def test_collective_gradients_match_the_reference(mesh_key, shape, spec, name, params, uneven,
                                                  jitted):  # fmt: skip
    mesh = ref.mesh_of(mesh_key)
    everyone = tuple(mesh.axis_names)
    rng = np.random.default_rng(len(shape) + 3 * sum(shape))
    x = rng.normal(size=shape)

    def body(b):
        return ref.call_collective(name, pre(b), params)[None]

    f = spmd.shard_map(body, mesh, in_specs=spec, out_specs=P(everyone))

    def reference(v):
        blocks = ref.device_blocks(mesh, [spec], [v])
        values = {c: pre(b) for c, (b,) in blocks.items()}
        outs = ref.reference_collective(mesh, name, params, values)
        if name == "axis_index":
            outs = {c: values[c] + outs[c] for c in values}
        return np.stack([outs[c] for c in ref.coords_of(mesh)])

    weights = rng.normal(size=reference(x).shape)
    t = rng.normal(size=shape)

    def loss(v):
        return snp.sum(f(v) * weights)

    grad = (spmd.jit(spmd.grad(loss)) if jitted else spmd.grad(loss))(x)
    want = np.sum(directional(reference, x, t) * weights)
    np.testing.assert_allclose(float(np.sum(np.asarray(grad) * t)), want, rtol=1e-6, atol=1e-8)
    _, tangent = spmd.jvp(f, (x,), (t,))
    np.testing.assert_allclose(np.asarray(tangent), directional(reference, x, t), atol=1e-6)


def test_replicated_input_and_output_of_shard_map():
    mesh = spmd.make_mesh((4,), ("i",))
    x = np.arange(8.0)

    def f(w, v):
        body = spmd.shard_map(
            lambda w, b: psum(snp.sum(snp.sin(b * w)), "i"),
            mesh=mesh,
            in_specs=(P(), P("i")),
            out_specs=P(),
        )
        return body(w, v)

    w = 0.7
    gw, gx = spmd.grad(f, argnums=(0, 1))(w, x)
    np.testing.assert_allclose(gw, np.sum(x * np.cos(w * x)), rtol=1e-12)
    np.testing.assert_allclose(gx, w * np.cos(w * x), rtol=1e-12)
    jw, jx = spmd.jit(spmd.grad(f, argnums=(0, 1)))(w, x)
    np.testing.assert_allclose(jw, gw, rtol=1e-12)
    np.testing.assert_allclose(jx, gx, rtol=1e-12)


def test_grad_inside_a_shard_map_body_then_pmean():
    mesh = spmd.make_mesh((4,), ("i",))
    x = np.arange(8.0).reshape(8, 1)

    def body(w, b):
        g = spmd.grad(lambda w: snp.sum((b * w - 1.0) ** 2))(w)
        return pmean(g, "i")

    f = spmd.shard_map(body, mesh=mesh, in_specs=(P(), P("i")), out_specs=P())
    w = np.array([0.5])
    blocks = x.reshape(4, 2, 1)
    want = np.mean([np.sum(2 * (b * w - 1.0) * b) for b in blocks])
    np.testing.assert_allclose(f(w, x), [want], rtol=1e-12)
    np.testing.assert_allclose(spmd.jit(f)(w, x), [want], rtol=1e-12)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_gradients_through_pmap_and_nested_pmap(jitted):
    x = np.random.default_rng(0).normal(size=(2, 4, 3))

    def flat(v):
        return snp.sum(spmd.pmap(lambda r: psum(snp.sin(r) * r, "i"), axis_name="i")(v) ** 2)

    def nested(v):
        inner = spmd.pmap(lambda r: psum(snp.sin(r), ("rows", "cols")) * r, axis_name="cols")
        return snp.sum(spmd.pmap(inner, axis_name="rows")(v))

    def numpy_flat(v):
        return np.sum(np.sum(np.sin(v) * v, axis=0, keepdims=True).repeat(len(v), 0) ** 2)

    def numpy_nested(v):
        return np.sum(np.sum(np.sin(v), axis=(0, 1)) * v)

    wrap = spmd.jit if jitted else (lambda g: g)
    for f, numpy_f, value in ((flat, numpy_flat, x[0]), (nested, numpy_nested, x)):
        t = np.random.default_rng(1).normal(size=value.shape)
        grad = wrap(spmd.grad(f))(value)
        want = directional(numpy_f, value, t)
        np.testing.assert_allclose(float(np.sum(np.asarray(grad) * t)), want, rtol=1e-6)


def test_constrained_values_keep_their_sharding_in_the_backward_pass():
    mesh = spmd.make_mesh((8,), ("x",))
    x = spmd.device_put(np.arange(16.0), NamedSharding(mesh, P("x")))

    def f(v):
        h = spmd.lax.with_sharding_constraint(snp.sin(v) * 2, NamedSharding(mesh, P("x")))
        return snp.sum(h**2)

    grad = spmd.jit(spmd.grad(f))(x)
    v = np.arange(16.0)
    np.testing.assert_allclose(grad, 8 * np.sin(v) * np.cos(v), rtol=1e-12)
    assert grad.sharding == NamedSharding(mesh, P("x"))


def test_checkpoint_recomputes_instead_of_saving():
    x = np.linspace(-1, 1, 6)

    def layer(v):
        return snp.tanh(snp.sin(v) * 3)

    plain = spmd.grad(lambda v: snp.sum(layer(v) ** 2))(x)
    again = spmd.grad(lambda v: snp.sum(spmd.checkpoint(layer)(v) ** 2))(x)
    np.testing.assert_allclose(again, plain, rtol=1e-12)
    from spmd.core.ad import linearize

    _, saved, _ = linearize(lambda v: [layer(v)], [x], [True])
    _, remat, _ = linearize(lambda v: [spmd.checkpoint(layer)(v)], [x], [True])
    assert len(saved.consts) > 1  # sin, cos and tanh intermediates
    assert len(remat.consts) == 1  # the input alone


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_vmap_of_shard_map_and_pmap_and_grad_through_them(jitted):
    wrap = spmd.jit if jitted else (lambda g: g)
    mesh = spmd.make_mesh((4,), ("i",))
    xs = np.random.default_rng(0).normal(size=(3, 8))
    f = spmd.shard_map(lambda b: psum(snp.sin(b).sum(), "i") + b * 2, mesh=mesh, in_specs=P("i"),
                       out_specs=P("i"))  # fmt: skip
    want = np.stack([np.sin(x).sum() + x * 2 for x in xs])
    np.testing.assert_allclose(wrap(spmd.vmap(f))(xs), want, rtol=1e-12)
    np.testing.assert_allclose(wrap(spmd.vmap(f, in_axes=1, out_axes=1))(xs.T), want.T, rtol=1e-12)
    grads = wrap(spmd.grad(lambda m: spmd.vmap(f)(m).sum()))(xs)
    np.testing.assert_allclose(grads, np.cos(xs) * 8 + 2, rtol=1e-12)

    g = spmd.pmap(lambda r: psum(snp.sin(r), "j") * r, axis_name="j")
    ys = np.random.default_rng(1).normal(size=(3, 4, 2))
    want = np.stack([np.sin(y).sum(0) * y for y in ys])
    np.testing.assert_allclose(wrap(spmd.vmap(g))(ys), want, rtol=1e-12)
    moved = wrap(spmd.vmap(g, in_axes=1, out_axes=1))(ys.transpose(1, 0, 2))
    np.testing.assert_allclose(moved, want.transpose(1, 0, 2), rtol=1e-12)


def test_higher_order_and_nested_transformations():
    x = np.linspace(-1, 1, 5)

    def f(v):
        return snp.sum(snp.sin(v) ** 2)

    hvp = spmd.jvp(spmd.grad(f), (x,), (np.ones(5),))[1]
    np.testing.assert_allclose(hvp, 2 * np.cos(2 * x), rtol=1e-12)
    m = np.random.default_rng(0).normal(size=(3, 5))
    np.testing.assert_allclose(spmd.jit(spmd.vmap(spmd.grad(f)))(m), np.sin(2 * m), rtol=1e-12)
    np.testing.assert_allclose(
        spmd.grad(lambda a: spmd.vmap(f)(a).sum())(m), np.sin(2 * m), rtol=1e-12
    )
    np.testing.assert_allclose(spmd.grad(spmd.grad(snp.sin))(0.3), -np.sin(0.3), rtol=1e-12)


def test_gradients_come_back_with_their_arguments_shardings():
    mesh = spmd.make_mesh((8,), ("d",))
    x = spmd.device_put(np.ones((32, 16)), NamedSharding(mesh, P("d")))

    def loss(w, x):
        return snp.sum(snp.tanh(x @ w))

    counted = {}
    for name, spec in (("sharded", P("d")), ("replicated", P())):
        w = spmd.device_put(np.ones((16, 4)), NamedSharding(mesh, spec))
        grad = spmd.jit(spmd.grad(loss))
        grad(w, x)
        with spmd.debug.count_collectives() as counts:
            out = grad(w, x)
        assert out.sharding == w.sharding
        assert spmd.grad(loss)(w, x).sharding == w.sharding  # eagerly too
        counted[name] = dict(counts)
    # FSDP: gathered for the product, the gradient reduce-scattered into the weight's rows;
    # data parallel: the gradient all-reduced once
    assert counted == {"sharded": {"all-gather": 1, "reduce-scatter": 1},
                       "replicated": {"all-reduce": 1}}  # fmt: skip
