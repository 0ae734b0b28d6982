"""OCANNL's N-dimensional array literals (`%cd`/`%op`, docs/ocannl.md "Array literals") as NumPy
arrays in OCANNL's layout.

A list `[a; b]` is an output axis, a tuple `(a, b)` an input axis, an array `[|a; b|]` a batch
axis; the first element at each depth gives the axes (every other element must have the same
structure). As OCANNL's `Tensor.ndarray` does, the values fill the tensor in literal order,
linearly, in its layout: batch axes, then output axes, then input axes (each kind in the
order of nesting). A number alone is an output axis of extent 1, and may carry a dimension
label: `'q' 2.0`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from refinterp.core.diagnostics import Diagnostic
from refinterp.core.source import SourceFile

LITERAL_ERROR = "E0100"
_TOKEN = re.compile(r"\s+|\[\||\|\]|[\[\](),;]|'[^']*'|-?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)|.")
_KIND = {"[": ("output", "]", ";"), "(": ("input", ")", ","), "[|": ("batch", "|]", ";")}


@dataclass
class NdLiteral:
    """A parsed literal: its values (shaped batch + output + input), the extents of each kind
    of axis, and the dimension label of a labelled number ('' if none)."""

    values: np.ndarray
    batch: tuple[int, ...]
    output: tuple[int, ...]
    input: tuple[int, ...]
    label: str = ""


class _Reader:
    def __init__(self, text: str, path: str) -> None:
        self.source = SourceFile(path, text)
        self.tokens = [(m.group(), m.start()) for m in _TOKEN.finditer(text)
                       if not m.group().isspace()]
        self.at = 0

    def peek(self) -> tuple[str, int]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("", len(self.source.text))

    def take(self) -> tuple[str, int]:
        token = self.peek()
        self.at += 1
        return token

    def error(self, start: int, message: str) -> Diagnostic:
        return Diagnostic(message, span=self.source.span(start, start + 1), code=LITERAL_ERROR)

    def node(self) -> tuple[list, list[tuple[str, int]]]:
        """One element: (flat values, its axes as (kind, extent) from the outside in)."""
        token, start = self.take()
        if token in _KIND:
            kind, close, separator = _KIND[token]
            items, separated = [], False
            while self.peek()[0] != close:
                items.append((self.peek()[1], self.node()))
                if self.peek()[0] == separator:
                    self.take()
                    separated = True
                elif self.peek()[0] != close:
                    raise self.error(self.peek()[1], f"expected '{separator}' or '{close}'")
            self.take()
            if kind == "input" and len(items) == 1 and not separated:
                return items[0][1]  # `(x)` only groups: OCaml has no 1-tuples
            if not items:
                return [], [(kind, 0)]
            axes = items[0][1][1]
            for place, (_, inner) in items[1:]:
                if inner != axes:
                    raise self.error(place, "this element's axes differ from the first one's")
            return [v for _, (values, _) in items for v in values], [(kind, len(items))] + axes
        try:
            return [float(token)], []
        except ValueError:
            raise self.error(start, f"expected a number, '[', '(' or '[|'; found "
                                    f"'{token or 'the end'}'") from None


def parse(text: str, path: str = "<ndarray literal>") -> NdLiteral:
    """An OCANNL array literal (or a number, optionally labelled `'q' 2.0`) as an NdLiteral."""
    reader = _Reader(text, path)
    label = ""
    if reader.peek()[0].startswith("'"):
        label = reader.take()[0][1:-1]
    values, axes = reader.node()
    if reader.peek()[0]:
        raise reader.error(reader.peek()[1], "unexpected text after the literal")
    if label and axes:
        raise reader.error(0, "a dimension label prefixes a number, not an array")
    if not axes:
        axes = [("output", 1)]  # a number: an output axis of extent 1
    extents = {kind: tuple(n for k, n in axes if k == kind)
               for kind in ("batch", "output", "input")}
    shape = extents["batch"] + extents["output"] + extents["input"]
    return NdLiteral(np.array(values, dtype=np.float64).reshape(shape), extents["batch"],
                     extents["output"], extents["input"], label)
