"""JAX's "Manual parallelism with shard_map" tutorial, ported to spmd.

Source: jax-ml/jax docs/notebooks/shard_map.md at commit
019c6d63a55844262156317abc0ad5fa46696197 (the edition that uses ``jax.shard_map``,
``jax.set_mesh`` and ``jax.typeof`` with varying manual axes). Each code cell is copied with
only the imports swapped (``import jax`` -> ``import spmd as jax`` and so on); the expected
values are what JAX 0.10 printed for the same cells.

The stored copy of that file carries its diagrams and profiles as inline PNGs (2.3 MB in
all). The collectives tutorial's cells (the imports cell, ``f1`` to ``f8`` and the
``psum_scatter``-with-``ppermute`` helper, read at offsets ~150k, ~266k, ~390k and ~597k of
the 2,364,124 characters) are copied verbatim like the rest; the tests that run cells
after ``f4`` without ``mesh=`` first make ``mesh1d`` current again, as the f4 cell left it.
Example 1's two overlapped matmuls (``matmul_allgather_overlapped`` and its ``_bidi``
version) sit in the only text gap between its two inline profile screenshots (the first
runs from 797,014 to ~1,447.6k, the second starts right after the ``_bidi`` cells, ~1,450k)
and are copied verbatim too. Under JAX 0.10 ``Mesh(...)`` defaults to Auto axes, so the
collectives cells ran there unchanged.

JAX 0.10 names the varying-manual-axes set of ``jax.typeof(x)`` ``.mat.varying`` (this edition
says ``.vma``) and prints ``float32[3]{V:i}`` for the tutorial's ``f32[3]{i}``: the ``typeof``
tests compare shapes and axis sets, whichever spelling is printed. Under JAX 0.10 the
tutorial's scan cell fails earlier than the tutorial says (its unsharded ``x`` does not match
``in_specs`` on an Explicit mesh); the test accepts either explanation.
"""

import re
from functools import partial

import numpy as np
import pytest

import spmd as jax
import spmd.numpy as jnp
from tests.tolerance import assert_close_product
from tests.tutorials.pictures import ANSI, device_grids

ROWS_OVER_X = [["CPU 0,1"], ["CPU 2,3"], ["CPU 4,5"], ["CPU 6,7"]]
GRID_4X2 = [["CPU 0", "CPU 1"], ["CPU 2", "CPU 3"], ["CPU 4", "CPU 5"], ["CPU 6", "CPU 7"]]
ROWS_OVER_Y = [["CPU 0,2,4,6"], ["CPU 1,3,5,7"]]


def lines(text):
    """The non-blank lines of a printout, stripped."""
    text = ANSI.sub("", text)
    return [line.strip() for line in text.splitlines() if line.strip()]


def spec_of(x):
    spec = tuple(x.sharding.spec)
    return spec + (None,) * (x.ndim - len(spec))


TYPE = re.compile(r"(?:float|int|f|i)\d+\[([\d, ]*)\](?:\{(?:V:)?\(?([\w, ]*)\)?\})?")


def printed_types(text):
    """(shape, varying manual axes) of each printed ``jax.typeof``: ``f32[2,2]{i,j}`` (the
    tutorial) and ``float32[2,2]{V:(i,j)}`` (JAX 0.10) both read ((2, 2), {'i', 'j'})."""
    found = []
    for dims, axes in TYPE.findall(text):
        shape = tuple(int(d) for d in dims.split(",") if d.strip())
        found.append((shape, {a.strip() for a in axes.split(",") if a.strip()}))
    return found


