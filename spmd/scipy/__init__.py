"""spmd.scipy: the parts of jax.scipy that spmd has (special functions, the normal distribution,
linear algebra).

``from spmd.scipy.special import logsumexp`` works as ``from jax.scipy.special import
logsumexp`` does.
"""

from spmd.scipy import linalg, special, stats

__all__ = ["linalg", "special", "stats"]
