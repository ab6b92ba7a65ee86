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
"""

from __future__ import annotations

import functools
import importlib.util
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.core.buffer_pool import POOL
from spmd.core.fused_code import Member, loop_dtypes
from spmd.core.program import Literal, Var

COMPILE_ELEMENTS = 1 << 18  # a kernel's result size from which compiling pays for itself
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
        self.body = [self._line(index, member) for index, member in enumerate(members)]
        self._loops: dict[tuple, Any] = {}

    def _line(self, index: int, member: Member) -> str:
        dtypes = _loop_dtypes(member)
        args = [
            self._operand(atom, dtype) for atom, dtype in zip(member.inputs, dtypes, strict=True)
        ]
        self.names[member.output] = name = f"t{index}"
        return f"{name} = {_expression(member, args, dtypes)}"

    def _operand(self, atom, dtype: np.dtype) -> str:
        if isinstance(atom, Literal):
            name = f"c{len(self.constants)}"
            self.constants[name] = np.asarray(atom.value).astype(dtype)[()]
            return name
        if atom.aval.dtype != dtype:
            raise Unsupported(atom)  # NumPy's loop would cast it first
        return self.names[atom]

    def source(self, kinds: tuple) -> str:
        """The loop for operands of ``kinds`` (``full``, ``one`` or ``row`` each)."""
        ins = [f"I{k}" for k in range(len(kinds))]
        outs = [f"O{k}" for k in range(len(self.outputs))]
        lines = [f"def kernel(outer, inner, {', '.join(ins + outs)}):"]
        lines += [f"    v{k} = I{k}[0]" for k, kind in enumerate(kinds) if kind == "one"]
        lines += ["    for i in range(outer):", "        base = i * inner"]
        lines.append("        for j in range(inner):")
        reads = {"full": "I{k}[base + j]", "row": "I{k}[j]"}
        lines += [f"            v{k} = {reads[kind].format(k=k)}"
                  for k, kind in enumerate(kinds) if kind != "one"]  # fmt: skip
        lines += [f"            {line}" for line in self.body]
        lines += [f"            O{k}[base + j] = {self.names[var]}"
                  for k, var in enumerate(self.outputs)]  # fmt: skip
        return "\n".join(lines)

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
        if kinds not in self._loops:
            self._loops[kinds] = _compile(self.source(kinds), tuple(self.constants.items()))
        loop = self._loops[kinds]
        if loop is None:
            return None
        try:
            loop(int(np.prod(shape)) // inner, inner, *flats, *(r.reshape(-1) for r in results))
        except _NUMBA_ERRORS as error:  # raised while compiling, before the loop writes
            self._loops[kinds] = None
            _warn(f"a fused kernel did not compile ({type(error).__name__})")
            return None
        return tuple(results)


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
    inner = int(np.prod(shape[len(shape) - trailing.pop() :])) if trailing else int(np.prod(shape))
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
            scope = {"np": np, **vars(vector_math), **dict(constants)}
            exec(compile(source, "<spmd compiled kernel>", "exec"), scope)
            _COMPILED[key] = numba.njit(error_model="numpy", nogil=True)(scope["kernel"])
    return _COMPILED[key]


@functools.cache
def _warn(reason: str) -> None:
    warnings.warn(
        f"spmd: {reason}; fused kernels run on NumPy's loop instead (the same numbers, "
        f"slower). SPMD_FUSION_ENGINE=numpy silences this.",
        RuntimeWarning,
        stacklevel=2,
    )
