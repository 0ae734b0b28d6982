"""THE one place for numeric rules (spec §2.3 "Type system", §2.4 "Unary and binary operators",
"Casting", "Built-in functions"; §4.2 element-wise math operators), under two profiles:

- `spec` (default): integer `/` rounds down (floor), `\\` rounds up (ceiling), `%` is consistent
  with `/` (floored modulo: the result has the sign of the divisor), and so on;
- `khronos`: what the Khronos SkriptND C++ runtime computes (its code generator emits C++
  operators and `std::` functions): `/` and `%` truncate toward zero, `\\` rounds away from zero
  (`sknd::rt::ceil_div`), real `%` is `std::fmod`, `frac` is `std::modf`, `<<`/`>>` are
  `std::min`/`std::max`.

In both: `round` is half away from zero, `int(real)` truncates toward zero, integer division or
modulo by zero is an error, real arithmetic is IEEE 754 (x / 0.0 is ±inf, sqrt(-1.0) is nan).
Every rule, the decisions where the spec is silent and the test that pins each one are listed in
docs/semantics.md.

Values: compile-time `int` is a Python int (unbounded: a mathematical integer, §2.3), `real` a
Python float, `bool` a Python bool (kept distinct from int: `type(x) is bool`), `str` a str;
`int(inf)` / `int(-inf)` are the sentinels `INT_POS_INF` / `INT_NEG_INF`. Callers pass Python
scalars (convert NumPy integer and bool scalars first: they are not recognised as int / bool).
The functions are pure; a violated rule raises `NumericError`, to which the caller attaches the
source span. Each rule is also given specialized to the kinds of its operands (`binary_function`
..., see "specialized rules" below): the function generated code calls per element.
"""

from __future__ import annotations

import functools
import math
import operator
from dataclasses import dataclass
from typing import Any, Callable, Literal, NamedTuple, Union

import numpy as np

from refinterp.numeric import symbolic
from refinterp.numeric.symbolic import SymInt


