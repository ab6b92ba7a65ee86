"""A fused kernel compiled by numba into one loop: each element read once, every member
computed in registers, each value the kernel gives back written once (spmd/core/fused.py
calls it for large results when numba is installed and ``config.fusion_engine`` is
``"numba"``).

NumPy's chunk loop (spmd/core/fused_code.py) makes a pass over a cached chunk per member, and
a ``where`` costs five; here the whole kernel is one pass, vectorized by LLVM. A member
compiles when its result is computed exactly as NumPy's loop computes it: arithmetic,
comparisons and selections on float32, float64 and bool values of one dtype (each IEEE
operation rounds the same in any order of elements; no fused multiply-add is allowed), and
the float32 ``exp``, ``tanh`` and ``logistic`` of spmd/core/vector_math.py, within 1 or 2 ulps of
the exact result, as NumPy's are. Any other member, a final reduction, a weakly
typed operand or a broadcast other than of a scalar or of trailing rows keeps the kernel on
NumPy's loop. Compiling takes about a second per kernel, so only results of at least
``COMPILE_ELEMENTS`` elements use it.

Each float32 function is a long chain of dependent operations. A loop through several of
them, one after another, keeps the core waiting on each chain, so such a kernel runs in
stages: each function but the last ends one, and the stages take turns over chunks of
``STAGE_ELEMENTS`` elements, keeping what a later stage reads in a chunk-sized array
(the 10-step chain of benchmarks/auto_parallel.py: 2.7 ms per block in one pass, 2.2 in two).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import math
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.core.buffer_pool import POOL
from spmd.core.fused_code import Member, loop_dtypes
from spmd.core.program import Literal, Var

COMPILE_ELEMENTS = 1 << 18  # a kernel's result size from which compiling pays for itself
STAGE_ELEMENTS = 2048  # elements per stage pass: their kept values stay in the L1 cache
_DTYPES = frozenset(map(np.dtype, (np.float32, np.float64, np.bool_)))
_BINARY = {
    np.add: "{} + {}", np.subtract: "{} - {}", np.multiply: "{} * {}",
    np.true_divide: "{} / {}", np.greater: "{} > {}", np.greater_equal: "{} >= {}",
    np.less: "{} < {}", np.less_equal: "{} <= {}", np.equal: "{} == {}",
    np.not_equal: "{} != {}",
    # NumPy's: the second operand on a tie (so ±0 as NumPy orders them), NaN from either
    np.maximum: "({0} if {0} > {1} or {0} != {0} else {1})",
    np.minimum: "({0} if {0} < {1} or {0} != {0} else {1})",
}  # fmt: skip
_BOOLEAN = {
    np.logical_and: "{} & {}", np.logical_or: "{} | {}", np.logical_xor: "{} ^ {}",
    np.bitwise_and: "{} & {}", np.bitwise_or: "{} | {}", np.bitwise_xor: "{} ^ {}",
}  # fmt: skip
_UNARY = {np.negative: "-{}", np.positive: "{}", np.absolute: "abs({})", np.square: "{0} * {0}",
          np.sqrt: "np.sqrt({})"}  # fmt: skip
_FLOAT32 = {np.exp: "exp32({})", np.tanh: "tanh32({})"}  # vector_math's, float32 only
_CASTS = {np.dtype(np.float32): "np.float32({})", np.dtype(np.float64): "np.float64({})"}


@functools.cache
def available() -> bool:
    """Whether numba is installed (imported only when a kernel first compiles)."""
    return importlib.util.find_spec("numba") is not None


@dataclasses.dataclass(frozen=True)
class _Line:
    """One member of the loop body: the name it defines, its statement, the names it reads,
    and whether it ends a stage (it calls a vector_math function: a long chain of dependent
    operations, which the core overlaps across elements only when the loop that follows
    does not depend on it)."""

    name: str
    text: str
    reads: tuple[str, ...]
    ends_stage: bool


class Unsupported(Exception):
    """A member, operand or dtype that the compiled loop does not compute as NumPy does."""


def compiled_code(members: Sequence[Member], inputs: Sequence[Var], outputs: Sequence[Var]):
    """The kernel's compiled form, or None where numba is missing or a member keeps it on
    NumPy's loop (see the module docstring)."""
    if not available():
        return None
    try:
        return CompiledCode(members, inputs, outputs)
    except Unsupported:
        return None


