"""THE one place for numeric rules (spec §2.3, §2.4 "Unary and binary operators", "Casting",
"Built-in functions"), under two profiles:

- `spec` (default): integer `/` rounds down, `\\` rounds up, `%` is consistent with `/` (floored
  modulo: the result has the sign of the divisor);
- `khronos` (what the Khronos runtime does): `/` and `%` truncate toward zero like C, `\\` rounds
  away from zero, real `%` is C `fmod`, `frac` is the fractional part of C `modf`.

In both: `round` is half away from zero, `int(real)` truncates toward zero, integer division or
modulo by zero is an error. Every rule is listed in docs/semantics.md with the test that pins it.
Values: compile-time `int` is a Python int (unbounded), `real` a float, `bool` a bool, `str` a str.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import total_ordering


class NumericError(Exception):
    """A numeric rule was violated; `message` is user-facing, the caller attaches the span."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Profile:
    """A named set of choices where the spec and the Khronos runtime differ."""

    name: str
    truncating_division: bool  # `/` and `%` on ints truncate toward zero (C)
    ceil_away_from_zero: bool  # `\` rounds away from zero instead of up
    real_mod_is_fmod: bool     # real `%` is C fmod instead of floored modulo
    frac_is_modf: bool         # frac(x) = x - trunc(x) instead of x - floor(x)


SPEC = Profile("spec", False, False, False, False)
KHRONOS = Profile("khronos", True, True, True, True)
PROFILES = {"spec": SPEC, "khronos": KHRONOS}


@total_ordering
class IntInfinity:
    """`int(inf)` / `int(-inf)` (§2.4 Casting): the extreme integers, beyond every int."""

    def __init__(self, sign: int) -> None:
        self.sign = sign

    def __repr__(self) -> str:
        return "int(inf)" if self.sign > 0 else "int(-inf)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IntInfinity) and other.sign == self.sign

    def __hash__(self) -> int:
        return hash(("IntInfinity", self.sign))

    def __lt__(self, other: object) -> bool:
        if isinstance(other, IntInfinity):
            return self.sign < other.sign
        if isinstance(other, int) and not isinstance(other, bool):
            return self.sign < 0
        return NotImplemented

    def __neg__(self) -> "IntInfinity":
        return INT_NEG_INF if self.sign > 0 else INT_POS_INF


INT_POS_INF = IntInfinity(1)
INT_NEG_INF = IntInfinity(-1)


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, IntInfinity)):
        return "int"
    if isinstance(value, float):
        return "real"
    if isinstance(value, str):
        return "str"
    return type(value).__name__


# ----------------------------------------------------------------------------- integers


def int_divide(a: int, b: int, profile: Profile = SPEC) -> int:
    """`a / b` on ints: floor (spec §2.4: "/ rounds downwards"), or truncation (khronos)."""
    if b == 0:
        raise NumericError("integer division by zero")
    if profile.truncating_division:
        quotient = abs(a) // abs(b)
        return quotient if (a >= 0) == (b > 0) else -quotient
    return a // b


