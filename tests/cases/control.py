"""The case table's spmd.lax control-flow rows, with plain Python-loop references for them.

A row calls ``lax(m).cond(...)`` (and switch, while_loop, fori_loop, scan, map, select) with
bodies written once in ``m``'s functions: for ``m = spmd.numpy`` that is spmd.lax, whose bodies
are traced into Programs; for ``m = numpy`` it is ``NUMPY_LAX``, which runs them eagerly in
Python ``if``s and loops. Most rows return one array (the loop's outputs combined), so that the
derivative and vmap oracles, which take one result, check them too.
"""

from __future__ import annotations

import types

import numpy as np

import spmd
from spmd.tree_util import tree_flatten, tree_map, tree_unflatten
from tests.cases.table import BOOL, FLOATS, NUMBERS, add

# ------------------------------------------------------------------ Python-loop references


def _cond(pred, true_fun, false_fun, *operands):
    return true_fun(*operands) if bool(pred) else false_fun(*operands)


def _switch(index, branches, *operands):
    return branches[min(max(int(index), 0), len(branches) - 1)](*operands)


def _while_loop(cond_fun, body_fun, init_val):
    val = init_val
    while bool(cond_fun(val)):
        val = body_fun(val)
    return val


def _fori_loop(lower, upper, body_fun, init_val):
    val = init_val
    for i in range(int(lower), int(upper)):
        val = body_fun(i, val)
    return val


def _empty_stack(y):
    y = np.asarray(y)
    return np.empty((0, *y.shape), y.dtype)


def _scan(f, init, xs=None, length=None, reverse=False):
    leaves, tree = tree_flatten(xs)
    n = int(length) if length is not None else leaves[0].shape[0]
    carry, ys = init, [None] * n
    for i in reversed(range(n)) if reverse else range(n):
        carry, ys[i] = f(carry, tree_unflatten(tree, [leaf[i] for leaf in leaves]))
    if n == 0:  # the body's output type, from one call on a zero slice, stacked zero times
        _, probe = f(init, tree_unflatten(tree, [np.zeros(x.shape[1:], x.dtype) for x in leaves]))
        return carry, tree_map(_empty_stack, probe)
    return carry, tree_map(lambda *y: np.stack([np.asarray(v) for v in y]), *ys)


def _map(f, xs, batch_size=None):
    return _scan(lambda _, x: ((), f(x)), (), xs)[1]


NUMPY_LAX = types.SimpleNamespace(  # spmd.lax's control flow as Python ifs and loops
    cond=_cond,
    switch=_switch,
    while_loop=_while_loop,
    fori_loop=_fori_loop,
    scan=_scan,
    map=_map,
    select=lambda pred, on_true, on_false: np.where(pred, on_true, on_false),
)


LAX_CONTROL_FLOW = ("cond", "switch", "while_loop", "fori_loop", "scan", "map", "select")  # rows'


def lax(m):
    """spmd.lax for m = spmd.numpy, its Python-loop reference for m = numpy."""
    return NUMPY_LAX if m is np else spmd.lax


# ------------------------------------------------------------------------------ the rows

# Bodies use + and * (or, and on bools), maximum and where, so one body fits every dtype.

# Inputs x (and w) of one shape: scalars, size 0, and sizes 2, 3, 4, 5 that 2-, 4- and
# 8-way mesh axes split unevenly and into empty blocks.
SAME = [((), ()), ((5,), (5,)), ((2, 3), (2, 3)), ((0,), (0,)), ((3, 4, 2), (3, 4, 2))]
ONE = [((),), ((5,),), ((2, 3),), ((2, 0, 3),), ((3, 4, 2),)]


