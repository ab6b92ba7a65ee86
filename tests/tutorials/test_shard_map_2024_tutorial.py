"""JAX's ``shard_map`` tutorial, 2024 edition, ported to spmd.

Source: jax-ml/jax docs/notebooks/shard_map.md at commit
bdb03309b5695d0f19d808ad710666c695335c37 ("SPMD multi-device parallelism with `shard_map`",
freshness-reviewed 2024-04-08: ``from jax.experimental.shard_map import shard_map``,
``mesh=`` arguments, ``mesh_utils.create_device_mesh``). Each code cell is copied with only
the imports swapped (``import jax`` -> ``import spmd as jax``, ``from jax.experimental...`` ->
``from spmd.experimental...`` and so on). The expected values are what JAX 0.10 printed for
the same cells on 8 CPU devices (JAX 0.10 has no ``jax.experimental.shard_map``, so the cells
ran there through ``jax.shard_map`` with ``check_vma`` and Auto mesh axis types). JAX computes
in float32 where spmd keeps float64.

That stored file holds about 2.3 MB of inline base64 illustrations. The text between them was
located by offset and every code cell of the "Collectives tutorial" is copied from it: the
imports, f1 to f9, ``psum`` written with ``psum_scatter`` and ``all_gather`` (a non-executed
``python`` block there, run here as an extra check), and ``psum_scatter`` written with
``ppermute``. So are Example 1's imports, ``mesh``/``device_put``, ``lhs``/``rhs`` and
``matmul_allgather`` cells. Two cells were not found, because they sit between the three large
profiler screenshots of Example 1: ``matmul_allgather_overlapped`` and
``matmul_allgather_overlapped_bidi`` follow the published 2024 tutorial and are not verified
against the stored file. Every other cell (the introduction, the in_specs/out_specs sections,
Example 2 and the neural-network section) is copied from the stored file. Where the tutorial
reuses ``mesh1d`` from the f1 cell, each test rebuilds it with that cell's line.
"""

# The tutorial's code is kept as written: lambdas assigned to names and zip without strict=.
# ruff: noqa: E731, B905

import ast
import re
from functools import partial

import numpy as np

import spmd as jax
import spmd.numpy as jnp
from spmd import lax
from spmd.experimental.shard_map import shard_map
from spmd.sharding import Mesh, NamedSharding
from spmd.sharding import PartitionSpec as P
from spmd.tree_util import tree_all, tree_map
from tests.tolerance import assert_close_product
from tests.tutorials.pictures import device_grids

NO_MESH_UTILS = "no spmd.experimental.mesh_utils (create_device_mesh)"


def allclose(a, b):
    return tree_all(tree_map(partial(jnp.allclose, atol=1e-2, rtol=1e-2), a, b))


def printed_arrays(text):
    """Every printed NumPy-style array in ``text`` (``[[0 1]\\n [4 5]]``, ``[3. 9.]``), in
    order, as NumPy arrays."""
    arrays, depth, start = [], 0, 0
    for pos, char in enumerate(text):
        if char == "[":
            if depth == 0:
                start = pos
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                body = re.sub(r"(\d)\.(?!\d)", r"\1.0", text[start : pos + 1])
                body = re.sub(r"(?<=[\d\]])\s+(?=[-\d\[])", ", ", body.strip())
                arrays.append(np.array(ast.literal_eval(body)))
    return arrays


def collective_printout(text):
    """Split the printout of a BEFORE/AFTER/FINAL RESULT cell into the blocks printed under
    each label, and the device ids the BEFORE and AFTER blocks are printed for."""
    before = text.split("BEFORE:")[1].split("AFTER:")[0]
    after = text.split("AFTER:")[1].split("FINAL RESULT:")[0]
    final = text.split("FINAL RESULT:")[1]
    ids = [[int(i) for i in re.findall(r"On cpu:(\d+)", part)] for part in (before, after)]
    return printed_arrays(before), printed_arrays(after), printed_arrays(final), ids


def assert_blocks(actual, expected):
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        np.testing.assert_array_equal(got, np.asarray(want))


def spec_of(x):
    """The array's PartitionSpec as a tuple, trailing Nones dropped (P('i', None) == P('i'))."""
    spec = list(x.sharding.spec)
    while spec and spec[-1] is None:
        spec.pop()
    return tuple(spec)


# ---------------------------------------------------------------------------------------------
# So, let's see a shard_map!
# ---------------------------------------------------------------------------------------------