# "So, let's see a shard_map!": the toy matmul, its check, its sharding and the jit version
def test_matmul_basic_psums_partial_products_and_keeps_row_blocks(capsys):
    from spmd.sharding import Mesh  # noqa: F401
    from spmd.sharding import PartitionSpec as P

    mesh = jax.make_mesh((4, 2), ("x", "y"))
    jax.set_mesh(mesh)

    a = jax.device_put(jnp.arange(8 * 16.0).reshape(8, 16), P("x", "y"))
    b = jax.device_put(jnp.arange(16 * 4.0).reshape(16, 4), P("y", None))

    @jax.shard_map(in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", None))
    def matmul_basic(a_block, b_block):
        # a_block: f32[2, 8]
        # b_block: f32[8, 4]
        c_partialsum = jnp.dot(a_block, b_block)
        c_block = jax.lax.psum(c_partialsum, "y")
        # c_block: f32[2, 4]
        return c_block

    c = matmul_basic(a, b)  # c: f32[8, 4]

    from spmd.tree_util import tree_all, tree_map

    def allclose(a, b):
        return tree_all(tree_map(partial(jnp.allclose, atol=1e-2, rtol=1e-2), a, b))

    assert allclose(c, jnp.dot(a, b, out_sharding=P("x", None)))  # JAX: True

    capsys.readouterr()
    jax.debug.visualize_array_sharding(c)
    assert device_grids(capsys.readouterr().out) == [ROWS_OVER_X]

    expected = np.arange(8 * 16.0).reshape(8, 16) @ np.arange(16 * 4.0).reshape(16, 4)
    np.testing.assert_allclose(np.asarray(c), expected)
    assert c.shape == (8, 4) and spec_of(c) == ("x", None)
    np.testing.assert_allclose(np.asarray(c)[0], [4960.0, 5080.0, 5200.0, 5320.0])  # JAX's row 0

    from spmd.sharding import NamedSharding  # noqa: F401

    a = jax.device_put(a, P("x", "y"))
    b = jax.device_put(b, P("y", None))

    @jax.jit
    def matmul_reference(a, b):
        return jnp.dot(a, b, out_sharding=P("x", None))

    c_ref = matmul_reference(a, b)
    assert allclose(c_ref, jnp.dot(a, b, out_sharding=P("x", None)))  # JAX: True
    assert spec_of(c_ref) == ("x", None)
    np.testing.assert_allclose(np.asarray(c_ref), expected)

    capsys.readouterr()
    print("a blocks:")
    jax.debug.visualize_array_sharding(a)
    print("b blocks:")
    jax.debug.visualize_array_sharding(b)
    print("c blocks:")
    jax.debug.visualize_array_sharding(c)
    out = capsys.readouterr().out
    assert [line for line in lines(out) if line.endswith("blocks:")] == [
        "a blocks:",
        "b blocks:",
        "c blocks:",
    ]
    assert device_grids(out) == [GRID_4X2, ROWS_OVER_Y, ROWS_OVER_X]


# "Rank-reducing vs rank-preserving maps": the vmap reference semantics
def test_vmap_unstacks_and_restacks(capsys):
    from spmd.tree_util import tree_all, tree_map

    def allclose(a, b):
        return tree_all(tree_map(partial(jnp.allclose, atol=1e-2, rtol=1e-2), a, b))

    def check_vmap(f, xs):
        ans = jax.vmap(f, in_axes=(0,), out_axes=0)(xs)
        expected = jnp.stack([f(x) for x in xs])  # vmap reference semantics
        print(allclose(ans, expected))

    check_vmap(lambda x: x @ x, jnp.arange(12).reshape(4, 3))
    assert lines(capsys.readouterr().out) == ["True"]


# "Rank-reducing vs rank-preserving maps": shard_map concatenates the blocks' results
def test_shard_map_is_split_apply_concatenate(capsys):
    from spmd.sharding import Mesh
    from spmd.sharding import PartitionSpec as P
    from spmd.tree_util import tree_all, tree_map

    def allclose(a, b):
        return tree_all(tree_map(partial(jnp.allclose, atol=1e-2, rtol=1e-2), a, b))

    devices = np.array(jax.devices()[:4])
    mesh = Mesh(devices, ("i",))  # mesh.shape['i'] = 4
    jax.set_mesh(mesh)

    def check_shmap(f, y):
        ans = jax.shard_map(f, in_specs=P("i"), out_specs=P("i"))(y)
        expected = jnp.concatenate([f(y_blk) for y_blk in jnp.split(y, mesh.shape["i"])])
        print(allclose(ans, expected))

    check_shmap(lambda x: x.T @ x, jnp.arange(32).reshape(8, 4))
    assert lines(capsys.readouterr().out) == ["True"]

    # JAX's result, for the record: blocks y_k.T @ y_k stacked, 16 x 4
    ans = jax.shard_map(lambda x: x.T @ x, in_specs=P("i"), out_specs=P("i"))(
        jnp.arange(32).reshape(8, 4)
    )
    y = np.arange(32).reshape(8, 4)
    np.testing.assert_array_equal(
        np.asarray(ans), np.concatenate([blk.T @ blk for blk in np.split(y, 4)])
    )
    np.testing.assert_array_equal(np.asarray(ans)[0], [16, 20, 24, 28])


# "Controlling how each input is split (unconcatenated) and tiled with in_specs"
def test_in_specs_split_only_over_named_mesh_axes(capsys):
    from spmd.sharding import PartitionSpec as P

    mesh = jax.make_mesh((4, 2), ("i", "j"))
    jax.set_mesh(mesh)

    @jax.shard_map(in_specs=P("i", None), out_specs=P("i", "j"))
    def f1(x_block):
        print(x_block.shape)  # prints (3, 12)
        return x_block

    x1 = jax.device_put(jnp.arange(12 * 12).reshape(12, 12), P("i", None))
    y = f1(x1)
    printed = lines(capsys.readouterr().out)
    assert printed and set(printed) == {"(3, 12)"}  # JAX prints it once
    assert y.shape == (12, 24) and spec_of(y) == ("i", "j")
    np.testing.assert_array_equal(np.asarray(y), np.tile(np.arange(144).reshape(12, 12), (1, 2)))

    @jax.shard_map(in_specs=P("i", "j"), out_specs=P("i", "j"))
    def f2(x_block):
        print(x_block.shape)
        return x_block

    x = jnp.arange(12 * 12).reshape(12, 12)
    x_ = jnp.tile(x, (1, mesh.shape["j"]))  # x_ has shape (12, 24)
    assert x_.shape == (12, 24)
    x_ = jax.device_put(x, P("i", "j"))
    y = f2(x_)  # prints (3,12), and f1(x) == f2(x_)
    printed = lines(capsys.readouterr().out)
    # JAX prints (3, 6): the cell overwrites the tiled x_ with x itself, split 4 x 2
    assert printed and set(printed) == {"(3, 6)"}
    assert y.shape == (12, 12) and spec_of(y) == ("i", "j")
    np.testing.assert_array_equal(np.asarray(y), np.arange(144).reshape(12, 12))


# "Controlling how each output assembled ... using out_specs": untiling a closed-over value
def test_out_specs_tile_or_untile_a_replicated_value(capsys):
    from spmd.sharding import PartitionSpec as P

    Auto = jax.sharding.AxisType.Auto

    auto_mesh = jax.make_mesh((4, 2), ("i", "j"), (Auto, Auto))
    with jax.set_mesh(auto_mesh):
        x = jnp.array([[3.0]])

        z = jax.shard_map(lambda: x, in_specs=(), out_specs=P("i", "j"))()
        print(z)  # prints the same as jnp.tile(x, (4, 2))
        assert z.shape == (4, 2)

        z = jax.shard_map(lambda: x, in_specs=(), out_specs=P("i", None))()
        print(z)  # prints the same as jnp.tile(x, (4, 1)), or just jnp.tile(x, (4,))
        assert z.shape == (4, 1)

        z = jax.shard_map(lambda: x, in_specs=(), out_specs=P(None, None))()
        print(z)  # prints the same as jnp.tile(x, (1, 1)), or just x
        assert z.shape == (1, 1)

    assert lines(capsys.readouterr().out) == lines(
        """
        [[3. 3.]
         [3. 3.]
         [3. 3.]
         [3. 3.]]
        [[3.]
         [3.]
         [3.]
         [3.]]
        [[3.]]
        """
    )


# "Controlling how each output assembled ...": psum makes an untiled out_spec safe
def test_psum_then_untile_over_the_summed_axes(capsys):
    from spmd.sharding import PartitionSpec as P

    mesh = jax.make_mesh((4, 2), ("i", "j"))
    jax.set_mesh(mesh)
    full = np.arange(12 * 12).reshape(12, 12)

    @jax.shard_map(in_specs=P("i", "j"), out_specs=P("i", None))
    def f3(x_block):
        return jax.lax.psum(x_block, "j")

    x = jax.device_put(jnp.arange(12 * 12).reshape(12, 12), P("i", "j"))
    y3 = f3(x)
    print(y3.shape)
    assert lines(capsys.readouterr().out) == ["(12, 6)"]
    np.testing.assert_array_equal(np.asarray(y3), full[:, :6] + full[:, 6:])
    np.testing.assert_array_equal(np.asarray(y3)[0], [6, 8, 10, 12, 14, 16])  # JAX's row 0

    @jax.shard_map(in_specs=P("i", "j"), out_specs=P(None, "j"))
    def f4(x_block):
        return jax.lax.psum(x_block, "i")

    x = jax.device_put(jnp.arange(12 * 12).reshape(12, 12), P("i", "j"))
    y4 = f4(x)
    print(y4.shape)  # (3,12)

    @jax.shard_map(in_specs=P("i", "j"), out_specs=P(None, None))
    def f5(x_block):
        return jax.lax.psum(x_block, ("i", "j"))

    y5 = f5(x)
    print(y5.shape)  # (3,6)
    assert lines(capsys.readouterr().out) == ["(3, 12)", "(3, 6)"]
    np.testing.assert_array_equal(np.asarray(y4), full.reshape(4, 3, 12).sum(0))
    np.testing.assert_array_equal(np.asarray(y5), full.reshape(4, 3, 2, 6).sum((0, 2)))
    np.testing.assert_array_equal(np.asarray(y5)[0], [456, 464, 472, 480, 488, 496])  # JAX


# "Tracking how values vary over manual mesh axes": split, replicated and psummed values
def test_printing_inside_shard_map_shows_each_instance(capsys):
    from spmd.sharding import PartitionSpec as P

    mesh = jax.make_mesh((2,), ("i",))
    jax.set_mesh(mesh)

    @jax.shard_map(in_specs=P("i"), out_specs=P("i"))
    def f(x):
        print(x)
        return 2 * x

    x = jax.device_put(jnp.arange(6.0), P("i"))
    out = f(x)
    assert lines(capsys.readouterr().out) == [
        "On cpu:0 at mesh coordinates (i,) = (0,):",
        "[0. 1. 2.]",
        "On cpu:1 at mesh coordinates (i,) = (1,):",
        "[3. 4. 5.]",
    ]
    np.testing.assert_array_equal(np.asarray(out), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0])

    @jax.shard_map(in_specs=P(), out_specs=P())
    def f(x):
        print(x)
        return 2 * x

    x = jnp.arange(6.0)
    out = f(x)
    assert lines(capsys.readouterr().out) == [
        "On cpu:0 at mesh coordinates (i,) = (0,):",
        "[0. 1. 2. 3. 4. 5.]",
        "On cpu:1 at mesh coordinates (i,) = (1,):",
        "[0. 1. 2. 3. 4. 5.]",
    ]
    np.testing.assert_array_equal(np.asarray(out), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0])

    @jax.shard_map(in_specs=P("i"), out_specs=P())
    def f(x):
        y = jax.lax.psum(x, "i")
        print(y)
        return y

    x = jax.device_put(jnp.arange(6.0), P("i"))
    out = f(x)
    assert lines(capsys.readouterr().out) == [
        "On cpu:0 at mesh coordinates (i,) = (0,):",
        "[3. 5. 7.]",
        "On cpu:1 at mesh coordinates (i,) = (1,):",
        "[3. 5. 7.]",
    ]
    np.testing.assert_array_equal(np.asarray(out), [3.0, 5.0, 7.0])


