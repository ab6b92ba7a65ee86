"""The table, part 2: shape functions, indexing, contractions and spmd.lax's slicing."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.cases.indexing import random_index
from tests.differential.calls import Sig, make_call
from tests.differential.compare import magnitude
from tests.differential.generate import (
    a_dtype_keyword,
    arrays,
    axes,
    axis,
    broadcast_shapes,
    dtypes,
    operand,
    python_scalars,
    shapes,
)

LARGE = {np.dtype(bool): [True], np.dtype(np.int8): [100, 127], np.dtype(np.uint8): [200, 255]}
NUMPY_2_1 = np.lib.NumpyVersion(np.__version__) >= "2.1.0"


def _array(draw, **shape_options) -> np.ndarray:
    return draw(arrays(draw(dtypes), draw(shapes(**shape_options))))


@st.composite
def shape_call(draw, name: str):
    """The shape functions, each with its arguments drawn for the array's shape."""
    x = _array(draw)
    n = x.ndim
    if name in ("ravel", "copy"):
        kw = (
            {"order": draw(st.sampled_from("CFAK"))}
            if name == "ravel" and draw(st.booleans())
            else {}
        )
        return make_call(name, x, **kw)
    if name == "reshape":
        sizes = [*x.shape]
        draw(st.randoms()).shuffle(sizes)
        half = len(sizes) // 2
        new = (*sizes[:half], int(np.prod(sizes[half:])))
        if draw(st.integers(0, 7)) == 0:
            new = (*new, 2)  # a size mismatch
        elif x.size and draw(st.booleans()):
            new = (-1, *new[1:])
        kw = {"order": draw(st.sampled_from("CFAK"))} if draw(st.booleans()) else {}  # K: refused
        whole = len(new) == 1 or (draw(st.booleans()) and -1 not in new)
        return make_call(name, x, int(np.prod(new)) if whole else new, **kw)
    if name == "transpose":
        order = draw(st.permutations(range(n)))
        kw = {"axes": tuple(a - n if draw(st.booleans()) else a for a in order)}
        return make_call(name, x, **(kw if draw(st.booleans()) else {}))
    if name == "swapaxes":
        return make_call(name, x, draw(axis(n)), draw(axis(n)))
    if name == "moveaxis":
        count = draw(st.integers(0, n))
        source = draw(st.permutations(range(n)))[:count]
        destination = draw(st.permutations(range(n)))[:count]
        if count == 1 and draw(st.booleans()):
            return make_call(name, x, source[0] - n, destination[0])
        return make_call(name, x, tuple(source), tuple(destination))
    if name == "expand_dims":
        return make_call(name, x, draw(axes(n + 1, none=False)))
    if name == "squeeze":
        ones = [a for a, size in enumerate(x.shape) if size == 1]
        picked = draw(st.lists(st.sampled_from(ones), unique=True)) if ones else []
        choice = draw(st.sampled_from(["none", "ones", "any"]))  # NumPy 2: a 0-d takes 0, -1
        if choice == "none":
            return make_call(name, x)
        ax = tuple(picked) if choice == "ones" else draw(axes(n, none=False))
        if isinstance(ax, tuple) and len(ax) == 1 and draw(st.booleans()):
            ax = ax[0]
        return make_call(name, x, axis=ax)
    if name == "broadcast_to":
        extra = draw(st.lists(st.integers(0, 3), max_size=2))
        target = (*extra, *(draw(st.sampled_from([1, 2])) if s == 1 else s for s in x.shape))
        if draw(st.integers(0, 7)) == 0:
            target = target[1:]  # too short (an error unless the first side is 1)
        return make_call(name, x, tuple(target), values=True)
    if name == "tile":
        reps = draw(st.lists(st.integers(0, 2), max_size=4))
        return make_call(name, x, reps[0] if len(reps) == 1 else tuple(reps))
    if name == "repeat":
        ax = draw(st.one_of(st.none(), axis(n)))  # NumPy 2: a 0-d takes axis 0 and -1
        length = x.size if ax is None else x.shape[ax] if -n <= ax < n else 1
        if draw(st.booleans()) or not length:  # NumPy refuses [] (float64) as repeats
            repeats = draw(st.integers(0, 3))
        else:  # a list, not an array: repeats fix the result's shape, so they stay static
            repeats = draw(st.lists(st.integers(0, 2), min_size=length, max_size=length))
        return make_call(name, x, repeats, axis=ax)
    if name == "roll":
        if draw(st.booleans()):
            return make_call(name, x, draw(st.integers(-7, 7)), axis=draw(st.none() | axis(n)))
        ax = draw(axes(n, none=False, tuples=True))
        count = len(ax) if isinstance(ax, tuple) else 1
        shifts = tuple(draw(st.integers(-7, 7)) for _ in range(count))
        return make_call(name, x, shifts if draw(st.booleans()) else shifts[:1] or 0, axis=ax)
    if name == "split":
        ax = draw(axis(n)) if n else 0
        if draw(st.booleans()):
            sections = draw(st.integers(1, 4))
        else:
            sections = sorted(draw(st.lists(st.integers(-2, 6), max_size=3)))
        return make_call(name, x, sections, **({"axis": ax} if draw(st.booleans()) else {}))
    if name == "diagonal":
        kw = {"offset": draw(st.integers(-3, 3))} if draw(st.booleans()) else {}
        if draw(st.booleans()):
            kw["axis1"], kw["axis2"] = draw(axis(n)), draw(axis(n))
        return make_call(name, x, **kw)
    raise AssertionError(name)


