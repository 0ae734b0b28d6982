#!/usr/bin/env python3
"""Memory figure of refinterp: the peak resident memory of one AlexNet run (the graph and
weights of tools/bench_peers.py, i.e. tools/bench_vector.py's ALEXNET), against the target
peak <= 1.5 x (parameters + largest live activations).

    python tools/bench_memory.py [--small] [--engine auto|vector] [--repeat N] [--json OUT]

Each measurement is a separate child Python process (this file with `--child MODE`) that
reports its own peak resident set size (`ru_maxrss` of RUSAGE_SELF, the kernel's VmHWM):

- `import`: imports NumPy and refinterp (through bench_peers) — the baseline;
- `weights`: also loads the program (parsing the stdlib) and builds the weights and the image;
- `run`: also runs AlexNet once with `api.evaluate`.

The run's peak is `run - import`: it includes the parameters (built in the child), the loaded
program and everything the evaluation allocates. `run - weights` is what the evaluation alone
adds. The weights are drawn and scaled in place, so building them holds no second copy.

"Largest live activations" is the largest sum of two consecutive activations of the chain
(image, conv1 before relu, conv1 after relu, pool1, ...): each operator of a chain needs its
input and its output at once, and nothing earlier once its successor has run, so an ideal
interpreter holds the parameters plus one such pair. (For AlexNet this is a few MB beside
~490 MB of parameters: the figure is dominated by whether the parameters are copied.)

With `--repeat N` every child runs N times and the smallest peak is kept. Exit status 1 if a
child fails; a missed target prints OVER but is not a failure.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

TARGET = 1.5
MODES = ("import", "weights", "run")


def child(mode: str, small: bool, engine: str) -> dict[str, Any]:
    """The work of one child process; returns its figures (peak RSS in bytes)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import numpy as np

    import bench_peers
    from refinterp import api

    report: dict[str, Any] = {"mode": mode}
    if mode in ("weights", "run"):
        text = bench_peers.alexnet_text(small)
        program, folder = bench_peers.load(text)
        params, image = bench_peers.alexnet_weights(program)
        report["params_bytes"] = sum(value.nbytes for value in params.values())
        shapes = bench_peers.alexnet_activation_shapes(image.shape, params)
        sizes = [int(np.prod(shape)) * 8 for shape in shapes]
        report["activations"] = [list(shape) for shape in shapes]
        report["live_bytes"] = max(a + b for a, b in zip(sizes, sizes[1:]))
        if mode == "run":
            output = api.evaluate(program, op="AlexNet", inputs={"input": image},
                                  params=params, engine=engine).outputs["output"]
            report["output_shape"] = list(output.shape)
            report["output_finite"] = bool(np.all(np.isfinite(output)))
        folder.cleanup()
    # ru_maxrss is in KiB on Linux (bytes on macOS)
    scale = 1 if sys.platform == "darwin" else 1024
    report["peak_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    return report


def measure(mode: str, small: bool, engine: str) -> dict[str, Any]:
    """Run one child process and return its report."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", mode,
               "--engine", engine] + (["--small"] if small else [])
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"child {mode} failed ({done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def figures(small: bool, engine: str, repeat: int) -> dict[str, Any]:
    """Measure every mode `repeat` times (keeping the smallest peak) and derive the figures."""
    best: dict[str, dict[str, Any]] = {}
    for _ in range(repeat):
        for mode in MODES:
            report = measure(mode, small, engine)
            if mode not in best or report["peak_bytes"] < best[mode]["peak_bytes"]:
                best[mode] = report
    run = best["run"]
    run_bytes = run["peak_bytes"] - best["import"]["peak_bytes"]
    bound = run["params_bytes"] + run["live_bytes"]
    return {"small": small, "engine": engine,
            "peak_import": best["import"]["peak_bytes"],
            "peak_weights": best["weights"]["peak_bytes"], "peak_run": run["peak_bytes"],
            "run_bytes": run_bytes,
            "evaluation_bytes": run["peak_bytes"] - best["weights"]["peak_bytes"],
            "params_bytes": run["params_bytes"], "live_bytes": run["live_bytes"],
            "ratio": run_bytes / bound, "target": TARGET,
            "verdict": "ok" if run_bytes <= TARGET * bound else "OVER",
            "output_ok": run["output_finite"] and run["output_shape"][0] == 1}


def mib(value: int) -> str:
    return f"{value / 2**20:8.1f} MiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="the toy AlexNet of bench_peers")
    parser.add_argument("--engine", default="auto", choices=["auto", "vector"])
    parser.add_argument("--repeat", type=int, default=1, help="runs of each child (min kept)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.small, args.engine)))
        return 0
    try:
        result = figures(args.small, args.engine, args.repeat)
    except RuntimeError as error:
        print(f"bench_memory: {error}", file=sys.stderr)
        return 1
    print(f"AlexNet{' small' if args.small else ' 224 batch 1'}, engine {args.engine}")
    print(f"  peak RSS, imports only          {mib(result['peak_import'])}")
    print(f"  peak RSS, + program and weights {mib(result['peak_weights'])}")
    print(f"  peak RSS, + one run             {mib(result['peak_run'])}")
    print(f"  run (peak - imports)            {mib(result['run_bytes'])}")
    print(f"  evaluation alone (run - weights){mib(result['evaluation_bytes'])}")
    print(f"  parameters                      {mib(result['params_bytes'])}")
    print(f"  largest live activations        {mib(result['live_bytes'])}")
    print(f"  ratio run / (parameters + live) {result['ratio']:8.2f}x  target <= "
          f"{TARGET:g}x  {result['verdict']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0 if result["output_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