class CompiledCode:
    """The loop body of a kernel as Python source for numba, and the compiled loop per
    layout of its operands (each one whole, one element, or trailing rows)."""

    def __init__(self, members: Sequence[Member], inputs: Sequence[Var], outputs: Sequence[Var]):
        for var in (*inputs, *(m.output for m in members)):
            if var.aval.dtype not in _DTYPES or var.aval.weak_type:
                raise Unsupported(var)
        self.inputs, self.outputs = tuple(inputs), tuple(outputs)
        self.constants: dict[str, Any] = {}
        self.names = {var: f"v{k}" for k, var in enumerate(inputs)}
        self.dtypes = {f"v{k}": var.aval.dtype for k, var in enumerate(inputs)}
        self.stages: list[list[_Line]] = [[]]  # a stage ends after each float32 function
        for index, member in enumerate(members):
            self.stages[-1].append(line := self._line(index, member))
            if line.ends_stage:
                self.stages.append([])
        if len(self.stages) > 1:  # the lines after the last function join its stage
            tail = self.stages.pop()
            self.stages[-1] += tail
        self._loops: dict[tuple, Any] = {}

    def _line(self, index: int, member: Member) -> _Line:
        dtypes = _loop_dtypes(member)
        args = [
            self._operand(atom, dtype) for atom, dtype in zip(member.inputs, dtypes, strict=True)
        ]
        self.names[member.output] = name = f"t{index}"
        self.dtypes[name] = member.output.aval.dtype
        expression = _expression(member, args, dtypes)
        reads = tuple(arg for arg in args if arg not in self.constants)
        long = member.primitive.rules.ufunc in _FLOAT32 or member.primitive.name == "logistic"
        return _Line(name, f"{name} = {expression}", reads, ends_stage=long)

    def _operand(self, atom, dtype: np.dtype) -> str:
        if isinstance(atom, Literal):
            name = f"c{len(self.constants)}"
            self.constants[name] = np.asarray(atom.value).astype(dtype)[()]
            return name
        if atom.aval.dtype != dtype:
            raise Unsupported(atom)  # NumPy's loop would cast it first
        return self.names[atom]

    def source(self, kinds: tuple, staged: bool) -> str:
        """The loop for operands of ``kinds`` (``full``, ``one`` or ``row`` each), over
        chunks of ``chunk`` elements of each row: a pass per stage over each chunk where
        ``staged``, with the values a later stage reads kept in chunk-sized arrays between
        them; else one pass (the caller makes a chunk a whole row)."""
        stages = self.stages if staged else [[line for stage in self.stages for line in stage]]
        outputs = [self.names[var] for var in self.outputs]
        windows = {  # what a stage reads each input from
            f"v{k}": {"one": f"v{k}", "row": f"I{k}[s:s + m]"}.get(
                kind, f"I{k}[base + s:base + s + m]"
            )
            for k, kind in enumerate(kinds)
        }
        read_later: set[str] = set()  # the values later stages read
        functions, calls = [], []
        for k in reversed(range(len(stages))):
            last = k == len(stages) - 1
            defined = {line.name for line in stages[k]}
            given = [  # the outputs it writes (the last one also those that are inputs)
                (o, name)
                for o, name in enumerate(outputs)
                if name in defined or (last and name in windows)
            ]
            reads = {name for line in stages[k] for name in line.reads} - defined
            reads |= {name for _, name in given if name in windows}
            writes = [(f"T{name[1:]}", name) for name in sorted(defined & read_later)]
            writes += [(f"O{o}", name) for o, name in given]
            read_later |= reads
            functions[:0] = _stage(k, sorted(reads), windows, stages[k], writes)
            calls[:0] = [f"stage{k}(m, {', '.join(_arguments(sorted(reads), windows, writes))})"]
        arrays = [f"I{k}" for k in range(len(kinds))] + [f"O{k}" for k in range(len(outputs))]
        kept = sorted(name for name in read_later if name not in windows)
        return "\n".join([
            *functions,
            "@_njit",
            f"def kernel(outer, inner, chunk, {', '.join(arrays)}):",
            *(f"    v{k} = I{k}[0]" for k, kind in enumerate(kinds) if kind == "one"),
            *(f"    T{name[1:]} = np.empty(chunk, np.{self.dtypes[name].name})" for name in kept),
            "    for i in range(outer):",
            "        base = i * inner",
            "        for s in range(0, inner, chunk):",
            "            m = min(chunk, inner - s)",
            *(f"            {call}" for call in calls),
        ])  # fmt: skip

    def __call__(self, operands: Sequence, shape: tuple, out: np.ndarray | None) -> tuple | None:
        """The kernel's results over ``shape``, or None where an operand or ``out`` is laid
        out otherwise than the compiled loops read and write."""
        layout = _layout(operands, self.inputs, shape)
        if layout is None:
            return None
        kinds, flats, inner = layout
        if out is not None and (
            not out.flags.writeable or any(np.may_share_memory(out, flat) for flat in flats)
        ):
            out = None  # LLVM's loop would check the overlap and run element by element
        results = []
        for k, var in enumerate(self.outputs):
            if k == 0 and out is not None:
                if out.shape != shape or out.dtype != var.aval.dtype or not out.flags.c_contiguous:
                    return None
                results.append(out)
            else:
                results.append(POOL.empty(shape, var.aval.dtype))
        staged = len(self.stages) > 1 and inner > STAGE_ELEMENTS
        key = (kinds, staged)
        if key not in self._loops:
            self._loops[key] = _compile(self.source(*key), tuple(self.constants.items()))
        loop = self._loops[key]
        if loop is None:
            return None
        outer, chunk = math.prod(shape) // inner, STAGE_ELEMENTS if staged else inner
        try:
            loop(outer, inner, chunk, *flats, *(r.reshape(-1) for r in results))
        except _NUMBA_ERRORS as error:  # raised while compiling, before the loop writes
            self._loops[key] = None
            _warn(f"a fused kernel did not compile ({type(error).__name__})")
            return None
        return tuple(results)