def test_matmul_basic_sums_partial_products_into_row_blocks(capsys):
    from spmd.experimental import mesh_utils

    devices = mesh_utils.create_device_mesh((4, 2))
    mesh = Mesh(devices, axis_names=("x", "y"))

    a = jnp.arange(8 * 16.0).reshape(8, 16)
    b = jnp.arange(16 * 4.0).reshape(16, 4)

    @partial(shard_map, mesh=mesh, in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", None))
    def matmul_basic(a_block, b_block):
        # a_block: f32[2, 8]
        # b_block: f32[8, 4]
        c_partialsum = jnp.dot(a_block, b_block)
        c_block = jax.lax.psum(c_partialsum, "y")
        # c_block: f32[2, 4]
        return c_block

    c = matmul_basic(a, b)  # c: f32[8, 4]

    assert c.shape == (8, 4)
    assert spec_of(c) == ("x",)
    np.testing.assert_allclose(np.asarray(c)[0], [4960.0, 5080.0, 5200.0, 5320.0])
    np.testing.assert_allclose(np.asarray(c)[-1], [58720.0, 60632.0, 62544.0, 64456.0])
    np.testing.assert_allclose(
        np.asarray(c), np.arange(8 * 16.0).reshape(8, 16) @ np.arange(16 * 4.0).reshape(16, 4)
    )

    # "We can check the result is correct"
    assert bool(allclose(c, jnp.dot(a, b))) is True

    # "The result is sharded along its rows"
    capsys.readouterr()
    jax.debug.visualize_array_sharding(c)
    assert device_grids(capsys.readouterr().out) == [
        [["CPU 0,1"], ["CPU 2,3"], ["CPU 4,5"], ["CPU 6,7"]]
    ]

    # The same computation with jax.jit's automatic parallelization
    a = jax.device_put(a, NamedSharding(mesh, P("x", "y")))
    b = jax.device_put(b, NamedSharding(mesh, P("y", None)))

    @jax.jit
    def matmul_reference(a, b):
        c = jnp.dot(a, b)
        return jax.lax.with_sharding_constraint(c, NamedSharding(mesh, P("x", None)))

    c_ref = matmul_reference(a, b)
    assert bool(allclose(c_ref, jnp.dot(a, b))) is True
    assert spec_of(c_ref) == ("x",)

    # The blocks matmul_basic operates on are the same as matmul_reference's
    print("a blocks:")
    jax.debug.visualize_array_sharding(a)
    print("b blocks:")
    jax.debug.visualize_array_sharding(b)
    print("c blocks:")
    jax.debug.visualize_array_sharding(c)
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.endswith("blocks:")] == [
        "a blocks:",
        "b blocks:",
        "c blocks:",
    ]
    assert device_grids(out) == [
        [["CPU 0", "CPU 1"], ["CPU 2", "CPU 3"], ["CPU 4", "CPU 5"], ["CPU 6", "CPU 7"]],
        [["CPU 0,2,4,6"], ["CPU 1,3,5,7"]],
        [["CPU 0,1"], ["CPU 2,3"], ["CPU 4,5"], ["CPU 6,7"]],
    ]


# ---------------------------------------------------------------------------------------------
# Slow down, start with the basics! -- Rank-reducing vs rank-preserving maps
# ---------------------------------------------------------------------------------------------


def test_check_vmap_stacks_per_row_results(capsys):
    def check_vmap(f, xs):
        ans = jax.vmap(f, in_axes=(0,), out_axes=0)(xs)
        expected = jnp.stack([f(x) for x in xs])  # vmap reference semantics
        print(allclose(ans, expected))

    check_vmap(lambda x: x @ x, jnp.arange(12).reshape(4, 3))
    assert capsys.readouterr().out == "True\n"


def test_check_shmap_concatenates_per_block_results(capsys):
    devices = np.array(jax.devices()[:4])
    mesh = Mesh(devices, ("i",))  # mesh.shape['i'] = 4

    def check_shmap(f, y):
        ans = shard_map(f, mesh, in_specs=P("i"), out_specs=P("i"))(y)
        expected = jnp.concatenate([f(y_blk) for y_blk in jnp.split(y, mesh.shape["i"])])
        print(allclose(ans, expected))

    check_shmap(lambda x: x.T @ x, jnp.arange(32).reshape(8, 4))
    assert capsys.readouterr().out == "True\n"

    # What check_shmap compared: four (4, 4) blocks x_blk.T @ x_blk stacked into (16, 4),
    # split over 'i' as JAX does.
    ans = shard_map(lambda x: x.T @ x, mesh, in_specs=P("i"), out_specs=P("i"))(
        jnp.arange(32).reshape(8, 4)
    )
    y = np.arange(32).reshape(8, 4)
    assert ans.shape == (16, 4)
    assert spec_of(ans) == ("i",)
    np.testing.assert_array_equal(
        np.asarray(ans), np.concatenate([blk.T @ blk for blk in np.split(y, 4)])
    )


# ---------------------------------------------------------------------------------------------
# Controlling how each input is split (unconcatenated) and tiled with in_specs
# ---------------------------------------------------------------------------------------------


def test_in_specs_split_only_over_the_mesh_axes_they_name(capsys):
    from spmd.experimental import mesh_utils

    devices = mesh_utils.create_device_mesh((4, 2))
    mesh = Mesh(devices, ("i", "j"))

    @partial(shard_map, mesh=mesh, in_specs=P("i", None), out_specs=P("i", "j"))
    def f1(x_block):
        print(x_block.shape)  # prints (3, 12)
        return x_block

    x1 = jnp.arange(12 * 12).reshape(12, 12)
    y = f1(x1)

    # JAX prints the block shape (3, 12) (once: its eager body runs once for all devices).
    printed = capsys.readouterr().out.split()
    assert printed and set(printed) == {"(3,", "12)"}
    assert y.shape == (12, 24)
    assert spec_of(y) == ("i", "j")
    np.testing.assert_array_equal(np.asarray(y), np.tile(np.arange(144).reshape(12, 12), (1, 2)))

    @partial(shard_map, mesh=mesh, in_specs=P("i", "j"), out_specs=P("i", "j"))
    def f2(x_block):
        print(x_block.shape)
        return x_block

    x = jnp.arange(12 * 12).reshape(12, 12)
    x_ = jnp.tile(x, (1, mesh.shape["j"]))  # x_ has shape (12, 24)
    y = f2(x_)  # prints (3,12), and f1(x) == f2(x_)

    printed = capsys.readouterr().out.split()
    assert printed and set(printed) == {"(3,", "12)"}
    assert y.shape == (12, 24)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x_))
    np.testing.assert_array_equal(np.asarray(f1(x)), np.asarray(y))


# ---------------------------------------------------------------------------------------------
# Controlling how each output is assembled ... using out_specs
# ---------------------------------------------------------------------------------------------


