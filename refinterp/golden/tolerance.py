"""Tolerances of golden outputs, by operator class, and the one rule that applies them.

docs/golden.md ("Tolerances") is the reference; this module is its implementation, shared by
`refinterp golden` and the harness. A tolerance is stated per output and per back-end dtype
(float64 and float32): `(ulp, rtol, atol)`. Where a case also has error magnitudes m per element
(bounds.npz, golden.magnitudes), `allowed_errors` gives each analysed element its own allowance,
max(K·u_d·m, the class's floor), which replaces atol + rtol·|e| there (`within(..., allowed)`).

The rule, element by element, for a real output (expected value e from the golden file,
float64; actual value a from the back end, in its own dtype d: float64, float32, float16 or
bfloat16; a wider float is compared as float64):

- e is NaN: a must be NaN. e is ±inf: a must be the same infinity. e is finite but rounds to
  ±inf in d (beyond float32's range): a must be that infinity. Otherwise a must be finite;
- it passes if `ulps(a, round_d(e)) <= ulp` (ULPs counted in d, where -0.0 and 0.0 are the
  same point), or if `|a - e| <= atol + rtol * |e|` (computed in float64).

An int or bool output is always exact (a == e). The classes:

| class          | for                                             | ulp | rtol      | atol        |
|----------------|-------------------------------------------------|-----|-----------|-------------|
| exact          | data movement, selection, comparisons, min/max, | 0   | 0         | 0           |
|                | abs, neg, sign, floor/ceil/round, int/bool      |     |           |             |
| arithmetic     | one IEEE operation per element (+ - * / sqrt),  | 1   | 0         | 0           |
|                | correctly rounded: 0.5 ULP, one more for double |     |           |             |
|                | rounding when the golden is rounded to d        |     |           |             |
| transcendental | libm functions and short formulas of them       | 4   | 0         | 4 eps_d     |
| reduction      | sums, means, products, contractions, norms over | 4   | 2 n eps_d | 2 n eps_d A |
|                | n terms (the reduction length of the case)      |     |           |             |

eps_d is the machine epsilon of d (2^-52 for float64, 2^-23 for float32, 2^-10 for float16,
2^-7 for bfloat16); n the reduction
length (the operator's iterations per output element, at least 1); A the largest magnitude
among the case's real inputs (1 if there are none, at least 1). A rounding-error bound of a
floating sum of n terms is n eps sum|x_i| (Higham, Accuracy and Stability of Numerical
Algorithms, §4.2); 2 n eps A bounds it for terms of magnitude up to A relative to a result of
that magnitude, and rtol covers results far from zero.

A case stores the bounds of float64 and float32 (`STORED_DTYPES`). Every term of a bound is
eps_d times something that does not depend on d, so the bound of a narrower dtype (float16,
bfloat16) is the float32 bound with rtol and atol scaled by eps_d / eps_float32 and the same
ulp (`bound_of`). bfloat16 is ml_dtypes' (installed with onnx), imported only when an array
of that dtype is compared; without it such arrays do not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from refinterp.numeric.error_bounds import SAFETY
from refinterp.syntax import ast
from refinterp.syntax.visitor import children, walk

CLASSES = ("exact", "arithmetic", "transcendental", "reduction")
STORED_DTYPES = ("float64", "float32")  # the bounds a case's manifest states
# machine epsilon by back-end dtype; float16 and bfloat16 bounds derive from float32's
EPS = {"float64": 2.0 ** -52, "float32": 2.0 ** -23, "float16": 2.0 ** -10,
       "bfloat16": 2.0 ** -7}
ORDERED_INTS = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}  # bits ordered by itemsize


@dataclass(frozen=True)
class Bound:
    """One back-end dtype's tolerance: an element passes within `ulp` ULPs, or within
    `atol + rtol * |expected|`."""

    ulp: int = 0
    rtol: float = 0.0
    atol: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {"ulp": self.ulp, "rtol": self.rtol, "atol": self.atol}

    @staticmethod
    def from_json(data: dict[str, Any]) -> "Bound":
        return Bound(int(data.get("ulp", 0)), float(data.get("rtol", 0.0)),
                     float(data.get("atol", 0.0)))


def bounds(klass: str, length: int = 1, magnitude: float = 1.0,
           dtypes: tuple[str, ...] = STORED_DTYPES) -> dict[str, Bound]:
    """The tolerance of class `klass` for each back-end dtype of `dtypes` (those a manifest
    stores, by default; any of `EPS`), for a reduction length `length` and an input magnitude
    `magnitude` (both used by the reduction class only)."""
    if klass not in CLASSES:
        raise ValueError(f"unknown tolerance class '{klass}'; the classes are "
                         f"{', '.join(CLASSES)}")
    n, scale = max(int(length), 1), max(float(magnitude), 1.0)
    result = {}
    for dtype in dtypes:
        eps = EPS[dtype]
        if klass == "exact":
            result[dtype] = Bound()
        elif klass == "arithmetic":
            result[dtype] = Bound(ulp=1)
        elif klass == "transcendental":
            result[dtype] = Bound(ulp=4, atol=4 * eps)
        else:
            result[dtype] = Bound(ulp=4, rtol=2 * n * eps, atol=2 * n * eps * scale)
    return result


# The safety factor K of the per-element rule |a - e| <= K * u_d * m (u_d = eps_d / 2, m the
# error magnitude of the element): 2 covers the second-order terms of the first-order running
# error analysis while n * u_d stays small (docs/golden.md "Per-element error bounds").
MAGNITUDE_FACTOR = SAFETY


def magnitude_errors(magnitude: Any, dtype: str) -> np.ndarray:
    """K·u_d·m: what the error magnitudes m allow a back end computing in `dtype` (a name of
    `EPS`), u_d = eps_d / 2; NaN where m is NaN."""
    return MAGNITUDE_FACTOR * (EPS[dtype] / 2) * np.asarray(magnitude, np.float64)


def allowed_errors(magnitude: Any, expected: Any, tolerance: dict[str, Any],
                   dtype: str) -> np.ndarray:
    """The per-element absolute error a back end computing in `dtype` is allowed where a case
    has error magnitudes m (docs/golden.md "Tolerances"): the larger of K·u_d·m and the
    class's floor — its atol and rtol·|e| with the inputs' magnitude A taken as 1, so that no
    allowance ever grows with the inputs' magnitude, while implementations whose libm or
    formulas differ within the class's promise (4 ULPs and 4·eps_d for libm functions, 2·n·eps_d
    for n-term sums) still pass. NaN where m is NaN (the class rule then applies whole)."""
    floor = bounds(tolerance["class"], tolerance.get("reduction_length", 1), 1.0, (dtype,))[dtype]
    with np.errstate(invalid="ignore", over="ignore"):
        return np.fmax(magnitude_errors(magnitude, dtype),
                       floor.atol + floor.rtol * np.abs(np.asarray(expected, np.float64))) \
            + np.where(np.isnan(np.asarray(magnitude, np.float64)), np.nan, 0.0)


def bound_of(tolerance: dict[str, Any], dtype: str) -> Bound:
    """The bound of a manifest's `tolerance` object for back-end dtype `dtype` (a name of
    `EPS`): the stored one for float64 and float32; for a narrower dtype the float32 bound
    with rtol and atol scaled by eps_dtype / eps_float32 (the module docstring)."""
    if dtype in tolerance:
        return Bound.from_json(tolerance[dtype])
    stored = Bound.from_json(tolerance["float32"])
    ratio = EPS[dtype] / EPS["float32"]
    return Bound(stored.ulp, stored.rtol * ratio, stored.atol * ratio)


def _finfo(dtype: np.dtype) -> Any:
    """NumPy's or ml_dtypes' finfo of a floating dtype; None for any other dtype."""
    if dtype.kind == "f":
        return np.finfo(dtype)
    if dtype.kind != "V" or dtype.fields is not None:
        return None
    try:  # bfloat16 and the other ml_dtypes floats are NumPy 'V' dtypes
        import ml_dtypes
        return ml_dtypes.finfo(dtype)
    except (ImportError, TypeError, ValueError):
        return None


def is_real(dtype: Any) -> bool:
    """Whether `dtype` holds reals compared by the rule: a NumPy float, or an ml_dtypes float
    (bfloat16) of at most 8 bytes."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or (dtype.itemsize in ORDERED_INTS and _finfo(dtype) is not None)


