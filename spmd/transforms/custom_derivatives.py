"""``custom_jvp`` and ``custom_vjp``: functions with derivative rules of their own, as in JAX.
(Being built in this session; see the helper's commit.)"""

from __future__ import annotations


def custom_jvp(fun=None, *, nondiff_argnums=()):
    raise NotImplementedError("spmd.custom_jvp is being built")


def custom_vjp(fun=None, *, nondiff_argnums=()):
    raise NotImplementedError("spmd.custom_vjp is being built")
