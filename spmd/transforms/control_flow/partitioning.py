"""Partitioning control flow: while, scan and cond as Loop and Branch steps whose bodies are
partitioned (under jit) or lowered (inside shard_map and pmap bodies) into sub-steps.

Under jit, a loop's carry keeps the layout its body gives back: starting from the initial
values', the body is propagated with the carry's layouts and, where it returns a carry laid
out otherwise, the carry takes the body's layout (a few rounds), then keeps only what both
agree on, which only ever unsplits, so it settles. A predicate or branch index is computed
whole on every device (a reduction of sharded data is completed first), so every device and
every process runs the same iterations. Inside per-device bodies, a loop whose body holds
collectives runs as a Loop step of the body's lowered steps; its predicate must not vary
over the mesh. A loop without collectives stays one equation, run whole on each device.
"""

from __future__ import annotations

from spmd.core.program import Literal, Program, Var
from spmd.core.varying import program_varying
from spmd.errors import ShapeError, SpmdTypeError
from spmd.sharding.device_program import Block, Branch, Loop
from spmd.sharding.mesh import Mesh
from spmd.sharding.plans import value_layout
from spmd.sharding.propagate import BodiesDecision, Deferred, propagate
from spmd.sharding.rules import ValueSharding
from spmd.transforms.control_flow.programs import CollectiveInBodyError, split
from spmd.transforms.partition import partition
from spmd.transforms.per_device_lowering import Held, Lowering, whole

ADOPT_ROUNDS = 3  # rounds in which a carry takes its body's layout, before only unsplitting


# --- under jit: the Deferred sharding rules ----------------------------------------------


def while_sharding(in_avals, out_avals, **params) -> Deferred:
    return Deferred(lambda operands, mesh: _while_decision(params, operands, in_avals, mesh))


def scan_sharding(in_avals, out_avals, **params) -> Deferred:
    return Deferred(lambda operands, mesh: _scan_decision(params, operands, in_avals, mesh))


def cond_sharding(in_avals, out_avals, **params) -> Deferred:
    return Deferred(lambda operands, mesh: _cond_decision(params, operands, in_avals, mesh))


def _settled(sharding: ValueSharding | None, aval) -> ValueSharding:
    """How a loop takes an operand: on the mesh, its pending reduction completed."""
    if sharding is None:
        return ValueSharding.replicated(aval.ndim)
    return sharding.without_pending()


def _out_shardings(program: Program, mesh: Mesh, in_shardings: list) -> list[ValueSharding]:
    """The layouts ``program``'s results come out in, given its inputs'."""
    found = propagate(program, mesh, in_shardings).shardings
    return [
        _settled(None if isinstance(a, Literal) else found.get(a), a.aval) for a in program.outvars
    ]


def _meet(a: ValueSharding, b: ValueSharding) -> ValueSharding:
    """The split both layouts agree on (each dimension split alike, or not at all)."""
    return ValueSharding(tuple(x if x == y else () for x, y in zip(a.dims, b.dims, strict=True)))


def _carry_fixed_point(carry: list[ValueSharding], body_carry) -> list[ValueSharding]:
    """The carry's layouts: ``body_carry(carry)`` (the body's results' layouts) equal to
    them. The carry takes the body's layouts for ADOPT_ROUNDS, then keeps their meet, which
    only unsplits dimensions, so the loop ends."""
    rounds = 0
    while True:
        out = body_carry(carry)
        if out == carry:
            return carry
        rounds += 1
        if rounds <= ADOPT_ROUNDS:
            carry = out
        else:
            carry = [_meet(c, o) for c, o in zip(carry, out, strict=True)]


def _block(part) -> Block:
    return Block(
        tuple(part.program.invars),
        tuple(part.host_equations),
        tuple(part.steps),
        tuple(atom for atom, _ in part.outputs),
        tuple(sharding for _, sharding in part.outputs),
        tuple(part.in_shardings),
    )


def _while_decision(params, operands, in_avals, mesh: Mesh) -> BodiesDecision:
    cond, body = params["cond_program"], params["body_program"]
    nc, nb = params["cond_nconsts"], params["body_nconsts"]
    settled = [_settled(s, a) for s, a in zip(operands, in_avals, strict=True)]
    cond_consts, body_consts, init = split(settled, nc, nb)
    carry = _carry_fixed_point(init, lambda c: _out_shardings(body, mesh, body_consts + c))
    predicate = ValueSharding(())

    def lower(inputs, outputs) -> Loop:
        cond_part = partition(cond, mesh, cond_consts + carry, [predicate])
        body_part = partition(body, mesh, body_consts + carry, list(carry))
        return Loop(
            "while",
            tuple(inputs),
            tuple(outputs),
            tuple(carry),
            _block(body_part),
            _block(cond_part),
            (nc, nb),
        )

    return BodiesDecision(
        (*cond_consts, *body_consts, *carry),
        tuple(carry),
        "while: the carry keeps the layout its body gives back",
        lower=lower,
    )


