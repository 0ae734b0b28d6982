"""Explanations of a mismatch nobody else gives (docs/harness.md, "Explanations"):

- the other semantics profiles: the case recomputed by refinterp under each; a back end that
  matches one is told which, and which rules differ (docs/semantics.md, "Profiles");
- higher precision: for the operators of `EXACT`, the exact result (rationals, or mpmath at
  PRECISION decimal digits) says, per mismatched element, whether the golden or the back end
  is closer, and whether the golden is correctly rounded;
- probes: every intermediate tensor refinterp computes (by its name relative to the graph)
  against the back end's own, in run order: the first that diverges.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import numpy as np

import refinterp.api as api
from refinterp.core.files import output_folder, safe_component, write_bytes, write_text
from refinterp.golden.tolerance import bounds, is_real, within
from refinterp.harness.compare import Outcome, backend_dtype, element_verdicts
from refinterp.harness.suite import Case
from refinterp.io import encode_npy, flatten_packs, read_arrays
from refinterp.numeric import rules

PRECISION = 60  # decimal digits of the mpmath reference


# --------------------------------------------------------------------------- profiles


def _refinterp(case: Case, profile: str, observe: Callable | None = None,
               trace: Callable | None = None) -> dict[str, Any]:
    return api.evaluate(case.model, inputs=case.inputs, params=case.params or None,
                        profile=profile, hooks=api.Hooks(observe=observe, trace=trace)).outputs


def _agrees(case: Case, actual: dict[str, Any], expected: dict[str, Any]) -> bool:
    """The back end's outputs pass against `expected` (refinterp under another profile) by the
    harness's own comparison."""
    got, want = flatten_packs(actual), flatten_packs(expected)
    if set(got) != set(want):
        return False
    return all(np.shape(got[key]) == np.shape(value) and
               element_verdicts(case, key, np.asarray(got[key]), value).all()
               for key, value in want.items())


def profile_notes(case: Case, actual: dict[str, Any]) -> list[str]:
    """'matches profile khronos: …' for every other profile the back end agrees with."""
    notes = []
    own = rules.PROFILES[case.profile]
    for name, profile in rules.PROFILES.items():
        if name == case.profile:
            continue
        try:
            other = _refinterp(case, name)
        except api.Error:
            continue
        if _agrees(case, actual, other):
            fields = [f"{f.name} ({getattr(own, f.name)} in {own.name}, "
                      f"{getattr(profile, f.name)} in {name})"
                      for f in dataclasses.fields(rules.Profile)
                      if f.name not in ("name", "description")
                      and getattr(own, f.name) != getattr(profile, f.name)]
            notes.append(f"Matches profile {name} ({profile.description}): the back end "
                         f"follows {name}'s rules where they differ from {own.name}'s: "
                         f"{'; '.join(fields)} (docs/semantics.md, 'Profiles'). Run it on "
                         f"the @{name} variants of the suite (--profile {name}).")
    return notes


# --------------------------------------------------------------------------- higher precision


def _mp() -> Any:
    try:
        import mpmath
    except ImportError:  # pragma: no cover - mpmath is a dependency
        return None
    mpmath.mp.dps = PRECISION
    return mpmath


def _exact_unary(name: str) -> Callable[[Any], Any] | None:
    mp = _mp()
    if mp is None:
        return None
    table = {"exp": mp.exp, "log": mp.log, "sin": mp.sin, "cos": mp.cos, "tan": mp.tan,
             "sinh": mp.sinh, "cosh": mp.cosh, "tanh": mp.tanh, "asin": mp.asin,
             "acos": mp.acos, "atan": mp.atan, "asinh": mp.asinh, "acosh": mp.acosh,
             "atanh": mp.atanh, "sqrt": mp.sqrt, "log2": lambda x: mp.log(x, 2),
             "rsqrt": lambda x: 1 / mp.sqrt(x), "rcp": lambda x: 1 / x,
             "sqr": lambda x: x * x, "rsqr": lambda x: 1 / (x * x), "erf": mp.erf,
             "sigmoid": lambda x: 1 / (1 + mp.exp(-x)), "neg": lambda x: -x,
             "softplus": lambda x: mp.log(1 + mp.exp(x))}
    return table.get(name)


