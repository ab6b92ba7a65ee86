"""AbstractMesh (a mesh's axis names, sizes and types, without devices) and the sharding mode
in scope: which mesh axes are Explicit here, as ``auto_axes`` and ``explicit_axes`` change it."""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator
from dataclasses import dataclass

from spmd.sharding.mesh import AxisType, Mesh, current_mesh


@dataclass(frozen=True)
class AbstractMesh:
    """What the types of values need of a mesh: its axes, their sizes and their types.

    Example: ``spmd.sharding.get_abstract_mesh()`` under ``set_mesh(mesh)``.
    """

    axis_sizes: tuple[int, ...]
    axis_names: tuple[str, ...]
    axis_types: tuple[AxisType, ...]

    @staticmethod
    def of(mesh: Mesh) -> AbstractMesh:
        return AbstractMesh(tuple(mesh.devices.shape), mesh.axis_names, mesh.axis_types)

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.axis_sizes, strict=True))

    @property
    def size(self) -> int:
        return math.prod(self.axis_sizes)

    @property
    def empty(self) -> bool:
        return not self.axis_names

    def with_axis_types(self, axes: tuple[str, ...], kind: AxisType) -> AbstractMesh:
        types = tuple(kind if a in axes else t for a, t in zip(self.axis_names, self.axis_types,
                                                                strict=True))  # fmt: skip
        return AbstractMesh(self.axis_sizes, self.axis_names, types)

    def __repr__(self) -> str:
        axes = ", ".join(f"{n!r}: {s}" for n, s in zip(self.axis_names, self.axis_sizes,
                                                         strict=True))  # fmt: skip
        types = ", ".join(t.name for t in self.axis_types)
        return f"AbstractMesh({axes or '()'}, axis_types=({types}))"


_override: contextvars.ContextVar[AbstractMesh | None] = contextvars.ContextVar(
    "spmd_abstract_mesh", default=None
)


def get_abstract_mesh() -> AbstractMesh:
    """The mesh in scope, without devices, with its axis types as they hold here (inside
    ``auto_axes`` its axes are Auto); an empty one when no mesh is set."""
    override = _override.get()
    if override is not None:
        return override
    mesh = current_mesh()
    return AbstractMesh.of(mesh) if mesh is not None else AbstractMesh((), (), ())


@contextlib.contextmanager
def axis_types_in_scope(axes: tuple[str, ...], kind: AxisType) -> Iterator[AbstractMesh]:
    """Inside the block, mesh axes ``axes`` of the mesh in scope are of type ``kind``."""
    token = _override.set(get_abstract_mesh().with_axis_types(axes, kind))
    try:
        yield _override.get()
    finally:
        _override.reset(token)


def axis_types_of(mesh: Mesh) -> tuple[AxisType, ...]:
    """``mesh``'s axis types as they hold here: those of the mesh in scope when it has the
    same axes (auto_axes and explicit_axes change them), else its own."""
    scope = get_abstract_mesh()
    if scope.axis_names == mesh.axis_names and scope.axis_sizes == tuple(mesh.devices.shape):
        return scope.axis_types
    return mesh.axis_types
