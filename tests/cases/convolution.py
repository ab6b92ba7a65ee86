"""The case table's convolution rows: spmd.lax.conv_general_dilated, conv,
conv_with_general_padding and conv_transpose against ``reference_conv``, a direct loop over
output positions in exact arithmetic, and spmd.numpy.correlate against NumPy's.

A lax row calls ``fn(m, lhs, rhs)``: with ``m = spmd.numpy`` the spmd.lax function, with
``m = numpy`` the reference (in float64, or int64 for integers and booleans, cast back to the
operands' dtype; booleans as or-of-ands). The rows are of the contraction family, so the
partition, derivative, vmap and multi-process oracles run them: batch sizes 3 and 5 and
feature counts 3 and 6 give uneven and empty blocks on 8 devices, groups split evenly.
"""

from __future__ import annotations

import itertools

import numpy as np

import spmd
from spmd import ShapeError, SpmdTypeError, SpmdValueError
from tests.cases.table import DTYPES, _label, add

LAX_CONVOLUTIONS = ("conv_general_dilated", "conv", "conv_with_general_padding", "conv_transpose")


def reference_conv(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, dnums,
                   groups=1, batches=1):  # fmt: skip
    """The convolution by its definition: every output position's sum over features and
    taps, reading the lhs through explicit dilation and padding index arithmetic; exact
    (float64, complex128 or int64), in canonical (batch, feature, spatial) order inside."""
    lhs_spec, rhs_spec, out_spec = dnums
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    exact = {"b": np.int64, "i": np.int64, "u": np.int64, "c": np.complex128}.get(
        lhs.dtype.kind, np.float64
    )
    x = np.transpose(lhs.astype(exact), lhs_spec)
    w = np.transpose(rhs.astype(exact), rhs_spec)
    n, _, *spatial = x.shape
    o, i, *window = w.shape
    dilated = [(s - 1) * d + 1 if s else 0 for s, d in zip(spatial, lhs_dilation, strict=True)]
    padded = [d + lo + hi for d, (lo, hi) in zip(dilated, padding, strict=True)]
    reach = [(k - 1) * r + 1 for k, r in zip(window, rhs_dilation, strict=True)]
    out_spatial = [max(0, (p - k) // s + 1) for p, k, s in zip(padded, reach, strides, strict=True)]
    per_group = o // max(groups, batches)
    out = np.zeros((n // batches, o, *out_spatial), exact)

    def lhs_at(b, c, position):
        index = []
        for q, (lo, _), d, size in zip(position, padding, lhs_dilation, spatial, strict=True):
            q -= lo  # into the dilated lhs
            if q < 0 or q % d or q // d >= size:
                return 0  # padding, or a hole of the dilation
            index.append(q // d)
        return x[(b, c, *index)]

    for b, f in itertools.product(range(n // batches), range(o)):
        group = f // per_group
        for position in itertools.product(*map(range, out_spatial)):
            total = 0
            for ci, tap in itertools.product(range(i), itertools.product(*map(range, window))):
                c = group * i + ci if groups > 1 else ci
                batch = group * (n // batches) + b if batches > 1 else b
                read = [p * s + t * r for p, s, t, r in zip(position, strides, tap, rhs_dilation,
                                                              strict=True)]  # fmt: skip
                total += lhs_at(batch, c, read) * w[(f, ci, *tap)]
            out[(b, f, *position)] = total
    out = np.transpose(out, np.argsort(out_spec))
    return out > 0 if lhs.dtype == np.bool_ else out.astype(lhs.dtype)


def _reference_call(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                    dimension_numbers=None, feature_group_count=1,
                    batch_group_count=1):  # fmt: skip
    """conv_general_dilated's arguments as spmd.lax takes them, resolved for the reference."""
    lax = spmd.lax
    dnums = lax.conv_dimension_numbers(np.shape(lhs), np.shape(rhs), dimension_numbers)
    k = np.ndim(lhs) - 2
    lhs_dilation = lhs_dilation or (1,) * k
    rhs_dilation = rhs_dilation or (1,) * k
    if isinstance(padding, str):
        spatial = [np.shape(lhs)[d] for d in dnums.lhs_spec[2:]]
        window = [np.shape(rhs)[d] for d in dnums.rhs_spec[2:]]
        reach = [(w - 1) * r + 1 for w, r in zip(window, rhs_dilation, strict=True)]
        padding = lax.padtype_to_pads(spatial, reach, window_strides, padding)
    return reference_conv(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dnums,
                          feature_group_count, batch_group_count)  # fmt: skip


def general(*args, **kwargs):
    """fn(m, lhs, rhs): spmd.lax.conv_general_dilated or the reference, with these arguments."""

    def fn(m, lhs, rhs):
        if m is np:
            return _reference_call(lhs, rhs, *args, **kwargs)
        return spmd.lax.conv_general_dilated(lhs, rhs, *args, **kwargs)

    return fn


def _shorthand(name: str, *args):
    def fn(m, lhs, rhs):
        if m is not np:
            return getattr(spmd.lax, name)(lhs, rhs, *args)
        if name == "conv":
            return _reference_call(lhs, rhs, *args)
        strides, padding, lhs_dilation, rhs_dilation = args
        return _reference_call(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation)

    return fn


def _transpose(strides, padding):
    """conv_transpose in NHWC / HWIO: the lhs dilated by the strides, padded as JAX pads."""

    def fn(m, lhs, rhs):
        if m is not np:
            return spmd.lax.conv_transpose(lhs, rhs, strides, padding)
        window = np.shape(rhs)[:-2]
        pads = [spmd.lax.convolution._conv_transpose_padding(k, s, padding)
                for k, s in zip(window, strides, strict=True)]  # fmt: skip
        dims = spmd.lax.conv_dimension_numbers(np.shape(lhs), np.shape(rhs),
                                               ("NHWC", "HWIO", "NHWC"))  # fmt: skip
        return reference_conv(lhs, rhs, (1,) * len(window), pads, strides, (1,) * len(window),
                              dims)  # fmt: skip

    return fn


def _convolution():
    ct = {"family": "contraction"}
    nhwc = ("NHWC", "HWIO", "NHWC")
    rows = [  # (arguments, keyword arguments, shape sets)
        (((1, 1), "VALID"), {}, [((3, 2, 4, 3), (2, 2, 2, 2)), ((0, 2, 3, 3), (2, 2, 2, 1))]),
        (((2, 1), [(1, 0), (-1, 2)]), {"rhs_dilation": (1, 2)}, [((2, 3, 5, 4), (2, 3, 2, 2))]),
        (((1, 2), "SAME"), {"dimension_numbers": nhwc}, [((5, 4, 3, 6), (3, 2, 6, 2)),
                                                         ((2, 3, 3, 0), (2, 2, 0, 3))]),
        (((1,), [(2, 1)]), {"lhs_dilation": (2,)}, [((2, 3, 4), (4, 3, 3))]),
        (((1,), "SAME_LOWER"), {"dimension_numbers": ("NWC", "WIO", "NWC"),
                                "feature_group_count": 2}, [((3, 5, 4), (2, 2, 4))]),
        (((1, 1), "VALID"), {"batch_group_count": 2}, [((4, 2, 3, 3), (2, 2, 2, 2))]),
        (((1, 1, 1), "SAME"), {}, [((2, 2, 3, 2, 2), (2, 2, 2, 1, 2))]),
        (((2,), "VALID"), {}, [((2, 3, 1), (2, 3, 2))]),  # no window fits: empty spatially
    ]  # fmt: skip
    for args, kwargs, shape_sets in rows:
        add("lax.conv_general_dilated", general(*args, **kwargs), *shape_sets,
            label=_label(*args, **kwargs), **ct)  # fmt: skip
    add("lax.conv_general_dilated", general((1,), "VALID"), ((), ()), ((2, 3, 4), (2, 2, 2)),
        ((2, 3, 4), (2, 3, 2, 2)), numpy_too=False, **ct,
        **{"label": "rejects", "dtypes": DTYPES, "error": ShapeError})  # fmt: skip
    add("lax.conv_general_dilated", general((1, 1), "VALID", dimension_numbers=("NCHW", "OHW")),
        ((1, 1, 2, 2), (1, 1, 2, 2)), numpy_too=False, **ct,
        **{"label": "bad dimension_numbers", "dtypes": DTYPES, "error": SpmdTypeError})  # fmt: skip
    add("lax.conv", _shorthand("conv", (1, 1), "SAME"), ((2, 3, 5, 4), (4, 3, 3, 2)),
        ((5, 3, 4, 4), (3, 3, 1, 2)), label="SAME", **ct)  # fmt: skip
    add("lax.conv", _shorthand("conv", (2,), "VALID"), ((3, 2, 7), (2, 2, 3)),
        ((0, 2, 7), (2, 2, 3)), label="VALID", **ct)  # fmt: skip
    add("lax.conv", _shorthand("conv", (1,), "VALID"), ((), (1, 1, 1)), numpy_too=False, **ct,
        **{"label": "rejects", "dtypes": DTYPES, "error": ShapeError})  # fmt: skip
    general_padding = ((1, 2), [(2, 1), (0, -1)], (2, 1), (1, 2))
    add("lax.conv_with_general_padding", _shorthand("conv_with_general_padding",
        *general_padding), ((2, 3, 3, 5), (2, 3, 2, 2)), ((2, 0, 3, 5), (2, 0, 2, 2)),
        label=_label(*general_padding), **ct)  # fmt: skip
    add("lax.conv_with_general_padding", _shorthand("conv_with_general_padding", (1,),
        [(0, 0)], None, None), ((), ()), ((2, 3, 4), (2, 4, 2)), numpy_too=False, **ct,
        **{"label": "rejects", "dtypes": DTYPES, "error": ShapeError})  # fmt: skip
    for strides, padding in (((2, 2), "SAME"), ((2, 1), "VALID")):
        add("lax.conv_transpose", _transpose(strides, padding), ((3, 3, 2, 2), (2, 2, 2, 3)),
            ((0, 2, 2, 1), (3, 1, 1, 2)), label=_label(strides, padding), **ct)  # fmt: skip
    add("lax.conv_transpose", _transpose((1, 1), "SAME"), ((), ()), numpy_too=False, **ct,
        **{"label": "rejects", "dtypes": DTYPES, "error": ShapeError})  # fmt: skip
    for mode in ("full", "same", "valid"):
        for shapes in (((5,), (3,)), ((3,), (6,)), ((1,), (4,)), ((4,), (1,))):
            add("correlate", lambda m, a, v, mode=mode: m.correlate(a, v, mode), shapes,
                label=mode, **ct)  # fmt: skip
    add("correlate", lambda m, a, v: m.correlate(a, v), ((0,), (3,)), label="empty",
        family="contraction", dtypes=DTYPES, error=SpmdValueError)  # fmt: skip
    add("correlate", lambda m, a, v: m.correlate(a, v), ((2, 2), (2,)), ((), (3,)), ((4,), ()),
        label="not 1-D",
        family="contraction", dtypes=DTYPES, error=ShapeError)  # fmt: skip
