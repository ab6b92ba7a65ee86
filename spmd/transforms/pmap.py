"""pmap: map a function over a leading axis across devices; nested pmaps map over a grid.

The function is traced on one slice (the mapped axis removed) with its axis name bound,
and the call becomes one ``shard_map`` equation over a mesh whose axes are the pmap's and
its nested pmaps' names, one device per index. A pmap called while tracing another pmap's
function binds no equation: its function runs inline in the enclosing body, on this
device's index of each mapped operand (``axis_slice`` over its axis), and each mapped
result is stacked back over that axis (``all_gather``). The lowering keeps such values
split over the inner axes (spmd/transforms/body_splits.py), so results stay split over
all the mapped devices and chained pmaps move no data.
"""

from __future__ import annotations

import contextvars
import functools
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.core.axes import argument_positions, normalize_axis
from spmd.core.axis_env import binding, bound_axes, pmap_levels
from spmd.core.program import Program
from spmd.core.trace import EVAL_TRACE, ProgramTrace, aval_of, current_trace, tracing
from spmd.errors import ShapeError, ShardingError, SpmdTypeError
from spmd.prims.collective import all_gather_p, axis_slice_p, pvary_p
from spmd.sharding.device import devices as all_devices
from spmd.sharding.device import process_count
from spmd.sharding.mesh import Mesh
from spmd.transforms.pmap_multihost import call_across_processes
from spmd.transforms.shard_map import shard_map_p
from spmd.transforms.shard_map_bodies import mapped_body
from spmd.tree_util import tree_broadcast_prefix, tree_flatten, tree_unflatten

_fresh_names = itertools.count()
# The (axis name, size) of every pmap nested in the outermost one being traced.
_nested: contextvars.ContextVar[list[tuple[str, int]]] = contextvars.ContextVar("spmd_pmap_nested")


