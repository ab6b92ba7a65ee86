"""More compositions (the table of tests/test_composition.py runs the rest; shard_map bodies
are in test_composition_shard_map.py): grad of grad through custom rules in a scan,
check_grads, Jacobians of loops with traced bounds, vmap of a while_loop with a batched
predicate, loops of collectives in pmap (nested too) and pmap of a custom_vjp function.
Oracles: NumPy loops (over the mapped axes for pmap) and central finite differences in
float64."""

from __future__ import annotations

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P, lax
from spmd.errors import SpmdError
from spmd.test_util import check_grads
from tests.composition_helpers import (
    DEVICES,
    RING,
    csin,
    ctanh,
    fd_gradient,
    fd_jacobian,
)
from tests.composition_helpers import close as _close
from tests.composition_helpers import mesh_of_devices as _mesh
from tests.composition_helpers import shape_and_jaxpr as _shape_and_jaxpr

# --- grad of grad through custom rules in a scan --------------------------------------------


def _scan_power(custom, x, steps=5):
    def step(c, _):
        return custom(c * x) + x, None

    return lax.scan(step, x, None, length=steps)[0]


def _np_scan_power(fun, x, steps=5):
    c = x
    for _ in range(steps):
        c = fun(c * x) + x
    return c


@pytest.mark.parametrize("custom, plain", [(csin, np.sin), (ctanh, np.tanh)], ids=["jvp", "vjp"])
@pytest.mark.parametrize("x", [0.3, -0.7, 1.1])
def test_grad_of_grad_through_a_custom_rule_in_a_scan(custom, plain, x):
    h = 1e-4
    f = lambda v: _np_scan_power(plain, v)  # noqa: E731
    second = (f(x + h) - 2 * f(x) + f(x - h)) / (h * h)
    first = (f(x + 1e-6) - f(x - 1e-6)) / 2e-6
    grad = spmd.grad(lambda v: _scan_power(custom, v))
    _close(grad(np.float64(x)), first)
    _close(spmd.grad(grad)(np.float64(x)), second, rtol=1e-5, atol=1e-5)
    _close(spmd.jit(spmd.grad(grad))(np.float64(x)), second, rtol=1e-5, atol=1e-5)
    _shape_and_jaxpr(spmd.grad(grad), np.float64(x))


@pytest.mark.parametrize("order", [1, 2])
def test_check_grads_of_custom_jvp_in_scan_and_of_a_fori_loop(order):
    x = np.random.default_rng(1).normal(size=(3, 4))
    check_grads(lambda v: _scan_power(csin, v, 3), (x,), order=order)
    check_grads(lambda v: _scan_power(ctanh, v, 3), (x,), order=order, modes=("rev",))
    fori = lambda v: lax.fori_loop(0, 3, lambda i, c: snp.sin(c) * v + i, v)  # noqa: E731
    check_grads(fori, (x,), order=order)


# --- Jacobians of loops with traced bounds, under jit with sharded inputs -------------------


def _fori_traced(x, n):
    return lax.fori_loop(0, n, lambda i, c: snp.sin(c) * x + c * 0.5, x)


def _np_fori(x, n):
    c = x
    for _ in range(n):
        c = np.sin(c) * x + c * 0.5
    return c


@pytest.mark.parametrize("n", [0, 1, 4])
def test_jacfwd_of_a_fori_loop_with_traced_bounds_under_jit_with_sharded_inputs(n):
    x = np.random.default_rng(n).normal(size=8)
    sharded = spmd.device_put(x, NamedSharding(_mesh(), P("i")))
    want = fd_jacobian(lambda v: _np_fori(v, n), x)
    jac = spmd.jit(spmd.jacfwd(_fori_traced))
    _close(jac(sharded, np.int32(n)), want)
    _shape_and_jaxpr(jac, sharded, np.int32(n))
    with pytest.raises(SpmdError, match="while"):
        spmd.jit(spmd.jacrev(_fori_traced))(sharded, np.int32(n))


# --- vmap of a while_loop whose predicate is batched ----------------------------------------


def _grow(x):
    return lax.while_loop(lambda c: snp.sum(c * c) < 50.0, lambda c: c * 1.5 + 0.25, x)


