"""Reading ``shard_tasks``' ``slicing``: which classes of dimensions to cut, and where.

Each argument's entry is None (cut every axis it may, one slice per grain), or a dict
``{axis: n}`` (n nearly equal parts) or ``{axis: [(start, stop), ...]}`` (ranges covering the
axis in order). An axis a dict names is decided by it, whole included; axes no dict names
follow the None arguments that share their class. Two dicts must agree on one class.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.core.program import Program, Var
from spmd.errors import ShardingError, SpmdTypeError
from spmd.sharding.dimension_classes import Classes

Pieces = tuple[tuple[int, int], ...]  # (start, stop) in grains of a class


def read_slicing(
    name: str, program: Program, classes: Classes, slicing: Sequence | None
) -> tuple[dict[int, Pieces], dict[int, str]]:
    """The pieces of every class cut in two or more, and who asked for each."""
    entries = _entries(name, slicing, len(program.invars))
    decided: dict[int, tuple[str, Pieces]] = {}
    finest: set[int] = set()
    for i, (var, entry) in enumerate(zip(program.invars, entries, strict=True)):
        if entry is None:
            finest.update(
                classes.class_of[(var, d)]
                for d in range(var.aval.ndim)
                if classes.why_whole(var, d) is None
            )
            continue
        named: dict[int, Any] = {}
        for axis, how in entry.items():
            d = _axis(name, i, var, axis)
            if d in named:
                raise ShardingError(
                    f"shard_tasks({name}): slicing[{i}] names axis {d} twice (as "
                    f"{named[d]!r} and {axis!r}); name each axis once."
                )
            named[d] = axis
            cls = classes.class_of[(var, d)]
            who = f"argument {i} axis {d}"
            pieces = _pieces(name, i, d, var, how, classes)
            if cls in decided and decided[cls][1] != pieces:
                other, theirs = decided[cls]
                unit = classes.unit[(var, d)]
                raise ShardingError(
                    f"shard_tasks({name}): {who} and {other} are one dimension of the program "
                    f"(its equations tie them), but slicing cuts them differently: "
                    f"{_text(pieces, unit)} against {_text(theirs, unit)} (in {who}'s "
                    f"elements). Cut one of them only, or both alike."
                )
            decided[cls] = (who, pieces)
    cuts = {cls: pieces for cls, (_, pieces) in decided.items() if len(pieces) > 1}
    asked = {cls: f"as slicing asks for {who}" for cls, (who, _) in decided.items()}
    for cls in finest - decided.keys():
        cuts[cls] = tuple((g, g + 1) for g in range(classes.grains[cls]))
        asked[cls] = "one slice per index"
    return cuts, asked


def _entries(name: str, slicing, count: int) -> list[dict | None]:
    if slicing is None:
        return [None] * count
    if isinstance(slicing, dict) or not isinstance(slicing, Sequence):
        raise SpmdTypeError(
            f"shard_tasks({name}): slicing must be a list with one entry per argument (None "
            f"or a dict {{axis: parts}}), got {type(slicing).__name__}."
        )
    if len(slicing) != count:
        raise ShardingError(
            f"shard_tasks({name}): slicing has {len(slicing)} entries but there are {count} "
            f"arguments; give one entry per argument (None: cut as finely as possible)."
        )
    for i, entry in enumerate(slicing):
        if entry is not None and not isinstance(entry, dict):
            raise SpmdTypeError(
                f"shard_tasks({name}): slicing[{i}] is {type(entry).__name__}; give None or "
                f"a dict {{axis: n}} / {{axis: [(start, stop), ...]}}."
            )
    return list(slicing)


def _axis(name: str, i: int, var: Var, axis: Any) -> int:
    ndim = var.aval.ndim
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise SpmdTypeError(
            f"shard_tasks({name}): slicing[{i}] has key {axis!r}; keys are axes (ints)."
        )
    if not -ndim <= axis < ndim:
        raise ShardingError(
            f"shard_tasks({name}): slicing[{i}] names axis {axis}, but argument {i} "
            f"({var.aval}) has {ndim} axes; give an axis in range({ndim})."
        )
    return int(axis) % ndim


def _pieces(name: str, i: int, d: int, var: Var, how: Any, classes: Classes) -> Pieces:
    """``how`` (a count or ranges) for argument ``i``'s axis ``d``, in grains."""
    where = f"shard_tasks({name}): slicing[{i}] axis {d}"
    size = var.aval.shape[d]
    unit = classes.unit[(var, d)]
    grains = classes.grains[classes.class_of[(var, d)]]
    count = int(how) if isinstance(how, (int, np.integer)) and not isinstance(how, bool) else None
    if count is not None and count < 1:
        raise ShardingError(f"{where}: {count} parts; give a count of at least 1.")
    ranges = _ranges(where, how, size) if count is None else None
    if count == 1 or (ranges is not None and len(ranges) == 1):
        return ((0, grains),)
    why = classes.why_whole(var, d)
    if why is not None:
        raise ShardingError(
            f"{where}: cannot cut argument {i} ({var.aval}) along axis {d}: {why}, so its "
            f"slices would not compute independent blocks. Leave axis {d} whole (leave it "
            f"out of the dict), or cut an axis the results keep."
        )
    if count is not None:
        ranges = _parts(where, count, unit, grains)
    for start, stop in ranges:
        if start % unit or stop % unit:
            raise ShardingError(
                f"{where}: the range ({start}, {stop}) splits a group of {unit} elements that "
                f"a reshape keeps together in one element of another dimension; cut axis {d} "
                f"at multiples of {unit}."
            )
    return tuple((start // unit, stop // unit) for start, stop in ranges)


def _parts(where: str, n: int, unit: int, grains: int) -> list[tuple[int, int]]:
    if n > grains:
        has = f"{grains} elements"
        if unit > 1:
            has = f"{grains} groups of {unit} elements a reshape keeps together"
        raise ShardingError(f"{where}: {n} parts, but the axis has {has}; give at most {grains}.")
    quotient, remainder = divmod(grains, n)  # as np.array_split: the first parts one larger
    sizes = [quotient + 1] * remainder + [quotient] * (n - remainder)
    edges = [unit * g for g in itertools.accumulate(sizes, initial=0)]
    return list(itertools.pairwise(edges))


def _ranges(where: str, how: Any, size: int) -> list[tuple[int, int]]:
    fix = f"give (start, stop) ranges that cover 0..{size} in order, each from the last's stop"
    try:
        ranges = [(int(a), int(b)) for a, b in how]
    except (TypeError, ValueError):
        raise SpmdTypeError(f"{where}: {how!r} is neither a count nor ranges; {fix}.") from None
    if not ranges:
        raise ShardingError(f"{where}: no ranges; {fix}.")
    position = 0
    for start, stop in ranges:
        if start < 0 or stop > size:
            raise ShardingError(
                f"{where}: the range ({start}, {stop}) lies outside the axis (size {size}); {fix}."
            )
        if start >= stop:
            raise ShardingError(f"{where}: the range ({start}, {stop}) is empty; {fix}.")
        if start > position:
            raise ShardingError(f"{where}: a gap: nothing covers [{position}:{start}]; {fix}.")
        if start < position:
            raise ShardingError(
                f"{where}: ranges overlap on [{start}:{position}]; {fix} without overlaps."
            )
        position = stop
    if position != size:
        raise ShardingError(f"{where}: a gap: nothing covers [{position}:{size}]; {fix}.")
    return ranges


def _text(pieces: Pieces, unit: int) -> str:
    return "[" + ", ".join(f"({a * unit}, {b * unit})" for a, b in pieces) + "]"
