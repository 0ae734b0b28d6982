"""Canonical printer: AST → SkriptND text in the draft-spec spelling.

`parse(format_module(tree)) == tree` for every tree the parser produces (spans aside); the
hypothesis round-trip test in tests/test_printer.py checks this over the corpus. Parentheses are
inserted exactly where the precedence table of `syntax.parser` needs them.
"""

from __future__ import annotations

import math

from refinterp.syntax import ast
from refinterp.syntax.parser import BINARY_PRECEDENCE, FOLD_PRECEDENCE, UNARY_PRECEDENCE
from refinterp.syntax.visitor import ExprVisitor

INDENT = "    "
_POSTFIX = 9.0  # subscripts, members, primaries

# Level 0 holds select and coalescing (right-associative); substitution's value extends to the
# right as far as a level-1 expression does. _ABOVE_SELECT parenthesises level-0 forms.
_SELECT, _ABOVE_SELECT, _SUBSTITUTE = 0.0, 0.5, 0.75


def format_module(module: ast.Module) -> str:
    """The canonical text of a whole module."""
    out: list[str] = []
    for imp in module.imports:
        out.append(f"import {'.'.join(imp.module)};")
    for definition in module.definitions:
        if out:
            out.append("")
        out.extend(_definition(definition))
    return "\n".join(out) + "\n"


def format_expr(expr: ast.Expr) -> str:
    """The canonical text of one expression (an item: expansions allowed)."""
    return _item(expr)


def format_type(spec: ast.TypeSpec) -> str:
    """The canonical text of a declared type, e.g. `optional real[b, c, s..]` or `int..(d)`."""
    return _type(spec)


# ----------------------------------------------------------------------------- definitions


def _definition(definition: ast.OperatorDef) -> list[str]:
    keyword = "graph" if definition.is_graph else "operator"
    head = ("public " if definition.public else "") + f"{keyword} {definition.name} {{"
    lines = [head]
    for block in definition.blocks:
        lines.append(f"{INDENT}@{block.kind} {{")
        for entry in block.entries:
            for line in _entry(entry):
                lines.append(INDENT * 2 + line)
        lines.append(INDENT + "}")
    lines.append("}")
    return lines


def _entry(entry: ast.Entry) -> list[str]:
    if isinstance(entry, ast.DtypeDecl):
        default = f" = {entry.default}" if entry.default else ""
        return [f"{entry.name}: {entry.base}{default};"]
    if isinstance(entry, ast.ParamDecl):
        text = f"{entry.name}: {_type(entry.type)}"
        if entry.default is not None:
            text += " = " + _item(entry.default)
            text += "".join(", " + _bound(b) for b in entry.bounds)
        return [text + ";"]
    if isinstance(entry, ast.UsingDecl):
        return [f"{_lvalue(entry.target)} = {_item(entry.value)};"]
    if isinstance(entry, ast.Assertion):
        return [_assertion(entry)]
    if isinstance(entry, ast.Lowering):
        return _lowering(entry)
    if isinstance(entry, ast.Component):
        return _component(entry)
    if isinstance(entry, ast.Quantization):
        text = f"{'.'.join(entry.tensor)}: {'.'.join(entry.operator)}"
        text += _generics(entry.generics) + _attributes(entry.attributes)
        return [text + ";"]
    raise TypeError(f"not a block entry: {entry!r}")


def _assertion(entry: ast.Assertion) -> str:
    text = _expr(entry.cond)
    if entry.message is not None:
        text += ": " + _string(entry.message)
        for printed in entry.printed:
            text += ", "
            if printed.label is not None:
                label = quote_string(printed.label) if printed.quoted_label else printed.label
                text += label + ": "
            text += _item(printed.value)
    return text + ";"


def _lowering(entry: ast.Lowering) -> list[str]:
    head = "".join(f"unroll{_iter_count(u)} " for u in entry.unroll)
    parts = [f"{local.name} = {_expr(local.value)}" for local in entry.locals]
    parts.append(f"{_expr(entry.target, _POSTFIX)} {entry.op} {_expr(entry.value)}")
    text = head + ", ".join(parts)
    condition = f"| {_expr(entry.condition)}" if entry.condition is not None else ""
    if not entry.bounds:
        return [text + (" " + condition if condition else "") + ";"]
    tail = ", ".join(_bound(b) for b in entry.bounds) + (" " + condition if condition else "")
    return [text + ",", INDENT + tail + ";"]


