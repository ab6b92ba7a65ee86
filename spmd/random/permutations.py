"""spmd.random's permutations and draws from a population: permutation, choice, and the
deprecated shuffle.

A permutation sorts by random 32-bit keys, in as many rounds as JAX runs (enough that ties
between keys are unlikely to survive every round): each round draws ``bits(subkey,
x.shape)`` and sorts stably by them, so the result is JAX's, and sorting along an axis
gathers that axis only.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

import spmd.numpy as snp
from spmd.core.aval import check_dtype
from spmd.core.axes import normalize_axis
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.random.arguments import DEFAULT_INT, concrete_int, one_key, real_param, shape_arg
from spmd.random.continuous import gumbel, uniform
from spmd.random.discrete import bits, randint
from spmd.random.keys import split

_UINT32_MAX = np.iinfo(np.uint32).max


def _shuffle(key: Any, x: Any, axis: int) -> Any:
    """``x`` with each vector along ``axis`` shuffled on its own (JAX's rounds of sorts)."""
    size = aval_of(x).size
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(_UINT32_MAX)))
    for _ in range(rounds):
        keys = split(key)
        key, subkey = keys[0], keys[1]
        order = snp.argsort(bits(subkey, aval_of(x).shape, np.uint32), axis=axis)
        x = snp.take_along_axis(x, order, axis)
    return x


def _axis(name: str, axis: int, aval) -> int:
    return normalize_axis(axis, aval.ndim, f"spmd.random.{name}", str(aval))


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of ``arange(x)`` (``x`` an int) or of ``x``'s slices along
    ``axis``; ``independent=True`` shuffles each vector along ``axis`` on its own. Example:
    ``permutation(key, 10)``, ``permutation(key, x, axis=1)``."""
    key = one_key("permutation", key)
    aval = aval_of(x)
    if aval.ndim == 0:
        if aval.dtype.kind not in "iu":
            raise SpmdTypeError(
                f"spmd.random.permutation: x must be an int or an array of at least one "
                f"dimension, not {aval}."
            )
        n = concrete_int("permutation", "x", x)
        return _shuffle(key, snp.arange(n, dtype=DEFAULT_INT), 0)
    x = snp.asarray(x)
    axis = _axis("permutation", axis, aval)
    if independent or aval.ndim == 1:
        return _shuffle(key, x, axis)
    order = _shuffle(key, snp.arange(aval.shape[axis], dtype=DEFAULT_INT), 0)
    return snp.take(x, order, axis=axis)


def shuffle(key: Any, x: Any, axis: int = 0) -> Any:
    """Deprecated, as in JAX (which has removed it): shuffles each vector of ``x`` along
    ``axis`` on its own; use ``permutation(key, x, axis, independent=True)``, which gives the
    same numbers. Example: ``shuffle(key, x)``."""
    warnings.warn(
        "spmd.random.shuffle is deprecated (jax.random.shuffle was); use "
        "spmd.random.permutation(key, x, axis, independent=True).",
        FutureWarning,
        stacklevel=2,
    )
    key = one_key("shuffle", key)
    x = snp.asarray(x)
    return _shuffle(key, x, _axis("shuffle", axis, aval_of(x)))


def choice(
    key: Any,
    a: Any,
    shape: Sequence[int] = (),
    replace: bool = True,
    p: Any = None,
    axis: int = 0,
    mode: str | None = None,
) -> Any:
    """A random sample of ``arange(a)`` (``a`` an int) or of ``a``'s slices along ``axis``,
    of ``shape`` draws, with or without replacement, uniform or with probabilities ``p``.
    Example: ``choice(key, 5, (3,), replace=False, p=probs)``.

    JAX's algorithms: uniform draws are ``randint``; without replacement, a permutation's
    first draws; with ``p``, inverting the cumulative sum (with replacement) or the Gumbel
    top-k trick (without).
    """
    key = one_key("choice", key)
    if not isinstance(shape, Sequence):
        raise SpmdTypeError(
            f"spmd.random.choice: shape must be a sequence (as in JAX), not {shape!r}; pass "
            f"shape=({shape!r},)."
        )
    shape = shape_arg("choice", shape)
    a_aval = aval_of(a)
    if a_aval.ndim == 0:
        population, arr, axis = concrete_int("choice", "a", a), None, 0
        out_shape = shape
    else:
        arr = snp.asarray(a)
        axis = _axis("choice", axis, a_aval)
        population = a_aval.shape[axis]
        out_shape = a_aval.shape[:axis] + shape + a_aval.shape[axis + 1 :]
    draws = math.prod(shape)
    if draws == 0:
        return snp.zeros(out_shape, DEFAULT_INT if arr is None else a_aval.dtype)
    if population <= 0:
        raise SpmdValueError(
            f"spmd.random.choice: the population is empty (a={a if arr is None else a_aval}), "
            f"but shape={shape} asks for {draws} draws; give a a positive size."
        )
    if not replace and draws > population:
        raise SpmdValueError(
            f"spmd.random.choice: cannot take {draws} draws (shape={shape}) without "
            f"replacement from a population of {population}; ask for at most {population}, "
            f"or pass replace=True."
        )
    if p is None:
        if replace:
            picked = randint(key, shape, 0, population)
        else:
            whole = permutation(key, population if arr is None else arr, axis)
            return snp.reshape(whole[(slice(None),) * axis + (slice(draws),)], out_shape)
    else:
        picked = _weighted(key, p, population, shape, draws, replace, mode)
    result = picked.astype(DEFAULT_INT) if arr is None else snp.take(arr, picked, axis=axis)
    return snp.reshape(result, out_shape)


def _weighted(key, p, population, shape, draws, replace, mode):
    """Indices drawn with probabilities proportional to ``p``."""
    real_param("choice", "p", p)
    p = snp.asarray(p)
    if p.dtype.kind != "f":
        p = p.astype(check_dtype(float))
    if aval_of(p).shape != (population,):
        raise ShapeError(
            f"spmd.random.choice: p has shape {aval_of(p).shape}, but it must be a 1-d vector "
            f"of the population's size ({population},), one probability per element."
        )
    if replace:
        cumulative = snp.cumsum(p)
        r = cumulative[-1] * (1 - uniform(key, shape, p.dtype))
        return snp.searchsorted(cumulative, r)
    perturbed = gumbel(key, (population,), p.dtype, mode) + snp.log(p)
    return snp.argsort(perturbed, descending=True)[:draws]