@st.composite
def joining(draw, name: str):
    """concatenate (axis None or one) and stack of 1-3 arrays, dtypes mixed now and then."""
    base = draw(shapes(max_dims=3))
    count = draw(st.integers(1, 3))
    ax = draw(st.none() | axis(len(base) + (name == "stack"))) if name != "stack" or base else 0
    dtype = draw(dtypes)
    parts = []
    for _ in range(count):
        shape = list(base)
        if name == "concatenate" and ax is not None and -len(base) <= ax < len(base):
            shape[ax] = draw(st.integers(0, 3))
        parts.append(draw(arrays(dtype if draw(st.booleans()) else draw(dtypes), tuple(shape))))
    return make_call(name, parts, **({"axis": ax} if draw(st.booleans()) else {}))


@st.composite
def stacking(draw, name: str):
    """vstack, hstack, dstack, column_stack of 1-3 arrays of one rank (0-3, lifted as NumPy
    lifts them), varying along the axis each joins, dtypes mixed now and then."""
    base = draw(shapes(max_dims=3))
    along = {"vstack": 0, "hstack": 1 if len(base) > 1 else 0, "dstack": 2}.get(name, 1)
    dtype = draw(dtypes)
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        shape = list(base)
        if along < len(shape):
            shape[along] = draw(st.integers(0, 3))
        parts.append(draw(arrays(dtype if draw(st.booleans()) else draw(dtypes), tuple(shape))))
    return make_call(name, parts)


@st.composite
def pad(draw):
    """Every mode and pad_width form: an int, one pair, one pair per axis. Half the arrays
    have an axis of size 1 and no zeros, where a piece put on the wrong side would show."""
    x = _array(draw, max_dims=3, max_side=4)
    if draw(st.booleans()):
        shape = list(draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)))
        shape[draw(st.integers(0, len(shape) - 1))] = 1
        x = draw(arrays(draw(dtypes), tuple(shape)))
        x = np.where(x == 0, np.ones((), x.dtype), x)
    widths = st.integers(0, 3)
    form = draw(st.sampled_from(["int", "pair", "per_axis"]))
    if form == "int":
        width = draw(widths)
    elif form == "pair":
        width = ((draw(widths), draw(widths)),)
    else:
        width = [(draw(widths), draw(widths)) for _ in range(x.ndim)]
    mode = draw(st.sampled_from(["constant", "edge", "wrap", "reflect", "symmetric", "empty"]))
    kw = {}
    if mode == "constant" and draw(st.booleans()):
        kw["constant_values"] = draw(python_scalars("bif"))
    if mode in ("reflect", "symmetric") and draw(st.booleans()):
        kw["reflect_type"] = draw(st.sampled_from(["even", "odd"]))
    if mode == "constant" and draw(st.booleans()):
        return make_call("pad", x, width, **kw)
    return make_call("pad", x, width, mode, values=mode != "empty", **kw)


