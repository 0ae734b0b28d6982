"""Spec §2.3 Type system: static checks run before evaluation, with spans."""

from __future__ import annotations

import pytest

from refinterp.core.source import SourceFile
from refinterp.syntax import parse_expression
from refinterp.language.types import Type, TypeDiagnostic, TypeScope, check_expr

from testsupport.exprtools import ev, ev_error, optional


def type_of(text: str, **symbols: Type) -> Type:
    expr = parse_expression(SourceFile("<t>", text))
    return check_expr(expr, TypeScope(dict(symbols)))[id(expr)]


@pytest.mark.parametrize("text, message", [
    # §2.4 "arithmetic operators +, -, *, / for arguments of type int and real (same type ...)"
    ("1 + true", "'+' needs operands of one type; got bool and int"),
    ("1 + 2.0", "got int and real"),
    # §2.4 Lists: "Items ... must be of the same type"
    ("[1, 2.0]", "a list needs operands of one type; got int and real"),
    # §2.4 Folding: "+ and * for argument types int.. and real.."; "&& and || for bool"
    ("[true, false] + ..", "needs an int or real pack"),
    ("[1, 2] && ..", "needs a bool pack"),
    # §2.4 Lists: "The length specifier, must either be an int expression or ... a bool"
    ("[1 ..(0.5)]", "a repetition count must be an int or a bool"),
    ("!1", "the operand of '!' must be bool"),
    ("1 && true", "needs bool operands"),
    ("'a' + 'b'", "needs int or real operands"),
    ("1 ?? 2", "must be optional"),
    ("x[1.5]", "an index must be"),
    ("str(1)", "strings cannot be cast"),
    ("`sqrt`(4)", "needs a real argument"),
    ("y", "undefined name 'y'"),
    ("f(1)", "neither a type"),
    ("nn.conv(x)", "operator invocation"),
    ("[x]", "must be expanded"),
    ("1 in 2", "must be a pack"),
    ("x.rank", "tensor"),
])
def test_type_errors_are_diagnostics_with_spans(text: str, message: str) -> None:
    diag = ev_error(text, x=(1, 2))
    assert isinstance(diag, TypeDiagnostic)
    assert message in diag.message
    assert diag.span.line == 1 and diag.span.col >= 1


def test_type_error_precedes_evaluation() -> None:
    # `1 / 0` would fail at run time; the type error of the other operand is found first.
    assert isinstance(ev_error("1 / 0 + true"), TypeDiagnostic)


def test_type_error_span_points_at_the_subexpression() -> None:
    diag = ev_error("[1, 2] + ([3] && ..)")
    assert (diag.span.col, diag.span.end_col) == (11, 20)


def test_inferred_types() -> None:
    assert type_of("[1, 2]") == Type("int", packed=True)
    assert type_of("[]") == Type("any", packed=True)
    assert type_of("x ?? 0", x=optional("int")) == Type("int")
    assert type_of("x + 1", x=optional("int")) == optional("int")
    assert type_of("?x", x=optional("int", True)) == Type("bool")
    assert type_of("c ? 1", c=Type("bool")) == optional("int")
    assert type_of("xs << ..", xs=Type("real", packed=True)) == optional("real")
    assert type_of("xs << .. << 1.0", xs=Type("real", packed=True)) == Type("real")
    assert type_of("xs := ..", xs=Type("int", packed=True)) == optional("int")
    assert type_of("xs + ...", xs=Type("int", packed=True)) == Type("int", packed=True)
    assert type_of("xs < ..", xs=Type("int", packed=True)) == Type("bool")
    assert type_of("t.shape", t=Type("real", tensor=True)) == Type("int", packed=True)
    assert type_of("ts.size", ts=Type("real", packed=True, tensor=True)) == Type("int")


def test_promotion_under_null_test() -> None:
    # §2.4 Null testing: in `?x ? x : 0` the x on the true branch is non-optional, so
    # `x ?? 1` there is a type error (its left operand is no longer optional).
    assert type_of("?x ? x : 0", x=optional("int")) == Type("int")
    assert type_of("?x && c ? x : 0", x=optional("int"), c=Type("bool")) == Type("int")
    with pytest.raises(TypeDiagnostic):
        type_of("?x ? x ?? 1 : 0", x=optional("int"))


def test_generic_types_restrict_operations() -> None:
    # §2.13: "a parameter of type num can only participate in expressions valid for numeric
    # types"; arith additionally allows bool but not arithmetic.
    expr = parse_expression(SourceFile("<t>", "a + a"))
    check_expr(expr, TypeScope({"a": Type("T")}, {"T": "num"}))
    with pytest.raises(TypeDiagnostic):
        check_expr(expr, TypeScope({"a": Type("T")}, {"T": "arith"}))
    cast = parse_expression(SourceFile("<t>", "T(1)"))
    assert check_expr(cast, TypeScope({}, {"T": "num"}))[id(cast)] == Type("T")


def test_values_have_the_types_of_section_2_3() -> None:
    assert ev("int()") == 0 and ev("real()") == 0.0 and ev("bool()") is False
    assert ev("str()") == ""


def _decl_types(text: str):
    from refinterp.syntax import parse_module

    module = parse_module(SourceFile("<t>", text)).module
    return {b.kind: b.entries for b in module.definitions[0].blocks}


def test_declared_types_keep_symbolic_lengths_and_shapes() -> None:
    # §2.3: "int..(k) is a k-long pack of ints"; "optional int[m,n]..(k) is a possibly null,
    # k-long pack of m-by-n tensors of ints".
    from refinterp.syntax import ast
    from refinterp.language.types import type_from_spec

    blocks = _decl_types("operator f { @input { x: optional int[m,n]..(k); a: T; } "
                         "@dtype { T: num = real; } }")
    x_decl, a_decl = blocks["input"]
    t = type_from_spec(x_decl.type, {})
    assert (t.base, t.packed, t.optional, t.tensor) == ("int", True, True, True)
    assert t.length == ast.Name("k") and [e.value for e in t.shape] == [ast.Name("m"),
                                                                        ast.Name("n")]
    assert type_from_spec(a_decl.type, {"T": "num"}) == Type("T")
    with pytest.raises(TypeDiagnostic, match="unknown type 'T'"):
        type_from_spec(a_decl.type, {})


def test_dtype_declarations_are_checked() -> None:
    # §2.13: a generic is bounded by type, num or arith; its default must satisfy the bound.
    from refinterp.language.types import dtype_scope

    ok = _decl_types("operator f { @dtype { T: num = real; S: type; B: arith = bool; } }")
    assert dtype_scope(ok["dtype"]) == {"T": "num", "S": "type", "B": "arith"}
    bad_bound = _decl_types("operator f { @dtype { T: int; } }")
    with pytest.raises(TypeDiagnostic, match="bounded by type, arith or num"):
        dtype_scope(bad_bound["dtype"])
    bad_default = _decl_types("operator f { @dtype { T: num = bool; } }")
    with pytest.raises(TypeDiagnostic, match="not a num type"):
        dtype_scope(bad_default["dtype"])


def test_abstract_types_only_bound_generics() -> None:
    from refinterp.language.types import type_from_spec

    decl, = _decl_types("operator f { @attrib { a: num; } }")["attrib"]
    with pytest.raises(TypeDiagnostic, match="abstract type 'num'"):
        type_from_spec(decl.type, {})