def test_out_specs_untile_over_the_mesh_axes_they_omit(capsys):
    from spmd.experimental import mesh_utils

    # "using the same mesh as above"
    devices = mesh_utils.create_device_mesh((4, 2))
    mesh = Mesh(devices, ("i", "j"))

    x = jnp.array([[3.0]])

    z = shard_map(lambda: x, mesh=mesh, in_specs=(), out_specs=P("i", "j"))()
    print(z)  # prints the same as jnp.tile(x, (4, 2))

    z = shard_map(lambda: x, mesh=mesh, in_specs=(), out_specs=P("i", None))()
    print(z)  # prints the same as jnp.tile(x, (4, 1)), or just jnp.tile(x, (4,))

    z = shard_map(lambda: x, mesh=mesh, in_specs=(), out_specs=P(None, None))()
    print(z)  # prints the same as jnp.tile(x, (1, 1)), or just x

    # JAX prints [[3. 3.] x4], [[3.] x4] and [[3.]].
    assert_blocks(
        printed_arrays(capsys.readouterr().out),
        [np.full((4, 2), 3.0), np.full((4, 1), 3.0), np.full((1, 1), 3.0)],
    )

    @partial(shard_map, mesh=mesh, in_specs=P("i", "j"), out_specs=P("i", None))
    def f3(x_block):
        return jax.lax.psum(x_block, "j")

    x = jnp.arange(12 * 12).reshape(12, 12)
    y3 = f3(x)
    print(y3.shape)

    assert capsys.readouterr().out == "(12, 6)\n"
    assert spec_of(y3) == ("i",)
    xs = np.arange(144).reshape(12, 12)
    np.testing.assert_array_equal(np.asarray(y3), xs[:, :6] + xs[:, 6:])
    np.testing.assert_array_equal(np.asarray(y3)[0], [6, 8, 10, 12, 14, 16])

    @partial(shard_map, mesh=mesh, in_specs=P("i", "j"), out_specs=P(None, "j"))
    def f4(x_block):
        return jax.lax.psum(x_block, "i")

    x = jnp.arange(12 * 12).reshape(12, 12)
    y4 = f4(x)
    print(y4.shape)  # (3,12)

    @partial(shard_map, mesh=mesh, in_specs=P("i", "j"), out_specs=P(None, None))
    def f5(x_block):
        return jax.lax.psum(x_block, ("i", "j"))

    y5 = f5(x)
    print(y5.shape)  # (3,6)

    assert capsys.readouterr().out == "(3, 12)\n(3, 6)\n"
    assert spec_of(y4) == (None, "j")
    assert spec_of(y5) == ()
    np.testing.assert_array_equal(
        np.asarray(y4),
        [
            [216, 220, 224, 228, 232, 236, 240, 244, 248, 252, 256, 260],
            [264, 268, 272, 276, 280, 284, 288, 292, 296, 300, 304, 308],
            [312, 316, 320, 324, 328, 332, 336, 340, 344, 348, 352, 356],
        ],
    )
    np.testing.assert_array_equal(
        np.asarray(y5),
        [
            [456, 464, 472, 480, 488, 496],
            [552, 560, 568, 576, 584, 592],
            [648, 656, 664, 672, 680, 688],
        ],
    )


# ---------------------------------------------------------------------------------------------
# Collectives tutorial
# ---------------------------------------------------------------------------------------------

PI_DIGITS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2]
PI_BLOCKS = [[3, 1, 4, 1], [5, 9, 2, 6], [5, 3, 5, 8], [9, 7, 1, 2]]
BLOCKS_2X2 = [[[0, 1], [4, 5]], [[2, 3], [6, 7]], [[8, 9], [12, 13]], [[10, 11], [14, 15]]]


# Collectives tutorial: psum
def test_psum_over_one_axis_gives_every_device_the_sum(capsys):
    mesh1d = Mesh(jax.devices()[:4], ("i",))

    @partial(shard_map, mesh=mesh1d, in_specs=P("i"), out_specs=P(None))
    def f1(x_block):
        print("BEFORE:\n", x_block)
        y_block = jax.lax.psum(x_block, "i")
        print("AFTER:\n", y_block)
        return y_block

    x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
    y = f1(x)
    print("FINAL RESULT:\n", y)

    before, after, final, ids = collective_printout(capsys.readouterr().out)
    assert ids == [[0, 1, 2, 3], [0, 1, 2, 3]]
    assert_blocks(before, PI_BLOCKS)
    assert_blocks(after, [[22, 20, 12, 17]] * 4)
    assert_blocks(final, [[22, 20, 12, 17]])
    np.testing.assert_array_equal(np.asarray(y), [22, 20, 12, 17])
    assert y.is_fully_replicated


# Collectives tutorial: psum over one axis of a 2-D mesh, then over both
def test_psum_on_a_2d_mesh_over_one_axis_and_over_both(capsys):
    mesh2d = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("i", "j"))

    @partial(shard_map, mesh=mesh2d, in_specs=P("i", "j"), out_specs=P(None, "j"))
    def f2(x_block):
        print("BEFORE:\n", x_block)
        y_block = jax.lax.psum(x_block, "i")
        print("AFTER:\n", y_block)
        return y_block

    y = f2(jnp.arange(16).reshape(4, 4))
    print("FINAL RESULT:\n", y)

    before, after, final, ids = collective_printout(capsys.readouterr().out)
    assert ids == [[0, 1, 2, 3], [0, 1, 2, 3]]
    assert_blocks(before, BLOCKS_2X2)
    assert_blocks(
        after,
        [[[8, 10], [16, 18]], [[12, 14], [20, 22]], [[8, 10], [16, 18]], [[12, 14], [20, 22]]],
    )
    assert_blocks(final, [[[8, 10, 12, 14], [16, 18, 20, 22]]])
    np.testing.assert_array_equal(np.asarray(y), [[8, 10, 12, 14], [16, 18, 20, 22]])
    assert spec_of(y) == (None, "j")

    @partial(shard_map, mesh=mesh2d, in_specs=P("i", "j"), out_specs=P(None, None))
    def f3(x_block):
        print("BEFORE:\n", x_block)
        y_block = jax.lax.psum(x_block, ("i", "j"))
        print("AFTER:\n", y_block)
        return y_block

    y = f3(jnp.arange(16).reshape(4, 4))
    print("FINAL RESULT:\n", y)

    before, after, final, ids = collective_printout(capsys.readouterr().out)
    assert ids == [[0, 1, 2, 3], [0, 1, 2, 3]]
    assert_blocks(before, BLOCKS_2X2)
    assert_blocks(after, [[[20, 24], [36, 40]]] * 4)
    assert_blocks(final, [[[20, 24], [36, 40]]])
    np.testing.assert_array_equal(np.asarray(y), [[20, 24], [36, 40]])
    assert y.is_fully_replicated