# "Tracking how values vary over manual mesh axes": jax.typeof shows the varying axes
def test_typeof_shows_varying_manual_axes(capsys):
    from spmd.sharding import PartitionSpec as P

    mesh = jax.make_mesh((2,), ("i",))
    jax.set_mesh(mesh)

    @jax.shard_map(in_specs=P("i"), out_specs=P())
    def f(x):
        print(jax.typeof(x))  # f32[3]{i}
        y = jax.lax.psum(x, "i")
        print(jax.typeof(y))  # f32[3]
        return y

    x = jax.device_put(jnp.arange(6.0), P("i"))
    out = f(x)
    assert printed_types(capsys.readouterr().out) == [((3,), {"i"}), ((3,), set())]
    np.testing.assert_array_equal(np.asarray(out), [3.0, 5.0, 7.0])

    mesh = jax.make_mesh((4, 2), ("i", "j"))
    jax.set_mesh(mesh)

    @jax.shard_map(in_specs=P("i", "j"), out_specs=P("i"))
    def f(x):
        print(jax.typeof(x))  # f32[2,2]{i,j}
        y = jax.lax.psum(x, "j")
        assert jax.typeof(y).vma == {"i"}
        print(jax.typeof(y))  # f32[2,2]{i}
        return y

    x = jax.device_put(jnp.arange(8 * 4.0).reshape(8, 4), P("i", "j"))
    out = f(x)
    assert printed_types(capsys.readouterr().out) == [((2, 2), {"i", "j"}), ((2, 2), {"i"})]
    np.testing.assert_array_equal(
        np.asarray(out), np.arange(32.0).reshape(8, 2, 2).sum(1)
    )  # JAX: [[2, 4], [10, 12], ..., [58, 60]]


# "Tracking how values vary ...": check_vma catches out_specs claiming replication wrongly
def test_check_vma_rejects_unreplicated_output_claimed_replicated(capsys):
    from spmd.sharding import PartitionSpec as P

    mesh = jax.make_mesh((2,), ("i",))
    jax.set_mesh(mesh)

    x = jax.device_put(jnp.arange(6.0), P("i"))
    try:
        y = jax.shard_map(lambda x: x, in_specs=P("i"), out_specs=P())(x)
    except Exception as e:
        print(e)
    # JAX: "... out_specs is P() which implies that the corresponding output value is
    # replicated across mesh axis 'i', but could not infer replication over any axes ..."
    message = capsys.readouterr().out
    assert "'i'" in message and "replicated" in message and "out_specs" in message
    assert "y" not in locals()

    with pytest.raises(jax.ShardingError):
        jax.shard_map(lambda x: x, in_specs=P("i"), out_specs=P())(x)


