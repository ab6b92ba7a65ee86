"""spmd.nn: neural-network functions with jax.nn's semantics (functions.py: activations,
softmax, one_hot, standardize; attention.py: dot_product_attention), and spmd.nn.initializers."""

from spmd.nn import initializers  # noqa: F401 (spmd.nn.initializers, a module)
from spmd.nn.attention import dot_product_attention
from spmd.nn.functions import (
    elu,
    gelu,
    glu,
    leaky_relu,
    log_sigmoid,
    log_softmax,
    logsumexp,
    one_hot,
    relu,
    sigmoid,
    silu,
    softmax,
    softplus,
    standardize,
    swish,
)

__all__ = [
    "dot_product_attention",
    "elu",
    "gelu",
    "glu",
    "leaky_relu",
    "log_sigmoid",
    "log_softmax",
    "logsumexp",
    "one_hot",
    "relu",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "standardize",
    "swish",
]
