"""Running a shard_map body eagerly: once, on every device's concrete block at the same time.

Each value of the body is a ``BlocksTracer`` holding one block per mesh position. An
operation applies to each block in turn; a collective hands all the blocks to the
Communicator, exactly as the compiled per-device program's collective step does; printing a
value shows each device's block, as JAX's eager shard_map does. Each value's type also holds
the mesh axes it varies over, as a traced body's does, so shard_map's replication check
(check_rep) and differentiation inside the body judge the eager run as a traced body.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.core.interpret import apply
from spmd.core.primitive import Primitive
from spmd.core.program import Var
from spmd.core.trace import (
    Trace,
    Tracer,
    UnexpectedTracerError,
    aval_of,
    tracing,
)
from spmd.core.varying import typed_results
from spmd.prims.collective import axis_index_p
from spmd.runtime.buffers import host_view, on_device
from spmd.runtime.communicator import communicator_for
from spmd.runtime.messages import Speaker, fingerprint, speaking_for
from spmd.sharding.device import Device, process_index
from spmd.sharding.mesh import Mesh

Varying = frozenset[str]


class BlocksTrace(Trace):
    """Applies each primitive to the block of its operands at every mesh position of this
    process (all of them in one process). Every block of a value has one shape: shard_map
    runs eagerly only on inputs that split evenly."""

    def __init__(self, mesh: Mesh, name: str) -> None:
        self.mesh = mesh
        self.name = name  # what messages to other processes say they belong to
        self.collectives = 0
        here = process_index()
        everywhere = list(mesh.devices.flat)
        self.positions = [p for p, d in enumerate(everywhere) if d.process_index == here]
        self.devices = [everywhere[p] for p in self.positions]
        self.comm = communicator_for(everywhere)
        self.active = True

    def new_value(self, blocks: list, varying: Varying) -> BlocksTracer:
        first, device = blocks[0], self.devices[0]
        dtype = device.library.dtype_of(first)
        aval = ShapedArray(tuple(first.shape), dtype, vma=frozenset(varying))
        return BlocksTracer(self, aval, blocks)

    def _blocks(self, x: Any) -> list:
        if isinstance(x, BlocksTracer) and x._trace is self:
            return x.blocks
        if isinstance(x, Tracer):
            raise x._escaped("in a shard_map body running on concrete blocks")
        if type(x) in (bool, int, float, complex):
            return [x] * len(self.devices)
        return self.replicated(x)  # a closed-over value

    def replicated(self, x: Any) -> list:
        """``x`` (a host value or an Array) as one block per device of this process."""
        value = np.array(x)  # a copy the devices may share: nobody else writes to it
        value.flags.writeable = False
        return [on_device(d, value) for d in self.devices]

    def process(self, primitive: Primitive, args: tuple, params: dict) -> Any:
        if not self.active:
            raise UnexpectedTracerError(
                "A shard_map body's value was used after its shard_map returned; return it "
                "from the body instead."
            )
        operands = [self._blocks(a) for a in args]
        in_avals = [a.aval if isinstance(a, BlocksTracer) else aval_of(a) for a in args]
        out_avals = typed_results(primitive, in_avals, params)
        if primitive.rules.collective is not None:
            results = [self._collective(primitive, operands[0], in_avals[0], params)]
        elif primitive is axis_index_p:
            results = [self._axis_index(params["axes"])]
        else:
            results = self._per_block(primitive, operands, params, len(out_avals))
        tracers = [
            BlocksTracer(self, aval, self._as_dtype(blocks, aval))
            for aval, blocks in zip(out_avals, results, strict=True)
        ]
        return tracers if primitive.multiple_results else tracers[0]

    def _as_dtype(self, blocks: list, aval: ShapedArray) -> list:
        return [_as_dtype(b, aval, d) for b, d in zip(blocks, self.devices, strict=True)]

    def _per_block(self, primitive: Primitive, operands: list, params: dict, count: int):
        per_position = []
        each = zip(*operands, strict=True) if operands else [()] * len(self.devices)
        for device, blocks in zip(self.devices, each, strict=True):
            per_position.append(apply(primitive, device.library.xp, blocks, params, device.backend))
        return [[outs[k] for outs in per_position] for k in range(count)]

    def _collective(self, primitive: Primitive, blocks: list, aval, params: dict) -> list:
        buffers = {
            d: np.asarray(host_view(d, b), aval.dtype)
            for d, b in zip(self.devices, blocks, strict=True)
        }
        shapes = [aval.shape] * self.mesh.size
        collective = primitive.rules.collective
        written = collective.written(params)
        speaker = Speaker(self.name, fingerprint(self.name), self.collectives, written, f"{aval}")
        self.collectives += 1
        with speaking_for(speaker):
            out = collective.run(self.comm, self.mesh, buffers, shapes, params)
        return [on_device(d, out[d]) for d in self.devices]

    def coordinates(self) -> list[tuple[int, ...]]:
        """The mesh coordinates of this process's positions."""
        return [tuple(map(int, np.unravel_index(p, self.mesh.devices.shape)))
                for p in self.positions]  # fmt: skip

    def _axis_index(self, axes: tuple[str, ...]) -> list:
        sizes = dict(self.mesh.shape)
        index = []
        for coords in self.coordinates():
            where = dict(zip(self.mesh.axis_names, coords, strict=True))
            linear = 0
            for a in axes:
                linear = linear * sizes[a] + where[a]
            index.append(np.int32(linear))
        return index