def _stage(k: int, reads: list, windows: dict, lines: list, writes: list) -> list[str]:
    """A stage's loop over ``m`` elements: it loads what it reads (an input's element, or
    a value an earlier stage kept), computes its lines and stores what it writes."""
    params, body = [], []
    for name in reads:
        if windows.get(name) == name:  # an input of one element, read by the kernel
            params.append(name)
        else:
            params.append(array := f"I{name[1:]}" if name in windows else f"T{name[1:]}")
            body.append(f"{name} = {array}[j]")
    body += [line.text for line in lines]
    body += [f"{array}[j] = {name}" for array, name in writes]
    params += [array for array, _ in writes]
    return [
        "@_njit",
        f"def stage{k}(m, {', '.join(params)}):",
        "    for j in range(m):",
        *(f"        {text}" for text in body),
    ]


def _arguments(reads: list, windows: dict, writes: list) -> list[str]:
    """What the kernel passes a stage, in the order of its parameters."""
    arguments = [windows.get(name, f"T{name[1:]}") for name in reads]
    return arguments + [
        f"{array}[base + s:base + s + m]" if array.startswith("O") else array for array, _ in writes
    ]


def _loop_dtypes(member: Member) -> tuple:
    """The dtypes the member's NumPy loop computes its operands in."""
    output = member.output.aval.dtype
    ufunc = member.primitive.rules.ufunc
    if ufunc is None:
        if member.primitive.name == "where":
            return (np.dtype(np.bool_), output, output)
        if member.primitive.name in ("logistic", "convert_element_type"):
            return (member.inputs[0].aval.dtype if isinstance(member.inputs[0], Var) else output,)
        raise Unsupported(member.primitive.name)
    dtypes = loop_dtypes(ufunc, member.inputs)
    if dtypes is None:
        raise Unsupported(ufunc)
    return dtypes[:-1]


