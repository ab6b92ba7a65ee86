"""The transformations composed: custom_jvp/custom_vjp inside loop bodies and branches,
Jacobians of control flow, checkpoint in scan bodies, vmap of loops, loops with collectives
in shard_map and pmap bodies, under jit with sharded operands. Each composition is checked
against an independent oracle: NumPy loops for values, central finite differences in float64
for derivatives, a loop over the batch for vmap, a loop over mesh coordinates for shard_map."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P, lax
from spmd.errors import SpmdError
from tests.composition_helpers import csin, ctanh, fd_gradient, fd_hessian, fd_jacobian

SHAPE = (4, 8)  # (steps, features): loops run over the rows, the features are sharded


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng([ord(c) for c in name])


def _close(got, want, rtol=1e-7, atol=1e-9):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=atol)


# --- the table: each spmd function (T, N) -> (N,) with its NumPy oracle -----------------------


@dataclass(frozen=True)
class Case:
    name: str
    fun: Callable  # spmd: x (T, N) -> (N,)
    ref: Callable  # NumPy float64, same contract
    reverse: bool = True  # False where JAX refuses reverse mode (while loops)
    forward: bool = True  # False where JAX refuses forward mode (custom_vjp)

    def __repr__(self) -> str:
        return self.name


def _scan_rows(step, x, init):
    carry, ys = lax.scan(step, init, x)
    return carry + ys.sum(0)


def _np_scan_rows(step, x, init):
    carry, ys = init, []
    for row in x:
        carry, y = step(carry, row)
        ys.append(y)
    return carry + np.sum(ys, 0)


def _jvp_scan_step(c, row):
    c = csin(c * row) + row
    return c, c * c


def _np_jvp_scan_step(c, row):
    c = np.sin(c * row) + row
    return c, c * c


def _vjp_scan_step(c, row):
    c = ctanh(c + row) * row
    return c, c


def _np_vjp_scan_step(c, row):
    c = np.tanh(c + row) * row
    return c, c


def _cond_in_scan_step(c, row):
    c = lax.cond(snp.sum(row) > 0, lambda v: csin(v) * 2.0, lambda v: snp.tanh(v) - 1.0, c + row)
    return c, c


def _np_cond_in_scan_step(c, row):
    v = c + row
    c = np.sin(v) * 2.0 if np.sum(row) > 0 else np.tanh(v) - 1.0
    return c, c


def _cond_vjp_in_scan_step(c, row):
    c = lax.cond(snp.sum(row) > 0, lambda v: snp.sin(v) * 2.0, lambda v: ctanh(v) - 1.0, c + row)
    return c, c


def _checkpoint_step(c, row):
    c = spmd.checkpoint(lambda a, b: snp.sin(a * b) + b * b)(c, row)
    return c, c


def _np_checkpoint_step(c, row):
    c = np.sin(c * row) + row * row
    return c, c


def _while_custom(x):
    # custom_jvp in a while body; trip count fixed by an integer counter, the carry by x.
    x = snp.asarray(x)

    def body(state):
        i, c = state
        return i + 1, csin(c) + x[i]

    return lax.while_loop(lambda s: s[0] < x.shape[0], body, (0, x[0] * 0.5))[1]


def _np_while_custom(x):
    c = x[0] * 0.5
    for i in range(x.shape[0]):
        c = np.sin(c) + x[i]
    return c


def _fori_static(custom_sin, custom_tanh):
    def fun(x):
        x = snp.asarray(x)
        step = lambda i, c: custom_tanh(c) * x[i] + custom_sin(x[i])  # noqa: E731
        return lax.fori_loop(0, x.shape[0], step, x[0])

    return fun


def _np_fori_static(x):
    c = x[0]
    for i in range(x.shape[0]):
        c = np.tanh(c) * x[i] + np.sin(x[i])
    return c


def _cond_custom(custom_sin, custom_tanh):
    def fun(x):
        return lax.cond(
            snp.sum(x) > 0,
            lambda a: custom_sin(a).sum(0),
            lambda a: custom_tanh(a).prod(0),
            x,
        )

    return fun


def _np_cond_custom(x):
    return np.sin(x).sum(0) if np.sum(x) > 0 else np.tanh(x).prod(0)


def _switch_in_scan(x):
    def step(c, row):
        index = (snp.sum(row) > 0).astype(np.int32) + (snp.sum(row) > 1).astype(np.int32)
        c = lax.switch(index, [snp.sin, lambda v: v * v, csin], c * row)
        return c, c

    return _scan_rows(step, x, snp.ones(x.shape[1], x.dtype))


def _np_switch_in_scan(x):
    funs = [np.sin, lambda v: v * v, np.sin]

    def step(c, row):
        index = int(np.sum(row) > 0) + int(np.sum(row) > 1)
        c = funs[index](c * row)
        return c, c

    return _np_scan_rows(step, x, np.ones(x.shape[1]))


CASES = [
    Case(
        "custom_jvp in scan",
        lambda x: _scan_rows(_jvp_scan_step, x, x[0]),
        lambda x: _np_scan_rows(_np_jvp_scan_step, x, x[0]),
    ),
    Case(
        "custom_vjp in scan",
        lambda x: _scan_rows(_vjp_scan_step, x, snp.zeros(x.shape[1], x.dtype)),
        lambda x: _np_scan_rows(_np_vjp_scan_step, x, np.zeros(x.shape[1])),
        forward=False,
    ),
    Case(
        "cond of custom_jvp in scan",
        lambda x: _scan_rows(_cond_in_scan_step, x, x[0]),
        lambda x: _np_scan_rows(_np_cond_in_scan_step, x, x[0]),
    ),
    Case(
        "cond of custom_vjp in scan",
        lambda x: _scan_rows(_cond_vjp_in_scan_step, x, x[0]),
        lambda x: _np_scan_rows(_np_cond_in_scan_step, x, x[0]),
        forward=False,
    ),
    Case(
        "checkpoint in scan",
        lambda x: _scan_rows(_checkpoint_step, x, x[-1]),
        lambda x: _np_scan_rows(_np_checkpoint_step, x, x[-1]),
    ),
    Case("custom_jvp in while", _while_custom, _np_while_custom, reverse=False),
    Case("custom_jvp in fori_loop", _fori_static(csin, snp.tanh), _np_fori_static),
    Case("custom_vjp in fori_loop", _fori_static(snp.sin, ctanh), _np_fori_static, forward=False),
    Case("custom_jvp in cond branches", _cond_custom(csin, snp.tanh), _np_cond_custom),
    Case(
        "custom_vjp in cond branches",
        _cond_custom(snp.sin, ctanh),
        _np_cond_custom,
        forward=False,
    ),
    Case("switch in scan", _switch_in_scan, _np_switch_in_scan),
]


def _sample(case: Case, shape=SHAPE) -> np.ndarray:
    x = _rng(case.name).normal(size=shape)
    x[0] += 0.25  # the data-dependent branches take both ways across the rows
    return x


def _weights(case: Case, n: int) -> np.ndarray:
    return _rng(case.name + "w").normal(size=n)


def _both_signs(case: Case) -> np.ndarray:
    """A batch whose data-dependent branches take both ways in every member's loop."""
    x = _sample(case)
    return np.stack([x, -x])