def _bound(bound: ast.IndexBound) -> str:
    return f"{bound.name} < {_expr(bound.bound)}"


def _component(entry: ast.Component) -> list[str]:
    targets = ", ".join(_lvalue(t) for t in entry.targets)
    rhs = _rhs(entry.value, 0)
    return (f"{targets} = {rhs};").split("\n")


# ----------------------------------------------------------------------------- compose


def _rhs(rhs: ast.Rhs, depth: int) -> str:
    if isinstance(rhs, ast.Region):
        label = f"{rhs.label}: " if rhs.label else ""
        inner = INDENT * (depth + 1)
        lines = [label + "{"]
        for component in rhs.components:
            targets = ", ".join(_lvalue(t) for t in component.targets)
            lines.append(f"{inner}{targets} = {_rhs(component.value, depth + 1)};")
        lines.append(inner + "yield " + ", ".join(_item(y) for y in rhs.yields) + ";")
        lines.append(INDENT * depth + "}")
        return "\n".join(lines)
    if isinstance(rhs, ast.IfExpr):
        parts = []
        for index, (cond, then) in enumerate(rhs.branches):
            keyword = "if" if index == 0 else "elif"
            parts.append(f"{keyword} {_rhs(cond, depth)} then {_rhs(then, depth)}")
        parts.append(f"else {_rhs(rhs.otherwise, depth)}")
        return " ".join(parts)
    if isinstance(rhs, ast.LoopExpr):
        parts = []
        if rhs.carried:
            parts.append("with " + ", ".join(_carried(c) for c in rhs.carried))
        if rhs.scans:
            parts.append("for " + ", ".join(f"{s.name} : {_expr(s.pack)}" for s in rhs.scans))
        if rhs.pre_condition is not None:
            parts.append("while " + _rhs(rhs.pre_condition, depth))
        keyword = "unroll" if rhs.unroll else "do"
        if rhs.count is not None:
            keyword += _iter_count(rhs.count)
        parts.append(keyword + " " + _rhs(rhs.body, depth))
        if rhs.post_condition is not None:
            parts.append("while " + _rhs(rhs.post_condition, depth))
        return " ".join(parts)
    return _expr(rhs)


def _carried(carried: ast.Carried) -> str:
    typed = f": {_type(carried.type)}" if carried.type is not None else ""
    return f"{carried.name}{typed} = {_item(carried.init)}"


def _iter_count(count: ast.IterCount) -> str:
    index = f"{count.index} -> " if count.index is not None else ""
    value = _expr(count.count) if count.count is not None else ""
    return f"..({index}{value})".replace("-> )", "->)")


def _lvalue(target: ast.LValue) -> str:
    if isinstance(target, ast.LPlaceholder):
        return "~"
    if isinstance(target, ast.LList):
        return "[" + ", ".join(_lvalue(item) for item in target.items) + "]"
    if isinstance(target, ast.LZip):
        names = ", ".join(_lvalue(item) for item in target.items)
        return f"({names}){_pack(target.pack)}"
    typed = f": {_type(target.type)}" if target.type is not None else ""
    return f"{target.name}{typed}{_pack(target.pack)}"


# ----------------------------------------------------------------------------- types


def _type(spec: ast.TypeSpec) -> str:
    text = f"{spec.modifier} " if spec.modifier else ""
    text += "optional " if spec.optional else ""
    text += spec.name
    if spec.rank is not None:
        text += f"^({spec.rank})"
    if spec.shape is not None:
        text += "[" + ", ".join(_extent(e) for e in spec.shape) + "]"
    return text + _pack(spec.pack)


def _extent(extent: ast.Extent) -> str:
    text = ".." if extent.distinct else ""
    text += f"{extent.modifier} " if extent.modifier else ""
    text += _expr(extent.value)
    if extent.bound is not None:
        text += "|" + _expr(extent.bound)
    return _spaced(text, _pack(extent.pack))


def _pack(pack: ast.PackSpec | None) -> str:
    if pack is None:
        return ""
    if pack.length is None:
        return ".."
    modifier = f"{pack.modifier} " if pack.modifier else ""
    bound = f"|{_expr(pack.bound)}" if pack.bound is not None else ""
    return f"..({modifier}{_expr(pack.length)}{bound})"


