#!/usr/bin/env python3
"""Run every graph of a SkriptND file through `refinterp eval` with random inputs of the declared
shapes, and sort the outcomes: ok, diagnostic (exit 1), internal error (exit 3, a bug).

Usage: python tools/run_graphs.py FILE [--stdlib DIR] [--path DIR]... [--profile P]
                                  [--only NAME]... [--show ok|diagnostic|internal]...

Graph inputs must have shapes fixed by literals and attribute defaults (as in the Khronos
`test/unittest.sknd`); variables get `--random-params`. Each graph runs in-process with a fresh
executor; a graph taking more than --timeout seconds is reported as slow and skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import signal
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from refinterp.cli import declared_graph_inputs, main as cli_main  # noqa: E402
from refinterp.core.diagnostics import Diagnostic, render  # noqa: E402
from refinterp.language.instance import Invocation  # noqa: E402
from refinterp.language.modules import Loader  # noqa: E402


class Slow(BaseException):  # not caught by the CLI as an internal error
    pass


def _alarm(signum, frame):
    raise Slow()


def random_args(definition) -> list[str] | None:
    """--random NAME=TYPE[EXTENTS] options for a graph's inputs, or None if a shape is open."""
    infos = declared_graph_inputs(definition, Invocation())
    block = definition.block("input")
    args = []
    for decl in block.entries if block else ():
        if decl.name not in infos:
            if decl.type.optional or decl.default is not None:
                continue
            return None
        info = infos[decl.name]
        args += ["--random", f"{decl.name}={info.dtype}[{','.join(map(str, info.shape))}]"]
    return args


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--stdlib")
    parser.add_argument("--path", action="append", default=[])
    parser.add_argument("--profile", default="spec")
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--show", action="append", default=["internal"])
    parser.add_argument("--timeout", type=float, default=20.0)
    args = parser.parse_args(argv)
    try:
        program = Loader(args.path, args.stdlib).load(args.file)
    except Diagnostic as diag:  # the file or an import does not load: say why, no traceback
        print(render(diag), file=sys.stderr)
        return 1
    graphs = [d for d in program.main.tree.definitions if d.is_graph and
              (not args.only or d.name in args.only)]
    counts: Counter[str] = Counter()
    signal.signal(signal.SIGALRM, _alarm)
    for graph in graphs:
        extra = random_args(graph)
        if extra is None:
            counts["open shape"] += 1
            continue
        command = ["eval", args.file, "--op", graph.name, "--random-params", "--profile",
                   args.profile, *extra]
        if args.stdlib:
            command += ["--stdlib", args.stdlib]
        for folder in args.path:
            command += ["--path", folder]
        out, err = io.StringIO(), io.StringIO()
        start = time.perf_counter()
        signal.alarm(int(args.timeout))
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = cli_main(command)
            outcome = {0: "ok", 1: "diagnostic", 3: "internal"}.get(code, f"exit {code}")
        except Slow:
            outcome = "slow"
        finally:
            signal.alarm(0)
        counts[outcome] += 1
        if outcome in args.show:
            first = (err.getvalue().strip().splitlines() or [""])[0]
            print(f"{outcome:10} {graph.name:32} {time.perf_counter() - start:6.2f}s  {first}")
    print(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())), f"(of {len(graphs)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
