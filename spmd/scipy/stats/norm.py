"""spmd.scipy.stats.norm: the normal distribution's functions, as jax.scipy.stats.norm's
(``loc`` the mean, ``scale`` the standard deviation), written over spmd.scipy.special."""

from __future__ import annotations

import math
from typing import Any

import spmd.numpy as snp
from spmd.scipy import special
from spmd.scipy.special import _inexact

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _standardized(name: str, x: Any, loc: Any, scale: Any) -> Any:
    x, loc, scale = _inexact(name, x, loc, scale)
    return (x - loc) / scale


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``-((x - loc) / scale)**2 / 2 - log(scale) - log(2 pi) / 2``."""
    x, loc, scale = _inexact("norm.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return -0.5 * (z * z) - snp.log(scale) - _LOG_SQRT_2PI


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density ``exp(logpdf(x, loc, scale))``. Example: ``norm.pdf(x, 0., 2.)``."""
    return snp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``P(X <= x)``, by ``ndtr((x - loc) / scale)``."""
    return special.ndtr(_standardized("norm.cdf", x, loc, scale))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(cdf(x))``, accurate far in the lower tail (log_ndtr)."""
    return special.log_ndtr(_standardized("norm.logcdf", x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function ``1 - cdf(x)``, computed as ``ndtr(-(x - loc) / scale)``."""
    return special.ndtr(-_standardized("norm.sf", x, loc, scale))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(sf(x))``, accurate far in the upper tail."""
    return special.log_ndtr(-_standardized("norm.logsf", x, loc, scale))


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile function, inverse of cdf: ``loc + scale * ndtri(q)``; NaN outside
    [0, 1]. ndtri goes through erfinv(2q - 1), which loses relative accuracy for q far below
    the float's epsilon."""
    q, loc, scale = _inexact("norm.ppf", q, loc, scale)
    return loc + scale * special.ndtri(q)
