"""Tracing: the current trace (a context variable), eager evaluation, and Program building."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

import numpy as np

from spmd.core.aval import ShapedArray, host_array, python_scalar_aval
from spmd.core.dtypes import canonical_dtype, canonical_host, x64_enabled
from spmd.core.methods import ArrayMethods
from spmd.core.program import Equation, Literal, Program, Var
from spmd.core.varying import NOT_VARYING, typed_results
from spmd.errors import SpmdError, SpmdTypeError

# Primitives (spmd/core/primitive.py) bind through the current trace defined here, so this
# module takes them as they come (``Primitive`` below is a name for the reader, not an import).
Primitive = Any

_PYTHON_SCALARS = frozenset({bool, int, float, complex})  # exact types: np.float64 is strong


class TracerBoolConversionError(SpmdError, TypeError):
    """A traced value was used where Python needs a concrete bool, int or array."""


class UnexpectedTracerError(SpmdError, RuntimeError):
    """A traced value escaped the function that was being traced."""


class Trace:
    def process(self, primitive: Primitive, args: tuple, params: dict) -> Any:
        raise NotImplementedError


def aval_of(x: Any) -> ShapedArray:
    """The abstract value of a tracer, an Array, a NumPy array or a Python scalar."""
    if isinstance(x, Tracer):
        return x.aval
    if type(x) in _PYTHON_SCALARS:
        return python_scalar_aval(x)
    value = x if hasattr(x, "shape") and hasattr(x, "dtype") else host_array(x, "argument")
    dtype = canonical_dtype(np.dtype(value.dtype))  # with x64 off, as a bind converts it
    return ShapedArray(tuple(value.shape), dtype, getattr(x, "weak_type", False))


class EvalTrace(Trace):
    """No tracing: apply each primitive to concrete values right away."""

    evaluate: Any = None  # (primitive, args, params) -> result: runtime's, set by spmd/__init__

    def process(self, primitive: Primitive, args: tuple, params: dict) -> Any:
        for x in args:
            if isinstance(x, Tracer):  # NumPy would hand it back to spmd, round and round
                raise x._escaped(f"in {primitive.name}")
        return self.evaluate(primitive, args, params)


class ProgramTrace(Trace):
    """Records every primitive applied to its tracers as an equation of a Program."""

    def __init__(self) -> None:
        self.equations: list[Equation] = []
        self.invars: list[Var] = []
        self.constvars: list[Var] = []
        self.consts: list[Any] = []
        self._const_ids: dict[int, Var] = {}
        self.active = True
        # (trace, var) -> the type ``spmd.typeof`` reports, set by the transformation that
        # knows more than avals (how jit's arguments lie, the mesh axes of shard_map's body)
        self.types: Any = None

    def new_arg(self, aval: ShapedArray) -> Tracer:
        var = Var(aval)
        self.invars.append(var)
        return Tracer(self, var)

    def so_far(self, outvars: list[Var]) -> Program:
        """The program traced so far, returning ``outvars``."""
        return Program(self.constvars, self.invars, self.equations, outvars, self.consts)

    def atom(self, x: Any):
        """The Program atom for ``x``: a tracer's variable, a literal, or a constant operand.

        A value of an enclosing trace that is still running (a shard_map, pmap or inner jit
        body closing over its caller's traced values; the primal values a derivative needs)
        becomes a constant operand, which the enclosing trace supplies, as in JAX."""
        if isinstance(x, Tracer):
            if x._trace is self:
                return x.node
            if not getattr(x._trace, "active", False):
                raise x._escaped("in another traced function")
        if isinstance(x, np.ndarray | np.generic) and not x64_enabled():
            x = canonical_host(x, "a constant")  # what its 32-bit type says it holds
        aval = aval_of(x)
        if type(x) in _PYTHON_SCALARS or (aval.ndim == 0 and isinstance(x, np.generic)):
            return Literal(x, aval)
        var = self._const_ids.get(id(x))
        if var is None:  # a constant is the same on every device
            var = Var(aval.strong().varying(NOT_VARYING))
            self._const_ids[id(x)] = var
            self.constvars.append(var)
            self.consts.append(x)
        return var

    def process(self, primitive: Primitive, args: tuple, params: dict) -> Any:
        if not self.active:
            raise UnexpectedTracerError("This trace has finished; its values cannot be used.")
        inputs = [self.atom(a) for a in args]
        outputs = [Var(aval) for aval in typed_results(primitive, [a.aval for a in inputs], params)]
        self.equations.append(Equation(primitive, inputs, outputs, params))
        tracers = [Tracer(self, v) for v in outputs]
        return tracers if primitive.multiple_results else tracers[0]

    def finish(self, invars: list[Var], outs: list[Any]) -> Program:
        outvars = [self.atom(o) for o in outs]
        self.active = False
        program = Program(self.constvars, invars, self.equations, outvars, self.consts)
        for check in PROGRAM_CHECKS:
            check(program)
        return program


# Functions called on every Program a trace finishes (jit, grad's linear programs, the
# bodies of shard_map, pmap and their derivatives): none in use; the test suite adds
# spmd.core.typecheck.typecheck (tests/conftest.py).
PROGRAM_CHECKS: list[Callable[[Program], None]] = []


EVAL_TRACE = EvalTrace()
_current: contextvars.ContextVar[Trace] = contextvars.ContextVar("spmd_trace", default=EVAL_TRACE)


def current_trace() -> Trace:
    return _current.get()


class tracing:
    """``with tracing(trace):`` makes ``trace`` current for the block."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace

    def __enter__(self) -> Trace:
        self._token = _current.set(self.trace)
        return self.trace

    def __exit__(self, *exc) -> None:
        _current.reset(self._token)


class Tracer(ArrayMethods):
    """A stand-in for an array while a function is traced: it has a shape and dtype, no data."""

    __array_priority__ = 1000

    def __init__(self, trace: ProgramTrace, var: Var) -> None:
        self._trace = trace
        self.node = var  # the Program variable this tracer stands for

    @property
    def aval(self) -> ShapedArray:
        return self.node.aval

    @property
    def shape(self) -> tuple[int, ...]:
        return self.node.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.node.aval.dtype

    @property
    def weak_type(self) -> bool:
        return self.node.aval.weak_type

    def __repr__(self) -> str:
        return f"Traced<{self.aval}>"

    def _vma(self) -> frozenset[str]:
        """The mesh axes this value varies over inside a shard_map or pmap body (empty
        elsewhere): its abstract value's, computed when it was made (spmd/core/varying.py)."""
        return self.node.aval.vma

    def _escaped(self, use: str) -> UnexpectedTracerError:
        """The error for using this tracer outside the trace that made it."""
        if self._trace.active:
            how = "while its trace is still running, outside it"
        else:
            how = "after the trace that made it finished"
        return UnexpectedTracerError(
            f"A traced value {self.aval} was used {use} {how}: it escaped the function "
            f"being traced (through a global, a closure or a container that outlived the call) "
            f"and holds no data. Return it from the traced function, or pass it in as an "
            f"argument, instead."
        )

    def _concrete_error(self, what: str) -> SpmdError:
        if not self._trace.active:
            return self._escaped("for its " + what.removeprefix("The ").lower())
        return TracerBoolConversionError(f"{what} of {self._why_not_concrete()}")

    def _why_not_concrete(self) -> str:
        return (
            f"a traced value {self.aval} is not known while tracing: its data exists only "
            f"when the program runs. Use spmd.numpy.where(cond, a, b) instead of `if`, or mark "
            f"the argument static with jit(..., static_argnums=...)."
        )

    def __bool__(self) -> bool:
        raise self._concrete_error("The truth value")

    def __index__(self) -> int:
        raise self._concrete_error("The integer value")

    def __int__(self) -> int:
        raise self._concrete_error("The integer value")

    def __float__(self) -> float:
        raise self._concrete_error("The float value")

    def __array__(self, dtype=None, copy=None):
        raise self._concrete_error("The NumPy value")

    def _unsupported(self, name: str, func, args: tuple, kwargs: dict):
        if not self._trace.active:
            raise self._escaped(f"in {name}")
        raise SpmdTypeError(
            f"{name} was called on a traced value {self.aval}, but spmd.numpy has no {name!r} "
            f"yet, so it cannot be traced. Write it with spmd.numpy functions, or compute it "
            f"outside the jitted function."
        )

    def __len__(self) -> int:
        if not self.shape:
            raise SpmdTypeError("len() of a 0-d traced value")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise SpmdTypeError("iteration over a 0-d traced value")
        return (self[i] for i in range(self.shape[0]))

    __hash__ = None
