"""Token-level mutations of SkriptND text, for robustness fuzzing.

A variant deletes, duplicates, swaps or truncates tokens of a valid file; the parser must answer
every variant with a diagnostic or a tree, never with any other exception.
"""

from __future__ import annotations

from hypothesis import strategies as st

from refinterp.core.source import SourceFile
from refinterp.syntax.lexer import tokenize


def token_texts(text: str) -> list[str]:
    """The file as a list of token texts, each with the white space that preceded it."""
    source = SourceFile("corpus", text)
    pieces, previous_end = [], 0
    for token in tokenize(source)[:-1]:
        pieces.append(text[previous_end:token.end])
        previous_end = token.end
    return pieces


def _apply(pieces: list[str], edits: list[tuple[str, int, int]]) -> str:
    pieces = list(pieces)
    for kind, i, j in edits:
        if not pieces:
            break
        i %= len(pieces)
        j %= len(pieces)
        if kind == "delete":
            del pieces[i]
        elif kind == "duplicate":
            pieces.insert(i, pieces[i])
        elif kind == "swap":
            pieces[i], pieces[j] = pieces[j], pieces[i]
        elif kind == "truncate":
            pieces = pieces[:i]
    return "".join(pieces)


def mutated(texts: list[str]) -> st.SearchStrategy[str]:
    """Variants of the given texts with one to four token edits."""
    split = [token_texts(t) for t in texts]
    edit = st.tuples(st.sampled_from(["delete", "duplicate", "swap", "truncate"]),
                     st.integers(0, 10**6), st.integers(0, 10**6))
    return st.builds(_apply, st.sampled_from(split), st.lists(edit, min_size=1, max_size=4))