def _cond_rows(kw):
    def by_sum(m, x, w):  # pred from data: x's sum against w's, both ways across the rows
        return lax(m).cond(x.sum() > w.sum(), lambda a, b: a * b + a, m.maximum, x, w)

    add("lax.cond", by_sum, *SAME, label="pred=sum(x)>sum(w)", **kw)

    def by_count(m, x, w):  # an integer predicate: true when any element is positive
        return lax(m).cond(m.sum(x > 0), lambda a, b: a + b, lambda a, b: a * b, x, w)

    add("lax.cond", by_count, *SAME, label="pred=count(x>0)", **kw)

    def pytree(m, x, w):  # operands and outputs as a dict, the outputs combined into one
        out = lax(m).cond(
            x.sum() < w.sum(),
            lambda d: {"p": d["x"] * d["w"], "q": d["x"]},
            lambda d: {"p": d["x"] + d["w"], "q": d["w"] * d["w"]},
            {"x": x, "w": w},
        )
        return out["p"] * out["q"]

    add("lax.cond", pytree, *SAME[1:3], label="pytree", **kw)


def _switch_rows(kw):
    def fixed(m, x, w, k):  # the index passed in: traced under jit
        return lax(m).switch(k, [lambda a, b: a * b, lambda a, b: a + b, m.maximum], x, w)

    for index in (-3, 0, 1, 2, 7):  # out of range below and above: clamped to 0 and 2
        add("lax.switch", fixed, *SAME, label=f"index={index}", indices=(index,), **kw)

    def by_count(m, x, w):  # the index from data: how many elements are positive (clamped)
        return lax(m).switch(m.sum(x > 0), [lambda a, b: a * b, lambda a, b: a + b], x, w)

    add("lax.switch", by_count, *SAME, label="index=count(x>0)", **kw)


def _while_rows(kw):
    def double(m, x):  # doubles until the sum of magnitudes passes 100 (at most 12 times)
        def body(c):
            return c[0] + c[0], c[1] + 1

        def more(c):
            return m.logical_and(c[1] < 12, m.abs(c[0]).sum() < 100)

        return lax(m).while_loop(more, body, (x, 0))[0]

    kw = {**kw, "reverse_raises": ("eager", "jit")}  # no reverse mode through a while_loop
    add("lax.while_loop", double, *ONE, label="double-until-100", dtypes=NUMBERS, **kw)

    def spread(m, x):  # bools: or-in each element's left neighbour until all are true
        def body(c):
            return m.logical_or(c[0], m.roll(c[0], 1)), c[1] + 1

        def more(c):
            return m.logical_and(c[1] < 8, m.logical_not(m.all(c[0])))

        return lax(m).while_loop(more, body, (x, 0))[0]

    add(
        "lax.while_loop",
        spread,
        ((),),
        ((5,),),
        ((0,),),
        ((3, 4),),
        label="spread",
        dtypes=BOOL,
        **kw,
    )

    def newton(m, x):  # square roots of positive x by Newton's method, to the dtype's precision
        tol = 1e-13 if x.dtype == np.float64 else 1e-5

        def body(c):
            return (c[0] + x / c[0]) / 2, c[1] + 1

        def more(c):
            return m.logical_and(c[1] < 40, m.any(m.abs(c[0] * c[0] - x) > tol * x))

        return lax(m).while_loop(more, body, (x, 0))[0]

    add("lax.while_loop", newton, *ONE, label="newton-sqrt", dtypes=FLOATS, domain="positive", **kw)


def _fori_rows(kw):
    def alternate(i, v, w, m):
        return m.where(i % 2 == 0, v * w, v + w)

    def static(m, x, w):
        return lax(m).fori_loop(1, 5, lambda i, v: alternate(i, v, w, m), x)

    add("lax.fori_loop", static, *SAME, label="static=1:5", **kw)

    def empty_range(m, x, w):
        return lax(m).fori_loop(3, 1, lambda i, v: alternate(i, v, w, m), x)

    add("lax.fori_loop", empty_range, *SAME[:3], label="static=3:1", **kw)

    def traced(m, x, w, lower, upper):  # bounds passed in: traced under jit
        return lax(m).fori_loop(lower, upper, lambda i, v: alternate(i, v, w, m), x)

    for lower, upper in ((0, 3), (2, 6), (4, 1)):
        add(
            "lax.fori_loop",
            traced,
            *SAME,
            label=f"bounds={lower}:{upper}",
            indices=(lower, upper),
            **kw,
        )

    def from_data(m, x, w):  # the trip count from data: how many elements are positive
        return lax(m).fori_loop(0, m.sum(x > 0), lambda i, v: alternate(i, v, w, m), w)

    # traced under jit: a while_loop there; eagerly the count is known and the loop a scan
    add("lax.fori_loop", from_data, *SAME, label="upper=count(x>0)", reverse_raises=("jit",), **kw)


