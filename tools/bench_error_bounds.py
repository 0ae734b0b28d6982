#!/usr/bin/env python3
"""Per-element error bounds on the golden suite (docs/golden.md "Per-element error bounds"):
what they allow where the class tolerances let garbage pass, and what computing them costs.

Usage: python tools/bench_error_bounds.py [--suite DIR] [--garbage] [-j N]

- For each case named in CASES: the float32 allowed error per element under its tolerance
  class (the larger of `ulp` ULPs and atol + rtol·|e|) against the per-element rule (the larger
  of `ulp` ULPs and 2·u·m), max and median, and whether a back end answering 12345.0
  everywhere, or every value times 1.001, passes either.
- The time to compute the error magnitudes of every value case of the suite's manifest
  (`refinterp.golden.magnitudes.compute_bounds`) against the plain evaluation of the same cases
  on the compiled engine and on `auto` (one warm-up pass, then one timed pass of each, case by
  case interleaved); the outputs must equal the golden outputs bit for bit, and the rule of
  every output is counted.
- With --garbage: the suite copied to a temporary folder with a `bounds.npz` per case (m where
  finite, NaN elsewhere: the class rule), and testsupport/garbage_backends.py's deliberately
  wrong back ends run on both, counting false passes (tools/garbage_backends.py).
"""

from __future__ import annotations

import argparse
import collections
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import refinterp.api as api  # noqa: E402
from refinterp.golden.magnitudes import compute_bounds  # noqa: E402
from refinterp.golden.tolerance import allowed_errors, bound_of  # noqa: E402
from refinterp.harness import load_suite  # noqa: E402
from refinterp.io import encode_npz, flatten_packs  # noqa: E402

CASES = ("nn.softmax/large_magnitudes_no_overflow", "math.mean_reduce/special_rows",
         "nx.reduce_prod/special_rows")


def magnitudes(case) -> dict[str, np.ndarray]:
    """The case's error magnitudes for float32, flattened like outputs.npz."""
    run = compute_bounds(case.model, inputs=case.inputs, params=case.params or None,
                         profile=case.profile)
    bounds = {name: b.magnitudes for name, b in run.bounds.items()}
    return {k: (np.full(v.shape, np.nan) if v is None else np.asarray(v, np.float64))
            for k, v in flatten_packs(bounds).items() if v is not None}


def allowance(case, key: str, m: np.ndarray | None) -> np.ndarray:
    """Per element, the largest |a - e| a float32 back end may show: class rule, or with m."""
    expected = case.expected[key].astype(np.float64)
    bound = bound_of(case.tolerance(key), "float32")
    ulps = bound.ulp * np.abs(np.spacing(expected.astype(np.float32))).astype(np.float64)
    if m is None:
        return np.maximum(ulps, bound.atol + bound.rtol * np.abs(expected))
    per_element = allowed_errors(m, expected, case.tolerance(key), "float32")
    limit = np.where(np.isfinite(m), per_element, bound.atol + bound.rtol * np.abs(expected))
    return np.maximum(ulps, limit)


def garbage_cases(suites: list[Path]) -> None:
    cases = {case.id: case for suite in suites for case in load_suite(suite)}
    for case_id in CASES:
        case = cases.get(case_id)
        if case is None:
            print(f"{case_id}: not in the suite")
            continue
        m = magnitudes(case)
        for key, expected in case.expected.items():
            if expected.dtype.kind != "f":
                continue
            old, new = allowance(case, key, None), allowance(case, key, m[key])
            e = expected.astype(np.float64)
            verdicts = []
            for label, actual in (("12345.0", np.full(e.shape, 12345.0)), ("x1.001", e * 1.001)):
                finite = np.isfinite(e)
                diff = np.abs(actual[finite] - e[finite])
                verdicts.append(f"{label}: old {'pass' if (diff <= old[finite]).all() else 'fail'}"
                                f", new {'pass' if (diff <= new[finite]).all() else 'fail'}")
            largest = np.nanmax(np.abs(e[np.isfinite(e)]))
            print(f"{case_id} {key}: float32 allowed error, class max {np.nanmax(old):.3g} "
                  f"median {np.nanmedian(old):.3g}; per element max {np.nanmax(new):.3g} "
                  f"median {np.nanmedian(new):.3g}; outputs max |e| {largest:.3g}; "
                  + "; ".join(verdicts))


def timing(suite: Path) -> None:
    cases = [c for c in load_suite(suite) if c.error is None and c.broken is None]
    rules: collections.Counter = collections.Counter()
    differ = []
    totals = {"compiled": 0.0, "auto": 0.0, "bounds": 0.0}
    for timed in (False, True):
        for case in cases:
            params = case.params or None
            for engine in ("compiled", "auto"):
                start = time.perf_counter()
                api.evaluate(case.model, inputs=case.inputs, params=params,
                             profile=case.profile, engine=engine)
                totals[engine] += (time.perf_counter() - start) * timed
            start = time.perf_counter()
            run = compute_bounds(case.model, inputs=case.inputs, params=params,
                                 profile=case.profile)
            totals["bounds"] += (time.perf_counter() - start) * timed
            if timed:
                for key, value in flatten_packs(run.outputs).items():
                    expected = case.expected[key]
                    if value.shape != expected.shape or not np.array_equal(
                            value, expected, equal_nan=expected.dtype.kind == "f"):
                        differ.append(f"{case.id}:{key}")
                for bound in run.bounds.values():
                    rules[bound.rule.split(" at ")[0].split(":")[0]] += 1
    print(f"{len(cases)} value cases: magnitudes {totals['bounds']:.2f} s, plain compiled "
          f"{totals['compiled']:.2f} s ({totals['bounds'] / totals['compiled']:.2f}x), plain auto "
          f"{totals['auto']:.2f} s ({totals['bounds'] / totals['auto']:.2f}x)")
    print("outputs by rule: " + ", ".join(f"{k} {v}" for k, v in sorted(rules.items())))
    print(f"outputs differing from the golden: {len(differ)} {' '.join(differ[:5])}")


def with_bounds(suite: Path, target: Path) -> Path:
    """A copy of `suite` with a bounds.npz per value case (rehashed: a consistent suite)."""
    from testsupport.small_suites import rehash_file
    shutil.copytree(suite, target)
    for case in load_suite(target):
        if case.error is not None or case.broken is not None:
            continue
        (case.folder / "bounds.npz").write_bytes(encode_npz(magnitudes(case)))
        rehash_file(target, case.id, "bounds.npz")
    return target


def garbage(suite: Path, jobs: int) -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    from garbage_backends import false_passes  # tools/garbage_backends.py
    from testsupport import garbage_backends as backends
    with tempfile.TemporaryDirectory() as folder:
        bounded = with_bounds(suite, Path(folder) / "suite")
        for name in backends.GARBAGE:
            for label, where in (("class", suite), ("per element", bounded)):
                ran, failed, wrong = false_passes(where, name, jobs)
                print(f"{name:9} {label:11}: {ran} run, {failed} failed, {len(wrong)} false "
                      f"passes {' '.join(wrong[:4])}{' ...' if len(wrong) > 4 else ''}",
                      flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path, default=ROOT / "golden")
    parser.add_argument("--garbage", action="store_true")
    parser.add_argument("-j", type=int, default=1)
    args = parser.parse_args()
    garbage_cases([args.suite, args.suite / "nx"])
    timing(args.suite)
    if args.garbage:
        garbage(args.suite, args.j)
    return 0


if __name__ == "__main__":
    sys.exit(main())