def _expression(member: Member, args: list, dtypes: tuple) -> str:
    output = member.output.aval.dtype
    ufunc, name = member.primitive.rules.ufunc, member.primitive.name
    float32, floats = output == np.float32, all(d.kind == "f" for d in dtypes)
    if ufunc in _BINARY and floats:
        return _BINARY[ufunc].format(*args)
    if ufunc in _BOOLEAN and output == np.bool_ and all(d == np.bool_ for d in dtypes):
        return _BOOLEAN[ufunc].format(*args)
    if ufunc in _UNARY and floats:
        return _UNARY[ufunc].format(*args)
    if ufunc in _FLOAT32 and float32:
        return _FLOAT32[ufunc].format(*args)
    if name == "logistic" and float32:
        return f"logistic32({args[0]})"
    if name == "where":
        return "({1} if {0} else {2})".format(*args)
    if name == "convert_element_type" and output in _CASTS and isinstance(member.inputs[0], Var):
        return _CASTS[output].format(args[0])  # from float32, float64 or bool (checked)
    raise Unsupported(name)


def _layout(operands: Sequence, inputs: Sequence[Var], shape: tuple):
    """Per operand its kind (``full``: the result's shape; ``one``: one element; ``row``:
    the result's trailing axes) and its flat array, and the elements of one row."""
    kinds, flats, trailing = [], [], set()
    for value, var in zip(operands, inputs, strict=True):
        array = np.asarray(value)
        if array.dtype != var.aval.dtype:
            return None
        if array.size == 1:
            kinds.append("one")
        elif array.shape == shape and array.flags.c_contiguous:
            kinds.append("full")
        else:
            axes = array.shape[next((i for i, d in enumerate(array.shape) if d != 1), 0) :]
            if axes != shape[len(shape) - len(axes) :] or not array.flags.c_contiguous:
                return None
            kinds.append("row")
            trailing.add(len(axes))
        flats.append(array.reshape(-1))
    if len(trailing) > 1:
        return None
    inner = math.prod(shape[len(shape) - trailing.pop() :]) if trailing else math.prod(shape)
    return tuple(kinds), flats, max(inner, 1)


_COMPILED: dict[tuple, Any] = {}  # (source, constants) → numba's dispatcher, across kernels
_COMPILING = threading.Lock()  # the devices' threads meet a new kernel at once: one compiles
_NUMBA_ERRORS: tuple = ()  # numba's compile errors, once numba is imported


def _compile(source: str, constants: tuple):
    """numba's dispatcher for ``source`` (it compiles at its first call), or None where
    numba fails to import."""
    global _NUMBA_ERRORS
    key = (source, tuple((name, value.dtype.str, value.tobytes()) for name, value in constants))
    with _COMPILING:
        if key not in _COMPILED:
            try:
                import numba

                from spmd.core import vector_math
            except ImportError as error:
                _warn(f"numba does not import ({error})")
                return None
            _NUMBA_ERRORS = (numba.core.errors.NumbaError,)
            njit = numba.njit(error_model="numpy", nogil=True)
            scope = {"np": np, "_njit": njit, **vars(vector_math), **dict(constants)}
            exec(compile(source, "<spmd compiled kernel>", "exec"), scope)
            _COMPILED[key] = scope["kernel"]
    return _COMPILED[key]


@functools.cache
def _warn(reason: str) -> None:
    warnings.warn(
        f"spmd: {reason}; fused kernels run on NumPy's loop instead (the same numbers, "
        f"slower). SPMD_FUSION_ENGINE=numpy silences this.",
        RuntimeWarning,
        stacklevel=2,
    )