# "Tracking how values vary ...": pcast makes an unvarying value varying
def test_pcast_to_varying_adds_the_axis_to_the_type(capsys):
    from spmd.sharding import PartitionSpec as P

    mesh = jax.make_mesh((2,), ("i",))
    jax.set_mesh(mesh)

    @jax.shard_map(in_specs=P(), out_specs=None)
    def f(x):
        print(jax.typeof(x))  # f32[6]
        y = jax.lax.pcast(x, "i", to="varying")
        print(jax.typeof(y))  # f32[6]{i}

    x = jnp.arange(6.0)
    assert f(x) is None
    assert printed_types(capsys.readouterr().out) == [((6,), set()), ((6,), {"i"})]


# "Tracking how values vary ...": the jaxpr of a binary op between varying and unvarying
def test_make_jaxpr_shows_the_shard_map_and_its_multiply(capsys):
    from spmd.sharding import PartitionSpec as P

    mesh = jax.make_mesh((2,), ("i",))
    jax.set_mesh(mesh)

    @jax.shard_map(in_specs=(P("i"), P()), out_specs=P("i"))
    def f(x, y):
        return x * y

    x = jax.device_put(jnp.arange(6.0), P("i"))
    y = jnp.arange(3.0)
    print(jax.make_jaxpr(f)(x, y))
    # JAX: { lambda ; a:f32[6@i] b:f32[3]. let c:f32[6@i] = shard_map[... jaxpr={ lambda ;
    #   d:f32[3]{V:i} e:f32[3]. let f:f32[3]{V:i} = pvary[axes=('i',)] e
    #   g:f32[3]{V:i} = mul d f in (g,) } ...] a b in (c,) }
    jaxpr = capsys.readouterr().out
    assert "shard_map" in jaxpr and "mul" in jaxpr
    assert re.search(r"\[6[^\]]*\]", jaxpr) and re.search(r"\[3\]", jaxpr)
    np.testing.assert_array_equal(np.asarray(f(x, y)), [0.0, 1.0, 4.0, 0.0, 4.0, 10.0])  # JAX


# "Tracking how values vary ...": scan needs matching carry types (the error cell)
def test_scan_with_mismatched_carry_varying_axes_is_an_error(capsys):
    from spmd.sharding import PartitionSpec as P

    mesh = jax.make_mesh((2,), ("i",))
    jax.set_mesh(mesh)

    @jax.shard_map(in_specs=(P("i"), P()), out_specs=P("i"))
    def f(x, y):
        def body(carry, _):
            c1, c2 = carry
            return (c2, c1), ()  # swap the carry

        (x_, y_), _ = jax.lax.scan(body, (x, y), (), length=2)
        return x_, y_

    x = jnp.arange(6.0)
    y = jnp.arange(3.0)

    try:
        f(x, y)
    except Exception as e:
        print(e)
    # JAX 0.10: "in_specs passed to shard_map: P('i',) does not match the specs of the
    # input ..."; the tutorial's JAX: scan's carry types differ in their varying axes
    message = capsys.readouterr().out
    assert "has no attribute" not in message
    assert "carry" in message or "in_specs" in message


# "Tracking how values vary ...": pcast the unvarying carry to make scan's types agree
def test_pcast_makes_scan_carry_types_agree():
    from spmd.sharding import PartitionSpec as P

    mesh = jax.make_mesh((2,), ("i",))
    jax.set_mesh(mesh)

    @jax.shard_map(in_specs=(P("i"), P()), out_specs=P("i"))
    def f(x, y):
        def body(carry, _):
            c1, c2 = carry
            return (c2, c1), ()  # swap the carry

        y = jax.lax.pcast(y, "i", to="varying")  # apply pcast to fix the error
        (x_, y_), _ = jax.lax.scan(body, (x, y), (), length=2)
        return x_, y_

    x = jax.device_put(jnp.arange(6.0), P("i"))
    y = jnp.arange(3.0)

    x_, y_ = f(x, y)
    np.testing.assert_array_equal(np.asarray(x_), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0])  # JAX
    np.testing.assert_array_equal(np.asarray(y_), [0.0, 1.0, 2.0, 0.0, 1.0, 2.0])  # JAX


# Printouts of the collectives below, as JAX 0.10 printed them (blank lines dropped)
def instances(*blocks, axes="(i,)"):
    """The per-instance printout of one printed value: ``blocks`` one per device, each a
    (coordinates, text) pair."""
    return lines(
        "\n".join(
            f"On cpu:{k} at mesh coordinates {axes} = {coords}:\n{text}"
            for k, (coords, text) in enumerate(blocks)
        )
    )


def on_1d(*texts):
    return instances(*[(f"({k},)", t) for k, t in enumerate(texts)])


def on_2x2(*texts):
    coords = ["(0, 0)", "(0, 1)", "(1, 0)", "(1, 1)"]
    return instances(*zip(coords, texts, strict=True), axes="(i, j,)")


def collective_printout(before, after, final):
    """BEFORE:/AFTER:/FINAL RESULT: as the tutorial's cells print them."""
    return ["BEFORE:", *before, "AFTER:", *after, "FINAL RESULT:", *lines(final)]


