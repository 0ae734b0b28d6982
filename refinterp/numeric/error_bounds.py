"""Running error analysis: the error magnitude of every elementary operation (docs/golden.md,
"Per-element error bounds").

Beside every real value v that a definition computes in float64, the bounds engine
(refinterp.lower.bounds) carries an *error magnitude* m(v) >= 0 such that an implementation
evaluating the same formulas in a floating type d (each elementary operation correctly rounded
with unit roundoff u = eps_d / 2, every libm function within its allowance, sums in any order)
computes v within u·m(v), up to second-order terms (Higham, *Accuracy and Stability of
Numerical Algorithms*, 2nd ed., §2.2 the model fl(x op y) = (x op y)(1 + δ) + η, |δ| <= u;
§3.3 running error analysis; §4.2 summation in any order). Magnitudes are in units of u, so
one magnitude serves every d; only representability, overflow and the decisions below depend
on d (`Precision`).

Markers: m = +inf is *unknown* (the value depends on something without a rule, an intrinsic);
m = NaN is *unbounded*: a decision (a comparison, floor, a cast to int, the sign of a divisor,
a domain boundary) lies within the operands' error bounds, so an implementation may decide
otherwise and nothing bounds its value. Non-finite values carry m = 0: an implementation must
produce the same infinity or NaN (the golden rule already demands it).

An operand's actual error is assumed to be at most δ(m) = K·u·m (`Precision.perturbation`),
K the safety factor of the acceptance test; nonlinear rules bound the change of the result over
that whole interval (the mean-value theorem: the largest |f'| on [x - δ, x + δ]), so a rule
stays valid where the first-order derivative alone would not (near a pole or a zero of f').

Every function here is pure and takes Python floats (never NumPy scalars).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
import numpy as np

NAN = math.nan
INF = math.inf

# glibc's documented maximal errors in ULPs for x86_64 in round-to-nearest (the manual's table
# "Known Maximum Errors in Math Functions", generated from sysdeps/x86_64/fpu/libm-test-ulps),
# the larger of the float and double columns. A function within k ULPs errs by at most
# k·ulp(f) <= 2k·u·|f|, or k subnormal spacings (2k·η) for a result that underflows: its
# rounding term is 2·LIBM_ULPS[f]·(|f| + η/u) (in units of u). sqrt is correctly rounded
# (IEEE 754), like + - * /.
LIBM_ULPS: dict[str, int] = {
    "exp": 1, "log": 1, "sin": 1, "cos": 1, "tan": 1, "asin": 1, "acos": 1, "atan": 1,
    "erf": 1, "pow": 1, "sinh": 2, "cosh": 2, "tanh": 2, "asinh": 2, "acosh": 2, "atanh": 2,
}
SAFETY = 2.0  # K: the acceptance test's factor on u·m; it covers the second-order terms


@dataclass(frozen=True)
class Precision:
    """The floating type d an implementation computes in: its unit roundoff `u`, its precision
    `digits` (significand bits), its exponent range, and the safety factor K."""

    name: str
    u: float
    digits: int
    min_exponent: int      # frexp exponent of the smallest normal number
    largest: float
    safety: float = SAFETY

    @property
    def underflow(self) -> float:
        """η/u: the absolute error of a result rounded into the subnormal range (half the
        smallest subnormal, Higham §2.2), in units of u. Gradual underflow is assumed."""
        return math.ldexp(0.5, self.min_exponent - self.digits) / self.u

    def perturbation(self, m: float) -> float:
        """δ(m) = K·u·m: the largest error the acceptance test allows a value of magnitude m."""
        return self.safety * self.u * m if m else 0.0

    def representable(self, x: float) -> bool:
        """Whether the float64 value `x` is exactly a value of d (non-finite values are)."""
        if x == 0.0 or not math.isfinite(x):
            return True
        if abs(x) > self.largest:
            return False
        mantissa, exponent = math.frexp(x)
        bits = self.digits if exponent >= self.min_exponent else \
            self.digits - (self.min_exponent - exponent)
        return bits > 0 and math.ldexp(mantissa, bits).is_integer()

    def rounding(self, r: float, exact: bool, underflow: bool = True) -> float:
        """The rounding term of a correctly rounded result r: none when the operands are exact
        in d (`exact`) and r is a value of d (fl_d(x) = fl_d(fl_64(x)) for + - * / sqrt, as
        53 >= 2·24 + 2); else |r|, plus η/u for a result that may underflow (not for + and -,
        whose subnormal results are exact)."""
        if exact and self.representable(r):
            return 0.0
        return abs(r) + (self.underflow if underflow else 0.0)


def precision(name: str) -> Precision:
    """The `Precision` of d = "float32" or "float64"."""
    if name not in PRECISIONS:
        raise ValueError(f"unknown floating type '{name}'; choose one of "
                         f"{', '.join(PRECISIONS)}")
    return PRECISIONS[name]


PRECISIONS = {
    "float32": Precision("float32", 2.0 ** -24, 24, -125, float(np.finfo(np.float32).max)),
    "float64": Precision("float64", 2.0 ** -53, 53, -1021, float(np.finfo(np.float64).max)),
}


def worse(a: float, b: float) -> float:
    """The worse of two magnitudes or markers: NaN (unbounded) over inf (unknown) over the
    larger number."""
    if a != a or b != b:
        return NAN
    return a if a >= b else b


def markers(*ms: float) -> float:
    """The magnitude of a non-finite result: 0 (it must be met exactly) unless an operand is
    unknown (inf) or unbounded (NaN), which passes on."""
    flag = 0.0
    for m in ms:
        if m != m or math.isinf(m):
            flag = worse(flag, m)
    return flag


def term(coefficient: float, m: float) -> float:
    """|coefficient|·m with 0·anything = 0 (an operand that does not matter adds nothing, even
    an unknown one) and NaN for a non-finite coefficient (a singular derivative)."""
    if m == 0.0 or coefficient == 0.0:
        return 0.0
    if not math.isfinite(coefficient):
        return NAN
    return abs(coefficient) * m


def decision(distance: float, m: float, p: Precision) -> float:
    """0 if a decision whose operand lies `distance` from its threshold is robust under an
    error of magnitude m (exact operands always are), else the marker: inf for an unknown
    operand, NaN for a decision within the error bound."""
    if m == 0.0:
        return 0.0
    if m != m:
        return NAN
    if math.isinf(m):
        return INF
    return 0.0 if distance > p.perturbation(m) else NAN


def to_integer(x: float, m: float, p: Precision, half: bool = False) -> float:
    """The marker of a decision x -> integer (floor, ceil, trunc, int(x); `half`: round, whose
    steps are at the half-integers). From 2^(digits-1) on every value of d is an integer, so
    any error there changes the integer."""
    if m == 0.0 or not math.isfinite(x):
        return 0.0
    if abs(x) >= 2.0 ** (p.digits - 1):
        return decision(0.0, m, p)
    shifted = x - 0.5 if half else x
    return decision(abs(shifted - round(shifted)), m, p)


# ----------------------------------------------------------------------------- operators


def add(r: float, ma: float, mb: float, p: Precision) -> float:
    """a ± b: |a ± b| + m(a) + m(b) (the rounding term only where it can round)."""
    if not math.isfinite(r):
        return markers(ma, mb)
    return p.rounding(r, ma == 0.0 and mb == 0.0, underflow=False) + ma + mb


def multiply(a: float, ma: float, b: float, mb: float, r: float, p: Precision) -> float:
    """a·b: |ab| + |b|·m(a) + |a|·m(b), plus the exact second-order term K·u·m(a)·m(b)
    (|a'b' - ab| <= |b|δa + |a|δb + δa·δb)."""
    if not math.isfinite(r):
        return markers(ma, mb)
    second = p.safety * p.u * ma * mb if ma and mb else 0.0
    return p.rounding(r, ma == 0.0 and mb == 0.0) + term(b, ma) + term(a, mb) + second


def divide(a: float, ma: float, b: float, mb: float, r: float, p: Precision) -> float:
    """a/b: |a/b| + (m(a) + |a/b|·m(b)) / (|b| - δ(m(b))), the mean-value bound of
    |a'/b' - a/b|; unbounded when the divisor's error interval reaches 0."""
    db = p.perturbation(mb)
    if mb and not abs(b) > 2.0 * db:
        return NAN if mb == mb and not math.isinf(mb) else worse(mb, 0.0)
    if not math.isfinite(r):
        return markers(ma, mb)
    moved = ma + term(r, mb)
    return p.rounding(r, ma == 0.0 and mb == 0.0) + (moved / (abs(b) - db) if moved else 0.0)


