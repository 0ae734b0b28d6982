"""Parser: every construct of the grammar (spec §2.16 and the prose of §2.2–2.15), both dialects."""

from __future__ import annotations

import pytest

from refinterp.syntax import ast
from refinterp.syntax.ast import (
    Binary, BoolLiteral, Bounded, Builtin, Call, Constant, Expand, Fold, IntLiteral, ListExpr,
    Member, Name, Placeholder, Range, RealLiteral, Select, Slice, StringLiteral, Subscript,
    Substitute, Unary, Zip,
)

from testsupport.parsing import entries, error_of, expr, parse_text, wrap

a, b, c, x = Name("a"), Name("b"), Name("c"), Name("x")


# ----------------------------------------------------------------------------- top level

def test_imports_with_and_without_semicolon_and_lists() -> None:
    module = parse_text("import nn\nimport layout;\nimport a, b.c;\n")
    assert [i.module for i in module.imports] == [("nn",), ("layout",), ("a",), ("b", "c")]


def test_operator_graph_public() -> None:
    module = parse_text("operator f { }\npublic operator g { }\ngraph G { }\npublic graph H { }")
    assert [(d.name, d.is_graph, d.public) for d in module.definitions] == [
        ("f", False, False), ("g", False, True), ("G", True, False), ("H", True, True)]


def test_all_twelve_blocks() -> None:
    body = "".join(f"    @{name} {{ }}\n" for name in ast.BLOCK_NAMES)
    module = parse_text(f"operator f {{\n{body}}}\n")
    assert tuple(b.kind for b in module.definitions[0].blocks) == ast.BLOCK_NAMES


# ----------------------------------------------------------------------------- literals (§2.4)

def test_literals() -> None:
    assert expr("123") == IntLiteral(123)
    assert expr("1e-5") == RealLiteral(1e-5)
    assert expr("true") == BoolLiteral(True) and expr("false") == BoolLiteral(False)
    assert expr("inf") == Constant("inf") and expr("pi") == Constant("pi")


def test_adjacent_strings_join_and_format_insertions() -> None:
    # §2.4: adjacent literals are one string; "{a + 2}" substitutes an expression; \{ escapes.
    literal = expr('"a = {a + 2}" \' and \\{b\\}\'')
    assert literal == StringLiteral(("a = ", Binary("+", a, IntLiteral(2)), " and {b}"))


def test_format_expression_spans_are_exact() -> None:
    literal = expr('"value {abc}"')
    inner = literal.parts[1]
    assert (inner.span.line, inner.span.col, inner.span.end_col) == (1, 9, 12)


# ----------------------------------------------------------------------------- expressions

def test_lists_expansion_repetition_ranges_zip() -> None:
    assert expr("[a, b.., c]") == ListExpr((a, Expand(b), c))
    assert expr("[1 ..(5)]") == ListExpr((Expand(IntLiteral(1), IntLiteral(5)),))
    assert expr("[0, 2:n, b..]") == ListExpr((IntLiteral(0), Range(IntLiteral(2), Name("n")),
                                              Expand(b)))
    assert expr("[b:e:-1]") == ListExpr((Range(b, Name("e"), Unary("-", IntLiteral(1))),))
    assert expr("[(a,b)..]") == ListExpr((Expand(Zip((a, b))),))
    assert expr("[]") == ListExpr(())


def test_indexing_slices() -> None:
    assert expr("a[i]") == Subscript(a, (Name("i"),))
    assert expr("a[::-1]") == Subscript(a, (Slice(None, None, Unary("-", IntLiteral(1))),))
    assert expr("c[0::2]") == Subscript(c, (Slice(IntLiteral(0), None, IntLiteral(2)),))
    assert expr("t[:rank]") == Subscript(Name("t"), (Slice(None, Name("rank")),))
    assert expr("t[rank:]") == Subscript(Name("t"), (Slice(Name("rank"), None),))


def test_substitution_and_expansion_of_the_whole_item() -> None:
    # §4.1 writes `input[zeros[kept_axes] <- si..]`: the substitution result is expanded.
    assert expr("x[z[k] <- s..]") == Subscript(
        x, (Expand(Substitute(Subscript(Name("z"), (Name("k"),)), Name("s"))),))
    assert expr("x[s is 1 ? 0 : si..]") == Subscript(x, (Expand(Select(
        Binary("is", Name("s"), IntLiteral(1)), IntLiteral(0), Name("si"))),))