class NumericError(Exception):
    """A numeric rule was violated (division by zero, int(nan), an operand of the wrong type ...).

    `.message` is user-facing; callers attach the source span.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# ----------------------------------------------------------------------------- profiles


@dataclass(frozen=True)
class Profile:
    """A named set of choices where the draft spec and the Khronos runtime differ.

    Each field names the rule it selects; docs/semantics.md lists them side by side.
    """

    name: str
    int_division: Literal["floor", "trunc"]        # int `/` (and `%`, which follows it)
    int_ceil_division: Literal["ceil", "away"]     # int `\`: ceiling, or away from zero
    real_modulo: Literal["floor", "fmod"]          # real `%`: x - y*floor(x/y), or C fmod
    frac: Literal["floor", "modf"]                 # frac(x): x - floor(x), or C modf
    min_max_nan: Literal["propagate", "first"]     # `<<` `>>` with NaN: NaN, or the left operand
    int_negative_power: Literal["exact", "trunc"]  # int a ** b, b < 0: exact or error; or C trunc
    mixed_int_real: Literal["error", "promote"] = "error"  # int op real at run time: error, or
    #   the int converted to real (C++ promotion; in comparisons also a bool with a number, as 0/1)
    jagged_packs: Literal["error", "pad"] = "error"  # a pack whose items differ in a dynamic
    #   (`~|bound`) extent bound to shared extents: an error, or zero-padded to the largest
    using_in_inputs: Literal["hidden", "attributes"] = "hidden"  # @using symbols in @input
    #   shapes: not visible (§2.9), or those computed from attributes alone known before inputs
    packed_target_length: Literal["stated", "rest"] = "stated"  # `[b, c..]`: a packed target
    #   in brackets states its length (§2.10), or takes the rest of the pack (Khronos parser)
    main_graph_bounds: Literal["required", "optional"] = "required"  # a dynamic extent of a
    #   main-graph input: its upper bound must be written (§2.6), or may be left out (Khronos)
    description: str = ""

    def __hash__(self) -> int:
        """By name (equal profiles have equal names): cheap, as the specialized-rule caches
        (`binary_function` ...) hash a profile on every generic `binary` call."""
        return hash(self.name)


SPEC = Profile(
    "spec", int_division="floor", int_ceil_division="ceil", real_modulo="floor", frac="floor",
    min_max_nan="propagate", int_negative_power="exact",
    description="the draft spec: floor division, ceiling division, floored modulo")
KHRONOS = Profile(
    "khronos", int_division="trunc", int_ceil_division="away", real_modulo="fmod", frac="modf",
    min_max_nan="first", int_negative_power="trunc", mixed_int_real="promote",
    jagged_packs="pad", using_in_inputs="attributes", packed_target_length="rest",
    main_graph_bounds="optional",
    description="the Khronos C++ runtime: C division and modulo, fmod, modf, std::min/max, "
                "int promoted to real when mixed, packs of dynamic tensors padded")
PROFILES: dict[str, Profile] = {SPEC.name: SPEC, KHRONOS.name: KHRONOS}


# ----------------------------------------------------------------------------- int(±inf)


class IntInfinity:
    """`int(inf)` / `int(-inf)` (§2.4 Casting: "extremal values of operations working on
    integers, such as minimum/maximum searches").

    Two singletons, `INT_POS_INF` and `INT_NEG_INF`: greater (less) than every int, equal only to
    themselves, negatable, usable in min/max and comparisons; printed `int(inf)` / `int(-inf)`.
    `sign` is +1 or -1. Other arithmetic on them is a NumericError (see `binary`).
    """

    __slots__ = ("sign",)
    _instances: dict[int, "IntInfinity"] = {}

    def __new__(cls, sign: int) -> "IntInfinity":
        sign = 1 if sign > 0 else -1
        if sign not in cls._instances:
            instance = super().__new__(cls)
            object.__setattr__(instance, "sign", sign)
            cls._instances[sign] = instance
        return cls._instances[sign]

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("IntInfinity is immutable")

    def _rank(self, other: object) -> int | None:
        """-1, 0, 1 as self is less than, equal to, greater than `other`; None if unordered."""
        if isinstance(other, IntInfinity):
            return (self.sign > other.sign) - (self.sign < other.sign)
        if isinstance(other, int) and not isinstance(other, bool):
            return self.sign
        return None

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return hash(("IntInfinity", self.sign))

    def __lt__(self, other: object) -> bool:
        rank = self._rank(other)
        return NotImplemented if rank is None else rank < 0

    def __le__(self, other: object) -> bool:
        rank = self._rank(other)
        return NotImplemented if rank is None else rank <= 0

    def __gt__(self, other: object) -> bool:
        rank = self._rank(other)
        return NotImplemented if rank is None else rank > 0

    def __ge__(self, other: object) -> bool:
        rank = self._rank(other)
        return NotImplemented if rank is None else rank >= 0

    def __neg__(self) -> "IntInfinity":
        return IntInfinity(-self.sign)

    def __pos__(self) -> "IntInfinity":
        return self

    def __abs__(self) -> "IntInfinity":
        return IntInfinity(1)

    def __repr__(self) -> str:
        return "int(inf)" if self.sign > 0 else "int(-inf)"

    __str__ = __repr__

    def __reduce__(self) -> str:
        return "INT_POS_INF" if self.sign > 0 else "INT_NEG_INF"

    def __copy__(self) -> "IntInfinity":
        return self

    def __deepcopy__(self, memo: dict) -> "IntInfinity":
        return self


INT_POS_INF = IntInfinity(1)
INT_NEG_INF = IntInfinity(-1)


def slice_bound(bound: Any, length: int) -> Any:
    """A slice bound or step of a pack of `length` items as Python's slice takes it (§2.4
    Indexing; docs/semantics.md "Slices"): int(inf) and int(-inf) lie beyond every position,
    so they are clipped like any bound out of range (as a step they take the first position
    in their direction); any other value as it is."""
    return bound.sign * (length + 1) if isinstance(bound, IntInfinity) else bound

Number = Union[int, float, IntInfinity]
Scalar = Union[int, float, bool, str, IntInfinity]


def kind(value: object) -> str:
    """The SkriptND base type of a scalar value: 'int', 'real', 'bool', 'str' (bool before int,
    since Python's bool is an int)."""
    if type(value) is bool or isinstance(value, symbolic.Open):
        return "bool"
    if isinstance(value, (int, IntInfinity, SymInt)):
        return "int"
    if isinstance(value, float):
        return "real"
    if isinstance(value, str):
        return "str"
    return type(value).__name__


# ----------------------------------------------------------------------------- specialized rules
#
# Every rule of this module is also available specialized to the kinds of its operands
# (`binary_function`, `unary_function`, `cast_function`, `builtin_function`): the function that
# computes it on values of those kinds, and the kind of its result. The generic entry points
# (`binary`, `unary`, `cast`, `builtin`) choose that function by the kinds of their arguments and
# call it, so each rule has one definition; generated code (refinterp.lower.compiled) resolves it
# once per formula and calls it per element. The kinds are those of `kind`, except that "int"
# means an int that is never int(±inf), "int~" (`INT_OR_INF`) one that may be either, "int~+"
# one that may be int(inf) only and "int~-" int(-inf) only (`a >> 0` is never int(-inf)).
# The specialized functions are memoised by unbounded `lru_cache`s (faster than bounded ones on
# this hot path): their keys are drawn from finite sets — the operators and built-in names of
# the language, the kinds above and the profiles of `PROFILES` — so each cache holds at most a
# few hundred entries.

INT_OR_INF = "int~"
# the int kinds by the sentinels their values may be: "+" int(inf), "-" int(-inf)
_INT_KINDS: dict[frozenset[str], str] = {
    frozenset(): "int", frozenset("+"): "int~+", frozenset("-"): "int~-",
    frozenset("+-"): INT_OR_INF}
_SENTINELS: dict[str, frozenset[str]] = {k: signs for signs, k in _INT_KINDS.items()}
# an int known only symbolically (refinterp.numeric.symbolic: a dynamic extent checked without
# values); its rules are the symbolic ones (`_symbolic_rule`)
SYMBOLIC = "int?"
_SENTINELS[SYMBOLIC] = frozenset()
OPEN_BOOL = "bool?"  # a bool the symbols leave open (symbolic.Open): Kleene's logic


class Specialized(NamedTuple):
    """A rule for given operand kinds: `function` computes it on values of those kinds; `kind`
    is the kind of its result, or None when the operation is undefined on those kinds (then
    `function` raises its NumericError on any value)."""

    function: Callable[..., Scalar]
    kind: str | None


def _raising(message: str) -> Specialized:
    def fail(*operands: Scalar) -> Scalar:
        raise NumericError(message)
    return Specialized(fail, None)


def _same(x: Scalar) -> Scalar:
    return x


_KIND_OF_TYPE = {bool: "bool", int: "int", float: "real", str: "str", IntInfinity: INT_OR_INF,
                 SymInt: SYMBOLIC, symbolic.Open: OPEN_BOOL}


def _dispatch_kind(value: object) -> str:
    """The kind a generic entry point chooses the specialized rule by (`kind`, but "int~" for
    int(±inf)); the type lookup first, as it is on every generic call."""
    return _KIND_OF_TYPE.get(type(value)) or kind(value)


def kind_type(kind_: str) -> str:
    """The type of a kind, for the type rules and messages ("int~" is an int)."""
    return "int" if kind_ in _SENTINELS else "bool" if kind_ == OPEN_BOOL else kind_


def select_kind(a: str, b: str) -> str | None:
    """The kind of a value that is one of kind `a` or of kind `b` (a select's branches): an
    int kind may be the sentinels of either; None for different types."""
    if a == b:
        return a
    if a in _SENTINELS and b in _SENTINELS:
        return _INT_KINDS[_SENTINELS[a] | _SENTINELS[b]]
    return None


# ----------------------------------------------------------------------------- integers


MAX_INT_BITS = 1_000_000  # a compile-time int beyond this many bits is a diagnostic


def _show(n: int) -> str:
    """An int for a message: in full up to 30 digits, else its size (huge ints print slowly,
    and beyond sys.int_max_str_digits not at all)."""
    return str(n) if n.bit_length() <= 99 else f"<a {n.bit_length()}-bit int>"


def _trunc_quotient(a: int, b: int) -> int:
    """a / b rounded toward zero, exactly (C99 `/`)."""
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def _by_zero(what: str, a: int, op: str) -> NumericError:
    return NumericError(f"integer {what} by zero ({_show(a)} {op} 0)")


def _floor_divide(a: int, b: int) -> int:
    """int `/` under spec: floor."""
    if b == 0:
        raise _by_zero("division", a, "/")
    return a // b


def _trunc_divide(a: int, b: int) -> int:
    """int `/` under khronos: C truncation toward zero."""
    if b == 0:
        raise _by_zero("division", a, "/")
    return _trunc_quotient(a, b)


def _ceil_divide(a: int, b: int) -> int:
    """int `\\` under spec: ceiling."""
    if b == 0:
        raise _by_zero("division", a, "\\")
    return -(-a // b)


def _away_divide(a: int, b: int) -> int:
    """int `\\` under khronos: away from zero."""
    if b == 0:
        raise _by_zero("division", a, "\\")
    quotient = -(-abs(a) // abs(b))
    return quotient if (a < 0) == (b < 0) else -quotient


def _floor_modulo(a: int, b: int) -> int:
    """int `%` consistent with floor `/`: a - b * (a // b), which is Python's int `%`."""
    if b == 0:
        raise _by_zero("modulo", a, "%")
    return a % b


def _trunc_modulo(a: int, b: int) -> int:
    """int `%` consistent with truncating `/` (C `%`)."""
    if b == 0:
        raise _by_zero("modulo", a, "%")
    return a - b * _trunc_quotient(a, b)


_INT_DIVIDE = {"floor": _floor_divide, "trunc": _trunc_divide}      # by Profile.int_division
_INT_CEIL_DIVIDE = {"ceil": _ceil_divide, "away": _away_divide}     # Profile.int_ceil_division
_INT_MODULO = {"floor": _floor_modulo, "trunc": _trunc_modulo}      # by Profile.int_division


def int_divide(a: int, b: int, profile: Profile = SPEC) -> int:
    """`a / b` on ints. §2.4: "the regular operator / rounds downwards" (floor); khronos: C
    truncation toward zero. Division by zero is a NumericError in both."""
    return _INT_DIVIDE[profile.int_division](a, b)


def int_ceil_divide(a: int, b: int, profile: Profile = SPEC) -> int:
    """`a \\ b` on ints. §2.4: "division with rounding upwards" (ceiling); khronos: away from
    zero (`sknd::rt::ceil_div`: (x ± (|y|-1)) / y in C). Division by zero is an error."""
    return _INT_CEIL_DIVIDE[profile.int_ceil_division](a, b)


def int_modulo(a: int, b: int, profile: Profile = SPEC) -> int:
    """`a % b` on ints, consistent with `/`: a == b * (a / b) + a % b. spec: floored (the sign of
    the divisor, 0 <= a % b < b for b > 0); khronos: C `%` (the sign of the dividend)."""
    return _INT_MODULO[profile.int_division](a, b)


def _int_multiply(a: int, b: int) -> int:
    """int `*`, exact, within the compile-time size limit."""
    if a.bit_length() + b.bit_length() - 1 > MAX_INT_BITS:  # the product has at least this
        raise NumericError(f"a product of a {a.bit_length()}-bit and a {b.bit_length()}-bit "
                           f"int exceeds the compile-time integer limit of {MAX_INT_BITS} bits")
    return a * b


def int_power(a: int, b: int, profile: Profile = SPEC) -> int:
    """`a ** b` on ints, exact (§2.3: int is a mathematical integer).

    Decision for b < 0: spec: the result where it is an integer (a = 1 or a = -1), a NumericError
    otherwise (2 ** -1 = 1/2 has no int value); khronos: C++ `(int)std::pow(a, b)`, i.e. 1/a**|b|
    truncated toward zero (0 for |a| >= 2). `0 ** b` with b < 0 is an error in both (1/0).
    `0 ** 0` is 1.
    """
    if b < 0:
        if a == 0:
            raise NumericError(f"0 ** {_show(b)} divides by zero")
        if a == 1 or a == -1:
            return a if b % 2 else 1
        if profile.int_negative_power == "trunc":
            return 0
        raise NumericError(f"{_show(a)} ** {_show(b)} has no integer value (a negative exponent); "
                           f"use reals for fractional results")
    if abs(a) > 1 and b * (abs(a).bit_length() - 1) > MAX_INT_BITS:
        raise NumericError(f"{_show(a)} ** {_show(b)} exceeds the compile-time integer limit of "
                           f"{MAX_INT_BITS} bits")
    return a ** b


# ----------------------------------------------------------------------------- reals


def _ceil_real(x: float) -> float:
    """C `ceil` on a float: real result, the sign of a zero kept (ceil(-0.5) = -0.0)."""
    if not math.isfinite(x):
        return x
    return math.copysign(float(math.ceil(x)), x)


def _floor_real(x: float) -> float:
    """C `floor` on a float: real result, the sign of a zero kept (floor(-0.0) = -0.0)."""
    if not math.isfinite(x):
        return x
    return math.copysign(float(math.floor(x)), x)


def real_divide(a: float, b: float) -> float:
    """`a / b` on reals. Decision: IEEE 754 — x / ±0.0 is ±inf (the signs multiply), 0/0 and
    nan / 0 are nan; no error (like the tensor engines and the Khronos runtime)."""
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def real_modulo(a: float, b: float, profile: Profile = SPEC) -> float:
    """`a % b` on reals (the spec lists `%` for int only, but its own §4.2.2 `mod` operator
    applies it to `T: num`). Decision: spec: floored, x - y*floor(x/y) with the sign of y (like
    int `%`; NumPy `remainder`); khronos: C `fmod` (the sign of x). x % 0.0 is nan in both."""
    return _REAL_MODULO[profile.real_modulo](a, b)


def _real_remainder(remainder: Callable[[float, float], float]) -> Callable[[float, float], float]:
    """real `%` with `remainder` where both rules agree on nan (x % 0.0, inf % y, nan)."""
    def modulo(a: float, b: float) -> float:
        if b == 0.0 or math.isnan(b) or not math.isfinite(a):
            return math.nan
        return remainder(a, b)
    modulo.__name__ = f"real_modulo_{remainder.__name__}"
    return modulo


# by Profile.real_modulo; Python's float % is floored: fmod, then + b if the signs differ
_REAL_MODULO = {"floor": _real_remainder(operator.mod), "fmod": _real_remainder(math.fmod)}


def real_ceil_divide(a: float, b: float, profile: Profile = SPEC) -> float:
    """`a \\ b` on reals (the spec lists `\\` for int only). Decision: ceil(a / b) in both
    profiles: the Khronos runtime's real `ceil_div` is `std::ceil(x / y)` (unlike the int one)."""
    return _ceil_real(real_divide(a, b))


def real_power(a: float, b: float) -> float:
    """`a ** b` on reals: C / IEEE `pow` (pow(-8, 1/3) is nan, pow(0, -1) is inf, overflow is
    ±inf, pow(x, 0) is 1 even for nan)."""
    try:
        return math.pow(a, b)
    except (ValueError, OverflowError):
        with np.errstate(all="ignore"):
            return float(np.power(np.float64(a), np.float64(b)))


def _minimum(a: Number, b: Number) -> Number:
    """`a << b` (§2.4: minimum) as `std::min(a, b)`: `b < a ? b : a`. Equal operands give the
    left one; with a NaN operand, the left one. Ints (int(±inf) included) in both profiles,
    reals under khronos."""
    return b if b < a else a


def _maximum(a: Number, b: Number) -> Number:
    """`a >> b` (§2.4: maximum) as `std::max(a, b)`: `a < b ? b : a` (see `_minimum`)."""
    return b if a < b else a


def _minimum_nan(a: float, b: float) -> float:
    """`a << b` on reals under spec (decision): NaN if an operand is NaN, else `_minimum`."""
    if a != a or b != b:
        return math.nan
    return b if b < a else a  # _minimum, inline: no nested call per element


def _maximum_nan(a: float, b: float) -> float:
    """`a >> b` on reals under spec (decision): NaN if an operand is NaN, else `_maximum`."""
    if a != a or b != b:
        return math.nan
    return b if a < b else a  # _maximum, inline


# ----------------------------------------------------------------------------- operators


COMPARISON_OPS = ("<", "<=", ">", ">=", "==", "!=")
LOGICAL_OPS = ("&&", "||", "^", "=>")
ARITHMETIC_OPS = ("+", "-", "*", "/", "\\", "%", "**")
MIN_MAX_OPS = ("<<", ">>")
OP_ALIASES = {"<?": "<<", ">?": ">>"}  # the Khronos spelling of minimum and maximum

_COMPARISONS: dict[str, Callable[[Scalar, Scalar], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
    "!=": operator.ne,
}
_LOGICAL: dict[str, Callable[[bool, bool], bool]] = {
    "&&": lambda a, b: a and b, "||": lambda a, b: a or b, "^": lambda a, b: a != b,
    "=>": lambda a, b: (not a) or b,
}


def compare(op: str, a: Scalar, b: Scalar) -> bool:
    """`a op b` for op in < <= > >= == != (§2.4: "for arguments of any type (same type for both
    arguments)"). int/int (int(±inf) included) exactly, real/real by IEEE 754 (every comparison
    with nan is false except !=, -0.0 == 0.0), bool/bool with false < true, str/str by code points
    (lexicographic). int and real are never mixed (the type checker prevents it)."""
    return _comparison(op, kind(a), kind(b)).function(a, b)


@functools.lru_cache(maxsize=None)
def _comparison(op: str, left: str, right: str) -> Specialized:
    """`compare` for operands of kinds `left` and `right`."""
    left_kind, right_kind = left, right
    left, right = kind_type(left), kind_type(right)
    if left != right:
        return _raising(f"'{op}' compares {left} with {right}; both operands must have one type")
    if left not in ("int", "real", "bool", "str"):
        return _raising(f"'{op}' cannot compare values of type {left}")
    if op not in _COMPARISONS:
        return _raising(f"unknown comparison '{op}'")
    if SYMBOLIC in (left_kind, right_kind):  # decided for every value of the symbols, or open
        return Specialized(functools.partial(symbolic.compare_open, op), "bool")
    if OPEN_BOOL in (left_kind, right_kind) and op in ("==", "!="):
        return Specialized(functools.partial(symbolic.kleene, op), "bool")
    return Specialized(_COMPARISONS[op], "bool")


def binary(op: str, a: Scalar, b: Scalar, profile: Profile = SPEC) -> Scalar:
    """The value of `a op b` for two single values (§2.4 "Unary and binary operators").

    - `+ - * / \\ % **` on int/int (exact) or real/real (IEEE 754);
    - `<<` / `>>` (also spelled `<?` / `>?`): minimum / maximum of two ints or two reals;
    - `&& || ^ =>` on bools; `< <= > >= == !=` on any two values of one type (`compare`).
    Raises NumericError for a violated rule or operands of the wrong types.
    """
    return binary_function(op, _dispatch_kind(a), _dispatch_kind(b), profile).function(a, b)


@functools.lru_cache(maxsize=None)
def binary_function(op: str, left: str, right: str, profile: Profile = SPEC) -> Specialized:
    """`binary(op, a, b, profile)` for `a` of kind `left` and `b` of kind `right`."""
    op = OP_ALIASES.get(op, op)
    if profile.mixed_int_real == "promote":
        (left, to_left), (right, to_right) = _promote_mixed(op, left, right)
        if to_left is not None or to_right is not None:
            rule = _binary_rule(op, left, right, profile)
            apply, first, second = rule.function, to_left or _same, to_right or _same
            return Specialized(lambda a, b: apply(first(a), second(b)), rule.kind)
    return _binary_rule(op, left, right, profile)


Conversion = Union[Callable[[Scalar], Scalar], None]


def _promote_mixed(op: str, left: str, right: str) -> tuple[tuple[str, Conversion], ...]:
    """The Khronos runtime's C++ conversions of mixed operands: in a comparison a bool next to
    an int or a real is 0 or 1 (`math.ne` takes two independent `type`s); then an int next to
    a real is converted to real (`_int_to_real`). Per operand: its kind after conversion and the
    conversion (None: unchanged)."""
    kinds, conversions = [left, right], [None, None]
    types = {kind_type(left), kind_type(right)}
    if op in COMPARISON_OPS and "bool" in types and types & {"int", "real"}:
        for side, kind_ in enumerate(kinds):
            if kind_ == "bool":
                kinds[side], conversions[side] = "int", int
        types = {kind_type(k) for k in kinds}
    if types == {"int", "real"}:
        for side, kind_ in enumerate(kinds):
            if kind_type(kind_) == "int":
                kinds[side] = "real"
                conversions[side] = _int_to_real if conversions[side] is None else \
                    (lambda x: _int_to_real(int(x)))  # a bool, as 0 or 1, then real
    return tuple(zip(kinds, conversions))


def _binary_rule(op: str, left: str, right: str, profile: Profile) -> Specialized:
    """`binary_function` once mixed operands are converted (`op` without alias)."""
    if op in _COMPARISONS:
        return _comparison(op, left, right)
    a, b = kind_type(left), kind_type(right)
    if op in _LOGICAL:
        if (a, b) != ("bool", "bool"):
            return _raising(f"'{op}' needs two bools; got {a} and {b}")
        if OPEN_BOOL in (left, right):
            return Specialized(functools.partial(symbolic.kleene, op), "bool")
        return Specialized(_LOGICAL[op], "bool")
    if op not in MIN_MAX_OPS and op not in ARITHMETIC_OPS:
        return _raising(f"unknown operator '{op}'")
    if (a, b) not in (("int", "int"), ("real", "real")):
        return _raising(f"'{op}' needs two ints or two reals; got {a} and {b}")
    if SYMBOLIC in (left, right):
        return _symbolic_rule(op, profile)
    if op in MIN_MAX_OPS:
        nan = a == "real" and profile.min_max_nan == "propagate"
        function = {"<<": (_minimum, _minimum_nan), ">>": (_maximum, _maximum_nan)}[op][nan]
        if a == "real":
            return Specialized(function, "real")
        # the minimum may be int(-inf) if either operand may be, int(inf) only if both may be;
        # the maximum the other way round
        either = frozenset("-" if op == "<<" else "+")
        signs, other = _SENTINELS[left], _SENTINELS[right]
        return Specialized(function, _INT_KINDS[(signs & other) | ((signs | other) & either)])
    if a == "real":
        return Specialized(_real_arithmetic(op, profile), "real")
    function = _int_arithmetic(op, profile)
    if (left, right) != ("int", "int"):
        function = _finite_only(op, function)
    return Specialized(function, "int")


def _symbolic_rule(op: str, profile: Profile) -> Specialized:
    """An int operation with a symbolic operand (refinterp.numeric.symbolic): exact on the
    symbols' expressions; a division or power it cannot express for every value of the
    symbols raises `symbolic.Undecided`."""
    def power(a: symbolic.Value, b: symbolic.Value) -> symbolic.Value:
        if isinstance(b, SymInt) or b < 0:
            raise symbolic.Undecided("**", a, b)
        result: symbolic.Value = 1
        for _ in range(b):
            result = symbolic.multiply(result, a)
        return result

    def rounded(how: str, a: symbolic.Value, b: symbolic.Value) -> symbolic.Value:
        # the profiles' roundings agree where both operands are non-negative (extents)
        if (profile.int_division != "floor" and how != "\\") or \
                (profile.int_ceil_division != "ceil" and how == "\\"):
            if not (symbolic.compare(">=", a, 0) and symbolic.compare(">", b, 0)):
                raise symbolic.Undecided(how, a, b)
        return symbolic.divide(how, a, b)

    functions: dict[str, Callable[[Any, Any], Any]] = {
        "+": symbolic.add, "-": lambda a, b: symbolic.add(a, symbolic.scale(b, -1)),
        "*": symbolic.multiply, "**": power, "<<": symbolic.minimum, ">>": symbolic.maximum,
        "/": functools.partial(rounded, "/"), "\\": functools.partial(rounded, "\\"),
        "%": functools.partial(rounded, "%")}
    return Specialized(functions[op], SYMBOLIC)


def _int_arithmetic(op: str, profile: Profile) -> Callable[[int, int], int]:
    """`+ - * / \\ % **` on two ints (never int(±inf))."""
    if op == "**":
        return functools.partial(int_power, profile=profile)
    return {"+": operator.add, "-": operator.sub, "*": _int_multiply,
            "/": _INT_DIVIDE[profile.int_division],
            "\\": _INT_CEIL_DIVIDE[profile.int_ceil_division],
            "%": _INT_MODULO[profile.int_division]}[op]


def _finite_only(op: str, function: Callable[[int, int], int]) -> Callable[[int, int], int]:
    """`function` on ints that may be int(±inf): on those an error (they only mark extremes)."""
    def apply(a: Number, b: Number) -> int:
        if isinstance(a, IntInfinity) or isinstance(b, IntInfinity):
            raise NumericError(f"'{op}' is not defined on int(inf) or int(-inf); they only mark "
                               f"extreme values (for comparisons, minimum and maximum)")
        return function(a, b)
    return apply


# real `+ - *` as the Python operators, in Python code: the interpreter then computes them as it
# does in generated code (a NaN's sign from nan + -nan differs between CPython's two C paths)
_REAL_ADD: Callable[[float, float], float] = lambda a, b: a + b  # noqa: E731
_REAL_SUBTRACT: Callable[[float, float], float] = lambda a, b: a - b  # noqa: E731
_REAL_MULTIPLY: Callable[[float, float], float] = lambda a, b: a * b  # noqa: E731


def _real_arithmetic(op: str, profile: Profile) -> Callable[[float, float], float]:
    """`+ - * / \\ % **` on two reals."""
    return {"+": _REAL_ADD, "-": _REAL_SUBTRACT, "*": _REAL_MULTIPLY, "/": real_divide,
            "\\": functools.partial(real_ceil_divide, profile=profile),
            "%": _REAL_MODULO[profile.real_modulo], "**": real_power}[op]


def unary(op: str, a: Scalar, profile: Profile = SPEC) -> Scalar:
    """`+a`, `-a` for int (int(±inf) included) and real; `!a` for bool (§2.4)."""
    return unary_function(op, _dispatch_kind(a), profile).function(a)


@functools.lru_cache(maxsize=None)
def unary_function(op: str, operand: str, profile: Profile = SPEC) -> Specialized:
    """`unary(op, a, profile)` for `a` of kind `operand`."""
    k = kind_type(operand)
    if op == "!":
        if k != "bool":
            return _raising(f"'!' needs a bool; got {k}")
        if operand == OPEN_BOOL:
            return Specialized(symbolic.negate, "bool")
        return Specialized(operator.not_, "bool")
    if op not in ("+", "-"):
        return _raising(f"unknown unary operator '{op}'")
    if k not in ("int", "real"):
        return _raising(f"unary '{op}' needs an int or a real; got {k}")
    if op == "+":
        return Specialized(_same, operand)
    if k == "int":  # -int(inf) is int(-inf)
        operand = _INT_KINDS[frozenset({"+": "-", "-": "+"}[s] for s in _SENTINELS[operand])]
    return Specialized(operator.neg, operand)


# ----------------------------------------------------------------------------- casts


DEFAULTS: dict[str, Scalar] = {"int": 0, "real": 0.0, "bool": False, "str": ""}
CASTABLE = ("int", "real", "bool")


def default_value(type_name: str) -> Scalar:
    """`T()` (§2.4): "The default value is 0 and 0.0 for int and real respectively, false for
    bool and "" for str"."""
    if type_name not in DEFAULTS:
        raise NumericError(f"'{type_name}' has no default value")
    return DEFAULTS[type_name]


def cast(type_name: str, x: Scalar, profile: Profile = SPEC) -> Scalar:
    """`int(x)`, `real(x)`, `bool(x)` (§2.4 Casting: between int, real and bool; to itself is a
    no-op; strings cannot be cast).

    int(real) truncates toward zero, exactly (int(1e300) is a 301-digit int); int(±inf) is
    int(±inf) (`INT_POS_INF` / `INT_NEG_INF`); int(nan) is a NumericError; int(bool) is 0 / 1.
    real(int) rounds to the nearest float (an int beyond the float range gives ±inf);
    real(int(±inf)) is ±inf. bool(x) is x != 0 (so bool(nan) is true, bool(int(±inf)) true).
    """
    return cast_function(type_name, _dispatch_kind(x), profile).function(x)


@functools.lru_cache(maxsize=None)
def cast_function(type_name: str, operand: str, profile: Profile = SPEC) -> Specialized:
    """`cast(type_name, x, profile)` for `x` of kind `operand`."""
    k = kind_type(operand)
    if type_name not in CASTABLE or k not in CASTABLE:
        if "str" in (type_name, k):
            return _raising("strings cannot be cast (§2.4 Casting); use string formatting")
        return _raising(f"cannot cast {k} to '{type_name}'")
    if type_name == "int":
        if k == "bool":
            return Specialized(int, "int")
        if k == "int":
            return Specialized(_same, operand)
        return Specialized(_real_to_int, INT_OR_INF)
    if type_name == "real":
        return Specialized(_int_to_real if k == "int" else float, "real")
    return Specialized(_nonzero, "bool")


def _real_to_int(x: float) -> Number:
    """int(real): truncation toward zero, exact; int(±inf) is `INT_POS_INF` / `INT_NEG_INF`;
    int(nan) an error."""
    try:
        return int(x)
    except OverflowError:  # ±inf
        return INT_POS_INF if x > 0 else INT_NEG_INF
    except ValueError:  # nan
        raise NumericError("int(nan) has no value") from None


def _int_to_real(x: Number) -> float:
    """real(int): the nearest float; IEEE round-to-nearest overflows to ±inf, as int(±inf) is."""
    if isinstance(x, IntInfinity):
        return math.copysign(math.inf, x.sign)
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def _nonzero(x: Number | bool) -> bool:
    """bool(x): x != 0 (true for nan and for int(±inf), which equal no int)."""
    return bool(x != 0)


# ----------------------------------------------------------------------------- built-ins


REAL_BUILTINS = ("sqrt", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
                 "cosh", "tanh", "asinh", "acosh", "atanh", "round", "floor", "ceil", "frac",
                 "erf")
NUM_BUILTINS = ("abs", "sign")
BUILTINS = NUM_BUILTINS + REAL_BUILTINS


def round_half_away(x: float) -> float:
    """`round`: to the nearest integer, halves away from zero (both profiles; C `round`):
    round(2.5) = 3.0, round(-2.5) = -3.0, round(0.49999999999999994) = 0.0. Real result; the
    sign of a zero result is kept (round(-0.4) = -0.0); inf and nan are returned as they are."""
    if not math.isfinite(x):
        return x
    whole = math.trunc(x)
    if abs(x - whole) >= 0.5:  # x - trunc(x) is exact in binary floating point
        whole += 1 if x > 0 else -1
    return math.copysign(float(whole), x)


def frac(x: float, profile: Profile = SPEC) -> float:
    """`frac`: the fractional part. Decision: spec: x - floor(x), in [0, 1] (tiny negative x
    round to 1.0), frac(±inf) = nan; khronos: C `modf`, x - trunc(x), with the sign of x,
    frac(±inf) = ±0.0. frac(nan) = nan in both."""
    return _FRAC[profile.frac](x)


def _frac_floor(x: float) -> float:
    if not math.isfinite(x):
        return math.nan
    return x - math.floor(x)


_FRAC = {"floor": _frac_floor, "modf": lambda x: math.modf(x)[0]}  # by Profile.frac


def _sign_real(x: float) -> float:
    """§4.2.1 "Element-wise sign": `x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0)` — so sign(0) = 0,
    sign(-0.0) = 0.0 and sign(nan) = 0.0 (the Khronos `sknd::rt::sign` is the same formula)."""
    return 1.0 if x > 0.0 else -1.0 if x < 0.0 else 0.0


def _sign_int(x: Number) -> int:
    """`_sign_real` on an int (int(±inf) included)."""
    return 1 if x > 0 else -1 if x < 0 else 0


# `abs`: int result for an int (abs(int(-inf)) = int(inf)); for a real, C `fabs` (the sign bit
# cleared, so abs(-0.0) = 0.0, abs(nan) = nan)
_ABS = {"int": abs, "real": math.fabs}


_NUMPY_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
                "acosh": "arccosh", "atanh": "arctanh"}


def _ieee(name: str) -> Callable[[float], float]:
    """A real function with IEEE 754 / C99 Annex F results outside its domain: nan (sqrt(-1),
    log(-1), asin(2), acosh(0.5), sin(inf)), ±inf at a pole (log(0) = -inf, atanh(±1) = ±inf) and
    on overflow (exp(1000) = inf, sinh(-1000) = -inf); never an error. Python's math raises where
    C returns these, so those cases are computed by NumPy's C implementation."""
    python = getattr(math, name)
    numpy = getattr(np, _NUMPY_NAMES.get(name, name), None)

    def apply(x: float) -> float:
        try:
            return python(x)
        except (ValueError, OverflowError):
            with np.errstate(all="ignore"):
                return float(numpy(np.float64(x)))

    apply.__name__ = name
    return apply


_REAL_FUNCTIONS: dict[str, Callable[[float], float]] = {
    name: _ieee(name) for name in ("sqrt", "exp", "log", "sin", "cos", "tan", "asin", "acos",
                                   "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh")
}
_REAL_FUNCTIONS["erf"] = math.erf  # defined everywhere, never raises
_REAL_FUNCTIONS["round"] = round_half_away
_REAL_FUNCTIONS["floor"] = _floor_real
_REAL_FUNCTIONS["ceil"] = _ceil_real


def builtin(name: str, x: Scalar, profile: Profile = SPEC) -> Scalar:
    """A built-in function on one value (§2.4 "Built-in functions": "real arguments and real
    results" for sqrt ... frac — so round, floor and ceil give reals — and "both int and real
    arguments and corresponding results" for abs and sign). Also asin acos atan sinh cosh tanh
    erf, the functions of the §4.2.1 operators. Real functions follow IEEE 754 outside their
    domain (nan / ±inf, no error)."""
    return builtin_function(name, _dispatch_kind(x), profile).function(x)


@functools.lru_cache(maxsize=None)
def builtin_function(name: str, operand: str, profile: Profile = SPEC) -> Specialized:
    """`builtin(name, x, profile)` for `x` of kind `operand`."""
    k = kind_type(operand)
    if name in NUM_BUILTINS:
        if k not in ("int", "real"):
            return _raising(f"'{name}' needs an int or a real; got {k}")
        if name == "abs":  # abs(int(±inf)) is int(inf)
            return Specialized(_ABS[k], "real" if k == "real" else
                               _INT_KINDS[frozenset("+") if _SENTINELS[operand] else frozenset()])
        return Specialized(_sign_real, "real") if k == "real" else Specialized(_sign_int, "int")
    if name not in REAL_BUILTINS:
        return _raising(f"unknown built-in function '{name}'")
    if k != "real":
        return _raising(f"'{name}' needs a real; got {k}")
    if name == "frac":
        return Specialized(_FRAC[profile.frac], "real")
    return Specialized(_REAL_FUNCTIONS[name], "real")
