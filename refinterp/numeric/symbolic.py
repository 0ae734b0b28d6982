"""Symbolic extents: integers known by an expression in symbols with bounds (spec §3.1, §2.4
"The identity operator"; docs/semantics.md "Shapes without values").

A dynamic extent checked without values (`refinterp shapes` with no input) is a `Symbol` with
its bounds (`s|64`: 0 <= s <= 64); arithmetic on it makes a `SymInt`, kept in a canonical form
so that two expressions that are the same after simplification compare identical:

- an affine form `c + k1*a1 + k2*a2 + ...` over *atoms*, sorted; an atom is a symbol or an
  opaque operation the affine form cannot hold — floor or ceiling division and modulo by
  anything but an exact divisor, a product of two symbolic values, a minimum or maximum the
  bounds do not decide — whose operands are themselves canonical;
- a result without atoms is a plain Python int, so constant folding is exact and the rest of
  refinterp sees ints wherever the answer does not depend on a symbol.

Every atom has an interval (a symbol's bounds; an operation's from its operands'), and so has
every form. A comparison is *decided* when the intervals of the two sides' difference settle
it, for every value the symbols may take ("holds for all values" / "fails for all values");
otherwise it raises `Undecided` — the caller lists it as a check left to run time (an
assert) or stops (a branch). `identical` is the `is` of §2.4: the same canonical form.
Python's `==` on SymInts is that identity too (so they can key caches); the value comparison
`==` of SkriptND is `compare("==", ...)`, which may be undecided.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

Bound = Union[int, None]  # None: unbounded (above; below, every extent is >= 0)


class Undecided(Exception):
    """A comparison of symbolic values that depends on the symbols' values."""

    def __init__(self, op: str, left: object, right: object) -> None:
        super().__init__(f"{describe(left)} {op} {describe(right)}")
        self.op, self.left, self.right = op, left, right


@dataclass(frozen=True, order=True)
class Symbol:
    """A dynamic extent known by name, with `low <= value <= high` (high None: unbounded). Its
    least value is 1 (docs/semantics.md "Shapes without values": an empty extent is left to a
    run with values)."""

    name: str
    low: int = 1
    high: Bound = None

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Operation:
    """An atom the affine form cannot hold: `op` of canonical operands (ints or SymInts)."""

    op: str          # "/", "\\", "%", "*", "<<", ">>"  (floor div, ceil div, mod, product,
    args: tuple      # min, max), operands canonical, sorted where op is commutative

    def __str__(self) -> str:
        if self.op in ("<<", ">>"):
            return f"{'min' if self.op == '<<' else 'max'}({', '.join(map(describe, self.args))})"
        left, right = (_parenthesised(a) for a in self.args)
        return f"{left} {self.op} {right}"


Atom = Union[Symbol, Operation]


def _key(atom: Atom) -> tuple:
    return (0, atom.name) if isinstance(atom, Symbol) else (1, str(atom))


class SymInt:
    """`const + sum(coefficient * atom)`: an int that depends on symbols (at least one term)."""

    __slots__ = ("terms", "const", "_hash")

    def __init__(self, terms: tuple[tuple[Atom, int], ...], const: int) -> None:
        self.terms = terms
        self.const = const
        self._hash = hash((terms, const))

    # ------------------------------------------------------------------ making forms

    @staticmethod
    def make(terms: dict[Atom, int], const: int) -> "int | SymInt":
        """The canonical value of an affine form: an int when no term is left."""
        kept = tuple(sorted(((a, k) for a, k in terms.items() if k), key=lambda t: _key(t[0])))
        return SymInt(kept, const) if kept else const

    def _dict(self) -> dict[Atom, int]:
        return dict(self.terms)

    # ------------------------------------------------------------------ identity

    def __eq__(self, other: object) -> bool:  # identity of forms (`is`), for caches
        return isinstance(other, SymInt) and self.terms == other.terms and \
            self.const == other.const

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"SymInt({describe(self)})"

    def __str__(self) -> str:
        return describe(self)

    def __bool__(self) -> bool:
        raise Undecided("!=", self, 0)

    def __index__(self) -> int:  # (range(), NumPy shapes: a value only a run knows)
        raise Undecided("is", self, "an int known before running")

    # ------------------------------------------------------------------ arithmetic

    def __add__(self, other: object) -> "int | SymInt":
        return add(self, other)

    __radd__ = __add__

    def __sub__(self, other: object) -> "int | SymInt":
        return add(self, scale(other, -1))

    def __rsub__(self, other: object) -> "int | SymInt":
        return add(other, scale(self, -1))

    def __neg__(self) -> "int | SymInt":
        return scale(self, -1)

    def __pos__(self) -> "SymInt":
        return self

    def __mul__(self, other: object) -> "int | SymInt":
        return multiply(self, other)

    __rmul__ = __mul__

    def __floordiv__(self, other: object) -> "int | SymInt":
        return divide("/", self, other)

    def __rfloordiv__(self, other: object) -> "int | SymInt":
        return divide("/", other, self)

    def __mod__(self, other: object) -> "int | SymInt":
        return divide("%", self, other)

    def __rmod__(self, other: object) -> "int | SymInt":
        return divide("%", other, self)

    def __lt__(self, other: object) -> bool:
        return compare("<", self, other)

    def __le__(self, other: object) -> bool:
        return compare("<=", self, other)

    def __gt__(self, other: object) -> bool:
        return compare(">", self, other)

    def __ge__(self, other: object) -> bool:
        return compare(">=", self, other)


