"""spmd.random: counter-based random numbers (Threefry-2x32), the same whatever the sharding.

Keys are explicit values, as in JAX: ``key(seed)`` makes one (a uint32[2] array),
``split`` and ``fold_in`` derive new ones, and a sampler never changes its key::

    k = spmd.random.key(0)
    k, sub = spmd.random.split(k)
    x = spmd.random.normal(sub, (1024, 64))

Element ``i`` of a result (its global row-major flat index) is computed from the counter
``i`` alone (see spmd.prims.random), so a sharded result holds exactly the numbers of the
unsharded one, and the numbers equal ``jax.random``'s (partitionable Threefry) for the same
key, shape and dtype.

The samplers are JAX's algorithms over the bits, uniform and normal primitives and
spmd.numpy (keys.py: keys; continuous.py, discrete.py: one variable; permutations.py:
permutation, choice, shuffle; multivariate.py: vectors and matrices; gamma.py: the gamma
family); truncated_normal, gamma and poisson are primitives of their own
(spmd/prims/random_*.py). Defaults are jax.random's with x64 off, whatever spmd's dtype
mode: float32 samples, int32 integers and indices.
"""

from __future__ import annotations

from spmd.random.continuous import (
    cauchy,
    exponential,
    gumbel,
    laplace,
    logistic,
    normal,
    truncated_normal,
    uniform,
)
from spmd.random.discrete import bernoulli, bits, categorical, poisson, rademacher, randint
from spmd.random.gamma import ball, beta, dirichlet, gamma, generalized_normal, loggamma, t
from spmd.random.keys import PRNGKey, fold_in, key, key_data, split, wrap_key_data
from spmd.random.multivariate import multivariate_normal, orthogonal
from spmd.random.permutations import choice, permutation, shuffle

__all__ = [
    "PRNGKey",
    "ball",
    "bernoulli",
    "beta",
    "bits",
    "categorical",
    "cauchy",
    "choice",
    "dirichlet",
    "exponential",
    "fold_in",
    "gamma",
    "generalized_normal",
    "gumbel",
    "key",
    "key_data",
    "laplace",
    "loggamma",
    "logistic",
    "multivariate_normal",
    "normal",
    "orthogonal",
    "permutation",
    "poisson",
    "rademacher",
    "randint",
    "shuffle",
    "split",
    "t",
    "truncated_normal",
    "uniform",
    "wrap_key_data",
]