# Collectives tutorial: all_gather, tiled and stacked
def test_all_gather_tiled_concatenates_and_untiled_stacks(capsys):
    mesh1d = Mesh(jax.devices()[:4], ("i",))  # from the psum cell (f1)

    @partial(shard_map, mesh=mesh1d, in_specs=P("i"), out_specs=P("i"))
    def f4(x_block):
        print("BEFORE:\n", x_block)
        y_block = jax.lax.all_gather(x_block, "i", tiled=True)
        print("AFTER:\n", y_block)
        return y_block

    x = jnp.array([3, 9, 5, 2])
    y = f4(x)
    print("FINAL RESULT:\n", y)

    before, after, final, ids = collective_printout(capsys.readouterr().out)
    assert ids == [[0, 1, 2, 3], [0, 1, 2, 3]]
    assert_blocks(before, [[3], [9], [5], [2]])
    assert_blocks(after, [[3, 9, 5, 2]] * 4)
    assert_blocks(final, [[3, 9, 5, 2] * 4])
    np.testing.assert_array_equal(np.asarray(y), [3, 9, 5, 2] * 4)
    assert spec_of(y) == ("i",)

    @partial(shard_map, mesh=mesh1d, in_specs=P("i"), out_specs=P("i"))
    def f5(x_block):
        print("BEFORE:\n", x_block)
        y_block = jax.lax.all_gather(x_block, "i", tiled=False)
        print("AFTER:\n", y_block)
        return y_block

    y = f5(x)
    print("FINAL RESULT:\n", y)

    before, after, final, ids = collective_printout(capsys.readouterr().out)
    assert ids == [[0, 1, 2, 3], [0, 1, 2, 3]]
    assert_blocks(before, [[3], [9], [5], [2]])
    assert_blocks(after, [[[3], [9], [5], [2]]] * 4)
    assert_blocks(final, [[[3], [9], [5], [2]] * 4])
    assert y.shape == (16, 1)
    np.testing.assert_array_equal(np.asarray(y), np.array([[3], [9], [5], [2]] * 4))


# Collectives tutorial: psum_scatter
def test_psum_scatter_leaves_each_device_one_piece_of_the_sum(capsys):
    mesh1d = Mesh(jax.devices()[:4], ("i",))  # from the psum cell (f1)

    @partial(shard_map, mesh=mesh1d, in_specs=P("i"), out_specs=P("i"))
    def f6(x_block):
        print("BEFORE:\n", x_block)
        y_block = jax.lax.psum_scatter(x_block, "i", tiled=True)
        print("AFTER:\n", y_block)
        return y_block

    x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
    y = f6(x)
    print("FINAL RESULT:\n", y)

    before, after, final, ids = collective_printout(capsys.readouterr().out)
    assert ids == [[0, 1, 2, 3], [0, 1, 2, 3]]
    assert_blocks(before, PI_BLOCKS)
    assert_blocks(after, [[22], [20], [12], [17]])
    assert_blocks(final, [[22, 20, 12, 17]])
    np.testing.assert_array_equal(np.asarray(y), [22, 20, 12, 17])
    assert spec_of(y) == ("i",)

    # "psum as psum_scatter followed by all_gather"
    def psum(x, axis_name):
        summed_chunk = jax.lax.psum_scatter(x, axis_name)
        return jax.lax.all_gather(summed_chunk, axis_name)

    # (The tutorial only defines it; JAX gives [22 20 12 17] on each of the 4 devices.)
    y = shard_map(lambda b: psum(b, "i"), mesh=mesh1d, in_specs=P("i"), out_specs=P("i"))(x)
    np.testing.assert_array_equal(np.asarray(y), [22, 20, 12, 17] * 4)


# Collectives tutorial: ppermute
def test_ppermute_shifts_blocks_around_the_ring(capsys):
    mesh1d = Mesh(jax.devices()[:4], ("i",))  # from the psum cell (f1)

    @partial(shard_map, mesh=mesh1d, in_specs=P("i"), out_specs=P("i"))
    def f7(x_block):
        sz = jax.lax.psum(1, "i")
        print("BEFORE:\n", x_block)
        y_block = jax.lax.ppermute(x_block, "i", [(i, (i + 1) % sz) for i in range(sz)])
        print("AFTER:\n", y_block)
        return y_block

    y = f7(jnp.arange(8))
    print("FINAL RESULT:\n", y)

    before, after, final, ids = collective_printout(capsys.readouterr().out)
    assert ids == [[0, 1, 2, 3], [0, 1, 2, 3]]
    assert_blocks(before, [[0, 1], [2, 3], [4, 5], [6, 7]])
    assert_blocks(after, [[6, 7], [0, 1], [2, 3], [4, 5]])
    assert_blocks(final, [[6, 7, 0, 1, 2, 3, 4, 5]])
    np.testing.assert_array_equal(np.asarray(y), [6, 7, 0, 1, 2, 3, 4, 5])


