"""The numeric rules of refinterp.numeric.rules, applied to whole NumPy arrays (the vector engine).

Each function here is the array form of one scalar rule of `refinterp.numeric.rules` and must give,
element by element, the value that rule gives (tests/numeric/test_array_semantics.py checks them on
edge values: nan, ±inf, ±0.0, int64 extremes, both profiles). Where the scalar rule raises a
NumericError, or where an int result might not fit in int64 (the reference computes with
unbounded ints and only checks what it stores), the array rule does not guess: it raises
`Refused`, and the vector engine hands that formula to the definition, which decides (an
exact value or the diagnostic). Only elements under the `active` mask count: an inactive
element is one the reference never evaluates (a skipped iteration, the other branch of
`?:`), so its value is irrelevant and may not raise.

Transcendental functions use NumPy's implementations, which may differ from the C library's in
the last unit of the last place; docs/semantics.md "Engines" states the resulting tolerance.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from refinterp.numeric import rules
from refinterp.numeric.rules import Profile
from refinterp.numeric.representation import INT64_MAX, INT64_MIN, kind_of

Mask = np.ndarray | None
SAFE_INT = 2.0 ** 62  # a float bound below which an int64 product or power cannot overflow


class Refused(Exception):
    """An engine cannot compute this here and the definition must decide (`reason` says why):
    the one refusal of every @lower engine (refinterp.lower.common re-exports it). Defined here,
    the lowest place that raises it: an array rule refuses where its scalar rule raises, or
    where the result may not fit in int64."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def as_array(value: Any) -> np.ndarray:
    """A scalar as a 0-d array of its kind; an int outside int64 (or int(±inf)) is Refused."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (np.bool_, np.int64, np.float64)):
        return np.asarray(value)
    k = rules.kind(value)
    if k == "bool":
        return np.array(value, dtype=np.bool_)
    if k == "real":
        return np.array(value, dtype=np.float64)
    if k == "int" and not isinstance(value, rules.IntInfinity) and \
            INT64_MIN <= value <= INT64_MAX:
        return np.array(value, dtype=np.int64)
    raise Refused(f"the value {value!r} has no int64/float64/bool array form")


def _any(condition: np.ndarray, active: Mask) -> bool:
    if active is not None:
        condition = condition & active
    return bool(np.any(condition))


def _promoted(op: str, a: np.ndarray, b: np.ndarray, profile: Profile
              ) -> tuple[np.ndarray, np.ndarray]:
    """rules.binary's mixed-operand rule: an error (spec) or, under khronos, a bool compared
    with a number as 0/1, then the int made real (rules._promote_mixed)."""
    kinds = {kind_of(a), kind_of(b)}
    if op in rules.COMPARISON_OPS and "bool" in kinds and kinds & {"int", "real"} \
            and profile.mixed_int_real == "promote":
        a, b = (x.astype(np.int64) if kind_of(x) == "bool" else x for x in (a, b))
        kinds = {kind_of(a), kind_of(b)}
    if kinds == {"int", "real"}:
        if profile.mixed_int_real != "promote":
            raise Refused(f"'{op}' mixes int and real")
        return a.astype(np.float64), b.astype(np.float64)
    return a, b


def binary(op: str, a: Any, b: Any, profile: Profile, active: Mask = None) -> np.ndarray:
    """`a op b` element-wise: rules.binary on every active element."""
    op = rules.OP_ALIASES.get(op, op)
    a, b = _promoted(op, as_array(a), as_array(b), profile)
    ka, kb = kind_of(a), kind_of(b)
    if op in rules.COMPARISON_OPS:
        if ka != kb:
            raise Refused(f"'{op}' compares {ka} with {kb}")
        return _COMPARE[op](a, b)
    if op in rules.LOGICAL_OPS:
        if (ka, kb) != ("bool", "bool"):
            raise Refused(f"'{op}' needs two bools")
        return _LOGICAL[op](a, b)
    if (ka, kb) not in (("int", "int"), ("real", "real")):
        raise Refused(f"'{op}' needs two ints or two reals; got {ka} and {kb}")
    if op in rules.MIN_MAX_OPS:
        return minimum(a, b, profile) if op == "<<" else maximum(a, b, profile)
    with np.errstate(all="ignore"):
        if ka == "int":
            return _int_binary(op, a, b, profile, active)
        return _real_binary(op, a, b, profile)


_COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
            "==": np.equal, "!=": np.not_equal}
_LOGICAL = {"&&": np.logical_and, "||": np.logical_or, "^": np.not_equal,
            "=>": lambda a, b: np.logical_or(np.logical_not(a), b)}


def minimum(a: np.ndarray, b: np.ndarray, profile: Profile) -> np.ndarray:
    """rules._minimum: `b < a ? b : a`; with NaN, NaN (spec) or that formula (khronos)."""
    result = np.where(b < a, b, a)
    if profile.min_max_nan == "propagate" and kind_of(result) == "real":
        result = np.where(np.isnan(a) | np.isnan(b), np.nan, result)
    return result


def maximum(a: np.ndarray, b: np.ndarray, profile: Profile) -> np.ndarray:
    """rules._maximum: `a < b ? b : a`; with NaN, NaN (spec) or that formula (khronos)."""
    result = np.where(a < b, b, a)
    if profile.min_max_nan == "propagate" and kind_of(result) == "real":
        result = np.where(np.isnan(a) | np.isnan(b), np.nan, result)
    return result


def _int_binary(op: str, a: np.ndarray, b: np.ndarray, profile: Profile,
                active: Mask) -> np.ndarray:
    if op == "+":
        result = a + b
        if _any(((a ^ result) & (b ^ result)) < 0, active):
            raise Refused("an int sum leaves int64")
        return result
    if op == "-":
        result = a - b
        if _any(((a ^ b) & (a ^ result)) < 0, active):
            raise Refused("an int difference leaves int64")
        return result
    if op == "*":
        if _any(np.abs(a.astype(np.float64) * b) >= SAFE_INT, active):
            raise Refused("an int product may leave int64")
        return a * b
    if op == "**":
        if _any(b < 0, active):
            raise Refused("an int power with a negative exponent")
        if _any(np.power(np.abs(a).astype(np.float64), b) >= SAFE_INT, active):
            raise Refused("an int power may leave int64")
        return np.power(a, np.maximum(b, 0))
    # / \ %: division by zero is an error; INT64_MIN / -1 leaves int64
    if _any(b == 0, active):
        raise Refused(f"an int '{op}' by zero")
    if _any((a == INT64_MIN) & (b == -1), active):
        raise Refused("an int quotient leaves int64")
    safe = np.where((b == 0) | ((a == INT64_MIN) & (b == -1)), 1, b)
    if op == "/":
        return int_divide(a, safe, profile)
    if op == "\\":
        return int_ceil_divide(a, safe, profile)
    return a - safe * int_divide(a, safe, profile)  # exact in wrapping int64 arithmetic


def int_divide(a: np.ndarray, b: np.ndarray, profile: Profile) -> np.ndarray:
    """rules.int_divide (b != 0): floor (spec) or toward zero (khronos)."""
    floor = np.floor_divide(a, b)
    if profile.int_division == "trunc":
        inexact = np.remainder(a, b) != 0
        return np.where(inexact & ((a < 0) != (b < 0)), floor + 1, floor)
    return floor


def int_ceil_divide(a: np.ndarray, b: np.ndarray, profile: Profile) -> np.ndarray:
    """rules.int_ceil_divide (b != 0): ceiling (spec) or away from zero (khronos)."""
    floor = np.floor_divide(a, b)
    inexact = np.remainder(a, b) != 0
    ceiling = np.where(inexact, floor + 1, floor)
    if profile.int_ceil_division == "away":
        return np.where((a < 0) != (b < 0), floor, ceiling)
    return ceiling


def _real_binary(op: str, a: np.ndarray, b: np.ndarray, profile: Profile) -> np.ndarray:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return a / b  # IEEE 754, as rules.real_divide
    if op == "\\":
        return np.ceil(a / b)
    if op == "%":
        if profile.real_modulo == "fmod":
            return np.fmod(a, b)
        return np.remainder(a, b)  # floored, nan for x % 0, inf % y, nan operands
    return np.power(a, b)


def unary(op: str, a: Any, profile: Profile, active: Mask = None) -> np.ndarray:
    """rules.unary element-wise."""
    a = as_array(a)
    k = kind_of(a)
    if op == "!":
        if k != "bool":
            raise Refused("'!' needs a bool")
        return np.logical_not(a)
    if k not in ("int", "real"):
        raise Refused(f"unary '{op}' needs an int or a real")
    if op == "+":
        return a
    if k == "int" and _any(a == INT64_MIN, active):
        raise Refused("-int64 minimum leaves int64")
    return -a


def cast(type_name: str, a: Any, profile: Profile, active: Mask = None) -> np.ndarray:
    """rules.cast element-wise (int(real) truncates; int(nan), int(±inf) and ints beyond
    int64 are Refused)."""
    a = as_array(a)
    k = kind_of(a)
    if type_name not in rules.CASTABLE or k not in rules.CASTABLE:
        raise Refused(f"cannot cast {k} to '{type_name}'")
    if type_name == k:
        return a
    if type_name == "int":
        if k == "bool":
            return a.astype(np.int64)
        with np.errstate(invalid="ignore"):
            if _any(~(np.abs(a) < 2.0 ** 63), active):  # nan, ±inf, or beyond int64
                raise Refused("int() of nan, inf or a real beyond int64")
            return np.where(np.abs(a) < 2.0 ** 63, np.trunc(a), 0.0).astype(np.int64)
    if type_name == "real":
        return a.astype(np.float64)
    return a != 0


_NUMPY_FUNCTIONS = {"sqrt": np.sqrt, "exp": np.exp, "log": np.log, "sin": np.sin,
                    "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
                    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
                    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
                    "floor": np.floor, "ceil": np.ceil}
_erf = np.vectorize(math.erf, otypes=[np.float64])


def builtin(name: str, a: Any, profile: Profile, active: Mask = None) -> np.ndarray:
    """rules.builtin element-wise."""
    a = as_array(a)
    k = kind_of(a)
    if name in rules.NUM_BUILTINS:
        if k not in ("int", "real"):
            raise Refused(f"'{name}' needs an int or a real")
        if name == "abs":
            if k == "int" and _any(a == INT64_MIN, active):
                raise Refused("abs(int64 minimum) leaves int64")
            return np.abs(a)
        one = 1.0 if k == "real" else 1
        zero = 0.0 if k == "real" else 0
        return np.where(a > zero, one, np.where(a < zero, -one, zero)).astype(a.dtype)
    if name not in rules.REAL_BUILTINS or k != "real":
        raise Refused(f"'{name}' of {k}")
    with np.errstate(all="ignore"):
        if name == "round":
            return round_half_away(a)
        if name == "frac":
            if profile.frac == "modf":
                return np.modf(a)[0]
            # x - floor(x); nan for ±inf; a zero keeps its sign (the int floor in rules.frac)
            return np.where(a == 0.0, a, a - np.floor(a))
        if name == "erf":
            return _erf(a) if a.size else a.copy()
        return _NUMPY_FUNCTIONS[name](a)


def round_half_away(a: np.ndarray) -> np.ndarray:
    """rules.round_half_away: halves away from zero, the sign of a zero kept."""
    whole = np.trunc(a)
    rounded = np.where(np.abs(a - whole) >= 0.5, whole + np.sign(a), whole)
    return np.where(np.isfinite(a), np.copysign(rounded, a), a)
