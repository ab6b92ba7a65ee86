"""``spmd.typeof``: a value's type as JAX reports it, for Arrays, traced values and the
values of a shard_map body (spmd/sharding/array_type.py says what it shows)."""

from __future__ import annotations

from typing import Any

from spmd.core.program import Var
from spmd.core.trace import ProgramTrace, Tracer, aval_of
from spmd.runtime.array import Array
from spmd.sharding.array_type import ArrayType, explicit_type, varying_type
from spmd.sharding.mesh import Mesh
from spmd.sharding.named import NamedSharding
from spmd.sharding.propagate import propagate
from spmd.sharding.rules import ValueSharding
from spmd.transforms.blocks_trace import BlocksTracer


def typeof(x: Any) -> ArrayType:
    """The type of ``x``: shape, dtype, sharding over Explicit mesh axes, varying axes.

    Example: on ``make_mesh((2, 4), ('x', 'y'), axis_types=(AxisType.Explicit,) * 2)``,
    ``typeof(device_put(np.ones((8, 4)), P('x')))`` is ``float64[8@x,4]``.
    """
    if isinstance(x, BlocksTracer):
        return varying_type(x.aval, x._trace.mesh.axis_names, x.varying)
    if isinstance(x, Tracer) and isinstance(x._trace, ProgramTrace) and x._trace.types is not None:
        return x._trace.types(x._trace, x.node)
    aval = aval_of(x)
    if isinstance(x, Array) and isinstance(x.sharding, NamedSharding):
        return explicit_type(aval, x.sharding.mesh, x.sharding.spec.dims(aval.ndim))
    return ArrayType(aval.shape, aval.dtype, aval.weak_type)


def shown_vma(x: Any) -> frozenset[str]:
    """The varying axes ``typeof(x)`` shows, found without the sharding it also computes:
    those of a shard_map body's value (its abstract value's, or an eager body's block's)."""
    if isinstance(x, BlocksTracer):
        return x.varying
    if isinstance(x, Tracer) and isinstance(getattr(x._trace, "types", None), VaryingTypes):
        return x.aval.vma
    return frozenset()


class PropagatedTypes:
    """Types inside jit: each value's sharding as propagation gives it from the arguments'
    (over the program traced so far)."""

    def __init__(self, mesh: Mesh, in_shardings: list[ValueSharding | None]) -> None:
        self.mesh = mesh
        self.in_shardings = in_shardings

    def __call__(self, trace: ProgramTrace, var: Var) -> ArrayType:
        program = trace.so_far([var])
        found = propagate(program, self.mesh, self.in_shardings).shardings.get(var)
        dims = found.dims if found is not None else ((),) * var.aval.ndim
        return explicit_type(var.aval, self.mesh, dims)


class VaryingTypes:
    """Types inside a traced shard_map or pmap body over mesh axes ``axis_names``: the axes
    each value varies over, which its abstract value carries."""

    def __init__(self, axis_names: tuple[str, ...]) -> None:
        self.axis_names = axis_names

    def __call__(self, trace: ProgramTrace, var: Var) -> ArrayType:
        return varying_type(var.aval, self.axis_names, var.aval.vma)
