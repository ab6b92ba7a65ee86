"""``checkpoint`` / ``remat``: the same derivatives as without it (and as float64 finite
differences) wherever it is used, and inside a scan body only the body's inputs are saved
per step."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import P, lax
from tests.jax_docs.oracles import numerical_gradient as fd_grad

RNG = np.random.default_rng(11)


def layer(w, x):
    return snp.tanh(snp.sin(x @ w) * 1.5 + x.sum())


def numpy_layer(w, x):
    return np.tanh(np.sin(x @ w) * 1.5 + x.sum())


def close(a, b, rtol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-9)


def scan_loss(remat, reverse=False):
    step = lambda c, x: (c * 0.5 + layer(c, x).T @ x * 0.3, None)  # noqa: E731
    body = spmd.checkpoint(step) if remat else step

    def loss(w, xs):
        c, _ = lax.scan(body, w, xs, reverse=reverse)
        return (c * c).sum()

    return loss


def numpy_scan_loss(w, xs, reverse=False):
    c = w
    for x in xs[::-1] if reverse else xs:
        c = c * 0.5 + numpy_layer(c, x).T @ x * 0.3
    return float((c * c).sum())


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_body_gradient_matches_finite_differences(reverse):
    w, xs = RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=(5, 2, 3)) * 0.5
    want = fd_grad(lambda v: numpy_scan_loss(v, xs, reverse), w)
    for remat in (False, True):
        close(spmd.grad(scan_loss(remat, reverse))(w, xs), want)
        close(spmd.jit(spmd.grad(scan_loss(remat, reverse)))(w, xs), want)


def _stacked_residual_bytes(loss, *args):
    """Bytes of the values the forward scans of grad's program stack per step."""
    program = spmd.make_jaxpr(spmd.grad(loss))(*args)
    total = 0
    for eqn in program.equations:
        if eqn.primitive.name == "scan":
            carry = eqn.params["num_carry"]
            total += sum(v.aval.size * v.aval.dtype.itemsize for v in eqn.outputs[carry:])
    return total


def test_scan_with_checkpoint_stacks_only_the_bodys_inputs():
    w, xs = RNG.normal(size=(3, 3)), RNG.normal(size=(7, 2, 3))
    plain = _stacked_residual_bytes(scan_loss(False), w, xs)
    remat = _stacked_residual_bytes(scan_loss(True), w, xs)
    # per step: the carry (3x3, float64); the slices of xs are read from xs itself
    assert remat == 7 * 9 * 8 < plain


def test_plain_grad_saves_only_the_inputs():
    from spmd.core.ad import linearize

    x = np.linspace(-1, 1, 6)
    f = spmd.checkpoint(lambda v: snp.tanh(snp.sin(v) * 3))
    _, linear, _ = linearize(lambda v: [f(v)], [x], [True])
    assert len(linear.consts) == 1


def test_fori_loop_and_cond_and_grad_of_grad():
    x = RNG.normal(size=4)

    def loss(v, remat):
        f = spmd.checkpoint(lambda a: snp.sin(a) * a) if remat else (lambda a: snp.sin(a) * a)
        v = lax.fori_loop(0, 3, lambda i, a: f(a) + 0.1, v)
        v = lax.cond(v.sum() > -100, f, lambda a: a, v)
        return (v**3).sum()

    want = spmd.grad(lambda v: loss(v, False))(x)
    close(spmd.grad(lambda v: loss(v, True))(x), want, rtol=1e-12)
    hess = spmd.jacfwd(spmd.grad(lambda v: loss(v, False)))(x)
    close(spmd.jacfwd(spmd.grad(lambda v: loss(v, True)))(x), hess, rtol=1e-10)
    close(spmd.grad(lambda v: spmd.grad(lambda u: loss(u, True))(v).sum())(x),
          hess.sum(0), rtol=1e-10)  # fmt: skip


