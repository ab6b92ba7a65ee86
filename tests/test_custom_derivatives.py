"""custom_jvp and custom_vjp against NumPy and finite differences in float64: the examples
of JAX's "Custom derivative rules" page, re-derived, under jit, vmap, grad (of grad),
shard_map and pmap, and the errors for rules that do not fit their function."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import P
from spmd.custom_derivatives import SymbolicZero
from spmd.errors import ShapeError, SpmdError, SpmdTypeError


def finite_difference(f, x: float, h: float = 1e-6) -> float:
    return (float(f(x + h)) - float(f(x - h))) / (2 * h)


def close(got, want, rtol: float = 1e-6) -> None:
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=1e-9)


# --- the examples ---------------------------------------------------------------------------


@spmd.custom_jvp
def log1pexp(x):
    return snp.log1p(snp.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * (1 - 1 / (1 + snp.exp(x)))


def sigmoid(x):
    return 1 / (1 + np.exp(-np.asarray(x, np.float64)))


def test_log1pexp_stable_rule_is_finite_and_right_where_the_naive_one_is_not():
    naive = spmd.grad(lambda x: snp.log1p(snp.exp(x)))(np.float64(1000.0))
    assert np.isnan(float(naive))  # the rule is what makes the next line right
    with np.errstate(over="ignore"):
        close(spmd.grad(log1pexp)(np.float64(1000.0)), 1.0)
    close(spmd.grad(log1pexp)(np.float64(100.0)), sigmoid(100.0))
    for x in (-3.0, 0.5, 4.0):
        close(spmd.grad(log1pexp)(np.float64(x)), finite_difference(log1pexp, x))
        close(spmd.jit(spmd.grad(log1pexp))(np.float64(x)), sigmoid(x))


def test_log1pexp_under_jvp_vmap_and_jit():
    xs = np.linspace(-3.0, 3.0, 7)
    out, tangent = spmd.jvp(log1pexp, (xs,), (np.full(7, 2.0),))
    close(out, np.log1p(np.exp(xs)))
    close(tangent, 2 * sigmoid(xs))
    close(spmd.vmap(log1pexp)(xs), np.log1p(np.exp(xs)))
    close(spmd.jit(log1pexp)(xs), np.log1p(np.exp(xs)))
    close(spmd.vmap(spmd.grad(log1pexp))(xs), sigmoid(xs))
    close(spmd.grad(lambda v: spmd.vmap(log1pexp)(v).sum())(xs), sigmoid(xs))
    close(spmd.jit(spmd.vmap(spmd.grad(log1pexp)))(xs), sigmoid(xs))


def test_jvp_primal_and_tangent_come_from_the_rule_in_forward_mode():
    @spmd.custom_jvp
    def f(x):
        return snp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return snp.sin(x), 7.0 * t  # deliberately not cos: the rule must be the one used

    x = np.float64(0.3)
    close(spmd.jvp(f, (x,), (np.float64(1.0),))[1], 7.0)
    close(spmd.grad(f)(x), 7.0)
    close(spmd.jit(spmd.grad(f))(x), 7.0)


@spmd.custom_jvp
def cube(x):
    return x**3


cube.defjvps(lambda t, ans, x: 3 * x**2 * t)


def test_defjvps_and_grad_of_grad_use_the_rules_own_derivative():
    x = np.float64(1.7)
    close(spmd.grad(cube)(x), 3 * 1.7**2)
    close(spmd.grad(spmd.grad(cube))(x), 6 * 1.7)
    close(spmd.jit(spmd.grad(spmd.grad(cube)))(x), 6 * 1.7)

    @spmd.custom_jvp
    def f(x):
        return snp.sin(x)

    f.defjvps(lambda t, ans, x: 5.0 * t)  # a rule whose own derivative is 0
    close(spmd.grad(spmd.grad(f))(x), 0.0)


def test_defjvps_with_none_contributes_nothing():
    @spmd.custom_jvp
    def f(x, y):
        return x * y

    f.defjvps(None, lambda ty, ans, x, y: x * ty)
    x, y = np.float64(2.0), np.float64(3.0)
    close(spmd.grad(f, argnums=(0, 1))(x, y), [0.0, 2.0])


@spmd.custom_vjp
def clip_gradient(lo, hi, x):
    return x


def _clip_fwd(lo, hi, x):
    return x, (lo, hi)


def _clip_bwd(res, g):
    lo, hi = res
    return (None, None, snp.clip(g, lo, hi))


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def test_clip_gradient():
    def f(x):
        return snp.sin(clip_gradient(-0.75, 0.75, x))

    xs = np.linspace(0.0, 3.0, 5)
    want = np.clip(np.cos(xs), -0.75, 0.75)
    close(spmd.vmap(spmd.grad(f))(xs), want)
    close(spmd.jit(spmd.vmap(spmd.grad(f)))(xs), want)
    close(spmd.grad(lambda v: spmd.vmap(f)(v).sum())(xs), want)
    close(f(xs), np.sin(xs))


def test_nondiff_argnums_with_a_callable():
    @partial(spmd.custom_jvp, nondiff_argnums=(0,))
    def app(g, x):
        return g(x)

    @app.defjvp
    def app_jvp(g, primals, tangents):
        (x,), (t,) = primals, tangents
        return app(g, x), 2.0 * t  # a deliberate rule: twice the tangent

    x = np.float64(0.4)
    close(app(snp.sin, x), np.sin(0.4))
    close(spmd.grad(lambda v: app(snp.sin, v))(x), 2.0)
    close(spmd.jit(spmd.grad(lambda v: app(snp.sin, v)))(x), 2.0)

    @partial(spmd.custom_vjp, nondiff_argnums=(0,))
    def apply_vjp(g, x):
        return g(x)

    apply_vjp.defvjp(lambda g, x: (g(x), x), lambda g, x, ct: (ct * 3.0 * g(x),))
    close(spmd.grad(lambda v: apply_vjp(snp.exp, v))(x), 3.0 * np.exp(0.4))


def test_pytree_residuals_and_pytree_arguments():
    @spmd.custom_vjp
    def f(p):
        return p["a"] * snp.sin(p["b"])

    def fwd(p):
        return f(p), {"sin": snp.sin(p["b"]), "pair": (p["a"], snp.cos(p["b"]))}

    def bwd(res, g):
        a, cos_b = res["pair"]
        return ({"a": g * res["sin"], "b": g * a * cos_b},)

    f.defvjp(fwd, bwd)
    a, b = np.array([1.0, 2.0]), np.array([0.3, -0.6])
    grads = spmd.grad(lambda p: f(p).sum())({"a": a, "b": b})
    close(grads["a"], np.sin(b))
    close(grads["b"], a * np.cos(b))
    jitted = spmd.jit(spmd.grad(lambda p: f(p).sum()))({"a": a, "b": b})
    close(jitted["b"], a * np.cos(b))


def test_custom_vjp_inside_custom_jvp():
    @spmd.custom_jvp
    def outer(x):
        return clip_gradient(-1.0, 1.0, x) ** 2

    @outer.defjvp
    def outer_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y = clip_gradient(-0.25, 0.25, x)
        return y**2, 2 * y * t

    x = np.float64(3.0)
    close(outer(x), 9.0)
    close(spmd.grad(outer)(x), 6.0)
    close(spmd.jit(spmd.grad(outer))(x), 6.0)
    # d/dx of the rule's 2 * y: y's cotangent 2 goes through clip_gradient's bwd, clipped
    close(spmd.grad(spmd.grad(outer))(x), 0.25)
    close(spmd.vmap(spmd.grad(spmd.grad(outer)))(np.array([3.0, 0.1])), [0.25, 0.25])


def test_custom_vjp_applied_to_a_tangent_is_refused():
    @spmd.custom_jvp
    def f(x):
        return snp.sin(x)

    f.defjvp(lambda p, t: (snp.sin(p[0]), clip_gradient(-0.25, 0.25, t[0])))
    with pytest.raises(SpmdTypeError, match=r"clip_gradient.*tangent"):
        spmd.grad(f)(np.float64(3.0))


def test_symbolic_zeros():
    seen = []

    @spmd.custom_jvp
    def f(x, y):
        return x * y

    def f_jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        seen.append((type(tx), type(ty)))
        terms = [t * o for t, o in ((tx, y), (ty, x)) if not isinstance(t, SymbolicZero)]
        return f(x, y), sum(terms[1:], terms[0]) if terms else SymbolicZero(spmd.typeof(x))

    f.defjvp(f_jvp, symbolic_zeros=True)
    x, y = np.float64(2.0), np.float64(5.0)
    close(spmd.grad(f)(x, y), 5.0)
    assert seen[-1][1] is SymbolicZero and seen[-1][0] is not SymbolicZero
    close(spmd.grad(f, argnums=1)(x, y), 2.0)
    assert seen[-1][0] is SymbolicZero


def test_make_jaxpr_shows_the_call():
    text = str(spmd.make_jaxpr(log1pexp)(np.float64(1.0)))
    assert "custom_jvp_call[" in text and "jvp=log1pexp_jvp" in text and "log1p" in text
    # Under grad, as in JAX, fwd runs inline and bwd (a clip) is the backward pass.
    text = str(spmd.make_jaxpr(spmd.grad(lambda x: clip_gradient(-1.0, 1.0, x)))(1.0))
    assert "custom_vjp_call" not in text and "maximum" in text and "minimum" in text


# --- sharded: jit, shard_map, pmap ---------------------------------------------------------


def _mesh():
    return spmd.Mesh(np.array(spmd.devices()[:8]).reshape(2, 4), ("x", "y"))


def test_jit_on_sharded_inputs():
    mesh = _mesh()
    xs = np.linspace(-4.0, 4.0, 16).reshape(4, 4)
    placed = spmd.device_put(xs, spmd.NamedSharding(mesh, P("x", "y")))
    out = spmd.jit(spmd.grad(lambda v: log1pexp(v).sum()))(placed)
    close(out, sigmoid(xs))
    close(spmd.jit(log1pexp)(placed), np.log1p(np.exp(xs)))


def test_inside_shard_map_with_sharded_inputs():
    mesh = _mesh()
    xs = np.linspace(-4.0, 4.0, 32).reshape(8, 4)

    def body(block):
        return spmd.grad(lambda v: (log1pexp(v) + clip_gradient(-0.5, 0.5, v)).sum())(block)

    mapped = spmd.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))
    want = sigmoid(xs) + 0.5
    close(mapped(xs), want)
    close(spmd.jit(mapped)(xs), want)

    def loss(v):
        inner = spmd.shard_map(log1pexp, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
        return inner(v).sum()

    close(spmd.grad(loss)(xs), sigmoid(xs))
    close(spmd.jit(spmd.grad(loss))(xs), sigmoid(xs))


def test_under_pmap():
    xs = np.linspace(-2.0, 2.0, 8)
    close(spmd.pmap(spmd.grad(log1pexp))(xs), sigmoid(xs))
    close(spmd.pmap(spmd.grad(cube))(xs), 3 * xs**2)
    close(spmd.grad(lambda v: spmd.pmap(log1pexp)(v).sum())(xs), sigmoid(xs))


# --- errors --------------------------------------------------------------------------------


def test_calling_without_a_rule():
    @spmd.custom_jvp
    def f(x):
        return x

    with pytest.raises(SpmdTypeError, match=r"No JVP defined.*f\.defjvp"):
        f(np.float64(1.0))

    @spmd.custom_vjp
    def g(x):
        return x

    with pytest.raises(SpmdTypeError, match="defvjp"):
        g(np.float64(1.0))


def test_custom_vjp_under_jvp_names_the_function():
    with pytest.raises(SpmdTypeError, match=r"forward-mode.*clip_gradient"):
        spmd.jvp(lambda x: clip_gradient(-1.0, 1.0, x), (1.0,), (1.0,))


def test_rule_outputs_that_do_not_match_the_function():
    @spmd.custom_jvp
    def f(x):
        return x * 2

    f.defjvp(lambda p, t: (p[0] * 2, (t[0], t[0])))
    with pytest.raises(SpmdTypeError, match=r"tangent output.*structure"):
        spmd.grad(f)(np.float64(1.0))

    @spmd.custom_jvp
    def g(x):
        return x.sum()

    g.defjvp(lambda p, t: (p[0].sum(), t[0]))
    with pytest.raises(ShapeError, match=r"g.*f64\[3\].*f64\[\]"):
        spmd.grad(g)(np.ones(3))


def test_bwd_returning_the_wrong_cotangents():
    @spmd.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (g * res[1],))
    with pytest.raises(SpmdTypeError, match="one cotangent per differentiable argument"):
        spmd.grad(f)(np.float64(1.0), np.float64(2.0))

    @spmd.custom_vjp
    def h(p):
        return p[0] * p[1]

    h.defvjp(lambda p: (h(p), p), lambda res, g: ({"a": g},))
    with pytest.raises(SpmdTypeError, match="structure"):
        spmd.grad(h)((np.float64(1.0), np.float64(2.0)))


def test_errors_are_spmd_errors():
    assert issubclass(SpmdTypeError, SpmdError)
