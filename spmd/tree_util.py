"""Pytrees on optree: dicts, lists, tuples, namedtuples and None are containers, all else leaves.

Registrations live in spmd's own optree namespace, so they never clash with other libraries.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import optree

NAMESPACE = "spmd"
PyTreeDef = optree.PyTreeSpec


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
    """``(leaves, treedef)``. Example: ``tree_flatten({'a': 1, 'b': [2]})[0]`` → ``[1, 2]``."""
    return optree.tree_flatten(tree, is_leaf, namespace=NAMESPACE)


def tree_unflatten(treedef: PyTreeDef, leaves: Sequence[Any]) -> Any:
    """Rebuild a tree from ``treedef`` and its leaves, in ``tree_flatten`` order."""
    return optree.tree_unflatten(treedef, leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of ``tree``, left to right (dict keys sorted)."""
    return optree.tree_leaves(tree, is_leaf, namespace=NAMESPACE)


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The container structure of ``tree`` without its leaves."""
    return optree.tree_structure(tree, is_leaf, namespace=NAMESPACE)


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None):
    """Apply ``f`` leafwise. Example: ``tree_map(lambda x: 2 * x, [1, (2,)])`` → ``[2, (4,)]``."""
    return optree.tree_map(f, tree, *rest, is_leaf=is_leaf, namespace=NAMESPACE)


def tree_all(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every leaf is true. Example: ``tree_all([True, (1, 2)])`` → ``True``."""
    return all(tree_leaves(tree, is_leaf))


_NO_INITIAL = object()


def tree_reduce(
    function: Callable[[Any, Any], Any],
    tree: Any,
    initializer: Any = _NO_INITIAL,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """Fold ``function`` over the leaves, left to right (from ``initializer`` if given).

    Example: ``tree_reduce(operator.add, {'a': 1, 'b': [2, 3]})`` → ``6``."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIAL:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_map_with_path(
    f: Callable, tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None
):
    """Like ``tree_map``, but ``f`` also receives each leaf's path (a tuple of keys)."""
    return optree.tree_map_with_path(f, tree, *rest, is_leaf=is_leaf, namespace=NAMESPACE)


def tree_flatten_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
    """``(paths, leaves, treedef)``; a path is the tuple of keys leading to a leaf."""
    return optree.tree_flatten_with_path(tree, is_leaf, namespace=NAMESPACE)


def tree_broadcast_prefix(
    prefix: Any, tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> Any:
    """Repeat each leaf of ``prefix`` over the matching subtree of ``tree``."""
    return optree.tree_broadcast_prefix(prefix, tree, is_leaf, namespace=NAMESPACE)


def register_pytree_node(
    cls: type, flatten: Callable[[Any], tuple], unflatten: Callable[[Any, Any], Any]
) -> None:
    """Make ``cls`` a container. ``flatten(x) -> (children, aux)``; ``unflatten(aux, children)``."""
    optree.register_pytree_node(
        cls, flatten, lambda aux, children: unflatten(aux, children), namespace=NAMESPACE
    )


def keystr(path: Sequence[Any], root: str = "") -> str:
    """A leaf's path as Python indexing: ``keystr(('w', 0), 'params')`` → ``params['w'][0]``."""
    return root + "".join(f"[{key!r}]" for key in path)
