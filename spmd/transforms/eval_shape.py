"""``eval_shape`` and ``ShapeDtypeStruct``, as in JAX: a function's output shapes, dtypes and
shardings, found by tracing it (as ``jit`` does) without computing anything."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.runtime.array import Array
from spmd.sharding.mesh import current_mesh
from spmd.sharding.named import NamedSharding, Sharding
from spmd.sharding.spec import PartitionSpec
from spmd.transforms.jit import Jitted
from spmd.tree_util import tree_map, tree_unflatten


class ShapeDtypeStruct:
    """The shape, dtype, sharding and weak type of an array, without its data.

    Example: ``ShapeDtypeStruct((8, 4), np.float32, sharding=NamedSharding(mesh, P('x')))``.
    """

    __slots__ = ("_sharding", "dtype", "shape", "weak_type")

    def __init__(self, shape, dtype, *, sharding=None, weak_type: bool = False) -> None:
        shape = tuple(shape)
        if any(n is None or int(n) != n or n < 0 for n in shape):
            raise ShapeError(
                f"ShapeDtypeStruct: shape {shape} must be a tuple of non-negative ints."
            )
        if dtype is None:
            raise SpmdTypeError("ShapeDtypeStruct: dtype must be given (e.g. np.float32).")
        if sharding is not None and not isinstance(sharding, (Sharding, PartitionSpec)):
            raise SpmdTypeError(
                f"ShapeDtypeStruct: sharding must be a Sharding (e.g. NamedSharding(mesh, "
                f"P('x'))) or a PartitionSpec, got {type(sharding).__name__}."
            )
        if isinstance(sharding, NamedSharding):
            sharding.spec.dims(len(shape))  # checks that the spec fits the rank
        object.__setattr__(self, "shape", tuple(int(n) for n in shape))
        object.__setattr__(self, "dtype", np.dtype(dtype))
        object.__setattr__(self, "_sharding", sharding)
        object.__setattr__(self, "weak_type", bool(weak_type))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"ShapeDtypeStruct is immutable: cannot set {name}.")

    @property
    def sharding(self):
        """The sharding; a PartitionSpec given to the constructor is read on the mesh in
        scope (``set_mesh``/``use_mesh``)."""
        if isinstance(self._sharding, PartitionSpec):
            mesh = current_mesh()
            if mesh is None:
                raise SpmdTypeError(
                    "ShapeDtypeStruct: its sharding is a PartitionSpec, which needs a mesh "
                    "in scope; use spmd.set_mesh(mesh), or give NamedSharding(mesh, spec)."
                )
            return NamedSharding(mesh, self._sharding)
        return self._sharding

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def update(self, **changes: Any) -> ShapeDtypeStruct:
        """A copy with ``shape``, ``dtype``, ``sharding`` or ``weak_type`` replaced."""
        fields = dict(
            shape=self.shape, dtype=self.dtype, sharding=self._sharding, weak_type=self.weak_type
        )
        unknown = set(changes) - set(fields)
        if unknown:
            raise SpmdTypeError(f"ShapeDtypeStruct.update: no fields {sorted(unknown)}.")
        fields.update(changes)
        shape, dtype = fields.pop("shape"), fields.pop("dtype")
        return ShapeDtypeStruct(shape, dtype, **fields)

    def _key(self) -> tuple:
        return (self.shape, self.dtype, self._sharding, self.weak_type)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShapeDtypeStruct) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        sharding = f", sharding={self._sharding}" if self._sharding is not None else ""
        weak = f", weak_type={self.weak_type}" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sharding}{weak})"

    __str__ = __repr__


def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fun(*args, **kwargs)``'s output as a pytree of ShapeDtypeStructs, found by tracing
    ``fun`` as ``jit`` would, computing nothing. ``args`` may be arrays, scalars or
    ShapeDtypeStructs; their shardings propagate to the outputs' as under ``jit``.

    Example: ``eval_shape(lambda x: x @ x.T, ShapeDtypeStruct((8, 4), np.float32))`` is
    ``ShapeDtypeStruct(shape=(8, 8), dtype=float32, ...)``.
    """
    args, kwargs = tree_map(_stand_in, (args, kwargs))
    traced, _ = Jitted(fun).trace(*args, **kwargs)
    program = traced.program
    if traced.partitioned is None:
        shardings = [sharding for _, sharding, _ in traced.outputs]
    else:
        mesh = traced.partitioned.mesh
        shardings = []
        for (_, found), (_, moved, _) in zip(
            traced.partitioned.outputs, traced.outputs, strict=True
        ):
            spec = found.spec if found is not None else PartitionSpec()
            shardings.append(moved if moved is not None else NamedSharding(mesh, spec))
    structs = [
        ShapeDtypeStruct(aval.shape, aval.dtype, sharding=sharding, weak_type=aval.weak_type)
        for aval, sharding in zip(program.out_avals, shardings, strict=True)
    ]
    return tree_unflatten(traced.out_tree, structs)


def _stand_in(x: Any) -> Any:
    """What tracing sees of an argument: a ShapeDtypeStruct with a NamedSharding becomes an
    Array without data (its sharding places it on the mesh, as an Array argument's would);
    other values are used as they are (their shapes and dtypes are all tracing reads)."""
    if isinstance(x, ShapeDtypeStruct) and isinstance(x.sharding, NamedSharding):
        return Array._from_buffers(x.sharding, {}, x.shape, x.dtype)
    if isinstance(x, (ShapeDtypeStruct, Array)):
        return x
    aval_of(x)  # rejects what is not an array, a scalar or a struct, naming it
    return x
