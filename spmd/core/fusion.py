"""Which steps of a straight-line program fuse into elementwise kernels (spmd/core/fused.py).

The planner sees each step as a ``Candidate``: what it reads and writes, the equation it
computes when that equation may run in a kernel (``member``) and a ``key`` that members of
one kernel share (the result's shape, and its layout on the devices). A kernel gathers the
members that follow one another, any step that reads none of its values being moved before
it when ``movable`` (a pure step), may end with a ``final`` member (a reduction of one of its
values), and gives back the values that a step outside it or the program's results read.
The values that only its members read never become arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from spmd.core.fused import Kernel, Member
from spmd.core.program import Var

MIN_MEMBERS = 2  # one equation gains nothing from running in chunks


@dataclass(frozen=True, eq=False)
class Candidate:
    """One step as the planner sees it."""

    reads: tuple  # atoms (Vars and Literals)
    writes: tuple  # Vars
    member: Member | None = None  # its equation, when it may run in a kernel
    key: Any = None  # members of one kernel have equal keys
    movable: bool = False  # may run before a kernel whose values it does not read
    final: bool = False  # its member may only end a kernel that made its operand (a reduction)


@dataclass(frozen=True, eq=False)
class Group:
    """Steps ``indices`` (in order) computed by ``kernel``."""

    indices: tuple[int, ...]
    kernel: Kernel


@dataclass
class _Open:
    """The kernel being gathered: its members' indices and values, and the steps moved
    before it."""

    members: list[int] = field(default_factory=list)
    values: set = field(default_factory=set)
    moved: list[int] = field(default_factory=list)
    key: Any = None


def plan(candidates: Sequence[Candidate], results: Sequence[Any]) -> list:
    """The steps in their new order: each an index into ``candidates`` or a ``Group``.
    ``results`` are the atoms the program gives back."""
    readers: dict[Var, set[int]] = {}
    for index, candidate in enumerate(candidates):
        for atom in candidate.reads:
            if isinstance(atom, Var):
                readers.setdefault(atom, set()).add(index)
    kept = {a for a in results if isinstance(a, Var)}
    order: list = []
    current = _Open()
    for index, candidate in enumerate(candidates):
        reads_kernel = any(isinstance(a, Var) and a in current.values for a in candidate.reads)
        if candidate.final and candidate.member is not None:
            if candidate.reads[0] in current.values:  # ends the kernel
                current.members.append(index)
                current.values.update(candidate.writes)
                order.extend(_close(current, candidates, readers, kept))
                current = _Open()
                continue
            candidate = Candidate(candidate.reads, candidate.writes, movable=candidate.movable)
        joins = candidate.member is not None and (
            not current.members or candidate.key == current.key
        )
        if joins:
            current.members.append(index)
            current.values.update(candidate.writes)
            current.key = candidate.key
            continue
        if current.members and candidate.movable and not reads_kernel:
            current.moved.append(index)
            continue
        order.extend(_close(current, candidates, readers, kept))
        current = _Open()
        if candidate.member is not None:
            current.members.append(index)
            current.values.update(candidate.writes)
            current.key = candidate.key
        else:
            order.append(index)
    order.extend(_close(current, candidates, readers, kept))
    return order


def _close(current: _Open, candidates, readers: dict, kept: set) -> list:
    """The steps of a gathered kernel: the moved steps, then its Group; or every step in its
    own place when too few members gathered. A member whose value nothing reads (or only
    members left out so) is left out: the unfused program makes it only to drop it."""
    inside = set(current.members)
    outputs = {
        candidates[i].member.output
        for i in current.members
        if candidates[i].member.output in kept
        or not readers.get(candidates[i].member.output, set()) <= inside
    }
    needed = set(outputs)
    members = []
    for i in reversed(current.members):
        member = candidates[i].member
        if member.output in needed:
            members.append(member)
            needed.update(a for a in member.inputs if isinstance(a, Var))
    members.reverse()
    made = {m.output for m in members}
    inputs = []
    for member in members:
        inputs.extend(a for a in member.inputs if isinstance(a, Var) and a not in made)
    if len(members) < MIN_MEMBERS or not inputs:
        return sorted(current.moved + current.members)
    given = [m.output for m in members if m.output in outputs]
    kernel = Kernel(members, list(dict.fromkeys(inputs)), given)
    return [*current.moved, Group(tuple(current.members), kernel)]