class Pmapped:
    """``fun`` mapped over a leading axis of its arguments, one device per index."""

    def __init__(self, fun, axis_name, in_axes, out_axes, static_argnums, devices) -> None:
        self.fun = fun
        self.name = getattr(fun, "__name__", "f")
        self.axis_name = axis_name if axis_name is not None else f"_pmap{next(_fresh_names)}"
        self.in_axes = in_axes
        self.out_axes = out_axes
        self.static_argnums = tuple(static_argnums)
        self.devices = None if devices is None else list(devices)
        functools.update_wrapper(self, fun, updated=())
        self._jitted = None
        self._across: dict = {}  # multihost: local rows and shapes → (global mesh, pinned pmap)

    def __call__(self, *args):
        for i in self.static_positions(args):
            try:
                hash(args[i])
            except TypeError:
                raise SpmdTypeError(
                    f"{self._where()}: argument {i}, static by static_broadcasted_argnums, is "
                    f"{type(args[i]).__name__}, which is not hashable; static arguments key the "
                    f"cache. Pass a tuple instead of a list, or make the argument mapped."
                ) from None
        if current_trace() is not EVAL_TRACE:
            return self._bind(args)
        if process_count() > 1:
            return call_across_processes(self, args)
        return self._run_global(args)

    def _compiled(self):
        if self._jitted is None:
            from spmd.transforms.jit import jit

            self._jitted = jit(lambda *a: self._bind(a), static_argnums=self.static_argnums)
            self._jitted.label = self._where()  # what its errors and messages call it
        return self._jitted

    def _run_global(self, args: tuple) -> Any:
        """Run on global arguments, compiled once per signature."""
        return self._compiled()(*args)

    def _grid(self, args: tuple) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """The axis names and sizes of the device grid a call on ``args`` maps over."""
        program = self._compiled().trace(*args)[0].program
        mesh = next(e.params["mesh"] for e in program.equations if e.primitive is shard_map_p)
        return mesh.axis_names, mesh.devices.shape

    def _pinned(self, devices: list) -> Pmapped:
        """This pmap on exactly ``devices`` (in order)."""
        options = (self.axis_name, self.in_axes, self.out_axes, self.static_argnums, devices)
        return Pmapped(self.fun, *options)

    def _where(self) -> str:
        return f"pmap({self.name})"

    def static_positions(self, args: tuple) -> tuple[int, ...]:
        """``static_broadcasted_argnums`` as positions in ``args`` (negative: from the end)."""
        return argument_positions(
            self.static_argnums, len(args), self._where(), "static_broadcasted_argnums"
        )

    def _bind(self, args: tuple) -> Any:
        nested = bool(pmap_levels.get())
        if not nested and bound_axes():
            raise ShardingError(
                f"{self._where()} inside shard_map is not supported; map over the mesh with "
                f"shard_map's in_specs instead."
            )
        if self.axis_name in bound_axes():
            raise ShardingError(
                f"{self._where()}: axis name {self.axis_name!r} is already bound by an outer "
                f"pmap; give each nested pmap its own axis_name."
            )
        static = {i: args[i] for i in self.static_positions(args)}
        dynamic = tuple(a for i, a in enumerate(args) if i not in static)
        leaves, in_tree = tree_flatten(dynamic)
        in_axes = self._in_axes(dynamic, leaves)
        avals = [aval_of(leaf) for leaf in leaves]
        size = self._size(avals, in_axes)
        if nested:
            return self._inline(static, in_tree, leaves, in_axes, size)
        body, out_tree, consts, grid = self._trace(static, in_tree, avals, in_axes, size)
        result_avals = [v.aval for v in body.outvars]
        out_axes = self._out_axes(out_tree, result_avals)
        self._check_unmapped(result_avals, out_axes)
        out_avals = []
        for v, out_axis in zip(body.outvars, out_axes, strict=True):
            shape = v.aval.shape
            if out_axis is not None:
                shape = (*shape[:out_axis], size, *shape[out_axis:])
            out_avals.append(ShapedArray(shape, v.aval.dtype, v.aval.weak_type))
        params = dict(
            body=body,
            axis_name=self.axis_name,
            in_axes=(None,) * len(consts) + tuple(in_axes),
            out_axes=tuple(out_axes),
            out_avals=tuple(out_avals),
            name=self.name,
        )
        outs = _bind_shard_map(params, self._mesh(size, grid), [*consts, *leaves])
        return tree_unflatten(out_tree, outs)

    def _inline(self, static, in_tree, leaves, in_axes, size) -> Any:
        """A nested pmap, run in the enclosing pmap's body: the function on this device's
        index of each mapped operand, each mapped result stacked over the pmap's axis."""
        name = self.axis_name
        _nested.get().append((name, size))
        token = pmap_levels.set((*pmap_levels.get(), name))
        try:
            with binding({name: size}):
                sliced = [
                    _shared(x, name, size)
                    if a is None
                    else axis_slice_p.bind(x, axis=a, axes=(name,), size=size)
                    for x, a in zip(leaves, in_axes, strict=True)
                ]
                dynamic = list(tree_unflatten(in_tree, sliced))
                for i in sorted(static):
                    dynamic.insert(i, static[i])
                out = self.fun(*dynamic)
                out_leaves, out_tree = tree_flatten(out)
                out_axes = self._out_axes(out_tree, [aval_of(y) for y in out_leaves])
                self._check_unmapped([aval_of(y) for y in out_leaves], out_axes)
                stacked = [
                    y if o is None else all_gather_p.bind(y, axes=(name,), size=size, axis=o,
                                                          tiled=False)
                    for y, o in zip(out_leaves, out_axes, strict=True)
                ]  # fmt: skip
        finally:
            pmap_levels.reset(token)
        return tree_unflatten(out_tree, stacked)

    def _in_axes(self, dynamic: tuple, leaves: list) -> list[int | None]:
        prefix = tuple(self.in_axes) if isinstance(self.in_axes, list) else self.in_axes
        if isinstance(prefix, tuple) and len(prefix) != len(dynamic):
            raise SpmdTypeError(
                f"{self._where()}: in_axes has {len(prefix)} entries but the call passed "
                f"{len(dynamic)} (non-static) arguments; give one entry per argument."
            )
        axes = self._axes(prefix, dynamic, "in_axes", "arguments")
        return [
            self._normalized(axis, aval_of(leaf).ndim, f"argument {i} ({aval_of(leaf)})", "in_axes")
            for i, (axis, leaf) in enumerate(zip(axes, leaves, strict=True))
        ]

    def _normalized(self, axis, ndim: int, of: str, argument: str) -> int | None:
        return None if axis is None else normalize_axis(axis, ndim, self._where(), of, argument)

    def _axes(self, prefix, tree, argument: str, of: str) -> list:
        """``prefix`` (an int, None, or a tree of them) repeated over the leaves of ``tree``."""
        try:
            full = tree_broadcast_prefix(prefix, tree, is_leaf=lambda x: x is None)
        except ValueError as error:
            raise SpmdTypeError(
                f"{self._where()}: {argument} {prefix!r} must be an int, None, or a tree of "
                f"them shaped like the {of} ({error})."
            ) from None
        return tree_flatten(full, is_leaf=lambda x: x is None)[0]

    def _size(self, avals, in_axes) -> int:
        sizes = {
            i: a.shape[axis]
            for i, (a, axis) in enumerate(zip(avals, in_axes, strict=True))
            if axis is not None
        }
        if not sizes:
            raise ShapeError(
                f"{self._where()} needs at least one mapped argument (in_axes all None)."
            )
        if len(set(sizes.values())) > 1:
            shown = ", ".join(f"argument {i}: {n}" for i, n in sizes.items())
            raise ShapeError(
                f"{self._where()}: mapped axes have different sizes ({shown}); every mapped "
                f"argument needs the same size along its in_axes."
            )
        return next(iter(sizes.values()))

    def _trace(self, static, in_tree, avals, in_axes, size):
        """The function's body on one index, its result tree and constants, and the
        (name, size) of each pmap nested in it."""
        trace = ProgramTrace()
        tracers = []
        for aval, axis in zip(avals, in_axes, strict=True):
            shape = aval.shape if axis is None else aval.shape[:axis] + aval.shape[axis + 1 :]
            varies = aval.vma if axis is None else aval.vma | {self.axis_name}
            tracers.append(
                trace.new_arg(ShapedArray(shape, aval.dtype, aval.weak_type, vma=varies))
            )
        grid: list[tuple[str, int]] = []
        token = pmap_levels.set((*pmap_levels.get(), self.axis_name))
        grid_token = _nested.set(grid)
        try:
            with tracing(trace), binding({self.axis_name: size}):
                dynamic = list(tree_unflatten(in_tree, tracers))
                for i in sorted(static):
                    dynamic.insert(i, static[i])
                out = self.fun(*dynamic)
        finally:
            _nested.reset(grid_token)
            pmap_levels.reset(token)
        out_leaves, out_tree = tree_flatten(out)
        program = trace.finish([t.node for t in tracers], out_leaves)
        closed = Program(
            [], [*program.constvars, *program.invars], program.equations, program.outvars
        )
        return closed, out_tree, program.consts, grid

    def _out_axes(self, out_tree, avals: list) -> list[int | None]:
        placeholders = tree_unflatten(out_tree, [0] * len(avals))
        axes = self._axes(self.out_axes, placeholders, "out_axes", "results")
        return [
            self._normalized(
                axis, aval.ndim + 1, f"result {k} ({aval}) with the mapped axis", "out_axes"
            )
            for k, (axis, aval) in enumerate(zip(axes, avals, strict=True))
        ]

    def _check_unmapped(self, avals: list, out_axes) -> None:
        for k, (aval, out_axis) in enumerate(zip(avals, out_axes, strict=True)):
            if out_axis is None and self.axis_name in aval.vma:
                raise ShardingError(
                    f"{self._where()}: out_axes is None for result {k}, so it must be the same "
                    f"on every device, but it varies over {self.axis_name!r}. Map it "
                    f"(out_axes=0) or combine it with spmd.lax.psum(x, {self.axis_name!r})."
                )

    def _mesh(self, size: int, grid: list[tuple[str, int]]) -> Mesh:
        names = [self.axis_name]
        sizes = [size]
        for name, n in grid:
            if name in names:
                if sizes[names.index(name)] != n:
                    raise ShapeError(
                        f"{self._where()}: nested pmaps over axis {name!r} have sizes "
                        f"{sizes[names.index(name)]} and {n}; one axis name has one size."
                    )
                continue
            names.append(name)
            sizes.append(n)
        needed = int(np.prod(sizes))
        available = self.devices if self.devices is not None else all_devices()
        if needed > len(available):
            shown = " × ".join(f"{n} ({a!r})" for a, n in zip(names, sizes, strict=True))
            raise ShardingError(
                f"{self._where()} maps over {shown} = {needed} devices, but "
                f"{len(available)} are available. Map over fewer indices (reshape the "
                f"input), or start with more devices (SPMD_NUM_CPU_DEVICES)."
            )
        grid = np.empty(needed, dtype=object)
        grid[:] = available[:needed]
        return Mesh(grid.reshape(sizes), tuple(names))


