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

from testsupport import garbage_backends as garbage  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path, default=ROOT / "golden")
    parser.add_argument("--backend", action="append", choices=garbage.GARBAGE)
    parser.add_argument("-j", type=int, default=2)
    args = parser.parse_args()
    for name in args.backend or garbage.GARBAGE:
        ran, failed, wrong = garbage.false_passes(args.suite, name, jobs=args.j)
        print(f"{name:9} {ran} run, {failed} failed, {len(wrong)} false passes "
              f"{' '.join(wrong[:6])}{' ...' if len(wrong) > 6 else ''}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
