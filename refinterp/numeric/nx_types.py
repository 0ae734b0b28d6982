"""Nx element types for typed evaluation of the `nx` module (docs/nx.md, "Typed evaluation").

refinterp holds every int as int64 and every real as float64. An Nx tensor has a type: `s8`,
`s16`, `s32`, `s64`, `u8`, `u16`, `u32` (ints), `f16`, `bf16`, `f32`, `f64` (reals). Typed
evaluation keeps refinterp's representation and restricts the values to the type: an int is
wrapped to the type's width (two's complement for `s*`, modulo 2^n for `u*`), or saturated
to the type's range where the contract's operation saturates (`nx.cast` from a real), and a
real is rounded to the nearest value of the format, ties to even (float16 and bfloat16 with
their own subnormals; overflow to ±inf; NaN, infinities and the sign of zero kept).

`to_type` is THE rounding / wrapping function: the `nx.as_type` intrinsic, the golden
build's typed cases, `refinterp eval --nx-type` and the JAX back end's typed runs all use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from refinterp.core.diagnostics import ArgumentDiagnostic


@dataclass(frozen=True)
class NxType:
    """One Nx element type: `kind` "int" or "real" (refinterp's representation), `bits` the
    width, `signed` for ints; for reals the format's `precision` (significand bits, the
    hidden one included), `emin` (the exponent of the smallest normal) and `emax`."""

    name: str
    kind: str
    bits: int
    signed: bool = True
    precision: int = 0
    emin: int = 0
    emax: int = 0

    @property
    def low(self) -> int:
        """The smallest int of the type."""
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def high(self) -> int:
        """The largest int of the type."""
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    @property
    def largest(self) -> float:
        """The largest finite real of the format."""
        return float((2.0 - 2.0 ** (1 - self.precision)) * 2.0 ** self.emax)


def _ints() -> dict[str, NxType]:
    types = {f"s{b}": NxType(f"s{b}", "int", b) for b in (8, 16, 32, 64)}
    # u64 is left out: its values from 2^63 on have no int64 representation
    types.update({f"u{b}": NxType(f"u{b}", "int", b, signed=False) for b in (8, 16, 32)})
    return types


TYPES: dict[str, NxType] = {
    **_ints(),
    "f16": NxType("f16", "real", 16, precision=11, emin=-14, emax=15),
    "bf16": NxType("bf16", "real", 16, precision=8, emin=-126, emax=127),
    "f32": NxType("f32", "real", 32, precision=24, emin=-126, emax=127),
    "f64": NxType("f64", "real", 64, precision=53, emin=-1022, emax=1023),
}
# the NumPy dtype of each type NumPy has (bf16 has none)
NUMPY_DTYPES = {"s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
                "u8": np.uint8, "u16": np.uint16, "u32": np.uint32,
                "f16": np.float16, "f32": np.float32, "f64": np.float64}
# Nx's names of the types (Nx.Dtype), for messages and the docs
NX_NAMES = {"s8": "int8", "s16": "int16", "s32": "int32", "s64": "int64", "u8": "uint8",
            "u16": "uint16", "u32": "uint32", "f16": "float16", "bf16": "bfloat16",
            "f32": "float32", "f64": "float64"}


def nx_type(name: str) -> NxType:
    """The type named `name`; an unknown name is an ArgumentDiagnostic (E0901)."""
    if name not in TYPES:
        raise ArgumentDiagnostic(f"unknown Nx type '{name}'; choose one of "
                                 f"{', '.join(TYPES)}")
    return TYPES[name]


def round_real(x: np.ndarray, t: NxType) -> np.ndarray:
    """float64 values rounded to the format `t` (round to nearest, ties to even), as float64:
    each value is scaled by the quantum of its binade (clamped at the subnormal quantum), so
    NumPy's `rint` (ties to even) rounds the significand exactly once; a result beyond the
    largest finite value is ±inf."""
    x = np.asarray(x, dtype=np.float64)
    if t.precision >= 53:
        return x.copy()
    finite = np.isfinite(x) & (x != 0.0)
    _, exponent = np.frexp(np.where(finite, x, 1.0))        # |x| in [2^(e-1), 2^e)
    quantum = np.ldexp(1.0, np.maximum(exponent - 1, t.emin) - (t.precision - 1))
    with np.errstate(over="ignore"):
        rounded = np.rint(x / quantum) * quantum            # exact scalings by powers of two
    rounded = np.where(np.abs(rounded) > t.largest, np.copysign(np.inf, x), rounded)
    return np.where(finite, rounded, x)


def wrap_int(x: np.ndarray, t: NxType) -> np.ndarray:
    """int64 values wrapped to the width of `t` (two's complement / modulo 2^bits), as int64."""
    x = np.asarray(x, dtype=np.int64)
    if t.bits >= 64:
        return x.copy()
    modulus = np.int64(1) << np.int64(t.bits)
    wrapped = np.bitwise_and(x, modulus - 1)                # in [0, 2^bits)
    if t.signed:
        wrapped = np.where(wrapped > t.high, wrapped - modulus, wrapped)
    return wrapped.astype(np.int64)


def saturate_int(x: np.ndarray, t: NxType) -> np.ndarray:
    """int64 values clamped to the range of `t`, as int64."""
    return np.clip(np.asarray(x, dtype=np.int64), t.low, t.high).astype(np.int64)


def to_type(x: Any, name: str, saturate: bool = False) -> np.ndarray:
    """THE typed value of `x` (refinterp's representation, float64 or int64) in the Nx type
    `name`: a real rounded to the format, an int wrapped (or, with `saturate`, clamped) to
    the width. A bool array has no width and is returned unchanged; an int given a real
    type or the reverse is an ArgumentDiagnostic (E0901)."""
    t = nx_type(name)
    array = np.asarray(x)
    if array.dtype.kind == "b":
        return array
    kind = "real" if array.dtype.kind == "f" else "int"
    if kind != t.kind:
        article = "an" if kind == "int" else "a"
        raise ArgumentDiagnostic(f"{article} {kind} tensor cannot have the Nx type '{name}' "
                                 f"({NX_NAMES[name]}, for {t.kind}s)")
    if kind == "real":
        return round_real(array, t)
    return saturate_int(array, t) if saturate else wrap_int(array, t)


def representable(x: Any, name: str) -> bool:
    """Whether every value of `x` is a value of the type `name` (to_type leaves it as is;
    NaN counts as representable)."""
    array = np.asarray(x)
    typed = to_type(array, name)
    if array.dtype.kind == "f":
        return bool(np.all((typed == array) | (np.isnan(typed) & np.isnan(array))))
    return bool(np.array_equal(typed, array))


def saturates(operator: str, input_kinds: list[str], output_kind: str) -> bool:
    """Whether the contract's operation saturates an int output to its type rather than
    wrapping it: only `nx.cast` from a real ("Float-to-int truncates toward zero"; the value
    beyond the type's range is clamped, as the int64 extremes of ±inf, and as XLA converts).
    Every other int result wraps."""
    return operator == "nx.cast" and output_kind == "int" and "real" in input_kinds


def parse_types(items: list[str]) -> dict[str, str]:
    """`NAME=TYPE` items (`eval --nx-type a=s8`) as a dict; a bare `TYPE` is stored under
    the key "" (every int or real tensor of the type's kind that no item names). A wrong item
    is an ArgumentDiagnostic (E0901)."""
    types: dict[str, str] = {}
    for item in items:
        name, _, value = item.rpartition("=")
        nx_type(value.strip())
        if name.strip() in types:
            raise ArgumentDiagnostic(f"--nx-type: '{name.strip() or value}' is given twice")
        types[name.strip()] = value.strip()
    return types


def resolve_types(types: dict[str, str], arrays: dict[str, Any]) -> dict[str, str]:
    """The type of each named array: its own entry of `types`, else the default (key "") if
    the default's kind is the array's; arrays without one are left out (bools, packs, and
    ints / reals that keep refinterp's int64 / float64)."""
    default = types.get("")
    resolved = {}
    for name, value in arrays.items():
        if isinstance(value, list):
            continue
        if name in types:
            resolved[name] = types[name]
        elif default is not None:
            kind = np.asarray(value).dtype.kind
            if (kind == "f") == (TYPES[default].kind == "real") and kind != "b":
                resolved[name] = default
    return resolved


def typed_inputs(types: dict[str, str], inputs: dict[str, Any]) -> dict[str, Any]:
    """`inputs` with every typed one (resolve_types) restricted to its type: typed
    evaluation's entry step."""
    typed = dict(inputs)
    for name, type_name in resolve_types(types, inputs).items():
        typed[name] = to_type(inputs[name], type_name)
    return typed


def typed_outputs(types: dict[str, str], operator: str, inputs: dict[str, Any],
                  outputs: dict[str, Any]) -> dict[str, Any]:
    """`outputs` of one invocation of `operator` on `inputs` with every typed one restricted
    to its type (clamped where `saturates`): typed evaluation's step after a contract
    operation. A name of `types` that is no input or output is an ArgumentDiagnostic."""
    unknown = sorted(set(types) - {""} - set(inputs) - set(outputs))
    if unknown:
        raise ArgumentDiagnostic(f"the Nx types name {', '.join(unknown)}, which "
                                 f"{'is' if len(unknown) == 1 else 'are'} no input or output "
                                 f"of {operator}")
    kinds = ["real" if np.asarray(v).dtype.kind == "f" else "int" for v in inputs.values()
             if not isinstance(v, list)]
    typed = dict(outputs)
    for name, type_name in resolve_types(types, outputs).items():
        kind = TYPES[type_name].kind
        typed[name] = to_type(outputs[name], type_name, saturates(operator, kinds, kind))
    return typed