# "Collectives tutorial" / psum: the imports cell, the f1 cells and the 2-D mesh cells (verbatim)
def test_psum_sums_blocks_over_one_or_both_mesh_axes(capsys):
    # the imports cell: ``import jax`` and ``import jax.numpy as jnp`` are the module's own
    from spmd import lax  # noqa: F401
    from spmd.sharding import Mesh
    from spmd.sharding import PartitionSpec as P

    mesh1d = Mesh(jax.devices()[:4], ("i",))
    jax.set_mesh(mesh1d)

    @jax.shard_map(mesh=mesh1d, in_specs=P("i"), out_specs=P(None))
    def f1(x_block):
        print("BEFORE:\n", x_block)
        y_block = jax.lax.psum(x_block, "i")
        print("AFTER:\n", y_block)
        return y_block

    x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
    y = f1(x)
    print("FINAL RESULT:\n", y)
    assert lines(capsys.readouterr().out) == collective_printout(
        on_1d("[3 1 4 1]", "[5 9 2 6]", "[5 3 5 8]", "[9 7 1 2]"),
        on_1d(*["[22 20 12 17]"] * 4),
        "[22 20 12 17]",
    )
    assert y.shape == (4,) and spec_of(y) == (None,)  # JAX: P(None,)

    mesh2d = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("i", "j"))
    jax.set_mesh(mesh2d)

    @jax.shard_map(mesh=mesh2d, in_specs=P("i", "j"), out_specs=P(None, "j"))
    def f2(x_block):
        print("BEFORE:\n", x_block)
        y_block = jax.lax.psum(x_block, "i")
        print("AFTER:\n", y_block)
        return y_block

    y = f2(jnp.arange(16).reshape(4, 4))
    print("FINAL RESULT:\n", y)
    blocks_2x2 = on_2x2(
        "[[0 1]\n [4 5]]", "[[2 3]\n [6 7]]", "[[ 8  9]\n [12 13]]", "[[10 11]\n [14 15]]"
    )
    assert lines(capsys.readouterr().out) == collective_printout(
        blocks_2x2,
        on_2x2(*["[[ 8 10]\n [16 18]]", "[[12 14]\n [20 22]]"] * 2),
        "[[ 8 10 12 14]\n [16 18 20 22]]",
    )

    @jax.shard_map(mesh=mesh2d, in_specs=P("i", "j"), out_specs=P(None, None))
    def f3(x_block):
        print("BEFORE:\n", x_block)
        y_block = jax.lax.psum(x_block, ("i", "j"))
        print("AFTER:\n", y_block)
        return y_block

    y = f3(jnp.arange(16).reshape(4, 4))
    print("FINAL RESULT:\n", y)
    assert lines(capsys.readouterr().out) == collective_printout(
        blocks_2x2, on_2x2(*["[[20 24]\n [36 40]]"] * 4), "[[20 24]\n [36 40]]"
    )


def set_mesh1d():
    """The mesh the collectives cells after f3 run under: ``mesh1d`` of the psum section's
    cell, made current again by the f4 cell's ``jax.set_mesh(mesh1d)``."""
    from spmd.sharding import Mesh

    mesh1d = Mesh(jax.devices()[:4], ("i",))
    jax.set_mesh(mesh1d)
    return mesh1d


# "Collectives tutorial" / all_gather: the f4 and f5 cells (verbatim)
def test_all_gather_concatenates_or_stacks_the_blocks(capsys):
    from spmd.sharding import Mesh
    from spmd.sharding import PartitionSpec as P

    mesh1d = Mesh(jax.devices()[:4], ("i",))  # from the psum section's f1 cell
    jax.set_mesh(Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("i", "j")))  # its mesh2d

    jax.set_mesh(mesh1d)

    @jax.shard_map(mesh=mesh1d, in_specs=P("i"), out_specs=P("i"))
    def f4(x_block):
        print("BEFORE:\n", x_block)
        y_block = jax.lax.all_gather(x_block, "i", tiled=True)
        print("AFTER:\n", y_block)
        return y_block

    x = jnp.array([3, 9, 5, 2])
    y = f4(x)
    print("FINAL RESULT:\n", y)
    before = on_1d("[3]", "[9]", "[5]", "[2]")
    assert lines(capsys.readouterr().out) == collective_printout(
        before, on_1d(*["[3 9 5 2]"] * 4), "[3 9 5 2 3 9 5 2 3 9 5 2 3 9 5 2]"
    )

    @jax.shard_map(mesh=mesh1d, in_specs=P("i"), out_specs=P("i"))
    def f5(x_block):
        print("BEFORE:\n", x_block)
        y_block = jax.lax.all_gather(x_block, "i", tiled=False)
        print("AFTER:\n", y_block)
        return y_block

    y = f5(x)
    print("FINAL RESULT:\n", y)
    stacked = "[[3]\n [9]\n [5]\n [2]]"
    assert lines(capsys.readouterr().out) == collective_printout(
        before, on_1d(*[stacked] * 4), str(np.tile([[3], [9], [5], [2]], (4, 1)))
    )
    assert y.shape == (16, 1)


# "Collectives tutorial" / psum_scatter: the f6 cell (verbatim; no mesh=, it uses mesh1d)
def test_psum_scatter_leaves_each_instance_one_summed_chunk(capsys):
    from spmd.sharding import PartitionSpec as P

    set_mesh1d()

    @jax.shard_map(in_specs=P("i"), out_specs=P("i"))
    def f6(x_block):
        print("BEFORE:\n", x_block)
        y_block = jax.lax.psum_scatter(x_block, "i", tiled=True)
        print("AFTER:\n", y_block)
        return y_block

    x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
    y = f6(x)
    print("FINAL RESULT:\n", y)
    assert lines(capsys.readouterr().out) == collective_printout(
        on_1d("[3 1 4 1]", "[5 9 2 6]", "[5 3 5 8]", "[9 7 1 2]"),
        on_1d("[22]", "[20]", "[12]", "[17]"),
        "[22 20 12 17]",
    )


# "Collectives tutorial" / ppermute: the f7 cell (verbatim; no mesh=, it uses mesh1d)
def test_ppermute_shifts_blocks_around_the_ring(capsys):
    from spmd.sharding import PartitionSpec as P

    set_mesh1d()

    @jax.shard_map(in_specs=P("i"), out_specs=P("i"))
    def f7(x_block):
        sz = jax.lax.axis_size("i")
        print("BEFORE:\n", x_block)
        y_block = jax.lax.ppermute(x_block, "i", [(i, (i + 1) % sz) for i in range(sz)])
        print("AFTER:\n", y_block)
        return y_block

    y = f7(jnp.arange(8))
    print("FINAL RESULT:\n", y)
    assert lines(capsys.readouterr().out) == collective_printout(
        on_1d("[0 1]", "[2 3]", "[4 5]", "[6 7]"),
        on_1d("[6 7]", "[0 1]", "[2 3]", "[4 5]"),
        "[6 7 0 1 2 3 4 5]",
    )


