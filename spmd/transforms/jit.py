"""jit and make_jaxpr: trace a function once per signature (and x64 mode), cache the Program,
run it. Its arguments' handling (static arguments, cache keys, dtypes, in_shardings) is
spmd/transforms/jit_arguments.py's."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spmd.core.axes import argument_positions
from spmd.core.dtypes import x64_enabled
from spmd.core.interpret import compile_program
from spmd.core.program import Program, Var
from spmd.core.trace import EVAL_TRACE, ProgramTrace, aval_of, current_trace, tracing
from spmd.errors import ShardingError, SpmdTypeError, plural
from spmd.prims.sharding_constraint import inspect_sharding_p
from spmd.runtime.array import Array
from spmd.runtime.constrain import constrain
from spmd.runtime.eager import result_sharding
from spmd.runtime.executor import execute
from spmd.runtime.put import _is_target, adopt, as_sharding, device_put, layout_for, placement
from spmd.sharding.device_program import Partitioned
from spmd.sharding.device_program_text import as_text, explain
from spmd.sharding.equivalent import same_devices
from spmd.sharding.mesh import current_mesh
from spmd.sharding.named import NamedSharding
from spmd.sharding.rules import ValueSharding
from spmd.sharding.spec import PartitionSpec
from spmd.transforms.call_mesh import arrivals, constraints_onto, express, on_mesh, program_mesh
from spmd.transforms.jit_arguments import (
    LEAF_TYPES,
    SCALAR_TYPES,
    arguments_32,
    as_tuple,
    leaf_key,
    outputs_32,
    placed_inputs,
    static_arguments,
)
from spmd.transforms.partition import partition
from spmd.transforms.typeof import PropagatedTypes
from spmd.tree_util import (
    tree_broadcast_prefix,
    tree_flatten,
    tree_leaves,
    tree_structure,
    tree_unflatten,
)


@dataclass(frozen=True)
class _Traced:
    program: Program
    out_tree: Any
    run: Callable[..., list]  # the compiled program: run(*consts, *args) -> outputs
    outputs: list  # per output leaf: (aval, sharding, placement)
    single_output: bool  # the function returns one array, not a container
    partitioned: Partitioned | None = None  # per-device steps, when the program uses a mesh
    memory_kinds: tuple = ()  # per output, when partitioned
    arrivals: tuple = ()  # per argument leaf, when partitioned: a sharding it moves to first


class Jitted:
    """A function compiled per signature: shapes, dtypes, shardings and static arguments."""

    def __init__(
        self,
        fun: Callable,
        *,
        static_argnums=(),
        static_argnames=(),
        out_shardings=None,
        in_shardings=None,
        donate_argnums=(),
    ) -> None:
        self.fun = fun
        self.static_argnums, self.static_argnames = static_arguments(
            fun, as_tuple(static_argnums), as_tuple(static_argnames)
        )
        self.in_shardings = in_shardings
        self.out_shardings = out_shardings
        self.donate_argnums = as_tuple(donate_argnums)
        self._cache: dict = {}
        functools.update_wrapper(self, fun, updated=())
        if not hasattr(self, "__name__"):  # a functools.partial, a callable object
            self.__name__ = getattr(getattr(fun, "func", type(fun)), "__name__", "fun")
        self.label = f"jit({self.__name__})"  # what mesh errors call it (eager ops: "add")

    def _static_positions(self, args: tuple) -> tuple[int, ...]:
        """``static_argnums`` as positions in ``args`` (negative ones count from the end);
        those past the end name arguments passed by keyword or left to their defaults."""
        passed = tuple(i for i in self.static_argnums if i < len(args))
        return argument_positions(passed, len(args), self.label, "static_argnums")

    def _split(self, args: tuple, kwargs: dict):
        if not self.static_argnums and not self.static_argnames:
            return (), (args, kwargs)
        positions = self._static_positions(args)
        static = [(i, args[i]) for i in positions]
        static += [(name, kwargs[name]) for name in self.static_argnames if name in kwargs]
        for where, value in static:
            try:
                hash(value)
            except TypeError:
                raise SpmdTypeError(
                    f"jit({self.__name__}): static argument {where!r} is {type(value).__name__}, "
                    f"which is not hashable; static arguments key the cache. Pass a tuple "
                    f"instead of a list, or make the argument dynamic."
                ) from None
        dynamic_args = tuple(a for i, a in enumerate(args) if i not in positions)
        dynamic_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        return tuple(static), (dynamic_args, dynamic_kwargs)

    def _call_with(self, static, leaves_in, in_tree):
        args, kwargs = tree_unflatten(in_tree, leaves_in)
        full = list(args)
        for i, value in sorted((i, v) for i, v in static if isinstance(i, int)):
            full.insert(i, value)
        kwargs.update({k: v for k, v in static if isinstance(k, str)})
        return self.fun(*full, **kwargs)

    def trace(self, *args, **kwargs) -> tuple[_Traced, list]:
        """The cached compilation for these arguments (tracing on a miss), and their leaves."""
        x64 = x64_enabled()
        flat = not kwargs and not self.static_argnums and not self.static_argnames
        if flat and LEAF_TYPES.issuperset(map(type, args)):  # skip pytree flattening
            leaves = args if x64 else tuple(arguments_32(args, self.label))
            key = (x64, len(args), *map(leaf_key, leaves))
            traced = self._cache.get(key)
            if traced is None:
                traced = self._cache[key] = self._compile((), *tree_flatten((leaves, {}))[::-1])
            return traced, leaves
        static, dynamic = self._split(args, kwargs)
        leaves, in_tree = tree_flatten(dynamic)
        if not x64:
            leaves = arguments_32(leaves, self.label)
        key = (x64, in_tree, static, *map(leaf_key, leaves))
        traced = self._cache.get(key)
        if traced is None:
            traced = self._cache[key] = self._compile(static, in_tree, leaves)
        return traced, leaves

    def _compile(self, static, in_tree, leaves: list) -> _Traced:
        trace = ProgramTrace()
        tracers = [trace.new_arg(aval_of(leaf)) for leaf in leaves]
        trace.types = _argument_types(leaves)
        with tracing(trace):
            out = self._call_with(static, tracers, in_tree)
        out_leaves, out_tree = tree_flatten(out)
        if not x64_enabled():  # what the function returns, in 32-bit dtypes
            with tracing(trace):
                out_leaves = outputs_32(out_leaves, self.label)
        program = trace.finish([t.node for t in tracers], out_leaves)
        who = f"jit({self.__name__}) out_shardings"
        targets = [None if t is None else as_sharding(t, who) for t in self._out_targets(out_tree)]
        for i, (target, aval) in enumerate(zip(targets, program.out_avals, strict=True)):
            if target is not None:  # checks that the spec fits the output's rank
                layout_for(target, aval.shape, f"{who} for output {i} ({aval})")
        mesh = program_mesh(self.label, leaves, program, targets)
        if mesh is not None:
            return self._partition(program, out_tree, mesh, leaves, targets)
        for eqn in program.equations:
            if eqn.primitive is inspect_sharding_p:
                eqn.params["callback"](result_sharding(leaves, eqn.inputs[0].aval.shape))
        shardings = [
            target if target is not None else result_sharding(leaves, a.shape)
            for target, a in zip(targets, program.out_avals, strict=True)
        ]
        placements = [
            placement(layout_for(s, a.shape, who))
            for s, a in zip(shardings, program.out_avals, strict=True)
        ]
        outputs = list(zip(program.out_avals, shardings, placements, strict=True))
        single = out_tree.num_nodes == 1 and out_tree.num_leaves == 1
        return _Traced(program, out_tree, compile_program(program), outputs, single)

    def _partition(self, program, out_tree, mesh, leaves, targets) -> _Traced:
        """Partition ``program`` over ``mesh``. Arguments on another mesh over its devices
        move onto it first; outputs wanted on another mesh or device (by out_shardings or by
        a constraint on another mesh) are computed as near to that as ``mesh`` allows and
        moved after."""
        moves = arrivals(leaves, mesh)
        in_shardings = [
            on_mesh(leaf, mesh) if move is None else ValueSharding(move.spec.dims(leaf.ndim))
            for leaf, move in zip(leaves, moves, strict=True)
        ]
        program, asked = constraints_onto(program, mesh)
        targets = [
            asked.get(atom) if target is None and isinstance(atom, Var) else target
            for atom, target in zip(program.outvars, targets, strict=True)
        ]
        wanted = [
            _wanted(t, mesh, a.shape) for t, a in zip(targets, program.out_avals, strict=True)
        ]
        part = partition(program, mesh, in_shardings, wanted)
        for eqn in program.equations:
            if eqn.primitive is inspect_sharding_p:
                found = part.propagation.shardings.get(eqn.inputs[0])
                spec = found.spec if found is not None else PartitionSpec()
                eqn.params["callback"](NamedSharding(mesh, spec))
        outputs = []
        for (_, sharding), target, aval in zip(
            part.outputs, targets, program.out_avals, strict=True
        ):
            if target is None and sharding is None:
                target = NamedSharding(mesh, PartitionSpec())
            moved = target is not None and not _same_mesh(target, mesh)
            outputs.append((aval, target if moved or sharding is None else None, None))
        kinds = tuple(t.memory_kind if _same_mesh(t, mesh) else None for t in targets)
        single = out_tree.num_nodes == 1 and out_tree.num_leaves == 1
        return _Traced(program, out_tree, None, outputs, single, part, kinds, tuple(moves))

    def _call_partitioned(self, traced: _Traced, leaves) -> Any:
        consts = traced.program.consts
        leaves = [
            leaf if move is None else device_put(leaf, move)
            for leaf, move in zip(leaves, traced.arrivals, strict=True)
        ]
        values = execute(traced.partitioned, leaves, consts, traced.memory_kinds, self.label)
        outs = [
            value if target is None else device_put(value, target)
            for value, (_, target, _) in zip(values, traced.outputs, strict=True)
        ]
        return self._finish(traced, outs)

    def __call__(self, *args, **kwargs):
        if current_trace() is not EVAL_TRACE:  # inside another trace: inline the function
            return self._inline(args, kwargs)
        if self.in_shardings is not None:
            args = placed_inputs(self.in_shardings, args, f"jit({self.__name__}) in_shardings")
        traced, leaves = self.trace(*args, **kwargs)
        if traced.partitioned is not None:
            return self._call_partitioned(traced, leaves)
        if traced.outputs and not any(where for _, _, where in traced.outputs):
            # every result lives on other processes' devices: nothing to compute here
            return self._finish(traced, [Array._from_buffers(s, {}, a.shape, a.dtype)
                                         for a, s, _ in traced.outputs])  # fmt: skip
        consts = traced.program.consts
        inputs = [np.asarray(x) if type(x) is Array else x for x in leaves]
        values = traced.run(*consts, *inputs)
        foreign = (*inputs, *consts)
        outs = []
        for value, (aval, sharding, where) in zip(values, traced.outputs, strict=True):
            # a Python scalar the function returned has its (weak) type's dtype
            value = np.asarray(value, aval.dtype if type(value) in SCALAR_TYPES else None)
            if value.dtype != aval.dtype or value.shape != aval.shape:
                raise RuntimeError(f"internal error: jit computed {value.dtype} for {aval}")
            outs.append(adopt(value, sharding, where, foreign))
        return self._finish(traced, outs)

    def _inline(self, args: tuple, kwargs: dict) -> Any:
        """The function traced into the enclosing program, its out_shardings as constraints."""
        out = self.fun(*args, **kwargs)
        if self.out_shardings is None:
            return out
        leaves, out_tree = tree_flatten(out)
        who = f"jit({self.__name__}) out_shardings"
        pinned = [
            leaf if target is None else constrain(leaf, target, f"{who} for output {i}")
            for i, (leaf, target) in enumerate(
                zip(leaves, self._out_targets(out_tree), strict=True)
            )
        ]
        return tree_unflatten(out_tree, pinned)

    def _finish(self, traced: _Traced, outs: list) -> Any:
        if traced.single_output:
            return outs[0]
        return tree_unflatten(traced.out_tree, outs)

    def _out_targets(self, out_tree) -> list:
        count = out_tree.num_leaves
        if self.out_shardings is None:
            return [None] * count
        if _is_target(self.out_shardings):
            return [self.out_shardings] * count
        full = tree_unflatten(out_tree, [None] * count)
        try:
            prefix = tree_broadcast_prefix(self.out_shardings, full, is_leaf=_is_target)
        except (ValueError, TypeError) as error:
            given = tree_structure(self.out_shardings, is_leaf=_is_target)
            raise ShardingError(
                f"jit({self.__name__}): out_shardings is {given} but the function returns "
                f"{plural(count, 'output')} shaped {out_tree} ({error}); give one sharding, or "
                f"a pytree prefix of the outputs with one sharding (or None) per output."
            ) from None
        return tree_leaves(prefix, is_leaf=lambda x: x is None or _is_target(x))

    def lower(self, *args, **kwargs) -> Lowered:
        if self.in_shardings is not None:
            args = placed_inputs(self.in_shardings, args, f"jit({self.__name__}) in_shardings")
        traced, _ = self.trace(*args, **kwargs)
        return Lowered(traced.program, traced.partitioned, self)


@dataclass(frozen=True)
class Lowered:
    """A function lowered for given arguments: its global program and per-device steps."""

    program: Program
    partitioned: Partitioned | None = None
    function: Any = field(default=None, repr=False, compare=False)

    def compile(self) -> Compiled:
        """The lowered function, ready to call as ``compiled(*args)`` (spmd compiles when it
        traces, so this only hands over what lowering made)."""
        return Compiled(self.program, self.partitioned, self.function)

    def as_text(self) -> str:
        """The per-device program with its collectives (the global program when it runs on
        one device)."""
        if self.partitioned is None:
            return str(self.program)
        return as_text(self.partitioned)

    def explain(self) -> str:
        """Each value's sharding and why; each collective with its axes, bytes and reason."""
        if self.partitioned is None:
            return (
                "No argument, constraint or out_shardings names a mesh: the program runs "
                "once, on one device, with no collectives.\n" + str(self.program)
            )
        return explain(self.partitioned)


