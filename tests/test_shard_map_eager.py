"""shard_map outside jit runs its body on concrete blocks, as JAX's eager shard_map does;
bodies of shard_map, pmap and inner jit may close over an enclosing trace's values."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import P
from spmd.lax import all_gather, axis_index, axis_size, ppermute, psum


def test_print_inside_an_eager_body_shows_every_devices_block(capsys):
    mesh = spmd.make_mesh((4,), ("i",))

    def body(x):
        print(x)
        print(x.shape, psum(1, "i"), axis_size("i"))
        return psum(x, "i")

    out = spmd.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P())(np.arange(8.0))
    np.testing.assert_array_equal(out, [12.0, 16.0])
    blocks = "\n".join(
        f"On cpu:{i} at mesh coordinates (i,) = ({i},):\n[{2 * i}. {2 * i + 1}.]\n"
        for i in range(4)
    )
    assert capsys.readouterr().out == blocks + "\n(2,) 4 4\n"


def test_two_axis_coordinates_name_every_axis(capsys):
    mesh = spmd.make_mesh((2, 2), ("x", "y"))
    spmd.shard_map(
        lambda b: print(axis_index("y")) or b,
        mesh=mesh,
        in_specs=P("x", "y"),
        out_specs=P("x", "y"),
    )(np.zeros((2, 2)))
    printed = capsys.readouterr().out
    assert "On cpu:1 at mesh coordinates (x, y,) = (0, 1):\n1\n" in printed
    assert "On cpu:2 at mesh coordinates (x, y,) = (1, 0):\n0\n" in printed


def test_psum_of_a_number_is_a_python_int_usable_in_range():
    mesh = spmd.make_mesh((4,), ("i",))

    def body(x):
        size = psum(1, "i")
        assert type(size) is int
        return sum(
            ppermute(x, "i", [(j, (j + s) % size) for j in range(size)]) for s in range(size)
        )

    out = spmd.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(np.arange(4.0))
    np.testing.assert_array_equal(out, [6.0, 6.0, 6.0, 6.0])


def test_eager_and_jitted_shard_map_agree_with_collectives():
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    x = np.arange(64.0).reshape(8, 8)

    def body(b):
        gathered = all_gather(b, "y", axis=1, tiled=True)
        return psum(gathered * (axis_index("x") + 1), "x")

    f = spmd.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P(None, None))
    eager, jitted = f(x), spmd.jit(f)(x)
    want = x[:4] * 1 + x[4:] * 2
    np.testing.assert_array_equal(eager, want)
    np.testing.assert_array_equal(jitted, want)
    assert eager.sharding == jitted.sharding == spmd.NamedSharding(mesh, P())


def test_eager_check_rep_rejects_a_varying_output_called_replicated():
    mesh = spmd.make_mesh((4,), ("i",))
    f = spmd.shard_map(lambda b: b * 2, mesh=mesh, in_specs=P("i"), out_specs=P())
    with pytest.raises(spmd.ShardingError, match="replicated over mesh axis 'i', but it varies"):
        f(np.arange(8.0))
    unchecked = spmd.shard_map(
        lambda b: b * 2, mesh=mesh, in_specs=P("i"), out_specs=P(), check_rep=False
    )
    np.testing.assert_array_equal(unchecked(np.arange(8.0)), [0.0, 2.0])  # the first device's


def test_uneven_blocks_run_compiled_and_stay_exact(capsys):
    mesh = spmd.make_mesh((4,), ("i",))

    def body(b):
        print(type(b).__name__)
        return b + 1

    out = spmd.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(np.arange(7.0))
    np.testing.assert_array_equal(out, np.arange(7.0) + 1)
    assert "BlocksTracer" not in capsys.readouterr().out


def test_python_branch_on_a_body_value_is_a_clear_error():
    mesh = spmd.make_mesh((4,), ("i",))

    def body(b):
        if b.sum() > 0:
            return b
        return -b

    f = spmd.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    with pytest.raises(spmd.TracerBoolConversionError, match=r"one per device.*where"):
        f(np.arange(8.0))


def test_a_body_value_used_after_the_call_is_an_unexpected_tracer():
    mesh = spmd.make_mesh((4,), ("i",))
    kept = []
    spmd.shard_map(lambda b: kept.append(b) or b, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(
        np.arange(8.0)
    )
    with pytest.raises(spmd.UnexpectedTracerError):
        kept[0] + 1


def test_eager_body_closes_over_concrete_values_and_calls_jit():
    mesh = spmd.make_mesh((4,), ("i",))
    offset = spmd.device_put(np.arange(2.0), spmd.NamedSharding(mesh, P()))
    double = spmd.jit(lambda v: 2 * v)
    f = spmd.shard_map(lambda b: double(b) + offset, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    np.testing.assert_array_equal(f(np.arange(8.0)), 2 * np.arange(8.0) + np.tile([0.0, 1.0], 4))


def test_shard_map_pmap_and_inner_jit_bodies_close_over_outer_tracers():
    mesh = spmd.make_mesh((4,), ("i",))
    x, y = np.arange(8.0), np.array([1.0, 2.0, 3.0])

    @spmd.jit
    def mapped(x, y):
        scale = y.sum()  # a traced value of the enclosing jit
        body = spmd.shard_map(lambda b: b * scale, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
        return body(x)

    @spmd.jit
    def pmapped(x, y):
        shift = y * 10
        return spmd.pmap(lambda row: row + shift[:2])(x.reshape(4, 2))

    @spmd.jit
    def nested(x, y):
        return spmd.jit(lambda v: v - y[0])(x)

    np.testing.assert_array_equal(mapped(x, y), x * 6.0)
    np.testing.assert_array_equal(pmapped(x, y), x.reshape(4, 2) + np.array([10.0, 20.0]))
    np.testing.assert_array_equal(nested(x, y), x - 1.0)


def test_closure_over_a_finished_trace_is_still_an_error():
    leaked = []
    spmd.jit(lambda v: leaked.append(v) or v)(np.ones(3))
    mesh = spmd.make_mesh((4,), ("i",))
    f = spmd.jit(
        spmd.shard_map(lambda b: b + leaked[0].sum(), mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    )
    with pytest.raises(spmd.UnexpectedTracerError, match="after the trace that made it finished"):
        f(np.arange(8.0))


def test_stack_of_body_scalars_builds_an_array():
    mesh = spmd.make_mesh((2,), ("i",))
    f = spmd.shard_map(
        lambda b: snp.array([b.sum(), b.max()]), mesh=mesh, in_specs=P("i"), out_specs=P("i")
    )
    np.testing.assert_array_equal(f(np.arange(4.0)), [1.0, 1.0, 5.0, 3.0])