def modulo(a: float, ma: float, b: float, mb: float, r: float, p: Precision) -> float:
    """a % b = a - b·q, q the integer quotient (floor or trunc of a/b). fmod is exact, so exact
    operands give r up to its one rounding (floored: fmod + b). Otherwise a decision at every
    integer value of a/b, which moves by at most (δa + |a/b|·δb) / (|b| - δb); then
    |r| + m(a) + (|a/b| + 1)·m(b)."""
    if not math.isfinite(r) or not math.isfinite(a) or not math.isfinite(b) or b == 0.0:
        return markers(ma, mb)
    if ma == 0.0 and mb == 0.0:
        return p.rounding(r, True)
    quotient = a / b
    db = p.perturbation(mb)
    if not abs(b) > 2.0 * db:
        return markers(ma, mb) or NAN
    flag = to_integer(quotient, (ma + term(quotient, mb)) / (abs(b) - db), p)
    if flag:
        return flag
    return p.rounding(r, False) + ma + term(abs(quotient) + 1.0, mb)


def power(a: float, ma: float, b: float, mb: float, r: float, p: Precision) -> float:
    """a ** b (libm pow): L·|r| and the change of a^b over the operands' error box, from
    ln|a^b| = b·ln|a|: |Δ ln| <= δb·max|ln t| + |b|·|ln(1 - δa/|a|)|, so
    |Δ| <= |r|·(e^Δln - 1). A negative base needs an exact exponent; a zero base an exact
    base and a positive exponent."""
    if not math.isfinite(r):
        return markers(ma, mb)
    rounding = 2 * LIBM_ULPS["pow"] * (abs(r) + p.underflow)
    if ma == 0.0 and mb == 0.0:
        return rounding
    if ma != ma or mb != mb:
        return NAN
    da, db = p.perturbation(ma), p.perturbation(mb)
    if a == 0.0:
        return rounding if ma == 0.0 and b - db > 0.0 else NAN
    if (a < 0.0 and mb) or not abs(a) > 2.0 * da:
        return NAN
    if math.isinf(ma) or math.isinf(mb):
        return INF
    logs = max(abs(math.log(abs(a) - da)), abs(math.log(abs(a) + da)))
    change = db * logs - abs(b) * math.log1p(-da / abs(a))
    if change > 1.0:  # the box is too wide for a linear bound to mean anything
        return NAN
    return rounding + abs(r) * math.expm1(change) / (p.safety * p.u)