# Collectives tutorial: psum_scatter written with ppermute
def test_psum_scatter_written_with_ppermute_matches_the_builtin(capsys):
    mesh1d = Mesh(jax.devices()[:4], ("i",))  # from the psum cell (f1)

    def psum_scatter(x, axis_name, *, tiled=False):
        size = jax.lax.psum(1, axis_name)
        idx = jax.lax.axis_index(axis_name)  # function instance index along axis_name
        if tiled:
            x = x.reshape(size, -1, *x.shape[1:])  # split leading axis
        shift = partial(
            jax.lax.ppermute, axis_name=axis_name, perm=[(i, (i - 1) % size) for i in range(size)]
        )
        for i in range(1, size):
            update = shift(x[(idx + i) % size])
            x = x.at[(idx + i + 1) % size].add(update)
        return x[idx]

    @partial(shard_map, mesh=mesh1d, in_specs=P("i"), out_specs=P("i"))
    def f8(x_block):
        print("BEFORE:\n", x_block)
        y_block = psum_scatter(x_block, "i", tiled=True)
        print("AFTER:\n", y_block)
        return y_block

    x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
    y = f8(x)
    print("FINAL RESULT:\n", y)

    before, after, final, ids = collective_printout(capsys.readouterr().out)
    assert ids == [[0, 1, 2, 3], [0, 1, 2, 3]]
    assert_blocks(before, PI_BLOCKS)
    assert_blocks(after, [[22], [20], [12], [17]])
    assert_blocks(final, [[22, 20, 12, 17]])
    np.testing.assert_array_equal(np.asarray(y), [22, 20, 12, 17])


# Collectives tutorial: all_to_all
def test_all_to_all_transposes_blocks_across_devices(capsys):
    mesh1d = Mesh(jax.devices()[:4], ("i",))  # from the psum cell (f1)

    @partial(shard_map, mesh=mesh1d, in_specs=P("i"), out_specs=P("i"))
    def f9(x_block):
        print("BEFORE:\n", x_block)
        y_block = jax.lax.all_to_all(x_block, "i", split_axis=0, concat_axis=0, tiled=True)
        print("AFTER:\n", y_block)
        return y_block

    x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
    y = f9(x)
    print("FINAL RESULT:\n", y)

    before, after, final, ids = collective_printout(capsys.readouterr().out)
    assert ids == [[0, 1, 2, 3], [0, 1, 2, 3]]
    assert_blocks(before, PI_BLOCKS)
    assert_blocks(after, [[3, 5, 5, 9], [1, 9, 3, 7], [4, 2, 5, 1], [1, 6, 8, 2]])
    assert_blocks(final, [[3, 5, 5, 9, 1, 9, 3, 7, 4, 2, 5, 1, 1, 6, 8, 2]])
    np.testing.assert_array_equal(np.asarray(y), np.array(PI_DIGITS).reshape(4, 4).T.reshape(-1))


# ---------------------------------------------------------------------------------------------
# Example 1: all-gather on one side / Example 2: psum_scatter the result
# ---------------------------------------------------------------------------------------------

# jax.random.normal(jax.random.key(0), (8, 8)) @ jax.random.normal(jax.random.key(1), (8, 4)):
# JAX's first row and total.
LHS_AT_RHS_ROW0 = [3.2363906, 0.5495652, 5.638047, 1.3186083]
LHS_AT_RHS_SUM = 10.515167


