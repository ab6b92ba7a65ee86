"""A short tour of spmd on the default virtual devices, printed as it runs."""

import numpy as np
from rich.console import Console

import spmd
from spmd import NamedSharding, P
from spmd.debug import visualize_array_sharding
from spmd.sharding.transfer import plan_transfer

console = Console()


def step(title: str, code: str) -> None:
    console.print(f"\n[bold cyan]── {title}[/]")
    console.print(f"[dim]>>> {code}[/]", highlight=False)


def run() -> None:
    if spmd.distributed.launched_by_mpi():
        from spmd.demo_multiprocess import run as run_across_processes

        return run_across_processes()
    console.print("[bold]spmd[/]: write array code for one device, run it over many.")

    step("Devices", "spmd.devices()")
    console.print(spmd.devices())

    step("A 2×4 mesh of those devices", "mesh = spmd.make_mesh((2, 4), ('x', 'y'))")
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    console.print(mesh, "device ids:", mesh.device_ids.tolist())

    x = np.arange(32.0, dtype=np.float32).reshape(4, 8)
    for spec, note in [
        (P("x", "y"), "rows split over x, columns over y"),
        (P("x"), "rows split over x, replicated over y"),
        (P(None, ("x", "y")), "columns split over all 8 devices, x major"),
        (P(), "fully replicated"),
    ]:
        step(note, f"a = spmd.device_put(x, NamedSharding(mesh, {spec!r}))")
        a = spmd.device_put(x, NamedSharding(mesh, spec))
        console.print(f"shard shape {a.sharding.shard_shape(a.shape)}")
        visualize_array_sharding(a)

    step(
        "Uneven shards: a (5, 6) array on the 2×4 mesh",
        "u = spmd.device_put(np.arange(30.).reshape(5, 6), NamedSharding(mesh, P('x', 'y')))",
    )
    u = spmd.device_put(np.arange(30.0).reshape(5, 6), NamedSharding(mesh, P("x", "y")))
    for shard in u.addressable_shards:
        index = ", ".join(f"{s.start}:{s.stop}" for s in shard.index)
        console.print(f"{shard.device}: x[{index}], shape {shard.data.shape}")
    visualize_array_sharding(u)

    step(
        "Rank 3: one grid per block of the leading dimension",
        "t = spmd.device_put(np.zeros((4, 4, 8)), NamedSharding(mesh, P('x', None, 'y')))",
    )
    t = spmd.device_put(np.zeros((4, 4, 8)), NamedSharding(mesh, P("x", None, "y")))
    visualize_array_sharding(t)

    step(
        "Resharding moves only what each device lacks",
        "b = spmd.device_put(a, NamedSharding(mesh, P('y', 'x')))",
    )
    a = spmd.device_put(x, NamedSharding(mesh, P("x", "y")))
    b = spmd.device_put(a, NamedSharding(mesh, P("y", "x")))
    visualize_array_sharding(b)
    plan = plan_transfer(a.sharding.layout(x.shape), b.sharding.layout(x.shape), x.itemsize)
    console.print(f"moved {plan.bytes_moved} of {x.nbytes} bytes between devices")
    console.print("round trip exact:", bool((np.asarray(b) == x).all()))
    console.print(repr(b))

    step(
        "jit follows the data: a sum over the sharded rows leaves a pending sum over x",
        "spmd.jit(lambda v: v.sum(axis=0))(a)",
    )
    total = spmd.jit(lambda v: v.sum(axis=0))
    console.print(total.lower(a).explain(), markup=False)
    result = total(a)
    console.print(f"{np.asarray(result)} sharded {result.sharding.spec}")
    visualize_array_sharding(result)
    _manual(mesh)


def _manual(mesh: spmd.Mesh) -> None:
    """shard_map, pmap and nested pmap: per-device code with explicit collectives."""
    line = spmd.make_mesh((8,), ("x",))
    step(
        "shard_map: each device sees its block; ppermute passes blocks one device on",
        "spmd.shard_map(lambda b: ppermute(b, 'x', [(i, (i + 1) % 8) ...]), line, "
        "in_specs=P('x'), out_specs=P('x'))(np.arange(16))",
    )
    shift = [(i, (i + 1) % 8) for i in range(8)]
    rolled = spmd.shard_map(
        lambda b: spmd.lax.ppermute(b, "x", shift), line, in_specs=P("x"), out_specs=P("x")
    )
    console.print(np.asarray(rolled(np.arange(16))))

    step(
        "shard_map on uneven blocks: 11 elements over 8 devices, each minus the global mean",
        "spmd.shard_map(lambda b: b - spmd.lax.psum(b.sum(), 'x') / 11, line, P('x'), P('x'))",
    )
    centered = spmd.shard_map(
        lambda b: b - spmd.lax.psum(b.sum(), "x") / 11, line, in_specs=P("x"), out_specs=P("x")
    )
    console.print(np.asarray(centered(np.arange(11.0))))
    console.print(spmd.jit(centered).lower(np.arange(11.0)).as_text(), markup=False)

    step(
        "check_rep: a value that differs per device cannot be claimed replicated",
        "spmd.shard_map(lambda a: a * 2, line, in_specs=P('x'), out_specs=P())(x)",
    )
    try:
        spmd.shard_map(lambda a: a * 2, line, in_specs=P("x"), out_specs=P())(np.arange(16.0))
    except spmd.ShardingError as error:
        console.print(f"[red]ShardingError[/]: {error}", highlight=False)

    step(
        "pmap: one index per device; results stay on their devices",
        "spmd.pmap(lambda v: v / spmd.lax.psum(v, 'i'), 'i')(np.arange(1., 9.))",
    )
    share = spmd.pmap(lambda v: v / spmd.lax.psum(v, "i"), "i")(np.arange(1.0, 9.0))
    console.print(np.round(np.asarray(share), 3), share.sharding)

    step(
        "Nested pmap over a 2×4 grid: psum over 'cols', index along 'rows'",
        "spmd.pmap(spmd.pmap(lambda v: psum(v, 'cols') + axis_index('rows') * 100, 'cols'), "
        "'rows')(np.arange(24).reshape(2, 4, 3))",
    )
    inner = spmd.pmap(
        lambda v: spmd.lax.psum(v, "cols") + spmd.lax.axis_index("rows") * 100, "cols"
    )
    grid = spmd.pmap(inner, "rows")(np.arange(24).reshape(2, 4, 3))
    console.print(np.asarray(grid))
    visualize_array_sharding(grid[:, :, 0])
