"""The expression parser: precedence climbing over both dialects' operator spellings.

`ExpressionParser` parses items (`e`, `e..`, `e..(n)`), binary and unary operators, folds, select
and coalescing, postfix indexing / member access / substitution, operands (literals, names,
invocations, lists, zips, bounded indices) and string literals with `{expr}` insertions. The
Khronos spellings `<?`, `>?`, `<?=`, `>?=` are normalised to the spec's `<<`, `>>`, `<=`, `>=`.
The precedence table is the one written down in docs/grammar.md ("Precedence").
"""

from __future__ import annotations

from refinterp.core.diagnostics import Diagnostic, SyntaxDiagnostic
from refinterp.core.source import SourceFile
from refinterp.syntax import ast
from refinterp.syntax.cursor import TokenCursor
from refinterp.syntax.lexer import Token, tokenize

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


class ExpressionParser(TokenCursor):
    """Expressions, on a token cursor; `syntax.parser.Parser` adds declarations and blocks."""

    def __init__(self, source: SourceFile, tokens: list[Token] | None = None) -> None:
        super().__init__(source, tokens)
        # the expressions written in parentheses (no mixed-logic warning for them), by id(); each
        # entry holds its node, so no other node has that id while the parser lives
        self._parenthesized: dict[int, ast.Expr] = {}

    # ------------------------------------------------------------------ operators

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
        """Precedence climbing: binary operators and folds of level `min_prec` and up; at level
        0 also select `c ? a : b` and coalescing `a ?? b` (right-associative)."""
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
        """The binary operator (as written) that `token` is here, or None."""
        if token.kind == "op":
            if token.text == ":=":  # only as the uniform-value fold `x := ..`
                return ":=" if self.peek().is_op("..") else None
            return token.text if token.text in BINARY_PRECEDENCE else None
        if token.kind == "name" and token.text in WORD_OPERATORS:
            return token.text
        return None

    def _warn_mixed_logic(self, op: str, left: ast.Expr, token: Token) -> None:
        """Warn at `token` when `&&`/`||` follows the other without parentheses around `left`."""
        other = "||" if op == "&&" else "&&"
        if isinstance(left, ast.Binary) and left.op == other and \
                self._parenthesized.get(id(left)) is not left:
            self.warnings.append(Diagnostic(
                "'&&' and '||' mixed without parentheses; they have equal precedence and "
                "group left to right", self.token_span(token),
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

    # ------------------------------------------------------------------ operands

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
        self._parenthesized[id(first)] = first
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
        """An operand that starts with a name: literal word, name, or (dotted) invocation."""
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
        """The `{expr}` insertion at characters [start, end) of the file, parsed in place."""
        comments: list[Token] = []
        tokens = tokenize(self.source, start, end, comments)
        if comments:  # it would end at the '}', silently swallowing the rest of the insertion
            raise SyntaxDiagnostic("a '{...}' insertion in a string cannot hold a comment",
                                   self.source.span(comments[0].start, comments[0].start + 1))
        if tokens[0].kind == "eof":
            raise SyntaxDiagnostic("empty '{}' in string (write '\\{\\}' for braces)",
                                   self.source.span(start - 1, end + 1))
        inner = ExpressionParser(self.source, tokens)
        inner.end_description = "end of the '{...}' insertion"
        expr = inner.parse_item()
        inner.expect_eof()
        self.warnings.extend(inner.warnings)
        return expr
