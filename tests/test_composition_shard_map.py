"""Compositions in shard_map bodies (the loops and pmaps are in test_composition_loops.py):
loops of collectives under grad, vmap and check_grads; unvarying values (psum results) from
cond and scan whose cotangents arrive in per-device parts, alone or beside a whole one from a
P() output; custom rules holding collectives; vmap, grad and jvp inside an eager body.
Oracles: NumPy loops over mesh coordinates and central finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P, lax
from spmd.test_util import check_grads
from tests.composition_helpers import (
    DEVICES,
    RING,
    fd_gradient,
)
from tests.composition_helpers import close as _close
from tests.composition_helpers import mesh_of_devices as _mesh
from tests.composition_helpers import shape_and_jaxpr as _shape_and_jaxpr

# --- loops of collectives in shard_map and pmap bodies --------------------------------------


def _ring_block(block, steps=3):
    def step(c, _):
        c = lax.ppermute(c, "i", RING) * snp.sin(block) + block
        return c, lax.psum(snp.sum(c), "i")

    carry, totals = lax.scan(step, block, None, length=steps)
    return carry * totals[-1]


def _np_ring(x, steps=3):
    blocks = np.split(x, DEVICES)
    c = list(blocks)
    for _ in range(steps):
        c = [c[(j - 1) % DEVICES] * np.sin(blocks[j]) + blocks[j] for j in range(DEVICES)]
        total = sum(np.sum(b) for b in c)
    return np.concatenate([b * total for b in c])


def _ring_loss_np(w):
    return lambda v: float(np.sum(_np_ring(v) * w))


def test_scan_of_ppermute_in_shard_map_under_grad_and_jit():
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=16) * 0.5, rng.normal(size=16)
    f = spmd.shard_map(_ring_block, mesh=_mesh(), in_specs=P("i"), out_specs=P("i"))
    _close(f(x), _np_ring(x))
    _close(spmd.jit(f)(x), _np_ring(x))
    loss = lambda v: snp.sum(f(v) * w)  # noqa: E731
    want = fd_gradient(_ring_loss_np(w), x)
    _close(spmd.grad(loss)(x), want, rtol=1e-5, atol=1e-7)
    sharded = spmd.device_put(x, NamedSharding(_mesh(), P("i")))
    _close(spmd.jit(spmd.grad(loss))(sharded), want, rtol=1e-5, atol=1e-7)
    _shape_and_jaxpr(spmd.grad(loss), x)


def test_check_grads_of_a_ring_in_shard_map():
    x = np.random.default_rng(4).normal(size=16) * 0.5
    f = spmd.shard_map(_ring_block, mesh=_mesh(), in_specs=P("i"), out_specs=P("i"))
    check_grads(f, (x,), order=2)


def test_vmap_of_shard_map_with_a_ring_in_a_scan():
    xs = np.random.default_rng(5).normal(size=(3, 16)) * 0.5
    f = spmd.shard_map(_ring_block, mesh=_mesh(), in_specs=P("i"), out_specs=P("i"))
    want = np.stack([_np_ring(x) for x in xs])
    _close(spmd.vmap(f)(xs), want)
    _close(spmd.jit(spmd.vmap(f))(xs), want)


def test_grad_of_an_unvarying_cond_output_used_by_varying_values_in_shard_map():
    # The branch's psum is the same on every device; its cotangent arrives in parts.
    rng = np.random.default_rng(10)
    x, w = rng.normal(size=16), rng.normal(size=16)

    def block(b):
        total = lax.psum(snp.sum(b), "i")
        t = lax.cond(total > 0, lambda v: lax.psum(v, "i"), lambda v: lax.psum(v * 2.0, "i"), b)
        return b * snp.sin(t)

    def np_f(v):
        blocks = np.split(v, DEVICES)
        t = sum(blocks) * (1.0 if v.sum() > 0 else 2.0)
        return np.concatenate([q * np.sin(t) for q in blocks])

    f = spmd.shard_map(block, mesh=_mesh(), in_specs=P("i"), out_specs=P("i"))
    for sign in (1.0, -1.0):
        v = x - x.mean() + sign
        _close(f(v), np_f(v))
        want = fd_gradient(lambda u: float(np.sum(np_f(u) * w)), v)
        _close(spmd.grad(lambda u: snp.sum(f(u) * w))(v), want, rtol=1e-5, atol=1e-7)
        _close(spmd.jit(spmd.grad(lambda u: snp.sum(f(u) * w)))(v), want, rtol=1e-5, atol=1e-7)


def test_grad_of_an_unvarying_scan_carry_used_by_varying_values_in_shard_map():
    rng = np.random.default_rng(11)
    x, w = rng.normal(size=16) * 0.3, rng.normal(size=16)

    def block(b):
        s = lax.psum(b, "i")
        c = lax.scan(lambda c, _: (snp.sin(c) * s, c), s, None, length=3)[0]
        return b * c

    def np_f(v):
        blocks = np.split(v, DEVICES)
        s = sum(blocks)
        c = s
        for _ in range(3):
            c = np.sin(c) * s
        return np.concatenate([q * c for q in blocks])

    f = spmd.shard_map(block, mesh=_mesh(), in_specs=P("i"), out_specs=P("i"))
    _close(f(x), np_f(x))
    want = fd_gradient(lambda u: float(np.sum(np_f(u) * w)), x)
    _close(spmd.grad(lambda u: snp.sum(f(u) * w))(x), want, rtol=1e-5, atol=1e-7)
    check_grads(f, (x,), order=2, modes=("rev",))


# --- custom rules holding collectives, in loops in shard_map bodies --------------------------


@spmd.custom_jvp
def _total(v):
    return lax.psum(v, "i")


@_total.defjvp
def _total_jvp(primals, tangents):
    return _total(primals[0]), lax.psum(tangents[0], "i")


@spmd.custom_vjp
def _total_vjp(v):
    return lax.psum(v, "i")


_total_vjp.defvjp(lambda v: (lax.psum(v, "i"), None), lambda _, g: (lax.pvary(g, "i"),))


def _np_mix(v, steps=2):
    blocks = np.split(v, DEVICES)
    for _ in range(steps):
        total = sum(blocks)
        blocks = [np.sin(b) * 0.5 + total * 0.1 for b in blocks]
    return np.concatenate(blocks)


@pytest.mark.parametrize("total", [_total, _total_vjp], ids=["custom_jvp", "custom_vjp"])
@pytest.mark.parametrize("in_scan", [False, True])
def test_a_custom_rule_holding_a_psum_in_a_shard_map_body(total, in_scan):
    rng = np.random.default_rng(12)
    x, w = rng.normal(size=16), rng.normal(size=16)

    def step(c):
        return snp.sin(c) * 0.5 + total(c) * 0.1

    def block(b):
        if in_scan:
            return lax.scan(lambda c, _: (step(c), None), b, None, length=2)[0]
        return step(step(b))

    f = spmd.shard_map(block, mesh=_mesh(), in_specs=P("i"), out_specs=P("i"))
    _close(f(x), _np_mix(x))  # eager: runs compiled, the call's psum a step of the body
    _close(spmd.jit(f)(x), _np_mix(x))
    want = fd_gradient(lambda v: float(np.sum(_np_mix(v) * w)), x)
    loss = lambda v: snp.sum(f(v) * w)  # noqa: E731
    _close(spmd.grad(loss)(x), want, rtol=1e-5, atol=1e-7)
    _close(spmd.jit(spmd.grad(loss))(x), want, rtol=1e-5, atol=1e-7)
    _shape_and_jaxpr(spmd.grad(loss), x)
    if total is _total:
        t = rng.normal(size=16)
        fd = (_np_mix(x + 1e-6 * t) - _np_mix(x - 1e-6 * t)) / 2e-6
        _close(spmd.jvp(f, (x,), (t,))[1], fd, rtol=1e-5, atol=1e-7)


# --- an unvarying result both returned whole and used by varying values ---------------------


def _shared_plain(b):
    return lax.psum(snp.sin(b), "i")


def _shared_scan(b):
    step = lambda c, _: (c * 0.5 + lax.psum(snp.sin(b), "i"), c)  # noqa: E731
    return lax.scan(step, lax.psum(b, "i"), None, length=2)[0]


def _shared_cond(b):
    total = lax.psum(snp.sum(b), "i")
    return lax.cond(total > 0, lambda v: lax.psum(v, "i") * 2.0, _shared_plain, b)


def _np_shared(kind, v):
    blocks = np.split(v, DEVICES)
    sines = sum(np.sin(q) for q in blocks)
    if kind == "plain":
        return sines
    if kind == "scan":
        c = sum(blocks)
        for _ in range(2):
            c = c * 0.5 + sines
        return c
    return 2 * sum(blocks) if v.sum() > 0 else sines


@pytest.mark.parametrize(
    "kind, shared", [("plain", _shared_plain), ("scan", _shared_scan), ("cond", _shared_cond)]
)
def test_grad_of_an_unvarying_value_returned_whole_and_used_per_device(kind, shared):
    # Its cotangent is the whole one from the P() output plus each device's part from b * c.
    rng = np.random.default_rng(13)
    x, w, w2 = rng.normal(size=16) * 0.5, rng.normal(size=16), rng.normal(size=2)

    def block(b):
        c = shared(b)
        return b * c, c

    f = spmd.shard_map(block, mesh=_mesh(), in_specs=P("i"), out_specs=(P("i"), P()))

    def np_loss(v):
        c = _np_shared(kind, v)
        return float(np.sum(np.concatenate([q * c for q in np.split(v, DEVICES)]) * w) + c @ w2)

    def loss(v):
        out, c = f(v)
        return snp.sum(out * w) + snp.sum(c * w2)

    for v in (x - x.mean() + 0.5, x - x.mean() - 0.5):
        want = fd_gradient(np_loss, v)
        _close(spmd.grad(loss)(v), want, rtol=1e-5, atol=1e-7)
        _close(spmd.jit(spmd.grad(loss))(v), want, rtol=1e-5, atol=1e-7)
        _close(
            spmd.grad(lambda u: snp.sum(f(u)[1] * w2))(v),
            fd_gradient(lambda u: float(_np_shared(kind, u) @ w2), v),
            rtol=1e-5,
            atol=1e-7,
        )


# --- transformations inside an eager shard_map body, around a loop of collectives -----------


def _ring_sines(v, steps=2):
    """Each device's sin(previous device's carry) * its own block, per row of v."""
    out = []
    for row in np.atleast_2d(v):
        blocks = np.split(row, DEVICES)
        c = list(blocks)
        for _ in range(steps):
            c = [np.sin(c[(j - 1) % DEVICES]) * blocks[j] for j in range(DEVICES)]
        out.append(np.concatenate(c))
    return np.stack(out).reshape(np.shape(v))


def _ring_scan(r):
    step = lambda c, _: (lax.ppermute(snp.sin(c), "i", RING) * r, None)  # noqa: E731
    return lax.scan(step, r, None, length=2)[0]


def test_vmap_grad_and_jvp_inside_an_eager_shard_map_body_of_a_ring_scan():
    rng = np.random.default_rng(14)
    xs, x = rng.normal(size=(3, 16)), rng.normal(size=16)
    mesh = _mesh()
    batched = spmd.shard_map(
        lambda b: spmd.vmap(_ring_scan)(b), mesh=mesh, in_specs=P(None, "i"), out_specs=P(None, "i")
    )
    _close(batched(xs), _ring_sines(xs))
    _close(spmd.jit(batched)(xs), _ring_sines(xs))

    def grad_body(b):  # each device's gradient of the sum of every device's loss
        return spmd.grad(lambda r: snp.sum(_ring_scan(r)))(b)

    want = fd_gradient(lambda v: float(np.sum(_ring_sines(v))), x)
    grads = spmd.shard_map(grad_body, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    _close(grads(x), want, rtol=1e-5, atol=1e-7)
    _close(spmd.jit(grads)(x), want, rtol=1e-5, atol=1e-7)

    t = rng.normal(size=16)
    fd = (_ring_sines(x + 1e-6 * t) - _ring_sines(x - 1e-6 * t)) / 2e-6
    tangents = spmd.shard_map(
        lambda b, u: spmd.jvp(_ring_scan, (b,), (u,))[1],
        mesh=mesh,
        in_specs=(P("i"), P("i")),
        out_specs=P("i"),
    )
    _close(tangents(x, t), fd, rtol=1e-5, atol=1e-7)


def _seeded_body(zero_term):
    def body(b):
        def loss(r):
            c = lax.psum(snp.sin(r), "i")
            return snp.sum(c) + (0.0 * snp.sum(r) if zero_term else snp.sum(r * c))

        return spmd.grad(loss)(b)

    return body


def _seeded_total(zero_term):
    def total(v):
        blocks = np.split(v, DEVICES)
        c = sum(np.sin(q) for q in blocks)
        return float(sum(np.sum(c) + (0.0 if zero_term else np.sum(q * c)) for q in blocks))

    return total


@pytest.mark.parametrize("zero_term", [False, True])
def test_grad_inside_a_jitted_shard_map_body_of_a_varying_loss_holding_an_unvarying_part(
    zero_term,
):
    # Each device's loss varies; its seed of ones is each device's own, so the unvarying
    # sum(c) counts once per device (JAX: the sum of every device's loss is differentiated).
    x = np.random.default_rng(15).normal(size=16)
    f = spmd.shard_map(_seeded_body(zero_term), mesh=_mesh(), in_specs=P("i"), out_specs=P("i"))
    want = fd_gradient(_seeded_total(zero_term), x)
    _close(spmd.jit(f)(x), want, rtol=1e-5, atol=1e-7)
    _close(f(x), want, rtol=1e-5, atol=1e-7)


def test_eager_body_grad_of_a_varying_loss_whose_input_reaches_it_only_unvarying():
    # An eager body's values hold how they vary in their types, so grad's linear program is
    # typed as a traced body's: the seed is pvary'd and the psum's transpose sums it (8x).
    x = np.random.default_rng(15).normal(size=16)
    f = spmd.shard_map(_seeded_body(True), mesh=_mesh(), in_specs=P("i"), out_specs=P("i"))
    _close(f(x), fd_gradient(_seeded_total(True), x), rtol=1e-5, atol=1e-7)
