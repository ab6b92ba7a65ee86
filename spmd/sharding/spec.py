"""PartitionSpec: which mesh axes split each dimension of an array."""

from __future__ import annotations

from collections.abc import Iterator

from spmd.errors import ShardingError

Entry = None | str | tuple[str, ...]


def _canonical_entry(entry: object, position: int) -> Entry:
    if entry is None or isinstance(entry, str):
        return entry
    if isinstance(entry, (tuple, list)):
        for name in entry:
            if not isinstance(name, str):
                raise ShardingError(
                    f"PartitionSpec entry {position} is {entry!r}: a tuple entry must hold mesh "
                    f"axis names (str), but {name!r} is a {type(name).__name__}."
                )
        if not entry:
            return None
        return entry[0] if len(entry) == 1 else tuple(entry)
    raise ShardingError(
        f"PartitionSpec entry {position} is {entry!r} ({type(entry).__name__}); each entry must "
        f"be None, a mesh axis name (str) or a tuple of names, for example P('x', None) or "
        f"P(('x', 'y'))."
    )


class PartitionSpec:
    """One entry per leading array dimension: ``None``, an axis name, or a tuple of names.

    A tuple splits the dimension over several mesh axes, major to minor; missing trailing
    entries mean ``None`` (not split). Example: ``P('x', None)`` splits rows over axis ``x``.
    """

    __slots__ = ("_entries",)

    def __init__(self, *entries: object) -> None:
        canonical = tuple(_canonical_entry(e, i) for i, e in enumerate(entries))
        seen: dict[str, int] = {}
        for dim, entry in enumerate(canonical):
            for name in axes_of(entry):
                if name in seen:
                    raise ShardingError(
                        f"PartitionSpec{canonical!r} uses mesh axis {name!r} twice "
                        f"(dimensions {seen[name]} and {dim}); an axis can split only one "
                        f"dimension, once. Drop one use of {name!r}."
                    )
                seen[name] = dim
        self._entries = canonical

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries)

    def __getitem__(self, i):
        return self._entries[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PartitionSpec):
            return self._entries == other._entries
        if isinstance(other, tuple):
            return self._entries == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._entries)

    def __repr__(self) -> str:
        return f"PartitionSpec{self._entries!r}"

    def __reduce__(self):
        return (PartitionSpec, self._entries)

    @property
    def axis_names(self) -> tuple[str, ...]:
        """Every mesh axis the spec uses, in order of appearance."""
        return tuple(name for entry in self._entries for name in axes_of(entry))

    def dims(self, ndim: int) -> tuple[tuple[str, ...], ...]:
        """The axis names splitting each of ``ndim`` dimensions (``()`` where none)."""
        padded = self._entries + (None,) * (ndim - len(self._entries))
        return tuple(axes_of(entry) for entry in padded[:ndim])


def axes_of(entry: Entry) -> tuple[str, ...]:
    """The mesh axis names of one spec entry, as a tuple."""
    if entry is None:
        return ()
    if isinstance(entry, str):
        return (entry,)
    return entry


P = PartitionSpec
