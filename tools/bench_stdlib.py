#!/usr/bin/env python3
"""Benchmark: load the whole bundled stdlib (target: under 1 s).

Usage: python3 tools/bench_stdlib.py [--repeat N] [--stdlib DIR]

Loading is what every command does before it runs anything: read, lex and parse each module and
resolve the imports between them. Two figures are printed:

- in-process: the best of N loads of a main file importing every module, with a fresh `Loader`
  each time (nothing cached);
- cold: `refinterp parse` over every module in a new Python process, next to the start-up of a
  process that merely imports refinterp's CLI (the baseline, measured in the same run).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from refinterp.language.modules import STDLIB_DIR, Loader  # noqa: E402

from bench_parse import best_of  # noqa: E402  (tools/ is this script's folder)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--stdlib", default=str(STDLIB_DIR))
    args = parser.parse_args()
    stdlib = Path(args.stdlib)
    modules = sorted(p.stem for p in stdlib.glob("*.sknd"))
    chars = sum(len(p.read_text()) for p in stdlib.glob("*.sknd"))
    with tempfile.TemporaryDirectory() as folder:
        main_file = Path(folder) / "all.sknd"
        main_file.write_text("".join(f"import {m};\n" for m in modules))
        in_process = best_of(args.repeat, lambda: Loader(stdlib=stdlib).load(main_file))
    files = [str(p) for p in sorted(stdlib.glob("*.sknd"))]
    cold = best_of(args.repeat, lambda: subprocess.run(
        [sys.executable, "-m", "refinterp", "parse", "--stdlib", str(stdlib), *files],
        check=True, stdout=subprocess.DEVNULL))
    start_up = best_of(args.repeat, lambda: subprocess.run(
        [sys.executable, "-c", "import refinterp.cli"], check=True))
    print(f"stdlib: {len(modules)} modules ({', '.join(modules)}), {chars} characters")
    print(f"in-process load (fresh Loader, best of {args.repeat}): {in_process * 1000:.1f} ms")
    print(f"cold `refinterp parse` of every module: {cold * 1000:.1f} ms "
          f"(process start-up importing refinterp: {start_up * 1000:.1f} ms, "
          f"ratio {cold / start_up:.2f}x)")
    print(f"target < 1 s: {'met' if max(in_process, cold) < 1.0 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
