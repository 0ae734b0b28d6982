"""Canonical printer: AST → SkriptND text (`refinterp fmt`).

`parse(format_module(tree)) == tree` for every tree the parser produces (spans aside); the
hypothesis round-trip tests in tests/syntax/test_printer.py and
tests/syntax/test_fmt_comments.py check this.
Parentheses are inserted exactly where the precedence table of `syntax.parser` needs them (and
where a reading as generic arguments or a mixed-logic warning must be avoided). Long flat chains
(`1 + 1 + … + 1`, `x[0][0]…`, `!!!x`, `a ?? b ?? …`) are printed with loops, not recursion.

A tree parsed from a file keeps that file's comments and its spelling of what the two dialects
spell differently (docs/grammar.md, "fmt"): the canonical text is laid out first, then its
tokens are aligned with the file's and the comments put back at the aligned places.
`format_module` checks its text before returning it (fmt's self-check: the same syntax tree
and the same comments when read back); `verify_canonical` runs that check for a file and a text.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, fields

from refinterp.core.diagnostics import Diagnostic, SyntaxDiagnostic
from refinterp.core.source import SourceFile, Span
from refinterp.syntax import ast
from refinterp.syntax.lexer import Token, tokenize
from refinterp.syntax.parser import (BINARY_PRECEDENCE, FOLD_PRECEDENCE, MINMAX_SPELLING,
                                     UNARY_PRECEDENCE, parse_module)
from refinterp.syntax.visitor import ExprVisitor

INDENT = "    "
_POSTFIX = 9.0  # subscripts, members, primaries

# Level 0 holds select and coalescing (right-associative); substitution's value extends to the
# right as far as a level-1 expression does. _ABOVE_SELECT parenthesises level-0 forms.
_SELECT, _ABOVE_SELECT, _SUBSTITUTE = 0.0, 0.5, 0.75


def format_module(module: ast.Module) -> str:
    """The canonical text of a whole module.

    A module parsed from a file (its span names the file) keeps the file's comments, each in
    its place in the canonical layout, and the file's dialect spellings (docs/grammar.md,
    "fmt"). The text is checked before it is returned: it must read back as `module` (spans
    aside) with the file's comments in their order. Raises SyntaxDiagnostic, rather than lose
    a comment, crash or return what it cannot read back: at a comment it cannot place, a
    definition nested too deeply to print, or where the text would read back differently.
    """
    original = _Original(module.span.source) if module.span.source is not None else None
    out: list[str] = []
    for imp in module.imports:
        out.append(f"import {'.'.join(imp.module)};")
    for definition in module.definitions:
        if out:
            out.append("")
        try:
            out.extend(_definition(definition, original))
        except RecursionError:
            raise SyntaxDiagnostic("nesting too deep to print", _head(definition.span)) from None
    text = "\n".join(out) + "\n"
    if original is not None:
        text = original.dress(text)
    _check(module, text, original)
    return text


def format_expr(expr: ast.Expr) -> str:
    """The canonical text of one expression (an item: expansions allowed)."""
    try:
        return _item(expr)
    except RecursionError:
        raise SyntaxDiagnostic("nesting too deep to print", _head(expr.span)) from None


def _head(span: Span) -> Span:
    """The first character of a span (a diagnostic for a whole definition points at its start)."""
    return Span(span.source, span.line, span.col, span.line, span.col + 1)


def format_type(spec: ast.TypeSpec) -> str:
    """The canonical text of a declared type, e.g. `optional real[b, c, s..]` or `int..(d)`."""
    return _type(spec)


# ----------------------------------------------------------------------------- definitions


def _definition(definition: ast.OperatorDef, original: _Original | None) -> list[str]:
    keyword = "graph" if definition.is_graph else "operator"
    head = ("public " if definition.public else "") + f"{keyword} {definition.name} {{"
    lines = [head]
    for block in definition.blocks:
        lines.append(f"{INDENT}@{block.kind} {{")
        for entry in block.entries:
            for line in _entry(entry, original):
                lines.append(INDENT * 2 + line)
        lines.append(INDENT + "}")
    lines.append("}")
    return lines


def _entry(entry: ast.Entry, original: _Original | None) -> list[str]:
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
        return _lowering(entry, original)
    if isinstance(entry, ast.Component):
        return _component(entry)
    if isinstance(entry, ast.Quantization):
        text = f"{'.'.join(entry.tensor)}: {'.'.join(entry.operator)}"
        text += _generics(entry.generics) + _attributes(entry.attributes)
        return [text + ";"]
    raise TypeError(f"not a block entry: {entry!r}")


def _assertion(entry: ast.Assertion) -> str:
    if entry.message is None:
        return _expr(entry.cond) + ";"
    text = _expr(entry.cond, _ABOVE_SELECT)  # `(c ? a): "…"`, else `:` would be its else
    text += ": " + _string(entry.message)
    for printed in entry.printed:
        text += ", "
        if printed.label is not None:
            label = quote_string(printed.label) if printed.quoted_label else printed.label
            text += label + ": "
        text += _item(printed.value)
    return text + ";"


def _lowering(entry: ast.Lowering, original: _Original | None) -> list[str]:
    head = "".join(f"unroll{_iter_count(u)} " for u in entry.unroll)
    parts = []
    for local in entry.locals:  # `z = e,` (spec) or, as the file wrote it, `with z = e:`
        opens, closes = original.khronos_local(local) if original else (False, False)
        value = _expr(local.value, _ABOVE_SELECT if closes else 0.0)  # `(c ? a):`
        text = f"{'with ' if opens else ''}{local.name} = {value}"
        parts.append(text + (":" if closes else ","))
    parts.append(f"{_expr(entry.target, _POSTFIX)} {entry.op} {_expr(entry.value)}")
    text = head + " ".join(parts)
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
        # `!!x`, `- -x`: a unary operand needs no parentheses (only `? ?x` a space, not `??`)
        prefix = ""
        operand: ast.Expr = expr
        while isinstance(operand, ast.Unary):
            prefix += (" " if prefix.endswith("?") and operand.op == "?" else "") + operand.op
            operand = operand.operand
        return prefix + _expr(operand, UNARY_PRECEDENCE + 1)

    def visit_Binary(self, expr: ast.Binary) -> str:
        return _level0_chain(expr) if expr.op == "??" else _left_chain(expr)

    def visit_Select(self, expr: ast.Select) -> str:
        return _level0_chain(expr)

    def visit_Fold(self, expr: ast.Fold) -> str:
        return _left_chain(expr)

    def visit_Subscript(self, expr: ast.Subscript) -> str:
        return _postfix_chain(expr)

    def visit_Substitute(self, expr: ast.Substitute) -> str:
        # `a[i] <- b[j] <- v`: a substitution as the value needs no parentheses
        text = ""
        value: ast.Expr = expr
        while isinstance(value, ast.Substitute):
            text += f"{_expr(value.target, _POSTFIX)} <- "
            value = value.value
        return text + _expr(value, 1.0)

    def visit_Member(self, expr: ast.Member) -> str:
        return _postfix_chain(expr)

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


def _left_chain(expr: ast.Binary | ast.Fold) -> str:
    """A left-deep chain of binary operators and folds of one level, `a + b - c + ..` (the
    parser builds it with a loop, however long): printed with a loop too."""
    prec = _precedence(expr)
    links: list[ast.Binary | ast.Fold] = []
    node: ast.Expr = expr
    while isinstance(node, (ast.Binary, ast.Fold)) and node.op != "??" and \
            _precedence(node) == prec:
        links.append(node)
        node = node.operand if isinstance(node, ast.Fold) else node.left
    text = _expr(node, prec)
    for link in reversed(links):
        if isinstance(link, ast.Fold):
            text += f" {link.op} {'...' if link.cumulative else '..'}"
            node = link
            continue
        right = _expr(link.right, prec + 1)
        if _left_needs_parentheses(link.op, node, text, right):
            text = f"({text})"
        text += f" {link.op} {right}"
        node = link
    return text


_LOGIC_OTHER = {"&&": "||", "||": "&&"}


def _left_needs_parentheses(op: str, left: ast.Expr, left_text: str, right_text: str) -> bool:
    """Whether the left operand of a binary `op` of its own level needs parentheses all the
    same: `(a && b) || c` (without them the parser warns about mixed logic), and `(b) > (c)`
    after `a < ` or `, ` (else `a < b > (c)` and `f(a < b, c > (d))` read as generic
    arguments `a<b>(c)`, `a<b, c>(d)`)."""
    if op in _LOGIC_OTHER:
        return isinstance(left, ast.Binary) and left.op == _LOGIC_OTHER[op]
    return op == ">" and right_text.startswith("(") and \
        (left_text[-1:].isalnum() or left_text.endswith("_"))


def _level0_chain(expr: ast.Select | ast.Binary) -> str:
    """Selects and coalescings, which nest to the right (`c ? a : d ? e : f`, `a ?? b ?? c`):
    printed with a loop. A select or coalescing as a condition, a then-branch or the left of
    `??` is parenthesised (`c ? (d ? a) : b` needs it)."""
    text = ""
    node: ast.Expr = expr
    while True:
        if isinstance(node, ast.Binary) and node.op == "??":
            text += f"{_expr(node.left, _ABOVE_SELECT)} ?? "
            node = node.right
        elif isinstance(node, ast.Select):
            text += f"{_expr(node.cond, _ABOVE_SELECT)} ? {_expr(node.then, _ABOVE_SELECT)}"
            if node.otherwise is None:
                return text
            text += " : "
            node = node.otherwise
        else:
            return text + _expr(node)


def _postfix_chain(expr: ast.Subscript | ast.Member) -> str:
    """Indexing and member access, `x[0][1:].shape[0]…`: printed with a loop."""
    suffixes: list[str] = []
    node: ast.Expr = expr
    while isinstance(node, (ast.Subscript, ast.Member)):
        if isinstance(node, ast.Member):
            suffixes.append("." + node.name)
        else:
            items = ", ".join(_index_item(item) for item in node.items)
            suffixes.append(f"[{items}{',' if node.trailing_comma else ''}]")
        node = node.base
    return _expr(node, _POSTFIX) + "".join(reversed(suffixes))


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
            out.append("{" + _single_quoted(_item(part)) + "}")
    return '"' + "".join(out) + '"'


def _single_quoted(text: str) -> str:
    """An insertion's text with its string literals in single quotes (`"{c ? 'a' : 'b'}"`): a
    double quote would end the string the insertion is in. (Their own `"` stay escaped.)"""
    tokens = tokenize(SourceFile("<insertion>", text))
    out, end = [], 0
    for token in tokens:
        if token.kind == "string":
            out.append(text[end:token.start] + "'" + token.text[1:-1].replace("'", "\\'") + "'")
            end = token.end
    return "".join(out) + text[end:]


# ----------------------------------------------------------------------------- comments, spelling

# How far the token alignment looks for the two streams to agree again after a difference, and
# how far a comment's anchor may be from a token the printer kept.
_WINDOW = 12


@dataclass(frozen=True)
class _Comment:
    """A comment of the original file, with what decides where it goes."""

    token: Token  # its text (from `#`, trailing white space removed) and position
    trailing: bool  # after a token on its line (else alone on its line, before the next token)
    blank_after: bool  # alone on its line and followed by a blank line
    anchor: int  # the index of its token: the one before it if trailing, else the one after


class _Original:
    """The file a module was parsed from: its tokens and comments, for the printer to keep its
    comments and spellings."""

    def __init__(self, source: SourceFile) -> None:
        self.source = source
        comment_tokens: list[Token] = []
        self.tokens = tokenize(source, comments=comment_tokens)
        self.starts = [token.start for token in self.tokens]
        text = source.text
        self.comments: list[_Comment] = []
        for index, comment in enumerate(comment_tokens):
            after = bisect_left(self.starts, comment.start)
            trailing = after > 0 and "\n" not in text[self.tokens[after - 1].end:comment.start]
            following = self.tokens[after].start
            if index + 1 < len(comment_tokens):
                following = min(following, comment_tokens[index + 1].start)
            blank_after = not trailing and text.count("\n", comment.end, following) >= 2
            self.comments.append(
                _Comment(comment, trailing, blank_after, after - 1 if trailing else after))

    def offset(self, line: int, col: int) -> int:
        return self.source.line_starts[line - 1] + col - 1

    def khronos_local(self, local: ast.LocalAssign) -> tuple[bool, bool]:
        """Whether the file wrote a loop-local value in the Khronos form `with z = e:`: whether
        `with` precedes it and whether `:` follows it (a `with` may introduce several)."""
        span = local.span
        if span.source is not self.source:
            return False, False
        first = bisect_left(self.starts, self.offset(span.line, span.col))
        after = self.tokens[bisect_left(self.starts, self.offset(span.end_line, span.end_col))]
        before = self.tokens[first - 1] if first > 0 else None
        opens = before is not None and before.kind == "name" and before.text == "with"
        return opens, after.is_op(":")

    def dress(self, text: str) -> str:
        """The canonical `text` of this file's module with the file's comments put back and its
        spelling of numbers and of the Khronos minimum/maximum operators kept."""
        printed = tokenize(SourceFile("<canonical>", text))
        mapping = _align([_key(t) for t in self.tokens], [_key(t) for t in printed])
        mapping[-1] = len(printed) - 1  # end of file
        spelled = [token.text for token in printed]
        for index, target in enumerate(mapping):
            if target is not None:
                spelled[target] = _spelling(self.tokens[index], printed[target], text)
        kept = {target for target in mapping if target is not None}
        gaps: dict[int, list[_Comment]] = {}
        last = 0
        for comment in self.comments:
            gap = _past_added(self._gap(comment, mapping), comment.trailing, printed, kept, text)
            last = max(last, gap)  # comments keep their order
            gaps.setdefault(last, []).append(comment)
        out: list[str] = []
        end = 0
        for index, token in enumerate(printed):
            space = text[end:token.start]
            if index in gaps:
                space = _with_comments(text, index, space, token, gaps[index])
            out.append(space + spelled[index])
            end = token.end
        return "".join(out).rstrip("\n") + "\n"

    def _gap(self, comment: _Comment, mapping: list[int | None]) -> int:
        """Where a comment goes: before printed token g (gap g). A trailing comment goes after
        the printed token its anchor became, an own-line one before it; when the printer
        dropped or rewrote the anchor, the nearest kept token before (trailing) or after it."""
        step = -1 if comment.trailing else 1
        index = comment.anchor
        for _ in range(_WINDOW):
            if not 0 <= index < len(mapping):
                break
            target = mapping[index]
            if target is not None:
                return target + 1 if comment.trailing else target
            index += step
        raise SyntaxDiagnostic(
            "fmt cannot place this comment in the canonical layout, so it leaves the file "
            "unchanged", self.source.span(comment.token.start, comment.token.end),
            ["move the comment to a line of its own before a declaration or statement"])


def _past_added(gap: int, trailing: bool, printed: list[Token], kept: set[int],
                text: str) -> int:
    """A gap moved past the tokens of its line that the printer added (no token of the file
    became them): a trailing comment forward (`import a;  # c`, not `import a  # c` + `;`), an
    own-line one back (before an added `(`). Either moves forward past a `,` or `;` of the
    line (`f(a,  # c` and `x = 1;  # c`, never a line of its own for the punctuation)."""
    def same_line(left: int) -> bool:
        return "\n" not in text[printed[left].end:printed[left + 1].start]

    if not trailing:
        while gap > 0 and gap - 1 not in kept and same_line(gap - 1):
            gap -= 1
    while gap < len(printed) - 1 and (gap > 0 and same_line(gap - 1)) and (
            printed[gap].is_op(",", ";") or (trailing and gap not in kept)):
        gap += 1
    return gap


def _key(token: Token) -> tuple:
    """What must agree for a file's token and a printed token to be the same token: numbers
    compare by value and the Khronos minimum/maximum spellings as the spec's."""
    if token.kind == "op":
        return "op", MINMAX_SPELLING.get(token.text, token.text)
    if token.kind == "int":
        return "int", int(token.text)
    if token.kind == "real":
        return "real", float(token.text)
    if token.kind in ("string", "eof"):
        return (token.kind,)
    return token.kind, token.text


