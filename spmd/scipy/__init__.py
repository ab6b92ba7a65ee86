"""spmd.scipy: the parts of jax.scipy that spmd has (special functions, the normal distribution).

``from spmd.scipy.special import logsumexp`` works as ``from jax.scipy.special import
logsumexp`` does.
"""

from spmd.scipy import special, stats

__all__ = ["special", "stats"]
