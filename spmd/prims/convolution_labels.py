"""Labels for a convolution's axes, shared by its two implementations (convolution_impl.py
gathers windows, convolution_scatter.py scatters products).

Every axis of the operands and the result gets a label: ``n`` (the batch; with batch groups
the lhs batch is ``grp n``), ``c`` (input features; with feature groups the lhs features
are ``grp c``), ``o`` (output features, ``grp o`` with either kind of group), ``s<i>``
(output positions along spatial dimension i; the lhs's spatial axes carry them once cut
into windows) and ``k<i>`` (the kernel's taps). Grouped dimensions are split group-major.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Labels:
    """The labels of the lhs (spatial axes as ``s<i>``), of its windows (the lhs's, then one
    tap axis per spatial dimension), of the kernel and of the result, grouped dimensions
    split; ``sizes`` is each label's size, as (label, size) pairs."""

    lhs: tuple[str, ...]
    windows: tuple[str, ...]
    kernel: tuple[str, ...]
    out: tuple[str, ...]
    sizes: tuple[tuple[str, int], ...]

    @property
    def size(self) -> dict[str, int]:
        return dict(self.sizes)


def conv_labels(dimension_numbers, groups: int, batches: int, geometry) -> Labels:
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    ndim, k = len(lhs_spec), len(lhs_spec) - 2
    grouped = ["grp"] if max(groups, batches) > 1 else []
    lhs, kernel, out = ([[] for _ in range(ndim)] for _ in range(3))
    lhs[lhs_spec[0]] = ["grp", "n"] if batches > 1 else ["n"]
    lhs[lhs_spec[1]] = ["grp", "c"] if groups > 1 else ["c"]
    kernel[rhs_spec[0]], kernel[rhs_spec[1]] = [*grouped, "o"], ["c"]
    out[out_spec[0]], out[out_spec[1]] = ["n"], [*grouped, "o"]
    for s in range(k):
        lhs[lhs_spec[2 + s]], out[out_spec[2 + s]] = [f"s{s}"], [f"s{s}"]
        kernel[rhs_spec[2 + s]] = [f"k{s}"]
    flat = lambda groups_: tuple(label for group in groups_ for label in group)  # noqa: E731
    count = max(groups, batches)
    sizes = {"n": geometry.n // batches, "c": geometry.i, "grp": count, "o": geometry.o // count}
    sizes |= {f"s{s}": n for s, n in enumerate(geometry.out)}
    sizes |= {f"k{s}": n for s, n in enumerate(geometry.window)}
    windows = flat(lhs) + tuple(f"k{s}" for s in range(k))
    return Labels(flat(lhs), windows, flat(kernel), flat(out), tuple(sorted(sizes.items())))


def order_of(have: tuple[str, ...], groups: list[list[str]]) -> tuple[int, ...]:
    """The permutation of axes labelled ``have`` that lists ``groups``' labels in order."""
    return tuple(have.index(x) for group in groups for x in group)


def merged(xp, x, order: tuple[int, ...], groups: tuple[int, ...]):
    """``x`` with its axes in ``order``, each run of ``groups`` of them merged into one (a run
    of none adds no axis)."""
    if order != tuple(range(len(order))):
        x = xp.permute_dims(x, order)
    shape, start = [], 0
    for count in groups:
        if count:
            shape.append(math.prod(x.shape[start : start + count]))
        start += count
    return xp.reshape(x, tuple(shape))
