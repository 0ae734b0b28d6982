"""Input shapes for generated suites: concrete shapes that follow an operator's declared
input patterns (docs/golden.md, "Generated suites").

An input's declared type is a list of extents (`real[s..(d + 2)]`, `T^(rank)[s..(axis), z,
t..]`, `real[4 * n, c]`) and maybe a pack length (`..(n)`). A `Scheme` says how to choose what
the declaration leaves free: the value of each new extent symbol (`n`, `c`), the length of each
spread whose length is unknown (`s..`, `sx..(rx)` with `rx` unbound), the values of each new
spread symbol, the length of a pack. Everything the declaration fixes (a literal, an expression
of bound symbols and attributes, a symbol already bound by an earlier input) is computed with
the language's own compile-time evaluator. The shapes so made are only proposals: a case is
kept only if refinterp runs it without error (golden.generate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from refinterp.core.diagnostics import Diagnostic
from refinterp.language.expr import Environment, evaluate as evaluate_compile_time
from refinterp.syntax import ast

TYPICAL = (3, 4, 2, 5, 6, 7, 8, 9, 10, 11)  # distinct extents: a transposition shows
MAX_RANK = 8  # a larger proposed rank (a spread as long as an attribute of 100) is dropped
MAX_ELEMENTS = 2048  # a proposed input with more elements is dropped: cases stay fast to build


@dataclass(frozen=True)
class Scheme:
    """How to fill what a declaration leaves free (module docstring).

    `extent`: the values given to new extent symbols, in order of appearance (cycled), or a
    single value for all; `zero_at`: the index of the new extent symbol set to 0 (an empty
    case), or -1 (`zero_lead`: the first extent of each new spread symbol is 0 instead);
    `spread_rank`: the length of a spread whose length is free; `spreads`: the
    values of the k-th new spread symbol, when given (broadcast alignments); `pack`: the
    length of a pack whose length is free."""

    name: str
    extent: tuple[int, ...] = TYPICAL
    zero_at: int = -1
    spread_rank: int = 2
    spreads: tuple[tuple[int, ...], ...] = ()
    pack: int = 2
    zero_lead: bool = False   # the first extent of every new spread is 0 (an empty case)


SCHEMES = (
    Scheme("typical"),
    Scheme("uniform", extent=(3,)),
    Scheme("vector", spread_rank=1),
    Scheme("rank0", spread_rank=0),
    Scheme("small", extent=(1,), spread_rank=1, pack=1),
    Scheme("rank3", extent=(2, 3, 4, 5, 6, 7), spread_rank=3, pack=3),
    Scheme("broadcast", spread_rank=3, spreads=((2, 3, 4), (3, 4), (4,))),
    Scheme("broadcast_ones", spread_rank=3, spreads=((2, 1, 4), (3, 1), (1,))),
)
SPECIAL_SCHEME = Scheme("special", extent=(12,), spread_rank=1)


def empty_schemes(base: Scheme, count: int) -> list[Scheme]:
    """`base` with the first extent of every new spread 0, then with the j-th new extent
    symbol 0, for each j < count (empty cases)."""
    return [replace(base, name="empty", zero_lead=True),
            *(replace(base, name=f"empty{j}", zero_at=j) for j in range(count))]


@dataclass
class _Filler:
    """The state of one instantiation: bound values and counters of new symbols."""

    scheme: Scheme
    env: dict[str, Any]
    extents: int = 0
    spreads: int = 0
    fixed: set[str] = field(default_factory=set)

    def value(self, expr: ast.Expr | None) -> Any:
        """The compile-time value of `expr` under the bound names, or None if unknown."""
        if expr is None:
            return None
        try:
            return evaluate_compile_time(expr, Environment(dict(self.env)))
        except (Diagnostic, ArithmeticError, TypeError, ValueError, KeyError):
            return None

    def new_extent(self) -> int:
        k = self.extents
        self.extents += 1
        if k == self.scheme.zero_at:
            return 0
        return self.scheme.extent[k % len(self.scheme.extent)]

    def new_spread(self, length: int) -> tuple[int, ...]:
        k = self.spreads
        self.spreads += 1
        if k < len(self.scheme.spreads) and len(self.scheme.spreads[k]) == length:
            return self.scheme.spreads[k]
        dims = tuple(self.new_extent() for _ in range(length))
        return (0,) + dims[1:] if self.scheme.zero_lead and dims else dims

    def length_of(self, pack: ast.PackSpec) -> int | None:
        """The length of a spread: its expression's value, or a free one (binding the single
        unbound name of the expression to the scheme's rank and evaluating again)."""
        found = self.value(pack.length)
        if isinstance(found, int) and not isinstance(found, bool):
            return found
        names = [n for n in _names(pack.length) if n not in self.env]
        if isinstance(pack.length, ast.Name):
            rank = self.scheme.spread_rank
            if self.spreads < len(self.scheme.spreads):  # an alignment of the scheme's own
                rank = len(self.scheme.spreads[self.spreads])
            self.env[pack.length.name] = rank
            return rank
        if len(names) != 1:
            return None
        self.env[names[0]] = self.scheme.spread_rank
        found = self.value(pack.length)
        return found if isinstance(found, int) and not isinstance(found, bool) else None


