#!/usr/bin/env python3
"""Fuzz the parser with token-mutated corpus files and report the slowest variant.

Usage: python3 tools/fuzz_parse.py [--count N] [--seed S]

The bar: 2,000 variants give only refinterp diagnostics (no other exception) and none takes
longer than 1 s. The mutations are those of tests/mutations.py (delete, duplicate, swap,
truncate tokens). Exit status 1 if any variant crashes or is too slow.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from refinterp.core.diagnostics import Diagnostic  # noqa: E402
from refinterp.core.source import SourceFile  # noqa: E402
from refinterp.syntax import parse_module  # noqa: E402
from tests.mutations import _apply, token_texts  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    corpus = [token_texts(p.read_text())
              for p in sorted((ROOT / "spec_tests" / "corpus").glob("*.sknd"))]
    kinds = ["delete", "duplicate", "swap", "truncate"]
    slowest, diagnostics, parsed, crashes = 0.0, 0, 0, 0
    for _ in range(args.count):
        edits = [(rng.choice(kinds), rng.randrange(10**6), rng.randrange(10**6))
                 for _ in range(rng.randint(1, 4))]
        text = _apply(rng.choice(corpus), edits)
        start = time.perf_counter()
        try:
            parse_module(SourceFile("mutant.sknd", text))
            parsed += 1
        except Diagnostic:
            diagnostics += 1
        except Exception as exc:  # any other exception is a bug
            crashes += 1
            print(f"CRASH {type(exc).__name__}: {exc}\n--- variant ---\n{text}\n")
        slowest = max(slowest, time.perf_counter() - start)
    print(f"{args.count} variants: {diagnostics} diagnostics, {parsed} still valid, "
          f"{crashes} crashes; slowest {slowest * 1000:.1f} ms (limit 1000 ms)")
    return 1 if crashes or slowest >= 1.0 else 0


if __name__ == "__main__":
    sys.exit(main())