def _spelling(original: Token, printed: Token, text: str) -> str:
    """The file's spelling of a printed token where fmt keeps it: numbers (`1e-5`, `1.`) and
    `<?` `>?` `<?=` `>?=`; `1.` not before a `.` (`1..shape` would read as `1 ..`)."""
    if original.kind in ("int", "real"):
        if not (original.text.endswith(".") and text.startswith(".", printed.end)):
            return original.text
    elif original.kind == "op" and original.text in MINMAX_SPELLING:
        return original.text
    return printed.text


def _align(source: list[tuple], printed: list[tuple]) -> list[int | None]:
    """For each token of the file, the index of the printed token it became, or None where the
    printer dropped or rewrote it (parentheses, `import a, b`, joined strings …). Equal runs
    match in order; after a difference the streams re-synchronise at the nearest pair of equal
    tokens that starts a run of three (else of one)."""
    mapping: list[int | None] = [None] * len(source)
    i = j = 0
    while i < len(source) and j < len(printed):
        if source[i] == printed[j]:
            mapping[i] = j
            i, j = i + 1, j + 1
            continue
        found = _resynchronise(source, printed, i, j)
        if found is None:
            break
        _fill(source, printed, mapping, (i, j), found)
        i, j = found
    return mapping


def _fill(source: list[tuple], printed: list[tuple], mapping: list[int | None],
          start: tuple[int, int], stop: tuple[int, int]) -> None:
    """Match the equal tokens of a skipped stretch (`import a, b` printed `import a; import b`
    skips `, b`): a longest common subsequence, cheap because the stretch is short."""
    from difflib import SequenceMatcher  # rarely needed (start-up time)

    (i, j), (end_i, end_j) = start, stop
    matcher = SequenceMatcher(None, source[i:end_i], printed[j:end_j], autojunk=False)
    for a, b, size in matcher.get_matching_blocks():
        for n in range(size):
            mapping[i + a + n] = j + b + n