def lipschitz(a: float, ma: float, b: float, mb: float, r: float, p: Precision) -> float:
    """min and max (`<<`, `>>`), no rounding: the chosen operand's m where the choice is robust
    (|a - b| beyond both error bounds), else the worse m (1-Lipschitz in each operand)."""
    if not math.isfinite(r):
        return markers(ma, mb)
    if ma == mb:
        return ma
    if math.isfinite(a) and math.isfinite(b) and \
            abs(a - b) > p.perturbation(ma) + p.perturbation(mb):
        return ma if r == a else mb
    return worse(ma, mb)


def compare(a: float, ma: float, b: float, mb: float, p: Precision) -> float:
    """a < b, a == b, ...: robust unless |a - b| lies within the operands' error bound. A NaN
    operand is NaN in every type (robust); equal infinities are exact."""
    if a != a or b != b or not (math.isfinite(a) and math.isfinite(b)):
        return 0.0
    return decision(abs(a - b), worse(ma, 0.0) + worse(mb, 0.0), p)


# ----------------------------------------------------------------------------- functions


def _sup_abs_derivative(name: str, x: float, d: float) -> float:
    """The largest |f'(t)| for t in [x - d, x + d]; NaN where the interval reaches a pole or
    leaves the domain."""
    ax = abs(x)
    low = max(0.0, ax - d)  # the smallest |t|
    if name == "exp":
        return math.exp(x + d)
    if name == "log":
        return 1.0 / (x - d) if x - d > 0.0 else NAN
    if name == "sqrt":
        return 0.5 / math.sqrt(x - d) if x - d > 0.0 else NAN
    if name == "sin":
        return min(1.0, abs(math.cos(x)) + d)
    if name == "cos":
        return min(1.0, abs(math.sin(x)) + d)
    if name == "tan":
        c = abs(math.cos(x)) - d
        return 1.0 / (c * c) if c > 0.0 else NAN
    if name in ("asin", "acos"):
        return 1.0 / math.sqrt(1.0 - (ax + d) ** 2) if ax + d < 1.0 else NAN
    if name == "atan":
        return 1.0 / (1.0 + low * low)
    if name == "sinh":
        return math.cosh(ax + d)
    if name == "cosh":
        return math.sinh(ax + d)
    if name == "tanh":
        return 1.0 - math.tanh(low) ** 2
    if name == "asinh":
        return 1.0 / math.sqrt(1.0 + low * low)
    if name == "acosh":
        return 1.0 / math.sqrt((x - d) ** 2 - 1.0) if x - d > 1.0 else NAN
    if name == "atanh":
        return 1.0 / (1.0 - (ax + d) ** 2) if ax + d < 1.0 else NAN
    if name == "erf":
        return 2.0 / math.sqrt(math.pi) * math.exp(-low * low)
    raise KeyError(name)


