"""The one interpreter: how an equation's implementation runs on values, and one last-use and
buffer-reuse analysis, for every caller that runs programs or primitives.

- ``runner`` / ``apply``: run one primitive on values with an array namespace ``xp``. A
  NumPy namespace calls the primitive's ufunc directly when it has no parameters, and an
  elementwise equation may write into a dying operand with ``out=``; a library without a
  kernel for the dtypes says so as an spmd error naming the backend.
- ``last_uses`` / ``reuse_plan``: over any sequence of steps described by what each reads
  and writes (``Access``): a Program's equations here, the executor's per-device steps there.
- ``eval_program`` and ``compile_program`` run a Program over an environment of values with
  both; eager evaluation, the executor and the blocks trace call ``runner`` or ``apply``.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spmd.config import config
from spmd.core.fused import fused_equation, kernel_member
from spmd.core.fusion import Candidate, Group
from spmd.core.fusion import plan as fusion_plan
from spmd.core.program import Literal, Program, Var
from spmd.errors import SpmdTypeError

_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Program → buffer_reuse


def cannot_compute(backend: str, what: str, error: NotImplementedError) -> SpmdTypeError:
    """The error for a library that has no kernel for an operation on some dtype (PyTorch
    stores uint16, uint32 and uint64 tensors but cannot add them)."""
    return SpmdTypeError(
        f"{what} on the {backend} backend: {error}. That library cannot compute this on these "
        f"dtypes; cast the operands to a dtype it computes with (int64, float32, ...), or "
        f"choose another backend with SPMD_BACKEND."
    )


def implementation(rules, xp, *, params: bool = True, out: bool = False) -> Callable[..., Any]:
    """What to call for a primitive with ``rules`` on ``xp``'s arrays: its NumPy ufunc itself
    (the fast path: NumPy, no parameters, no ``out=``), else its ``impl`` given ``xp``."""
    if xp is np and rules.ufunc is not None and not params and not out:
        return rules.ufunc
    return functools.partial(rules.impl, xp)


def runner(
    primitive,
    xp,
    backend: str,
    *,
    params: bool = True,
    out: bool = False,
    wrap: Callable | None = None,
) -> Callable[[Sequence[Any], dict], tuple]:
    """``run(values, params) -> outputs``: ``primitive`` applied with ``xp``, its dispatch
    decided once (see ``implementation``; ``params``/``out``: whether calls may pass any).
    ``wrap`` wraps the call (the executor's BLAS accounting)."""
    fn = implementation(primitive.rules, xp, params=params, out=out)
    if wrap is not None:
        fn = wrap(fn)
    multiple, name = primitive.multiple_results, primitive.name

    def run(values: Sequence[Any], params: dict) -> tuple:
        try:
            result = fn(*values, **params)
        except NotImplementedError as error:
            raise cannot_compute(backend, name, error) from None
        return result if multiple else (result,)

    return run


def apply(primitive, xp, values: Sequence[Any], params: dict, backend: str = "numpy") -> tuple:
    """``primitive`` applied once to ``values`` with ``xp``: its outputs, as a tuple."""
    try:
        result = primitive.rules.impl(xp, *values, **params)
    except NotImplementedError as error:
        raise cannot_compute(backend, primitive.name, error) from None
    return tuple(result) if primitive.multiple_results else (result,)


def eval_program(program: Program, consts: Sequence[Any], args: Sequence[Any], xp=np) -> list:
    """Run ``program`` on ``consts`` and ``args`` with the array namespace ``xp``.

    Each value is let go at its last use, and an elementwise equation writes its result into
    an operand that dies there when ``buffer_reuse`` allows it (NumPy only: ``out=``), so
    that a chain of steps holds two arrays at a time, not one per step. Python scalars stay
    Python scalars, so NumPy gives them its weak (NEP 50) promotion; a NumPy literal becomes
    an array of ``xp`` when ``xp`` is not NumPy.
    """
    env: dict = {}
    env.update(zip(program.constvars, consts, strict=True))
    env.update(zip(program.invars, args, strict=True))
    plan = _PLANS.get(program)
    if plan is None:
        plan = _PLANS[program] = buffer_reuse(program)
    last_use, reuse = plan
    if xp is not np:
        reuse = {}  # ``out=`` is NumPy's

        def read(atom):
            return literal_value(atom.value, xp) if isinstance(atom, Literal) else env[atom]

    else:

        def read(atom):
            return atom.value if isinstance(atom, Literal) else env[atom]

    backend = "numpy" if xp is np else getattr(xp, "__name__", str(xp))
    for index, eqn in enumerate(program.equations):
        inputs = [read(a) for a in eqn.inputs]
        params = eqn.params
        if index in reuse:
            params = {**params, "out": inputs[reuse[index]]}
        outs = apply(eqn.primitive, xp, inputs, params, backend)
        env.update(zip(eqn.outputs, outs, strict=True))
        for atom in eqn.inputs:
            if isinstance(atom, Var) and last_use.get(atom) == index:
                env.pop(atom, None)
    return [read(atom) for atom in program.outvars]


def literal_value(value: Any, xp) -> Any:
    """A Literal's value for the namespace ``xp``: Python scalars as they are (weakly typed),
    NumPy scalars and arrays as arrays of ``xp`` of their dtype (NumPy: as they are)."""
    if xp is np or not isinstance(value, np.ndarray | np.generic):
        return value
    name = "bool" if value.dtype == np.bool_ else value.dtype.name
    return xp.asarray(value, dtype=getattr(xp, name))


@dataclass(frozen=True)
class Access:
    """What one step of a program does to its values, for ``last_uses`` and ``reuse_plan``:
    the atoms it ``reads`` (in operand order; Literals are skipped), the values it
    ``writes``, whether those are ``fresh`` arrays (an elementwise result: it views none of
    its reads), whether it may write its one result ``into`` a dying operand's buffer, and
    per written value a ``key`` an operand's must equal for that (the executor: its
    sharding)."""

    reads: tuple = ()
    writes: tuple = ()
    fresh: bool = False
    into: bool = False
    keys: tuple | None = None


def last_uses(steps: Sequence[Access], results: Sequence[Any]) -> dict[Var, int]:
    """Each value's last use: the index of the last step that reads it; ``results`` (the
    program's outputs) live to the end, ``len(steps)``. A value nothing reads is absent."""
    last: dict[Var, int] = {}
    for index, step in enumerate(steps):
        last.update((a, index) for a in step.reads if isinstance(a, Var))
    last.update((a, len(steps)) for a in results if isinstance(a, Var))
    return last


def reuse_plan(steps: Sequence[Access], last_use: dict[Var, int]) -> dict[int, int]:
    """Step index → the operand (index into its ``reads``) whose buffer that step may write
    its result into: a value a ``fresh`` step made (an array nothing else views), dying
    there, with the result's shape, dtype and key."""
    made: dict[Var, Any] = {}
    viewed: set[Var] = set()
    for step in steps:
        if step.fresh:
            keys = step.keys if step.keys is not None else (None,) * len(step.writes)
            made.update(zip(step.writes, keys, strict=True))
        else:
            viewed.update(a for a in step.reads if isinstance(a, Var))
    plan = {}
    for index, step in enumerate(steps):
        if not step.into or len(step.writes) != 1:
            continue
        result = step.writes[0]
        key = step.keys[0] if step.keys is not None else None
        want = (result.aval.shape, result.aval.dtype)
        for k, atom in enumerate(step.reads):
            fits = (
                isinstance(atom, Var)
                and atom in made
                and made[atom] == key
                and atom not in viewed
                and last_use.get(atom) == index
                and (atom.aval.shape, atom.aval.dtype) == want
            )
            if fits:
                plan[index] = k
                break
    return plan


def buffer_reuse(program: Program) -> tuple[dict[Var, int], dict[int, int]]:
    """``last_uses`` and ``reuse_plan`` of ``program``'s equations: an elementwise equation
    (``writes_into``) makes fresh arrays, and may write a result with at least one dimension
    (NumPy gives scalars, not arrays, for 0-d results) into an operand."""
    steps = [
        Access(
            eqn.inputs,
            eqn.outputs,
            fresh=eqn.primitive.rules.writes_into,
            into=eqn.primitive.rules.writes_into
            and len(eqn.outputs) == 1
            and bool(eqn.outputs[0].aval.ndim),
        )
        for eqn in program.equations
    ]
    last_use = last_uses(steps, program.outvars)
    return last_use, reuse_plan(steps, last_use)


def compile_program(program: Program, xp=np) -> Callable[..., list]:
    """``program`` as one straight-line Python function ``run(*consts, *args) -> outputs``.

    The same evaluation as ``eval_program``, without its per-equation bookkeeping: each
    equation becomes one call (``implementation``: NumPy's ufuncs directly), values live in
    local variables, each is deleted at its last use, and on NumPy an elementwise equation
    writes into an operand that dies there (``buffer_reuse``) and runs of elementwise
    equations run as fused kernels (``fused_program``).
    """
    if xp is np:
        program = fused_program(program)
    names: dict = {}
    scope: dict[str, Any] = {"xp": xp, "writable": _writable}
    last_use, reuse = buffer_reuse(program)
    if xp is not np:
        reuse = {}  # ``out=`` is NumPy's
    kept = {a for a in program.outvars if isinstance(a, Var)}

    def name_of(atom) -> str:
        if isinstance(atom, Literal):
            key = f"lit{len(scope)}"
            scope[key] = literal_value(atom.value, xp)
            return key
        return names[atom]

    for var in (*program.constvars, *program.invars):
        names[var] = f"v{len(names)}"
    lines = [f"def run({', '.join(names.values())}):"]
    for i, eqn in enumerate(program.equations):
        into = reuse.get(i)
        fn = implementation(eqn.primitive.rules, xp, params=bool(eqn.params), out=into is not None)
        given = isinstance(fn, functools.partial)  # impl(xp, ...): pass xp, not a partial
        scope[f"impl{i}"] = fn.func if given else fn
        scope[f"params{i}"] = eqn.params
        args = [*(["xp"] if given else []), *(name_of(a) for a in eqn.inputs)]
        args += [f"**params{i}"] if eqn.params else []
        args += [f"out=writable({name_of(eqn.inputs[into])})"] if into is not None else []
        for var in eqn.outputs:
            names[var] = f"v{len(names)}"
        call = f"impl{i}({', '.join(args)})"
        outs = ", ".join(names[v] for v in eqn.outputs)
        if eqn.primitive.multiple_results:
            lines.append(f"    ({outs},) = {call}")
        else:
            lines.append(f"    {outs} = {call}")
        dying = {
            a: None
            for a in (*eqn.inputs, *eqn.outputs)
            if isinstance(a, Var) and a not in kept and last_use.get(a, -1) <= i
        }
        if dying:
            lines.append(f"    del {', '.join(names[v] for v in dying)}")
    lines.append(f"    return [{', '.join(name_of(a) for a in program.outvars)}]")
    exec(compile("\n".join(lines), f"<spmd program {id(program):x}>", "exec"), scope)
    return scope["run"]


def fused_program(program: Program) -> Program:
    """``program`` with each run of elementwise equations on values of one shape computed
    by one ``fused_elementwise`` equation (spmd/core/fusion.py), while ``config.fusion``
    is on; the program itself when nothing fuses."""
    if not config.fusion:
        return program
    equations = program.equations
    candidates = []
    for eqn in equations:
        member, final = _member(eqn)
        key = eqn.outputs[0].aval.shape if len(eqn.outputs) == 1 else None
        candidates.append(Candidate(eqn.inputs, eqn.outputs, member, key, True, final))
    order = fusion_plan(candidates, program.outvars)
    if not any(isinstance(entry, Group) for entry in order):
        return program
    fused = [
        equations[entry] if not isinstance(entry, Group) else fused_equation(entry.kernel)
        for entry in order
    ]
    return Program(program.constvars, program.invars, fused, program.outvars, program.consts)


def _member(eqn) -> tuple:
    if len(eqn.outputs) != 1:
        return None, False
    return kernel_member(eqn.primitive, eqn.params, eqn.inputs, eqn.outputs[0])


def _writable(value: Any) -> Any:
    """``value`` if a result may be written into it (a writable NumPy array of at least one
    dimension), else None: a program's inputs may be read-only or other arrays."""
    if type(value) is np.ndarray and value.flags.writeable and value.ndim:
        return value
    return None


_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Program → {xp: run}


def compiled(program: Program, xp=np) -> Callable[..., list]:
    """``compile_program(program, xp)``, made once: for a program that runs many times (a
    loop's body). A library without a kernel for some step is reported as ``eval_program``
    reports it, naming the primitive."""
    per_namespace = _COMPILED.setdefault(program, {})
    run = per_namespace.get(xp)
    if run is None:
        fast = compile_program(program, xp)

        def run(*values):
            try:
                return fast(*values)
            except NotImplementedError:
                n = len(program.constvars)
                return eval_program(program, values[:n], values[n:], xp)

        per_namespace[xp] = run
    return run
