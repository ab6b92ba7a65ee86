"""shard_map: a function written for one device's blocks, run on every device of a mesh.

Called outside jit on evenly split inputs, the function runs once on every device's
concrete block, as JAX's eager shard_map does (spmd/transforms/blocks_trace.py). Otherwise
it is traced on block shapes, once per distinct set of block shapes (uneven splits give
the tail devices smaller blocks; spmd/transforms/shard_map_bodies.py), and the call becomes
one ``shard_map`` equation whose layouts are fixed by the specs: the partitioner brings the
arguments to ``in_specs`` and emits the body per device (spmd/transforms/per_device_lowering.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from spmd.core.aval import ShapedArray
from spmd.core.axis_env import binding, bound_axes, pmap_levels
from spmd.core.primitive import Primitive, Rules
from spmd.core.program import Program, Var
from spmd.core.trace import EVAL_TRACE, ProgramTrace, aval_of, current_trace, tracing
from spmd.errors import ShapeError, ShardingError, SpmdTypeError, aval_str, plural
from spmd.prims.collective import no_impl
from spmd.runtime.array import Array
from spmd.runtime.put import device_put
from spmd.sharding.device import process_index
from spmd.sharding.mesh import Mesh, current_mesh
from spmd.sharding.named import NamedSharding
from spmd.sharding.plans import value_layout
from spmd.sharding.rules import Decision, ValueSharding
from spmd.sharding.spec import PartitionSpec
from spmd.transforms.blocks_trace import BlocksTracer, run_on_blocks
from spmd.transforms.body_splits import call_splits, with_splits
from spmd.transforms.control_flow.programs import CollectiveInBodyError
from spmd.transforms.per_device_lowering import Held
from spmd.transforms.shard_map_bodies import check_collectives, close_bodies, split_axes
from spmd.transforms.shard_map_rules import shard_map_batch, shard_map_jvp, shard_map_transpose
from spmd.transforms.typeof import VaryingTypes
from spmd.tree_util import tree_broadcast_prefix, tree_flatten, tree_unflatten

Dims = tuple[tuple[str, ...], ...]


def _fixed(ins, outs, **params) -> Decision:
    in_splits, out_splits = call_splits(params)
    operands = tuple(
        ValueSharding(with_splits(d, s)) for d, s in zip(params["in_dims"], in_splits, strict=True)
    )
    results = tuple(
        ValueSharding(with_splits(d, s))
        for d, s in zip(params["out_dims"], out_splits, strict=True)
    )
    return Decision(operands, results, f"shard_map({params['name']}) lays it out by out_specs")


def _lower(lowering, eqn, inputs: list[Held], uneven: bool = False) -> list[Held]:
    params = eqn.params
    in_splits, out_splits = call_splits(params)
    inputs = [Held(h.atom, s) for h, s in zip(inputs, in_splits, strict=True)]
    results = lowering.run(list(params["bodies"]), params["body_of"], inputs)
    for k, wanted in enumerate(out_splits):
        if results[k].splits != wanted:
            if wanted:
                raise RuntimeError(
                    f"internal error: shard_map({params['name']}) result {k} is held split "
                    f"{results[k].splits}, not {wanted}; please report this."
                )
            results[k] = Held(lowering.whole_value(results[k]))
    for k, axes in params["unchecked"]:
        atom = lowering.whole_value(results[k])
        if isinstance(atom, Var):
            results[k] = Held(lowering.broadcast_from_first(atom, axes))
    return results


shard_map_p = Primitive(
    "shard_map",
    Rules(
        shape=lambda *avals, out_avals, **params: list(out_avals),
        impl=no_impl("shard_map"),
        sharding=_fixed,
        per_device=_lower,
        jvp=shard_map_jvp,
        transpose=shard_map_transpose,
        batch=shard_map_batch,
    ),
    multiple_results=True,
)


def _is_spec(x: Any) -> bool:
    return x is None or isinstance(x, PartitionSpec)


class ShardMapped:
    """``f`` mapped over the blocks of ``mesh``; call it like ``f``."""

    def __init__(self, f: Callable, mesh, in_specs, out_specs, check_rep: bool) -> None:
        self.f = f
        self.mesh = mesh
        self.in_specs = in_specs
        self.out_specs = out_specs
        self.check_rep = check_rep
        self.name = getattr(f, "__name__", "f")
        functools.update_wrapper(self, f, updated=())
        self._jitted = None

    def __call__(self, *args):
        if current_trace() is not EVAL_TRACE:
            return self._bind(args)
        mesh, leaves, in_tree, specs, in_dims = self._inputs(args)
        even = all(len(set(_blocks(mesh, d, aval_of(x).shape))) == 1
                   for x, d in zip(leaves, in_dims, strict=True))  # fmt: skip
        here = sum(d.process_index == process_index() for d in mesh.devices.flat)
        if even and here and (here == mesh.size or self.check_rep):
            try:
                return self._run_on_blocks(mesh, leaves, in_tree, specs, in_dims)
            except CollectiveInBodyError:
                pass  # a loop whose body holds collectives runs only compiled
        # Blocks of different shapes need one trace per shape, the first device's value that
        # check_rep=False promises may be another process's, and a process without a device
        # of the mesh has no block to run: those calls run compiled.
        if self._jitted is None:
            from spmd.transforms.jit import jit

            self._jitted = jit(lambda *a: self._bind(a))
        return self._jitted(*args)

    def _where(self) -> str:
        return f"shard_map({self.name})"

    def _mesh(self) -> Mesh:
        mesh = self.mesh if self.mesh is not None else current_mesh()
        if not isinstance(mesh, Mesh):
            raise ShardingError(
                f"{self._where()}: mesh must be an spmd.Mesh (or call it under `with mesh:`), "
                f"got {mesh!r}."
            )
        return mesh

    def _inputs(self, args: tuple) -> tuple:
        """The mesh, the argument leaves and tree, and each leaf's spec and split dims."""
        if pmap_levels.get() or bound_axes():
            raise ShardingError(
                f"{self._where()} inside a pmap or another shard_map is not supported; use "
                f"one shard_map over a mesh with all the axes."
            )
        mesh = self._mesh()
        leaves, in_tree = tree_flatten(args)
        specs = self._broadcast(self.in_specs, args, "in_specs", "arguments")
        in_dims = [
            _dims(mesh, spec, aval_of(x), f"{self._where()} argument {i} ({aval_of(x)})",
                  "in_specs")
            for i, (spec, x) in enumerate(zip(specs, leaves, strict=True))
        ]  # fmt: skip
        return mesh, leaves, in_tree, specs, in_dims

    def _run_on_blocks(self, mesh: Mesh, leaves, in_tree, specs, in_dims) -> Any:
        """The body run once on every device's concrete block (spmd/transforms/blocks_trace.py)."""
        placed = [
            device_put(x, NamedSharding(mesh, spec))._buffers
            for x, spec in zip(leaves, specs, strict=True)
        ]
        varying = [split_axes(dims) for dims in in_dims]
        with binding(dict(mesh.shape)):
            out, trace = run_on_blocks(
                self.f, mesh, placed, varying, lambda t: tree_unflatten(in_tree, t), self._where()
            )
        devices = trace.devices
        out_leaves, out_tree = tree_flatten(out)
        values = [  # a result that is not the body's value (a constant): on every device
            x if isinstance(x, BlocksTracer) else trace.new_value(trace.replicated(x), frozenset())
            for x in out_leaves
        ]
        out_specs = self._out_specs(out)
        self._check_results(out_tree, len(values), len(out_specs))
        results = []
        for k, (value, spec) in enumerate(zip(values, out_specs, strict=True)):
            dims = _dims(mesh, spec, value.aval, f"{self._where()} output {k} ({value.aval})",
                         "out_specs")  # fmt: skip
            self._check_varying(mesh, k, value.varying, dims, out_specs)
            aval = _global_aval(mesh, [value.aval], (0,) * mesh.size, dims, k)
            layout = value_layout(mesh, dims, aval.shape)
            blocks = [layout.blocks[p] for p in trace.positions]
            first = {}
            for block, data, device in zip(blocks, value.blocks, devices, strict=True):
                first.setdefault(block, device.library.freeze(data))  # replicas: the first's
            buffers = {d: first[b] for d, b in zip(devices, blocks, strict=True)}
            results.append(
                Array._from_buffers(NamedSharding(mesh, spec), buffers, aval.shape, aval.dtype)
            )
        return tree_unflatten(out_tree, results)

    def _bind(self, args: tuple) -> Any:
        mesh, leaves, in_tree, _, in_dims = self._inputs(args)
        avals = [aval_of(leaf) for leaf in leaves]
        block_shapes = [_blocks(mesh, d, a.shape) for d, a in zip(in_dims, avals, strict=True)]
        signatures = list(zip(*block_shapes, strict=True)) if leaves else [()] * mesh.size
        distinct = list(dict.fromkeys(signatures))
        body_of = tuple(distinct.index(s) for s in signatures)
        in_varying = [split_axes(dims) for dims in in_dims]
        traced = [self._trace(mesh, sig, avals, in_tree, in_varying) for sig in distinct]
        out_tree = traced[0][1]
        for _, other in traced[1:]:
            if other != out_tree:
                raise ShapeError(
                    f"{self._where()}: the function returned {other} for one block shape and "
                    f"{out_tree} for another; it must return the same structure for every block."
                )
        bodies, consts = close_bodies([p for p, _ in traced], self._where())
        check_collectives(mesh, bodies, body_of)
        placeholders = tree_unflatten(out_tree, [0] * len(bodies[0].outvars))
        out_specs = self._out_specs(placeholders)
        self._check_results(out_tree, len(bodies[0].outvars), len(out_specs))
        out_dims = [
            _dims(mesh, spec, v.aval, f"{self._where()} output {i} ({v.aval})", "out_specs")
            for i, (spec, v) in enumerate(zip(out_specs, bodies[0].outvars, strict=True))
        ]
        unchecked = self._replication(mesh, bodies[0], out_dims, out_specs)
        out_avals = [
            _global_aval(mesh, [b.outvars[k].aval for b in bodies], body_of, out_dims[k], k)
            for k in range(len(out_dims))
        ]
        outs = shard_map_p.bind(
            *consts,
            *leaves,
            mesh=mesh,
            in_dims=tuple([((),) * aval_of(c).ndim for c in consts] + in_dims),
            out_dims=tuple(out_dims),
            bodies=tuple(bodies),
            body_of=body_of,
            out_avals=tuple(out_avals),
            unchecked=tuple(unchecked),
            name=self.name,
        )
        return tree_unflatten(out_tree, outs)

    def _check_results(self, out_tree, count: int, specs: int) -> None:
        """The function returned as many arrays as out_specs has entries (None counts as a
        spec's place: it is no array)."""
        if count == specs:
            return
        returned = "nothing (None)" if count == 0 else f"{plural(count, 'array')} ({out_tree})"
        raise ShardingError(
            f"{self._where()}: the function returned {returned}, but out_specs "
            f"{self.out_specs!r} gives {plural(specs, 'spec')}; return one array per out_specs "
            f"entry (not None), and give one out_specs entry per returned array."
        )

    def _out_specs(self, out) -> list:
        """One spec per returned array; a function returning nothing takes out_specs=None."""
        if self.out_specs is None and not tree_flatten(out)[0]:
            return []
        return self._broadcast(self.out_specs, out, "out_specs", "results")

    def _broadcast(self, specs, tree, argument: str, of: str) -> list:
        try:
            full = tree_broadcast_prefix(specs, tree, is_leaf=_is_spec)
        except ValueError as error:
            raise ShardingError(
                f"{self._where()}: {argument} {specs!r} does not match the structure of the "
                f"{of}: it must be a PartitionSpec or a tree of them shaped like the {of} "
                f"(a prefix of it). ({error})"
            ) from None
        leaves, _ = tree_flatten(full, is_leaf=_is_spec)
        return [PartitionSpec() if s is None else s for s in leaves]

    def _trace(self, mesh: Mesh, signature, avals, in_tree, in_varying) -> tuple[Program, Any]:
        trace = ProgramTrace()
        tracers = [
            trace.new_arg(ShapedArray(tuple(shape), a.dtype, a.weak_type, vma=varies))
            for shape, a, varies in zip(signature, avals, in_varying, strict=True)
        ]
        trace.types = VaryingTypes(mesh.axis_names)
        with tracing(trace), binding(dict(mesh.shape)):
            args = tree_unflatten(in_tree, tracers)
            out = self.f(*args)
        out_leaves, out_tree = tree_flatten(out)
        return trace.finish([t.node for t in tracers], out_leaves), out_tree

    def _replication(self, mesh, body, out_dims, out_specs) -> list:
        """Outputs claimed replicated over axes they vary over: an error with check_rep,
        else ``(output, axes)`` pairs whose first device's value every device takes."""
        unchecked = []
        for k, (out, dims) in enumerate(zip(body.outvars, out_dims, strict=True)):
            bad = self._check_varying(mesh, k, out.aval.vma, dims, out_specs)
            if bad:
                unchecked.append((k, bad))
        return unchecked

    def _check_varying(self, mesh: Mesh, k: int, varies, dims: Dims, out_specs) -> tuple:
        """The axes output ``k`` varies over but its out_specs entry calls replicated: an
        error with check_rep, else returned (the first device's value along them wins)."""
        mentioned = {a for d in dims for a in d}
        bad = tuple(a for a in mesh.axis_names if a in varies and a not in mentioned)
        if bad and self.check_rep:
            axis = bad[0]
            raise ShardingError(
                f"{self._where()}: out_specs {out_specs[k]} for output {k} says it is "
                f"replicated over mesh axis {axis!r}, but it varies over {axis!r}: it is "
                f"computed from blocks split over {axis!r} with no psum, pmean or "
                f"all_gather over {axis!r}. Name {axis!r} in its out_specs entry, "
                f"combine it with spmd.lax.psum(x, {axis!r}), or pass check_rep=False to "
                f"take the first device's value along {axis!r}."
            )
        return bad