def int_ceil_divide(a: int, b: int, profile: Profile = SPEC) -> int:
    """`a \\ b` on ints: ceiling (spec §2.4: "rounding upwards"), or away from zero (khronos)."""
    if b == 0:
        raise NumericError("integer division by zero")
    if profile.ceil_away_from_zero:
        quotient = -(-abs(a) // abs(b))
        return quotient if (a >= 0) == (b > 0) else -quotient
    return -(-a // b)


def int_modulo(a: int, b: int, profile: Profile = SPEC) -> int:
    """`a % b` on ints, consistent with `/`: a == b * (a / b) + a % b."""
    if b == 0:
        raise NumericError("integer modulo by zero")
    return a - b * int_divide(a, b, profile)


MAX_INT_BITS = 1_000_000  # a compile-time int beyond this many bits is a diagnostic


def int_power(a: int, b: int) -> int:
    """`a ** b` on ints, exact. Decision: a negative exponent is an error (no int result)."""
    if b < 0:
        raise NumericError(f"integer power with a negative exponent ({a} ** {b}); "
                           f"use reals for fractional results")
    if abs(a) > 1 and b * (abs(a).bit_length() - 1) > MAX_INT_BITS:
        raise NumericError(f"{a} ** {b} exceeds the compile-time integer limit of "
                           f"{MAX_INT_BITS} bits")
    return a ** b


# ----------------------------------------------------------------------------- reals


def real_divide(a: float, b: float) -> float:
    """`a / b` on reals. Decision: IEEE 754 — x/0 is ±inf, 0/0 is nan (infinite arithmetics)."""
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def real_modulo(a: float, b: float, profile: Profile = SPEC) -> float:
    """`a % b` on reals. Decision: spec a - b*floor(a/b) (sign of b); khronos C fmod. x % 0 is nan."""
    if b == 0.0 or math.isinf(a) or math.isnan(a) or math.isnan(b):
        return math.nan
    if profile.real_mod_is_fmod:
        return math.fmod(a, b)
    if math.isinf(b):
        return a if (a >= 0) == (b > 0) or a == 0 else b
    result = math.fmod(a, b)
    if result != 0.0 and (result < 0) != (b < 0):
        result += b
    return result


def real_ceil_divide(a: float, b: float, profile: Profile = SPEC) -> float:
    """`a \\ b` on reals. Decision: ceil(a / b) (spec), away from zero (khronos)."""
    quotient = real_divide(a, b)
    if not math.isfinite(quotient):
        return quotient
    if profile.ceil_away_from_zero:
        return math.copysign(float(math.ceil(abs(quotient))), quotient)
    return float(math.ceil(quotient))


def real_power(a: float, b: float) -> float:
    """`a ** b` on reals: IEEE pow; a negative base with a fractional exponent is nan."""
    try:
        result = math.pow(a, b)
    except ValueError:
        return math.nan
    except OverflowError:
        return math.inf if a > 0 or float(b).is_integer() and int(b) % 2 == 0 else -math.inf
    except ZeroDivisionError:  # pragma: no cover - math.pow raises ValueError instead
        return math.inf
    return result


def _minimum(a, b):
    """`a << b` (min). Decision: a NaN operand gives NaN."""
    if isinstance(a, float) and math.isnan(a) or isinstance(b, float) and math.isnan(b):
        return math.nan
    return b if b < a else a


def _maximum(a, b):
    """`a >> b` (max). Decision: a NaN operand gives NaN."""
    if isinstance(a, float) and math.isnan(a) or isinstance(b, float) and math.isnan(b):
        return math.nan
    return b if b > a else a


# ----------------------------------------------------------------------------- operators


_COMPARISONS = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
}
_LOGICAL = {
    "&&": lambda a, b: a and b, "||": lambda a, b: a or b, "^": lambda a, b: a != b,
    "=>": lambda a, b: (not a) or b,
}


def binary(op: str, a, b, profile: Profile = SPEC):
    """The value of `a op b` for single values of one type (§2.4 Unary and binary operators).

    `<<`/`>>` (and `<?`/`>?`) are minimum and maximum.
    """
    kinds = (_kind(a), _kind(b))
    if op in _COMPARISONS:
        if kinds[0] != kinds[1]:
            raise NumericError(f"'{op}' compares {kinds[0]} with {kinds[1]}")
        return _COMPARISONS[op](a, b)
    if op in _LOGICAL:
        if kinds != ("bool", "bool"):
            raise NumericError(f"'{op}' needs bool operands; got {kinds[0]} and {kinds[1]}")
        return _LOGICAL[op](a, b)
    op = {"<?": "<<", ">?": ">>"}.get(op, op)
    if op == "<<":
        return _minimum(a, b)
    if op == ">>":
        return _maximum(a, b)
    if kinds == ("int", "int"):
        return _int_binary(op, a, b, profile)
    if kinds == ("real", "real"):
        return _real_binary(op, a, b, profile)
    raise NumericError(f"'{op}' needs two ints or two reals; got {kinds[0]} and {kinds[1]}")


def _int_binary(op: str, a, b, profile: Profile):
    if isinstance(a, IntInfinity) or isinstance(b, IntInfinity):
        raise NumericError(f"'{op}' is not defined on int(inf); it only marks extreme values")
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return int_divide(a, b, profile)
    if op == "\\":
        return int_ceil_divide(a, b, profile)
    if op == "%":
        return int_modulo(a, b, profile)
    if op == "**":
        return int_power(a, b)
    raise NumericError(f"unknown operator '{op}'")


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
    if op == "**":
        return real_power(a, b)
    raise NumericError(f"unknown operator '{op}'")


def unary(op: str, a, profile: Profile = SPEC):
    """`+a`, `-a` (int, real) and `!a` (bool)."""
    kind = _kind(a)
    if op == "!":
        if kind != "bool":
            raise NumericError(f"'!' needs a bool; got {kind}")
        return not a
    if kind not in ("int", "real"):
        raise NumericError(f"unary '{op}' needs an int or a real; got {kind}")
    return -a if op == "-" else a


# ----------------------------------------------------------------------------- casts


DEFAULTS = {"int": 0, "real": 0.0, "bool": False, "str": ""}


def default_value(type_name: str):
    """`T()` (§2.4): 0, 0.0, false, ""."""
    if type_name not in DEFAULTS:
        raise NumericError(f"'{type_name}' has no default value")
    return DEFAULTS[type_name]


def cast(type_name: str, x, profile: Profile = SPEC):
    """`int(x)`, `real(x)`, `bool(x)` (§2.4 Casting). int(real) truncates toward zero;
    int(±inf) is ±int(inf); int(nan) is an error; bool(x) is x != 0."""
    kind = _kind(x)
    if kind == "str" or type_name == "str":
        raise NumericError("strings cannot be cast")
    if type_name == "int":
        if isinstance(x, float):
            if math.isnan(x):
                raise NumericError("int(nan) has no value")
            if math.isinf(x):
                return INT_POS_INF if x > 0 else INT_NEG_INF
            return int(x)  # truncation toward zero
        return x if isinstance(x, IntInfinity) else int(x)
    if type_name == "real":
        if isinstance(x, IntInfinity):
            return math.inf if x.sign > 0 else -math.inf
        return float(x)
    if type_name == "bool":
        return bool(x.sign) if isinstance(x, IntInfinity) else x != 0
    raise NumericError(f"cannot cast to '{type_name}'")


# ----------------------------------------------------------------------------- built-ins


def round_half_away(x: float) -> float:
    """round: half away from zero (both profiles): round(2.5) = 3, round(-2.5) = -3."""
    if not math.isfinite(x):
        return x
    return math.copysign(math.floor(abs(x) + 0.5), x)


def _sign(x):
    if isinstance(x, float):
        if math.isnan(x):
            return math.nan
        return 1.0 if x > 0 else -1.0 if x < 0 else 0.0  # sign(-0.0) = 0.0
    return 1 if x > 0 else -1 if x < 0 else 0


def _domain(function, name: str):
    """Decision: outside its domain a real built-in gives IEEE's nan (or ±inf at a pole)."""

    def apply(x: float) -> float:
        try:
            return function(x)
        except ValueError:
            if name == "log" and x == 0.0:
                return -math.inf
            if name == "atanh" and abs(x) == 1.0:
                return math.copysign(math.inf, x)
            return math.nan
        except OverflowError:
            return math.inf

    return apply


_REAL_BUILTINS = {
    name: _domain(getattr(math, name), name)
    for name in ("sqrt", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
                 "cosh", "tanh", "asinh", "acosh", "atanh", "erf")
}


def builtin(name: str, x, profile: Profile = SPEC):
    """A built-in function of §2.4 on one value: real → real, except abs and sign (int or real,
    result of the same type)."""
    kind = _kind(x)
    if name in ("abs", "sign"):
        if kind not in ("int", "real"):
            raise NumericError(f"'{name}' needs an int or a real; got {kind}")
        return abs(x) if name == "abs" else _sign(x)
    if kind != "real":
        raise NumericError(f"'{name}' needs a real; got {kind}")
    if name == "round":
        return round_half_away(x)
    if name == "floor":
        return float(math.floor(x)) if math.isfinite(x) else x
    if name == "ceil":
        return float(math.ceil(x)) if math.isfinite(x) else x
    if name == "frac":
        if not math.isfinite(x):
            return math.nan
        whole = math.trunc(x) if profile.frac_is_modf else math.floor(x)
        return x - whole
    if name in _REAL_BUILTINS:
        return _REAL_BUILTINS[name](x)
    raise NumericError(f"unknown built-in function '{name}'")