@st.composite
def getitem(draw):
    x = _array(draw)
    index = random_index(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), x.shape)
    if draw(st.integers(0, 5)) == 0:
        # in a tuple, so it stays static: under jit a traced mask is refused (as in JAX)
        index = (draw(arrays(np.dtype(bool), x.shape[: draw(st.integers(0, x.ndim))])),)
    return make_call("_getitem", x, index)


def _others(shape: tuple[int, ...], ax: int | None) -> int:
    """The size of one index's slice in take: the product of the sides other than ``ax``."""
    if ax is None or not -len(shape) <= ax < len(shape):
        return 1
    return int(np.prod([n for d, n in enumerate(shape) if d != ax % len(shape)]))


@st.composite
def take(draw):
    x = _array(draw)
    ax = draw(st.none() | axis(x.ndim))  # NumPy 2: a 0-d array takes axis 0 and -1
    length = x.size if ax is None else x.shape[ax] if -x.ndim <= ax < x.ndim else 1
    mode = draw(st.sampled_from([None, "raise", "wrap", "clip"]))
    low, high = (-length, length - 1) if mode in (None, "raise") else (-2 * length - 1, 2 * length)
    outside = draw(st.integers(0, 9)) == 0 or high < low
    if outside:
        low, high = high + 1, high + 2  # out of bounds: an error unless wrapped or clipped
    indices = np.array(draw(st.lists(st.integers(low, high), max_size=4)), dtype=np.int64)
    if mode == "wrap" and length == 0 and _others(x.shape, ax) == 0:
        indices = indices[:0]  # NumPy (2.0 to 2.4) loops forever on these: none of them
    if draw(st.booleans()) and indices.size:
        indices = indices[0]
    if outside and mode in (None, "raise"):
        # known indices (a list is never placed), so spmd raises as NumPy does; traced ones
        # cannot be checked under jit and are clipped into range, as in JAX (take's docstring)
        indices = indices.tolist()
    return make_call("take", x, indices, axis=ax, **({"mode": mode} if mode else {}))


@st.composite
def nonzero(draw):
    """nonzero of rank 1-4 (NumPy 2.0 only warns on a 0-d array, later versions refuse it, as
    spmd does: left out, tests/test_numpy_fixes_shapes.py checks spmd's refusal)."""
    return make_call("nonzero", _array(draw, min_dims=1))


@st.composite
def where(draw):
    first, second, third = draw(broadcast_shapes(3))
    condition = draw(operand(first, np.dtype(bool) if draw(st.booleans()) else None))
    return make_call("where", condition, draw(operand(second)), draw(operand(third)))


@st.composite
def where_condition(draw):
    """The one-argument where(condition): nonzero's indices, of any dtype's truth."""
    return make_call("where", _array(draw, min_dims=1))


@st.composite
def clip(draw):
    """clip(a, a_min, a_max) and clip(a, min=, max=) with array or scalar bounds, None too.

    spmd's clip is NumPy 2.1's: min=/max= and two None bounds (a copy). NumPy 2.0 refuses
    both, so on NumPy 2.0 (CI's oldest) the table draws the forms it has."""
    first, second, third = draw(broadcast_shapes(3))
    x = draw(operand(first))
    low = draw(st.none() | operand(second))
    high = draw(st.none() | operand(third))
    if not NUMPY_2_1 and low is None and high is None:
        high = draw(operand(third))
    if draw(st.booleans()) or not NUMPY_2_1:
        return make_call("clip", x, low, high)
    return make_call("clip", x, min=low, max=high)


