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
source span.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Literal, Union

import numpy as np


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
    description: str = ""


SPEC = Profile(
    "spec", int_division="floor", int_ceil_division="ceil", real_modulo="floor", frac="floor",
    min_max_nan="propagate", int_negative_power="exact",
    description="the draft spec: floor division, ceiling division, floored modulo")
KHRONOS = Profile(
    "khronos", int_division="trunc", int_ceil_division="away", real_modulo="fmod", frac="modf",
    min_max_nan="first", int_negative_power="trunc", mixed_int_real="promote",
    description="the Khronos C++ runtime: C division and modulo, fmod, modf, std::min/max, "
                "int promoted to real when mixed")
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

Number = Union[int, float, IntInfinity]
Scalar = Union[int, float, bool, str, IntInfinity]


def kind(value: object) -> str:
    """The SkriptND base type of a scalar value: 'int', 'real', 'bool', 'str' (bool before int,
    since Python's bool is an int)."""
    if type(value) is bool:
        return "bool"
    if isinstance(value, (int, IntInfinity)):
        return "int"
    if isinstance(value, float):
        return "real"
    if isinstance(value, str):
        return "str"
    return type(value).__name__


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


def int_divide(a: int, b: int, profile: Profile = SPEC) -> int:
    """`a / b` on ints. §2.4: "the regular operator / rounds downwards" (floor); khronos: C
    truncation toward zero. Division by zero is a NumericError in both."""
    if b == 0:
        raise NumericError(f"integer division by zero ({_show(a)} / 0)")
    if profile.int_division == "trunc":
        return _trunc_quotient(a, b)
    return a // b