Value = Union[int, SymInt]


def symbol(name: str, high: Bound = None, low: int = 1) -> SymInt:
    """A fresh symbolic extent `name` with `low <= name <= high`."""
    return SymInt(((Symbol(name, low, high), 1),), 0)


def is_symbolic(value: object) -> bool:
    return isinstance(value, SymInt)


def is_int(value: object) -> bool:
    """An int, known or symbolic (not a bool)."""
    return isinstance(value, (int, SymInt)) and not isinstance(value, bool)


def _form(value: Value) -> tuple[dict[Atom, int], int]:
    if isinstance(value, SymInt):
        return value._dict(), value.const
    return {}, int(value)


def add(a: Value, b: Value) -> Value:
    terms, const = _form(a)
    other, more = _form(b)
    for atom, k in other.items():
        terms[atom] = terms.get(atom, 0) + k
    return SymInt.make(terms, const + more)


def scale(a: Value, k: int) -> Value:
    terms, const = _form(a)
    return SymInt.make({atom: c * k for atom, c in terms.items()}, const * k)


def multiply(a: Value, b: Value) -> Value:
    if not isinstance(a, SymInt):
        return scale(b, a)
    if not isinstance(b, SymInt):
        return scale(a, b)
    return _atom(Operation("*", tuple(sorted((a, b), key=str))))


def _atom(operation: Operation) -> SymInt:
    return SymInt(((operation, 1),), 0)


