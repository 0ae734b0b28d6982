"""Recursive-descent parser: SkriptND text → `syntax.ast` nodes, for both dialects in use.

The grammar, the operator precedence table and every choice where the draft spec is silent are
written down in docs/grammar.md; keep the two in step. The parser stops at the first error and
raises a SyntaxDiagnostic pointing at the offending token.

The work is split in three layers, each a class deriving from the one before:
`syntax.cursor.TokenCursor` (token look-ahead, spans, diagnostics),
`syntax.expressions.ExpressionParser` (expressions and their precedence table), and `Parser`
here (imports, definitions, blocks and their entries: declarations, @lower, @compose/@update).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from refinterp.core.diagnostics import Diagnostic, SyntaxDiagnostic
from refinterp.core.source import SourceFile
from refinterp.syntax import ast
from refinterp.syntax.expressions import (
    BINARY_PRECEDENCE,
    FOLD_PRECEDENCE,
    MINMAX_SPELLING,
    UNARY_PRECEDENCE,
    ExpressionParser,
)
from refinterp.syntax.lexer import Token

# The precedence table is imported from here by the printer.
__all__ = [
    "BINARY_PRECEDENCE", "FOLD_PRECEDENCE", "UNARY_PRECEDENCE",
    "ParseResult", "Parser", "parse_expression", "parse_module",
]

LOWERING_OPERATORS = ("=", "+=", "*=", "&=", "|=", ":=", "<=", ">=", "<?=", ">?=")
TYPE_MODIFIERS = ("static", "dynamic")
LOOP_WORDS = ("with", "for", "while", "do", "unroll")

# Operators that can start an operand; `static`/`dynamic` followed by one of them is a modifier.
_STARTS_OPERAND_OPS = ("(", "[", "+", "-", "!", "?", "~", "|")


@dataclass(frozen=True)
class ParseResult:
    """A parsed module plus the warnings the parser gave (e.g. `&&` and `||` mixed)."""

    module: ast.Module
    warnings: tuple[Diagnostic, ...]


def parse_module(source: SourceFile) -> ParseResult:
    """Parse a whole file. Raises SyntaxDiagnostic at the first error."""
    parser = Parser(source)
    module = parser.guard(parser.parse_module)
    return ParseResult(module, tuple(parser.warnings))


def parse_expression(source: SourceFile) -> ast.Expr:
    """Parse a file that holds a single expression (used by `refinterp expr` and tests)."""
    parser = ExpressionParser(source)

    def whole() -> ast.Expr:
        expr = parser.parse_item()
        parser.expect_eof()
        return expr

    return parser.guard(whole)


class Parser(ExpressionParser):
    """One parse of a whole module: imports, definitions, blocks and their entries.

    Use `parse_module`; expressions alone need only `ExpressionParser` (`parse_expression`).
    """

    # ------------------------------------------------------------------ top level

    def parse_module(self) -> ast.Module:
        start = self.tok
        imports: list[ast.Import] = []
        definitions: list[ast.OperatorDef] = []
        while self.tok.kind != "eof":
            if self.at_word("import"):
                imports.extend(self.parse_import())
            elif self.at_word("public", "operator", "graph"):
                definitions.append(self.parse_definition())
            else:
                raise self.error_expected("'import', 'operator' or 'graph'")
        return ast.Module(tuple(imports), tuple(definitions), span=self.span(start))

    def parse_import(self) -> list[ast.Import]:
        self.expect_word("import")
        imports = []
        while True:
            start = self.tok
            parts = [self.expect_name("a module name").text]
            while self.accept_op("."):
                parts.append(self.expect_name("a module name after '.'").text)
            imports.append(ast.Import(tuple(parts), span=self.span(start)))
            if not self.accept_op(","):
                break
        self.accept_op(";")  # optional in both dialects
        return imports

    def parse_definition(self) -> ast.OperatorDef:
        start = self.tok
        public = self.accept_word("public") is not None
        if not self.at_word("operator", "graph"):
            raise self.error_expected("'operator' or 'graph' after 'public'")
        is_graph = self.advance().text == "graph"
        name = self.expect_name("a name for the " + ("graph" if is_graph else "operator")).text
        opened = self.expect_op("{", "to open the definition body")
        blocks: list[ast.Block] = []
        seen: dict[str, ast.Block] = {}
        while not self.at_op("}"):
            if self.tok.kind != "block":
                raise self.error_expected(
                    "a block such as '@input' or '}' to close the definition", opened)
            block = self.parse_block()
            if block.kind in seen:
                first = seen[block.kind].span
                raise SyntaxDiagnostic(
                    f"duplicate @{block.kind} block", block.span,
                    [f"the first @{block.kind} block is at {first}"])
            seen[block.kind] = block
            blocks.append(block)
        self.advance()
        return ast.OperatorDef(name, tuple(blocks), is_graph=is_graph, public=public,
                               span=self.span(start))

    def parse_block(self) -> ast.Block:
        start = self.tok
        kind = start.text[1:]
        if kind not in ast.BLOCK_NAMES:
            raise self.error(
                f"unknown block '{start.text}'",
                notes=["blocks are " + ", ".join("@" + b for b in ast.BLOCK_NAMES)])
        self.advance()
        opened = self.expect_op("{", f"after {start.text}")
        parse_entry = _ENTRY_PARSERS[kind]
        entries = []
        while not self.at_op("}"):
            if self.tok.kind == "eof" or self.tok.kind == "block":
                raise self.error_expected(f"'}}' to close the {start.text} block", opened)
            entries.append(parse_entry(self))
        self.advance()
        return ast.Block(kind, tuple(entries), span=self.span(start))

    # ------------------------------------------------------------------ declarations

    def parse_dtype(self) -> ast.DtypeDecl:
        start = self.tok
        name = self.expect_name("a generic type name").text
        self.expect_op(":", "after the type name")
        base = self.expect_name("a base type ('type', 'arith' or 'num')").text
        default = None
        if self.accept_op("="):
            default = self.expect_name("a default type").text
        self.expect_op(";", "to end the type declaration")
        return ast.DtypeDecl(name, base, default, span=self.span(start))

    def parse_param(self) -> ast.ParamDecl:
        start = self.tok
        name = self.expect_name("a declaration name").text
        self.expect_op(":", f"and a type after '{name}'")
        type_spec = self.parse_type_spec()
        default = None
        bounds: list[ast.IndexBound] = []
        if self.accept_op("="):
            default = self.parse_item()
            while self.accept_op(","):
                bounds.append(self.parse_index_bound())
        self.expect_op(";", "to end the declaration")
        return ast.ParamDecl(name, type_spec, default, tuple(bounds), span=self.span(start))

    def parse_type_spec(self) -> ast.TypeSpec:
        start = self.tok
        optional = False
        modifier = None
        while True:  # `optional` and `static`/`dynamic` in either order
            if not optional and self.at_word("optional") and self.peek().kind == "name":
                optional = self.advance() is not None
            elif modifier is None and (word := self.parse_modifier()) is not None:
                modifier = word
            else:
                break
        name = self.expect_name("a type name").text
        rank = None
        if self.accept_op("^"):
            opened = self.expect_op("(", "after '^' (rank capture)")
            rank = self.expect_name("a rank symbol").text
            self.expect_op(")", "to close the rank capture", opened)
        shape = None
        if self.at_op("["):
            opened = self.advance()
            items, _ = self.comma_list(self.parse_extent, "]", opened, "a shape")
            shape = tuple(items)
        pack = self.parse_pack_spec() if self.at_op("..") else None
        return ast.TypeSpec(name, optional, modifier, rank, shape, pack, span=self.span(start))

    def parse_modifier(self) -> str | None:
        """`static` / `dynamic` when followed by something it can modify (else it is a name)."""
        if self.at_word(*TYPE_MODIFIERS) and self._starts_operand(self.peek()):
            return self.advance().text
        return None

    @staticmethod
    def _starts_operand(token: Token) -> bool:
        if token.kind in ("name", "int", "real", "string", "builtin"):
            return True
        return token.kind == "op" and token.text in _STARTS_OPERAND_OPS

    def parse_extent(self) -> ast.Extent:
        start = self.tok
        distinct = self.accept_op("..") is not None
        modifier = self.parse_modifier()
        if self.at_op("~"):
            value: ast.Expr = ast.Placeholder(span=self.token_span(self.advance()))
        else:
            value = self.parse_expr()
        bound = None
        if self.accept_op("|"):
            bound = self.parse_expr()
        pack = self.parse_pack_spec() if self.at_op("..") else None
        return ast.Extent(value, distinct, bound, pack, modifier, span=self.span(start))

    def parse_pack_spec(self) -> ast.PackSpec:
        start = self.expect_op("..")
        length = bound = None
        modifier = None
        if self.at_op("("):
            opened = self.advance()
            modifier = self.parse_modifier()
            length = self.parse_expr()
            if self.accept_op("|"):
                bound = self.parse_expr()
            self.expect_op(")", "to close the pack length", opened)
        return ast.PackSpec(length, modifier, bound, span=self.span(start))

    def parse_index_bound(self) -> ast.IndexBound:
        start = self.tok
        name = self.expect_name("an index bound 'i < n'").text
        self.expect_op("<", f"after index '{name}' (index bounds are written 'i < n')")
        bound = self.parse_expr()
        return ast.IndexBound(name, bound, span=self.span(start))

    def parse_using(self) -> ast.UsingDecl:
        start = self.tok
        target = self.parse_lvalue(allow_type=False)
        self.expect_op("=", "after the target of a @using entry")
        value = self.parse_item()
        self.expect_op(";", "to end the @using entry")
        return ast.UsingDecl(target, value, span=self.span(start))

    def parse_assertion(self) -> ast.Assertion:
        start = self.tok
        cond = self.parse_expr()
        message = None
        printed: list[ast.PrintedValue] = []
        if self.accept_op(":"):
            if self.tok.kind != "string":
                raise self.error_expected("a message string after ':'")
            message = self.parse_string()
            while self.accept_op(","):
                printed.append(self.parse_printed_value())
        self.expect_op(";", "to end the assertion")
        return ast.Assertion(cond, message, tuple(printed), span=self.span(start))

    def parse_printed_value(self) -> ast.PrintedValue:
        start = self.tok
        label = None
        quoted = False
        if self.peek().is_op(":") and self.tok.kind in ("name", "string"):
            if self.tok.kind == "string":
                literal = self.parse_string()
                if any(not isinstance(part, str) for part in literal.parts):
                    raise SyntaxDiagnostic("a label cannot contain '{...}' formatting",
                                           literal.span)
                label, quoted = "".join(literal.parts), True  # type: ignore[arg-type]
            else:
                label = self.advance().text
            self.expect_op(":")
        value = self.parse_item()
        return ast.PrintedValue(value, label, quoted, span=self.span(start))

    def parse_quantization(self) -> ast.Quantization:
        start = self.tok
        tensor = self.parse_qualified_name("a tensor name")
        self.expect_op(":", "after the tensor name")
        operator = self.parse_qualified_name("a quantization operator")
        generics = self.parse_generic_args() if self.at_op("<") else ()
        attributes = self.parse_attributes() if self.at_op("{") else None
        self.expect_op(";", "to end the quantization entry")
        return ast.Quantization(tensor, operator, generics, attributes, span=self.span(start))

    def parse_qualified_name(self, what: str) -> tuple[str, ...]:
        parts = [self.expect_name(what).text]
        while self.at_op(".") and self.peek().kind == "name":
            self.advance()
            parts.append(self.advance().text)
        return tuple(parts)

    # ------------------------------------------------------------------ @lower

    def parse_lowering(self) -> ast.Lowering:
        start = self.tok
        unroll: list[ast.IterCount] = []
        while self.at_word("unroll") and self.peek().is_op(".."):
            self.advance()
            unroll.append(self.parse_iter_count())
        locals_: list[ast.LocalAssign] = []
        while True:
            if self.at_word("with") and self.peek().kind == "name" and self.peek(2).is_op("="):
                # Khronos spelling: `with z = e:` (several may follow, comma separated).
                self.advance()
                while True:
                    locals_.append(self.parse_local())
                    if not self.accept_op(","):
                        break
                self.expect_op(":", "after the loop-local values of 'with'")
                continue
            if self.tok.kind == "name" and self.peek().is_op("="):
                locals_.append(self.parse_local())
                self.expect_op(",", "after a loop-local value")
                continue
            break
        target = self.parse_postfix()
        if not isinstance(target, ast.Subscript):
            raise SyntaxDiagnostic(
                "the left-hand side of a lowering formula must be a tensor access such as "
                "'y[i]' or 'y[]'", target.span)
        if not self.at_op(*LOWERING_OPERATORS):
            raise self.error_expected("an assignment operator (= += *= &= |= := <= >=)")
        op = self.advance().text
        op = MINMAX_SPELLING.get(op, op)
        value = self.parse_expr()
        bounds: list[ast.IndexBound] = []
        while self.accept_op(","):
            bounds.append(self.parse_index_bound())
        condition = None
        if self.accept_op("|"):
            condition = self.parse_expr()
        self.expect_op(";", "to end the lowering formula")
        return ast.Lowering(target, op, value, tuple(bounds), condition, tuple(locals_),
                            tuple(unroll), span=self.span(start))

    def parse_local(self) -> ast.LocalAssign:
        start = self.tok
        name = self.expect_name().text
        self.expect_op("=")
        value = self.parse_expr()
        return ast.LocalAssign(name, value, span=self.span(start))

    # ------------------------------------------------------------------ @compose / @update

    def parse_component(self) -> ast.Component:
        start = self.tok
        targets = [self.parse_lvalue(allow_type=True)]
        while self.accept_op(","):
            targets.append(self.parse_lvalue(allow_type=True))
        self.expect_op("=", "after the results of a component")
        value = self.parse_rhs()
        self.expect_op(";", "to end the component")
        return ast.Component(tuple(targets), value, span=self.span(start))

    def parse_lvalue(self, allow_type: bool) -> ast.LValue:
        start = self.tok
        if self.accept_op("~"):
            return ast.LPlaceholder(span=self.span(start))
        if self.at_op("["):
            opened = self.advance()
            items, _ = self.comma_list(lambda: self.parse_list_target(allow_type), "]", opened,
                                       "a list of targets")
            return ast.LList(tuple(items), span=self.span(start))
        return self.parse_lname(allow_type)

    def parse_list_target(self, allow_type: bool) -> ast.LName | ast.LZip | ast.LPlaceholder:
        start = self.tok
        if self.accept_op("~"):
            return ast.LPlaceholder(span=self.span(start))
        if self.at_op("("):
            opened = self.advance()
            names, _ = self.comma_list(lambda: self.parse_lname(allow_type), ")", opened,
                                       "an unzipping target")
            if not self.at_op(".."):
                raise self.error_expected("'..' after an unzipping target '(a, b)'")
            pack = self.parse_pack_spec()
            return ast.LZip(tuple(names), pack, span=self.span(start))
        return self.parse_lname(allow_type)

    def parse_lname(self, allow_type: bool) -> ast.LName:
        start = self.tok
        name = self.expect_name("a target name").text
        type_spec = None
        if allow_type and self.at_op(":"):
            self.advance()
            type_spec = self.parse_type_spec()
        pack = self.parse_pack_spec() if self.at_op("..") else None
        return ast.LName(name, type_spec, pack, span=self.span(start))

    def parse_rhs(self) -> ast.Rhs:
        """The right-hand side of a component: branch, loop, block or expression."""
        if self._at_keyword("if"):
            return self.parse_if()
        if self._at_keyword(*LOOP_WORDS):
            return self.parse_loop()
        return self.parse_invocation_expr()

    def _at_keyword(self, *words: str) -> bool:
        """One of `words` as a soft keyword: not followed by `( [ . , ; = ) ] }` (a name is)."""
        if not self.at_word(*words):
            return False
        following = self.peek()
        return not following.is_op("(", "[", ".", ",", ";", "=", ")", "]", "}")

    def parse_invocation_expr(self) -> ast.Rhs:
        """A (labelled) block `{ ...; yield ...; }`, or an expression (often an invocation)."""
        start = self.tok
        label = None
        if self.tok.kind == "name" and self.peek().is_op(":"):
            label = self.advance().text
            self.advance()
        if self.at_op("{"):
            return self.parse_region(label, start)
        expr = self.parse_expr()
        if label is not None:
            if not isinstance(expr, ast.Call):
                raise SyntaxDiagnostic(
                    "a label must be followed by an operator invocation or a block", expr.span)
            expr = ast.Call(expr.callee, expr.args, expr.generics, expr.attributes, label,
                            span=self.span(start))
        return expr

    def parse_region(self, label: str | None, start: Token) -> ast.Region:
        opened = self.expect_op("{")
        components: list[ast.Component] = []
        while not self._at_keyword("yield"):
            if self.at_op("}") or self.tok.kind == "eof":
                raise self.error_expected("'yield' as the last statement of the block", opened)
            components.append(self.parse_component())
        self.advance()
        yields = [self.parse_item()]
        while self.accept_op(","):
            yields.append(self.parse_item())
        self.expect_op(";", "after the yielded values")
        self.expect_op("}", "after 'yield' (it must be the last statement of the block)",
                       opened)
        return ast.Region(tuple(components), tuple(yields), label, span=self.span(start))

    def parse_if(self) -> ast.IfExpr:
        start = self.expect_word("if")
        branches = [self.parse_branch()]
        while self.accept_word("elif"):
            branches.append(self.parse_branch())
        self.expect_word("else", "(every 'if' needs an 'else' branch)")
        otherwise = self.parse_invocation_expr()
        return ast.IfExpr(tuple(branches), otherwise, span=self.span(start))

    def parse_branch(self) -> tuple[ast.Rhs, ast.Rhs]:
        cond = self.parse_invocation_expr()
        self.expect_word("then", "after the condition")
        return cond, self.parse_invocation_expr()

    def parse_loop(self) -> ast.LoopExpr:
        start = self.tok
        carried: list[ast.Carried] = []
        scans: list[ast.Scan] = []
        pre = None
        if self.accept_word("with"):
            carried.append(self.parse_carried())
            while self.accept_op(","):
                carried.append(self.parse_carried())
        if self.accept_word("for"):
            scans.append(self.parse_scan())
            while self.accept_op(","):
                scans.append(self.parse_scan())
        if self.accept_word("while"):
            pre = self.parse_invocation_expr()
        if not self.at_word("do", "unroll"):
            raise self.error_expected("'do' or 'unroll' to give the loop body")
        unroll = self.advance().text == "unroll"
        count = self.parse_iter_count() if self.at_op("..") else None
        body = self.parse_invocation_expr()
        post = None
        if self.accept_word("while"):
            post = self.parse_invocation_expr()
        return ast.LoopExpr(body, tuple(carried), tuple(scans), pre, post, count, unroll,
                            span=self.span(start))

    def parse_carried(self) -> ast.Carried:
        start = self.tok
        name = self.expect_name("a loop-carried variable").text
        type_spec = None
        if self.accept_op(":"):
            type_spec = self.parse_type_spec()
        self.expect_op("=", f"and an initial value for '{name}'")
        init = self.parse_item()
        return ast.Carried(name, init, type_spec, span=self.span(start))

    def parse_scan(self) -> ast.Scan:
        start = self.tok
        name = self.expect_name("a scan item name").text
        self.expect_op(":", "between the item name and the scanned pack")
        pack = self.parse_expr()
        return ast.Scan(name, pack, span=self.span(start))

    def parse_iter_count(self) -> ast.IterCount:
        start = self.expect_op("..")
        opened = self.expect_op("(", "after '..' (iteration count)")
        index = None
        if self.tok.kind == "name" and self.peek().is_op("->"):
            index = self.advance().text
            self.advance()
        count = None if (index is not None and self.at_op(")")) else self.parse_expr()
        self.expect_op(")", "to close the iteration count", opened)
        return ast.IterCount(index, count, span=self.span(start))


# The parser of one entry, by block kind.
_ENTRY_PARSERS: dict[str, Callable[[Parser], ast.Entry]] = {
    "dtype": Parser.parse_dtype,
    "attrib": Parser.parse_param,
    "input": Parser.parse_param,
    "output": Parser.parse_param,
    "constant": Parser.parse_param,
    "variable": Parser.parse_param,
    "using": Parser.parse_using,
    "assert": Parser.parse_assertion,
    "lower": Parser.parse_lowering,
    "compose": Parser.parse_component,
    "update": Parser.parse_component,
    "quantize": Parser.parse_quantization,
}