def _elementwise(function: Callable[..., Any], arrays: list[np.ndarray],
                 convert: Callable[[float], Any]) -> np.ndarray:
    broadcast = np.broadcast_arrays(*arrays)
    result = np.empty(broadcast[0].shape, dtype=object)
    for index in np.ndindex(result.shape):
        try:
            result[index] = function(*(convert(float(a[index])) for a in broadcast))
        except (ValueError, ZeroDivisionError, OverflowError, TypeError):
            result[index] = None  # no exact real result (a domain edge): no verdict
    return result


def exact_reference(case: Case) -> dict[str, np.ndarray] | None:
    """The exact outputs of an operator case (object arrays of Fraction or mpf; None where an
    element has no finite exact value), or None for an operator without a reference."""
    if case.operator is None or case.attributes or case.error is not None:
        return None
    module, name = case.operator.split(".")
    inputs = case.inputs
    if any(isinstance(v, list) or v.dtype.kind != "f" for v in inputs.values()):
        return None
    arrays = list(inputs.values())
    (key,) = case.expected if len(case.expected) == 1 else (None,)
    if key is None:
        return None
    rational = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
                "mul": lambda a, b: a * b, "div": lambda a, b: a / b}
    try:
        if module == "math" and name in rational and len(arrays) == 2:
            result = _elementwise(rational[name], arrays, _fraction)
        elif module in ("math", "nn") and _exact_unary(name) and len(arrays) == 1:
            mp = _mp()
            result = _elementwise(_exact_unary(name), arrays, lambda v: mp.mpf(v))
        elif (module, name) == ("linalg", "matmul") and len(arrays) == 2:
            a, b = (np.vectorize(_fraction, otypes=[object])(x) for x in arrays)
            result = np.matmul(a, b)
        else:
            return None
    except (ValueError, ZeroDivisionError):
        return None
    if result.shape != case.expected[key].shape:
        return None  # broadcasting the stdlib does differently (alignment): no verdict
    return {key: result}


def _fraction(value: float) -> Fraction | None:
    return Fraction(value) if np.isfinite(value) else None


def precision_notes(case: Case, actual: dict[str, Any], outcome: Outcome) -> list[str]:
    """Whether the golden or the back end is closer to the exact result, on the mismatched
    elements of each mismatched real output."""
    try:
        exact = exact_reference(case)
    except Exception:  # noqa: BLE001 - an explanation must never fail the run
        return []
    if not exact:
        return []
    notes = []
    got = flatten_packs(dict(actual))
    mp = _mp()
    for key in outcome.outputs:
        if key not in exact or key not in got:
            continue
        have, want = np.asarray(got[key]), case.expected[key]
        if not is_real(have.dtype) or have.shape != want.shape:
            continue
        bad = ~element_verdicts(case, key, have, want)
        closer_backend = closer_golden = rounded = counted = 0
        for index in zip(*np.nonzero(bad)):
            x = exact[key][index]
            if x is None or not (np.isfinite(have[index]) and np.isfinite(want[index])):
                continue
            counted += 1
            x = mp.mpf(x.numerator) / x.denominator if isinstance(x, Fraction) else x
            error_backend = abs(mp.mpf(float(have[index])) - x)
            error_golden = abs(mp.mpf(float(want[index])) - x)
            closer_backend += error_backend < error_golden
            closer_golden += error_golden < error_backend
            rounded += float(x) == float(want[index])
        if counted:
            verdict = ("the golden is closer" if closer_golden > closer_backend else
                       "the back end is closer" if closer_backend > closer_golden else
                       "neither is closer")
            notes.append(f"Higher precision (exact arithmetic / mpmath at {PRECISION} digits) "
                         f"on the {counted} mismatched element(s) of '{key}': {verdict} to the "
                         f"exact result (golden closer in {closer_golden}, back end closer in "
                         f"{closer_backend}); the golden is the correctly rounded float64 of "
                         f"the exact result in {rounded} of them.")
    return notes


def explain(case: Case, actual: dict[str, Any], outcome: Outcome, options: Any) -> list[str]:
    """Every explanation that applies to a failed value case (never raises)."""
    if outcome.reason not in ("mismatch", "shape"):
        return []
    notes: list[str] = []
    for explainer in (lambda: profile_notes(case, actual),
                      lambda: precision_notes(case, actual, outcome)):
        try:
            notes.extend(explainer())
        except Exception:  # noqa: BLE001 - an explanation must never fail the run
            continue
    return notes


# --------------------------------------------------------------------------- probes