def _as_dtype(block: Any, aval: ShapedArray, device: Device) -> Any:
    """A block as an array of ``device`` of the dtype the shape rule promised (NumPy's
    promotion of a 0-d operand can differ from the rule's weak typing)."""
    library = device.library
    if not library.is_buffer(block):  # a scalar (NumPy gives them for 0-d results)
        block = on_device(device, np.asarray(block, aval.dtype))
    if library.dtype_of(block) != aval.dtype:
        block = library.astype(block, aval.dtype)
    if tuple(block.shape) != aval.shape:
        raise RuntimeError(
            f"internal error: a shard_map block of shape {block.shape} where the shape rule "
            f"promised {aval}; please report this."
        )
    return block


class BlocksTracer(Tracer):
    """A value of a shard_map body run eagerly: one concrete block per mesh position."""

    def __init__(self, trace: BlocksTrace, aval: ShapedArray, blocks: list):
        # ``aval`` holds how the value varies, as a traced body's value's does: grad's linear
        # program and its transposition read it there (spmd/core/ad.py).
        super().__init__(trace, Var(aval))
        self.blocks = blocks

    @property
    def varying(self) -> Varying:
        """The mesh axes along which devices may hold different blocks (JAX's vma)."""
        return self.aval.vma

    def __repr__(self) -> str:
        mesh = self._trace.mesh
        names = ", ".join(mesh.axis_names) + ","  # JAX writes (i,) and (i, j,)
        entries = []
        for device, coords, block in zip(
            self._trace.devices, self._trace.coordinates(), self.blocks, strict=True
        ):
            shown = np.asarray(host_view(device, block))  # NumPy's print, on any backend
            entries.append(
                f"On {device.platform}:{device.id} at mesh coordinates ({names}) = "
                f"{coords}:\n{shown}\n"
            )
        return "\n".join(entries)

    def _why_not_concrete(self) -> str:
        return (
            f"a shard_map body's value {self.aval} is one per device (this body runs on "
            f"{len(self.blocks)} blocks at once), so Python cannot branch on it. Use "
            f"spmd.numpy.where(cond, a, b), or reduce it first (spmd.lax.psum / pmax)."
        )


def run_on_blocks(
    f: Callable,
    mesh: Mesh,
    buffers: Sequence[dict],
    varying: Sequence[Varying],
    build_args,
    name: str,
) -> tuple[Any, BlocksTrace]:
    """Call ``f`` (called ``name``) once with one BlocksTracer per argument (``buffers[i]``
    maps this process's devices to argument ``i``'s block); ``build_args`` turns the tracers
    into ``f``'s arguments. Returns ``f``'s result and the trace (closed when this returns)."""
    trace = BlocksTrace(mesh, name)
    tracers = [
        trace.new_value([held[d] for d in trace.devices], v)
        for held, v in zip(buffers, varying, strict=True)
    ]
    try:
        with tracing(trace):
            out = f(*build_args(tracers))
    finally:
        trace.active = False
    return out, trace
