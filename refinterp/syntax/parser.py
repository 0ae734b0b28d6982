"""Recursive-descent parser: tokens → `syntax.ast` nodes, for both dialects in use.

The grammar, the operator precedence table and every choice where the draft spec is silent are
written down in docs/grammar.md; keep the two in step. The parser stops at the first error and
raises a SyntaxDiagnostic pointing at the offending token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, TypeVar

from refinterp.core.diagnostics import Diagnostic, SyntaxDiagnostic
from refinterp.core.source import SourceFile, Span
from refinterp.syntax import ast
from refinterp.syntax.lexer import Token, tokenize

T = TypeVar("T")

# Binary operators, low → high precedence; every level is left-associative (docs/grammar.md).
# Level 0 (select `?:` and coalescing `??`) and the unary level are handled separately.
BINARY_PRECEDENCE: dict[str, int] = {
    "=>": 1,
    "&&": 2, "||": 2, "^": 2,
    "<": 3, "<=": 3, ">": 3, ">=": 3, "==": 3, "!=": 3, "is": 3, "in": 3,
    "<?": 4, ">?": 4, "<<": 4, ">>": 4,
    "+": 5, "-": 5,
    "*": 6, "/": 6, "%": 6, "\\": 6,
    "**": 8,
}
UNARY_PRECEDENCE = 7
FOLD_PRECEDENCE = {":=": 3}  # `:=` exists only as a fold, at the comparison level (Khronos)
UNARY_OPERATORS = ("+", "-", "!", "?")
WORD_OPERATORS = ("is", "in")

# The Khronos spellings of minimum / maximum, normalised to the draft spec's.
MINMAX_SPELLING = {"<?": "<<", ">?": ">>", "<?=": "<=", ">?=": ">="}

FOLD_OPERATORS = frozenset(
    ["+", "*", "&&", "||", "<", "<=", ">", ">=", "==", "!=", ":=", "<<", ">>", "<?", ">?"]
)
CUMULATIVE_OPERATORS = frozenset(["+", "*", "&&", "||", "<<", ">>", "<?", ">?"])

LOWERING_OPERATORS = ("=", "+=", "*=", "&=", "|=", ":=", "<=", ">=", "<?=", ">?=")
TYPE_MODIFIERS = ("static", "dynamic")
LOOP_WORDS = ("with", "for", "while", "do", "unroll")

# Tokens that can end an expression; after one of them a word like `is`/`in` is an operator.
_STARTS_EXPRESSION_OPS = ("(", "[", "+", "-", "!", "?", "~", "|")


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
    parser = Parser(source)

    def whole() -> ast.Expr:
        expr = parser.parse_item()
        parser.expect_eof()
        return expr

    return parser.guard(whole)


class Parser:
    """One parse of one token stream. Use `parse_module` / `parse_expression`."""

    def __init__(self, source: SourceFile, tokens: list[Token] | None = None) -> None:
        self.source = source
        self.tokens = tokens if tokens is not None else tokenize(source)
        self.pos = 0
        self.warnings: list[Diagnostic] = []
        self._parenthesized: set[int] = set()
        self.end_description = "end of file"

    # ------------------------------------------------------------------ token helpers

    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def peek(self, offset: int = 1) -> Token:
        index = min(self.pos + offset, len(self.tokens) - 1)
        return self.tokens[index]

    def advance(self) -> Token:
        token = self.tokens[self.pos]
        if token.kind != "eof":
            self.pos += 1
        return token

    def at_op(self, *ops: str) -> bool:
        token = self.tokens[self.pos]
        return token.kind == "op" and token.text in ops

    def at_word(self, *words: str) -> bool:
        token = self.tokens[self.pos]
        return token.kind == "name" and token.text in words

    def accept_op(self, op: str) -> Token | None:
        if self.at_op(op):
            return self.advance()
        return None

    def accept_word(self, word: str) -> Token | None:
        if self.at_word(word):
            return self.advance()
        return None

    def expect_op(self, op: str, context: str = "", opened: Token | None = None) -> Token:
        if self.at_op(op):
            return self.advance()
        what = f"'{op}'" + (f" {context}" if context else "")
        if op == ";" and self.pos > 0:
            # A forgotten ';' at the end of a line: point just past the line's last token.
            previous = self.tokens[self.pos - 1]
            if self.source.position(previous.end)[0] < self.source.position(self.tok.start)[0]:
                after_line = self.source.span(previous.end, previous.end + 1)
                raise SyntaxDiagnostic(
                    f"expected {what}, found {self.describe(self.tok)} on the next line",
                    after_line)
        raise self.error_expected(what, opened)

    def expect_word(self, word: str, context: str = "") -> Token:
        if self.at_word(word):
            return self.advance()
        raise self.error_expected(f"'{word}'" + (f" {context}" if context else ""))

    def expect_name(self, what: str = "a name") -> Token:
        if self.tok.kind == "name":
            return self.advance()
        raise self.error_expected(what)

    def expect_eof(self) -> None:
        if self.tok.kind != "eof":
            raise self.error_expected("end of input")

    def span(self, start: Token) -> Span:
        """The span from `start` to the end of the last consumed token."""
        end = self.tokens[self.pos - 1].end if self.pos > 0 else start.end
        return self.source.span(start.start, max(end, start.end))

    def token_span(self, token: Token) -> Span:
        if token.kind == "eof":
            # Point just past the last real token so that the caret lands on a visible line.
            last = self.tokens[-2] if len(self.tokens) > 1 else token
            return self.source.span(last.end, last.end + 1) if last is not token else \
                self.source.span(token.start, token.start)
        return self.source.span(token.start, token.end)

    def describe(self, token: Token) -> str:
        if token.kind == "eof":
            return self.end_description
        if token.kind == "string":
            return "a string literal"
        if token.kind in ("int", "real"):
            return f"number {token.text}"
        if token.kind == "block":
            return f"block {token.text}"
        return f"'{token.text}'"

    def error(self, message: str, token: Token | None = None, notes: list[str] | None = None
              ) -> SyntaxDiagnostic:
        token = token or self.tok
        return SyntaxDiagnostic(message, self.token_span(token), notes or [])

    def error_expected(self, what: str, opened: Token | None = None) -> SyntaxDiagnostic:
        notes = []
        if self.tok.is_op(")", "]", "}") and opened is None:
            notes.append(f"is this '{self.tok.text}' unmatched?")
        if opened is not None:
            line, col = self.source.position(opened.start)
            notes.append(f"'{opened.text}' opened at {self.source.path}:{line}:{col}")
        return self.error(f"expected {what}, found {self.describe(self.tok)}", notes=notes)

    def guard(self, parse: Callable[[], T]) -> T:
        """Run a parse function, turning runaway nesting into a diagnostic."""
        try:
            return parse()
        except RecursionError:
            raise self.error("nesting too deep to parse") from None

    def comma_list(self, parse_item: Callable[[], T], close: str, opened: Token,
                   what: str) -> tuple[list[T], bool]:
        """Items separated by commas up to `close` (consumed). Returns (items, trailing_comma)."""
        items: list[T] = []
        trailing = False
        while not self.at_op(close):
            items.append(parse_item())
            if self.accept_op(","):
                trailing = True
                continue
            trailing = False
            if not self.at_op(close):
                raise self.error_expected(f"',' or '{close}' in {what}", opened)
        self.advance()
        return items, trailing

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
        parse_entry = self._entry_parsers[kind]
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
        return token.kind == "op" and token.text in _STARTS_EXPRESSION_OPS

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
        """A soft keyword: the word, not used as a name (not followed by an operator)."""
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

    # ------------------------------------------------------------------ expressions

    def parse_item(self) -> ast.Expr:
        """An expression that may be expanded: `e`, `e..` or `e..(n)`.

        Expansion applies to the whole item (`s is 1 ? 0 : si..` expands the select).
        """
        start = self.tok
        expr = self.parse_expr()
        if self.at_op(".."):
            self.advance()
            count = None
            if self.tok.kind in ("int", "real"):
                raise self.error(
                    "a repetition count after '..' must be in parentheses, as in 'x..(5)'",
                    notes=["an expansion 'x..' must be followed by ',' or a closing bracket"])
            if self.at_op("("):
                opened = self.advance()
                count = self.parse_expr()
                self.expect_op(")", "to close the repetition count", opened)
            return ast.Expand(expr, count, span=self.span(start))
        if isinstance(expr, ast.Zip):
            raise SyntaxDiagnostic("a zip '(a, b)' must be expanded: write '(a, b)..'",
                                   expr.span)
        return expr

    def parse_expr(self, min_prec: int = 0) -> ast.Expr:
        start = self.tok
        left = self.parse_unary()
        while True:
            token = self.tok
            op = self._binary_operator(token)
            if op is None:
                if min_prec > 0:
                    return left
                # Level 0, right-associative: `a ?? b ? c : d` is `a ?? (b ? c : d)`.
                if token.is_op("?"):
                    return self.parse_select(left, start)
                if token.is_op("??"):
                    self.advance()
                    right = self.parse_expr(0)
                    return ast.Binary("??", left, right, span=self.span(start))
                return left
            prec = FOLD_PRECEDENCE.get(op) or BINARY_PRECEDENCE[op]
            if prec < min_prec:
                return left
            following = self.peek()
            if following.is_op("..", "...") and op in FOLD_OPERATORS:
                cumulative = following.text == "..."
                if cumulative and op not in CUMULATIVE_OPERATORS:
                    raise self.error(f"'{op}' has no cumulative fold", following)
                self.advance()
                self.advance()
                left = ast.Fold(MINMAX_SPELLING.get(op, op), left, cumulative,
                                span=self.span(start))
                continue
            self.advance()
            right = self.parse_expr(prec + 1)
            if op in ("&&", "||"):
                self._warn_mixed_logic(op, left, token)
            left = ast.Binary(MINMAX_SPELLING.get(op, op), left, right, span=self.span(start))

    def _binary_operator(self, token: Token) -> str | None:
        if token.kind == "op":
            if token.text == ":=":  # only as the uniform-value fold `x := ..`
                return ":=" if self.peek().is_op("..") else None
            return token.text if token.text in BINARY_PRECEDENCE else None
        if token.kind == "name" and token.text in WORD_OPERATORS:
            return token.text
        return None

    def _warn_mixed_logic(self, op: str, left: ast.Expr, token: Token) -> None:
        other = "||" if op == "&&" else "&&"
        if isinstance(left, ast.Binary) and left.op == other and \
                id(left) not in self._parenthesized:
            self.warnings.append(Diagnostic(
                f"'&&' and '||' mixed without parentheses; they have equal precedence and "
                f"group left to right", self.token_span(token),
                ["add parentheses to make the intended grouping explicit"],
                severity="warning"))

    def parse_select(self, cond: ast.Expr, start: Token) -> ast.Expr:
        self.expect_op("?")
        then = self.parse_expr()
        otherwise = None
        if self.accept_op(":"):
            otherwise = self.parse_expr()
        return ast.Select(cond, then, otherwise, span=self.span(start))

    def parse_unary(self) -> ast.Expr:
        if self.at_op(*UNARY_OPERATORS):
            start = self.advance()
            operand = self.parse_expr(UNARY_PRECEDENCE + 1)
            return ast.Unary(start.text, operand, span=self.span(start))
        return self.parse_postfix()

    def parse_postfix(self) -> ast.Expr:
        start = self.tok
        expr = self.parse_primary()
        while True:
            if self.at_op("["):
                expr = self.parse_subscript(expr, start)
            elif self.at_op(".") and self.peek().kind == "name":
                self.advance()
                expr = ast.Member(expr, self.advance().text, span=self.span(start))
            elif self.at_op("<-"):
                if not isinstance(expr, ast.Subscript):
                    raise self.error("'<-' (substitution) must follow an indexing such as "
                                     "'a[i]'")
                self.advance()
                value = self.parse_expr(1)
                expr = ast.Substitute(expr, value, span=self.span(start))
            else:
                return expr

    def parse_subscript(self, base: ast.Expr, start: Token) -> ast.Subscript:
        opened = self.expect_op("[")
        items, trailing = self.comma_list(self.parse_index_item, "]", opened, "an index")
        return ast.Subscript(base, tuple(items), trailing, span=self.span(start))

    def parse_index_item(self) -> ast.Expr | ast.Slice:
        start = self.tok
        first = None
        if not self.at_op(":"):
            first = self.parse_item()
            if not self.at_op(":"):
                return first
            if isinstance(first, ast.Expand):
                raise self.error("an expanded index cannot start a slice")
        self.expect_op(":")
        stop = None if self.at_op(":", "]", ",") else self.parse_expr()
        step = None
        if self.accept_op(":"):
            step = None if self.at_op("]", ",") else self.parse_expr()
        return ast.Slice(first, stop, step, span=self.span(start))

    def parse_bounded(self) -> ast.Bounded:
        start = self.expect_op("|")
        index = self.parse_expr()
        lower = upper = None
        if self.accept_op("<>"):
            lower = self.parse_expr()
            self.expect_op(":", "between the two remapped indices of '<>'")
            upper = self.parse_expr()
        self.expect_op("|", "to close the bounded index", start)
        return ast.Bounded(index, lower, upper, span=self.span(start))

    def parse_primary(self) -> ast.Expr:
        token = self.tok
        kind = token.kind
        if kind == "int":
            self.advance()
            return ast.IntLiteral(int(token.text), span=self.token_span(token))
        if kind == "real":
            self.advance()
            return ast.RealLiteral(float(token.text), span=self.token_span(token))
        if kind == "string":
            return self.parse_string()
        if kind == "builtin":
            self.advance()
            opened = self.expect_op("(", f"after the built-in {token.text}")
            args, _ = self.comma_list(self.parse_expr, ")", opened, "built-in arguments")
            return ast.Builtin(token.text[1:-1], tuple(args), span=self.span(token))
        if kind == "name":
            return self.parse_name_expr()
        if token.is_op("("):
            return self.parse_parenthesized()
        if token.is_op("|"):
            return self.parse_bounded()
        if token.is_op("["):
            opened = self.advance()
            items, _ = self.comma_list(self.parse_list_item, "]", opened, "a list")
            return ast.ListExpr(tuple(items), span=self.span(token))
        raise self.error_expected("an expression")

    def parse_parenthesized(self) -> ast.Expr:
        opened = self.expect_op("(")
        first = self.parse_expr()
        if self.at_op(","):
            items = [first]
            while self.accept_op(","):
                items.append(self.parse_expr())
            self.expect_op(")", "to close the zip", opened)
            return ast.Zip(tuple(items), span=self.span(opened))
        self.expect_op(")", "to close the parenthesis", opened)
        self._parenthesized.add(id(first))
        return first

    def parse_list_item(self) -> ast.ListItem:
        start = self.tok
        item = self.parse_item()
        if self.at_op(":") and not isinstance(item, ast.Expand):
            self.advance()
            stop = self.parse_expr()
            step = self.parse_expr() if self.accept_op(":") else None
            return ast.Range(item, stop, step, span=self.span(start))
        return item

    def parse_name_expr(self) -> ast.Expr:
        start = self.tok
        word = start.text
        if word in ("true", "false"):
            self.advance()
            return ast.BoolLiteral(word == "true", span=self.span(start))
        if word in ("inf", "pi"):
            self.advance()
            return ast.Constant(word, span=self.span(start))
        # A dotted name is an operator reference only when an invocation follows.
        end = self.pos + 1
        while self.tokens[end].is_op(".") and self.tokens[end + 1].kind == "name":
            end += 2
        after = self.tokens[end]
        if after.is_op("(", "{") or (after.is_op("<") and self._generic_args_at(end)):
            callee = tuple(self.tokens[i].text for i in range(self.pos, end, 2))
            self.pos = end
            return self.parse_call(callee, start)
        self.advance()
        return ast.Name(word, span=self.span(start))

    def _generic_args_at(self, index: int) -> bool:
        """Whether tokens at `index` read `< T, U > (` or `< T > {` (a generic invocation)."""
        index += 1
        while True:
            if self.tokens[index].kind != "name":
                return False
            index += 1
            if self.tokens[index].is_op(","):
                index += 1
                continue
            return self.tokens[index].is_op(">") and self.tokens[index + 1].is_op("(", "{")

    def parse_call(self, callee: tuple[str, ...], start: Token) -> ast.Call:
        generics = self.parse_generic_args() if self.at_op("<") else ()
        attributes = self.parse_attributes() if self.at_op("{") else None
        opened = self.expect_op("(", f"to give the arguments of '{'.'.join(callee)}'")
        args, _ = self.comma_list(self.parse_argument, ")", opened, "arguments")
        return ast.Call(callee, tuple(args), generics, attributes, span=self.span(start))

    def parse_generic_args(self) -> tuple[ast.TypeArg, ...]:
        opened = self.expect_op("<")

        def type_arg() -> ast.TypeArg:
            token = self.expect_name("a type name")
            return ast.TypeArg(token.text, span=self.token_span(token))

        args, _ = self.comma_list(type_arg, ">", opened, "type arguments")
        return tuple(args)

    def parse_attributes(self) -> tuple[ast.AttributeValue, ...]:
        opened = self.expect_op("{")

        def attribute() -> ast.AttributeValue:
            start = self.expect_name("an attribute name")
            if self.at_op(":"):  # the spec's §2.10 example writes `op{a: 42}`, a typo
                raise self.error(f"attribute values are given with '=': write "
                                 f"'{start.text}=...'")
            self.expect_op("=", f"after attribute '{start.text}'")
            value = self.parse_item()
            return ast.AttributeValue(start.text, value, span=self.span(start))

        attributes, _ = self.comma_list(attribute, "}", opened, "attributes")
        return tuple(attributes)

    def parse_argument(self) -> ast.Expr:
        if self.at_op("~"):
            return ast.Placeholder(span=self.token_span(self.advance()))
        return self.parse_item()

    # ------------------------------------------------------------------ strings

    def parse_string(self) -> ast.StringLiteral:
        """One or more adjacent string literals, joined, with `{expr}` insertions parsed."""
        start = self.tok
        parts: list[str | ast.Expr] = []
        while self.tok.kind == "string":
            for part in self._string_parts(self.advance()):
                if isinstance(part, str) and parts and isinstance(parts[-1], str):
                    parts[-1] = parts[-1] + part
                else:
                    parts.append(part)
        return ast.StringLiteral(tuple(parts), span=self.span(start))

    _ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "{": "{", "}": "}"}

    def _string_parts(self, token: Token) -> list[str | ast.Expr]:
        text = self.source.text
        parts: list[str | ast.Expr] = []
        chars: list[str] = []
        i, end = token.start + 1, token.end - 1
        while i < end:
            char = text[i]
            if char == "\\":
                escaped = self._ESCAPES.get(text[i + 1])
                if escaped is None:
                    raise SyntaxDiagnostic(
                        f"unknown escape sequence '\\{text[i + 1]}' in string",
                        self.source.span(i, i + 2),
                        ["known escapes: \\n \\t \\\\ \\\" \\' \\{ \\}"])
                chars.append(escaped)
                i += 2
            elif char == "{":
                close = text.find("}", i + 1, end)
                if close < 0:
                    raise SyntaxDiagnostic("unclosed '{' in string (write '\\{' for a brace)",
                                           self.source.span(i, i + 1))
                if chars:
                    parts.append("".join(chars))
                    chars = []
                parts.append(self._format_expr(i + 1, close))
                i = close + 1
            elif char == "}":
                raise SyntaxDiagnostic("unmatched '}' in string (write '\\}' for a brace)",
                                       self.source.span(i, i + 1))
            else:
                chars.append(char)
                i += 1
        if chars:
            parts.append("".join(chars))
        return parts

    def _format_expr(self, start: int, end: int) -> ast.Expr:
        tokens = tokenize(self.source, start, end)
        if tokens[0].kind == "eof":
            raise SyntaxDiagnostic("empty '{}' in string (write '\\{\\}' for braces)",
                                   self.source.span(start - 1, end + 1))
        inner = Parser(self.source, tokens)
        inner.end_description = "end of the '{...}' insertion"
        expr = inner.parse_item()
        inner.expect_eof()
        self.warnings.extend(inner.warnings)
        return expr


Parser._entry_parsers = {  # type: ignore[attr-defined]
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