SMOOTH_FUNCTIONS = frozenset(LIBM_ULPS) - {"pow"} | {"sqrt"}


def function(name: str, x: float, m: float, r: float, p: Precision) -> float:
    """A libm function f (or sqrt): L·|f(x)| (L = 2·LIBM_ULPS[f]; sqrt correctly rounded) plus
    the largest |f'| over x's error interval times m(x); unbounded where that interval reaches
    a pole or the edge of f's domain."""
    if not math.isfinite(r) or not math.isfinite(x):
        return markers(m)
    if name == "sqrt":
        rounding = p.rounding(r, m == 0.0)
    else:
        rounding = 2 * LIBM_ULPS[name] * (abs(r) + p.underflow)
    if m == 0.0:
        return rounding
    if m != m:
        return NAN
    if math.isinf(m):
        return INF
    try:
        slope = _sup_abs_derivative(name, x, p.perturbation(m))
    except OverflowError:  # exp, sinh, cosh over an interval reaching beyond float64
        return NAN
    return rounding + term(slope, m) if slope == slope else NAN


# ----------------------------------------------------------------------------- arrays


def entering(values: np.ndarray, p: Precision) -> np.ndarray:
    """The magnitudes of values that enter a computation from outside (inputs, parameters,
    literals, constants): 0 where a value is exactly a value of d (or an int or bool, or not
    finite), |v| where an implementation must round it, NaN where it overflows d."""
    values = np.asarray(values)
    if values.dtype.kind != "f":
        return np.zeros(values.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = values.astype(np.float32 if p.name == "float32" else np.float64)
        inexact = rounded.astype(np.float64) != values
    finite = np.isfinite(values)
    overflow = finite & ~np.isfinite(rounded)
    m = np.where(inexact & finite, np.abs(values), 0.0)
    return np.where(overflow, NAN, m)


def entering_scalar(value: float, p: Precision) -> float:
    """`entering` for one float."""
    if not math.isfinite(value):
        return 0.0
    if abs(value) > p.largest:
        return NAN
    return 0.0 if p.representable(value) else abs(value)


def overflowed(r: float, m: float, p: Precision) -> float:
    """m, or NaN for a finite result beyond d's range (d overflows where float64 does not)."""
    return NAN if abs(r) > p.largest and math.isfinite(r) else m

