"""Intrinsics of the bundled `ocannl` module: the two primitive operations of OCANNL whose
interpretation (arrayjit `Ops.interpret_binop`) a SkriptND formula cannot state exactly.

- `ToPowOf` raises to an integer exponent with Jane Street Base's `Float.int_pow` (repeated
  squaring, a different rounding than C `pow`);
- `Mod` is Base's `Float.( % )` (C `fmod`, made non-negative; an error for a negative modulus),
  which neither profile's `%` is.

docs/ocannl.md states both and where they differ from the SkriptND stdlib.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from refinterp.core.diagnostics import EvalDiagnostic
from refinterp.language.instance import OperatorInstance
from refinterp.run.intrinsics import intrinsic

OCAML_INT_BITS = 63  # OCaml's int on 64-bit platforms


def int_pow(base: float, exponent: int) -> float:
    """Base's `Float.int_pow`: 1.0 for exponent 0 (even for NaN); a negative exponent
    raises 1/base; then repeated squaring with the accumulator multiplied on the left."""
    if exponent == 0:
        return 1.0
    x, n, accum = base, exponent, 1.0
    if n < 0:
        x, n = 1.0 / x, -n
    while n > 1:
        if n & 1:
            accum = x * accum
        x = x * x
        n >>= 1
    return x * accum


def to_pow_of(base: float, exponent: float) -> float:
    """`interpret_binop ToPowOf`: `int_pow v1 (to_int v2)` when v2 is an integer (Base's
    `is_integer`: finite and equal to its truncation), else IEEE `pow` (`v1 ** v2`).

    An integral exponent beyond OCaml's 63-bit int has no defined `to_int` (OCANNL's result
    there depends on the platform); refinterp uses the exact integer, which only decides
    between 0, 1, -1, inf and nan at such magnitudes."""
    if math.isfinite(exponent) and exponent == math.trunc(exponent):
        return int_pow(base, int(exponent))
    return float(np.power(np.float64(base), np.float64(exponent)))


@intrinsic("ocannl.pow")
def pow_(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """Element-wise `to_pow_of(x, y)`."""
    x = np.asarray(inputs["x"], dtype=np.float64)
    y = np.asarray(inputs["y"], dtype=np.float64)
    with np.errstate(all="ignore"):
        result = np.array([to_pow_of(a, b) for a, b in zip(x.ravel(), y.ravel())],
                          dtype=np.float64).reshape(x.shape)
    return {"r": result}


@intrinsic("ocannl.mod_")
def mod_(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """Element-wise Base `Float.( % )`: `m = fmod(x, y)`, then `m + y` where `m < 0`; any
    `y < 0` is an error, as the OCaml function raises Invalid_argument. `y` = ±0.0 and
    infinite or NaN `x` give NaN (fmod); `-0.0` stays `-0.0` (not < 0)."""
    x = np.asarray(inputs["x"], dtype=np.float64)
    y = np.asarray(inputs["y"], dtype=np.float64)
    negative = y < 0
    if negative.any():
        position = tuple(int(i) for i in np.argwhere(negative)[0])
        raise EvalDiagnostic(f"ocannl.mod_: the modulus must not be negative; y{list(position)}"
                             f" = {float(y[position])!r} (OCANNL's Float.( % ) raises "
                             f"Invalid_argument)", code="E0503")
    with np.errstate(all="ignore"):
        m = np.fmod(x, y)
        result = np.where(m < 0, m + y, m)
    return {"r": result}