def test_precedence_khronos_table() -> None:
    # low → high: => ; && || ^ ; comparisons is in ; <? >? << >> ; + - ; * / % \ ; unary ; **
    assert expr("a => b && c") == Binary("=>", a, Binary("&&", b, c))
    assert expr("a && b < c") == Binary("&&", a, Binary("<", b, c))
    assert expr("a < b << c") == Binary("<", a, Binary("<<", b, c))
    assert expr("a << b + c") == Binary("<<", a, Binary("+", b, c))
    assert expr("a + b * c") == Binary("+", a, Binary("*", b, c))
    assert expr("-a ** b") == Unary("-", Binary("**", a, b))
    assert expr("-a * b") == Binary("*", Unary("-", a), b)
    assert expr("a - b - c") == Binary("-", Binary("-", a, b), c)
    assert expr("a ** b ** c") == Binary("**", Binary("**", a, b), c)


def test_min_max_spellings_are_one_operator() -> None:
    assert expr("a <? b") == expr("a << b") == Binary("<<", a, b)
    assert expr("a >? b") == expr("a >> b") == Binary(">>", a, b)


def test_select_coalesce_null_test() -> None:
    assert expr("c ? a : b") == Select(c, a, b)
    assert expr("c ? a") == Select(c, a, None)
    assert expr("?x ? x : 0") == Select(Unary("?", x), x, IntLiteral(0))
    assert expr("?x && c ? x : 0") == Select(Binary("&&", Unary("?", x), c), x, IntLiteral(0))
    assert expr("2 * p ?? q + 1") == Binary("??", Binary("*", IntLiteral(2), Name("p")),
                                            Binary("+", Name("q"), IntLiteral(1)))
    # Level 0 is right-associative (the Khronos nn.conv writes
    # `padding[:d] ?? padding_align == 'UPPER' ? paddings / 2 : paddings \ 2`).
    assert expr("a ?? b ? c : x") == Binary("??", a, Select(b, c, x))
    assert expr("c ? a : b ?? x") == Select(c, a, Binary("??", b, x))
    assert expr("c ? a : b ? x : a") == Select(c, a, Select(b, x, a))
    assert expr("a ?? b ?? c") == Binary("??", a, Binary("??", b, c))
    assert expr("(c ? a : b) ?? x") == Binary("??", Select(c, a, b), x)


def test_is_in_and_keywords_as_names() -> None:
    assert expr("s is -1") == Binary("is", Name("s"), Unary("-", IntLiteral(1)))
    assert expr("x in a") == Binary("in", x, a)
    # The spec's convolution names an extent `is` (§2.1): a name wherever an operand stands.
    assert expr("(is + p) \\ is") == Binary("\\", Binary("+", Name("is"), Name("p")), Name("is"))


def test_folds_and_cumulative_folds() -> None:
    for op in ["+", "*", "&&", "||", "<", "<=", ">", ">=", "==", "!=", "<<", ">>"]:
        assert expr(f"x {op} ..") == Fold(op, x)
    assert expr("x := ..") == Fold(":=", x)
    # `:=` folds at the comparison level (Khronos): `a && b := ..` folds b only.
    assert expr("a && b := ..") == Binary("&&", a, Fold(":=", b))
    assert expr("a + b := ..") == Fold(":=", Binary("+", a, b))
    for op in ["+", "*", "&&", "||", "<<", ">>"]:
        assert expr(f"x {op} ...") == Fold(op, x, True)
    assert expr("x <? ..") == Fold("<<", x)
    # A fold with an initial value (§2.4): `x + .. + 42`, `b * .. * c`.
    assert expr("x + .. + 42") == Binary("+", Fold("+", x), IntLiteral(42))
    assert expr("a + x * ..") == Binary("+", a, Fold("*", x))
    assert expr("(i * s) + ..") == Fold("+", Binary("*", Name("i"), Name("s")))


def test_no_cumulative_comparison_fold() -> None:
    assert "cumulative" in error_of(wrap("using", "y = x < ...;")).message


def test_casts_builtins_members() -> None:
    assert expr("int(inf)") == Call(("int",), (Constant("inf"),))
    assert expr("T()") == Call(("T",), ())
    assert expr("`sqrt`(x)") == Builtin("sqrt", (x,))
    assert expr("sqrt(x)") == Call(("sqrt",), (x,))
    assert expr("x.shape[0]") == Subscript(Member(x, "shape"), (IntLiteral(0),))
    assert expr("xs.size") == Member(Name("xs"), "size")


def test_tensor_access_forms() -> None:
    assert expr("x[i,]") == Subscript(x, (Name("i"),), trailing_comma=True)
    assert expr("idx[]") == Subscript(Name("idx"), ())
    assert expr("xs[k][i..]") == Subscript(Subscript(Name("xs"), (Name("k"),)),
                                           (Expand(Name("i")),))
    assert expr("x[i.., :]") == Subscript(x, (Expand(Name("i")), Slice()))
    assert expr("x[|i + j|]") == Subscript(x, (Bounded(Binary("+", Name("i"), Name("j"))),))
    assert expr("x[|i - n <> 0 : s - 1|]") == Subscript(x, (Bounded(
        Binary("-", Name("i"), Name("n")), IntLiteral(0), Binary("-", Name("s"),
                                                                  IntLiteral(1))),))
    assert expr("x[|i|..]") == Subscript(x, (Expand(Bounded(Name("i"))),))


