#!/usr/bin/env python3
"""How many golden cases each deliberately wrong back end passes although it changed a real
output beyond float32 precision (false passes): the soundness figure of the suite's tolerances.

Usage: python tools/garbage_backends.py [--suite DIR] [--backend NAME]... [-j N]

The back ends are testsupport/garbage_backends.py's (a constant, zeros, ×(1+1e-3), float16
rounding, 1 % noise). Prints one line per back end: cases run, failed, false passes, and the
first few falsely passed case ids.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from refinterp.harness import BackendSpec, load_suite, run_suite  # noqa: E402
from refinterp.io import group_packs, read_arrays  # noqa: E402
from testsupport import garbage_backends as garbage  # noqa: E402


def false_passes(suite: Path, name: str, jobs: int) -> tuple[int, int, list[str]]:
    """(cases run, failed, ids of false passes) of one garbage back end on `suite`."""
    backend = getattr(garbage, name)()
    cases = {case.id: case for case in load_suite(suite)}
    results = run_suite(suite, BackendSpec(name=f"testsupport.garbage_backends:{name}"),
                        jobs=jobs)
    ran = [r for r in results if r.status in ("pass", "fail")]
    wrong = []
    for result in ran:
        case = cases[result.id]
        if result.status != "pass" or case.error is not None:
            continue
        expected = read_arrays(case.folder / "outputs.npz", "outputs.npz")
        for key, value in expected.items():
            if value.dtype.kind == "f" and garbage.changed_beyond_float32(
                    backend.change(value, garbage.case_rng(case.id)), value):
                wrong.append(result.id)
                break
    return len(ran), sum(r.status == "fail" for r in ran), wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path, default=ROOT / "golden")
    parser.add_argument("--backend", action="append", choices=garbage.GARBAGE)
    parser.add_argument("-j", type=int, default=2)
    args = parser.parse_args()
    for name in args.backend or garbage.GARBAGE:
        ran, failed, wrong = false_passes(args.suite, name, args.j)
        print(f"{name:9} {ran} run, {failed} failed, {len(wrong)} false passes "
              f"{' '.join(wrong[:6])}{' ...' if len(wrong) > 6 else ''}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