@dataclass(frozen=True)
class Compiled(Lowered):
    """A lowered function ready to run on arguments like those it was lowered for."""

    def __call__(self, *args, **kwargs) -> Any:
        return self.function(*args, **kwargs)


def _argument_types(leaves: list) -> PropagatedTypes | None:
    """What ``typeof`` reports inside the function: shardings propagated over the first
    argument's mesh, else the mesh in scope (None: neither)."""
    meshes = [x.sharding.mesh for x in leaves
              if type(x) is Array and isinstance(x.sharding, NamedSharding)]  # fmt: skip
    mesh = meshes[0] if meshes else current_mesh()
    if mesh is None:
        return None
    return PropagatedTypes(mesh, [on_mesh(x, mesh) for x in leaves])


def _same_mesh(sharding, mesh) -> bool:
    return isinstance(sharding, NamedSharding) and sharding.mesh == mesh


def _wanted(target, mesh, shape: tuple[int, ...]) -> ValueSharding | None:
    """What the partitioner should make of an output wanted as ``target``: its split of
    ``mesh`` (the nearest one, for a mesh over the same devices), None when it is wanted
    on other devices (moved after)."""
    if not isinstance(target, NamedSharding) or not same_devices(target.mesh, mesh):
        return None
    return ValueSharding(express(target, mesh, shape)[0])


def jit(
    fun: Callable | None = None,
    *,
    in_shardings=None,
    out_shardings=None,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    donate_argnums: int | Sequence[int] = (),
):
    """Compile ``fun``: trace it once per signature and run the cached Program after.

    Example: ``f = spmd.jit(lambda x: 2 * spmd.numpy.sin(x) + 1); f(spmd.numpy.arange(32.))``.
    """
    options = dict(
        in_shardings=in_shardings,
        out_shardings=out_shardings,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        donate_argnums=donate_argnums,
    )
    if fun is None:
        return lambda f: Jitted(f, **options)
    return Jitted(fun, **options)


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = ()):
    """``make_jaxpr(f)(*args)`` traces ``f`` and returns its Program (printable like a jaxpr)."""

    @functools.wraps(fun)
    def traced(*args, **kwargs) -> Program:
        return Jitted(fun, static_argnums=static_argnums).trace(*args, **kwargs)[0].program

    return traced