def _spaced(text: str, suffix: str) -> str:
    """Join, keeping a space between a number and `..` as the draft spec requires, and between
    a fold's dots and `..` (`s * .. ..`, not `s * ....`)."""
    if suffix.startswith("..") and (text[-1:].isdigit() or text.endswith(".")):
        return text + " " + suffix
    return text + suffix


# ----------------------------------------------------------------------------- expressions


class _Precedence(ExprVisitor[float]):
    """The precedence level of an expression's outermost form (postfix level for the rest)."""

    def visit_Select(self, expr: ast.Select) -> float:
        return _SELECT

    def visit_Binary(self, expr: ast.Binary) -> float:
        return _SELECT if expr.op == "??" else BINARY_PRECEDENCE[expr.op]

    def visit_Fold(self, expr: ast.Fold) -> float:
        return FOLD_PRECEDENCE.get(expr.op) or BINARY_PRECEDENCE[expr.op]

    def visit_Substitute(self, expr: ast.Substitute) -> float:
        return _SUBSTITUTE

    def visit_Unary(self, expr: ast.Unary) -> float:
        return UNARY_PRECEDENCE

    def generic_visit(self, expr: ast.Expr) -> float:
        return _POSTFIX


_precedence = _Precedence().visit


def _item(expr: ast.Expr) -> str:
    """An expression in an item position, where an expansion `e..(n)` may stand."""
    if isinstance(expr, ast.Expand):
        count = f"({_expr(expr.count)})" if expr.count is not None else ""
        operand = _item_operand(expr.operand)
        if operand.endswith("."):  # `(x + ..)..`, never `x + .. ..`
            operand = f"({operand})"
        return _spaced(operand, ".." + count)
    return _expr(expr)


def _item_operand(expr: ast.Expr) -> str:
    if isinstance(expr, ast.Zip):
        return "(" + ", ".join(_expr(item) for item in expr.items) + ")"
    if isinstance(expr, ast.Bounded):
        return _bounded(expr)
    return _expr(expr)


def _expr(expr: ast.Expr, min_prec: float = 0.0) -> str:
    text = _expr_text(expr)
    # no level is below 0 (_SELECT): a context of level 0 never parenthesises
    return f"({text})" if min_prec > 0 and _precedence(expr) < min_prec else text