def test_invocations() -> None:
    call = expr("nn.conv<real>{padding=0, stride=4}(input, ~, [y, z])")
    assert call == Call(("nn", "conv"), (Name("input"), Placeholder(), ListExpr((Name("y"),
                        Name("z")))), (ast.TypeArg("real"),),
                        (ast.AttributeValue("padding", IntLiteral(0)),
                         ast.AttributeValue("stride", IntLiteral(4))))
    assert expr("op{}(x)").attributes == ()
    assert expr("op(x)").attributes is None


def test_generic_lookahead_keeps_comparisons() -> None:
    assert expr("a < b") == Binary("<", a, b)
    assert expr("a < b > c") == Binary(">", Binary("<", a, b), c)


def test_mixing_and_or_warns() -> None:
    from refinterp.core.source import SourceFile
    from refinterp.syntax import parse_module
    warned = parse_module(SourceFile("t", wrap("using", "y = a && b || c;"))).warnings
    assert len(warned) == 1 and warned[0].severity == "warning"
    clean = parse_module(SourceFile("t", wrap("using", "y = (a && b) || c;"))).warnings
    assert clean == ()


# ----------------------------------------------------------------------------- declarations

def test_types_and_shapes() -> None:
    decl, = entries("input", "xs: optional real[z, s..(l), ..t]..(k);")
    assert decl.type.optional and decl.type.pack.length == Name("k")
    z, s, t = decl.type.shape
    assert z == ast.Extent(Name("z"))
    assert s == ast.Extent(Name("s"), pack=ast.PackSpec(Name("l")))
    assert t == ast.Extent(Name("t"), distinct=True)


def test_rank_capture_bounds_placeholders_modifiers() -> None:
    x_, y_, z_ = entries("input", "x: real^(r)[s..(d), z..];\n"
                                  "y: real[s|10, ~|k, ~|10 ..(3)];\n"
                                  "sizes: dynamic int..(dynamic n);")
    assert x_.type.rank == "r"
    assert y_.type.shape == (ast.Extent(Name("s"), bound=IntLiteral(10)),
                             ast.Extent(Placeholder(), bound=Name("k")),
                             ast.Extent(Placeholder(), bound=IntLiteral(10),
                                        pack=ast.PackSpec(IntLiteral(3))))
    assert z_.type.modifier == "dynamic" and z_.type.pack.modifier == "dynamic"
    w, = entries("input", "w: real[b, static c]..(static n);")
    assert w.type.shape[1].modifier == "static" and w.type.pack.modifier == "static"


def test_attrib_defaults_and_dtype() -> None:
    d, = entries("dtype", "S: type = real;")
    assert d == ast.DtypeDecl("S", "type", "real")
    r, p = entries("attrib", "r: int;\na: int..(r) = 0;")
    assert p.default == IntLiteral(0) and p.type.pack == ast.PackSpec(Name("r"))


def test_constant_per_element_initialiser() -> None:
    i_, = entries("constant", "I: real[n,n] = i == j ? 1.0 : 0.0, i < n, j < n;")
    assert i_.default == Select(Binary("==", Name("i"), Name("j")), RealLiteral(1.0),
                                RealLiteral(0.0))
    assert [bd.name for bd in i_.bounds] == ["i", "j"]


def test_using_targets() -> None:
    e1, e2, e3 = entries("using", "c..(n) = x;\n[a, b..] = c;\n[(e, f)..] = c;")
    assert e1.target == ast.LName("c", pack=ast.PackSpec(Name("n")))
    assert e2.target == ast.LList((ast.LName("a"), ast.LName("b", pack=ast.PackSpec())))
    assert e3.target == ast.LList((ast.LZip((ast.LName("e"), ast.LName("f")),
                                            ast.PackSpec()),))


def test_assertions_messages_labels() -> None:
    e1, e2 = entries("assert", "a > 0: \"a must be positive\", a;\n"
                               "b: \"msg {b}\" \" more\", lbl: x + 1, 'in-shape': [s..];")
    assert e1.printed == (ast.PrintedValue(a),)
    assert e2.message == StringLiteral(("msg ", b, " more"))
    assert e2.printed[0] == ast.PrintedValue(Binary("+", x, IntLiteral(1)), "lbl")
    assert e2.printed[1] == ast.PrintedValue(ListExpr((Expand(Name("s")),)), "in-shape", True)


# ----------------------------------------------------------------------------- @lower

