#!/usr/bin/env python3
"""Benchmark the compiled @lower engine (targets, docs/performance.md: ≥ 8 M inner iterations/s
on matmul 64³ and no slower than 1.5× the same formulas hand-written as plain Python loops,
measured in the same run; the convolution: ≥ 1 M it/s and ≤ 3×). The engine is timed on an
instance made once (parsing and instantiation are the compile step, timed by
tools/bench_startup.py).

Usage: python3 tools/bench_scalar.py [--repeat N]

Cases: matmul 64×64×64 and a 3×3 convolution 1×8×32×32 → 8 channels (stride 1, padding 1).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from refinterp.language.instance import Invocation, TensorType, instantiate  # noqa: E402
from refinterp.lower.compiled.engine import run_compiled  # noqa: E402
from refinterp.core.source import SourceFile  # noqa: E402
from refinterp.syntax import parse_module  # noqa: E402

MATMUL = """operator matmul {
  @input { A: real[m,k]; B: real[k,n]; }
  @output { C: real[m,n]; }
  @lower { C[i,j] += A[i,l] * B[l,j], i < m, j < n, l < k; }
}"""

CONV = """operator conv {
  @input { x: real[b,c,h,w]; f: real[n,c,3,3]; }
  @output { y: real[b,n,h,w]; }
  @lower {
    y[bi,ni,i,j] += x[bi,ci,|i + p - 1|,|j + q - 1|] * f[ni,ci,p,q],
        bi < b, ni < n, ci < c, i < h, j < w, p < 3, q < 3;
  }
}"""


def engine(text: str, inputs: dict):
    """A function running the compiled engine on `inputs` (parsed and instantiated once)."""
    definition = parse_module(SourceFile("<bench>", text)).module.definitions[0]
    infos = {k: TensorType("real", v.shape) for k, v in inputs.items()}
    instance = instantiate(definition, Invocation({}, infos))
    return lambda: run_compiled(instance, inputs)


def hand_matmul(a: np.ndarray, b: np.ndarray) -> list:
    a_, b_ = a.tolist(), b.tolist()
    m, k, n = len(a_), len(b_), len(b_[0])
    c = [[0.0] * n for _ in range(m)]
    for i in range(m):
        for j in range(n):
            for l in range(k):
                c[i][j] += a_[i][l] * b_[l][j]
    return c


def hand_conv(x: np.ndarray, f: np.ndarray) -> list:
    x_, f_ = x.tolist(), f.tolist()
    b, c, h, w = x.shape
    n = f.shape[0]
    y = [[[[0.0] * w for _ in range(h)] for _ in range(n)] for _ in range(b)]
    for bi in range(b):
        for ni in range(n):
            for ci in range(c):
                for i in range(h):
                    for j in range(w):
                        for p in range(3):
                            for q in range(3):
                                r, s = i + p - 1, j + q - 1
                                if 0 <= r < h and 0 <= s < w:
                                    y[bi][ni][i][j] += x_[bi][ci][r][s] * f_[ni][ci][p][q]
    return y


def best(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 64)), rng.standard_normal((64, 64))
    x, f = rng.standard_normal((1, 8, 32, 32)), rng.standard_normal((8, 8, 3, 3))
    cases = [
        ("matmul 64x64x64", 64 ** 3, engine(MATMUL, {"A": a, "B": b}),
         lambda: hand_matmul(a, b), 8e6, 1.5),
        ("conv 1x8x32x32 -> 8, 3x3", 8 * 8 * 32 * 32 * 9, engine(CONV, {"x": x, "f": f}),
         lambda: hand_conv(x, f), 1e6, 3.0),
    ]
    ok = True
    for name, iterations, run_engine, run_hand, min_rate, max_ratio in cases:
        run_engine()  # warm-up: the generated code is compiled once per instance
        t_engine, t_hand = best(args.repeat, run_engine), best(args.repeat, run_hand)
        rate = iterations / t_engine
        ratio = t_engine / t_hand
        met = rate >= min_rate and ratio <= max_ratio
        ok &= met
        print(f"{name:26s} engine {rate / 1e6:6.3f} M it/s  ({t_engine:6.2f} s); "
              f"hand-written {iterations / t_hand / 1e6:6.3f} M it/s; engine/hand = {ratio:5.2f}x"
              f"  (targets: >= {min_rate / 1e6:g} M it/s, <= {max_ratio:g}x) "
              f"{'ok' if met else 'SLOW'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
