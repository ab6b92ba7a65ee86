"""Per-device steps run once for all of this process's devices, where that does less work.

The executor (spmd/runtime/executor.py) runs a step list with a ``Once`` beside it, which
says which Compute steps may run this way (worked out once per step list, ``plan_for``)
and runs one when the values at hand allow it, on NumPy devices:

- **A step on shared buffers.** Where every input is one buffer that every device shares
  (a replicated weight, an all-reduced gradient, a literal) and the per-device parameters
  agree, the step runs once and the devices share its result, read-only: a data-parallel
  weight update is computed once, not once per device.
- **A contraction with a shared operand** (``x_d @ w``, one ``w``): the other operand's
  blocks are stacked along a new label (spmd/runtime/stacking.py) and contracted in one
  BLAS call per core, each device's result a view of the product. Each BLAS call packs
  ``w`` again, which for a small block costs more than the product itself; where the
  copy of the blocks would cost more than packing ``w`` for each, each device's product
  is its own call, the devices taken in turn by whichever core is free.
- **A contraction whose partial sums only a reduction reads** (a weight gradient, summed
  by an all-reduce or a reduce-scatter): one sum over the stacked blocks, and the
  reduction hands out its blocks (spmd/runtime/summed.py).

Anything else, or values that do not allow it (blocks of different shapes, other
backends, several processes for a sum), runs per device as before.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from spmd.core.program import Var
from spmd.prims.contraction import einsum_p
from spmd.runtime.stacking import (
    Blocks,
    Stacks,
    by_cores,
    consecutive,
    einsum,
    fresh_label,
    frozen,
    insert,
    per_core_slices,
    same_params,
    stackable,
    subscripts_of,
    values_of,
)
from spmd.runtime.summed import Chain, Totals, chain_of, contract, hand_out, local_groups
from spmd.sharding.device_program import Compute, Reshard


@dataclass(frozen=True, eq=False)
class StackPlan:
    """Which steps of a step list (by index) may run once for all devices: ``shared``
    (replicated results with one set of parameters), ``contractions`` (two-operand
    einsums with one set of parameters), ``chains`` (such an einsum whose pending sum only
    a reduction reads, spmd/runtime/summed.py) and ``links`` (the steps of a chain between
    the einsum and its reduction)."""

    shared: frozenset[int] = frozenset()
    contractions: frozenset[int] = frozenset()
    chains: dict[int, Chain] | None = None
    links: frozenset[int] = frozenset()

    def runs(self, index: int) -> bool:
        """Whether Compute step ``index`` may run once for all devices."""
        return index in self.shared or index in self.contractions or index in self.links


_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def plan_for(owner, steps, last_use: dict) -> StackPlan:
    """The StackPlan of ``steps`` (``owner``: the executor's plan of them), made once."""
    found = _PLANS.get(owner)
    if found is None:
        found = _PLANS[owner] = _plan(steps, last_use)
    return found


def _plan(steps, last_use: dict) -> StackPlan:
    shared, contractions, chains, links = set(), set(), {}, set()
    for index, step in enumerate(steps):
        if not isinstance(step, Compute) or not same_params(step.params):
            continue
        if step.eqn.primitive is einsum_p and len(step.inputs) == 2:
            contractions.add(index)
            chain = chain_of(index, steps, last_use)
            if chain is not None:
                chains[index] = chain
                links.update(chain.links)
        if all(not s.pending and not any(s.dims) for s in step.shardings):
            shared.add(index)
    return StackPlan(frozenset(shared), frozenset(contractions), chains, frozenset(links))


class Once:
    """Runs the steps of one run of a step list that may run once for all devices (see
    the module's docstring); ``calls``: the steps' per-device calls by index."""

    def __init__(self, run, plan: StackPlan, calls: dict, last_use: dict) -> None:
        self.run, self.plan, self.calls = run, plan, calls
        self.totals = Totals()
        self.stacks = Stacks(last_use)

    def compute(self, index: int, step: Compute, env: dict) -> bool:
        """Run Compute step ``index`` once for all devices if the values allow it (True),
        binding its outputs in ``env``; else leave it to run per device (False)."""
        plan, positions = self.plan, self.run.positions
        self.stacks.at(index)
        if index in plan.links and self._link(index, step, env):
            return True
        values = [values_of(atom, env, positions) for atom in step.inputs]
        varying = [type(v) is Blocks for v in values]
        if plan.chains and index in plan.chains and self._chain(step, values, env):
            return True
        if index in plan.contractions and varying.count(True) == 1:
            return _contracted(step, values, varying.index(True), env, positions, self.stacks)
        if index in plan.shared and not any(varying):
            _run_once(step, self.calls[index], env, positions, [list(range(len(positions)))])
            return True
        return False

    def reshard(self, step: Reshard, env: dict) -> bool:
        """Hand out the blocks of a reduction of a value that holds its groups' sums."""
        if step.src not in self.totals.groups:
            return False
        del self.totals.groups[step.src]
        env[step.dst] = hand_out(self.run, step, env[step.src])
        return True

    def _chain(self, step: Compute, values: list, env: dict) -> bool:
        if not all(stackable(v) for v in values):
            return False
        groups = local_groups(self.run, step.shardings[0].pending)
        if groups is None:
            return False
        env[step.outputs[0]] = contract(step, values, groups, self.run.positions, self.stacks)
        self.totals.groups[step.outputs[0]] = groups
        return True

    def _link(self, index: int, step: Compute, env: dict) -> bool:
        """A step linear in values that hold their groups' sums runs once per group where
        its other operands are one buffer within each group; else those values go back to
        partials and it runs per device."""
        totals = self.totals.groups
        summed = [a for a in step.inputs if isinstance(a, Var) and a in totals]
        if not summed:
            return False
        groups, positions = totals[summed[0]], self.run.positions
        others = [a for a in step.inputs if isinstance(a, Var) and a not in totals]
        if any(totals[a] != groups for a in summed) or not all(
            _one_per_group(env[a], groups, positions) for a in others
        ):
            for a in dict.fromkeys(summed):
                self.totals.partials(a, env, positions)
            return False
        for a in dict.fromkeys(summed):
            del totals[a]
        _run_once(step, self.calls[index], env, positions, groups)
        totals[step.outputs[0]] = groups
        return True


def _one_per_group(blocks: dict, groups: list[list[int]], positions) -> bool:
    """Whether the devices of each group share one buffer."""
    return all(
        all(blocks[positions[i]] is blocks[positions[group[0]]] for i in group) for group in groups
    )


def _run_once(step: Compute, call, env: dict, positions, groups: list[list[int]]) -> None:
    """Run ``step`` on the first device of each group; the group's devices share its
    results, read-only. (The call lets go of values dying there on that device; the
    executor drops the others.)"""
    for var in step.outputs:
        env[var] = {}
    for group in groups:
        call(env, positions[group[0]])
    for var in step.outputs:
        found = env[var]
        env[var] = {}
        for group in groups:
            first = positions[group[0]]
            if first in found:  # else nobody reads it: the call let go of it already
                env[var].update(dict.fromkeys((positions[i] for i in group), frozen(found[first])))


def _contracted(step: Compute, values: list, k: int, env: dict, positions, stacks) -> bool:
    """A contraction of one shared operand with the devices' blocks of the other (operand
    ``k``): stacked, each device's result a view of the product, where the copy costs less
    than packing the shared operand again for each device's own call (or costs nothing)."""
    blocks, other = values[k], values[1 - k]
    if not stackable(blocks) or type(other) is not np.ndarray:
        return False
    subscripts, operands, output = subscripts_of(step.params[0])
    label = fresh_label(subscripts)
    own = [c for c in operands[k] if c not in operands[1 - k]]  # the operand's free labels
    operands[k] = insert(operands[k], label, own[0] if own else None)
    axis = operands[k].index(label)
    stacked = f"{','.join(operands)}->{label}{output}"
    per_call = per_core_slices(len(blocks))[0].stop
    # A device's own call packs the shared operand again; stacking copies the blocks (cold
    # in cache: counted twice).
    one_buffer = axis == 0 and consecutive(blocks)
    alone = (per_call - 1) * other.size <= 2 * per_call * blocks[0].size and not one_buffer

    def product(devices: slice, on_caller: bool) -> Any:
        pair = [other, other]
        if alone:
            return [einsum(_put(pair, k, b), subscripts) for b in blocks[devices]]
        indices = tuple(range(len(blocks))[devices])
        pair[k] = stacks.get(step.inputs[k], blocks[devices], indices, axis, on_caller)
        return einsum(pair, stacked)

    nbytes = sum(b.nbytes for b in blocks) + other.nbytes
    pieces = by_cores(product, len(blocks), nbytes, one_each=alone, one_call=one_buffer)
    env[step.outputs[0]] = dict(zip(positions, (b for p in pieces for b in p), strict=True))
    return True


def _put(pair: list, k: int, value: Any) -> list:
    pair = list(pair)
    pair[k] = value
    return pair