def _scan_decision(params, operands, in_avals, mesh: Mesh) -> BodiesDecision:
    body, nc, nn = params["body"], params["num_consts"], params["num_carry"]
    settled = [_settled(s, a) for s, a in zip(operands, in_avals, strict=True)]
    consts, init, xs = split(settled, nc, nn)
    xs = [ValueSharding(((), *x.dims[1:])) for x in xs]  # each device steps through all of it
    slices = [ValueSharding(x.dims[1:]) for x in xs]

    def body_carry(carry):
        return _out_shardings(body, mesh, consts + carry + slices)[:nn]

    carry = _carry_fixed_point(init, body_carry)
    ys = _out_shardings(body, mesh, consts + carry + slices)[nn:]
    stacked = [ValueSharding(((), *y.dims)) for y in ys]

    def lower(inputs, outputs) -> Loop:
        body_part = partition(body, mesh, consts + carry + slices, carry + ys)
        y_blocks = []
        for y, aval in zip(ys, body.out_avals[nn:], strict=True):
            layout = value_layout(mesh, y.dims, aval.shape)
            y_blocks.append(tuple(layout.block_shape(b) for b in layout.blocks))
        return Loop(
            "scan",
            tuple(inputs),
            tuple(outputs),
            (*carry, *stacked),
            _block(body_part),
            None,
            (nc, nn),
            params["length"],
            params["reverse"],
            tuple(y_blocks),
        )

    return BodiesDecision(
        (*consts, *carry, *xs),
        (*carry, *stacked),
        "scan: the carry keeps the layout its body gives back, the ys their slices'",
        lower=lower,
    )


def _cond_decision(params, operands, in_avals, mesh: Mesh) -> BodiesDecision:
    branches = params["branches"]
    settled = [_settled(s, a) for s, a in zip(operands[1:], in_avals[1:], strict=True)]
    outs = [_out_shardings(b, mesh, settled) for b in branches]
    results = outs[0]
    for other in outs[1:]:
        results = [_meet(r, o) for r, o in zip(results, other, strict=True)]
    index = ValueSharding(())

    def lower(inputs, outputs) -> Branch:
        blocks = tuple(_block(partition(b, mesh, settled, list(results))) for b in branches)
        return Branch(inputs[0], tuple(inputs[1:]), tuple(outputs), tuple(results), blocks)

    return BodiesDecision(
        (index, *settled),
        tuple(results),
        "cond: laid out as its branches give it back",
        lower=lower,
    )


# --- inside shard_map and pmap bodies: the per_device rules ------------------------------

Lowered = list[Held] | None  # None: run the equation whole on each device (no collectives)


def lower_while(lowering: Lowering, eqn, inputs: list[Held], uneven: bool = False) -> Lowered:
    p = eqn.params
    cond, body = p["cond_program"], p["body_program"]
    if not _needs_lowering([cond, body]):
        return None
    _check_even(uneven, eqn.primitive.name)
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    carry_vma = eqn.primitive.rules.varying(eqn, [_vma(a) for a in eqn.inputs])
    cond_consts = [_vma(a) for a in eqn.inputs[:nc]]
    (pred_vma,) = program_varying(cond, cond_consts + [frozenset(v) for v in carry_vma])
    _check_uniform(pred_vma, "while_loop", "predicate")
    atoms = [lowering.whole_value(h) for h in inputs]
    outputs = tuple(Var(v.aval) for v in eqn.outputs)
    lowering.steps.append(
        Loop(
            "while",
            tuple(atoms),
            outputs,
            tuple(whole(v.aval) for v in outputs),
            _lowered(lowering, body),
            _lowered(lowering, cond),
            (nc, nb),
        )
    )
    return [Held(v) for v in outputs]


