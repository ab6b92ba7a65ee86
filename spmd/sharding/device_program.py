"""The per-device program IR: the steps partitioning emits and every executor runs.

A partitioned program is host equations (run once) and per-device steps: Compute (one
equation on each device's blocks), Collective (written in a per-device program), Reshard
(a resharding plan of collective steps), FromHost, PerDevice and Alias, and Loop and Branch
(control flow), whose bodies are Blocks of such steps. transforms/ builds it; runtime/ runs
it; neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spmd.core.primitive import CollectiveRules
from spmd.core.program import Equation, Literal, Program, Var
from spmd.sharding.mesh import Mesh
from spmd.sharding.plans import Step
from spmd.sharding.propagate import Propagation
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


@dataclass(frozen=True, eq=False)
class Block:
    """A loop's or branch's body: ``steps`` on the values ``invars`` (bound afresh each time
    it runs), computing ``outvars`` laid out as ``out_shardings``. ``host_equations`` (on
    literals alone) run on the host first, each time."""

    invars: tuple[Var, ...]
    host_equations: tuple[Equation, ...]
    steps: tuple
    outvars: tuple  # Var or Literal
    out_shardings: tuple[ValueSharding, ...]
    in_shardings: tuple[ValueSharding, ...] | None = None  # for printing (None: whole)


@dataclass(frozen=True, eq=False)
class Loop:
    """A while loop or a scan whose body runs as sub-steps on every device.

    ``kind`` "while": ``operands`` are the condition's constants (``counts[0]``), the body's
    (``counts[1]``), then the carry; ``cond`` maps (its constants, carry) to the predicate,
    ``body`` (its constants, carry) to the next carry. ``kind`` "scan": ``operands`` are the
    constants (``counts[0]``), the carry (``counts[1]``), then the xs, each split along
    everything but its leading axis; ``body`` maps (constants, carry, each x's slice) to
    (carry, each y's slice), stacked into the ys (``y_blocks``: each y's slice block shape
    per device position, for a scan of length 0)."""

    kind: str
    operands: tuple  # Var or Literal
    outputs: tuple[Var, ...]
    shardings: tuple[ValueSharding, ...]
    body: Block
    cond: Block | None
    counts: tuple[int, int]
    length: int = 0
    reverse: bool = False
    y_blocks: tuple = ()


@dataclass(frozen=True, eq=False)
class Branch:
    """``branches[index]`` (clamped) runs on ``operands``; ``index`` is an int scalar that
    every device holds alike."""

    index: Var | Literal
    operands: tuple
    outputs: tuple[Var, ...]
    shardings: tuple[ValueSharding, ...]
    branches: tuple[Block, ...]


def blocks_of(step) -> list[tuple[str, Block]]:
    """A control-flow step's bodies, named as printed: (name, Block)."""
    if isinstance(step, Loop):
        named = [("body", step.body)]
        return [("cond", step.cond), *named] if step.cond is not None else named
    if isinstance(step, Branch):
        return [(f"branch {k}", b) for k, b in enumerate(step.branches)]
    return []


def collectives_in(steps) -> list:
    """Every collective of ``steps``: resharding Steps and per-device programs' Collectives,
    those of loop and branch bodies included (once each, as written)."""
    found = []
    for step in steps:
        if isinstance(step, Reshard):
            found.extend(s for s in step.steps if s.is_collective)
        elif isinstance(step, Collective):
            found.append(step)
        for _, block in blocks_of(step):
            found.extend(collectives_in(block.steps))
    return found


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
        """Every collective: resharding Steps and per-device programs' Collectives, those in
        loop and branch bodies included."""
        return collectives_in(self.steps)
