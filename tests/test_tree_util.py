"""Pytrees: dicts, lists, tuples, namedtuples and None are containers."""

from collections import namedtuple

import pytest

from spmd import tree_util

Point = namedtuple("Point", "x y")


def test_flatten_and_unflatten_round_trip():
    tree = {"b": [1, (2, None)], "a": Point(3, 4)}
    leaves, treedef = tree_util.tree_flatten(tree)
    assert leaves == [3, 4, 1, 2]  # dict keys sorted, None holds no leaf
    assert tree_util.tree_unflatten(treedef, leaves) == tree
    assert tree_util.tree_structure(tree) == treedef


def test_tree_map_over_several_trees_and_paths():
    assert tree_util.tree_map(lambda a, b: a + b, [1, (2, 3)], [10, (20, 30)]) == [11, (22, 33)]
    paths = tree_util.tree_map_with_path(lambda p, _: tree_util.keystr(p, "t"), {"w": [0, 0]})
    assert paths == {"w": ["t['w'][0]", "t['w'][1]"]}
    assert tree_util.tree_leaves(None) == []


def test_tree_all_and_tree_reduce():
    import operator

    from spmd.tree_util import tree_all, tree_reduce

    assert tree_all({"a": True, "b": [1, (2,)]}) and not tree_all([1, (0,)]) and tree_all([])
    assert tree_reduce(operator.add, {"a": 1, "b": [2, 3]}) == 6
    assert tree_reduce(operator.mul, [2, (3,)], 10) == 60
    with pytest.raises(TypeError):
        tree_reduce(operator.add, [])