# "Collectives tutorial" / ppermute: psum_scatter written with ppermute, and f8 (verbatim)
def test_psum_scatter_built_from_ppermute(capsys):
    from spmd.sharding import PartitionSpec as P

    set_mesh1d()

    def psum_scatter(x, axis_name, *, tiled=False):
        size = jax.lax.axis_size(axis_name)
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

    @jax.shard_map(in_specs=P("i"), out_specs=P("i"))
    def f8(x_block):
        print("BEFORE:\n", x_block)
        y_block = psum_scatter(x_block, "i", tiled=True)
        print("AFTER:\n", y_block)
        return y_block

    x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
    y = f8(x)
    print("FINAL RESULT:\n", y)
    assert lines(capsys.readouterr().out) == collective_printout(
        on_1d("[3 1 4 1]", "[5 9 2 6]", "[5 3 5 8]", "[9 7 1 2]"),
        on_1d("[22]", "[20]", "[12]", "[17]"),
        "[22 20 12 17]",
    )


# "Collectives tutorial" / all_to_all
def test_all_to_all_transposes_blocks_across_instances(capsys):
    from spmd.sharding import PartitionSpec as P

    mesh1d = set_mesh1d()

    @jax.shard_map(mesh=mesh1d, in_specs=P("i"), out_specs=P("i"))
    def f9(x_block):
        print("BEFORE:\n", x_block)
        y_block = jax.lax.all_to_all(x_block, "i", split_axis=0, concat_axis=0, tiled=True)
        print("AFTER:\n", y_block)
        return y_block

    x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
    y = f9(x)
    print("FINAL RESULT:\n", y)
    assert lines(capsys.readouterr().out) == collective_printout(
        on_1d("[3 1 4 1]", "[5 9 2 6]", "[5 3 5 8]", "[9 7 1 2]"),
        on_1d("[3 5 5 9]", "[1 9 3 7]", "[4 2 5 1]", "[1 6 8 2]"),
        "[3 5 5 9 1 9 3 7 4 2 5 1 1 6 8 2]",
    )


@pytest.fixture
def matmul_setup():
    """ "Toy examples" / "Matrix multiplies": the imports cell and the mesh cell."""
    from spmd.sharding import Mesh, NamedSharding
    from spmd.sharding import PartitionSpec as P

    mesh = Mesh(jax.devices()[:4], ("i",))
    jax.set_mesh(mesh)

    def device_put(x, pspec):
        return jax.device_put(x, NamedSharding(mesh, pspec))

    return mesh, device_put, P


# "Matrix multiplies" / "Example 1: all-gather on one side"
def test_allgather_matmul_and_its_overlapped_versions(capsys, matmul_setup):
    from spmd import lax

    _mesh, device_put, P = matmul_setup

    lhs_spec = P("i", None)
    lhs = device_put(jax.random.normal(jax.random.key(0), (8, 8)), lhs_spec)

    rhs_spec = P("i", None)
    rhs = device_put(jax.random.normal(jax.random.key(1), (8, 4)), rhs_spec)

    @jax.jit
    @jax.shard_map(in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_allgather(lhs_block, rhs_block):
        rhs = jax.lax.all_gather(rhs_block, "i", tiled=True)
        return lhs_block @ rhs

    out = matmul_allgather(lhs, rhs)
    print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))
    assert lines(capsys.readouterr().out) == ["True"]
    assert out.shape == (8, 4) and spec_of(out) == ("i", None)
    assert_close_product(out, np.asarray(lhs) @ np.asarray(rhs), lhs, rhs)

    # The overlapped cells, read at offset ~1,447.7k (spacing as ruff formats it).
    @jax.jit
    @jax.shard_map(in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_allgather_overlapped(lhs_block, rhs_block):
        size = jax.lax.axis_size("i")
        idx = jax.lax.axis_index("i")
        shift = partial(
            jax.lax.ppermute, axis_name="i", perm=[(i, (i + 1) % size) for i in range(size)]
        )

        B = lhs_block.shape[1] // size
        lhs_blocks = lambda i: lax.dynamic_slice_in_dim(lhs_block, i * B, B, 1)  # noqa: E731

        out_block = lhs_blocks(idx) @ rhs_block
        for i in range(1, size):
            rhs_block = shift(rhs_block)
            out_block += lhs_blocks((idx - i) % size) @ rhs_block
        return out_block

    out = matmul_allgather_overlapped(lhs, rhs)
    print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))
    assert lines(capsys.readouterr().out) == ["True"]

    @jax.jit
    @jax.shard_map(in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_allgather_overlapped_bidi(lhs_block, rhs_block):
        size = jax.lax.axis_size("i")
        idx = jax.lax.axis_index("i")
        shift_up = partial(
            jax.lax.ppermute, axis_name="i", perm=[(i, (i + 1) % size) for i in range(size)]
        )
        shift_dn = partial(
            jax.lax.ppermute, axis_name="i", perm=[(i, (i - 1) % size) for i in range(size)]
        )

        B = lhs_block.shape[1] // size // 2  # half-size blocks
        lhs_blocks = lambda i, hi: lax.dynamic_slice_in_dim(lhs_block, (2 * i + hi) * B, B, 1)  # noqa: E731

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
    assert lines(capsys.readouterr().out) == ["True"]
    assert_close_product(out, np.asarray(lhs) @ np.asarray(rhs), lhs, rhs)


# "Matrix multiplies" / "Example 2: psum_scatter the result"
def test_psum_scatter_matmul_and_its_overlapped_versions(capsys, matmul_setup):
    from spmd import lax

    _mesh, device_put, P = matmul_setup
    lhs = device_put(jax.random.normal(jax.random.key(0), (8, 8)), P("i", None))
    rhs = device_put(jax.random.normal(jax.random.key(1), (8, 4)), P("i", None))

    lhs_spec = P(None, "i")
    lhs = device_put(lhs, lhs_spec)

    rhs_spec = P("i", None)
    rhs = device_put(rhs, rhs_spec)

    @jax.shard_map(in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_psumscatter(lhs_block, rhs_block):
        out_summand = lhs_block @ rhs_block
        return jax.lax.psum_scatter(out_summand, "i", tiled=True)

    out = matmul_psumscatter(lhs, rhs)
    print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))
    assert lines(capsys.readouterr().out) == ["True"]
    assert out.shape == (8, 4) and spec_of(out) == ("i", None)

    @jax.shard_map(in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_psumscatter_overlapped(lhs_block, rhs_block):
        size = jax.lax.axis_size("i")
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
    assert lines(capsys.readouterr().out) == ["True"]

    @jax.shard_map(in_specs=(lhs_spec, rhs_spec), out_specs=rhs_spec)
    def matmul_psumscatter_overlapped_bidi(lhs_block, rhs_block):
        size = jax.lax.axis_size("i")
        idx = jax.lax.axis_index("i")
        shift_up = partial(
            jax.lax.ppermute, axis_name="i", perm=[(i, (i + 1) % size) for i in range(size)]
        )
        shift_dn = partial(
            jax.lax.ppermute, axis_name="i", perm=[(i, (i - 1) % size) for i in range(size)]
        )

        B = lhs_block.shape[0] // size // 2  # half-size blocks
        lhs_blocks = lambda i, hi: lax.dynamic_slice_in_dim(lhs_block, (2 * i + hi) * B, B, 0)  # noqa: E731

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
    assert lines(capsys.readouterr().out) == ["True"]
    assert_close_product(out, np.asarray(lhs) @ np.asarray(rhs), lhs, rhs)


@pytest.fixture
def model():
    """ "Neural networks": the model, initializer and random data cells."""

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

    params, batch = init(jax.random.key(0), layer_sizes, batch_size)
    return predict, loss, params, batch, batch_size


def numpy_loss(params, batch):
    """The tutorial's ``loss`` in NumPy, on the gathered values."""
    inputs, targets = (np.asarray(a) for a in batch)
    for W, b in params:
        outputs = inputs @ np.asarray(W) + np.asarray(b)
        inputs = np.maximum(outputs, 0)
    return np.mean(np.sum((outputs - targets) ** 2, axis=-1))


def printed_floats(capsys):
    return [float(line) for line in lines(capsys.readouterr().out)]


# "Neural networks" / "8-way batch data parallelism"
def test_data_parallel_loss_matches_the_reference(capsys, model):
    predict, loss, params, batch, _batch_size = model
    Auto = jax.sharding.AxisType.Auto
    from spmd.sharding import NamedSharding
    from spmd.sharding import PartitionSpec as P

    mesh = jax.make_mesh((8,), ("batch",), (Auto,))
    jax.set_mesh(mesh)

    # replicate initial params on all devices, shard data batch over devices
    batch = jax.device_put(batch, NamedSharding(mesh, P("batch")))
    params = jax.device_put(params, NamedSharding(mesh, P()))

    # adapt the loss function to sum the losses across devices
    def loss_dp(params, batch):
        @jax.shard_map(in_specs=P("batch", None), out_specs=P())
        def loss_spmd(local_batch):
            inputs, targets = local_batch
            predictions = predict(params, inputs)  # use reference 'predict`
            local_loss = jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))
            return jax.lax.pmean(local_loss, "batch")

        return loss_spmd(batch)

    print(jax.jit(loss)(params, batch))
    print(jax.jit(loss_dp)(params, batch))
    reference, data_parallel = printed_floats(capsys)  # JAX prints the same number twice
    expected = numpy_loss(params, batch)
    np.testing.assert_allclose(reference, expected, rtol=1e-5)
    np.testing.assert_allclose(data_parallel, expected, rtol=1e-5)
    assert spec_of(batch[0]) == ("batch", None)


