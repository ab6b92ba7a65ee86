"""The Array API standard's inspection namespace: ``spmd.numpy.__array_namespace_info__()``
says what spmd.numpy supports (capabilities), its default dtypes and its devices."""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.dtypes import canonical_dtype
from spmd.sharding.device import devices

_DTYPES = {
    "bool": np.dtype(np.bool_),
    **{f"int{b}": np.dtype(f"int{b}") for b in (8, 16, 32, 64)},
    **{f"uint{b}": np.dtype(f"uint{b}") for b in (8, 16, 32, 64)},
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "complex64": np.dtype(np.complex64),
    "complex128": np.dtype(np.complex128),
}
_KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
}
_KINDS["integral"] = _KINDS["signed integer"] + _KINDS["unsigned integer"]
_KINDS["numeric"] = _KINDS["integral"] + _KINDS["real floating"] + _KINDS["complex floating"]


class NamespaceInfo:
    """What ``__array_namespace_info__()`` returns."""

    def capabilities(self) -> dict[str, Any]:
        # Eagerly, boolean masks and unique/nonzero give data-dependent shapes (JAX's size=
        # makes them static inside jit).
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> Any:
        return devices()[0]

    def devices(self) -> list[Any]:
        return list(devices())

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        defaults = {
            "real floating": np.dtype(np.float64),
            "complex floating": np.dtype(np.complex128),
            "integral": np.dtype(np.int64),
            "indexing": np.dtype(np.intp),
        }
        return {kind: canonical_dtype(d) for kind, d in defaults.items()}  # x64 off: 32 bits

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, np.dtype]:
        if kind is None:
            return dict(_DTYPES)
        kinds = kind if isinstance(kind, tuple) else (kind,)
        names: set[str] = set()
        for k in kinds:
            if isinstance(k, str):
                if k not in _KINDS:
                    from spmd.errors import SpmdValueError

                    raise SpmdValueError(
                        f"spmd.numpy.__array_namespace_info__().dtypes: kind={k!r}; pass one "
                        f"of {sorted(_KINDS)}, a dtype or a tuple of them."
                    )
                names |= set(_KINDS[k])
            else:
                names |= {n for n, d in _DTYPES.items() if d == np.dtype(k)}
        return {n: d for n, d in _DTYPES.items() if n in names}


def __array_namespace_info__() -> NamespaceInfo:
    """The Array API inspection namespace of spmd.numpy."""
    return NamespaceInfo()
