#!/usr/bin/env python3
"""Run every graph of a SkriptND file through `refinterp eval` with random inputs of the declared
shapes, and sort the outcomes: ok, diagnostic (exit 1), internal error (exit 3, a bug), slow.

Usage: python tools/run_graphs.py FILE [--stdlib DIR] [--path DIR]... [--profile P]
                                  [--only NAME]... [--show ok|diagnostic|internal|slow]...
                                  [--max-lower-iterations N] [--timeout S] [--seed N]

Graph inputs must have shapes fixed by literals and attribute defaults (as in the Khronos
`test/unittest.sknd`); their values come from `--random-inputs`, variables from
`--random-params` (both seeded by --seed). Each graph runs in-process; one taking more than
--timeout seconds is reported as slow and skipped. `outcomes()` is the same as a function
(tests/test_khronos_modules.py runs it on the Khronos modules).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from refinterp.cli import main as cli_main  # noqa: E402
from refinterp.core.diagnostics import Diagnostic, render  # noqa: E402
from refinterp.language.instance import fixed_input_types  # noqa: E402
from refinterp.language.modules import Loader  # noqa: E402

# The Khronos unittest has 10 G-iteration convolutions (4x32x224x224 by 64x32x5x5): a few
# seconds each as contractions, above the default @lower iteration limit of 10^9.
DEFAULT_MAX_LOWER_ITERATIONS = 20_000_000_000


class Slow(BaseException):  # not caught by the CLI as an internal error
    pass


def _alarm(signum, frame):
    raise Slow()


@dataclass
class Outcome:
    """How one graph ran: `kind` is ok, diagnostic, internal, slow or open shape; `message` the
    first line of the diagnostic, `code` its E-code (empty when none)."""

    graph: str
    kind: str
    seconds: float = 0.0
    message: str = ""
    code: str = ""


def random_args(definition) -> list[str] | None:
    """`--random-inputs` if every required input of a graph has a fixed declared shape, else
    None (the graph's shapes are open and it cannot run on random inputs alone)."""
    fixed = fixed_input_types(definition, {})
    block = definition.block("input")
    for decl in block.entries if block else ():
        if decl.name not in fixed and not decl.type.optional and decl.default is None:
            return None
    return ["--random-inputs"]


def outcomes(file: str | Path, *, stdlib: str | Path | None = None, path: list[str] = (),
             profile: str = "spec", only: list[str] = (), timeout: float = 20.0,
             seed: int = 0, max_lower_iterations: int = DEFAULT_MAX_LOWER_ITERATIONS
             ) -> Iterator[Outcome]:
    """Run the graphs of `file` (those named in `only`, or all) and yield their outcomes in
    file order. A file that does not load raises its Diagnostic."""
    program = Loader(list(path), stdlib).load(file)
    graphs = [d for d in program.main.tree.definitions if d.is_graph and
              (not only or d.name in only)]
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for graph in graphs:
            extra = random_args(graph)
            if extra is None:
                yield Outcome(graph.name, "open shape")
                continue
            command = ["eval", str(file), "--op", graph.name, "--random-params", "--profile",
                       profile, "--seed", str(seed), "--max-lower-iterations",
                       str(max_lower_iterations), *extra]
            if stdlib:
                command += ["--stdlib", str(stdlib)]
            for folder in path:
                command += ["--path", str(folder)]
            out, err = io.StringIO(), io.StringIO()
            start = time.perf_counter()
            signal.alarm(max(1, int(timeout)))
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    code = cli_main(command)
                kind = {0: "ok", 1: "diagnostic", 3: "internal"}.get(code, f"exit {code}")
            except Slow:
                kind = "slow"
            finally:
                signal.alarm(0)
            first = (err.getvalue().strip().splitlines() or [""])[0]
            found = re.search(r"\[(E\d{4})\]\s*$", first)
            yield Outcome(graph.name, kind, time.perf_counter() - start, first,
                          found.group(1) if found else "")
    finally:
        signal.signal(signal.SIGALRM, previous)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--stdlib")
    parser.add_argument("--path", action="append", default=[])
    parser.add_argument("--profile", default="spec")
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--show", action="append", default=["internal", "slow"])
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-lower-iterations", type=int,
                        default=DEFAULT_MAX_LOWER_ITERATIONS)
    args = parser.parse_args(argv)
    counts: Counter[str] = Counter()
    try:
        for outcome in outcomes(args.file, stdlib=args.stdlib, path=args.path,
                                profile=args.profile, only=args.only, timeout=args.timeout,
                                seed=args.seed,
                                max_lower_iterations=args.max_lower_iterations):
            counts[outcome.kind] += 1
            if outcome.kind in args.show:
                print(f"{outcome.kind:10} {outcome.graph:32} {outcome.seconds:6.2f}s  "
                      f"{outcome.message}", flush=True)
    except Diagnostic as diag:  # the file or an import does not load: say why, no traceback
        print(render(diag), file=sys.stderr)
        return 1
    total = sum(counts.values())
    print(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())), f"(of {total})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