# "8-way batch data parallelism": the gradients match too
def test_data_parallel_gradients_match_the_reference(capsys, model):
    from spmd.tree_util import tree_all, tree_map

    predict, loss, params, batch, _batch_size = model

    def loss_dp(params, batch):
        from spmd.sharding import PartitionSpec as P

        @jax.shard_map(in_specs=P("batch", None), out_specs=P())
        def loss_spmd(local_batch):
            inputs, targets = local_batch
            predictions = predict(params, inputs)  # use reference 'predict`
            local_loss = jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))
            return jax.lax.pmean(local_loss, "batch")

        return loss_spmd(batch)

    jax.set_mesh(jax.make_mesh((8,), ("batch",), (jax.sharding.AxisType.Auto,)))

    def allclose(a, b):
        return tree_all(tree_map(partial(jnp.allclose, atol=1e-2, rtol=1e-2), a, b))

    print(
        allclose(jax.jit(jax.grad(loss))(params, batch), jax.jit(jax.grad(loss_dp))(params, batch))
    )
    assert lines(capsys.readouterr().out) == ["True"]


# "Neural networks" / "8-way fully sharded data parallelism (FSDP)": predict_fsdp is remat'd
def test_fsdp_loss_and_gradients_match_the_reference(capsys, model):
    from spmd.sharding import Mesh, NamedSharding
    from spmd.sharding import PartitionSpec as P

    _predict, loss, params, batch, _batch_size = model
    devices = np.array(jax.devices()[:4])  # the rank-preserving maps cell's devices

    # shard data batch *and params* over devices
    mesh = Mesh(devices, ("batch",))
    jax.set_mesh(mesh)
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
        @jax.shard_map(in_specs=P("batch"), out_specs=P())
        def loss_spmd(local_params, local_batch):
            inputs, targets = local_batch
            predictions = predict_fsdp(local_params, inputs)
            local_loss = jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))
            return jax.lax.pmean(local_loss, "batch")

        return loss_spmd(params, batch)

    print(jax.jit(loss)(params, batch))
    print(jax.jit(loss_fsdp)(params, batch))
    reference, fsdp = printed_floats(capsys)
    np.testing.assert_allclose(fsdp, reference, rtol=1e-5)


