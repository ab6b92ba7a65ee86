"""Choosing rows of the case table: by family and dtype, known bugs, random programs' steps."""

from __future__ import annotations

import numpy as np

from tests.cases.table import CASES, FLOATS, Case, make_input, numpy_result


def cases_for(*, names=None, family=None, dtype=None, errors=False) -> list[Case]:
    """The rows of these functions / this family that run on ``dtype``; with or without errors."""
    return [
        case
        for case in CASES
        if (names is None or case.name in names)
        and (family is None or case.family == family)
        and (dtype is None or dtype in case.dtypes)
        and (case.error is not None) == errors
    ]


# Rows spmd gets wrong today: (row id, dtype name or None for every dtype) -> the bug. Each
# runs on its own, marked xfail(strict=True), so fixing the bug means deleting its entry.
KNOWN_BUGS: dict[str, tuple[tuple, str]] = {}  # row id: (the dtypes it fails on, the bug)


# Rounding upstream can flip these (floor, comparisons, branches): random programs skip them.
DISCONTINUOUS = {"sign", "floor", "ceil", "round", "around", "floor_divide", "remainder", "mod"}
DISCONTINUOUS |= {"where", "argmax", "argmin", "nn.relu", "nn.one_hot", "_getitem", "take"}
DISCONTINUOUS |= {"lax.sign", "lax.floor", "lax.ceil", "lax.round", "lax.rem"}
DISCONTINUOUS |= {"lax.argmax", "lax.argmin", "lax.top_k", "lax.select_n"}
DISCONTINUOUS |= {"lax.linalg.lu", "lax.linalg.lu_pivots_to_permutation"}  # pivot choices


def _broadcasts(small, shape) -> bool:
    return not small or all(
        s in (1, d) for s, d in zip(small[::-1], shape[-len(small) :][::-1], strict=True)
    )


def shape_preserving(shape=(3, 4)) -> list[tuple[str, Case]]:
    """Rows that can be steps of a random program on float arrays of ``shape``.

    Each is ``("map", row)``: the row, given one or two float arrays of ``shape``, returns one of
    that shape and dtype; or ``("center", row)``: it returns one that broadcasts against them
    (a reduction), and the step subtracts it. One row per function and arguments (name and
    label), continuous in its inputs, finite on its domain, float32 and float64 alike.
    """
    steps, seen = [], set()
    for case in CASES:
        key = (case.name, case.label)
        if (
            key in seen
            or case.error is not None
            or case.eager_only  # programs are traced under jit
            or case.indices
            or case.input_dtypes
            or case.family == "creation"
            or case.name in DISCONTINUOUS
            or case.domain == "special"
            or len(case.shapes) not in (1, 2)
            or not set(FLOATS) <= set(case.dtypes)
        ):
            continue
        seen.add(key)
        kinds = set()
        for dtype in FLOATS:
            x = make_input(shape, dtype, 0, case.domain)
            try:
                out = numpy_result(case, [x] * len(case.shapes))
            except (ValueError, TypeError, IndexError):  # the row's arguments do not fit ``shape``
                kinds.add(None)
                continue
            if not isinstance(out, np.ndarray) or out.dtype != dtype or not np.isfinite(out).all():
                kinds.add(None)
            elif out.shape == shape:
                kinds.add("map")
            elif out.ndim <= len(shape) and _broadcasts(out.shape, shape):
                kinds.add("center")
            else:
                kinds.add(None)
        if len(kinds) == 1 and None not in kinds:
            steps.append((kinds.pop(), case))
    return steps