def reference_probes(case: Case, recorder: Any = None) -> dict[str, Any]:
    """Every tensor refinterp binds while running the case, by name, in run order (the last
    value of a name bound repeatedly, as in a loop body); a `refinterp.trace.Recorder`, if
    given, records the run's trace too."""
    seen: dict[str, Any] = {}

    def observe(name: str, value: Any) -> None:
        seen.pop(name, None)
        seen[name] = value
        if recorder is not None:
            recorder.observe(name, value)
    _refinterp(case, case.profile, observe, recorder.invocation if recorder else None)
    return flatten_packs(seen)


def write_probes(folder: Path, probes: dict[str, Any]) -> None:
    """`<name>.npy` per probe (the harness's `--probe` output), each file written atomically
    (core.files; E0801 if it cannot be, or if a name is no safe file name)."""
    output_folder(folder, "the probe folder")
    for name, value in probes.items():
        file = safe_component(f"{name}.npy", "a probe's file name")
        write_bytes(folder / file, encode_npy(value), "a probe")


def backend_probes(backend: Any, case: Case, folder: Path) -> dict[str, Any] | None:
    """The back end's intermediates on `case` (its own copy of the case): a command back end
    writes `{probes}/<name>.npy`; a Python runner may offer `probes() -> {name: array}`. None
    if it gives none."""
    from refinterp.harness.backends import CommandBackend, RefinterpBackend

    if isinstance(backend, RefinterpBackend):
        seen: dict[str, Any] = {}
        api.evaluate(case.model, inputs=case.inputs, params=case.params or None,
                     engine=backend.engine, profile=backend.profile,
                     hooks=api.Hooks(observe=lambda n, v: seen.__setitem__(n, v)))
        return flatten_packs(seen)
    runner = backend.prepare(case)
    if isinstance(backend, CommandBackend):
        output_folder(folder, "the probe folder")
        runner.probes = folder
        runner.run(case.layout_inputs)
        found = {}
        for path in sorted(folder.glob("*.npy")):
            found.update(read_arrays(path, "a probe", keep_dtype=True))
        return found or None
    runner.run(case.layout_inputs)
    probes = getattr(runner, "probes", None)
    return flatten_packs(dict(probes())) if callable(probes) else None


def first_divergence(backend: Any, case: Case, options: Any,
                     given: Case | None = None) -> str | None:
    """The first intermediate (in refinterp's run order) where the back end's own differs
    from refinterp's beyond the case's loosest output tolerance; refinterp's intermediates are
    written under `options.probe_dir/<case id>/refinterp/` when that is set, with the run's
    trace (`trace.txt`, docs/trace.md), whose tensor ids the report names alongside. The back
    end is run on `given`, its own copy of the case (by default `case`)."""
    from refinterp.trace import Recorder

    recorder = Recorder(case.profile)
    reference = reference_probes(case, recorder)
    ids = recorder.names()
    probe_dir = getattr(options, "probe_dir", None)
    root = Path(probe_dir) / safe_component(case.id.replace("/", "__"), "the case id") \
        if probe_dir else None
    if root is not None:
        write_probes(root / "refinterp", reference)
        write_text(root / "refinterp" / "trace.txt", recorder.text(), "the probe trace")
    import tempfile
    with tempfile.TemporaryDirectory() as temp:
        theirs = backend_probes(backend, given or case,
                                (root / "backend") if root else Path(temp))
    if not theirs:
        return (f"Probes: refinterp's {len(reference)} intermediate(s) are in {root}/refinterp;"
                f" the back end gave none to compare" if root else None)
    klass = max((case.tolerance(k)["class"] for k in case.expected),
                key=["exact", "arithmetic", "transcendental", "reduction"].index)
    length = max(case.tolerance(k)["reduction_length"] for k in case.expected)
    agreed = []
    for name, value in reference.items():
        if name not in theirs:
            continue
        have = np.asarray(theirs[name])
        dtype = backend_dtype(have)
        bound = bounds(klass, length, dtypes=(dtype,))[dtype]
        if have.shape != np.shape(value) or not within(have, value, bound).all():
            return (f"Probes: the first intermediate that diverges is '{name}' "
                    f"(trace id {ids.get(name, '-')}; {have.dtype}{list(have.shape)} against "
                    f"refinterp's "
                    f"{np.asarray(value).dtype}{list(np.shape(value))})"
                    + (f"; before it {len(agreed)} agree (last: '{agreed[-1]}')" if agreed
                       else "; it is the first one compared"))
        agreed.append(name)
    return f"Probes: all {len(agreed)} intermediate(s) the back end gave agree with refinterp's"
