"""Which dimensions of a Program may be cut into independent blocks, and how blocks line up.

Every dimension of every value belongs to one *class*: dimensions that an equation's sharding
rule ties by a factor (a matmul's rows in its operand and its result, an elementwise result's
dimension and its operands') share a class. Where a reshape merges dimensions, one element of
the merged dimension's major factor stands for several of the merged one, so each dimension
measures its class in its own *unit*: the elements of one grain, the finest cut that falls on
a whole number of elements in every dimension of the class and of every factor tied to it (a
grouped convolution's features are groups x features per group: a cut keeps whole groups).

A class is *mixed* when an equation combines its elements: a contraction or reduction over
it, a rule that blocks it (cumsum, an index, a concatenation axis) or reads it whole (a
random key), a reshape that buries it as the minor part of a merged dimension; and when a
result has it on two axes (``x @ x.T``), whose blocks (I, K) need two different slices.
Cutting a mixed class would make one block's result depend on another block's data. Every
other class that reaches a result may be cut on its grains, and each block of the results
then reads only the same blocks of the operands.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from spmd.core.program import Equation, Program, Var
from spmd.sharding.propagate import Deferred, factors_of, gathered_factors
from spmd.sharding.rules import Decision, Factors

Node = tuple  # (Var, dim) for a value's dimension, ("factor", equation, name) for a factor


@dataclass
class Classes:
    """The class of every dimension of a Program's values, and which classes may be cut."""

    class_of: dict[tuple[Var, int], int] = field(default_factory=dict)
    unit: dict[tuple[Var, int], int] = field(default_factory=dict)  # elements per grain
    grains: dict[int, int] = field(default_factory=dict)  # grains along each class
    mixed: dict[int, str] = field(default_factory=dict)  # class → the equation that mixes it
    reaches_result: set[int] = field(default_factory=set)

    def why_whole(self, var: Var, dim: int) -> str | None:
        """Why ``var``'s dimension ``dim`` cannot be cut (None: it can)."""
        cls = self.class_of[(var, dim)]
        if cls in self.mixed:
            return self.mixed[cls]
        if self.grains[cls] < 2:
            return f"it has {var.aval.shape[dim]} element(s), too few to cut"
        if cls not in self.reaches_result:
            return "no result depends on it"
        return None


class _WeightedUnion:
    """Union-find over nodes with a ratio to the parent: a node's coordinate is its parent's
    times ``ratio`` (how many of its elements stand for one of the parent's)."""

    def __init__(self) -> None:
        self.parent: dict[Node, Node] = {}
        self.ratio: dict[Node, Fraction] = {}

    def find(self, node: Node) -> tuple[Node, Fraction]:
        path = []
        while self.parent.setdefault(node, node) != node:
            path.append(node)
            node = self.parent[node]
        root, scale = node, Fraction(1)
        for step in reversed(path):  # compress: each node on the path points at the root
            scale *= self.ratio[step]
            self.parent[step], self.ratio[step] = root, scale
        return root, self.ratio.get(path[0], Fraction(1)) if path else Fraction(1)

    def union(self, a: Node, b: Node, ratio: int) -> bool:
        """Tie ``a = b * ratio``; False when they are tied already with another ratio."""
        root_a, scale_a = self.find(a)
        root_b, scale_b = self.find(b)
        if root_a == root_b:
            return scale_a == scale_b * ratio
        self.parent[root_a] = root_b
        self.ratio[root_a] = scale_b * ratio / scale_a
        return True


def dimension_classes(program: Program) -> Classes:
    """Tie the dimensions of ``program``'s values into classes (see the module docstring)."""
    union = _WeightedUnion()
    mixing: list[tuple[Node, str]] = []
    values = {*program.constvars, *program.invars}
    for index, eqn in enumerate(program.equations):
        factors = _factors(eqn)
        values.update(eqn.outputs)
        for value, dims in _values_and_dims(eqn, factors):
            for d, dim in enumerate(dims):
                if not dim:  # no factor: a size-1 dimension broadcast, or one read whole
                    if value.aval.shape[d] != 1:
                        mixing.append(((value, d), f"{_name(eqn)} needs it whole"))
                    continue
                lead, *minor = dim
                ratio = math.prod(factors.sizes[f] for f in minor)
                if not union.union((value, d), ("factor", index, lead), ratio):
                    mixing.append(((value, d), f"{_name(eqn)} ties it to itself out of step"))
                for factor in minor:
                    mixing.append((("factor", index, factor), _merged(eqn)))
        for factor in factors.reduced:
            mixing.append((("factor", index, factor), _reduces(eqn)))
        for factor in factors.blocked:
            mixing.append((("factor", index, factor), f"{_name(eqn)} needs it whole"))
    mixing.extend(_on_two_axes(union, program))
    return _classes(union, mixing, values, program)


