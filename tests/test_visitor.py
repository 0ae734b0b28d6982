"""The expression visitor base (refinterp/syntax/visitor.py): dispatch, and the guarantee that a
pass claiming to handle every expression class (`complete = True`) has a method for each."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import refinterp
from refinterp.syntax import ast
from refinterp.syntax.visitor import EXPRESSION_CLASSES, ExprVisitor, UnhandledNode, children


def all_visitors() -> list[type]:
    for info in pkgutil.walk_packages(refinterp.__path__, "refinterp."):
        if info.name != "refinterp.__main__":
            importlib.import_module(info.name)
    found, pending = [], list(ExprVisitor.__subclasses__())
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def test_expression_classes_are_every_expression_node() -> None:
    assert ast.Name in EXPRESSION_CLASSES and ast.Call in EXPRESSION_CLASSES
    assert ast.Range in EXPRESSION_CLASSES and ast.Slice in EXPRESSION_CLASSES
    assert ast.Region not in EXPRESSION_CLASSES  # a right-hand side, not an expression


@pytest.mark.parametrize("visitor", [v for v in all_visitors() if v.complete],
                         ids=lambda v: f"{v.__module__}.{v.__qualname__}")
def test_a_complete_pass_handles_every_expression_class(visitor: type) -> None:
    assert visitor.unhandled() == []


def test_dispatch_generic_visit_and_unhandled() -> None:
    class Names(ExprVisitor[set]):
        def visit_Name(self, node):
            return {node.name}

        def generic_visit(self, node):
            return set().union(*(self.visit(child) for child in children(node)))

    tree = ast.Binary("+", ast.Name("a"), ast.Call(("f",), (ast.Name("b"), ast.IntLiteral(1))))
    assert Names().visit(tree) == {"a", "b"}

    class Strict(ExprVisitor[int]):
        complete = True

        def visit_Name(self, node):
            return 1

    assert Strict().visit(ast.Name("x")) == 1
    with pytest.raises(UnhandledNode):
        Strict().visit(ast.IntLiteral(1))
    assert "IntLiteral" in Strict.unhandled()
