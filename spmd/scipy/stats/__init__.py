"""spmd.scipy.stats: probability distributions, as jax.scipy.stats has them (norm)."""

from spmd.scipy.stats import norm

__all__ = ["norm"]