def _dims(mesh: Mesh, spec, aval, who: str, argument: str) -> Dims:
    if not isinstance(spec, PartitionSpec):
        raise SpmdTypeError(f"{who}: {argument} entries must be PartitionSpecs, got {spec!r}.")
    if len(spec) > aval.ndim:
        raise ShardingError(
            f"{who}: {argument} entry {spec} has {len(spec)} entries but the value has rank "
            f"{aval.ndim}; give at most one entry per dimension."
        )
    for name in spec.axis_names:
        if name not in mesh.axis_names:
            raise ShardingError(
                f"{who}: {argument} entry {spec} names mesh axis {name!r}, but the mesh has "
                f"axes {mesh.axis_names!r}."
            )
    return spec.dims(aval.ndim)


def _blocks(mesh: Mesh, dims: Dims, shape) -> list[tuple[int, ...]]:
    layout = value_layout(mesh, dims, tuple(shape))
    return [layout.block_shape(b) for b in layout.blocks]


def _global_aval(mesh: Mesh, block_avals, body_of, dims: Dims, k: int) -> ShapedArray:
    """The global value whose ``dims`` layout has exactly the blocks the bodies return."""
    blocks = [block_avals[b] for b in body_of]
    first = blocks[0]
    if any(a.dtype != first.dtype for a in blocks):
        raise ShapeError(f"shard_map output {k} has different dtypes for different blocks.")
    layout = value_layout(mesh, dims, (0,) * len(dims))
    shape = []
    for d in range(first.ndim):
        sizes: dict[int, int] = {}
        for block, aval in zip(layout.blocks, blocks, strict=True):
            sizes.setdefault(block[d], aval.shape[d])
        shape.append(sum(sizes.values()))
    expected = _blocks(mesh, dims, tuple(shape))
    got = [a.shape for a in blocks]
    if expected != got:
        raise ShapeError(
            f"shard_map output {k}: the devices' blocks {sorted(set(got))} do not form one "
            f"{aval_str(shape, first.dtype)} split by out_specs (that split gives blocks "
            f"{sorted(set(expected))}: equal blocks, the last ones smaller). Return blocks of "
            f"one shape, or split that output as its input was."
        )
    return ShapedArray(tuple(shape), first.dtype, first.weak_type)


def shard_map(
    f: Callable | None = None,
    mesh: Mesh | None = None,
    in_specs: Any = None,
    out_specs: Any = None,
    check_rep: bool = True,
    *,
    check_vma: bool | None = None,
):
    """Run ``f`` on every device's blocks: ``in_specs`` say how the arguments split into
    blocks, ``out_specs`` how the returned blocks assemble.

    Example: ``shard_map(lambda b: spmd.lax.psum(b.sum(), 'x'), mesh, in_specs=P('x'),
    out_specs=P())(x)`` sums ``x`` over all devices.
    """
    if check_vma is not None:
        check_rep = check_vma
    if f is None:
        return lambda g: ShardMapped(g, mesh, in_specs, out_specs, check_rep)
    if in_specs is None:
        in_specs = PartitionSpec()
    if out_specs is None:
        raise SpmdTypeError("shard_map needs out_specs: how the returned blocks assemble.")
    return ShardMapped(f, mesh, in_specs, out_specs, check_rep)


smap = shard_map
