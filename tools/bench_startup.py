#!/usr/bin/env python3
"""Benchmark: cold start-up of `refinterp eval` on one-op graphs (targets, docs/performance.md:
at most 2x a bare `python -c "import numpy"`; a single-op graph under a Khronos --stdlib at most
0.3 s).

Usage: python3 tools/bench_startup.py [--runs N] [--khronos-stdlib DIR] [--other TREE]

Every figure is the median wall-clock time of N fresh processes, the runs of all commands
interleaved so that a change in the machine's load affects each alike; the baseline,
`python -c "import numpy"`, is timed in the same run and every figure is also printed as a
ratio to it. The refinterp measured is this checkout (PYTHONPATH), with its bytecode compiled
first (an installed package has it: `pip install` compiles), and with the parse cache in a
fresh temporary folder (REFINTERP_CACHE_DIR), filled by one run before timing; the rows "no
cache" set REFINTERP_NO_CACHE=1 (every start parses the standard library modules it imports).
`--other TREE` times the same commands of another checkout too (before/after in one run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ONE_OP = """import math;
graph G {
    @input { x: real[2,3]; y: real[2,3]; }
    @output { z: real[2,3]; }
    @compose { z = math.add(x, y); }
}
"""

# a converted single-op model imports the modules of its operator; math and nn are the largest
KHRONOS_ONE_OP = """import math, nn;
graph G {
    @input { x: real[1,4,8,8]; }
    @output { y: real[1,4,8,8]; }
    @compose { y = nn.relu(x); }
}
"""


def timed(command: list[str], env: dict[str, str], folder: str) -> float:
    """Wall-clock seconds of one run of `command`, which must succeed. It runs in `folder`
    (the temporary one): `python -m` looks in the current folder first, before PYTHONPATH."""
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, cwd=folder)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="processes per command (median)")
    parser.add_argument("--khronos-stdlib", metavar="DIR",
                        help="a Khronos stdlib folder (skriptnd-pyproject/skriptnd/stdlib)")
    parser.add_argument("--other", metavar="TREE", help="another checkout to time alike")
    args = parser.parse_args()

    trees = [ROOT, *([Path(args.other).resolve()] if args.other else [])]
    for tree in trees:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "refinterp")],
                       check=True, stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as folder:
        work = Path(folder)
        (work / "add.sknd").write_text(ONE_OP)
        (work / "khronos.sknd").write_text(KHRONOS_ONE_OP)
        base = {key: value for key, value in os.environ.items()
                if key not in ("PYTHONDONTWRITEBYTECODE", "REFINTERP_NO_CACHE")}
        commands: dict[str, tuple[list[str], dict[str, str]]] = {
            'python -c "import numpy"': ([sys.executable, "-c", "import numpy"], base)}
        for tree in trees:
            env = dict(base)
            env["PYTHONPATH"] = os.pathsep.join(
                [str(tree), *filter(None, [base.get("PYTHONPATH")])])
            env["REFINTERP_CACHE_DIR"] = str(work / f"cache{len(commands)}")
            no_cache = {**env, "REFINTERP_NO_CACHE": "1"}
            tag = "" if tree == ROOT else f" [{tree.name}]"
            refinterp = [sys.executable, "-m", "refinterp", "eval"]
            add = [*refinterp, str(work / "add.sknd"), "--random-inputs"]
            commands[f"eval add.sknd --random-inputs{tag}"] = (add, env)
            commands[f"  the same, no cache{tag}"] = (add, no_cache)
            commands[f"eval --op math.add{tag}"] = (
                [*refinterp, "--op", "math.add", "--random", "x=real[2,3]",
                 "--random", "y=real[2,3]"], env)
            if args.khronos_stdlib:
                khronos = [*refinterp, str(work / "khronos.sknd"), "--random-inputs",
                           "--stdlib", args.khronos_stdlib]
                commands[f"eval math+nn graph, Khronos --stdlib{tag}"] = (khronos, env)
                commands[f"  the same (Khronos), no cache{tag}"] = (khronos, no_cache)
        for command, environment in commands.values():  # warm up: caches, file system
            timed(command, environment, folder)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (command, environment) in commands.items():
                times[name].append(timed(command, environment, folder))

    medians = {name: statistics.median(values) for name, values in times.items()}
    baseline = medians['python -c "import numpy"']
    width = max(map(len, medians))
    print(f"cold start-up, median of {args.runs} processes (Python {sys.version.split()[0]})")
    for name, median in medians.items():
        print(f"  {name:<{width}}  {median:6.3f} s  {median / baseline:5.2f}x numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
