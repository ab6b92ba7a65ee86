"""spmd.random's samplers of vectors and matrices from normal draws: multivariate_normal and
orthogonal, JAX's compositions with spmd.numpy.linalg."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import spmd.numpy as snp
from spmd.core.aval import check_dtype
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdValueError
from spmd.random.arguments import (
    broadcasts_to,
    concrete_int,
    float_dtype_arg,
    one_key,
    real_param,
    shape_arg,
)
from spmd.random.continuous import normal

Shape = int | Sequence[int]
_METHODS = ("cholesky", "eigh", "svd")


def multivariate_normal(
    key: Any,
    mean: Any,
    cov: Any,
    shape: Shape | None = None,
    dtype: Any = None,
    method: str = "cholesky",
) -> Any:
    """Normal vectors of mean ``mean`` (``(..., n)``) and covariance ``cov`` (``(..., n, n)``):
    ``mean + factor @ z`` with ``z`` standard normal and ``factor @ factor.T == cov``
    (``method``: cholesky, or eigh/svd for singular ``cov``). The result is ``(*shape, n)``.
    Example: ``multivariate_normal(key, np.zeros(2), np.eye(2), (100,))``."""
    key = one_key("multivariate_normal", key)
    if method not in _METHODS:
        raise SpmdValueError(
            f"spmd.random.multivariate_normal: method={method!r}; use one of {_METHODS}."
        )
    mean = snp.asarray(real_param("multivariate_normal", "mean", mean))
    cov = snp.asarray(real_param("multivariate_normal", "cov", cov))
    common = snp.result_type(mean, cov)
    common = common if common.kind == "f" else check_dtype(float)
    mean, cov = mean.astype(common), cov.astype(common)
    dtype = common if dtype is None else float_dtype_arg("multivariate_normal", dtype)
    m, c = aval_of(mean), aval_of(cov)
    if m.ndim < 1 or c.ndim < 2 or c.shape[-2:] != (m.shape[-1], m.shape[-1]):
        raise ShapeError(
            f"spmd.random.multivariate_normal: mean must be (..., n) and cov (..., n, n), "
            f"but they are {m} and {c}; give cov one n-by-n matrix per mean vector."
        )
    try:
        batch = np.broadcast_shapes(m.shape[:-1], c.shape[:-2])
    except ValueError:
        batch = None
    if shape is None and batch is None:
        raise ShapeError(
            f"spmd.random.multivariate_normal: the batch shapes of mean {m.shape[:-1]} and "
            f"cov {c.shape[:-2]} do not broadcast together."
        )
    shape = batch if shape is None else shape_arg("multivariate_normal", shape)
    if not (broadcasts_to(m.shape[:-1], shape) and broadcasts_to(c.shape[:-2], shape)):
        raise ShapeError(
            f"spmd.random.multivariate_normal: shape={shape} must be a batch shape that mean's "
            f"{m.shape[:-1]} and cov's {c.shape[:-2]} broadcast to."
        )
    if method == "svd":
        u, s, _ = snp.linalg.svd(cov)
        factor = u * snp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = snp.linalg.eigh(cov)
        factor = v * snp.sqrt(w[..., None, :])
    else:
        factor = snp.linalg.cholesky(cov)
    z = normal(key, (*shape, m.shape[-1]), dtype)
    return mean + snp.einsum("...ij,...j->...i", factor, z)


def orthogonal(key: Any, n: int, shape: Shape = (), dtype: Any = None, m: int | None = None):
    """Matrices uniform on the orthogonal group O(n) (Haar measure), shape ``(*shape, n, m)``;
    with ``m != n``, orthonormal rows (``n < m``) or columns. By the QR decomposition of a
    normal matrix with the signs of R's diagonal taken out (Mezzadri's method, as JAX).
    Example: ``orthogonal(key, 3)``."""
    key = one_key("orthogonal", key)
    dtype = float_dtype_arg("orthogonal", dtype)
    shape = shape_arg("orthogonal", shape)
    n = concrete_int("orthogonal", "n", n)
    m = n if m is None else concrete_int("orthogonal", "m", m)
    z = normal(key, (*shape, max(n, m), min(n, m)), dtype)
    q, r = snp.linalg.qr(z)
    signs = snp.sign(snp.diagonal(r, axis1=-2, axis2=-1))
    x = q * snp.expand_dims(signs, -2)
    return snp.swapaxes(x, -1, -2) if n < m else x
