"""Independent oracles for the JAX documentation ports: float64 central finite differences
and conversion to NumPy, so no expected value is copied from JAX's printouts."""

from __future__ import annotations

import numpy as np


def host(x) -> np.ndarray:
    """``x`` (an spmd array, a Python number or a NumPy array) as a NumPy array."""
    return np.asarray(x)


def numerical_gradient(f, x, *, eps: float = 1e-6) -> np.ndarray:
    """The gradient of the scalar function ``f`` at the array ``x`` by central differences
    along each coordinate, in float64."""
    x = np.asarray(x, np.float64)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        grad[index] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


def numerical_jacobian(f, x, *, eps: float = 1e-6) -> np.ndarray:
    """The Jacobian of ``f`` at the array ``x`` by central differences, shaped
    ``f(x).shape + x.shape``, in float64."""
    x = np.asarray(x, np.float64)
    out_shape = np.shape(f(x))
    jac = np.zeros(out_shape + x.shape)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        jac[(..., *index)] = (np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * eps)
    return jac