def test_matmul_examples_all_gather_and_psum_scatter_give_lhs_at_rhs(capsys):
    mesh = Mesh(jax.devices()[:4], ("i",))

    def device_put(x, pspec):
        return jax.device_put(x, NamedSharding(mesh, pspec))

    lhs_spec = P("i", None)
    lhs = device_put(jax.random.normal(jax.random.key(0), (8, 8)), lhs_spec)

    rhs_spec = P("i", None)
    rhs = device_put(jax.random.normal(jax.random.key(1), (8, 4)), rhs_spec)

    expected = np.asarray(lhs) @ np.asarray(rhs)
    np.testing.assert_allclose(expected[0], LHS_AT_RHS_ROW0, rtol=1e-5)
    np.testing.assert_allclose(expected.sum(), LHS_AT_RHS_SUM, rtol=1e-5)

    @jax.jit
    @partial(shard_map, mesh=mesh, in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_allgather(lhs_block, rhs_block):
        rhs = jax.lax.all_gather(rhs_block, "i", tiled=True)
        return lhs_block @ rhs

    out = matmul_allgather(lhs, rhs)
    print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))
    assert spec_of(out) == ("i",)
    assert_close_product(out, expected, lhs, rhs)

    @jax.jit
    @partial(shard_map, mesh=mesh, in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_allgather_overlapped(lhs_block, rhs_block):
        size = jax.lax.psum(1, "i")
        idx = jax.lax.axis_index("i")
        shift = partial(
            jax.lax.ppermute, axis_name="i", perm=[(i, (i + 1) % size) for i in range(size)]
        )

        B = lhs_block.shape[1] // size
        lhs_blocks = lambda i: lax.dynamic_slice_in_dim(lhs_block, i * B, B, 1)

        out_block = lhs_blocks(idx) @ rhs_block
        for i in range(1, size):
            rhs_block = shift(rhs_block)
            out_block += lhs_blocks((idx - i) % size) @ rhs_block
        return out_block

    out = matmul_allgather_overlapped(lhs, rhs)
    print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))
    assert_close_product(out, expected, lhs, rhs)

    @jax.jit
    @partial(shard_map, mesh=mesh, in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_allgather_overlapped_bidi(lhs_block, rhs_block):
        size = jax.lax.psum(1, "i")
        idx = jax.lax.axis_index("i")
        shift_up = partial(
            jax.lax.ppermute, axis_name="i", perm=[(i, (i + 1) % size) for i in range(size)]
        )
        shift_dn = partial(
            jax.lax.ppermute, axis_name="i", perm=[(i, (i - 1) % size) for i in range(size)]
        )

        B = lhs_block.shape[1] // size // 2  # half-size blocks
        lhs_blocks = lambda i, hi: lax.dynamic_slice_in_dim(lhs_block, (2 * i + hi) * B, B, 1)

        rhs_block_lo, rhs_block_hi = jnp.split(rhs_block, 2, axis=0)
        out_block = lhs_blocks(idx, 0) @ rhs_block_lo
        out_block += lhs_blocks(idx, 1) @ rhs_block_hi
        for i in range(1, size):
            rhs_block_lo = shift_up(rhs_block_lo)
            rhs_block_hi = shift_dn(rhs_block_hi)
            out_block += lhs_blocks((idx - i) % size, 0) @ rhs_block_lo
            out_block += lhs_blocks((idx + i) % size, 1) @ rhs_block_hi
        return out_block

    out = matmul_allgather_overlapped_bidi(lhs, rhs)
    print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))
    assert_close_product(out, expected, lhs, rhs)

    # Example 2: psum_scatter the result
    lhs_spec = P(None, "i")
    lhs = device_put(lhs, lhs_spec)

    rhs_spec = P("i", None)
    rhs = device_put(rhs, rhs_spec)

    @partial(shard_map, mesh=mesh, in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_psumscatter(lhs_block, rhs_block):
        out_summand = lhs_block @ rhs_block
        return jax.lax.psum_scatter(out_summand, "i", tiled=True)

    out = matmul_psumscatter(lhs, rhs)
    print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))
    assert spec_of(out) == ("i",)
    assert_close_product(out, expected, lhs, rhs)

    @partial(shard_map, mesh=mesh, in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_psumscatter_overlapped(lhs_block, rhs_block):
        size = jax.lax.psum(1, "i")
        idx = jax.lax.axis_index("i")
        shift = partial(
            jax.lax.ppermute, axis_name="i", perm=[(i, (i - 1) % size) for i in range(size)]
        )
        lhs_block = lhs_block.reshape(size, -1, lhs_block.shape[1])  # split 1st axis

        out_summand = lhs_block[(idx + 1) % size] @ rhs_block
        for i in range(1, size):
            out_summand = shift(out_summand)
            out_summand += lhs_block[(idx + i + 1) % size] @ rhs_block
        return out_summand

    out = matmul_psumscatter_overlapped(lhs, rhs)
    print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))
    assert_close_product(out, expected, lhs, rhs)

    @partial(shard_map, mesh=mesh, in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_psumscatter_overlapped_bidi(lhs_block, rhs_block):
        size = jax.lax.psum(1, "i")
        idx = jax.lax.axis_index("i")
        shift_up = partial(
            jax.lax.ppermute, axis_name="i", perm=[(i, (i + 1) % size) for i in range(size)]
        )
        shift_dn = partial(
            jax.lax.ppermute, axis_name="i", perm=[(i, (i - 1) % size) for i in range(size)]
        )

        B = lhs_block.shape[0] // size // 2  # half-size blocks
        lhs_blocks = lambda i, hi: lax.dynamic_slice_in_dim(lhs_block, (2 * i + hi) * B, B, 0)

        out_summand_lo = lhs_blocks((idx - 1) % size, 0) @ rhs_block
        out_summand_hi = lhs_blocks((idx + 1) % size, 1) @ rhs_block
        for i in range(1, size):
            out_summand_lo = shift_up(out_summand_lo)
            out_summand_hi = shift_dn(out_summand_hi)
            out_summand_lo += lhs_blocks((idx - i - 1) % size, 0) @ rhs_block
            out_summand_hi += lhs_blocks((idx + i + 1) % size, 1) @ rhs_block
        return jnp.concatenate([out_summand_lo, out_summand_hi])

    out = matmul_psumscatter_overlapped_bidi(lhs, rhs)
    print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))
    assert_close_product(out, expected, lhs, rhs)

    # JAX prints True for each of the six matmuls.
    assert capsys.readouterr().out == "True\n" * 6


# ---------------------------------------------------------------------------------------------
# Neural networks
# ---------------------------------------------------------------------------------------------

# jax.jit(loss)(params, batch) for the tutorial's network and data: JAX prints 11.9203
# (float32 11.920299); every parallel variant prints the same.
LOSS = 11.920299


def predict(params, inputs):
    for W, b in params:
        outputs = jnp.dot(inputs, W) + b
        inputs = jax.nn.relu(outputs)
    return outputs


def loss(params, batch):
    inputs, targets = batch
    predictions = predict(params, inputs)
    return jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))


def init_layer(key, n_in, n_out):
    k1, k2 = jax.random.split(key)
    W = jax.random.normal(k1, (n_in, n_out)) / jnp.sqrt(n_in)
    b = jax.random.normal(k2, (n_out,))
    return W, b


def init(key, layer_sizes, batch_size):
    key, *keys = jax.random.split(key, len(layer_sizes))
    params = list(map(init_layer, keys, layer_sizes[:-1], layer_sizes[1:]))

    key, *keys = jax.random.split(key, 3)
    inputs = jax.random.normal(keys[0], (batch_size, layer_sizes[0]))
    targets = jax.random.normal(keys[1], (batch_size, layer_sizes[-1]))

    return params, (inputs, targets)


layer_sizes = [784, 128, 128, 128, 128, 128, 8]
batch_size = 32


def printed_losses(capsys):
    return [float(line) for line in capsys.readouterr().out.split()]


# Neural networks: the reference network on one device
def test_reference_loss_of_the_toy_network():
    params, batch = init(jax.random.PRNGKey(0), layer_sizes, batch_size)
    assert [W.shape for W, _ in params] == [
        (784, 128),
        (128, 128),
        (128, 128),
        (128, 128),
        (128, 128),
        (128, 8),
    ]
    assert batch[0].shape == (32, 784) and batch[1].shape == (32, 8)
    np.testing.assert_allclose(float(jax.jit(loss)(params, batch)), LOSS, rtol=1e-5)


