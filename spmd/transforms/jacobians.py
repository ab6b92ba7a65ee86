"""``jacfwd``, ``jacrev``, ``hessian``, ``linearize`` and ``linear_transpose``, as in JAX.
(Being built in this session; see the helper's commit.)"""

from __future__ import annotations


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    raise NotImplementedError("spmd.jacfwd is being built")


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False):
    raise NotImplementedError("spmd.jacrev is being built")


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    raise NotImplementedError("spmd.hessian is being built")


def linearize(fun, *primals):
    raise NotImplementedError("spmd.linearize is being built")


def linear_transpose(fun, *primals):
    raise NotImplementedError("spmd.linear_transpose is being built")
