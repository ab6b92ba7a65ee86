"""Primitives and their one rules record: shape, implementation, and (later) sharding and AD."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spmd.core.aval import host_array
from spmd.core.dtypes import TO_32, canonical_host, is_canonical, x64_enabled
from spmd.core.trace import current_trace


@dataclass(frozen=True)
class CollectiveRules:
    """One collective's record (spmd/prims/collective.py holds them): what the per-device
    lowering, the executor, the blocks trace and printed programs ask of it.

    ``name`` is how a program writes it (psum, all_gather, ..., broadcast); ``kind`` is what
    it does, for printing and counting ("all-reduce", "all-gather", ...);
    ``bytes(params, avals)`` is the bytes it moves between devices given each device
    position's block aval; ``run(comm, mesh, buffers, shapes, params)`` runs it on this
    process's devices' NumPy ``buffers`` (by device) through the Communicator ``comm``'s
    verbs (all_reduce, reduce_scatter, all_gather, all_to_all, permute, broadcast), with
    ``shapes`` every mesh position's block shape, and returns the results by device.
    """

    name: str
    kind: str
    bytes: Callable[[dict, Sequence], int]
    run: Callable[..., dict]

    def written(self, params: dict) -> str:
        """As the program wrote it: the psum primitive with op "max" is a pmax."""
        op = params.get("op", "sum")
        return self.name if op == "sum" else self.name.replace("sum", op)


@dataclass(frozen=True)
class Rules:
    """Everything one primitive needs, in one place.

    ``shape(*avals, **params)`` returns the output aval (or a tuple of them) and raises
    ShapeError on bad input; ``impl(xp, *arrays, **params)`` computes on local arrays with
    the array namespace ``xp`` (NumPy today); ``sharding(in_avals, out_avals, **params)``
    returns the primitive's ``Factors`` (spmd/sharding/rules.py; None: operands are gathered
    whole); ``local_params(params, in_shapes, out_shapes, in_dtypes, out_bounds)`` rewrites
    shape-valued parameters for one device's blocks (``out_bounds``: each result block's
    (start, stop) per dimension in the global result); ``writes_into`` says ``impl`` takes
    ``out=`` (a dead operand's buffer of the result's shape and dtype, reused); ``ufunc``
    is the NumPy ufunc ``impl`` applies, if that is all it does; ``calls_blas`` says ``impl``
    runs on BLAS threads (contractions), which the executor shares out among devices;
    ``jvp``, ``transpose`` and ``batch`` serve grad, vjp, jvp and vmap; ``own_axis`` serves
    vmap for a collective over the vmapped axis; ``collective`` is a collective's record.
    """

    shape: Callable[..., Any]
    impl: Callable[..., Any]
    sharding: Callable[..., Any] | None = None
    local_params: Callable[..., dict] | None = None
    writes_into: bool = False
    ufunc: Any = None  # the NumPy ufunc ``impl`` applies, which NumPy backends may call direct
    calls_blas: bool = False
    # Calls of per-device programs (shard_map, pmap) and control flow in them:
    # per_device(lowering, eqn, inputs, uneven) emits the body's steps
    # (spmd/transforms/per_device_lowering.py) and returns the results as held there, or None
    # to run the equation as one step on each device; ``uneven``: devices' bodies differ.
    per_device: Callable[..., Any] | None = None
    # varying(eqn, operands) -> per result, the mesh axes it varies over, given the operands'
    # (collectives and nested pmaps; other primitives vary over their operands' union).
    varying: Callable[..., Any] | None = None
    # Transformations (spmd/core/ad.py, spmd/core/batching.py say what each takes):
    # jvp(primals, primal_out, tangents, **params) -> tangent_out (None: zero);
    # transpose(cotangent, *operands, **params) -> a cotangent (or None) per operand;
    # batch(args, dims, **params) -> (out, out_dim).
    jvp: Callable[..., Any] | None = None
    transpose: Callable[..., Any] | None = None
    batch: Callable[..., Any] | None = None
    # own_axis(trace, values, dims, params) -> (out, out_dim): a collective (or axis_index)
    # over a vmap's own axis name, which acts on the batch dimension (spmd/core/batching.py).
    own_axis: Callable[..., Any] | None = None
    # A collective's record (None: not one): its kind, bytes and runner.
    collective: CollectiveRules | None = None
    # Calls of a traced function (custom_jvp, custom_vjp): inline(params) -> the Program (no
    # constants) whose equations replace the call before partitioning (spmd/core/inline.py).
    inline: Callable[[dict], Any] | None = None


_BY_NAME: dict[str, Primitive] = {}


def primitive_named(name: str) -> Primitive:
    """The primitive called ``name`` (how a pickled Program finds its primitives again)."""
    return _BY_NAME[name]


class Primitive:
    """A named operation; ``bind`` hands it to whichever trace is current.

    Names are unique: a Program pickles each primitive as its name.
    """

    def __init__(self, name: str, rules: Rules, multiple_results: bool = False) -> None:
        if name in _BY_NAME:
            raise ValueError(f"internal error: two primitives are called {name!r}")
        self.name = name
        self.rules = rules
        self.multiple_results = multiple_results
        _BY_NAME[name] = self

    def __reduce__(self):
        return primitive_named, (self.name,)

    def bind(self, *args: Any, **params: Any) -> Any:
        if x64_enabled():
            return current_trace().process(self, args, params)
        return _bind_32(self, args, params)

    def __repr__(self) -> str:
        return self.name


# ---- x64 off: the one place where operations meet the 32-bit mode (spmd/core/dtypes.py)


def _bind_32(primitive: Primitive, args: tuple, params: dict) -> Any:
    """``primitive`` bound with x64 off: operands of a 64-bit dtype are converted to 32 bits
    first, and results that NumPy's promotion (what the shape rule and the implementation
    follow) makes 64-bit are converted after, so every trace sees the 32-bit type."""
    if primitive is not _convert():  # converting from 64 bits is what it is for
        args = tuple(_operand_32(x) for x in args)
    out = current_trace().process(primitive, args, params)
    if primitive.multiple_results:
        return type(out)(_result_32(o) for o in out)
    return _result_32(out)


def _operand_32(x: Any) -> Any:
    if type(x) is list:  # nested lists of numbers: data, whose aval is 32-bit (aval_of)
        return canonical_host(host_array(x, "an operand"), "an operand")
    dtype = getattr(x, "dtype", None)
    if not isinstance(dtype, np.dtype) or is_canonical(dtype) or getattr(x, "weak_type", False):
        return x  # 32-bit values; Python scalars and weak values promote by their kind only
    if isinstance(x, np.ndarray | np.generic):
        return canonical_host(x, "an operand")
    return _convert().bind(x, new_dtype=TO_32[dtype])


def _result_32(x: Any) -> Any:
    """A result in its 32-bit type, strong: a weak result (a Python scalar's stand-in, whose
    implementation may give a Python scalar, that is NumPy's 64-bit default) becomes an
    array of its dtype, so that every value a bind returns holds the dtype its type says."""
    dtype = getattr(x, "dtype", None)
    if not isinstance(dtype, np.dtype):
        return x
    if is_canonical(dtype) and not getattr(x, "weak_type", False):
        return x
    return _convert().bind(x, new_dtype=TO_32.get(dtype, dtype))


def _convert() -> Primitive:
    return _BY_NAME["convert_element_type"]