def dtype_name(dtype: Any) -> str:
    """The back-end dtype whose tolerance applies to values of `dtype`: its name for float32,
    float16 and bfloat16, float64 for every other (wider floats are compared as float64)."""
    dtype = np.dtype(dtype)
    return dtype.name if dtype.name in EPS and is_real(dtype) else "float64"


def ulp_distance(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """ULPs between finite values, counted in `actual`'s dtype (a float of 1 to 8 bytes:
    float64, float32, float16, bfloat16): the number of representable values between them,
    -0.0 and 0.0 being one point. `expected` is rounded to that dtype first. Returned as
    float64 (exact below 2^53)."""
    dtype = np.dtype(actual.dtype)
    ints = ORDERED_INTS[dtype.itemsize]
    ordered = []
    for values in (np.asarray(actual, dtype), np.asarray(expected).astype(dtype)):
        bits = values.view(ints).astype(np.int64)
        sign_cleared = bits & np.int64(np.iinfo(ints).max)
        ordered.append(np.where(bits < 0, -sign_cleared, sign_cleared))
    a, e = ordered
    same_sign = (a >= 0) == (e >= 0)
    with np.errstate(over="ignore"):
        close = np.abs(a - e).astype(np.float64)
    apart = np.abs(a).astype(np.float64) + np.abs(e).astype(np.float64)
    return np.where(same_sign, close, apart)


def within(actual: Any, expected: Any, bound: Bound, allowed: Any = None) -> np.ndarray:
    """A boolean mask: which elements of `actual` pass against `expected` under `bound`
    (the rule of the module docstring), ULPs counted in `actual`'s dtype (a float wider than
    8 bytes in float64). Shapes must be equal; an int or bool `expected` is compared exactly.
    `allowed`, if given, is a per-element absolute error (`allowed_errors`: the case's error
    magnitudes): where it is finite it replaces `atol + rtol * |expected|`; where it is NaN
    (no analysis for that element) the class bound applies."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if not is_real(expected.dtype) or not is_real(actual.dtype):
        return np.asarray(actual == expected)
    if actual.dtype.itemsize > 8:  # long double: ULPs and rounding in float64
        actual = actual.astype(np.float64)
    e64 = expected.astype(np.float64)
    a64 = actual.astype(np.float64)
    finite = np.isfinite(e64)
    passed = np.where(np.isnan(e64), np.isnan(a64), a64 == e64)  # the non-finite expectations
    if not finite.any():
        return passed
    a_f, e_f = actual[finite], e64[finite]
    with np.errstate(over="ignore"):
        rounded = e_f.astype(actual.dtype)  # the golden in the back end's dtype
    overflow = np.isinf(rounded)
    ok = np.isfinite(a_f) & ~overflow
    with np.errstate(invalid="ignore", over="ignore"):
        limit = bound.atol + bound.rtol * np.abs(e_f)
        if allowed is not None:
            per_element = np.broadcast_to(np.asarray(allowed, np.float64), e64.shape)[finite]
            limit = np.where(np.isnan(per_element), limit, per_element)
        ok &= (ulp_distance(a_f, e_f) <= bound.ulp) | \
              (np.abs(a_f.astype(np.float64) - e_f) <= limit)
    # a finite golden beyond the back end's range (float32): that dtype's infinity is right
    ok |= overflow & (a_f.astype(np.float64) == rounded.astype(np.float64))
    passed = passed.copy()
    passed[finite] = ok
    return passed


# --------------------------------------------------------------------------- an operator's class

TRANSCENDENTAL = {"exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan",
                  "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "pow", "atan2",
                  "expm1", "log1p", "cbrt"}
ROUNDED = {"+", "-", "*", "/"}


def tolerance_class(definition: ast.OperatorDef) -> str:
    """The tolerance class of an operator's real outputs, from its kind (docs/golden.md,
    "Generated suites"): a composed or intrinsic operator `reduction` (several operations per
    element); a lowered one `reduction` with a `+=`, `-=` or `*=` update, `transcendental` with
    a libm function, `**` or more than one rounding operation in a formula, `arithmetic` with
    one, `exact` with none (data movement, selection, min/max)."""
    lower = definition.block("lower")
    if lower is None:
        return "reduction"
    klass = "exact"
    for entry in walk(lower):
        if not isinstance(entry, ast.Lowering):
            continue
        if entry.op in ("+=", "*=", "-="):
            return "reduction"
        names, operations = _operations(entry.value)
        rounded = len([op for op in operations if op in ROUNDED]) + ("sqrt" in names)
        if names & TRANSCENDENTAL or "**" in operations or rounded > 1:
            klass = "transcendental"
        elif klass == "exact" and rounded:
            klass = "arithmetic"
    return klass


def _operations(expr: ast.Node) -> tuple[set[str], list[str]]:
    """The builtin functions an expression calls and its binary operators (one per use), not
    inside subscripts (index arithmetic is exact); without recursion."""
    names: set[str] = set()
    operations: list[str] = []
    stack: list[ast.Node] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Builtin):
            names.add(node.name)
        elif isinstance(node, ast.Binary):
            operations.append(node.op)
        if not isinstance(node, ast.Subscript):
            stack.extend(children(node))
    return names, operations
