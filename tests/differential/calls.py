"""Building a ``Call`` from a function name and its arguments, and the ``Sig`` table row."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

import spmd
from tests.differential.compare import MODES, Call
from tests.differential.reference import LAX, NN


def resolve(m, target: str) -> Callable:
    """``m.<target>``: "nn.x" and "lax.x" resolve to NumPy reference formulas when m is numpy."""
    if target == "_getitem" and m is np:
        return lambda x, index: np.asarray(x)[index]
    if target.startswith("nn."):
        return getattr(NN if m is np else spmd.nn, target[3:])
    if target.startswith("lax."):
        return getattr(LAX if m is np else spmd.lax, target[4:])
    return getattr(m, target)


def _is_array_list(value) -> bool:
    return isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value)


def make_call(
    target: str,
    *positional,
    terms: int = 1,
    scale: float | None = None,
    values: bool = True,
    root: bool = False,
    plain: bool = False,
    numpy_kwargs: dict | None = None,
    **keywords,
) -> Call:
    """``m.<target>(*positional, **keywords)`` as a Call. NumPy arrays (also inside a list, as
    concatenate takes them) become the operands a placement moves; ``numpy_kwargs`` are passed
    to NumPy only (e.g. ``kind="stable"``, to pick one of the orders NumPy leaves open)."""
    args, slots = [], []  # slot: ("one", index) | ("list", first, count) | ("static", value)

    def slot(value):
        if _is_array_list(value):
            slots.append(("list", len(args), len(value)))
            args.extend(value)
        else:
            slots.append(("one", len(args)))
            args.append(value)

    for value in positional:
        slot(value)
    for value in keywords.values():
        slot(value)
    names = list(keywords)
    count = len(positional)

    def fn(m, *xs):
        values_ = [xs[s[1]] if s[0] == "one" else list(xs[s[1] : s[1] + s[2]]) for s in slots]
        given = dict(zip(names, values_[count:], strict=True))
        if m is np and numpy_kwargs:
            given.update(numpy_kwargs)
        return resolve(m, target)(*values_[:count], **given)

    label = target + (f"[{','.join(names)}]" if names else "")
    return Call(fn, args, label, terms=terms, scale=scale, values=values, root=root, plain=plain)


@dataclass(frozen=True)
class Sig:
    """A public function and how to draw calls of it (``calls()`` is a strategy of Calls).

    ``modes``: the placements it runs in; ``plain_errors``: built-in exception types spmd may
    raise (instead of an SpmdError) where NumPy raises too, with the reason (issue 22 lists them);
    ``form``: which of the function's forms, where it has two rows (``where(condition)``).
    """

    name: str
    calls: Callable[[], st.SearchStrategy]
    modes: tuple[str, ...] = MODES
    plain_errors: dict[str, str] = field(default_factory=dict)
    form: str = ""

    @property
    def key(self) -> str:
        return f"{self.name}({self.form})" if self.form else self.name