@pytest.mark.parametrize("policy", [None, "dots_saveable"])
def test_vmap_and_static_argnums(policy):
    w, xs = RNG.normal(size=(3, 3)), RNG.normal(size=(4, 2, 3))

    def f(w, x, power):
        return (layer(w, x) ** power).sum()

    chosen = policy and getattr(spmd.checkpoint_policies, policy)
    g = spmd.checkpoint(f, static_argnums=(2,), policy=chosen)
    got = spmd.vmap(spmd.grad(lambda w, x: g(w, x, 3)), in_axes=(None, 0))(w, xs)
    want = np.stack([fd_grad(lambda v, x=x: float((numpy_layer(v, x) ** 3).sum()), w) for x in xs])
    close(got, want)
    outer = spmd.grad(lambda w: spmd.vmap(lambda x: g(w, x, 3))(xs).sum())(w)  # batched, then jvp
    close(outer, want.sum(0))


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_sharded_and_in_shard_map_bodies(jitted):
    wrap = spmd.jit if jitted else (lambda f: f)
    mesh = spmd.make_mesh((8,), ("i",))
    x = RNG.normal(size=13)  # uneven blocks
    xs = spmd.device_put(x, spmd.NamedSharding(mesh, P("i")))
    f = spmd.checkpoint(lambda v: snp.sin(v) ** 2)
    close(wrap(spmd.grad(lambda v: f(v).sum()))(xs), 2 * np.sin(x) * np.cos(x), rtol=1e-12)

    body = spmd.shard_map(
        lambda b: spmd.grad(lambda c: lax.psum(f(c).sum(), "i"))(b),
        mesh=mesh, in_specs=P("i"), out_specs=P("i"),
    )  # fmt: skip
    y = RNG.normal(size=16)
    close(wrap(body)(y), 2 * np.sin(y) * np.cos(y), rtol=1e-12)


POLICIES = ["nothing_saveable", "everything_saveable", "dots_saveable", "checkpoint_dots"]


@pytest.mark.parametrize("policy", POLICIES)
def test_policies_give_the_same_gradients(policy):
    chosen = getattr(spmd.checkpoint_policies, policy)
    w, xs = RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=(5, 2, 3)) * 0.5
    step = spmd.checkpoint(lambda c, x: (c * 0.5 + layer(c, x).T @ x * 0.3, None), policy=chosen)

    def loss(w, xs):
        c, _ = lax.scan(step, w, xs)
        return (c * c).sum()

    want = fd_grad(lambda v: numpy_scan_loss(v, xs), w)
    close(spmd.grad(loss)(w, xs), want)
    close(spmd.jit(spmd.grad(loss))(w, xs), want)
    f = spmd.checkpoint(lambda w, x: layer(w, x).sum(), policy=chosen)
    close(spmd.grad(f)(w, xs[0]), fd_grad(lambda v: float(numpy_layer(v, xs[0]).sum()), w))
    hess = spmd.jacfwd(spmd.grad(lambda w, x: layer(w, x).sum()))(w, xs[0])
    close(spmd.jacfwd(spmd.grad(f))(w, xs[0]), hess, rtol=1e-10)


def test_dots_saveable_keeps_the_products_per_scan_step():
    w, ms = RNG.normal(size=(3, 3)), RNG.normal(size=(7, 3, 3))
    policies = spmd.checkpoint_policies

    def stacked(policy):
        step = spmd.checkpoint(lambda h, m: (snp.tanh(h @ m) @ m, None), policy=policy)
        loss = lambda w, xs: lax.scan(step, w[:2], xs)[0].sum()  # noqa: E731
        return _stacked_residual_bytes(loss, w, ms)

    carry = 2 * 3 * 8
    # the carry; with dots, the products h @ m and tanh(..) @ m (2x3 each) as well
    assert stacked(None) == stacked(policies.nothing_saveable) == 7 * carry
    assert stacked(policies.dots_saveable) == 7 * 3 * carry


def test_static_argnums_out_of_range_is_an_error():
    f = spmd.checkpoint(lambda x, n: x * n, static_argnums=(2,))
    with pytest.raises(spmd.SpmdValueError, match="static_argnums"):
        spmd.grad(lambda x: f(x, 2.0))(1.0)