def divide(op: str, a: Value, b: Value) -> Value:
    """Floor division (`/`), ceiling division (`\\`) or floored modulo (`%`) of `a` by `b`:
    exact on an affine form every part of which `b` divides; decided by the interval where
    the quotient is one value; else an atom. Division by a possible zero is undecided."""
    if not isinstance(a, SymInt) and not isinstance(b, SymInt):
        return _exact(op, a, b)
    low, high = interval(b)
    if low is not None and high is not None and low <= 0 <= high:
        raise Undecided("!=", b, 0)
    quotient = _ratio(a, b)
    if quotient is not None and op != "%":  # a = q * b exactly
        return quotient
    if quotient is not None:
        return 0
    if isinstance(b, int):
        terms, const = _form(a)
        if all(k % b == 0 for k in terms.values()) and const % b == 0:
            return 0 if op == "%" else SymInt.make({t: k // b for t, k in terms.items()},
                                                    const // b)
        if b > 0 and op != "%":  # c + b*q with 0 <= c' < b: the quotient q and constant part
            whole = SymInt.make({t: k // b for t, k in terms.items() if k % b == 0}, 0)
            rest = SymInt.make({t: k for t, k in terms.items() if k % b}, const)
            if whole != 0 and rest != a:
                return add(whole, divide(op, rest, b))
    alo, ahi = interval(a)
    blo, bhi = interval(b)
    if None not in (alo, ahi, blo, bhi):
        corners = {_exact(op, x, y) for x in (alo, ahi) for y in (blo, bhi)}
        if op != "%" and len(corners) == 1 and blo > 0:  # monotone in a for b > 0 fixed
            return corners.pop()
        if op == "%" and isinstance(b, int) and b > 0 and 0 <= alo and ahi < b:
            return a
    return _atom(Operation(op, (a, b)))


def _ratio(a: Value, b: Value) -> int | None:
    """q when a = q * b for every value of the symbols (b symbolic), else None."""
    if not isinstance(b, SymInt):
        return None
    atom, k = b.terms[0]
    terms, _ = _form(a)
    if terms.get(atom, 0) % k:
        return None
    q = terms.get(atom, 0) // k
    return q if a == scale(b, q) or (q == 0 and a == 0) else None


def _exact(op: str, a: int, b: int) -> int:
    if op == "/":
        return a // b
    if op == "%":
        return a % b
    return -(-a // b)


def minimum(a: Value, b: Value) -> Value:
    return _extreme("<<", a, b)


def maximum(a: Value, b: Value) -> Value:
    return _extreme(">>", a, b)


def _extreme(op: str, a: Value, b: Value) -> Value:
    if a == b:
        return a
    try:
        first = compare("<=", a, b)
        return (a if first else b) if op == "<<" else (b if first else a)
    except Undecided:
        return _atom(Operation(op, tuple(sorted((a, b), key=str))))


def interval(value: Value) -> tuple[int | None, int | None]:
    """Bounds of every value `value` may take (None: unbounded on that side)."""
    if not isinstance(value, SymInt):
        return value, value
    low: int | None = value.const
    high: int | None = value.const
    for atom, k in value.terms:
        alo, ahi = _atom_interval(atom)
        lo_part, hi_part = (alo, ahi) if k > 0 else (ahi, alo)
        low = None if low is None or lo_part is None else low + k * lo_part
        high = None if high is None or hi_part is None else high + k * hi_part
    return low, high


def _atom_interval(atom: Atom) -> tuple[int | None, int | None]:
    if isinstance(atom, Symbol):
        return atom.low, atom.high
    (alo, ahi), (blo, bhi) = interval(atom.args[0]), interval(atom.args[1])
    if atom.op == "<<":
        return _min_or_none(alo, blo), _min_or_none(ahi, bhi, unbounded_wins=False)
    if atom.op == ">>":
        return _max_or_none(alo, blo, unbounded_wins=False), _max_or_none(ahi, bhi)
    if atom.op == "*":
        if None in (alo, ahi, blo, bhi):
            nonnegative = alo is not None and alo >= 0 and blo is not None and blo >= 0
            return (0, None) if nonnegative else (None, None)
        products = [x * y for x in (alo, ahi) for y in (blo, bhi)]
        return min(products), max(products)
    if atom.op == "%" and blo is not None and blo > 0:
        return 0, None if bhi is None else bhi - 1
    if atom.op in ("/", "\\") and blo is not None and blo > 0 and alo is not None and alo >= 0:
        return _exact(atom.op, alo, bhi) if bhi is not None else 0, \
            None if ahi is None else _exact(atom.op, ahi, blo)
    return None, None


def _min_or_none(a: int | None, b: int | None, unbounded_wins: bool = True) -> int | None:
    if a is None or b is None:
        return None if unbounded_wins else (b if a is None else a)
    return min(a, b)


def _max_or_none(a: int | None, b: int | None, unbounded_wins: bool = True) -> int | None:
    if a is None or b is None:
        return None if unbounded_wins else (b if a is None else a)
    return max(a, b)


def compare(op: str, a: Value, b: Value) -> bool:
    """`a op b` (< <= > >= == !=) for every value of the symbols, or Undecided."""
    if not isinstance(a, SymInt) and not isinstance(b, SymInt):
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b,
                "!=": a != b}[op]
    difference = add(a, scale(b, -1))
    if not isinstance(difference, SymInt):
        return compare(op, difference, 0)
    low, high = interval(difference)
    decided: bool | None = None
    if op in ("==", "!="):
        if (low is not None and low > 0) or (high is not None and high < 0):
            decided = op == "!="
    elif op in ("<", ">="):
        if high is not None and high < 0:
            decided = op == "<"
        elif low is not None and low >= 0:
            decided = op == ">="
    else:  # "<=", ">"
        if high is not None and high <= 0:
            decided = op == "<="
        elif low is not None and low > 0:
            decided = op == ">"
    if decided is None:
        raise Undecided(op, a, b)
    return decided


def agree(a: object, b: object) -> bool | None:
    """Whether two values (ints, symbolic ints, packs of them, anything else by `==`) are
    equal: True for every value of the symbols, False for none of them, None when it depends
    on them (a check left to a run with values)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        if len(a) != len(b):
            return False
        answers = [agree(x, y) for x, y in zip(a, b)]
        return False if False in answers else None if None in answers else True
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        if not (is_int(a) and is_int(b)):
            return False
        try:
            return compare("==", a, b)
        except Undecided:
            return None
    return a == b


class Open:
    """A bool the symbols' bounds leave open (Kleene's third value): the result of a
    comparison `compare` cannot decide. Logic on it follows Kleene (`kleene`): `open || true`
    is true, `open && false` false, anything else open; using it as a plain bool (a branch,
    an assert's verdict) raises the comparison's `Undecided`."""

    __slots__ = ("why",)

    def __init__(self, why: Undecided) -> None:
        self.why = why

    def __bool__(self) -> bool:
        raise self.why

    def __repr__(self) -> str:
        return f"Open({self.why})"


def compare_open(op: str, a: Value, b: Value) -> "bool | Open":
    """`compare`, with an undecided answer as an `Open` bool instead of an exception."""
    try:
        return compare(op, a, b)
    except Undecided as why:
        return Open(why)


def kleene(op: str, a: "bool | Open", b: "bool | Open") -> "bool | Open":
    """`&& || ^ => == !=` on bools of which one may be `Open`."""
    if op == "=>":
        return kleene("||", negate(a), b)
    if op in ("&&", "||"):
        decisive = op == "||"
        if a is decisive or b is decisive:
            return decisive
        return a if isinstance(a, Open) else b
    return a if isinstance(a, Open) else b  # ^, ==, != with an open side: open


def negate(a: "bool | Open") -> "bool | Open":
    return a if isinstance(a, Open) else not a


class Extent(int):
    """A dynamic extent's value in a run, with the symbol it binds (`symbol`): an int in every
    respect (its arithmetic gives plain ints) except `is`, which compares symbols (`identical`):
    two dynamic extents are the same only as the same symbol, whatever their values (§2.4)."""

    symbol: str

    def __new__(cls, value: int, symbol: str) -> "Extent":
        made = super().__new__(cls, value)
        made.symbol = symbol
        return made


def identical(a: object, b: object) -> bool:
    """`is` on extents (§2.4): the same expression after simplification. A symbolic extent
    is never identical to a known int, nor to another symbol; in a run, a dynamic extent
    (`Extent`) is identical only to itself."""
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        return a == b
    if isinstance(a, Extent) or isinstance(b, Extent):
        return isinstance(a, Extent) and isinstance(b, Extent) and a.symbol == b.symbol
    return type(a) is type(b) and a == b


def symbols_of(value: object) -> list[Symbol]:
    """The symbols a value depends on, sorted by name."""
    found: set[Symbol] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            stack.extend(item)
        elif isinstance(item, SymInt):
            stack.extend(atom for atom, _ in item.terms)
        elif isinstance(item, Symbol):
            found.add(item)
        elif isinstance(item, Operation):
            stack.extend(item.args)
    return sorted(found)


def describe(value: object) -> str:
    """A symbolic value as SkriptND text: `2 * s + 1`, `(h + 1) / 2`, `min(s, 7)`."""
    if not isinstance(value, SymInt):
        return str(value)
    parts: list[str] = []
    for atom, k in value.terms:
        text = str(atom) if isinstance(atom, Symbol) or atom.op in ("<<", ">>") \
            else f"({atom})" if k != 1 else str(atom)
        magnitude = abs(k)
        term = text if magnitude == 1 else f"{magnitude} * {text}"
        parts.append(("- " if k < 0 else "+ ") + term if parts else ("-" if k < 0 else "") + term)
    if value.const:
        parts.append(f"{'-' if value.const < 0 else '+'} {abs(value.const)}")
    return " ".join(parts)


def _parenthesised(value: object) -> str:
    text = describe(value)
    simple = not isinstance(value, SymInt) or (len(value.terms) == 1 and value.const == 0 and
                                               value.terms[0][1] == 1 and
                                               isinstance(value.terms[0][0], Symbol))
    return text if simple or (isinstance(value, int) and value >= 0) else f"({text})"


def evaluate(value: object, values: dict[str, int]) -> int:
    """A symbolic value at given symbol values (`values` by name): what a run checks its
    concrete extents against."""
    if not isinstance(value, SymInt):
        return value  # type: ignore[return-value]
    total = value.const
    for atom, k in value.terms:
        if isinstance(atom, Symbol):
            total += k * values[atom.name]
            continue
        a, b = (evaluate(arg, values) for arg in atom.args)
        if atom.op == "*":
            part = a * b
        elif atom.op == "<<":
            part = min(a, b)
        elif atom.op == ">>":
            part = max(a, b)
        else:
            part = _exact(atom.op, a, b)
        total += k * part
    return total


def product(values: list[Value]) -> Value:
    """The product of extents (a tensor's size), symbolic where any is."""
    total: Value = 1
    for value in values:
        total = multiply(total, value)
    return total


__all__ = ["Extent", "Open", "Symbol", "Operation", "SymInt", "Undecided", "add", "agree", "compare_open",
           "kleene", "negate", "compare", "describe", "divide",
           "evaluate", "identical", "interval", "is_int", "is_symbolic", "maximum", "minimum", "multiply",
           "product", "scale", "symbol", "symbols_of"]

