"""Lexer: SkriptND text → tokens with exact character offsets.

Words are never reserved by the lexer: every identifier-like word is a `name` token and the
parser decides from its position whether it is a keyword (see docs/grammar.md, "Soft keywords").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from refinterp.core.diagnostics import SyntaxDiagnostic
from refinterp.core.source import SourceFile

# Punctuators and operators, longest first so that the regex alternation is maximal munch.
OPERATORS: tuple[str, ...] = (
    "...", "<?=", ">?=",
    "..", "<?", ">?", "<<", ">>", "<=", ">=", "<>", "<-", "->", "==", "!=", "=>",
    "+=", "*=", "&=", "|=", ":=", "&&", "||", "??", "**",
    ".", "<", ">", "=", "+", "-", "*", "/", "\\", "%", "!", "^", "~", "|", ":", ";", ",",
    "(", ")", "[", "]", "{", "}", "?",
)

_TOKEN_RE = re.compile(
    r"""
    (?P<space>[ \t\r\n\f]+)
  | (?P<comment>\#[^\n]*)
  | (?P<number>\d+(?:\.(?!\.)\d*)?(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<string>"(?:[^"\\\n]|\\[^\n])*"|'(?:[^'\\\n]|\\[^\n])*')
  | (?P<builtin>`[A-Za-z_][A-Za-z0-9_]*`)
  | (?P<block>@[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>"""
    + "|".join(re.escape(op) for op in OPERATORS)
    + r"""
    )
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class Token:
    """One token. `kind` is name, int, real, string, builtin, block, op or eof (or comment, for
    the comments `tokenize` collects on request).

    `text` is the exact source text; for `op` tokens it is the operator itself.
    `start`/`end` are character offsets into the source text.
    """

    kind: str
    text: str
    start: int
    end: int

    def is_op(self, *ops: str) -> bool:
        return self.kind == "op" and self.text in ops


def tokenize(source: SourceFile, start: int = 0, stop: int | None = None,
             comments: list[Token] | None = None) -> list[Token]:
    """Split `source` (or its characters [start, stop)) into tokens, ending with an `eof` token.

    White space is dropped, and so are comments unless a `comments` list is given: then each
    comment is appended to it as a `comment` token (its text from `#` on, without trailing
    white space such as a CRLF line's carriage return). Offsets are into the whole file.

    Raises SyntaxDiagnostic at the first character that starts no token (including an
    unterminated string literal, reported at its opening quote).
    """
    text = source.text
    tokens: list[Token] = []
    append = tokens.append
    match = _TOKEN_RE.match
    pos, length = start, len(text) if stop is None else stop
    while pos < length:
        m = match(text, pos, length)
        if m is None:
            raise _bad_character(source, pos)
        kind = m.lastgroup
        end = m.end()
        if kind == "number":
            word = m.group()
            kind = "real" if ("." in word or "e" in word or "E" in word) else "int"
            append(Token(kind, word, pos, end))
        elif kind == "comment":
            if comments is not None:
                comment = m.group().rstrip()
                comments.append(Token(kind, comment, pos, pos + len(comment)))
        elif kind != "space":
            append(Token(kind, m.group(), pos, end))  # type: ignore[arg-type]
        pos = end
    append(Token("eof", "", length, length))
    return tokens


def _bad_character(source: SourceFile, pos: int) -> SyntaxDiagnostic:
    char = source.text[pos]
    if char in "\"'":
        line_end = source.text.find("\n", pos)
        end = len(source.text) if line_end < 0 else line_end
        return SyntaxDiagnostic(
            "unterminated string literal",
            source.span(pos, end),
            ["a string literal must end on the line where it starts; "
             "split long strings into adjacent literals"],
        )
    if char == "`":
        return SyntaxDiagnostic(
            "malformed built-in function name: expected `name`", source.span(pos, pos + 1)
        )
    if char == "@":
        return SyntaxDiagnostic("expected a block name after '@'", source.span(pos, pos + 1))
    shown = repr(char) if char.isprintable() else f"U+{ord(char):04X}"
    return SyntaxDiagnostic(f"unexpected character {shown}", source.span(pos, pos + 1))
