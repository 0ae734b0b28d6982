#!/usr/bin/env python3
"""Time `refinterp check SUITE` per back end (docs/backends.md, "Timing").

    python3 tools/bench_backends.py [--suite DIR] [--backend NAME]... [-k REGEX]

Runs the harness in this process (as `refinterp check SUITE --backend NAME --no-explain` does,
one case after the other) for `refinterp:auto` (the baseline, always first) and each back end:
by default `onnxruntime` and `torch` when their packages are installed. Printed per back end:
the cases checked, passed / failed / skipped, the wall-clock seconds, the cases per second and
the time relative to the baseline. A back end whose package is missing is listed as such (all
its cases would skip). Times are for comparison within one run, never asserted in tests.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from refinterp.harness import BackendSpec, Options, run_suite  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "refinterp:auto"
DEFAULTS = {"onnxruntime": "onnxruntime", "torch": "torch"}  # back end -> required package


def installed(package: str) -> bool:
    """Whether `package` can be imported (without importing it)."""
    return importlib.util.find_spec(package) is not None


def measure(suite: Path, name: str, include: str | None) -> tuple[int, dict[str, int], float]:
    """(cases, counts by status, seconds) of checking `suite` with back end `name`."""
    started = time.perf_counter()
    results = run_suite(suite, BackendSpec(name=name), Options(explain=False), include=include)
    seconds = time.perf_counter() - started
    counts: dict[str, int] = {}
    for result in results:
        counts[result.status] = counts.get(result.status, 0) + 1
    return len(results), counts, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default=str(ROOT / "golden"), help="the golden suite")
    parser.add_argument("--backend", action="append", default=None,
                        help="a back end to time (repeatable; default: onnxruntime and torch "
                             "when installed)")
    parser.add_argument("-k", dest="include", default=None, help="only case ids matching")
    args = parser.parse_args(argv)
    names = args.backend or [n for n, package in DEFAULTS.items() if installed(package)]
    names = [BASELINE] + [n for n in names if n != BASELINE]
    print(f"suite {args.suite}" + (f", cases matching {args.include!r}" if args.include else ""))
    header = f"{'back end':<16} {'cases':>6} {'pass':>5} {'fail':>5} {'skip':>5} " \
             f"{'seconds':>8} {'cases/s':>8} {'x baseline':>10}"
    print(header)
    print("-" * len(header))
    baseline = None
    for name in names:
        package = DEFAULTS.get(name)
        if package and not installed(package):
            print(f"{name:<16} not installed (pip install -e '.[{name}]')")
            continue
        try:
            cases, counts, seconds = measure(Path(args.suite), name, args.include)
        except Exception as error:  # noqa: BLE001 - one back end failing does not stop the table
            print(f"{name:<16} failed: {error}")
            continue
        baseline = seconds if name == BASELINE else baseline
        ratio = f"{seconds / baseline:10.2f}" if baseline else f"{'-':>10}"
        rate = cases / seconds if seconds > 0 else float("inf")
        print(f"{name:<16} {cases:>6} {counts.get('pass', 0):>5} {counts.get('fail', 0):>5} "
              f"{counts.get('skip', 0):>5} {seconds:>8.2f} {rate:>8.1f} {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