def lower_scan(lowering: Lowering, eqn, inputs: list[Held], uneven: bool = False) -> Lowered:
    p = eqn.params
    body, nn = p["body"], p["num_carry"]
    if not _needs_lowering([body]):
        return None
    _check_even(uneven, eqn.primitive.name)
    atoms = [lowering.whole_value(h) for h in inputs]
    outputs = tuple(Var(v.aval) for v in eqn.outputs)
    y_blocks = tuple((a.shape,) * lowering.count for a in body.out_avals[nn:])
    lowering.steps.append(
        Loop(
            "scan",
            tuple(atoms),
            outputs,
            tuple(whole(v.aval) for v in outputs),
            _lowered(lowering, body),
            None,
            (p["num_consts"], nn),
            p["length"],
            p["reverse"],
            y_blocks,
        )
    )
    return [Held(v) for v in outputs]


def lower_cond(lowering: Lowering, eqn, inputs: list[Held], uneven: bool = False) -> Lowered:
    branches = eqn.params["branches"]
    if not _needs_lowering(list(branches)):
        return None
    _check_even(uneven, eqn.primitive.name)
    _check_uniform(_vma(eqn.inputs[0]), "cond", "index (or predicate)")
    atoms = [lowering.whole_value(h) for h in inputs]
    outputs = tuple(Var(v.aval) for v in eqn.outputs)
    blocks = tuple(_lowered(lowering, b) for b in branches)
    lowering.steps.append(
        Branch(atoms[0], tuple(atoms[1:]), outputs, tuple(whole(v.aval) for v in outputs), blocks)
    )
    return [Held(v) for v in outputs]


def lower_call(lowering: Lowering, eqn, inputs: list[Held], uneven: bool = False) -> Lowered:
    """A call of a traced function (custom_jvp, custom_vjp) whose body holds collectives:
    its equations are emitted in place, as the partitioner inlines it under jit."""
    call = eqn.params["call"]
    if not _needs_lowering([call]):
        return None
    _check_even(uneven, eqn.params.get("name", eqn.primitive.name))
    return lowering.run([call], (0,) * lowering.count, inputs)


def refuse_collectives(programs, who: str) -> None:
    """A loop run whole on each device's values (its impl) cannot run collectives: only
    jit lowers its body step by step."""
    if _needs_lowering(list(programs)):
        raise CollectiveInBodyError(
            f"{who}: the body holds collectives, which run only when the loop is compiled: "
            f"inside an eager shard_map, wrap the shard_map in spmd.jit (then each "
            f"iteration's collectives run as the body's steps)."
        )


def _vma(atom) -> frozenset:
    return frozenset() if isinstance(atom, Literal) else frozenset(atom.aval.vma)


def _check_uniform(vma: frozenset, who: str, what: str) -> None:
    if vma:
        axes = ", ".join(map(repr, sorted(vma)))
        raise SpmdTypeError(
            f"{who}: the body holds collectives, but its {what} varies over mesh axes "
            f"({axes}), so devices could run different iterations and their collectives would "
            f"not meet. Make it the same on every device first: reduce it with "
            f"lax.psum or lax.pmax over ({axes}) (a boolean as an int, then compare)."
        )


def _needs_lowering(programs: list[Program]) -> bool:
    """Whether a body holds collectives, axis_index or per-device calls (in nested bodies
    too): then it is lowered step by step, not run whole on each device."""
    for program in programs:
        for eqn in program.equations:
            rules = eqn.primitive.rules
            if rules.collective is not None or eqn.primitive.name in ("axis_index", "pvary"):
                return True
            if rules.per_device is not None and rules.per_device not in _BODY_HOLDERS:
                return True
            for value in eqn.params.values():
                nested = value if isinstance(value, tuple) else (value,)
                if _needs_lowering([x for x in nested if isinstance(x, Program)]):
                    return True
    return False


# Equations lowered per device only for what their bodies hold (read below them).
_BODY_HOLDERS = (lower_while, lower_scan, lower_cond, lower_call)


def _check_even(uneven: bool, who: str) -> None:
    """A body lowered step by step is one program for every device: uneven blocks, whose
    bodies differ in shapes, would run the first device's on all."""
    if uneven:
        raise ShapeError(
            f"{who} inside shard_map: its body holds collectives, and the shard_map's inputs "
            f"are split unevenly, so devices hold blocks of different shapes. Make each split "
            f"dimension a multiple of its mesh axes' size (pad the input), or move the "
            f"collectives out of the loop."
        )


def _lowered(lowering: Lowering, program: Program) -> Block:
    """A body's per-device steps, lowered by a child Lowering of its own."""
    steps: list = []
    child = Lowering(lowering.mesh, steps)
    held = child.run([program], (0,) * lowering.count, [Held(v) for v in program.invars])
    outvars = tuple(child.whole_value(h) for h in held)
    return Block(
        tuple(program.invars), (), tuple(steps), outvars, tuple(whole(a.aval) for a in outvars)
    )