class _ExprPrinter(ExprVisitor[str]):
    """The text of an expression without parentheses around it (`_expr` adds them as the
    context's precedence needs). Ranges and slices print only as list items and indices."""

    complete = True

    def visit_Name(self, expr: ast.Name) -> str:
        return expr.name

    def visit_IntLiteral(self, expr: ast.IntLiteral) -> str:
        return str(expr.value)

    def visit_RealLiteral(self, expr: ast.RealLiteral) -> str:
        return repr(expr.value) if math.isfinite(expr.value) else "1e999"

    def visit_BoolLiteral(self, expr: ast.BoolLiteral) -> str:
        return "true" if expr.value else "false"

    def visit_Constant(self, expr: ast.Constant) -> str:
        return expr.name

    def visit_StringLiteral(self, expr: ast.StringLiteral) -> str:
        return _string(expr)

    def visit_Placeholder(self, expr: ast.Placeholder) -> str:
        return "~"

    def visit_ListExpr(self, expr: ast.ListExpr) -> str:
        return "[" + ", ".join(_list_item(item) for item in expr.items) + "]"

    def visit_Expand(self, expr: ast.Expand) -> str:
        return _item(expr)

    def visit_Zip(self, expr: ast.Zip) -> str:
        return _item_operand(expr)

    def visit_Bounded(self, expr: ast.Bounded) -> str:
        return _bounded(expr)

    def visit_Unary(self, expr: ast.Unary) -> str:
        return expr.op + _expr(expr.operand, UNARY_PRECEDENCE + 1)

    def visit_Binary(self, expr: ast.Binary) -> str:
        if expr.op == "??":
            return f"{_expr(expr.left, _ABOVE_SELECT)} ?? {_expr(expr.right)}"
        prec = _precedence(expr)
        right_min = prec + 1
        # `(a < b) > c`: never print `a < b > (c)`, which reads as a generic invocation.
        left_min = prec + 1 if prec == BINARY_PRECEDENCE["<"] else prec
        return f"{_expr(expr.left, left_min)} {expr.op} {_expr(expr.right, right_min)}"

    def visit_Select(self, expr: ast.Select) -> str:
        # A select in the then-branch is parenthesised: `c ? (d ? a) : b` needs it.
        then = _expr(expr.then, _ABOVE_SELECT)
        text = f"{_expr(expr.cond, _ABOVE_SELECT)} ? {then}"
        if expr.otherwise is not None:
            text += f" : {_expr(expr.otherwise)}"
        return text

    def visit_Fold(self, expr: ast.Fold) -> str:
        dots = "..." if expr.cumulative else ".."
        return f"{_expr(expr.operand, _precedence(expr))} {expr.op} {dots}"

    def visit_Subscript(self, expr: ast.Subscript) -> str:
        items = ", ".join(_index_item(item) for item in expr.items)
        comma = "," if expr.trailing_comma else ""
        return f"{_expr(expr.base, _POSTFIX)}[{items}{comma}]"

    def visit_Substitute(self, expr: ast.Substitute) -> str:
        return f"{_expr(expr.target, _POSTFIX)} <- {_expr(expr.value, 1.0)}"

    def visit_Member(self, expr: ast.Member) -> str:
        return f"{_expr(expr.base, _POSTFIX)}.{expr.name}"

    def visit_Builtin(self, expr: ast.Builtin) -> str:
        return f"`{expr.name}`(" + ", ".join(_expr(a) for a in expr.args) + ")"

    def visit_Call(self, expr: ast.Call) -> str:
        label = f"{expr.label}: " if expr.label else ""
        args = ", ".join(_item(a) for a in expr.args)
        return (f"{label}{'.'.join(expr.callee)}{_generics(expr.generics)}"
                f"{_attributes(expr.attributes)}({args})")

    def not_an_expression(self, expr: ast.Node) -> str:
        raise TypeError(f"not an expression: {expr!r}")

    visit_Range = visit_Slice = generic_visit = not_an_expression


_expr_text = _ExprPrinter().visit


def _list_item(item: ast.ListItem) -> str:
    if isinstance(item, ast.Range):
        step = f":{_expr(item.step, _ABOVE_SELECT)}" if item.step is not None else ""
        return f"{_expr(item.start, _ABOVE_SELECT)}:{_expr(item.stop, _ABOVE_SELECT)}{step}"
    return _item(item)


def _index_item(item: ast.IndexItem) -> str:
    if isinstance(item, ast.Slice):
        start = _expr(item.start, _ABOVE_SELECT) if item.start is not None else ""
        stop = _expr(item.stop, _ABOVE_SELECT) if item.stop is not None else ""
        step = f":{_expr(item.step, _ABOVE_SELECT)}" if item.step is not None else ""
        return f"{start}:{stop}{step}"
    return _item(item)


def _bounded(expr: ast.Bounded) -> str:
    text = _expr(expr.index)
    if expr.lower is not None and expr.upper is not None:
        text += f" <> {_expr(expr.lower, _ABOVE_SELECT)} : {_expr(expr.upper)}"
    return f"|{text}|"


def _generics(generics: tuple[ast.TypeArg, ...]) -> str:
    return "<" + ", ".join(g.name for g in generics) + ">" if generics else ""


def _attributes(attributes: tuple[ast.AttributeValue, ...] | None) -> str:
    if attributes is None:
        return ""
    return "{" + ", ".join(f"{a.name}={_item(a.value)}" for a in attributes) + "}"


_ESCAPE = {"\\": "\\\\", '"': '\\"', "{": "\\{", "}": "\\}", "\n": "\\n", "\t": "\\t"}


def quote_string(text: str) -> str:
    """A double-quoted SkriptND string literal whose value is `text` (escapes as needed)."""
    return '"' + "".join(_ESCAPE.get(char, char) for char in text) + '"'


def _string(literal: ast.StringLiteral) -> str:
    out = []
    for part in literal.parts:
        if isinstance(part, str):
            out.append(quote_string(part)[1:-1])
        else:
            out.append("{" + _item(part) + "}")
    return '"' + "".join(out) + '"'