# Neural networks: 8-way batch data parallelism
def test_data_parallel_loss_matches_the_reference(capsys):
    params, batch = init(jax.random.PRNGKey(0), layer_sizes, batch_size)

    from spmd.experimental import mesh_utils

    devices = mesh_utils.create_device_mesh((8,))

    # replicate initial params on all devices, shard data batch over devices
    mesh = Mesh(devices, ("batch",))
    batch = jax.device_put(batch, NamedSharding(mesh, P("batch")))
    params = jax.device_put(params, NamedSharding(mesh, P()))

    # adapt the loss function to sum the losses across devices
    def loss_dp(params, batch):
        @partial(shard_map, mesh=mesh, in_specs=P("batch", None), out_specs=P())
        def loss_spmd(local_batch):
            inputs, targets = local_batch
            predictions = predict(params, inputs)  # use reference 'predict`
            local_loss = jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))
            return jax.lax.pmean(local_loss, "batch")

        return loss_spmd(batch)

    print(jax.jit(loss)(params, batch))
    print(jax.jit(loss_dp)(params, batch))
    np.testing.assert_allclose(printed_losses(capsys), [LOSS, LOSS], rtol=1e-5)
    assert spec_of(batch[0]) == ("batch",)
    assert params[0][0].is_fully_replicated


# Neural networks: 8-way batch data parallelism, the gradient check
def test_data_parallel_gradients_match_the_reference(capsys):
    params, batch = init(jax.random.PRNGKey(0), layer_sizes, batch_size)

    from spmd.experimental import mesh_utils

    devices = mesh_utils.create_device_mesh((8,))
    mesh = Mesh(devices, ("batch",))
    batch = jax.device_put(batch, NamedSharding(mesh, P("batch")))
    params = jax.device_put(params, NamedSharding(mesh, P()))

    def loss_dp(params, batch):
        @partial(shard_map, mesh=mesh, in_specs=P("batch", None), out_specs=P())
        def loss_spmd(local_batch):
            inputs, targets = local_batch
            predictions = predict(params, inputs)  # use reference 'predict`
            local_loss = jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))
            return jax.lax.pmean(local_loss, "batch")

        return loss_spmd(batch)

    print(
        allclose(jax.jit(jax.grad(loss))(params, batch), jax.jit(jax.grad(loss_dp))(params, batch))
    )
    assert capsys.readouterr().out == "True\n"


# Neural networks: 8-way fully sharded data parallelism (FSDP)
def test_fsdp_loss_and_gradients_match_the_reference(capsys):
    params, batch = init(jax.random.PRNGKey(0), layer_sizes, batch_size)

    from spmd.experimental import mesh_utils

    devices = mesh_utils.create_device_mesh((8,))  # from the data-parallel cell

    # shard data batch *and params* over devices
    mesh = Mesh(devices, ("batch",))
    batch = jax.device_put(batch, NamedSharding(mesh, P("batch")))
    params = jax.device_put(params, NamedSharding(mesh, P("batch")))

    # adapt the prediction function to gather weights just before their use,
    # and to re-gather them on the backward pass (rather than saving them)
    @partial(jax.remat, policy=lambda op, *_, **__: str(op) != "all_gather")
    def predict_fsdp(params_frag, inputs):
        for W_frag, b_frag in params_frag:
            W = jax.lax.all_gather(W_frag, "batch", tiled=True)
            b = jax.lax.all_gather(b_frag, "batch", tiled=True)
            outputs = jnp.dot(inputs, W) + b
            inputs = jax.nn.relu(outputs)
        return outputs

    def loss_fsdp(params, batch):
        @partial(shard_map, mesh=mesh, in_specs=P("batch"), out_specs=P())
        def loss_spmd(local_params, local_batch):
            inputs, targets = local_batch
            predictions = predict_fsdp(local_params, inputs)
            local_loss = jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))
            return jax.lax.pmean(local_loss, "batch")

        return loss_spmd(params, batch)

    print(jax.jit(loss)(params, batch))
    print(jax.jit(loss_fsdp)(params, batch))

    print(
        allclose(
            jax.jit(jax.grad(loss))(params, batch), jax.jit(jax.grad(loss_fsdp))(params, batch)
        )
    )
    out = capsys.readouterr().out.split()
    np.testing.assert_allclose([float(v) for v in out[:2]], [LOSS, LOSS], rtol=1e-5)
    assert out[2] == "True"


def tensor_parallel_loss(mesh):
    """The TP section's definitions, for the mesh it builds."""

    def predict_tp(params, inputs):
        for W, b in params:
            outputs = gemm_tp(inputs, W, b)
            inputs = jax.nn.relu(outputs)
        return outputs

    @partial(
        shard_map,
        mesh=mesh,
        in_specs=(P(None, "feats"), P("feats", None), P("feats")),
        out_specs=P(None, "feats"),
    )
    def gemm_tp(inputs, W, b):
        block_result = jnp.dot(inputs, W)
        return jax.lax.psum_scatter(block_result, "feats", scatter_dimension=1, tiled=True) + b

    def loss_tp(params, batch):
        inputs, targets = batch
        predictions = predict_tp(params, inputs)
        return jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))  # NOTE psum!

    return loss_tp


# Neural networks: 8-way tensor parallelism (TP). The tutorial only defines loss_tp; JAX
# gives 11.920299 for jax.jit(loss_tp)(params, batch).
def test_tensor_parallel_loss_matches_the_reference():
    params, batch = init(jax.random.PRNGKey(0), layer_sizes, batch_size)

    from spmd.experimental import mesh_utils

    devices = mesh_utils.create_device_mesh((8,))
    mesh = Mesh(devices, ("feats",))

    batch = jax.device_put(batch, NamedSharding(mesh, P(None, "feats")))
    params = jax.device_put(params, NamedSharding(mesh, P("feats")))

    loss_tp = tensor_parallel_loss(mesh)
    np.testing.assert_allclose(float(jax.jit(loss_tp)(params, batch)), LOSS, rtol=1e-5)
    assert spec_of(batch[0]) == (None, "feats")
    assert spec_of(params[0][0]) == ("feats",)


