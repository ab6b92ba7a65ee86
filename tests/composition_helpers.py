"""Oracles and custom rules shared by the composition tests: central finite differences in
float64 (gradient, Jacobian, Hessian), and a custom_jvp sine and custom_vjp tanh whose rules
are right, so finite differences check that the rule is the one used."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import spmd
import spmd.numpy as snp


def fd_gradient(f: Callable, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of a scalar function of one float64 array."""
    x = np.asarray(x, np.float64)
    out = np.zeros(x.size)
    for i in range(x.size):
        step = np.zeros(x.size)
        step[i] = eps
        step = step.reshape(x.shape)
        out[i] = (float(f(x + step)) - float(f(x - step))) / (2 * eps)
    return out.reshape(x.shape)


def fd_jacobian(f: Callable, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences: shape f(x).shape + x.shape."""
    x = np.asarray(x, np.float64)
    cols = []
    for i in range(x.size):
        step = np.zeros(x.size)
        step[i] = eps
        step = step.reshape(x.shape)
        cols.append((np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * eps))
    out = np.stack(cols, axis=-1)
    return out.reshape(out.shape[:-1] + x.shape)


def fd_hessian(f: Callable, x: np.ndarray, eps: float = 1e-4) -> np.ndarray:
    """Second central differences of a scalar function."""
    x = np.asarray(x, np.float64)
    n = x.size
    unit = np.eye(n).reshape((n, *x.shape)) * eps
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = (
                f(x + unit[i] + unit[j])
                - f(x + unit[i] - unit[j])
                - f(x - unit[i] + unit[j])
                + f(x - unit[i] - unit[j])
            ) / (4 * eps * eps)
    return out.reshape(x.shape + x.shape)


# --- custom rules (each correct, so finite differences check that it is the one used) -------


@spmd.custom_jvp
def csin(x):
    return snp.sin(x)


@csin.defjvp
def _csin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return csin(x), snp.cos(x) * t


@spmd.custom_vjp
def ctanh(x):
    return snp.tanh(x)


def _ctanh_fwd(x):
    y = snp.tanh(x)
    return y, y


def _ctanh_bwd(y, g):
    return (g * (1 - y * y),)


ctanh.defvjp(_ctanh_fwd, _ctanh_bwd)


DEVICES = 8
RING = [(j, (j + 1) % DEVICES) for j in range(DEVICES)]


def close(got, want, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=atol)


def mesh_of_devices():
    return spmd.make_mesh((DEVICES,), ("i",))


def shape_and_jaxpr(fun, *args):
    """eval_shape equals the real result's shapes, and make_jaxpr prints."""
    real = fun(*args)
    shapes = spmd.eval_shape(fun, *args)
    got = [(a.shape, np.dtype(a.dtype)) for a in spmd.tree_util.tree_leaves(shapes)]
    want = [(a.shape, np.dtype(a.dtype)) for a in spmd.tree_util.tree_leaves(real)]
    assert got == want
    assert str(spmd.make_jaxpr(fun)(*args))
    return real
