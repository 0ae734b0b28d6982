"""The parser's token cursor: position in a token stream, look-ahead, and syntax diagnostics.

`TokenCursor` is the base of the parser classes (`syntax.expressions.ExpressionParser`, then
`syntax.parser.Parser`); it knows tokens but no grammar. Its errors are SyntaxDiagnostics whose
span is the offending token, with notes that point at an unmatched opening bracket.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from refinterp.core.diagnostics import Diagnostic, SyntaxDiagnostic
from refinterp.core.source import SourceFile, Span
from refinterp.syntax.lexer import Token, tokenize

T = TypeVar("T")


class TokenCursor:
    """One pass over one token stream (the whole of `source`, or the given `tokens`)."""

    def __init__(self, source: SourceFile, tokens: list[Token] | None = None) -> None:
        self.source = source
        self.tokens = tokens if tokens is not None else tokenize(source)
        self.pos = 0
        self.warnings: list[Diagnostic] = []
        # How error messages name the eof token ("found end of file").
        self.end_description = "end of file"

    # ------------------------------------------------------------------ looking and moving

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

    # ------------------------------------------------------------------ expecting

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

    # ------------------------------------------------------------------ spans and errors

    def span(self, start: Token) -> Span:
        """The span from `start` to the end of the last consumed token."""
        end = self.tokens[self.pos - 1].end if self.pos > 0 else start.end
        return self.source.span(start.start, max(end, start.end))

    def token_span(self, token: Token) -> Span:
        """The span of one token; for eof, the character just past the last real token."""
        if token.kind == "eof":
            # Point just past the last real token so that the caret lands on a visible line.
            if len(self.tokens) > 1:
                last = self.tokens[-2]
                return self.source.span(last.end, last.end + 1)
            return self.source.span(token.start, token.start)
        return self.source.span(token.start, token.end)

    def describe(self, token: Token) -> str:
        """How an error message names `token` ("found ...")."""
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
        """A diagnostic at `token` (default: the current one), for the caller to raise."""
        token = token or self.tok
        return SyntaxDiagnostic(message, self.token_span(token), notes or [])

    def error_expected(self, what: str, opened: Token | None = None) -> SyntaxDiagnostic:
        """The diagnostic "expected `what`, found <this token>", noting where `opened` was."""
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
