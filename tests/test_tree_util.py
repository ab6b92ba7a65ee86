"""Pytrees: dicts, lists, tuples, namedtuples and None are containers."""

from collections import namedtuple

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