def _resynchronise(a: list[tuple], b: list[tuple], i: int, j: int) -> tuple[int, int] | None:
    for run in (3, 1):
        for distance in range(1, 2 * _WINDOW + 1):
            for di in range(max(0, distance - _WINDOW), min(distance, _WINDOW) + 1):
                if _run(a, b, i + di, j + distance - di, run):
                    return i + di, j + distance - di
    return None


def _run(a: list[tuple], b: list[tuple], i: int, j: int, length: int) -> bool:
    """Whether `length` tokens agree from a[i] and b[j] (or all of both, to their ends)."""
    for n in range(length):
        if i + n >= len(a) or j + n >= len(b):
            return n > 0 and i + n == len(a) and j + n == len(b)
        if a[i + n] != b[j + n]:
            return False
    return True


def _with_comments(text: str, index: int, space: str, token: Token,
                   comments: list[_Comment]) -> str:
    """The white space before printed token `index`, with comments: a trailing comment after
    the previous token, then each other one on its own line, indented like the token (one level
    deeper before a closing bracket, which ends the block the comment is in). Between two
    tokens of one line, the line breaks there and goes on one level deeper."""
    parts: list[str] = []
    if comments[0].trailing and index > 0:
        parts.append("  " + comments[0].token.text)
        comments = comments[1:]
    if index == 0:
        breaks = indent = inner = ""
    elif "\n" in space:
        head, _, indent = space.rpartition("\n")
        breaks = head + "\n"
        inner = indent + INDENT if token.is_op("}", ")", "]") else indent
    else:
        indent = inner = _indentation(text, token.start) + INDENT
        breaks = "\n"
    parts.append(breaks)
    for comment in comments:
        parts.append(f"{inner}{comment.token.text}\n" + ("\n" if comment.blank_after else ""))
    parts.append(indent)
    return "".join(parts)