def _np_grow(x):
    c = x
    while np.sum(c * c) < 50.0:
        c = c * 1.5 + 0.25
    return c


def test_vmap_of_a_while_loop_with_a_batched_predicate_under_jit_with_sharded_operands():
    xs = np.random.default_rng(2).normal(size=(8, 4)) * np.arange(1, 9)[:, None] * 0.3
    want = np.stack([_np_grow(x) for x in xs])  # members stop after different trip counts
    f = spmd.jit(spmd.vmap(_grow))
    for spec in (P("i", None), P(None, None)):
        out = f(spmd.device_put(xs, NamedSharding(_mesh(), spec)))
        _close(out, want)
    _shape_and_jaxpr(f, xs)
    t = np.ones_like(xs)
    eps = 1e-6
    fd = np.stack(
        [
            (_np_grow(x + eps * u) - _np_grow(x - eps * u)) / (2 * eps)
            for x, u in zip(xs, t, strict=True)
        ]
    )
    _, tangent = spmd.jit(lambda a, b: spmd.jvp(spmd.vmap(_grow), (a,), (b,)))(xs, t)
    _close(tangent, fd, rtol=1e-5, atol=1e-6)


def test_fori_loop_of_ppermute_in_pmap_under_grad():
    rng = np.random.default_rng(6)
    x, w = rng.normal(size=(DEVICES, 2)) * 0.5, rng.normal(size=(DEVICES, 2))

    def body(v):
        step = lambda i, c: lax.ppermute(c, "i", RING) * snp.sin(v) + v  # noqa: E731
        return lax.fori_loop(0, 3, step, v)

    def np_f(x):
        c = x.copy()
        for _ in range(3):
            c = np.roll(c, 1, axis=0) * np.sin(x) + x
        return c

    f = spmd.pmap(body, "i")
    _close(f(x), np_f(x))
    want = fd_gradient(lambda v: float(np.sum(np_f(v) * w)), x)
    _close(spmd.grad(lambda v: snp.sum(f(v) * w))(x), want, rtol=1e-5, atol=1e-7)
    _close(spmd.vmap(f, in_axes=1, out_axes=1)(x), np_f(x))
    _shape_and_jaxpr(f, x)


def test_nested_pmap_with_a_fori_loop_in_the_inner_body():
    x = np.random.default_rng(7).normal(size=(2, 4, 3))

    def inner(v):
        step = lambda i, c: c + lax.psum(c, "cols") * 0.1 + lax.axis_index("rows") + i  # noqa: E731
        return lax.fori_loop(0, 3, step, v)

    f = spmd.pmap(spmd.pmap(inner, "cols"), "rows")
    want = x.copy()
    for i in range(3):
        want = want + want.sum(1, keepdims=True) * 0.1 + np.arange(2)[:, None, None] + i
    _close(f(x), want)
    _close(spmd.jit(f)(x), want)
    w = np.random.default_rng(8).normal(size=x.shape)

    def np_loss(v):
        c = v
        for i in range(3):
            c = c + c.sum(1, keepdims=True) * 0.1 + np.arange(2)[:, None, None] + i
        return float(np.sum(c * w))

    got = spmd.grad(lambda v: snp.sum(f(v) * w))(x)
    _close(got, fd_gradient(np_loss, x), rtol=1e-5, atol=1e-7)
    _shape_and_jaxpr(f, x)


def test_pmap_of_a_custom_vjp_function():
    rng = np.random.default_rng(9)
    x, w = rng.normal(size=(DEVICES, 3)), rng.normal(size=(DEVICES, 3))
    f = spmd.pmap(lambda v: ctanh(v) * lax.psum(v, "i"), "i")

    def np_f(v):
        return np.tanh(v) * v.sum(0, keepdims=True)

    _close(f(x), np_f(x))
    want = fd_gradient(lambda v: float(np.sum(np_f(v) * w)), x)
    _close(spmd.grad(lambda v: snp.sum(f(v) * w))(x), want, rtol=1e-5, atol=1e-7)
    _close(spmd.jit(spmd.grad(lambda v: snp.sum(f(v) * w)))(x), want, rtol=1e-5, atol=1e-7)
    _shape_and_jaxpr(f, x)
    check_grads(f, (x,), order=2, modes=("rev",))
