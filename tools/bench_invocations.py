#!/usr/bin/env python3
"""Benchmark of what one operator invocation costs beyond its kernel: a chain of small
element-wise invocations (a graph generated here) and the LSTM of spec §4.4.5
(golden/cases/models/lstm.sknd), each timed against a NumPy baseline of the same arithmetic in
the same run.

    python tools/bench_invocations.py [--chain N] [--repeat R] [--profile]

Per case it prints: invocations per run (counted with the trace hook), the best-of-R time of
a run (program loaded once, outside the timed region; the parameters passed as arrays), the
NumPy baseline's time, the engines' share (the time inside the @lower engine, measured by
wrapping it), and per invocation: µs in all, µs beyond the engine (the executor's own cost:
instantiation, binding, checks, engine choice) and µs beyond NumPy; and the composition alone:
a run whose kernel computes nothing (each output an uninitialised array of its declared shape),
per invocation. Target: an invocation costs at most ~30 µs beyond its kernel. The outputs are checked
against NumPy (relative 1e-9); a disagreement is exit status 1. Ratios, never absolute times,
are what docs/performance.md records ("Invocations").
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import refinterp.api as ri  # noqa: E402
from refinterp.lower.engines import make_engine  # noqa: E402

LSTM = ROOT / "golden" / "cases" / "models" / "lstm.sknd"


def chain_source(n: int) -> str:
    """A graph of `n` invocations, each reading the previous one's result: math.add(t, 0.5)
    and math.mul(t, 1.0001), alternating, on real[8]."""
    lines = ["import math;", "", "graph Chain {", "    @input { x: real[8]; }",
             "    @output { y: real[8]; }", "    @compose {", "        t0 = x;"]
    for k in range(n):
        call = f"math.mul(t{k}, 1.0001)" if k % 2 else f"math.add(t{k}, 0.5)"
        lines.append(f"        t{k + 1} = {call};")
    lines += [f"        y = t{n};", "    }", "}", ""]
    return "\n".join(lines)


def chain_numpy(n: int) -> Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    def run(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        t = feeds["x"]
        for k in range(n):
            t = np.multiply(t, 1.0001) if k % 2 else np.add(t, 0.5)
        return {"y": t}
    return run


def lstm_numpy(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """nn.lstm of spec §4.4.5 without `steps`: gates i, f, g, o of X W^T + h R^T + B."""
    x, w, r, b, h, c = (feeds[k] for k in ("X", "W", "R", "B", "h0", "c0"))
    ys = []
    for t in range(x.shape[0]):
        gates = x[t] @ w.T + h @ r.T + b
        i, f, g, o = np.split(gates, 4, axis=1)
        i, f, o = (1 / (1 + np.exp(-v)) for v in (i, f, o))
        c = f * c + i * np.tanh(g)
        h = o * np.tanh(c)
        ys.append(h)
    return {"Y": np.stack(ys), "hN": h, "cN": c}


def lstm_feeds() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    inputs = {"X": rng.standard_normal((5, 3, 4))}
    params = {"W": rng.standard_normal((24, 4)) * 0.5, "R": rng.standard_normal((24, 6)) * 0.4,
              "B": rng.standard_normal(24) * 0.1, "h0": rng.standard_normal((3, 6)) * 0.5,
              "c0": rng.standard_normal((3, 6)) * 0.5}
    return inputs, params


class TimedEngine:
    """The `auto` engine, with the time spent inside it summed."""

    def __init__(self) -> None:
        self.inner = make_engine("auto")
        self.seconds = 0.0

    def __call__(self, *args: Any) -> Any:
        start = time.perf_counter()
        try:
            return self.inner(*args)
        finally:
            self.seconds += time.perf_counter() - start


def noop_kernel(instance: Any, inputs: dict, profile: Any) -> dict:
    """An engine that computes nothing: each declared output as an uninitialised array of its
    type and shape (a pack as a list), so a run with it times the composition alone."""
    def made(info: Any) -> Any:
        if isinstance(info, tuple):
            return [made(item) for item in info]
        return np.empty(info.shape, dtype=np.dtype(DTYPES[info.dtype]))
    return {name: made(info) for name, info in instance.outputs.items()}


DTYPES = {"real": "float64", "int": "int64", "bool": "bool"}


def best(run: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def relative_error(a: np.ndarray, b: np.ndarray) -> float:
    scale = float(np.max(np.abs(b))) or 1.0
    return float(np.max(np.abs(np.asarray(a, dtype=float) - b))) / scale


def measure(name: str, program: Any, inputs: dict, params: dict,
            numpy_run: Callable[[dict], dict], repeat: int, profile: bool) -> bool:
    calls = [0]

    def trace(event: str, *rest: Any) -> None:
        calls[0] += event == "call"

    def evaluate(engine: Any = "auto", hooks: ri.Hooks = ri.Hooks()) -> ri.Run:
        return ri.evaluate(program, inputs=inputs, params=params, engine=engine, hooks=hooks)

    result = evaluate(hooks=ri.Hooks(trace=trace))  # warm-up, and the invocation count
    invocations = calls[0]
    expected = numpy_run({**inputs, **params})
    worst = max(relative_error(result.outputs[k], v) for k, v in expected.items())
    seconds = best(evaluate, repeat)
    baseline = best(lambda: numpy_run({**inputs, **params}), repeat)
    engine = TimedEngine()
    evaluate(engine)  # the engine's share, in a run of its own (the wrapper costs a little)
    engine.seconds = 0.0
    engine_total = best(lambda: evaluate(engine), 1)
    inside = engine.seconds
    us = 1e6 / invocations
    print(f"{name}: {invocations} invocations; run {seconds * 1e3:.2f} ms, NumPy "
          f"{baseline * 1e3:.3f} ms ({seconds / baseline:.0f}x); engine share "
          f"{inside / engine_total:.0%}")
    evaluate(noop_kernel)
    composition = best(lambda: evaluate(noop_kernel), repeat)
    print(f"  per invocation: {seconds * us:.1f} us in all, {(engine_total - inside) * us:.1f} us "
          f"beyond the engine, {(seconds - baseline) * us:.1f} us beyond NumPy; "
          f"relative error vs NumPy {worst:.1e}")
    print(f"  the composition alone (a kernel that computes nothing): {composition * us:.1f} us "
          f"per invocation")
    if profile:
        profiler = cProfile.Profile()
        profiler.runcall(evaluate)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    return worst <= 1e-9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chain", type=int, default=1000, help="invocations in the chain")
    parser.add_argument("--repeat", type=int, default=5, help="best of N runs")
    parser.add_argument("--profile", action="store_true", help="print where the time goes")
    args = parser.parse_args(argv)
    ok = True
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "chain.sknd"
        path.write_text(chain_source(args.chain))
        x = {"x": np.linspace(-1.0, 1.0, 8)}
        ok &= measure(f"chain of {args.chain} element-wise invocations", ri.load(path), x, {},
                      chain_numpy(args.chain), args.repeat, args.profile)
    inputs, params = lstm_feeds()
    ok &= measure("LSTM of spec §4.4.5 (lstm.sknd: 5 steps, batch 3, 4 -> 6)", ri.load(LSTM),
                  inputs, params, lstm_numpy, args.repeat, args.profile)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
