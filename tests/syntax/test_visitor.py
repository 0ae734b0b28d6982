"""The expression visitor base (refinterp/syntax/visitor.py): dispatch, and the guarantee that a
pass claiming to handle every expression class (`complete = True`) has a method for each."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import refinterp
from refinterp.core.diagnostics import EvalDiagnostic, TypeDiagnostic
from refinterp.language.expr import Environment, Evaluator
from refinterp.language.types import Checker, TypeScope, check_expr
from refinterp.lower.compiled.kernel import Generator
from refinterp.lower.reference import FormulaClosures
from refinterp.lower.vector.evaluation import BoxEvaluator
from refinterp.syntax import ast, printer
from refinterp.syntax.visitor import EXPRESSION_CLASSES, ExprVisitor, UnhandledNode, children

# The passes that must handle every expression class. Listed by hand so that the parametrized
# completeness test below cannot silently run over nothing (a pass losing `complete = True`, or
# no longer being found, fails here).
MUST_BE_COMPLETE: list[type] = [
    printer._ExprPrinter,  # format_expr
    Checker,               # check_expr
    Evaluator,             # evaluate
    FormulaClosures,       # the reference's closures
    Generator,             # the compiled engine's generated code
    BoxEvaluator,          # the vector engine
]


# Third-party packages that only optional extras install ([onnx], [torch], [jax], [dask]): a
# module of refinterp that needs one of them is left out when it is absent, never an error.
OPTIONAL_DEPENDENCIES = {"jax", "jaxlib", "torch", "onnx", "onnxruntime", "dask", "distributed",
                         "ml_dtypes"}


def all_visitors() -> list[type]:
    for info in pkgutil.walk_packages(refinterp.__path__, "refinterp."):
        if info.name == "refinterp.__main__":
            continue
        try:
            importlib.import_module(info.name)
        except ModuleNotFoundError as missing:
            if (missing.name or "").split(".")[0] not in OPTIONAL_DEPENDENCIES:
                raise
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


@pytest.mark.parametrize("visitor", MUST_BE_COMPLETE, ids=lambda v: v.__qualname__)
def test_the_passes_over_every_expression_are_marked_complete(visitor: type) -> None:
    assert issubclass(visitor, ExprVisitor)
    assert visitor.complete is True
    assert visitor in all_visitors()  # so the completeness test above runs over it


def test_complete_passes_reject_ranges_and_slices_outside_lists_and_indices() -> None:
    for node in (ast.Range(ast.IntLiteral(0), ast.IntLiteral(2)), ast.Slice()):
        with pytest.raises(TypeError, match="not an expression"):
            printer.format_expr(node)
        with pytest.raises(TypeDiagnostic, match=f"unexpected {type(node).__name__}"):
            check_expr(node, TypeScope())
        with pytest.raises(EvalDiagnostic, match=f"cannot evaluate {type(node).__name__}"):
            Evaluator(Environment(), {}).eval(node)


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