def int_ceil_divide(a: int, b: int, profile: Profile = SPEC) -> int:
    """`a \\ b` on ints. §2.4: "division with rounding upwards" (ceiling); khronos: away from
    zero (`sknd::rt::ceil_div`: (x ± (|y|-1)) / y in C). Division by zero is an error."""
    if b == 0:
        raise NumericError(f"integer division by zero ({_show(a)} \\ 0)")
    if profile.int_ceil_division == "away":
        quotient = -(-abs(a) // abs(b))
        return quotient if (a < 0) == (b < 0) else -quotient
    return -(-a // b)


def int_modulo(a: int, b: int, profile: Profile = SPEC) -> int:
    """`a % b` on ints, consistent with `/`: a == b * (a / b) + a % b. spec: floored (the sign of
    the divisor, 0 <= a % b < b for b > 0); khronos: C `%` (the sign of the dividend)."""
    if b == 0:
        raise NumericError(f"integer modulo by zero ({_show(a)} % 0)")
    return a - b * int_divide(a, b, profile)


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
    if b == 0.0 or math.isnan(a) or math.isnan(b) or math.isinf(a):
        return math.nan
    if profile.real_modulo == "fmod":
        return math.fmod(a, b)
    return a % b  # Python's float % is floored: fmod, then + b if the signs differ


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


def _minimum(a: Number, b: Number, profile: Profile = SPEC) -> Number:
    """`a << b` (§2.4: minimum). Decision with a NaN operand: spec: NaN; khronos: `std::min(a,
    b)`, i.e. `b < a ? b : a`, which gives the left operand. Equal operands give the left one."""
    if profile.min_max_nan == "propagate" and (_is_nan(a) or _is_nan(b)):
        return math.nan
    return b if b < a else a


def _maximum(a: Number, b: Number, profile: Profile = SPEC) -> Number:
    """`a >> b` (§2.4: maximum). Decision with a NaN operand: spec: NaN; khronos: `std::max(a,
    b)`, i.e. `a < b ? b : a`, which gives the left operand. Equal operands give the left one."""
    if profile.min_max_nan == "propagate" and (_is_nan(a) or _is_nan(b)):
        return math.nan
    return b if a < b else a


def _is_nan(x: object) -> bool:
    return isinstance(x, float) and math.isnan(x)


# ----------------------------------------------------------------------------- operators


COMPARISON_OPS = ("<", "<=", ">", ">=", "==", "!=")
LOGICAL_OPS = ("&&", "||", "^", "=>")
ARITHMETIC_OPS = ("+", "-", "*", "/", "\\", "%", "**")
MIN_MAX_OPS = ("<<", ">>")
OP_ALIASES = {"<?": "<<", ">?": ">>"}  # the Khronos spelling of minimum and maximum

_COMPARISONS: dict[str, Callable[[Scalar, Scalar], bool]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
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
    ka, kb = kind(a), kind(b)
    if ka != kb:
        raise NumericError(f"'{op}' compares {ka} with {kb}; both operands must have one type")
    if ka not in ("int", "real", "bool", "str"):
        raise NumericError(f"'{op}' cannot compare values of type {ka}")
    if op not in _COMPARISONS:
        raise NumericError(f"unknown comparison '{op}'")
    return _COMPARISONS[op](a, b)


def binary(op: str, a: Scalar, b: Scalar, profile: Profile = SPEC) -> Scalar:
    """The value of `a op b` for two single values (§2.4 "Unary and binary operators").

    - `+ - * / \\ % **` on int/int (exact) or real/real (IEEE 754);
    - `<<` / `>>` (also spelled `<?` / `>?`): minimum / maximum of two ints or two reals;
    - `&& || ^ =>` on bools; `< <= > >= == !=` on any two values of one type (`compare`).
    Raises NumericError for a violated rule or operands of the wrong types.
    """
    op = OP_ALIASES.get(op, op)
    if profile.mixed_int_real == "promote":
        a, b = _promote_mixed(op, a, b)
    if op in _COMPARISONS:
        return compare(op, a, b)
    kinds = (kind(a), kind(b))
    if op in _LOGICAL:
        if kinds != ("bool", "bool"):
            raise NumericError(f"'{op}' needs two bools; got {kinds[0]} and {kinds[1]}")
        return _LOGICAL[op](a, b)
    if op not in MIN_MAX_OPS and op not in ARITHMETIC_OPS:
        raise NumericError(f"unknown operator '{op}'")
    if kinds not in (("int", "int"), ("real", "real")):
        raise NumericError(f"'{op}' needs two ints or two reals; got {kinds[0]} and {kinds[1]}")
    if op == "<<":
        return _minimum(a, b, profile)
    if op == ">>":
        return _maximum(a, b, profile)
    if kinds[0] == "int":
        return _int_binary(op, a, b, profile)
    return _real_binary(op, a, b, profile)


def _promote_mixed(op: str, a: Scalar, b: Scalar) -> tuple[Scalar, Scalar]:
    """The Khronos runtime's C++ conversions of mixed operands: in a comparison a bool next to
    an int or a real is 0 or 1 (`math.ne` takes two independent `type`s); then an int next to
    a real is converted to real."""
    kinds = {kind(a), kind(b)}
    if op in COMPARISON_OPS and "bool" in kinds and kinds & {"int", "real"}:
        a, b = (int(x) if isinstance(x, bool) else x for x in (a, b))
        kinds = {kind(a), kind(b)}
    if kinds == {"int", "real"}:
        a, b = _as_real(a), _as_real(b)
    return a, b


def _as_real(x: Scalar) -> Scalar:
    """An int as a real (int(±inf) as ±inf); other values unchanged."""
    if isinstance(x, IntInfinity):
        return math.inf if x.sign > 0 else -math.inf
    if isinstance(x, int) and not isinstance(x, bool):
        return float(x)
    return x


def _int_binary(op: str, a: int, b: int, profile: Profile) -> int:
    if isinstance(a, IntInfinity) or isinstance(b, IntInfinity):
        raise NumericError(f"'{op}' is not defined on int(inf) or int(-inf); they only mark "
                           f"extreme values (for comparisons, minimum and maximum)")
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        if a.bit_length() + b.bit_length() - 1 > MAX_INT_BITS:  # the product has at least this
            raise NumericError(f"a product of a {a.bit_length()}-bit and a {b.bit_length()}-bit "
                               f"int exceeds the compile-time integer limit of {MAX_INT_BITS} "
                               f"bits")
        return a * b
    if op == "/":
        return int_divide(a, b, profile)
    if op == "\\":
        return int_ceil_divide(a, b, profile)
    if op == "%":
        return int_modulo(a, b, profile)
    return int_power(a, b, profile)


def _real_binary(op: str, a: float, b: float, profile: Profile) -> float:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return real_divide(a, b)
    if op == "\\":
        return real_ceil_divide(a, b, profile)
    if op == "%":
        return real_modulo(a, b, profile)
    return real_power(a, b)


def unary(op: str, a: Scalar, profile: Profile = SPEC) -> Scalar:
    """`+a`, `-a` for int (int(±inf) included) and real; `!a` for bool (§2.4)."""
    k = kind(a)
    if op == "!":
        if k != "bool":
            raise NumericError(f"'!' needs a bool; got {k}")
        return not a
    if op not in ("+", "-"):
        raise NumericError(f"unknown unary operator '{op}'")
    if k not in ("int", "real"):
        raise NumericError(f"unary '{op}' needs an int or a real; got {k}")
    return -a if op == "-" else a


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
    k = kind(x)
    if type_name not in CASTABLE or k not in CASTABLE:
        if "str" in (type_name, k):
            raise NumericError("strings cannot be cast (§2.4 Casting); use string formatting")
        raise NumericError(f"cannot cast {k} to '{type_name}'")
    if type_name == "int":
        if k == "bool":
            return int(x)
        if k == "int":
            return x
        if math.isnan(x):
            raise NumericError("int(nan) has no value")
        if math.isinf(x):
            return INT_POS_INF if x > 0 else INT_NEG_INF
        return int(x)  # truncation toward zero, exact
    if type_name == "real":
        if isinstance(x, IntInfinity):
            return math.copysign(math.inf, x.sign)
        try:
            return float(x)
        except OverflowError:  # IEEE round-to-nearest overflows to ±inf
            return math.inf if x > 0 else -math.inf
    if isinstance(x, IntInfinity):
        return True
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
    if profile.frac == "modf":
        return math.modf(x)[0]
    if not math.isfinite(x):
        return math.nan
    return x - math.floor(x)


def _sign(x: Number) -> Number:
    """§4.2.1 "Element-wise sign": `x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0)` — so sign(0) = 0,
    sign(-0.0) = 0.0 and sign(nan) = 0.0 (the Khronos `sknd::rt::sign` is the same formula)."""
    if isinstance(x, float):
        return 1.0 if x > 0.0 else -1.0 if x < 0.0 else 0.0
    return 1 if x > 0 else -1 if x < 0 else 0


def _abs(x: Number) -> Number:
    """`abs`: int result for an int (abs(int(-inf)) = int(inf)); for a real, C `fabs` (the sign
    bit cleared, so abs(-0.0) = 0.0, abs(nan) = nan)."""
    if isinstance(x, float):
        return math.fabs(x)
    return abs(x)


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
    k = kind(x)
    if name in NUM_BUILTINS:
        if k not in ("int", "real"):
            raise NumericError(f"'{name}' needs an int or a real; got {k}")
        return _abs(x) if name == "abs" else _sign(x)
    if name not in REAL_BUILTINS:
        raise NumericError(f"unknown built-in function '{name}'")
    if k != "real":
        raise NumericError(f"'{name}' needs a real; got {k}")
    if name == "frac":
        return frac(x, profile)
    return _REAL_FUNCTIONS[name](x)
