"""Device blocks stacked along a new label, and contractions of such stacks run on the cores.

Shared by spmd/runtime/stacked.py and spmd/runtime/summed.py, which run a contraction once
for all of this process's devices: the devices' blocks of an operand are stacked along a
new label (a view where they already lie one after another in one buffer, as the results
of such a contraction do), placed where the matmul that computes the contraction reads it
without another copy (spmd/prims/contraction.py groups an operand's labels as batch,
free, contracted).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from spmd.core.program import Literal, Var
from spmd.prims.contraction import LETTERS, einsum_p, parse
from spmd.runtime.cores import blas_threads, contractions_one_at_a_time, core_count, observed
from spmd.runtime.pool import INLINE_BYTES, parallel_map


class Blocks(list):
    """The devices' blocks of one value, in position order, where they are not one buffer."""


def values_of(atom: Var | Literal, env: dict, positions) -> Any:
    """The one value every device holds for ``atom`` (a literal's value, or one buffer
    that every device shares), or the devices' Blocks."""
    if isinstance(atom, Literal):
        return atom.value
    blocks = env[atom]
    first = blocks[positions[0]]
    if all(blocks[p] is first for p in positions):
        return first
    return Blocks(blocks[p] for p in positions)


def stackable(blocks: Any) -> bool:
    """Whether ``blocks`` are NumPy arrays of one shape and dtype."""
    if type(blocks) is not Blocks:
        return False
    first = blocks[0]
    return type(first) is np.ndarray and all(
        type(b) is np.ndarray and b.shape == first.shape and b.dtype == first.dtype for b in blocks
    )


def same_params(params: tuple[dict, ...]) -> bool:
    """Whether every device's parameters of a step are the same."""
    first = params[0]
    try:
        return all(p is first or p == first for p in params)
    except (TypeError, ValueError):  # parameters that do not compare as one truth value
        return False


def frozen(value: Any) -> Any:
    """``value``, read-only from now on (several devices share it)."""
    if type(value) is np.ndarray and value.flags.writeable:
        value.flags.writeable = False
    return value


def fresh_label(subscripts: str) -> str:
    return next(c for c in LETTERS if c not in subscripts)


def insert(labels: str, label: str, before: str | None) -> str:
    """``labels`` with ``label`` inserted before the label ``before`` (None: first)."""
    at = labels.index(before) if before is not None and before in labels else 0
    return labels[:at] + label + labels[at:]


def stack(blocks: list[np.ndarray], axis: int = 0, split: bool = True) -> np.ndarray:
    """The blocks along a new axis ``axis``: a read-only view where the new axis leads and
    the blocks lie one after another in one buffer, else a copy (by several tasks on the
    pool for much data, unless ``split`` is False: inside a pool task, which never waits on
    the pool)."""
    first = blocks[0]
    if axis == 0 and len(blocks) > 1 and consecutive(blocks):
        shape = (len(blocks), *first.shape)
        return np.lib.stride_tricks.as_strided(
            first, shape, (first.nbytes, *first.strides), writeable=False
        )
    shape = (*first.shape[:axis], len(blocks), *first.shape[axis:])
    stacked = np.empty(shape, first.dtype)
    target = np.moveaxis(stacked, axis, 0)
    nbytes = first.nbytes * len(blocks)
    if nbytes < INLINE_BYTES or not split:
        for i, block in enumerate(blocks):
            target[i] = block
    else:  # each device's block copied by a task of its own
        parallel_map(lambda i: np.copyto(target[i], blocks[i]), range(len(blocks)), nbytes)
    return stacked


class Stacks:
    """The stacks of a run of a step list's values that a later step reads again, kept until
    then: a value's blocks do not change while it lives (a step writes into a buffer only
    where its value dies)."""

    def __init__(self, last_use: dict) -> None:
        self.last_use = last_use
        self.kept: dict[tuple, np.ndarray] = {}
        self.index = -1

    def at(self, index: int) -> None:
        """Step ``index`` runs now: let go of the stacks no step from here on reads."""
        self.index = index
        for key in [k for k in self.kept if self.last_use.get(k[0], -1) < index]:
            del self.kept[key]

    def get(self, value, blocks: list, devices: tuple, axis: int, split: bool) -> np.ndarray:
        """``stack(blocks, axis, split)``: ``value``'s blocks on ``devices`` (indices into
        the run's positions)."""
        key = (value, devices, axis)
        found = self.kept.get(key)
        if found is None:
            found = stack(blocks, axis, split)
            if self.last_use.get(value, -1) > self.index:
                self.kept[key] = found
        return found


def consecutive(blocks: list[np.ndarray]) -> bool:
    first = blocks[0]
    base, step = first.base, first.nbytes
    start = first.__array_interface__["data"][0]
    return (
        base is not None
        and step > 0
        and all(
            b.base is base
            and b.flags.c_contiguous
            and b.__array_interface__["data"][0] == start + i * step
            for i, b in enumerate(blocks)
        )
    )


def subscripts_of(params: dict) -> tuple[str, list[str], str]:
    subscripts = params["subscripts"]
    operands, output = parse(subscripts)
    return subscripts, operands, output


_einsum = observed(functools.partial(einsum_p.rules.impl, np))


def einsum(operands: list, subscripts: str) -> np.ndarray:
    """The einsum primitive on NumPy operands (a BLAS call the cores module watches)."""
    return _einsum(*operands, subscripts=subscripts)


def per_core_slices(devices: int) -> list[slice]:
    """``range(devices)`` in one slice per core (or per device, with more cores)."""
    size = math.ceil(devices / min(core_count(), devices))
    return [slice(i, min(i + size, devices)) for i in range(0, devices, size)]


def by_cores(
    product: Callable[[slice, bool], Any],
    devices: int,
    nbytes: int,
    one_each: bool = False,
    one_call: bool = False,
) -> list:
    """``product(devices, on_caller)`` over slices of ``range(devices)`` that together cover
    it in order (``on_caller``: it runs on the calling thread, not in a pool task, so it may
    use the pool itself). Small work (below the pool's threshold) or one core: one call,
    inline. With ``one_call`` (the devices' operands are one buffer already), or where
    contractions run one at a time (spmd/runtime/cores.py): one call on every core, which
    BLAS shares out better than it can be sliced. Else side by side on the pool, each call
    on one BLAS thread: one slice per core (a few large calls, and no BLAS threads waiting
    on each other on a busy machine), or with ``one_each`` one device per slice, taken by
    whichever core is free."""
    cores = core_count()
    if cores == 1:
        return [product(slice(None), True)]
    if nbytes < INLINE_BYTES:  # too small to share out: one thread, none left spinning
        with blas_threads(1):
            return [product(slice(None), True)]
    if one_call or contractions_one_at_a_time(devices):
        with blas_threads(cores):
            return [product(slice(None), True)]
    slices = [slice(i, i + 1) for i in range(devices)] if one_each else per_core_slices(devices)
    with blas_threads(1):
        return parallel_map(lambda devices: product(devices, False), slices, nbytes)
