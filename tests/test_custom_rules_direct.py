"""custom_jvp and custom_vjp under jvp, grad and vjp run the user's rule directly, as JAX does
(spmd/core/custom_rules.py): the order in which rule and function are called, Python control
flow on the primals under grad, the closed-over-value and rule-output errors of that path,
and the rule surviving every composition. The rules here are deliberately *not* the
function's true derivative (twice it), so an answer from differentiating the function
itself would be wrong; the oracle is NumPy's 2 cos x and its derivatives."""

from __future__ import annotations

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import P, lax
from spmd.errors import ShapeError, SpmdTypeError


def close(got, want, rtol: float = 1e-9) -> None:
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=1e-12)


def logged_custom_jvp(log: list):
    @spmd.custom_jvp
    def f(x):
        log.append("f")
        return snp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        log.append("jvp")
        (x,), (t,) = primals, tangents
        return f(x), 2 * snp.cos(x) * t

    return f


def logged_custom_vjp(log: list):
    @spmd.custom_vjp
    def f(x):
        log.append("f")
        return snp.sin(x)

    def f_fwd(x):
        log.append("fwd")
        return f(x), x

    def f_bwd(x, g):
        log.append("bwd")
        return (2 * snp.cos(x) * g,)

    f.defvjp(f_fwd, f_bwd)
    return f


X = np.float64(0.7)


# --- call order ----------------------------------------------------------------------------


def test_custom_jvp_calls_the_rule_first_and_the_function_only_from_it():
    log: list = []
    f = logged_custom_jvp(log)
    close(spmd.grad(f)(X), 2 * np.cos(X))
    assert log == ["jvp", "f"]
    log.clear()
    y, t = spmd.jvp(f, (X,), (np.float64(1.5),))
    assert log == ["jvp", "f"]
    close(y, np.sin(X))
    close(t, 3 * np.cos(X))
    log.clear()
    y, back = spmd.vjp(f, X)
    assert log == ["jvp", "f"]
    close(back(np.float64(1.0))[0], 2 * np.cos(X))
    assert log == ["jvp", "f"]  # the backward pass is the recorded tangent work
    log.clear()
    close(f(X), np.sin(X))
    assert log == ["f"]


def test_custom_vjp_calls_fwd_first_then_bwd_in_the_backward_pass():
    log: list = []
    f = logged_custom_vjp(log)
    close(spmd.grad(f)(X), 2 * np.cos(X))
    assert log == ["fwd", "f", "bwd"]
    log.clear()
    y, back = spmd.vjp(f, X)
    assert log == ["fwd", "f"]
    close(y, np.sin(X))
    close(back(np.float64(3.0))[0], 6 * np.cos(X))
    assert log == ["fwd", "f", "bwd"]


def test_under_jit_the_function_is_traced_once_and_the_rule_once():
    log: list = []
    f = logged_custom_jvp(log)
    close(spmd.jit(spmd.grad(f))(X), 2 * np.cos(X))
    assert log == ["jvp", "f"]


# --- Python control flow on the primals ------------------------------------------------------


def test_rules_branch_on_concrete_primals_under_grad():
    @spmd.custom_jvp
    def f(x):
        return snp.abs(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), (2 * t if x > 0 else -3 * t)

    @spmd.custom_vjp
    def g(x):
        return snp.abs(x)

    def g_fwd(x):
        return g(x), float(x) > 0

    g.defvjp(g_fwd, lambda positive, ct: (2 * ct if positive else -3 * ct,))
    plus, minus = snp.asarray(1.5), snp.asarray(-1.5)  # spmd Arrays, not NumPy scalars
    for fn in (f, g):
        close(spmd.grad(fn)(plus), 2.0)
        close(spmd.grad(fn)(minus), -3.0)
        close(spmd.value_and_grad(fn)(minus)[0], 1.5)
    close(spmd.jvp(f, (minus,), (snp.asarray(1.0),))[1], -3.0)


# --- higher order and compositions ---------------------------------------------------------

FIRST = [
    ("grad", lambda f: spmd.grad(f)),
    ("jit(grad)", lambda f: spmd.jit(spmd.grad(f))),
    ("grad(jit)", lambda f: spmd.grad(spmd.jit(f))),
    ("jvp", lambda f: lambda x: spmd.jvp(f, (x,), (np.float64(1.0),))[1]),
    ("jacfwd", lambda f: spmd.jacfwd(f)),
    ("jacrev", lambda f: spmd.jacrev(f)),
]
SECOND = [
    ("grad(grad)", lambda f: spmd.grad(spmd.grad(f))),
    ("jit(grad(grad))", lambda f: spmd.jit(spmd.grad(spmd.grad(f)))),
    ("grad(grad(jit))", lambda f: spmd.grad(spmd.grad(spmd.jit(f)))),
    ("jvp(grad)", lambda f: lambda x: spmd.jvp(spmd.grad(f), (x,), (np.float64(1.0),))[1]),
    ("grad(jvp)", lambda f: spmd.grad(lambda x: spmd.jvp(f, (x,), (np.float64(1.0),))[1])),
]