def _shared(x: Any, name: str, size: int) -> Any:
    """A nested pmap's broadcast operand, typed as varying over its axis (so its cotangent
    sums over that axis's devices, JAX's pvary)."""
    if name in aval_of(x).vma:
        return x
    return pvary_p.bind(x, axes=(name,), size=size)


def _bind_shard_map(params: dict, mesh: Mesh, operands: list) -> list:
    """A pmap as the shard_map over ``mesh`` (its axis first, then its nested pmaps') whose
    specs split each mapped operand and result along its in or out axis over the pmap's axis
    (broadcast ones whole); its results may stay split over the nested axes as the body
    leaves them (``split_results``, spmd/transforms/body_splits.py)."""
    axis = params["axis_name"]

    def dims(ndim: int, at: int | None) -> tuple[tuple[str, ...], ...]:
        return tuple((axis,) if d == at else () for d in range(ndim))

    in_dims = [dims(aval_of(x).ndim, a) for x, a in zip(operands, params["in_axes"], strict=True)]
    out_dims = [
        dims(a.ndim, o) for a, o in zip(params["out_avals"], params["out_axes"], strict=True)
    ]
    body = mapped_body(params["body"], params["in_axes"], params["out_axes"])
    return shard_map_p.bind(
        *operands,
        mesh=mesh,
        in_dims=tuple(in_dims),
        out_dims=tuple(out_dims),
        bodies=(body,),
        body_of=(0,) * mesh.size,
        out_avals=params["out_avals"],
        unchecked=(),
        name=params["name"],
        split_results=True,
    )


def pmap(
    fun: Callable | None = None,
    axis_name: str | None = None,
    *,
    in_axes: Any = 0,
    out_axes: Any = 0,
    static_broadcasted_argnums: int | Sequence[int] = (),
    devices: Sequence | None = None,
    backend: str | None = None,
):
    """Map ``fun`` over axis ``in_axes`` of its arguments, one index per device; results
    stack along ``out_axes`` and stay split over those devices.

    Example: ``spmd.pmap(lambda v: v / spmd.lax.psum(v, 'i'), axis_name='i')(x)``.
    Nested pmaps with distinct axis names map over a grid of devices.
    """
    if isinstance(static_broadcasted_argnums, int):
        static_broadcasted_argnums = (static_broadcasted_argnums,)
    options = (axis_name, in_axes, out_axes, static_broadcasted_argnums, devices)
    if fun is None:
        return lambda f: Pmapped(f, *options)
    return Pmapped(fun, *options)