# Neural networks: FSDP + TP, with shard_map at the top level
def test_fsdp_plus_tp_loss_and_gradients_match_the_reference(capsys):
    params, batch = init(jax.random.PRNGKey(0), layer_sizes, batch_size)

    from spmd.experimental import mesh_utils

    devices = mesh_utils.create_device_mesh((4, 2))
    mesh = Mesh(devices, ("batch", "feats"))

    batch_ = jax.device_put(batch, NamedSharding(mesh, P("batch", "feats")))
    params_ = jax.device_put(params, NamedSharding(mesh, P(("batch", "feats"))))

    # mostly same as previous predict_fsdp definition, except we call gemm_tp
    @partial(jax.remat, policy=lambda op, *_, **__: str(op) != "all_gather")
    def predict_fsdp_tp(params_frag, inputs):
        for W_frag, b_frag in params_frag:
            W = jax.lax.all_gather(W_frag, "batch", tiled=True)
            b = jax.lax.all_gather(b_frag, "batch", tiled=True)
            block_result = jnp.dot(inputs, W)
            outputs = (
                jax.lax.psum_scatter(block_result, "feats", scatter_dimension=1, tiled=True) + b
            )
            inputs = jax.nn.relu(outputs)
        return outputs

    @partial(
        shard_map,
        mesh=mesh,
        in_specs=(P(("feats", "batch")), P("batch", "feats")),
        out_specs=P(),
    )
    def loss_fsdp_tp(local_params, local_batch):
        inputs, targets = local_batch
        predictions = predict_fsdp_tp(local_params, inputs)
        sq_err = jax.lax.psum(jnp.sum((predictions - targets) ** 2, axis=-1), "feats")
        return jax.lax.pmean(jnp.mean(sq_err), "batch")

    print(jax.jit(loss)(params, batch))
    print(jax.jit(loss_fsdp_tp)(params_, batch_))

    print(
        allclose(
            jax.jit(jax.grad(loss))(params, batch),
            jax.jit(jax.grad(loss_fsdp_tp))(params, batch),
        )
    )
    out = capsys.readouterr().out.split()
    np.testing.assert_allclose([float(v) for v in out[:2]], [LOSS, LOSS], rtol=1e-5)
    assert out[2] == "True"


# Neural networks: SPMD pipeline parallelism (PP)
def test_spmd_pipeline_loss_matches_the_reference(capsys):
    params, batch = init(jax.random.PRNGKey(0), layer_sizes, batch_size)

    L = len(params) - 2  # num layers, excluding first and last
    N = batch_size  # batch size
    F = params[0][0].shape[1]  # num features

    # choose some pipeline parameters
    S = 2  # number of stages
    B = 8  # size of each microbatch
    assert L % S == 0, "S (number of stages) must divide L (number of inner layers)"

    # compute some useful quantities
    M, ragged = divmod(N, B)  # M is number of microbatches
    assert not ragged, "B (size of each microbatch) must divide total batch size"
    K, ragged = divmod(M, S)  # K is microbatches per stage
    assert not ragged, "S (number of stages) must divide number of microbatches"
    print(f"{S} stages, {L // S} layer(s) per stage, {L} pipelined layers total")
    print(f"{B} examples per microbatch, {M} microbatches total")

    assert capsys.readouterr().out == (
        "2 stages, 2 layer(s) per stage, 4 pipelined layers total\n"
        "8 examples per microbatch, 4 microbatches total\n"
    )

    mesh = Mesh(jax.devices()[:S], ("stages",))

    def predict_pp(params, inputs):
        (W_first, b_first), inner_params, (W_last, b_last) = params
        inputs = jax.nn.relu(jnp.dot(inputs, W_first) + b_first)
        inputs = spmd_pipeline(lambda Wb, x: jax.nn.relu(x @ Wb[0] + Wb[1]), inner_params, inputs)
        outputs = jnp.dot(inputs, W_last) + b_last
        return outputs

    @partial(shard_map, mesh=mesh, in_specs=((P(), P("stages"), P()), P("stages")), out_specs=P())
    def loss_pp(params, batch):
        inputs, targets = batch
        predictions = predict_pp(params, inputs.reshape(K, B, -1)).reshape(K * B, -1)
        local_loss = jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))
        return jax.lax.pmean(local_loss, "stages")

    def spmd_pipeline(fn, stage_params, inputs):
        stage = jax.lax.axis_index("stages")
        outputs = jnp.zeros_like(inputs) * jnp.nan
        state = jnp.zeros((L // S, B, F)) * jnp.nan
        for i in range(M + L - 1):
            state = state.at[0].set(jnp.where(stage == 0, inputs[i % K], state[0]))
            state = jax.vmap(fn)(stage_params, state)
            outputs = outputs.at[(i - L + 1) % K].set(
                jnp.where(stage == S - 1, state[-1], outputs[(i - L + 1) % K])
            )
            state, inputs, outputs = shift(i, state, inputs, outputs)
        outputs = jax.lax.ppermute(outputs, "stages", [(i, (i + 1) % S) for i in range(S)])
        return outputs

    def shift(i, state, inputs, outputs):
        sh = lambda x, d: jax.lax.ppermute(x, "stages", [(i, (i + d) % S) for i in range(S)])
        state = jnp.roll(state, +1, axis=0).at[0].set(sh(state[-1], +1))
        if (i % K) == (-1 % K):
            inputs = sh(inputs, +1)
        if ((i - L + 1) % K) == (-1 % K):
            outputs = sh(outputs, +1)
        return state, inputs, outputs

    first_params, *inner_params, last_params = params
    Ws, bs = zip(*inner_params)
    params_stacked = jnp.stack(Ws), jnp.stack(bs)
    first_params = jax.device_put(first_params, NamedSharding(mesh, P()))
    params_stacked = jax.device_put(params_stacked, NamedSharding(mesh, P("stages")))
    last_params = jax.device_put(last_params, NamedSharding(mesh, P()))
    params_ = first_params, params_stacked, last_params

    batch_ = jax.device_put(batch, NamedSharding(mesh, P("stages")))

    print(jax.jit(loss)(params, batch))
    print(jax.jit(loss_pp)(params_, batch_))
    np.testing.assert_allclose(printed_losses(capsys), [LOSS, LOSS], rtol=1e-5)

    _ = jax.jit(jax.grad(loss_pp))(params_, batch_)  # don't crash
