"""``spmd.test_util.check_grads``, as JAX's: forward- and reverse-mode derivatives checked
against central finite differences, in one random direction, up to a given order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from spmd.transforms.autodiff import jvp, vjp
from spmd.transforms.jacobians import linearize
from spmd.tree_util import tree_flatten, tree_map

EPS = 1e-4
_GRADIENT_TOLERANCE = {  # JAX's default_gradient_tolerance
    np.dtype(np.float16): 1e-2,
    np.dtype(np.float32): 2e-3,
    np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 2e-3,
    np.dtype(np.complex128): 1e-5,
}


def check_grads(
    f: Callable,
    args: Sequence[Any],
    order: int,
    modes: Sequence[str] = ("fwd", "rev"),
    atol=None,
    rtol=None,
    eps: float | None = None,
) -> None:
    """Check ``f``'s derivatives at ``f(*args)`` against finite differences, up to ``order``
    (``modes``: "fwd" checks ``jvp``, "rev" checks ``vjp``, "lin" checks ``linearize``).
    ``atol``/``rtol``: a number, or a dict from dtype to number. Raises AssertionError
    naming the check that failed.

    Example: ``check_grads(spmd.numpy.sin, (np.array([0.5, 1.0]),), order=2)``.
    """
    args = tuple(args)
    eps = eps or EPS
    check_jvp_ = partial(check_jvp, atol=atol, rtol=rtol, eps=eps)
    check_vjp_ = partial(check_vjp, atol=atol, rtol=rtol, eps=eps)

    def check(f, args, order, err_msg=""):
        if "fwd" in modes:
            msg = f"JVP of {err_msg}" if err_msg else "JVP"
            check_jvp_(f, partial(jvp, f), args, err_msg=msg)
            if order > 1:
                check(partial(jvp, f), (args, args), order - 1, msg)
        if "rev" in modes:
            msg = f"VJP of {err_msg}" if err_msg else "VJP"
            check_vjp_(f, partial(vjp, f), args, err_msg=msg)
            if order > 1:

                def f_vjp(*primals):
                    out, pullback = vjp(f, *primals)
                    return pullback(out)

                check(f_vjp, args, order - 1, msg)
        if "lin" in modes:
            msg = f"LIN of {err_msg}" if err_msg else "LIN"
            check_jvp_(f, partial(_jvp_from_linearize, f), args, err_msg=msg)
            if order > 1:
                check(partial(_jvp_from_linearize, f), (args, args), order - 1, msg)

    check(f, args, order)


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg="") -> None:
    """``f_jvp(args, tangents)`` (``partial(jvp, f)``) against central differences of ``f``
    along one random direction."""
    rng = np.random.RandomState(0)
    tangent = tree_map(partial(_rand_like, rng), args)
    v_out, t_out = f_jvp(args, tangent)
    v_expected = f(*args)
    _check_close(v_out, v_expected, atol, rtol, f"{err_msg} primal")
    t_expected = numerical_jvp(f, args, tangent, eps)
    _check_close(t_out, t_expected, atol, rtol, f"{err_msg} tangent", _steps_dtypes(args))


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg="") -> None:
    """``f_vjp(*args)`` (``partial(vjp, f)``) checked by projection: for a random tangent t
    and cotangent c, Re<t, conj(vjp(conj(c)))> must equal Re<J t, c>, with J t from
    central differences."""
    rng = np.random.RandomState(0)
    v_out, pullback = f_vjp(*args)
    _check_close(v_out, f(*args), atol, rtol, f"{err_msg} primal")
    tangent = tree_map(partial(_rand_like, rng), args)
    tangent_out = numerical_jvp(f, args, tangent, eps)
    cotangent = tree_map(partial(_rand_like, rng), _host(v_out))
    cotangent_out = tree_map(np.conj, _host(pullback(tree_map(np.conj, cotangent))))
    projected = _inner_product(tangent, cotangent_out)
    expected = _inner_product(tangent_out, cotangent)
    _check_close(
        projected, expected, atol, rtol, f"{err_msg} cotangent projection", _steps_dtypes(args)
    )


def numerical_jvp(f, primals, tangents, eps=EPS) -> Any:
    """``(f(x + eps t) - f(x - eps t)) / (2 eps)``, in each primal's dtype."""
    pos = f(*tree_map(lambda x, t: _step(x, t, eps), primals, tangents))
    neg = f(*tree_map(lambda x, t: _step(x, t, -eps), primals, tangents))
    return tree_map(
        lambda a, b: _safe_subtract(np.asarray(a), np.asarray(b)) * (0.5 / eps),
        _host(pos),
        _host(neg),
    )


