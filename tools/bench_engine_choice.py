#!/usr/bin/env python3
"""Check `auto`'s cost model (refinterp.lower.engines.choose) against measured engine times.

    python3 tools/bench_engine_choice.py [--repeat N]

For representative standard-operator instances (tiny and 4096-element element-wise operators,
reductions, small matmuls, argmax along a long and a short axis, the last with too few cells per
step for the vector engine) both engines run the same instance; printed per instance: the
iteration count, the median measured time of each engine, the model's estimates, the engine
`auto` chose and whether it is the faster one measured ("ok", or "WRONG" with the cost of the
wrong choice as a ratio). The constants of the model (`COMPILED_FIXED_US` ... in engines.py) are
per-call and per-iteration costs; when an engine's overheads change, re-derive them from this
table (fixed cost: the time of the smallest instances; per iteration: the slope between the
small and the large ones). Times are ratios in one run, never asserted in tests.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from refinterp.api import run_operator  # noqa: E402
from refinterp.lower import engines  # noqa: E402


def instances(name: str, inputs: dict, attributes: dict) -> list[tuple[Any, dict, Any]]:
    """The (instance, inputs, profile) of every @lower operator the operator runs."""
    captured: list[tuple[Any, dict, Any]] = []

    def capture(instance: Any, arrays: dict, profile: Any) -> dict:
        captured.append((instance, dict(arrays), profile))
        return engines.ENGINES["vector"](instance, arrays, profile)

    run_operator(name, inputs, attributes, engine=capture)
    return captured


def median_time(run: Callable[[], Any], repeat: int) -> float:
    run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def cases(rng: np.random.Generator) -> list[tuple[str, dict, dict]]:
    def real(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape)
    return [
        ("math.add", {"x": real(2, 3), "y": real(2, 3)}, {}),
        ("math.add", {"x": real(64, 64), "y": real(64, 64)}, {}),
        ("nn.relu", {"x": real(1, 16)}, {}),
        ("nn.relu", {"x": real(1, 4096)}, {}),
        ("math.exp", {"x": real(4096)}, {}),
        ("math.sum_reduce", {"input": real(32, 32)}, {"axes": [1]}),
        ("linalg.matmul", {"A": real(8, 8), "B": real(8, 8)}, {}),
        ("linalg.matmul", {"A": real(16, 16), "B": real(16, 16)}, {}),
        ("math.argmax", {"input": real(64, 512)}, {"axis": 1}),
        ("math.argmax", {"input": real(64, 4096)}, {"axis": 1}),
        ("math.argmax", {"input": real(4096, 64)}, {"axis": 1}),
        ("math.argmax", {"input": real(1, 4096)}, {"axis": 1}),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'instance':34} {'iterations':>10} {'compiled':>9} {'vector':>9} {'est. s':>9} "
          f"{'est. v':>9}  auto     check")
    wrong = 0
    for name, inputs, attributes in cases(rng):
        shapes = "x".join(str(s) for s in next(iter(inputs.values())).shape)
        for instance, arrays, profile in instances(name, inputs, attributes):
            compiled = median_time(lambda: engines.ENGINES["compiled"](instance, arrays,
                                                                      profile), args.repeat)
            vector = median_time(lambda: engines.ENGINES["vector"](instance, arrays, profile),
                                 args.repeat)
            choice = engines.choose(instance, arrays)
            faster = "compiled" if compiled < vector else "vector"
            chosen = compiled if choice.engine == "compiled" else vector
            check = "ok" if choice.engine == faster else \
                f"WRONG ({chosen / min(compiled, vector):.2f}x)"
            wrong += choice.engine != faster
            label = f"{name} {instance.definition.name} {shapes}"
            print(f"{label:34} {engines.iterations(instance):>10} {compiled * 1e3:8.3f}m "
                  f"{vector * 1e3:8.3f}m {choice.compiled_us / 1e3:8.3f}m "
                  f"{choice.vector_us / 1e3:8.3f}m  {choice.engine:8} {check}")
    print(f"{wrong} wrong choice(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
