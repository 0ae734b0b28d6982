"""Comparing a back end's outputs with a golden case (docs/harness.md, "Comparing").

In this order: the set of output names, then each output's shape, then its dtype (policy
`exact`: the golden's dtype exactly, float64 / int64 / bool; `kind`, the default: the same kind,
so that a float32 back end passes on values; `values`: any dtype), then its values under the
case's tolerance for the back end's dtype (refinterp.golden.tolerance: NaN where NaN, the same
infinities, ULPs counted in the back end's dtype: float64, float32, float16 or bfloat16). A
mismatch is explained in the form users know from PyTorch's `assert_close`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from refinterp.golden.tolerance import (MAGNITUDE_FACTOR, Bound, allowed_errors,
                                        magnitude_errors, bound_of, dtype_name, is_real,
                                        ulp_distance, within)
from refinterp.harness.suite import Case
from refinterp.io import flatten_packs

DTYPE_POLICIES = ("exact", "kind", "values")
KINDS = {"f": "real", "i": "int", "u": "int", "b": "bool"}
EXACT_DTYPES = {"real": np.dtype(np.float64), "int": np.dtype(np.int64), "bool": np.dtype(bool)}
ULP_BINS = (1, 4, 16, 256, 65536)


@dataclass
class Outcome:
    """The verdict on one case: `status` pass / fail / skip, or broken (the harness could
    not read, verify or judge the case: no verdict on the back end); xfail and xpass are
    decided later, against expectations; `reason` for a fail: mismatch, shape, dtype,
    missing-output, crash, timeout, accepted-invalid; `phase` where it happened: prepare,
    run, compare. `started` is False when a command back end could not even be started
    (exit status 126 or 127)."""

    status: str
    reason: str | None = None
    explanation: str = ""
    phase: str = ""
    outputs: list[str] = field(default_factory=list)  # the outputs that mismatched
    started: bool = True
    figures: list[dict[str, Any]] = field(default_factory=list)  # harness.figures, a mismatch


@dataclass(frozen=True)
class Override:
    """--rtol / --atol / --ulp given on the command line (None: the case's own)."""

    rtol: float | None = None
    atol: float | None = None
    ulp: int | None = None

    def apply(self, bound: Bound) -> Bound:
        return Bound(bound.ulp if self.ulp is None else self.ulp,
                     bound.rtol if self.rtol is None else self.rtol,
                     bound.atol if self.atol is None else self.atol)


def backend_dtype(array: np.ndarray) -> str:
    """Which tolerance applies to the back end's output: that of its own dtype for float32,
    float16 and bfloat16, float64's for every other (golden.tolerance.dtype_name)."""
    return dtype_name(array.dtype)


def _type(array: np.ndarray) -> str:
    return f"{array.dtype}{list(array.shape)}"


def _index(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def compare(case: Case, actual: dict[str, Any], policy: str = "kind",
            override: Override = Override()) -> Outcome:
    """The verdict on a back end's outputs for a value case."""
    try:
        got = {k: np.asarray(v) for k, v in flatten_packs(dict(actual)).items()}
    except (TypeError, ValueError) as error:
        return Outcome("fail", "missing-output", f"the outputs are no arrays: {error}",
                       "compare")
    expected = case.expected
    missing = [k for k in expected if k not in got]
    if missing:
        return Outcome("fail", "missing-output",
                       f"missing output(s) {', '.join(map(repr, missing))}; the back end gave "
                       f"{', '.join(map(repr, got)) or 'none'}", "compare", missing)
    extra = [k for k in got if k not in expected]
    if extra:
        return Outcome("fail", "mismatch", f"unexpected output(s) {', '.join(map(repr, extra))};"
                                           f" the case's outputs are "
                                           f"{', '.join(map(repr, expected))}", "compare", extra)
    for key, want in expected.items():
        have = got[key]
        if have.shape != want.shape:
            hint = ""
            if have.ndim >= 2 and np.swapaxes(have, -1, -2).shape == want.shape and \
                    _passes(case, key, np.swapaxes(have, -1, -2), want, override):
                hint = "; it equals the expected output with its last two axes swapped " \
                       "(transposed)"
            return Outcome("fail", "shape", f"output '{key}': shape {list(have.shape)}, "
                                            f"expected {list(want.shape)}{hint}",
                           "compare", [key])
        problem = _dtype_problem(have, want, policy)
        if problem:
            return Outcome("fail", "dtype", f"output '{key}': {problem}", "compare", [key])
    failures = [(key, text) for key, want in expected.items()
                if (text := explain_values(case, key, got[key], want, override))]
    if failures:
        return Outcome("fail", "mismatch", "\n".join(text for _, text in failures), "compare",
                       [key for key, _ in failures])
    return Outcome("pass", phase="compare")


def _dtype_problem(have: np.ndarray, want: np.ndarray, policy: str) -> str | None:
    kind = "real" if is_real(have.dtype) else KINDS.get(have.dtype.kind)
    golden = KINDS[want.dtype.kind]
    if policy == "values":
        return None if kind is not None else f"dtype {have.dtype} holds no numbers"
    if policy == "exact" and have.dtype != EXACT_DTYPES[golden]:
        return f"dtype {have.dtype}, expected {EXACT_DTYPES[golden]} (--dtype exact)"
    if kind != golden:
        return f"dtype {have.dtype} ({kind or 'no number'}), expected a {golden} dtype"
    return None


def bound_for(case: Case, key: str, have: np.ndarray, override: Override) -> Bound:
    return override.apply(bound_of(case.tolerance(key), backend_dtype(have)))


def element_verdicts(case: Case, key: str, have: np.ndarray, want: np.ndarray,
                     override: Override = Override()) -> np.ndarray:
    """THE value comparison of the harness: which elements of a back end's output `key` pass
    against `want` under the case's tolerance for the back end's dtype (shapes equal)."""
    return within(_numeric(have, want), want, bound_for(case, key, have, override),
                  allowed_for(case, key, have, override))


# the back-end dtypes the error magnitudes hold for: the golden inputs are float32 values, so
# a float16 or bfloat16 back end also rounds its inputs, which the analysis does not count
ANALYSED_DTYPES = ("float32", "float64")


def allowed_for(case: Case, key: str, have: np.ndarray, override: Override) -> Any:
    """The per-element allowed error of output `key` for the back end's dtype, from the
    case's error magnitudes (None without them, for a dtype they do not hold for, or when
    --rtol/--atol override the case's tolerance: the user's numbers then apply everywhere)."""
    magnitude = case.magnitudes.get(key)
    if magnitude is None or override.rtol is not None or override.atol is not None or \
            backend_dtype(have) not in ANALYSED_DTYPES:
        return None
    return allowed_errors(magnitude, case.expected[key], case.tolerance(key), backend_dtype(have))


def _passes(case: Case, key: str, have: np.ndarray, want: np.ndarray,
            override: Override) -> bool:
    return bool(element_verdicts(case, key, have, want, override).all())


def _numeric(have: np.ndarray, want: np.ndarray) -> np.ndarray:
    """The back end's values in a dtype comparable with the golden's (policy `values` may pair
    an int golden with real values, a bool golden with ints); a float wider than float64 as
    float64."""
    if is_real(have.dtype):
        return have if have.dtype.itemsize <= 8 else have.astype(np.float64)
    if want.dtype.kind == "f":
        return have.astype(np.float64)
    return have.astype(want.dtype) if have.dtype != want.dtype else have


def explain_values(case: Case, key: str, have: np.ndarray, want: np.ndarray,
                   override: Override = Override()) -> str | None:
    """None when output `key` passes, else the assert_close-style explanation."""
    ok = element_verdicts(case, key, have, want, override)
    have = _numeric(have, want)
    bound = bound_for(case, key, have, override)
    if ok.all():
        return None
    with np.errstate(all="ignore"):
        return "\n".join(_mismatch_lines(case, key, have, want, bound, ok, override))


def _describe_tolerance(case: Case, key: str, have: np.ndarray, bound: Bound) -> str:
    if not is_real(have.dtype):
        return "exact"
    klass = case.tolerance(key).get("class")
    return (f"{backend_dtype(have)}: ulp {bound.ulp}, rtol {bound.rtol:g}, atol {bound.atol:g}"
            + (f", class {klass}" if klass else ""))


def _value(array: np.ndarray, at: tuple[int, ...]) -> str:
    return repr(array[at].item())


def _mismatch_lines(case: Case, key: str, have: np.ndarray, want: np.ndarray, bound: Bound,
                    ok: np.ndarray, override: Override) -> list[str]:
    bad = ~ok
    n_bad, n = int(bad.sum()), int(bad.size)
    lines = [f"output '{key}' ({_type(have)} against golden {_type(want)}; tolerance "
             f"{_describe_tolerance(case, key, have, bound)}):",
             f"  Mismatched elements: {n_bad} / {n} ({100.0 * n_bad / n:.1f}%)"]
    a64, e64 = have.astype(np.float64), want.astype(np.float64)
    nan_have, nan_want = np.isnan(a64), np.isnan(e64)
    if (nan_have != nan_want).any():
        where = _index(int(np.flatnonzero(nan_have != nan_want)[0]), want.shape)
        lines.append(f"  NaN positions differ in {int((nan_have != nan_want).sum())} element(s), "
                     f"first at index {where}: got {_value(have, where)}, expected "
                     f"{_value(want, where)}")
    comparable = bad & ~nan_have & ~nan_want
    if comparable.any():
        diff = np.where(comparable, np.abs(a64 - e64), -1.0)
        rel = np.where(comparable & (e64 != 0), diff / np.abs(e64), -1.0)
        at = _index(int(np.argmax(diff)), want.shape)
        allowed = allowed_for(case, key, have, override)
        here = None if allowed is None else float(np.broadcast_to(allowed, want.shape)[at])
        if here is None or np.isnan(here):
            limit = f"up to {bound.atol!r} allowed"
        else:
            magnitude = float(case.magnitudes[key][at])
            own = float(magnitude_errors(magnitude, backend_dtype(have)))
            limit = (f"up to {here!r} allowed here: the larger of {MAGNITUDE_FACTOR:g}·u·m = "
                     f"{own!r}, with the error magnitude m = {magnitude!r} of this element, and "
                     f"the class's floor (docs/golden.md \"Tolerances\")")
        lines.append(f"  Greatest absolute difference: {diff[at].item()!r} at index {at} "
                     f"({limit}); got {_value(have, at)}, expected {_value(want, at)}")
        if (rel >= 0).any():
            at_rel = _index(int(np.argmax(rel)), want.shape)
            lines.append(f"  Greatest relative difference: {rel[at_rel].item()!r} at index "
                         f"{at_rel} (up to {bound.rtol!r} allowed)")
        finite = comparable & np.isfinite(a64) & np.isfinite(e64)
        if finite.any() and is_real(have.dtype):
            ulps = ulp_distance(have[finite], want[finite])
            lines.append("  ULP distances of the mismatched elements: " + _histogram(ulps))
    if have.ndim >= 2 and have.shape[-1] == have.shape[-2] and \
            _passes(case, key, np.swapaxes(have, -1, -2), want, override):
        lines.append("  The values equal the golden with the last two axes swapped: the "
                     "output is transposed")
    return lines


def _histogram(ulps: np.ndarray) -> str:
    """Counts of ULP distances in the bins ≤1, 2-4, 5-16, 17-256, 257-65536, >65536."""
    parts, low = [], 0
    for high in ULP_BINS:
        count = int(((ulps > low) & (ulps <= high)).sum())
        parts.append(f"{'≤' + str(high) if low == 0 else f'{low + 1}-{high}'}: {count}")
        low = high
    parts.append(f">{low}: {int((ulps > low).sum())}")
    return ", ".join(parts)