def _names(expr: Any) -> list[str]:
    """The names an expression reads, in order."""
    if isinstance(expr, ast.Name):
        return [expr.name]
    found: list[str] = []
    if isinstance(expr, ast.Node):
        for value in vars(expr).values():
            items = value if isinstance(value, tuple) else (value,)
            for item in items:
                for name in _names(item):
                    if name not in found:
                        found.append(name)
    return found


def known_value(expr: ast.Expr | None, names: dict[str, Any]) -> Any:
    """The compile-time value of `expr` with the given names bound, or None if unknown."""
    return _Filler(SCHEMES[0], dict(names)).value(expr)


def fill_shapes(types: dict[str, ast.TypeSpec], scheme: Scheme, attributes: dict[str, Any],
                symbols: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Concrete shapes for the inputs `types` (in order) under `scheme`: a tuple per input, a
    list of tuples per pack input; None where the declarations cannot be filled (a spread of
    negative length, an extent that is no int). `symbols`, when given, receives every name
    bound (the attributes and the shape symbols: `s` a tuple, `n` an int)."""
    filler = _Filler(scheme, dict(attributes))
    if symbols is not None:
        filler.env = symbols
        symbols.update(attributes)
    shapes: dict[str, Any] = {}
    for name, spec in types.items():
        count = 1
        if spec.pack is not None:
            count = filler.value(spec.pack.length)
            if not isinstance(count, int) or isinstance(count, bool):
                count = scheme.pack
                if isinstance(spec.pack.length, ast.Name):
                    filler.env[spec.pack.length.name] = count
        items = []
        for index in range(count):
            shape = _fill_one(spec, filler, distinct_round=index)
            if shape is None:
                return None
            items.append(shape)
        shapes[name] = items if spec.pack is not None else items[0]
    return shapes


def _fill_one(spec: ast.TypeSpec, filler: _Filler, distinct_round: int) -> tuple | None:
    """One input's shape (a pack item: `distinct_round` is its index)."""
    extents = spec.shape or ()
    free = [e for e in extents if e.pack is not None and e.pack.length is None]
    rank = None
    if spec.rank is not None:
        rank = filler.value(ast.Name(name=spec.rank))
        if not isinstance(rank, int):
            fixed = len(extents) - len([e for e in extents if e.pack is not None])
            rank = fixed + filler.scheme.spread_rank
            filler.env[spec.rank] = rank
    lengths: list[int | None] = []
    for extent in extents:
        if extent.pack is None:
            lengths.append(1)
        elif extent.pack.length is None:
            lengths.append(None)
        else:
            lengths.append(filler.length_of(extent.pack))
    if any(n is None for e, n in zip(extents, lengths) if e.pack is None or
           e.pack.length is not None):
        return None
    if free:
        known = sum(n for n in lengths if n is not None)
        remainder = rank - known if rank is not None else None
        for k, extent in enumerate(extents):
            if lengths[k] is None:
                share = filler.scheme.spread_rank if remainder is None or len(free) > 1 \
                    else remainder
                lengths[k] = share
    if any(n is None or n < 0 for n in lengths):
        return None
    shape: list[int] = []
    for extent, length in zip(extents, lengths):
        dims = _extent_values(extent, length, filler, distinct_round)
        if dims is None:
            return None
        shape.extend(dims)
    if len(shape) > MAX_RANK or math.prod(shape) > MAX_ELEMENTS:
        return None
    return tuple(shape)


def _extent_values(extent: ast.Extent, length: int, filler: _Filler,
                   distinct_round: int) -> list[int] | None:
    """The dims of one extent item (`length` of them for a spread, else one)."""
    value = extent.value
    if isinstance(value, ast.Name) and extent.pack is not None:
        bound = filler.env.get(value.name)
        if isinstance(bound, tuple) and not (extent.distinct and distinct_round):
            return list(bound) if len(bound) == length else None
        dims = filler.new_spread(length)
        filler.env[value.name] = dims
        return list(dims)
    if isinstance(value, ast.Name) and value.name not in filler.env or \
            extent.distinct and distinct_round and isinstance(value, ast.Name):
        filler.env[value.name] = filler.new_extent()
    unbound = [n for n in _names(value) if n not in filler.env]
    if len(unbound) == 1:  # `4 * n` before n is bound: n is a new extent symbol
        filler.env[unbound[0]] = filler.new_extent()
    found = filler.value(value)
    if isinstance(found, bool) or not isinstance(found, int) or found < 0:
        if isinstance(found, tuple) and len(found) == length and \
                all(isinstance(v, int) and v >= 0 for v in found):
            return list(found)
        return None
    return [found] * (length if extent.pack is not None else 1)