def _indentation(text: str, offset: int) -> str:
    """The leading spaces of the line that holds character `offset`."""
    start = end = text.rfind("\n", 0, offset) + 1
    while end < offset and text[end] == " ":
        end += 1
    return text[start:end]


# ----------------------------------------------------------------------------- self-check


def verify_canonical(source: SourceFile, printed: str) -> None:
    """fmt's self-check for a file: `printed`, its canonical form, must read back as the syntax
    tree of `source` (spans aside) with the same comments in the same order. Raises a
    SyntaxDiagnostic in `source` (where they first differ) otherwise."""
    _check(parse_module(source).module, printed, _Original(source))


def _check(module: ast.Module, printed: str, original: _Original | None) -> None:
    refusal = "fmt cannot print this file faithfully, so it leaves it unchanged: "
    report = "this is a bug in refinterp's printer; please report it with the file"
    try:
        after = parse_module(SourceFile(f"{module.span.path} (formatted)", printed)).module
    except Diagnostic as diag:
        raise SyntaxDiagnostic(refusal + "its canonical form does not parse",
                               _head(module.span), [str(diag).splitlines()[0], report]) from None
    if not same_tree(module, after):
        raise SyntaxDiagnostic(refusal + "its canonical form reads back differently here",
                               _head(_first_difference(module, after)), [report])
    if original is None:
        return
    kept: list[Token] = []
    tokenize(SourceFile("<formatted>", printed), comments=kept)
    for index, comment in enumerate(original.comments):
        if index >= len(kept) or kept[index].text != comment.token.text:
            raise SyntaxDiagnostic(refusal + "this comment would be lost or moved",
                                   original.source.span(comment.token.start, comment.token.end),
                                   [report])


def same_tree(a: object, b: object) -> bool:
    """Syntax-tree equality (spans aside) without recursion: `==` on dataclasses recurses, and
    a long flat chain (`1 + 1 + … + 1`) is a deep tree."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, ast.Node):
            pending.extend((getattr(x, f.name), getattr(y, f.name))
                           for f in fields(x) if f.compare)
        elif isinstance(x, tuple):
            if len(x) != len(y):  # type: ignore[arg-type]
                return False
            pending.extend(zip(x, y))  # type: ignore[arg-type]
        elif x != y:
            return False
    return True


def _first_difference(before: ast.Module, after: ast.Module) -> Span:
    """The span in `before` of the first import, definition or block entry `after` differs in."""
    for old, new in zip(before.imports, after.imports):
        if not same_tree(old, new):
            return old.span
    for old_def, new_def in zip(before.definitions, after.definitions):
        if same_tree(old_def, new_def):
            continue
        for old_block, new_block in zip(old_def.blocks, new_def.blocks):
            for old, new in zip(old_block.entries, new_block.entries):
                if not same_tree(old, new):
                    return old.span
        return old_def.span
    return before.span
