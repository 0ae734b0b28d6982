#!/usr/bin/env python3
"""Benchmark: parse every corpus file (target: all together in under 1 s).

Usage: python3 tools/bench_parse.py [--repeat N] [DIR]

Reports the best of N wall-clock times for lexing+parsing all files, and, as a baseline measured in
the same run, the time to merely tokenize them, so the figure can be compared across machines.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from refinterp.core.source import SourceFile  # noqa: E402
from refinterp.syntax import parse_module  # noqa: E402
from refinterp.syntax.lexer import tokenize  # noqa: E402


def best_of(repeat: int, work) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default=str(ROOT / "spec_tests" / "corpus"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    files = sorted(Path(args.folder).rglob("*.sknd"))
    sources = [SourceFile(str(p), p.read_text()) for p in files]
    chars = sum(len(s.text) for s in sources)

    def lex_all() -> None:
        for source in sources:
            tokenize(source)

    def parse_all() -> None:
        for source in sources:
            parse_module(source)

    lex = best_of(args.repeat, lex_all)
    parse = best_of(args.repeat, parse_all)
    print(f"{len(files)} files, {chars} characters")
    print(f"tokenize only : {lex * 1000:8.1f} ms")
    print(f"lex + parse   : {parse * 1000:8.1f} ms  ({parse / lex:.1f}x tokenizing; "
          f"target < 1000 ms)")
    return 0 if parse < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
