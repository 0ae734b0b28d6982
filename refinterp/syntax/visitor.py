"""One way to walk expressions: a pass over SkriptND expressions subclasses `ExprVisitor` and
defines one `visit_<NodeClass>` method per node class it handles, instead of an `isinstance`
chain (the way lark's `Visitor` and sqlglot's one-method-per-node generator work).

    class Names(ExprVisitor[set]):
        def visit_Name(self, node):
            return {node.name}
        def generic_visit(self, node):
            return set().union(*(self.visit(child) for child in children(node)))

A pass that must handle every expression class sets `complete = True`; then it raises
`UnhandledNode` for a class it has no method for, and tests/syntax/test_visitor.py fails until every
such pass has a method for every class in `EXPRESSION_CLASSES` — adding a node type cannot be
forgotten in a pass that claims to handle them all.
"""

from __future__ import annotations

import typing
from typing import Any, Callable, ClassVar, Generic, Iterator, TypeVar

from refinterp.syntax import ast

R = TypeVar("R")

# Every class an expression (`ast.Expr`) or a list or index item (`ast.ListItem`,
# `ast.IndexItem`) can be.
EXPRESSION_CLASSES: tuple[type, ...] = tuple(dict.fromkeys(
    typing.get_args(ast.Expr) + (ast.Range, ast.Slice)))


class UnhandledNode(Exception):
    """A complete pass met a node class it has no method for (a bug in refinterp)."""


class ExprVisitor(Generic[R]):
    """Dispatch on the node's class: `visit(node, *args)` calls `visit_<Class>(node, *args)`,
    or `generic_visit` for a class without a method."""

    complete: ClassVar[bool] = False
    _methods: ClassVar[dict[type, Callable[..., Any] | None]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._methods = {}

    def visit(self, node: Any, *args: Any) -> R:
        cls = type(node)
        try:
            method = self._methods[cls]
        except KeyError:
            method = getattr(type(self), f"visit_{cls.__name__}", None)
            self._methods[cls] = method
        if method is None:
            return self.generic_visit(node, *args)
        return method(self, node, *args)

    def generic_visit(self, node: Any, *args: Any) -> R:
        """A node class without a `visit_` method: an error for a complete pass; override it to
        fold over the children (`children(node)`)."""
        raise UnhandledNode(f"{type(self).__name__} does not handle {type(node).__name__}")

    def visit_chain(self, node: Any, first: Callable[[Any], Any | None] | None = None) -> R:
        """`visit(node)` for a pass whose rules visit a node's first operand (`first`, default
        `first_operand`) before anything else, exactly once and in the same context, through
        `visit_chain`: a long chain below `node` (`chain_below`) is visited from its deepest
        node up, each result kept for its parent's rule, so with no recursion along it."""
        # id(node) -> (node, result): an entry holds its node, so an entry left by a pass that
        # raised can never be taken for a later node at the same address
        ready: dict[int, tuple[Any, Any]] = self.__dict__.setdefault("_ready", {})
        entry = ready.pop(id(node), None)
        if entry is not None and entry[0] is node:
            return entry[1]
        for inner in chain_below(node, first or first_operand):
            ready[id(inner)] = (inner, self.visit(inner))
        return self.visit(node)

    @classmethod
    def unhandled(cls) -> list[str]:
        """The expression classes this pass has no `visit_` method for."""
        return [c.__name__ for c in EXPRESSION_CLASSES if not hasattr(cls, f"visit_{c.__name__}")]


# A chain of at most this many first operands is walked by plain recursion (`chain_below`).
SHORT_CHAIN = 16


def first_operand(node: Any) -> Any | None:
    """The operand a flat chain nests through, or None: a `Binary`'s left operand, a `Fold`'s
    or `Unary`'s operand, a `Subscript`'s or `Member`'s base. The parser builds flat chains
    (`1 + 1 + ... + 1`, `x[0][0]...`, `x.size.size`) in a loop, so their trees are as deep as
    the chains are long, without bound."""
    if isinstance(node, ast.Binary):
        return node.left
    if isinstance(node, (ast.Fold, ast.Unary)):
        return node.operand
    if isinstance(node, (ast.Subscript, ast.Member)):
        return node.base
    return None


def chain_below(node: Any, first: Callable[[Any], Any | None] = first_operand) -> list[Any]:
    """The nodes below `node` along `first` (its first operand, that operand's first operand,
    ...), deepest first — or [] when there are at most SHORT_CHAIN of them.

    A pass whose rule for each of these nodes visits the node's `first` operand before
    anything else visits them in this order, then `node`, and so takes the order of plain
    recursion without recursing along the chain (`ExprVisitor.visit_chain`)."""
    below: list[Any] = []
    current = first(node)
    while current is not None:
        below.append(current)
        current = first(current)
    if len(below) <= SHORT_CHAIN:
        return []
    below.reverse()
    return below


def children(node: Any) -> list[Any]:
    """The direct sub-nodes of a node (AST nodes inside fields, tuples and tuples of pairs), in
    field order. (A list, not a generator: generic walks call this for every node.)"""
    found: list[Any] = []
    for value in vars(node).values():
        if isinstance(value, ast.Node):
            found.append(value)
        elif isinstance(value, tuple):
            _collect(value, found)
    return found


def walk(root: Any, below: Callable[[Any], list[Any]] = children) -> Iterator[Any]:
    """`root` and every node under it, in the order of a depth-first recursion over `below`
    (default: all children, in field order), parents before children — with an explicit stack,
    so a tree from a long flat chain, as deep as the chain is long, is walked too. For passes
    that look at every node (`binding.free_names`); `below` prunes (a call's arguments only)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(below(node)))


def tree_depth(root: Any) -> int:
    """The number of nodes on the longest path down from `root` (1 for a leaf), found without
    recursion."""
    deepest = 0
    stack = [(root, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children(node))
    return deepest


def nodes(value: Any) -> list[Any]:
    """The AST nodes a value holds: the value itself if it is a node, the nodes inside a tuple
    (nested tuples too), none for anything else (None, strings, numbers). For passes whose entry
    point accepts a field's value rather than a node."""
    if isinstance(value, ast.Node):
        return [value]
    found: list[Any] = []
    if isinstance(value, tuple):
        _collect(value, found)
    return found


def _collect(items: tuple, found: list[Any]) -> None:
    for item in items:
        if isinstance(item, ast.Node):
            found.append(item)
        elif isinstance(item, tuple):
            _collect(item, found)