@st.composite
def contraction(draw, name: str):
    """dot, matmul, outer, tensordot: shapes that contract (mostly), mixed dtypes now and then."""
    dtype = draw(dtypes)
    k, m, n = draw(st.integers(0, 4)), draw(st.integers(0, 3)), draw(st.integers(0, 3))
    batch = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    first, second = {
        "dot": draw(st.sampled_from([((k,), (k,)), ((m, k), (k,)), ((m, k), (k, n)), ((), (k,))])),
        "matmul": draw(st.sampled_from([((k,), (k,)), ((*batch, m, k), (k, n)), ((k,), (k, n))])),
        "outer": ((m, k), (n,)),
        "tensordot": ((*batch, m, k), (k, n)),
        "vdot": draw(st.sampled_from([((k,), (k,)), ((m, k), (m, k)), ((m * k,), (m, k))])),
    }[name]
    if name == "matmul" and draw(st.booleans()):
        first, second = (*batch, m, k), (*batch, k, n)
    if draw(st.integers(0, 9)) == 0:
        second = (*second[:-1], second[-1] + 1) if second else (1,)
    a = draw(arrays(dtype, first))
    b = draw(arrays(dtype if draw(st.booleans()) else draw(dtypes), second))
    if name in ("dot", "tensordot", "vdot"):
        # NumPy's BLAS paths are not IEEE at NaN and inf: for some shapes they skip zero
        # factors (dot([[0.]], [[nan]]) is 0, matmul's nan), so these two get finite values
        a, b = (np.where(np.isfinite(v), v, 1).astype(v.dtype) for v in (a, b))
    terms = max(a.size if name == "vdot" else k, 1)
    scale = terms * magnitude(a) * magnitude(b)
    if name == "tensordot":
        axes_ = draw(st.sampled_from([1, ((-1,), (0,)), [[a.ndim - 1], [0]], 0]))
        return make_call(name, a, b, terms=terms, scale=scale, axes=axes_)
    return make_call(name, a, b, terms=terms, scale=scale)


@st.composite
def einsum(draw):
    """Explicit and implicit subscripts over 1-3 operands (0-d ones included), dtypes mixed."""
    letters = "ijk"
    sides = {c: draw(st.integers(0, 3)) for c in letters}
    count = draw(st.sampled_from([3, 2, 1]))
    terms = [
        "".join(draw(st.permutations(letters))[: draw(st.integers(0, 2))]) for _ in range(count)
    ]
    used = sorted(set("".join(terms)))
    if draw(st.integers(0, 4)) == 0:  # implicit: the letters that appear once, sorted
        out = "".join(c for c in used if "".join(terms).count(c) == 1)
        spec = ",".join(terms)
    else:
        out = "".join(c for c in draw(st.permutations(used)) if draw(st.booleans()))
        spec = ",".join(terms) + "->" + out
    kinds = [draw(dtypes) for _ in terms]
    operands = [
        draw(arrays(kind, tuple(sides[c] for c in term)))
        for kind, term in zip(kinds, terms, strict=True)
    ]
    if count > 1 and draw(st.integers(0, 3)) > 0:
        # narrow operands of large values first, a wide one last: NumPy sums in the result's
        # dtype, and a contraction of a pair in its own (bool, 8 bits) would lose counts or wrap
        for i, term in enumerate(terms[:-1]):
            kind = draw(st.sampled_from(list(LARGE)))
            shape = tuple(sides[c] for c in term)
            operands[i] = draw(hnp.arrays(kind, shape, elements=st.sampled_from(LARGE[kind])))
    length = int(np.prod([sides[c] for c in used if c not in out] or [1]))
    scale = max(length, 1) * float(np.prod([magnitude(o) for o in operands]))
    return make_call("einsum", spec, *operands, terms=max(length, 1), scale=scale)


@st.composite
def trace(draw):
    x = _array(draw, min_dims=2)
    kw = {"offset": draw(st.integers(-3, 3))} if draw(st.booleans()) else {}
    if draw(st.booleans()):
        kw["axis1"], kw["axis2"] = draw(axis(x.ndim)), draw(axis(x.ndim))
    if draw(st.booleans()):
        kw["dtype"] = draw(a_dtype_keyword())
    side = min(x.shape[:2])
    return make_call("trace", x, terms=max(side, 1), **kw)


