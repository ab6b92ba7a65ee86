"""The type ``spmd.typeof`` reports, as JAX writes it: ``float32[8@x,4]{V:y}``.

Beyond shape, dtype and weak type, it carries the sharding over the mesh's Explicit axes
(JAX's sharding in types: a dimension split over Explicit axis ``x`` shows as ``8@x``; Auto
axes follow the data and do not show; ``auto_axes`` and ``explicit_axes`` change which are
which in their scope) and, inside shard_map, the mesh axes the value varies
over (``vma``: devices along them may hold different blocks).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from spmd.core.aval import ShapedArray
from spmd.sharding.abstract_mesh import axis_types_of
from spmd.sharding.mesh import AxisType, Mesh
from spmd.sharding.named import NamedSharding
from spmd.sharding.spec import PartitionSpec


@dataclass(frozen=True)
class ArrayType(ShapedArray):
    sharding: NamedSharding | None = None  # ``vma`` is ShapedArray's
    mesh_axes: tuple[str, ...] = field(default=(), compare=False, repr=False)  # vma's order

    def __str__(self) -> str:
        dims = [str(n) for n in self.shape]
        if self.sharding is not None:
            for d, entry in enumerate(self.sharding.spec):
                names = (entry,) if isinstance(entry, str) else tuple(entry or ())
                if names:
                    dims[d] += "@" + _names(names)
        text = f"{'~' if self.weak_type else ''}{self.dtype.name}[{','.join(dims)}]"
        vma = tuple(a for a in self.mesh_axes if a in self.vma)
        return text + ("{V:" + _names(vma) + "}" if vma else "")

    def __repr__(self) -> str:
        return f"ShapedArray({self})"

    @property
    def manual_axis_type(self) -> ManualAxisType:
        """JAX's ``typeof(x).manual_axis_type``: the Manual mesh axes the value varies over
        (``.varying``, JAX's ``vma``); spmd has no unreduced or reduced values."""
        return ManualAxisType(varying=self.vma)

    mat = manual_axis_type  # JAX's short name


@dataclass(frozen=True)
class ManualAxisType:
    """How a shard_map body's value relates to the Manual mesh axes, as JAX has it:
    ``varying`` names the axes along which devices may hold different blocks."""

    varying: frozenset[str] = frozenset()
    unreduced: frozenset[str] = frozenset()
    reduced: frozenset[str] = frozenset()


def _names(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else f"({','.join(names)})"


def explicit_type(aval: ShapedArray, mesh: Mesh, dims: Iterable[tuple[str, ...]]) -> ArrayType:
    """``aval`` split over ``mesh`` as ``dims``, showing the Explicit axes only."""
    explicit = {a for a, t in zip(mesh.axis_names, axis_types_of(mesh), strict=True)
                if t is AxisType.Explicit}  # fmt: skip
    entries = []
    for axes in dims:
        kept = tuple(a for a in axes if a in explicit)
        entries.append(None if not kept else kept[0] if len(kept) == 1 else kept)
    spec = PartitionSpec(*entries)
    return ArrayType(aval.shape, aval.dtype, aval.weak_type, NamedSharding(mesh, spec))


def varying_type(aval: ShapedArray, axis_names: tuple[str, ...], varying: Iterable[str]):
    """A shard_map body's value (one block per device) that varies over ``varying``, of
    the mesh axes ``axis_names``."""
    return ArrayType(
        aval.shape, aval.dtype, aval.weak_type, vma=frozenset(varying), mesh_axes=axis_names
    )