def test_lowering_formula_parts() -> None:
    low, = entries("lower", "C[i,j] += A[i,l] * B[l,j], i < m, j < n, l < k;")
    assert low.op == "+=" and [bd.name for bd in low.bounds] == ["i", "j", "l"]
    cond, = entries("lower", "idx[] := [i,j], i < m, j < n | x[i,j] > x[idx[]..];")
    assert cond.op == ":=" and isinstance(cond.condition, Binary)


@pytest.mark.parametrize("op", ["=", "+=", "*=", "&=", "|=", "<=", ">=", ":="])
def test_lowering_operators(op: str) -> None:
    assert entries("lower", f"y[i] {op} x[i], i < n;")[0].op == op


def test_lowering_minmax_spellings_and_locals_both_dialects() -> None:
    assert entries("lower", "y[i] <?= x[i], i < n;")[0].op == "<="
    assert entries("lower", "y[i] >?= x[i], i < n;")[0].op == ">="
    spec, = entries("lower", "z = x[i] * x[i], y[i] = z + z, i < s;")
    khronos, = entries("lower", "with z = x[i] * x[i]: y[i] = z + z, i < s;")
    assert spec == khronos and spec.locals[0].name == "z"


def test_lowering_unroll() -> None:
    low, = entries("lower", "unroll..(k -> n) ys[k][i] = xs[k][i], i < m;")
    assert low.unroll == (ast.IterCount("k", Name("n")),)


def test_lowering_target_must_be_access() -> None:
    assert "tensor access" in error_of(wrap("lower", "y + 1 = x[i], i < n;")).message


# ----------------------------------------------------------------------------- @compose

def test_components_targets() -> None:
    comp, = entries("compose", "a..(n), [b, c..(k)], ~, d: real[n] = op(x, [y, z]);")
    t = comp.targets
    assert t[0] == ast.LName("a", pack=ast.PackSpec(Name("n")))
    assert t[1] == ast.LList((ast.LName("b"), ast.LName("c", pack=ast.PackSpec(Name("k")))))
    assert t[2] == ast.LPlaceholder()
    assert t[3].type.shape == (ast.Extent(Name("n")),)


def test_labels_regions_branches() -> None:
    c1, c2 = entries("compose", "y = op1: op{a=42}(x);\n"
                                "z = if ?x && c then lbl: { r = op(x); yield r; } "
                                "elif d then op2(x) else x;")
    assert c1.value.label == "op1"
    branch = c2.value
    assert isinstance(branch, ast.IfExpr) and len(branch.branches) == 2
    region = branch.branches[0][1]
    assert isinstance(region, ast.Region) and region.label == "lbl"
    assert region.yields == (Name("r"),)
    assert branch.otherwise == x


@pytest.mark.parametrize("text, check", [
    ("ys = for x : xs do add(x, z);", lambda l: l.scans == (ast.Scan("x", Name("xs")),)),
    ("y = with sum: real[n] = 0.0 for x : xs do add(sum, x);",
     lambda l: l.carried[0].type.shape == (ast.Extent(Name("n")),)),
    ("sum = with s = 0 do..(i -> k) add(s, i);",
     lambda l: l.count == ast.IterCount("i", Name("k"))),
    ("B = with X = I do..(p) matmul(X, A);", lambda l: l.count == ast.IterCount(None, Name("p"))),
    ("z = with x = x0 do op(x, y) while cond(x);",
     lambda l: isinstance(l.post_condition, Call) and l.pre_condition is None),
    ("z = with x = x0 while cond(x) do op(x, y);", lambda l: isinstance(l.pre_condition, Call)),
    ("z, ~ = with x = x0, c = true while c do op(x, y);", lambda l: len(l.carried) == 2),
    ("y = with s: real[n] = 0.0 for x : xs unroll add(s, x);", lambda l: l.unroll),
    ("y = do..(i ->) { z = f(i); yield z; };", lambda l: l.count == ast.IterCount("i", None)),
])
def test_loops(text: str, check) -> None:
    comp, = entries("compose", text)
    assert isinstance(comp.value, ast.LoopExpr) and check(comp.value)


def test_quantize_entries() -> None:
    q, = entries("quantize", "op1.a: quant.linear<real>{bits=8};")
    assert q == ast.Quantization(("op1", "a"), ("quant", "linear"), (ast.TypeArg("real"),),
                                 (ast.AttributeValue("bits", IntLiteral(8)),))


def test_attribute_colon_is_rejected_with_a_hint() -> None:
    assert "write 'a=...'" in error_of(wrap("compose", "y = op{a: 42}(x);")).message


def test_duplicate_block_is_an_error() -> None:
    diag = error_of("operator f {\n  @input { }\n  @input { }\n}\n")
    assert "duplicate @input" in diag.message and diag.span.line == 3