@pytest.mark.parametrize("kind", ["jvp", "vjp"])
@pytest.mark.parametrize("name, transform", FIRST + SECOND, ids=[n for n, _ in FIRST + SECOND])
def test_the_rule_is_the_derivative_at_every_order(kind, name, transform):
    f = (logged_custom_jvp if kind == "jvp" else logged_custom_vjp)([])
    forward = "jvp" in name or "jacfwd" in name
    if kind == "vjp" and forward:
        with pytest.raises(SpmdTypeError, match="forward-mode"):
            transform(f)(X)
        return
    want = 2 * np.cos(X) if (name, transform) in FIRST else -2 * np.sin(X)
    close(transform(f)(X), want)


@pytest.mark.parametrize("kind", ["jvp", "vjp"])
def test_vmap_of_grad_scan_of_grad_and_grad_in_shard_map(kind):
    f = (logged_custom_jvp if kind == "jvp" else logged_custom_vjp)([])
    xs = np.linspace(-2.0, 2.0, 8)
    close(spmd.vmap(spmd.grad(f))(xs), 2 * np.cos(xs))
    close(spmd.grad(lambda v: spmd.vmap(f)(v).sum())(xs), 2 * np.cos(xs))

    def scanned(v):
        return lax.scan(lambda c, _: (c + f(v * c), None), v, None, length=3)[0]

    def np_scanned(v):
        c = v
        for _ in range(3):
            c = c + np.sin(v * c)
        return c

    def np_rule_grad(v):  # d/dv of scanned with sin' taken as 2 cos
        c, dc = v, 1.0
        for _ in range(3):
            c, dc = c + np.sin(v * c), dc + 2 * np.cos(v * c) * (c + v * dc)
        return dc

    close(scanned(X), np_scanned(X))
    close(spmd.grad(scanned)(X), np_rule_grad(X))
    mesh = spmd.Mesh(np.array(spmd.devices()[:8]).reshape(2, 4), ("x", "y"))
    blocks = np.linspace(-2.0, 2.0, 32).reshape(8, 4)
    body = spmd.shard_map(
        lambda b: spmd.grad(lambda v: f(v).sum())(b), mesh=mesh, in_specs=P("x", "y"),
        out_specs=P("x", "y"),
    )  # fmt: skip
    close(body(blocks), 2 * np.cos(blocks))
    close(spmd.jit(body)(blocks), 2 * np.cos(blocks))
    # Under vmap the call is recorded (custom_vjp_call), and grad then runs fwd in the
    # tangent trace: the cotangent bwd gets is typed as the varying output, not summed.
    body = spmd.shard_map(
        lambda b: spmd.grad(lambda v: spmd.vmap(f)(v).sum())(b), mesh=mesh,
        in_specs=P("x", "y"), out_specs=P("x", "y"),
    )  # fmt: skip
    close(body(blocks), 2 * np.cos(blocks))
    close(spmd.jit(body)(blocks), 2 * np.cos(blocks))


# --- errors --------------------------------------------------------------------------------


def test_a_rule_closing_over_a_differentiated_value_is_refused():
    def jvp_outer(y):
        @spmd.custom_jvp
        def f(x):
            return x * y

        f.defjvp(lambda p, t: (f(p[0]), t[0] * y))
        return f(y)

    def vjp_outer(y):
        @spmd.custom_vjp
        def f(x):
            return x

        f.defvjp(lambda x: (x * y, None), lambda res, g: (g,))
        return f(y)

    def returns_it(y):
        @spmd.custom_jvp
        def f(x):
            return x

        f.defjvp(lambda p, t: (y, t[0]))
        return f(y)

    def concrete_argument(y):  # only the closure is differentiated: no rule covers it
        @spmd.custom_jvp
        def f(x):
            return snp.sin(x * y)

        f.defjvp(lambda p, t: (f(p[0]), 100 * t[0]))
        return f(np.float64(1.0))

    for outer in (jvp_outer, vjp_outer, returns_it, concrete_argument):
        with pytest.raises(SpmdTypeError, match=r"closes over a value that is being diff"):
            spmd.grad(outer)(np.float64(2.0))
    with pytest.raises(SpmdTypeError, match=r"closes over"):
        spmd.jvp(jvp_outer, (np.float64(2.0),), (np.float64(1.0),))
    with pytest.raises(SpmdTypeError, match=r"closes over"):
        spmd.jit(spmd.grad(jvp_outer))(np.float64(2.0))


def test_rule_outputs_that_do_not_fit_are_refused_in_the_direct_path():
    def custom(rule):
        f = spmd.custom_jvp(lambda x: x)
        f.defjvp(rule)
        return f

    cases = [
        (lambda p, t: p[0], SpmdTypeError, r"must return a pair"),
        (lambda p, t: ((p[0], p[0]), t[0]), SpmdTypeError, r"tangent output.*structure"),
        (lambda p, t: (p[0], t[0] * snp.ones(3)), ShapeError, r"tangent output.*f64\[\]"),
    ]
    for rule, error, match in cases:
        for run in (
            lambda f: spmd.grad(f)(np.float64(1.0)),
            lambda f: spmd.jvp(f, (np.float64(1.0),), (np.float64(1.0),)),
        ):
            with pytest.raises(error, match=match):
                run(custom(rule))
    g = spmd.custom_vjp(lambda x: x)
    g.defvjp(lambda x: x, lambda res, ct: (ct,))
    with pytest.raises(SpmdTypeError, match=r"fwd must return a pair"):
        spmd.grad(g)(np.float64(1.0))