def _assert_forward_refused(case: Case) -> None:
    xs = _both_signs(case)
    with pytest.raises(SpmdError, match="forward-mode"):
        spmd.jvp(spmd.vmap(case.fun), (xs,), (np.ones_like(xs),))
    with pytest.raises(SpmdError, match="forward-mode"):
        spmd.jit(spmd.jacfwd(spmd.vmap(case.fun)))(xs)


def _mesh():
    return spmd.make_mesh((8,), ("i",))


def _sharded(x):
    return spmd.device_put(x, NamedSharding(_mesh(), P(None, "i")))


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_values_eager_jit_and_jit_with_sharded_operands(case):
    x = _sample(case)
    want = case.ref(x)
    _close(case.fun(x), want)
    _close(spmd.jit(case.fun)(x), want)
    _close(spmd.jit(case.fun)(_sharded(x)), want)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_grad_against_finite_differences(case):
    x = _sample(case)
    w = _weights(case, x.shape[1])

    def loss(v):
        return snp.sum(case.fun(v) * w)

    def np_loss(v):
        return float(np.sum(case.ref(v) * w))

    if not case.reverse:
        with pytest.raises(SpmdError, match="while"):
            spmd.grad(loss)(x)
        return
    want = fd_gradient(np_loss, x)
    _close(spmd.grad(loss)(x), want, rtol=1e-6, atol=1e-7)
    _close(spmd.jit(spmd.grad(loss))(x), want, rtol=1e-6, atol=1e-7)
    got = spmd.jit(spmd.grad(loss))(_sharded(x))
    _close(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_jvp_against_finite_differences(case):
    if not case.forward:
        _assert_forward_refused(case)
        return
    x = _sample(case)
    t = _rng(case.name + "t").normal(size=x.shape)
    eps = 1e-6
    want = (case.ref(x + eps * t) - case.ref(x - eps * t)) / (2 * eps)
    out, tangent = spmd.jvp(case.fun, (x,), (t,))
    _close(out, case.ref(x))
    _close(tangent, want, rtol=1e-6, atol=1e-7)
    out, tangent = spmd.jit(lambda a, b: spmd.jvp(case.fun, (a,), (b,)))(_sharded(x), _sharded(t))
    _close(out, case.ref(x))
    _close(tangent, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_vmap_against_a_loop_over_the_batch(case):
    xs = np.stack([_sample(case) * s for s in (1.0, -0.5, 2.0)])
    want = np.stack([case.ref(x) for x in xs])
    _close(spmd.vmap(case.fun)(xs), want)
    _close(spmd.jit(spmd.vmap(case.fun))(xs), want)
    sharded = spmd.device_put(xs, NamedSharding(_mesh(), P(None, None, "i")))
    _close(spmd.jit(spmd.vmap(case.fun))(sharded), want)


@pytest.mark.parametrize("case", [c for c in CASES if c.reverse], ids=repr)
def test_vmap_of_grad_and_grad_of_vmap(case):
    xs = np.stack([_sample(case) * s for s in (1.0, -0.5)])
    w = _weights(case, xs.shape[2])

    def loss(v):
        return snp.sum(case.fun(v) * w)

    def np_loss(v):
        return float(np.sum(case.ref(v) * w))

    want = np.stack([fd_gradient(np_loss, x) for x in xs])
    _close(spmd.vmap(spmd.grad(loss))(xs), want, rtol=1e-6, atol=1e-7)
    batch_loss = lambda v: snp.sum(spmd.vmap(case.fun)(v) * w)  # noqa: E731
    _close(spmd.jit(spmd.grad(batch_loss))(xs), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_jacobians_against_finite_differences(case):
    x = _sample(case)
    want = fd_jacobian(case.ref, x)
    if case.forward:
        _close(spmd.jacfwd(case.fun)(x), want, rtol=1e-6, atol=1e-7)
        _close(spmd.jit(spmd.jacfwd(case.fun))(_sharded(x)), want, rtol=1e-6, atol=1e-7)
    else:
        _assert_forward_refused(case)
    if not case.reverse:
        with pytest.raises(SpmdError, match="while"):
            spmd.jacrev(case.fun)(x)
        return
    _close(spmd.jacrev(case.fun)(x), want, rtol=1e-6, atol=1e-7)
    _close(spmd.jit(spmd.jacrev(case.fun))(_sharded(x)), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", [c for c in CASES if c.reverse and c.forward], ids=repr)
def test_hessian_against_second_finite_differences(case):
    x = _sample(case, (3, 4))
    w = _weights(case, 4)

    def loss(v):
        return snp.sum(case.fun(v) * w)

    want = fd_hessian(lambda v: float(np.sum(case.ref(v) * w)), x)
    _close(spmd.hessian(loss)(x), want, rtol=1e-4, atol=1e-5)
    mesh = spmd.make_mesh((4,), ("i",))
    sharded = spmd.device_put(x, NamedSharding(mesh, P(None, "i")))
    _close(spmd.jit(spmd.hessian(loss))(sharded), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_eval_shape_and_make_jaxpr_of_each_transformation(case):
    x = _sample(case)
    w = _weights(case, x.shape[1])

    def loss(v):
        return snp.sum(case.fun(v) * w)

    transformed = [case.fun, spmd.vmap(case.fun)]
    args = [x, np.stack([x, -x])]
    if case.forward:
        transformed += [spmd.jacfwd(case.fun)]
        args += [x]
    if case.reverse:
        transformed += [spmd.grad(loss), spmd.jacrev(case.fun)]
        args += [x, x]
    for fun, arg in zip(transformed, args, strict=True):
        shape = spmd.eval_shape(fun, arg)
        real = fun(arg)
        assert (shape.shape, shape.dtype) == (real.shape, real.dtype)
        assert str(spmd.make_jaxpr(fun)(arg))
        assert str(spmd.make_jaxpr(spmd.jit(fun))(_sharded(arg) if arg.ndim == 2 else arg))