def _jvp_from_linearize(f, primals, tangents):
    out, f_lin = linearize(f, *primals)
    return out, f_lin(*tangents)


def _step(x, t, eps):
    x_host = np.asarray(x)
    moved = (x_host + np.asarray(t) * eps).astype(x_host.dtype)
    return moved.item() if type(x) in (float, complex) else moved


def _safe_subtract(a, b):
    """``a - b``, with ``inf - inf`` as 0 (an infinite result that did not move)."""
    with np.errstate(invalid="ignore"):
        return np.where(a == b, np.zeros((), a.dtype), a - b)


def _rand_like(rng, x):
    x = np.asarray(x)
    sample = rng.randn(*x.shape)
    if x.dtype.kind == "c":
        sample = sample + 1j * rng.randn(*x.shape)
    dtype = x.dtype if x.dtype.kind in "fc" else np.float64
    return np.asarray(sample, dtype=dtype)


def _host(tree):
    return tree_map(np.asarray, tree)


def _inner_product(xs, ys) -> float:
    x_leaves, x_tree = tree_flatten(_host(xs))
    y_leaves, y_tree = tree_flatten(_host(ys))
    if x_tree != y_tree:
        raise AssertionError(f"check_grads: structures differ: {x_tree} vs {y_tree}")
    return sum(
        float(np.real(np.dot(np.conj(x).reshape(-1), y.reshape(-1))))
        for x, y in zip(x_leaves, y_leaves, strict=True)
    )


def _tolerance(dtype: np.dtype, given) -> float:
    if given is not None and not isinstance(given, dict):
        return given
    table = {**_GRADIENT_TOLERANCE, **{np.dtype(k): v for k, v in (given or {}).items()}}
    return table.get(np.dtype(dtype), 1e-5 if np.dtype(dtype).itemsize >= 8 else 2e-3)


def _steps_dtypes(args) -> list[np.dtype]:
    """The dtypes the finite-difference steps are taken in: a float32 input rounds its step,
    so a derivative through it is known only to float32's tolerance, whatever the output's."""
    return [np.asarray(x).dtype for x in tree_flatten(args)[0]]


def _check_close(actual, expected, atol, rtol, err_msg: str, step_dtypes=()) -> None:
    a_leaves, a_tree = tree_flatten(_host(actual))
    e_leaves, e_tree = tree_flatten(_host(expected))
    if a_tree != e_tree:
        raise AssertionError(f"{err_msg}: structure {a_tree} differs from {e_tree}")
    for a, e in zip(a_leaves, e_leaves, strict=True):
        a, e = np.asarray(a), np.asarray(e)
        if a.shape != e.shape:
            raise AssertionError(f"{err_msg}: shape {a.shape} differs from {e.shape}")
        dtypes = [a.dtype, e.dtype, *(d for d in step_dtypes if d.kind in "fc")]
        a_tol = max(_tolerance(d, atol) for d in dtypes)
        r_tol = max(_tolerance(d, rtol) for d in dtypes)
        with np.errstate(invalid="ignore"):
            np.testing.assert_allclose(
                a, e, atol=a_tol * a.size, rtol=r_tol * e.size, err_msg=err_msg.strip()
            )


__all__ = ["check_grads", "check_jvp", "check_vjp", "numerical_jvp"]