# "Neural networks" / "8-way tensor parallelism (TP)"
def test_tensor_parallel_loss_matches_the_reference(model):
    from spmd.sharding import NamedSharding
    from spmd.sharding import PartitionSpec as P

    Auto = jax.sharding.AxisType.Auto
    _predict, loss, params, batch, _batch_size = model

    mesh = jax.make_mesh((8,), ("feats",), (Auto,))
    jax.set_mesh(mesh)

    batch = jax.device_put(batch, NamedSharding(mesh, P(None, "feats")))
    params = jax.device_put(params, NamedSharding(mesh, P("feats")))

    def predict_tp(params, inputs):
        for W, b in params:
            outputs = gemm_tp(inputs, W, b)
            inputs = jax.nn.relu(outputs)
        return outputs

    @jax.shard_map(
        in_specs=(P(None, "feats"), P("feats", None), P("feats")), out_specs=P(None, "feats")
    )
    def gemm_tp(inputs, W, b):
        block_result = jnp.dot(inputs, W)
        return jax.lax.psum_scatter(block_result, "feats", scatter_dimension=1, tiled=True) + b

    def loss_tp(params, batch):
        inputs, targets = batch
        predictions = predict_tp(params, inputs)
        return jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))  # NOTE psum!

    # The tutorial's cell only defines loss_tp; evaluate it against the reference loss.
    expected = numpy_loss(params, batch)
    np.testing.assert_allclose(float(jax.jit(loss)(params, batch)), expected, rtol=1e-5)
    np.testing.assert_allclose(float(jax.jit(loss_tp)(params, batch)), expected, rtol=1e-5)
    assert spec_of(predict_tp(params, batch[0])) == (None, "feats")


# "Neural networks" / "FSDP + TP, with shard_map at the top level": predict_fsdp_tp is remat'd
def test_fsdp_plus_tp_loss_matches_the_reference(capsys, model):
    from spmd.sharding import NamedSharding
    from spmd.sharding import PartitionSpec as P

    Auto = jax.sharding.AxisType.Auto
    _predict, loss, params, batch, _batch_size = model

    mesh = jax.make_mesh((4, 2), ("batch", "feats"), (Auto, Auto))
    jax.set_mesh(mesh)

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

    @jax.shard_map(in_specs=(P(("feats", "batch")), P("batch", "feats")), out_specs=P())
    def loss_fsdp_tp(local_params, local_batch):
        inputs, targets = local_batch
        predictions = predict_fsdp_tp(local_params, inputs)
        sq_err = jax.lax.psum(jnp.sum((predictions - targets) ** 2, axis=-1), "feats")
        return jax.lax.pmean(jnp.mean(sq_err), "batch")

    print(jax.jit(loss)(params, batch))
    print(jax.jit(loss_fsdp_tp)(params_, batch_))
    reference, fsdp_tp = printed_floats(capsys)
    np.testing.assert_allclose(fsdp_tp, reference, rtol=1e-5)


@pytest.fixture
def pipeline(model, capsys):
    """ "SPMD pipeline parallelism (PP)": the parameter, mesh and stacking cells."""
    from spmd.sharding import Mesh, NamedSharding
    from spmd.sharding import PartitionSpec as P

    Auto = jax.sharding.AxisType.Auto
    _predict, loss, params, batch, batch_size = model

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

    mesh = Mesh(jax.devices()[:S], ("stages",), (Auto,))

    def predict_pp(params, inputs):
        (W_first, b_first), inner_params, (W_last, b_last) = params
        inputs = jax.nn.relu(jnp.dot(inputs, W_first) + b_first)
        inputs = spmd_pipeline(lambda Wb, x: jax.nn.relu(x @ Wb[0] + Wb[1]), inner_params, inputs)
        outputs = jnp.dot(inputs, W_last) + b_last
        return outputs

    @jax.shard_map(in_specs=((P(), P("stages"), P()), P("stages")), out_specs=P())
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
        sh = lambda x, d: jax.lax.ppermute(x, "stages", [(i, (i + d) % S) for i in range(S)])  # noqa: E731
        state = jnp.roll(state, +1, axis=0).at[0].set(sh(state[-1], +1))
        if (i % K) == (-1 % K):
            inputs = sh(inputs, +1)
        if ((i - L + 1) % K) == (-1 % K):
            outputs = sh(outputs, +1)
        return state, inputs, outputs

    first_params, *inner_params, last_params = params
    Ws, bs = zip(*inner_params)  # noqa: B905
    params_stacked = jnp.stack(Ws), jnp.stack(bs)
    first_params = jax.device_put(first_params, NamedSharding(mesh, P()))
    params_stacked = jax.device_put(params_stacked, NamedSharding(mesh, P("stages")))
    last_params = jax.device_put(last_params, NamedSharding(mesh, P()))
    params_ = first_params, params_stacked, last_params

    batch_ = jax.device_put(batch, NamedSharding(mesh, P("stages")))
    return mesh, loss, loss_pp, params, batch, params_, batch_


# "SPMD pipeline parallelism (PP)": the pipeline's parameters and the stacked, staged params
def test_pipeline_parameters_and_stage_sharded_stack(capsys, pipeline):
    _mesh, loss, _loss_pp, params, batch, params_, batch_ = pipeline
    assert lines(capsys.readouterr().out) == [
        "2 stages, 2 layer(s) per stage, 4 pipelined layers total",
        "8 examples per microbatch, 4 microbatches total",
    ]
    first_params, (Ws, bs), _last_params = params_
    assert Ws.shape == (4, 128, 128) and spec_of(Ws) == ("stages", None, None)
    assert bs.shape == (4, 128) and spec_of(bs) == ("stages", None)
    assert first_params[0].is_fully_replicated and spec_of(batch_[0]) == ("stages", None)
    np.testing.assert_allclose(np.asarray(Ws[1]), np.asarray(params[2][0]))

    print(jax.jit(loss)(params, batch))
    (reference,) = printed_floats(capsys)
    np.testing.assert_allclose(reference, numpy_loss(params, batch), rtol=1e-5)


# "SPMD pipeline parallelism (PP)": the pipelined loss (spmd_pipeline vmaps each stage)
def test_pipelined_loss_matches_the_reference(capsys, pipeline):
    mesh, loss, loss_pp, params, batch, params_, batch_ = pipeline
    capsys.readouterr()

    print(jax.jit(loss)(params, batch))

    jax.set_mesh(mesh)
    print(jax.jit(loss_pp)(params_, batch_))

    _ = jax.jit(jax.grad(loss_pp))(params_, batch_)  # don't crash

    reference, pipelined = printed_floats(capsys)
    np.testing.assert_allclose(pipelined, reference, rtol=1e-5)
