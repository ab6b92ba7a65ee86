"""The per-device program IR: the steps partitioning emits and every executor runs.

A partitioned program is host equations (run once) and per-device steps: Compute (one
equation on each device's blocks), Collective (written in a per-device program), Reshard
(a resharding plan of collective steps), FromHost, PerDevice and Alias. transforms/ builds
it; runtime/ runs it; neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spmd.core.primitive import CollectiveRules
from spmd.core.program import Equation, Literal, Program, Var
from spmd.sharding.mesh import Mesh
from spmd.sharding.propagate import Propagation
from spmd.sharding.reshard import Step
from spmd.sharding.rules import ValueSharding


@dataclass(frozen=True, eq=False)
class Compute:
    """Run ``eqn`` on every device's blocks; ``params`` per device position."""

    eqn: Equation
    inputs: tuple  # Var (a device value) or Literal per operand
    outputs: tuple[Var, ...]
    shardings: tuple[ValueSharding, ...]
    params: tuple[dict, ...]
    reusable: bool = True  # may write its result into a dying operand's buffer


@dataclass(frozen=True, eq=False)
class Collective:
    """A collective a per-device program wrote (psum, all_gather, ...), over mesh axes;
    ``collective`` is its record (kind, bytes, runner: spmd/prims/collective_records.py)."""

    collective: CollectiveRules
    params: dict
    input: Var | Literal
    output: Var
    shapes: tuple[tuple[int, ...], ...]  # the input's block shape on each device position
    nbytes: int  # bytes it moves between devices
    reason: str = "written in the per-device program"

    @property
    def name(self) -> str:
        return self.collective.name

    @property
    def kind(self) -> str:
        return self.collective.kind

    @property
    def written(self) -> str:
        """The collective as the program wrote it: psum, pmax, all_gather, ..."""
        return self.collective.written(self.params)


@dataclass(frozen=True, eq=False)
class PerDevice:
    """A value that differs by device and is known when the program is built."""

    var: Var
    values: tuple  # per device position


@dataclass(frozen=True, eq=False)
class Alias:
    """``dst`` names the buffers of ``src``."""

    src: Var
    dst: Var


@dataclass(frozen=True, eq=False)
class FromHost:
    """Each device takes its block of host value ``host`` (a view: nothing is copied)."""

    host: Var
    var: Var
    sharding: ValueSharding
    slices: tuple[tuple[slice, ...], ...]  # per device position


@dataclass(frozen=True, eq=False)
class Reshard:
    """Bring ``src`` to ``dst``'s sharding through ``steps``."""

    src: Var
    dst: Var
    steps: tuple[Step, ...]
    reason: str


@dataclass(eq=False)
class Partitioned:
    program: Program
    mesh: Mesh
    propagation: Propagation
    in_shardings: list[ValueSharding | None]
    host_equations: list[Equation] = field(default_factory=list)
    steps: list = field(default_factory=list)
    outputs: list = field(default_factory=list)  # per output: (atom, ValueSharding or None)

    @property
    def collectives(self) -> list:
        """Every collective: resharding Steps and per-device programs' Collectives."""
        found = []
        for step in self.steps:
            if isinstance(step, Reshard):
                found.extend(s for s in step.steps if s.is_collective)
            elif isinstance(step, Collective):
                found.append(step)
        return found