def _on_two_axes(union: _WeightedUnion, program: Program) -> list[tuple[Node, str]]:
    """Results that have one class on two axes (``x @ x.T``): blocks (I, I) of such a result
    would not tile it, and a block (I, K) reads two different slices of one dimension."""
    found = []
    for k, atom in enumerate(program.outvars):
        seen: dict[Node, int] = {}
        for d in range(atom.aval.ndim if isinstance(atom, Var) else 0):
            root, _ = union.find((atom, d))
            if root in seen:
                found.append(((atom, d), f"result {k} has it on axes {seen[root]} and {d}"))
            seen.setdefault(root, d)
    return found


def _factors(eqn: Equation) -> Factors:
    rule = factors_of(eqn)
    return gathered_factors(eqn) if isinstance(rule, (Decision, Deferred)) else rule


def _values_and_dims(eqn: Equation, factors: Factors) -> Iterable[tuple[Var, tuple]]:
    for atom, dims in zip(eqn.inputs, factors.operands, strict=True):
        if isinstance(atom, Var):
            yield atom, dims
    yield from zip(eqn.outputs, factors.results, strict=True)


def _name(eqn: Equation) -> str:
    subscripts = eqn.params.get("subscripts")
    return f"einsum {subscripts!r}" if subscripts else eqn.primitive.name


def _reduces(eqn: Equation) -> str:
    if eqn.primitive.rules.calls_blas:
        return f"{_name(eqn)} contracts it"
    return f"{_name(eqn)} reduces over it"


def _merged(eqn: Equation) -> str:
    return f"{_name(eqn)} merges it, as the minor part, into a dimension with others"


def _classes(union: _WeightedUnion, mixing, values: set[Var], program: Program) -> Classes:
    members: dict[Node, list[tuple[tuple[Var, int], Fraction]]] = {}
    for var in values:
        for d in range(var.aval.ndim):
            root, scale = union.find((var, d))
            members.setdefault(root, []).append(((var, d), scale))
    numbers = {root: n for n, root in enumerate(members)}
    factor_scales: dict[Node, list[Fraction]] = {}  # a cut falls on whole factor elements too
    for node in list(union.parent):
        if node[0] == "factor":
            root, scale = union.find(node)
            factor_scales.setdefault(root, []).append(scale)
    found = Classes()
    for node, reason in mixing:
        root, _ = union.find(node)
        if root in numbers:
            found.mixed.setdefault(numbers[root], reason)
    for root, dims in members.items():
        cls = numbers[root]
        grain = _grain([scale for _, scale in dims] + factor_scales.get(root, []))
        units = {key: grain * scale for key, scale in dims}
        counts = {key[0].aval.shape[key[1]] / unit for key, unit in units.items()}
        whole = all(u.denominator == 1 for u in units.values())
        if len(counts) != 1 or not whole or next(iter(counts)).denominator != 1:
            found.mixed.setdefault(cls, "its dimensions do not line up on whole elements")
        if cls in found.mixed:  # never cut: one grain, each dimension whole
            units = {key: key[0].aval.shape[key[1]] for key in units}
            counts = {1}
        for key, unit in units.items():
            found.class_of[key] = cls
            found.unit[key] = int(unit)
        found.grains[cls] = int(counts.pop())
    for atom in program.outvars:
        if isinstance(atom, Var):
            found.reaches_result.update(found.class_of[(atom, d)] for d in range(atom.aval.ndim))
    return found


def _grain(scales: list[Fraction]) -> Fraction:
    """The smallest step of the root's coordinate that is a whole number of elements in every
    dimension: the least common multiple of ``1/scale``."""
    denominators = math.lcm(*(s.denominator for s in scales))
    numerators = math.gcd(*(s.numerator for s in scales))
    return Fraction(denominators, numerators)