# -------------------------------------------------------------------------------- lax


def _starts(draw, shape, traced: bool):
    """Start indices around the axis, negative (wrapped, then clamped) and past the end."""
    starts = [draw(st.integers(-n - 2, n + 2)) for n in shape]
    if traced:
        return [np.array(s, dtype=draw(st.sampled_from([np.int32, np.int64]))) for s in starts]
    return starts


@st.composite
def lax_call(draw, name: str):
    x = _array(draw, max_dims=3)
    traced = draw(st.booleans())  # 0-d index arrays: traced under jit
    if name == "dynamic_slice":
        sizes = [draw(st.integers(0, n)) for n in x.shape]
        if draw(st.integers(0, 9)) == 0 and sizes:
            sizes[0] += 1 + x.shape[0] - sizes[0]  # a block larger than the operand
        return make_call(f"lax.{name}", x, _starts(draw, x.shape, traced), sizes)
    if name == "dynamic_update_slice":
        update = draw(arrays(x.dtype, tuple(draw(st.integers(0, n)) for n in x.shape)))
        return make_call(f"lax.{name}", x, update, _starts(draw, x.shape, traced))
    if not x.ndim:
        x = x.reshape(1)
    ax = draw(axis(x.ndim))
    n = x.shape[ax] if -x.ndim <= ax < x.ndim else 1
    start = _starts(draw, (n,), traced)[0]
    if name == "dynamic_slice_in_dim":
        return make_call(f"lax.{name}", x, start, draw(st.integers(0, n)), axis=ax)
    if name == "dynamic_index_in_dim":
        kw = {"keepdims": draw(st.booleans())} if draw(st.booleans()) else {}
        return make_call(f"lax.{name}", x, start, axis=ax, **kw)
    shape = list(x.shape)
    if -x.ndim <= ax < x.ndim:
        shape[ax] = draw(st.integers(0, n))
        if name == "dynamic_update_index_in_dim":  # one index: the update has the axis or not
            shape[ax] = 1
            if draw(st.booleans()):
                del shape[ax]
    update = draw(arrays(x.dtype, tuple(shape)))
    return make_call(f"lax.{name}", x, update, start, ax)


def _sig(name, strategy, *args, **kwargs) -> Sig:
    return Sig(name, lambda: strategy(*args, **kwargs))


SHAPE_FUNCTIONS = [
    "ravel", "copy", "reshape", "transpose", "swapaxes", "moveaxis", "expand_dims", "squeeze",
    "broadcast_to", "tile", "repeat", "roll", "split", "diagonal"
]  # fmt: skip
LAX_FUNCTIONS = (
    "dynamic_slice",
    "dynamic_update_slice",
    "dynamic_slice_in_dim",
    "dynamic_update_slice_in_dim",
    "dynamic_index_in_dim",
    "dynamic_update_index_in_dim",
)
SIGS = [
    *[_sig(n, shape_call, n) for n in SHAPE_FUNCTIONS if n != "copy"],
    *[_sig(n, joining, n) for n in ("concatenate", "stack")],
    *[_sig(n, stacking, n) for n in ("vstack", "hstack", "dstack", "column_stack")],
    _sig("pad", pad),
    _sig("_getitem", getitem),
    _sig("take", take),
    # the count of nonzero elements sets the result's shape: under jit that takes JAX's size=,
    # which NumPy lacks, so the placements are the eager ones
    Sig("nonzero", nonzero, modes=("numpy_in", "eager", "sharded")),
    _sig("where", where),
    Sig("where", where_condition, modes=("numpy_in", "eager", "sharded"), form="condition"),
    _sig("clip", clip),
    *[_sig(n, contraction, n) for n in ("dot", "matmul", "outer", "tensordot", "vdot")],
    _sig("einsum", einsum),
    _sig("trace", trace),
    *[_sig(f"lax.{n}", lax_call, n) for n in LAX_FUNCTIONS],
]
