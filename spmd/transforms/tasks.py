"""The sharding compiler: ``shard_tasks`` splits a program into independent per-block tasks.

After Elixir Nx's sharding compiler: trace the function, tie every dimension of every value
into classes by the same factor rules jit propagates shardings with (spmd/sharding/
dimension_classes.py), cut the classes the slicing asks for, and emit one task per block of the
results. A task reads exactly the argument slices its block needs, computes with the program
rewritten for those shapes, and writes its block into the output holder. Tasks are plain
data, so ``run_tasks`` may hand them to threads, processes or a Dask cluster.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from spmd.core.aval import host_array, python_scalar_aval
from spmd.core.program import Program, Var
from spmd.core.trace import ProgramTrace, aval_of, tracing
from spmd.errors import ShardingError, SpmdTypeError, TaskError
from spmd.runtime.cores import blas_threads, core_count
from spmd.sharding.dimension_classes import Classes, dimension_classes
from spmd.sharding.plans import format_bytes
from spmd.transforms.task_program import (
    BlockWriter,
    Bounds,
    TaskFunction,
    block_program,
    bounds_text,
    needed_equations,
    without_annotations,
    without_dead_code,
)
from spmd.transforms.task_slicing import read_slicing
from spmd.tree_util import tree_flatten, tree_unflatten

_SCALARS = (bool, int, float, complex)


class Task(NamedTuple):
    """One block: ``write(fun(*args), holder)`` puts it into the output holder."""

    args: tuple
    fun: TaskFunction
    write: BlockWriter

    @property
    def block(self) -> tuple[tuple[int, Bounds], ...]:
        """(output leaf, bounds) of every output block the task writes."""
        return tuple(zip(self.write.leaves, self.write.blocks, strict=True))


class TaskList(list):
    """The tasks of ``shard_tasks``, with ``explain()``: what each reads and writes, and
    why each argument axis is cut or kept whole."""

    def __init__(self, tasks: list[Task], name: str, in_avals: list, cuts: list, axes: list):
        super().__init__(tasks)
        self.name = name
        self.in_avals = in_avals
        self.cuts = cuts  # per argument: {axis: its (start, stop) pieces} for the axes cut
        self.axes = axes  # per argument, per axis: how it is cut, or why it is whole

    def explain(self) -> str:
        lines = [f"shard_tasks({self.name}): {len(self)} task(s)"]
        for i, (aval, axes) in enumerate(zip(self.in_avals, self.axes, strict=True)):
            lines.append(f"  argument {i} {aval}:")
            lines.extend(f"    axis {d}: {text}" for d, text in enumerate(axes))
        total = 0
        for k, task in enumerate(self):
            reads = []
            for index, bounds in task.fun.reads:
                nbytes = _nbytes(bounds, self.in_avals[index].dtype)
                total += nbytes
                reads.append(f"argument {index}[{bounds_text(bounds)}] {format_bytes(nbytes)}")
            writes = ", ".join(f"output {leaf}[{bounds_text(b)}]" for leaf, b in task.block)
            lines.append(f"task {k}: {writes} <- {', '.join(reads) or 'no argument'}")
        size = sum(a.size * a.dtype.itemsize for a in self.in_avals)
        ratio = f", {total / size:.2f}x" if size else ""
        lines.append(
            f"reads {format_bytes(total)} in all{ratio} the arguments' {format_bytes(size)}"
        )
        return "\n".join(lines)


def shard_tasks(
    fun: Callable, args: Sequence, slicing: Sequence | None = None, max_tasks: int = 4096
):
    """Split ``fun(*args)`` into independent tasks, one per block of its results.

    ``slicing`` has one entry per argument: None (cut every axis as finely as the program
    allows), ``{axis: n}`` (n nearly equal parts), ``{axis: [(start, stop), ...]}``, or
    ``{}`` (keep the argument whole). More than ``max_tasks`` tasks is a ShardingError that
    suggests a slicing that fits.
    Returns ``(output_holder, tasks)``: NumPy arrays shaped as the results, and a TaskList
    of ``(task_args, task_fun, write)``; folding ``write(task_fun(*task_args), holder)``
    over the tasks, in any order and anywhere, fills the holder with ``fun(*args)``.

    Example: ``holder, tasks = spmd.shard_tasks(f, (x, y), [{0: 4}, None])``, then
    ``spmd.run_tasks(holder, tasks, executor)``.
    """
    name = getattr(fun, "__name__", type(fun).__name__)
    if isinstance(args, (np.ndarray, *_SCALARS)) or not isinstance(args, Sequence):
        raise SpmdTypeError(
            f"shard_tasks({name}): args must be a tuple or list of the arguments, got "
            f"{type(args).__name__}; write shard_tasks(f, (x,)) for one argument."
        )
    values = [_argument(name, i, x) for i, x in enumerate(args)]
    program, out_tree = _trace(fun, values)
    _check_single_device(name, program)
    classes = dimension_classes(program)
    cuts, asked = read_slicing(name, program, classes, slicing)
    groups = _groups(program, classes, cuts)
    _check_task_count(name, program, classes, cuts, groups, max_tasks)
    tasks = []
    for group in groups:
        tasks.extend(_group_tasks(name, program, classes, cuts, group, values))
    holder = tree_unflatten(out_tree, [np.empty(a.shape, a.dtype) for a in program.out_avals])
    in_avals = [v.aval for v in program.invars]
    return holder, TaskList(tasks, name, in_avals, *_argument_axes(program, classes, cuts, asked))


def run_tasks(holder, tasks: Sequence[Task], executor: Any = None):
    """Run ``tasks`` and write their blocks into ``holder``; return it.

    ``executor``: None runs them here, one after another; otherwise anything with
    ``submit(fn, *args)`` returning a ``concurrent.futures.Future``: a ThreadPoolExecutor, a
    ProcessPoolExecutor, or a Dask distributed ``client.get_executor()``. Blocks are written
    as tasks finish. On a thread or process pool of this host, each task's BLAS calls get
    the pool's share of the cores, so that tasks running at once do not oversubscribe them
    (Dask's workers hold BLAS to one thread themselves). A failing task raises TaskError
    naming its block, from its exception.
    """
    if executor is None:
        for index, task in enumerate(tasks):
            try:
                holder = task.write(task.fun(*task.args), holder)
            except Exception as error:
                raise _failed(index, task, error) from error
        return holder
    share = _blas_share(executor)
    if isinstance(executor, concurrent.futures.ThreadPoolExecutor):
        with blas_threads(share):  # one limit for the whole process, its threads included
            return _run_on(executor, holder, tasks, lambda fun: fun)
    if share is not None:
        return _run_on(executor, holder, tasks, lambda fun: BlasLimited(fun, share))
    return _run_on(executor, holder, tasks, lambda fun: fun)


def _run_on(executor, holder, tasks: Sequence[Task], wrap: Callable) -> Any:
    futures = {}
    try:
        for k, task in enumerate(tasks):
            futures[executor.submit(wrap(task.fun), *task.args)] = k
        for future in concurrent.futures.as_completed(futures):
            index = futures[future]
            try:
                holder = tasks[index].write(future.result(), holder)
            except Exception as error:
                raise _failed(index, tasks[index], error) from error
    finally:
        for future in futures:
            future.cancel()
    return holder


def _blas_share(executor) -> int | None:
    """BLAS threads for each task of a thread or process pool on this host (None: another
    executor, which places its workers itself)."""
    pools = (concurrent.futures.ThreadPoolExecutor, concurrent.futures.ProcessPoolExecutor)
    workers = getattr(executor, "_max_workers", None)
    if not isinstance(executor, pools) or not workers:
        return None
    return max(1, core_count() // workers)


class BlasLimited:
    """``fun`` run with its BLAS calls held to ``threads`` threads (in a pool's worker)."""

    def __init__(self, fun: Callable, threads: int) -> None:
        self.fun, self.threads = fun, threads

    def __call__(self, *args):
        with blas_threads(self.threads):
            return self.fun(*args)


def _failed(index: int, task: Task, error: BaseException) -> TaskError:
    where = ", ".join(f"output {leaf}[{bounds_text(b)}]" for leaf, b in task.block)
    return TaskError(
        f"task {index} ({where}) failed: {type(error).__name__}: {error}",
        index,
        task.block,
        error,
    )


def _argument(name: str, i: int, x: Any) -> Any:
    if type(x) in _SCALARS:
        return x
    return host_array(x, f"shard_tasks({name}): args[{i}]")


def _trace(fun: Callable, values: list) -> tuple[Program, Any]:
    trace = ProgramTrace()
    avals = [python_scalar_aval(x) if type(x) in _SCALARS else aval_of(x) for x in values]
    tracers = [trace.new_arg(aval) for aval in avals]
    with tracing(trace):
        out = fun(*tracers)
    leaves, out_tree = tree_flatten(out)
    program = trace.finish([t.node for t in tracers], leaves)
    return without_dead_code(without_annotations(program)), out_tree


def _on_a_mesh(eqn) -> bool:
    """Whether ``eqn`` runs over mesh devices: a per-device program on a mesh, an operation
    over named mesh axes (a collective, axis_index, pvary), or a body holding one."""
    params = eqn.params
    if "mesh" in params or any(isinstance(a, str) for a in params.get("axes", ())):
        return True
    for value in params.values():
        bodies = value if isinstance(value, tuple) else (value,)
        for body in bodies:
            if isinstance(body, Program) and any(_on_a_mesh(e) for e in body.equations):
                return True
    return False


def _check_single_device(name: str, program: Program) -> None:
    for eqn in program.equations:
        if _on_a_mesh(eqn):
            raise ShardingError(
                f"shard_tasks({name}): the program calls {eqn.primitive.name}, which runs on "
                f"a mesh of devices; a task runs on one. Give shard_tasks the per-device "
                f"function instead, or run this one with jit."
            )


def _check_task_count(name, program, classes, cuts, groups, max_tasks: int) -> None:
    """Refuse, before building any, more than ``max_tasks`` tasks, suggesting a slicing
    that cuts each cut class into at most ``max_tasks ** (1 / classes per task)`` parts."""
    count = sum(math.prod(len(cuts[c]) for c in key) for _, key in groups)
    if count <= max_tasks:
        return
    spanned = max(len(key) for _, key in groups)
    parts = max(1, int(max_tasks ** (1 / spanned)))
    suggestion = [
        {d: min(parts, len(cuts[c]))
         for d in range(var.aval.ndim) if (c := classes.class_of[(var, d)]) in cuts}
        for var in program.invars
    ]  # fmt: skip
    raise ShardingError(
        f"shard_tasks({name}): this slicing makes {count} tasks, more than max_tasks="
        f"{max_tasks}. Cut more coarsely, e.g. slicing={suggestion} ({{}} keeps an argument "
        f"whole), or raise max_tasks."
    )


def _groups(program: Program, classes: Classes, cuts: dict) -> list[tuple[list[int], list[int]]]:
    """Outputs grouped by the cut classes they span, each group with those classes in the
    order the outputs' dimensions meet them: one task per block of each group, row-major."""
    groups: dict[frozenset[int], tuple[list[int], list[int]]] = {}
    for k, atom in enumerate(program.outvars):
        dims = range(atom.aval.ndim) if isinstance(atom, Var) else ()
        spanned = [c for d in dims if (c := classes.class_of[(atom, d)]) in cuts]
        outputs, order = groups.setdefault(frozenset(spanned), ([], []))
        outputs.append(k)
        order.extend(c for c in spanned if c not in order)
    return list(groups.values())


def _group_tasks(name, program, classes, cuts, group, values: list) -> list[Task]:
    outputs, key = group
    outvars = [program.outvars[k] for k in outputs]
    equations = needed_equations(program, outvars)
    bounds_of = _BlockBounds(classes, cuts, key)
    tasks = []
    for pieces in itertools.product(*(cuts[c] for c in key)):
        bounds_of.start_block(pieces)
        local, used = block_program(program, equations, outvars, bounds_of)
        reads = tuple((i, bounds_of(program.invars[i])) for i in used)
        label = f"{name} task {len(tasks)}"
        task_args = tuple(_slice(values[i], bounds) for i, bounds in reads)
        writer = BlockWriter(
            tuple(outputs),
            tuple(bounds_of(a) if isinstance(a, Var) else () for a in outvars),
        )
        tasks.append(Task(task_args, TaskFunction(local, reads, label), writer))
    return tasks


class _BlockBounds:
    """``bounds_of(var)``: the bounds of ``var``'s block in the current block of the group's
    classes ``key`` (each dimension of an uncut class whole)."""

    def __init__(self, classes: Classes, cuts: dict, key: list[int]) -> None:
        self.classes, self.cuts, self.key = classes, cuts, key
        self.dims: dict[Var, list[tuple[int, int, int]]] = {}  # (position in key, unit, size)
        self.block: tuple = ()

    def start_block(self, pieces: tuple) -> None:
        self.block = pieces

    def __call__(self, var: Var) -> Bounds:
        dims = self.dims.get(var)
        if dims is None:
            dims = self.dims[var] = [self._dim(var, d) for d in range(var.aval.ndim)]
        return tuple(
            (0, size) if k < 0 else (self.block[k][0] * unit, self.block[k][1] * unit)
            for k, unit, size in dims
        )

    def _dim(self, var: Var, d: int) -> tuple[int, int, int]:
        cls, size = self.classes.class_of[(var, d)], var.aval.shape[d]
        if cls not in self.cuts:
            return -1, 1, size
        if cls not in self.key:
            raise RuntimeError(f"internal error: a block of class {cls} reaches no result")
        return self.key.index(cls), self.classes.unit[(var, d)], size


def _elements(pieces, unit: int) -> tuple[tuple[int, int], ...]:
    return tuple((start * unit, stop * unit) for start, stop in pieces)


def _slice(value: Any, bounds: Bounds) -> Any:
    if not bounds:
        return value
    return value[tuple(slice(a, b) for a, b in bounds)]


def _argument_axes(program: Program, classes: Classes, cuts: dict, asked: dict):
    """Per argument: ``{axis: (start, stop) pieces}`` of the axes cut, and per axis how it
    is cut or why it is whole."""
    cut = [
        {
            d: _elements(cuts[classes.class_of[(var, d)]], classes.unit[(var, d)])
            for d in range(var.aval.ndim)
            if classes.class_of[(var, d)] in cuts
        }
        for var in program.invars
    ]
    axes = [
        [_axisbounds_text(classes, cuts, asked, var, d) for d in range(var.aval.ndim)]
        for var in program.invars
    ]
    return cut, axes


def _axisbounds_text(classes: Classes, cuts: dict, asked: dict, var: Var, d: int) -> str:
    cls = classes.class_of[(var, d)]
    if cls in cuts:
        return f"cut in {len(cuts[cls])} ({asked[cls]})"
    why = classes.why_whole(var, d)
    if why is None:
        return f"whole ({asked.get(cls, 'slicing leaves it whole')})"
    return f"whole: {why}"


def _nbytes(bounds: Bounds, dtype: np.dtype) -> int:
    return int(np.prod([b - a for a, b in bounds], dtype=np.int64)) * dtype.itemsize