def _scan_rows(kw):
    def step(c, a):
        return c + a, c * a

    # xs of (n, ...) and an initial carry of (...): n = 0 (no steps), 1, 3, 4, 5
    shapes = [((5,), ()), ((0,), ()), ((3, 4), (4,)), ((0, 3), (3,)), ((4, 2, 3), (2, 3))]
    shapes += [((1, 2), (2,))]
    for reverse in (False, True):

        def forward(m, xs, init, reverse=reverse):
            carry, ys = lax(m).scan(step, init, xs, reverse=reverse)
            return ys * carry  # both outputs in one result

        add("lax.scan", forward, *shapes, label=f"reverse={reverse}", **kw)

    def pair(m, xs, init):  # the (carry, ys) pair itself
        return lax(m).scan(step, init, xs)

    add("lax.scan", pair, *shapes[:3], label="pair", **kw)

    def pytree_xs(m, xs, ws):
        def body(c, x):
            return c * x["b"] + x["a"], {"s": c + x["a"], "t": c * x["b"]}

        carry, ys = lax(m).scan(body, xs[0], {"a": xs, "b": ws})
        return ys["s"] * carry + ys["t"]

    pairs = [((5,), (5,)), ((3, 4), (3, 4)), ((4, 0), (4, 0))]  # init xs[0]: n > 0
    add("lax.scan", pytree_xs, *pairs, label="xs=dict", **kw)

    for length in (0, 3):

        def no_xs(m, init, w, length=length):
            carry, ys = lax(m).scan(lambda c, _: (c * w + w, c), init, None, length=length)
            return ys + carry

        add("lax.scan", no_xs, *SAME[:4], label=f"xs=None,length={length}", **kw)


def _map_rows(kw):
    def square_plus_sum(m, xs):
        return lax(m).map(lambda a: a * a + a.sum(), xs)

    shapes = [((5,),), ((0,),), ((3, 4),), ((0, 3),), ((4, 0, 2),), ((3, 4, 2),)]
    add("lax.map", square_plus_sum, *shapes, **kw)

    def pytree(m, xs, ws):
        return lax(m).map(lambda p: m.maximum(p[0], p[1]) * p[0], (xs, ws))

    pairs = [((5,), (5,)), ((2, 3), (2, 3))]
    add("lax.map", pytree, *pairs, label="xs=pair", **kw)

    def captured(m, xs, s):  # the body closes over a scalar input
        return lax(m).map(lambda a: a * s + a, xs)

    pairs = [((5,), ()), ((0,), ()), ((2, 3), ()), ((0, 3), ())]
    add("lax.map", captured, *pairs, label="captured", **kw)

    def batched(m, xs):
        return lax(m).map(lambda a: m.maximum(a, a * a), xs, batch_size=2)

    add("lax.map", batched, ((5,),), ((4, 3),), ((3, 4, 2),), label="batch_size=2", **kw)


def _select_rows(kw):
    add(
        "lax.select",
        lambda m, x, w: lax(m).select(x > w, x, w),
        *SAME,
        label="pred=x>w",
        **kw,
    )
    add(
        "lax.select",
        lambda m, x, w: lax(m).select(x.sum() > 0, x * w, x + w),
        *SAME[:4],
        label="scalar-pred",
        **kw,
    )


def _control():
    kw = {"family": "control"}
    _cond_rows(kw)
    _switch_rows(kw)
    _while_rows(kw)
    _fori_rows(kw)
    _scan_rows(kw)
    _map_rows(kw)
    _select_rows(kw)


__all__ = ["LAX_CONTROL_FLOW", "NUMPY_LAX", "lax"]
