#!/usr/bin/env python3
"""Benchmark: a whole model through the command line, cold (the target, docs/performance.md:
the cold `refinterp eval DIR --inputs … --params params.npz` at most the in-process run + the
process start + the unavoidable read of the parameter file).

    python tools/bench_cli_model.py [--runs N]

The model is tools/bench_vector.py's batch-1 AlexNet (float64, random weights, 466 MB of
parameters), written to a temporary folder with its params.npz and inputs.npz. Printed, each the
median of N runs: the cold CLI (a fresh process), the process start (a fresh process that only
imports refinterp.api and exits), the read of params.npz (np.load of every member, in a fresh
process, minus that process's own start), and the in-process run (api.evaluate on arrays
already in memory, program loaded, best after one warm-up); then the CLI time against their sum.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import bench_vector  # noqa: E402


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    ours, _, _ = bench_vector.alexnet_case(np.random.default_rng(0), "auto")
    with tempfile.TemporaryDirectory(prefix="bench_cli_") as temporary:
        folder = Path(temporary)
        model = folder / "alexnet"
        model.mkdir()
        (model / "main.sknd").write_text(bench_vector.ALEXNET)
        rng = np.random.default_rng(0)
        params = ours.params  # type: ignore[attr-defined]
        np.savez(folder / "params.npz", **params)
        np.savez(folder / "inputs.npz", input=rng.standard_normal((1, 3, 224, 224)))
        python = [sys.executable]
        cli = python + ["-m", "refinterp", "eval", str(model), "--inputs",
                        str(folder / "inputs.npz"), "--params", str(folder / "params.npz"),
                        "-o", str(folder / "out.npz")]
        start = python + ["-c", "import refinterp.api"]
        read = python + ["-c", "import refinterp.api, numpy as np; "
                         f"f = np.load({str(folder / 'params.npz')!r}); "
                         "[f[k] for k in f.files]"]
        timed(cli)  # warm the parse cache and the page cache
        rows: dict[str, list[float]] = {"cli": [], "start": [], "read": []}
        for _ in range(args.runs):  # interleaved: a change of load affects each alike
            rows["cli"].append(timed(cli))
            rows["start"].append(timed(start))
            rows["read"].append(timed(read))
        ours()
        in_process = min(_time(ours) for _ in range(3))
    cli_time, start_time = statistics.median(rows["cli"]), statistics.median(rows["start"])
    read_time = max(0.0, statistics.median(rows["read"]) - start_time)
    budget = in_process + start_time + read_time
    print(f"AlexNet batch 1, float64, median of {args.runs} cold processes")
    print(f"  cold CLI eval --params                 {cli_time:6.3f} s")
    print(f"  process start (import refinterp.api)   {start_time:6.3f} s")
    print(f"  read of params.npz                     {read_time:6.3f} s")
    print(f"  in-process run                         {in_process:6.3f} s")
    verdict = "ok" if cli_time <= budget else "SLOW"
    print(f"  CLI / (in-process + start + read)      {cli_time / budget:6.2f}x  (target <= 1) "
          f"{verdict}")
    return 0


def _time(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


if __name__ == "__main__":
    sys.exit(main())
