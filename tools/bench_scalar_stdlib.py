#!/usr/bin/env python3
"""Benchmark the compiled engine on every public lowered standard-library operator.

    python3 tools/bench_scalar_stdlib.py [--only SUBSTRING] [--repeat N] [--scale F]

Every public operator with an `@lower` block (kind "lowered" in `refinterp.api.operators(m)`
for each module `m` of `refinterp.api.stdlib_modules()`, names starting with `_` left out) runs
through `refinterp.api.evaluate("module.op", ..., engine="compiled")` on one fixed instance: the
`CASES` table below, or, for an element-wise operator without an entry, inputs built from its
signature (every required input SIDE x SIDE, real or bool as declared, a pack as PACK such
arrays, values in the operator's DOMAIN).

Printed, one row per operator, sorted by iterations/s (fastest first; failures last):

- the instance: the input shapes, then the attributes given;
- iterations: the sum over the operator's @lower formulas of the product of their index
  bounds. It is *counted*, not estimated: the `log` callback of `evaluate` receives the
  operator instance that ran, and `refinterp.lower.engines.iterations(instance)` sums
  `Formula.iterations()` over its lowering plan (the count the `auto` engine uses; read only,
  refinterp is not modified). A bound that depends on an earlier index (`layout.split`) counts
  its largest value, and iterations a condition skips are counted too. For example: an
  element-wise 160x160 operator is 25 600 (one formula over the output); `nn.linear` 30x30x30
  is 30*30 (the bias formula) + 30^3 = 27 900; `nn.conv` 1x4x16x16 with a 4x4x3x3 filter is
  4*16*16 (bias) + 4*4*16*16*9 = 37 888; `math.cumsum` on 25x32 along axis 1 is 25*32*32
  (its one formula runs over every pair of positions on the axis and keeps the prefix ones);
  `layout.scatter` is the copy of `data` plus the updates; `layout.shape` is 2 (one per
  dimension of its input, whatever the instance);
- seconds: the best of N runs of the whole `evaluate` call (instantiation, checks and the
  engine run; the engine run dominates at these sizes);
- iterations/s;
- where a simple equivalent exists (matmul, linear, conv, max/sum pooling, sum/max reductions,
  element-wise add/sub/mul/div/exp/relu: `nn.softmax` is composed, and max_reduce, sub, exp,
  sum_reduce and div are its lowered parts): the same computation written as the simplest
  one-line `@lower` formula (ONE_LINE_SOURCE, loaded with `api.load_source`), run with
  engine="compiled" on the same arrays in the same run; its time (best of N), the ratio stdlib
  time / one-line time, and whether both outputs agree (`np.allclose` with the engines'
  documented tolerance, rtol 1e-9 and atol 1e-12): "equal" or "DIFFERENT".

Then the median and the minimum iterations/s (an operator with fewer than 1/100 of the median
iteration count, i.e. `layout.shape`, times the call rather than formulas and is left out of
both) and the median stdlib / one-line ratio. An operator that fails on its instance is listed
with the error message and the run goes on. The exit status is 1 when an equivalence check
says DIFFERENT or could not be made (the operator or its one-liner failed), else 0; no time is
compared with an absolute target.

Instances: element-wise operators and reductions on 160x160 (25 600 iterations), matmul and
linear 30x30x30, conv and deconv 1x4x16x16 with a 4x4x3x3 filter and padding 1, max/sum pooling
1x4x32x32 with 3x3 windows and padding 1 (36 864); see `CASES`. They are about 2.5*10^4
iterations rather than 10^5 so that the default run takes a few minutes: the compiled engine runs
most stdlib formulas at 0.01-0.15 M iterations/s, so one such run takes 0.2-2.5 s. The formulas
in the engine's generated-code subset (the unary math functions, nn.linear, linalg.dot, ...) run
at 0.4-8 M/s. The one-line equivalents run at about 1-5 M/s: 1-2.5x faster than a stdlib
operator whose formulas are in that subset too (math.exp, nn.linear), 12-160x faster than the
others (in the run of the report: add 88x, matmul 162x, conv 157x, sum_reduce 97x).
`--scale F` multiplies every extent by F (at least 1, a multiple where the operator needs one):
`--scale 2` gives about 10^5 iterations for the 2-D instances (8x for 3-D ones such as matmul),
`--scale 0.05` a smoke run of about 1.5 s (what tests/test_bench_scalar_stdlib.py runs).

How long it takes, on a 2-core machine: the default run (`--repeat 3`, 121 operators) about
2.5 minutes (4 when the machine is busy); `--repeat 1` about a minute.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import refinterp.api as api  # noqa: E402

try:  # the exact iteration count of an instance (see the docstring)
    from refinterp.lower.engines import iterations as instance_iterations  # noqa: E402
except ImportError:  # pragma: no cover - an internal name moved: report "?" rather than crash
    instance_iterations = None


# --------------------------------------------------------------------------- instances

Sizer = Callable[..., int]
Inputs = dict[str, Any]


@dataclass(frozen=True)
class Case:
    """One operator's instance: `inputs(d, rng)` and `attributes(d)` build it, where `d(n)` is
    the extent n scaled by --scale (`d(n, multiple=m)` rounds to a multiple of m)."""

    inputs: Callable[[Sizer, np.random.Generator], Inputs]
    attributes: Callable[[Sizer], dict[str, Any]] = lambda d: {}
    generics: tuple[str, ...] = ()


def real(rng: np.random.Generator, *shape: int, low: float = -1.0, high: float = 1.0):
    return rng.uniform(low, high, size=shape)


def boolean(rng: np.random.Generator, *shape: int):
    return rng.random(shape) < 0.5


def case(inputs, attributes=None, generics=()) -> Case:
    return Case(inputs, attributes or (lambda d: {}), tuple(generics))


# Value ranges of element-wise operators whose domain is not all of [-1, 1] (or that are more
# interesting elsewhere): the default inputs are uniform in (low, high).
DOMAIN: dict[str, tuple[float, float]] = {
    "math.sqrt": (0.1, 4.0), "math.rsqrt": (0.1, 4.0), "math.log": (0.1, 4.0),
    "math.log2": (0.1, 4.0), "math.acosh": (1.1, 4.0), "math.asin": (-0.9, 0.9),
    "math.acos": (-0.9, 0.9), "math.atanh": (-0.9, 0.9), "math.rcp": (0.5, 2.0),
    "math.rsqr": (0.5, 2.0), "math.floor": (-5.0, 5.0), "math.ceil": (-5.0, 5.0),
    "math.round": (-5.0, 5.0), "math.div": (0.5, 2.0), "math.mod": (0.5, 2.0),
    "math.pow": (0.5, 2.0), "nn.thresholded_relu": (-2.0, 2.0), "nn.hard_sigmoid": (-4.0, 4.0),
    "math.sum_n": (-2.0, 2.0), "math.prod_n": (0.5, 2.0),
}

SIDE = 160  # element-wise and reduction instances are SIDE x SIDE: 25 600 iterations
PACK = 2    # the number of tensors in a pack input (math.sum_n, layout.concat, ...)


def _matrix_2d(d: Sizer) -> tuple[int, int]:
    return d(SIDE), d(SIDE)


CASES: dict[str, Case] = {
    # ---- nx (the Nx backend contract, docs/nx.md): 160x160 outputs where the shape allows
    "nx.full": case(lambda d, rng: {"value": np.array(2.5)},
                    lambda d: {"shape": [d(SIDE), d(SIDE)]}),
    "nx.from_host": case(lambda d, rng: {"buf": real(rng, d(SIDE) * d(SIDE))}),
    **{f"nx.reduce_{name}": case(lambda d, rng: {"x": real(rng, d(SIDE), d(SIDE))},
                                 lambda d: {"axes": [1]})
       for name in ("sum", "prod", "max", "min")},
    **{f"nx.{name}": case(lambda d, rng: {"x": real(rng, d(SIDE), d(SIDE))},
                          lambda d: {"axis": 1}) for name in ("argmax", "argmin")},
    "nx.expand": case(lambda d, rng: {"t": real(rng, 1, d(SIDE))},
                      lambda d: {"shape": [d(SIDE), d(SIDE)]}),
    "nx.reshape": case(lambda d, rng: {"t": real(rng, d(SIDE) * d(SIDE))},
                       lambda d: {"shape": [d(SIDE), d(SIDE)]}),
    "nx.permute": case(lambda d, rng: {"t": real(rng, d(SIDE), d(SIDE))},
                       lambda d: {"axes": [1, 0]}),
    "nx.shrink": case(lambda d, rng: {"t": real(rng, d(SIDE) + 2, d(SIDE) + 2)},
                      lambda d: {"ranges": [1, d(SIDE) + 1, 1, d(SIDE) + 1]}),
    "nx.flip": case(lambda d, rng: {"t": real(rng, d(SIDE), d(SIDE))},
                    lambda d: {"axes": [True, False]}),
    "nx.pad": case(lambda d, rng: {"t": real(rng, d(SIDE) - 2, d(SIDE) - 2),
                                   "fill_value": np.array(0.5)},
                   lambda d: {"padding": [1, 1, 1, 1]}),
    "nx.cat": case(lambda d, rng: {"tensors": [real(rng, d(SIDE), d(SIDE) // 2)] * PACK},
                   lambda d: {"axis": 1}),
    "nx.cast": case(lambda d, rng: {"x": real(rng, d(SIDE), d(SIDE), low=-5, high=5)},
                    generics=("int", "real")),
    "nx.gather": case(lambda d, rng: {"data": real(rng, d(SIDE), d(SIDE)),
                                      "indices": rng.integers(0, d(SIDE), (d(SIDE), d(SIDE)))},
                      lambda d: {"axis": 0}),
    **{f"nx.scan_{name}": case(lambda d, rng: {"x": real(rng, d(SIDE), d(16))},
                               lambda d: {"axis": 1}) for name in ("sum", "prod", "max", "min")},
    **{f"nx.scatter_{name}": case(lambda d, rng: {
        "template": real(rng, d(SIDE), d(SIDE)), "updates": real(rng, d(SIDE), d(SIDE)),
        "indices": rng.integers(0, d(SIDE), (d(SIDE), d(SIDE)))},
        lambda d: {"axis": 0}) for name in ("set", "add")},
    "nx.unfold": case(lambda d, rng: {"t": real(rng, 1, d(40), d(40))},
                      lambda d: {"kernel_size": [3, 3], "stride": [1, 1], "dilation": [1, 1],
                                 "padding": [1, 1, 1, 1]}),
    "nx.fold": case(lambda d, rng: {"t": real(rng, 1, 9, d(40) * d(40))},
                    lambda d: {"output_size": [d(40), d(40)], "kernel_size": [3, 3],
                               "stride": [1, 1], "dilation": [1, 1], "padding": [1, 1, 1, 1]}),
    # ---- image: 1x1 images; the nearest ones give a 160x160 output (one iteration each)
    "image.nearest_downsample": case(
        lambda d, rng: {"input": real(rng, 1, 1, d(320, multiple=2), d(320, multiple=2))},
        lambda d: {"axes": [2, 3], "factor": [2, 2]}),
    "image.nearest_upsample": case(
        lambda d, rng: {"input": real(rng, 1, 1, d(80), d(80))},
        lambda d: {"axes": [2, 3], "factor": [2, 2]}),
    "image.linear_upsample": case(
        lambda d, rng: {"input": real(rng, 1, 1, d(40), d(40))},
        lambda d: {"axes": [2, 3], "factor": [2, 2]}),
    "image.nearest_resize": case(
        lambda d, rng: {"input": real(rng, 1, 1, d(100), d(100))},
        lambda d: {"axes": [2, 3], "size": [d(160), d(160)]}),
    "image.linear_resize": case(
        lambda d, rng: {"input": real(rng, 1, 1, d(50), d(50))},
        lambda d: {"axes": [2, 3], "size": [d(80), d(80)]}),
    # ---- layout: 160x160 outputs (or inputs, for the operators that split one)
    "layout.constant": case(
        lambda d, rng: {}, lambda d: {"shape": [d(SIDE), d(SIDE)],
                                      "value": [float(v) for v in range(d(SIDE) * d(SIDE))]}),
    "layout.tensor": case(
        lambda d, rng: {}, lambda d: {"shape": [d(SIDE), d(SIDE)],
                                      "value": [float(v) for v in range(d(SIDE) * d(SIDE))]}),
    "layout.uniform": case(
        lambda d, rng: {"value": 2.5}, lambda d: {"shape": [d(SIDE), d(SIDE)]}),
    "layout.range": case(lambda d, rng: {},
                         lambda d: {"first": 0, "last": d(SIDE) * d(SIDE)}),
    "layout.shape": case(lambda d, rng: {"input": real(rng, d(SIDE), d(SIDE))}),
    "layout.cast": case(lambda d, rng: {"x": real(rng, d(SIDE), d(SIDE), low=-5, high=5)},
                        generics=("int", "real")),
    "layout.flatten": case(lambda d, rng: {"input": real(rng, d(16), d(16), d(100))},
                           lambda d: {"axis": 1, "rank": 2}),
    "layout.unflatten": case(
        lambda d, rng: {"input": real(rng, d(SIDE), d(SIDE, multiple=4))},
        lambda d: {"axis": 1, "shape": [4, d(SIDE, multiple=4) // 4]}),
    "layout.squeeze": case(lambda d, rng: {"input": real(rng, d(SIDE), 1, d(SIDE))},
                           lambda d: {"axes": [1]}),
    "layout.unsqueeze": case(lambda d, rng: {"input": real(rng, d(SIDE), d(SIDE))},
                             lambda d: {"axes": [1]}),
    "layout.concat": case(
        lambda d, rng: {"inputs": [real(rng, d(SIDE // PACK), d(SIDE)) for _ in range(PACK)]},
        lambda d: {"axis": 0}),
    "layout.split": case(
        lambda d, rng: {"input": real(rng, d(SIDE, multiple=PACK), d(SIDE))},
        lambda d: {"axis": 0, "count": PACK}),
    "layout.stack": case(
        lambda d, rng: {"inputs": [real(rng, d(SIDE // PACK), d(SIDE)) for _ in range(PACK)]},
        lambda d: {"axis": 0}),
    "layout.unstack": case(lambda d, rng: {"input": real(rng, PACK, d(SIDE // PACK), d(SIDE))},
                           lambda d: {"axis": 0}),
    "layout.tile": case(lambda d, rng: {"input": real(rng, d(SIDE // 2), d(SIDE // 2))},
                        lambda d: {"repeats": [2, 2]}),
    "layout.broadcast": case(lambda d, rng: {"input": real(rng, d(SIDE), 1)},
                             lambda d: {"axes": [1], "shape": [d(SIDE)]}),
    "layout.slice": case(lambda d, rng: {"input": real(rng, d(2 * SIDE), d(2 * SIDE))},
                         lambda d: {"axes": [0, 1], "begin": [0, 1],
                                    "end": [d(2 * SIDE), d(2 * SIDE)], "stride": [2, 2]}),
    "layout.pad": case(lambda d, rng: {"input": real(rng, d(SIDE - 2), d(SIDE - 2))},
                       lambda d: {"padding": [1, 1, 1, 1]}),
    "layout.transpose": case(lambda d, rng: {"input": real(rng, d(SIDE), d(SIDE))}),
    "layout.space_to_depth": case(
        lambda d, rng: {"input": real(rng, 1, 4, d(80, multiple=2), d(80, multiple=2))},
        lambda d: {"block_size": [2, 2]}),
    "layout.depth_to_space": case(
        lambda d, rng: {"input": real(rng, 1, 16, d(40), d(40))},
        lambda d: {"block_size": [2, 2]}),
    "layout.gather": case(
        lambda d, rng: {"data": real(rng, d(SIDE), d(SIDE)),
                        "index": rng.integers(0, d(SIDE), size=d(SIDE))},
        lambda d: {"axis": 0}),
    "layout.gather_nd": case(  # 2560 index pairs into 160x160x10: 2560x10 gathered
        lambda d, rng: {"data": real(rng, d(SIDE), d(SIDE), d(10)),
                        "indices": rng.integers(0, d(SIDE), size=(d(2560), 2))}),
    "layout.scatter": case(  # copy 160x160, then 80 distinct rows of updates
        lambda d, rng: {"data": real(rng, d(SIDE), d(SIDE)),
                        "indices": np.tile(rng.permutation(d(SIDE))[:d(SIDE // 2)][:, None],
                                           (1, d(SIDE))),
                        "updates": real(rng, d(SIDE // 2), d(SIDE))},
        lambda d: {"axis": 0}),
    "layout.scatter_nd": case(  # copy 160x160, then half of its positions (distinct) updated
        lambda d, rng: {"data": real(rng, d(SIDE), d(SIDE)),
                        "indices": np.stack(np.divmod(rng.permutation(d(SIDE) * d(SIDE))[
                            :d(SIDE) * d(SIDE) // 2], d(SIDE)), axis=1),
                        "updates": real(rng, d(SIDE) * d(SIDE) // 2)}),
    # ---- linalg
    "linalg.dot": case(lambda d, rng: {"x": real(rng, d(SIDE * SIDE)),
                                       "y": real(rng, d(SIDE * SIDE))}),
    "linalg.matvec": case(lambda d, rng: {"A": real(rng, d(SIDE), d(SIDE)),
                                          "x": real(rng, d(SIDE))}),
    "linalg.matmul": case(lambda d, rng: {"A": real(rng, d(30), d(30)),
                                          "B": real(rng, d(30), d(30))}),
    "linalg.outer": case(lambda d, rng: {"x": real(rng, d(SIDE)), "y": real(rng, d(SIDE))}),
    # ---- math: what the element-wise default does not cover
    "math.not": case(lambda d, rng: {"x": boolean(rng, *_matrix_2d(d))}),
    "math.select": case(lambda d, rng: {"c": boolean(rng, *_matrix_2d(d)),
                                        "x": real(rng, *_matrix_2d(d)),
                                        "y": real(rng, *_matrix_2d(d))}),
    "math.clamp": case(lambda d, rng: {"x": real(rng, *_matrix_2d(d)),
                                       "a": real(rng, *_matrix_2d(d), low=-1.0, high=-0.2),
                                       "b": real(rng, *_matrix_2d(d), low=0.2, high=1.0)}),
    "math.cumsum": case(lambda d, rng: {"input": real(rng, d(25), d(32))},  # 25 x 32 x 32
                        lambda d: {"axis": 1}),
    "math.argmin": case(lambda d, rng: {"input": real(rng, *_matrix_2d(d))},
                        lambda d: {"axis": 1}),
    "math.argmax": case(lambda d, rng: {"input": real(rng, *_matrix_2d(d))},
                        lambda d: {"axis": 1}),
    "misc.mesh_grid": case(lambda d, rng: {"inputs": [real(rng, d(SIDE)),
                                                      real(rng, d(SIDE // 2))]}),
    # ---- nn
    "nn.linear": case(lambda d, rng: {"input": real(rng, d(30), d(30)),
                                      "filter": real(rng, d(30), d(30))}),
    "nn.conv": case(lambda d, rng: {"input": real(rng, 1, d(4), d(16), d(16)),
                                    "filter": real(rng, d(4), d(4), 3, 3)},
                    lambda d: {"padding": [1, 1, 1, 1]}),
    "nn.deconv": case(lambda d, rng: {"input": real(rng, 1, d(4), d(16), d(16)),
                                      "filter": real(rng, d(4), d(4), 3, 3)},
                      lambda d: {"padding": [1, 1, 1, 1]}),
    "nn.max_pool": case(lambda d, rng: {"input": real(rng, 1, d(4), d(32), d(32))},
                        lambda d: {"size": [3, 3], "padding": [1, 1, 1, 1]}),
    "nn.sum_pool": case(lambda d, rng: {"input": real(rng, 1, d(4), d(32), d(32))},
                        lambda d: {"size": [3, 3], "padding": [1, 1, 1, 1]}),
    "nn.prelu": case(lambda d, rng: {"x": real(rng, *_matrix_2d(d)),
                                     "alpha": real(rng, d(SIDE), low=0.0, high=0.5)}),
    # ---- quant: 4 channels of 80x80
    "quant.zero_point_linear_quantize": case(
        lambda d, rng: {"input": real(rng, 1, 4, d(80), d(80), low=-4.0, high=4.0)},
        lambda d: {"zero_point": [0, 1, 2, 3], "scale": [0.1, 0.2, 0.3, 0.4], "bits": 8}),
    "quant.min_max_linear_quantize": case(
        lambda d, rng: {"input": real(rng, 1, 4, d(80), d(80), low=-4.0, high=4.0)},
        lambda d: {"min": [-1.0, -2.0, -3.0, -4.0], "max": [1.0, 2.0, 3.0, 4.0], "bits": 8}),
}

# Reductions on 160x160 along axis 1.
for _name in ("min_reduce", "max_reduce", "sum_reduce", "argmin_nd", "argmax_nd"):
    CASES[f"math.{_name}"] = case(lambda d, rng: {"input": real(rng, *_matrix_2d(d))},
                                  lambda d: {"axes": [1]})
CASES["math.prod_reduce"] = case(
    lambda d, rng: {"input": real(rng, *_matrix_2d(d), low=0.9, high=1.1)},
    lambda d: {"axes": [1]})
for _name in ("any_reduce", "all_reduce"):
    CASES[f"math.{_name}"] = case(lambda d, rng: {"input": boolean(rng, *_matrix_2d(d))},
                                  lambda d: {"axes": [1]})


def default_case(signature: Any, name: str) -> Case | None:
    """The element-wise default: every required input SIDE x SIDE (a pack: PACK of them), real or
    bool as declared, values uniform in DOMAIN[name] (default (-1, 1)); no attributes. None
    when the operator needs an attribute (it must then have a CASES entry)."""
    if any(a.default is None and not a.optional for a in signature.attributes):
        return None
    low, high = DOMAIN.get(name, (-1.0, 1.0))
    specs = [(p.name, p.type) for p in signature.inputs if not p.optional]

    def one(kind: str, d: Sizer, rng: np.random.Generator) -> np.ndarray:
        if kind == "bool":
            return boolean(rng, *_matrix_2d(d))
        return real(rng, *_matrix_2d(d), low=low, high=high)

    def inputs(d: Sizer, rng: np.random.Generator) -> Inputs:
        built: Inputs = {}
        for input_name, declared in specs:
            # `bool[s..]`, `T[sx..(rx)]`, `real^(rank)[...]`; a pack ends in `]..(n)`
            kind = declared.split("[", 1)[0].split("^", 1)[0].strip()
            packed = "]..(" in declared
            built[input_name] = [one(kind, d, rng) for _ in range(PACK)] if packed \
                else one(kind, d, rng)
        return built
    return Case(inputs)


# --------------------------------------------------------------------------- one-liners

# The simplest @lower formula for the same computation as the stdlib operator on its CASES
# instance (same input names, the same arrays). A one-liner may be specific to the instance's
# rank and attributes (axis 1, 3x3 windows, padding 1, stride 1).
ONE_LINE_SOURCE = """
operator add { @input { x: real[s..]; y: real[s..]; } @output { z: real[s..]; }
    @lower { z[i..] = x[i..] + y[i..], i < s; } }
operator sub { @input { x: real[s..]; y: real[s..]; } @output { z: real[s..]; }
    @lower { z[i..] = x[i..] - y[i..], i < s; } }
operator mul { @input { x: real[s..]; y: real[s..]; } @output { z: real[s..]; }
    @lower { z[i..] = x[i..] * y[i..], i < s; } }
operator div { @input { x: real[s..]; y: real[s..]; } @output { z: real[s..]; }
    @lower { z[i..] = x[i..] / y[i..], i < s; } }
operator exp { @input { x: real[s..]; } @output { y: real[s..]; }
    @lower { y[i..] = `exp`(x[i..]), i < s; } }
operator relu { @input { x: real[s..]; } @output { y: real[s..]; }
    @lower { y[i..] = x[i..] >> 0.0, i < s; } }
operator sum_reduce { @input { input: real[m, n]; } @output { output: real[m, 1]; }
    @lower { output[i, 0] += input[i, j], i < m, j < n; } }
operator max_reduce { @input { input: real[m, n]; } @output { output: real[m, 1]; }
    @lower { output[i, 0] >= input[i, j], i < m, j < n; } }
operator matmul { @input { A: real[m, k]; B: real[k, n]; } @output { Z: real[m, n]; }
    @lower { Z[i, j] += A[i, l] * B[l, j], i < m, j < n, l < k; } }
operator linear { @input { input: real[b, c]; filter: real[n, c]; } @output { output: real[b, n]; }
    @lower { output[i, j] += input[i, l] * filter[j, l], i < b, j < n, l < c; } }
operator conv { @input { input: real[b, c, h, w]; filter: real[n, c, 3, 3]; }
    @output { output: real[b, n, h, w]; }
    @lower { output[bi, ni, i, j] += input[bi, ci, |i + p - 1|, |j + q - 1|] * filter[ni, ci, p, q],
        bi < b, ni < n, ci < c, i < h, j < w, p < 3, q < 3; } }
operator max_pool { @input { input: real[b, c, h, w]; } @output { output: real[b, c, h, w]; }
    @lower { output[bi, ci, i, j] >= input[bi, ci, |i + p - 1|, |j + q - 1|],
        bi < b, ci < c, i < h, j < w, p < 3, q < 3; } }
operator sum_pool { @input { input: real[b, c, h, w]; } @output { output: real[b, c, h, w]; }
    @lower { output[bi, ci, i, j] += input[bi, ci, |i + p - 1|, |j + q - 1|],
        bi < b, ci < c, i < h, j < w, p < 3, q < 3; } }
"""

# stdlib operator -> the one-liner of ONE_LINE_SOURCE computing the same on its instance
ONE_LINE = {
    "math.add": "add", "math.sub": "sub", "math.mul": "mul", "math.div": "div",
    "math.exp": "exp", "nn.relu": "relu", "math.sum_reduce": "sum_reduce",
    "math.max_reduce": "max_reduce", "linalg.matmul": "matmul", "nn.linear": "linear",
    "nn.conv": "conv", "nn.max_pool": "max_pool", "nn.sum_pool": "sum_pool",
}


# --------------------------------------------------------------------------- running


@dataclass
class Result:
    """What was measured for one operator."""

    name: str
    instance: str = ""
    iterations: int | None = None
    seconds: float | None = None
    error: str | None = None
    one_line_seconds: float | None = None
    one_line_error: str | None = None
    check: str | None = None  # "equal" / "DIFFERENT" when there is a one-liner
    paths: list[str] = field(default_factory=list)  # the compiled engine's log, per instance run

    @property
    def rate(self) -> float | None:
        if self.iterations is None or not self.seconds:
            return None
        return self.iterations / self.seconds


def lowered_operators() -> list[str]:
    """The qualified names of every public lowered stdlib operator, in module order."""
    return [s.qualified for module in api.stdlib_modules() for s in api.operators(module)
            if s.kind == "lowered" and not s.name.startswith("_")]


def sizer(scale: float) -> Sizer:
    def d(n: int, multiple: int = 1) -> int:
        return max(multiple, int(round(n * scale / multiple)) * multiple)
    return d


def describe_instance(inputs: Inputs, attributes: dict[str, Any],
                      generics: tuple[str, ...]) -> str:
    def shape(value: Any) -> str:
        if isinstance(value, list):
            shapes = {shape(v) for v in value}
            return f"{len(value)}*{shapes.pop()}" if len(shapes) == 1 else \
                "[" + ",".join(shape(v) for v in value) + "]"
        array = np.asarray(value)
        return "x".join(map(str, array.shape)) if array.ndim else "scalar"

    def short(value: Any) -> str:
        if isinstance(value, (list, tuple)):
            if len(value) > 4:
                return f"[{len(value)} values]"
            return "[" + ",".join(short(v) for v in value) + "]"
        return repr(value) if isinstance(value, str) else str(value)

    parts = [shape(v) for v in inputs.values()]
    parts += [f"{k}={short(v)}" for k, v in attributes.items()]
    if generics:
        parts.insert(0, "<" + ",".join(generics) + ">")
    return " ".join(parts)


def first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    message = text[0] if text else ""
    if isinstance(error, api.Error):
        return message
    return f"{type(error).__name__}: {message}"  # an internal error: still listed, never raised


def timed(function: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def only_output(run: Any) -> Any:
    outputs = list(run.outputs.values())
    return outputs[0] if len(outputs) == 1 else outputs


def outputs_equal(a: Any, b: Any) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and \
            all(outputs_equal(x, y) for x, y in zip(a, b))
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True))


def measure(name: str, signature: Any, scale: float, repeat: int,
            one_line_program: Any) -> Result:
    result = Result(name)
    chosen = CASES.get(name) or default_case(signature, name)
    if chosen is None:
        result.error = "no instance: the operator needs attributes and has no CASES entry"
        return result
    d = sizer(scale)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    try:
        inputs = chosen.inputs(d, rng)
        attributes = chosen.attributes(d)
    except Exception as error:  # a broken CASES entry must not hide the other operators
        result.error = f"building the instance: {first_line(error)}"
        return result
    result.instance = describe_instance(inputs, attributes, chosen.generics)
    counted: list[int] = []

    def log(instance: Any, how: str) -> None:
        if instance_iterations is not None:
            counted.append(instance_iterations(instance))
        if how not in result.paths:
            result.paths.append(how)

    def run() -> Any:
        counted.clear()
        return api.evaluate(name, inputs=inputs, attributes=attributes,
                            generics=chosen.generics, engine="compiled",
                            hooks=api.Hooks(log=log))
    try:
        result.seconds, stdlib_run = timed(run, repeat)
    except Exception as error:
        result.error = first_line(error)
        return result
    result.iterations = sum(counted) if counted else None
    if name not in ONE_LINE:
        return result
    try:
        result.one_line_seconds, one_run = timed(
            lambda: api.evaluate(one_line_program, op=ONE_LINE[name], inputs=inputs,
                                 engine="compiled"), repeat)
    except Exception as error:
        result.one_line_error = first_line(error)
        return result
    result.check = "equal" if outputs_equal(only_output(stdlib_run), only_output(one_run)) \
        else "DIFFERENT"
    return result


# --------------------------------------------------------------------------- report


def rate_text(rate: float | None) -> str:
    return "?" if rate is None else f"{rate / 1e6:.4f}M"


def report(results: list[Result], out: Any = None, why: bool = False) -> None:
    out = out if out is not None else sys.stdout
    ran = [r for r in results if r.error is None]
    failed = [r for r in results if r.error is not None]
    ran.sort(key=lambda r: -(r.rate or 0.0))
    width = max([len(r.name) for r in results] + [8])
    inst = max([len(r.instance) for r in ran] + [8])
    header = (f"{'operator':{width}}  {'instance':{inst}}  {'iterations':>10}  {'seconds':>8}  "
              f"{'it/s':>9}  {'1-line s':>8}  {'ratio':>7}  check")
    print(header, file=out)
    print("-" * len(header), file=out)
    for r in ran:
        line = (f"{r.name:{width}}  {r.instance:{inst}}  "
                f"{r.iterations if r.iterations is not None else '?':>10}  "
                f"{r.seconds:8.3f}  {rate_text(r.rate):>9}")
        if r.one_line_seconds is not None:
            line += (f"  {r.one_line_seconds:8.4f}  {r.seconds / r.one_line_seconds:6.1f}x"
                     f"  {r.check}")
        elif r.one_line_error is not None:
            line += f"  one-line failed: {r.one_line_error}"
        print(line.rstrip(), file=out)
    for r in failed:
        print(f"{r.name:{width}}  {r.instance or '-':{inst}}  FAILED: {r.error}", file=out)
    if why:
        print(file=out)
        print("the compiled engine's path, per operator (as --verbose prints it):", file=out)
        for r in ran:
            for path in r.paths:
                print(f"{r.name:{width}}  {path}", file=out)
    print(file=out)
    print(f"{len(results)} operators: {len(ran)} ran, {len(failed)} failed", file=out)
    # An operator whose iterations do not grow with the instance (layout.shape: one per
    # dimension) times the call, not its formulas: an operator with fewer than 1/100 of the
    # median iteration count is left out of the summary.
    counted = [r for r in ran if r.rate is not None]
    if counted:
        floor = statistics.median(r.iterations for r in counted) / 100
        summarised = [r for r in counted if r.iterations >= floor]
        slowest = min(summarised, key=lambda r: r.rate)
        left_out = [f"{r.name} ({r.iterations})" for r in counted if r.iterations < floor]
        print(f"iterations/s over {len(summarised)} operators: median "
              f"{rate_text(statistics.median(r.rate for r in summarised))}, minimum "
              f"{rate_text(slowest.rate)} ({slowest.name})"
              + (f"; left out, too few iterations to time the formulas: {', '.join(left_out)}"
                 if left_out else ""), file=out)
    checked = [r for r in results if r.name in ONE_LINE]
    ratios = [r.seconds / r.one_line_seconds for r in checked
              if r.seconds and r.one_line_seconds]
    if checked:
        median = f"median {statistics.median(ratios):.1f}x" if ratios else "no ratio"
        print(f"stdlib / one-line time: {median} over {len(ratios)} operators; checks: "
              f"{sum(r.check == 'equal' for r in checked)} equal, "
              f"{sum(r.check == 'DIFFERENT' for r in checked)} DIFFERENT, "
              f"{sum(r.check is None for r in checked)} not made", file=out)


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, metavar="SUBSTRING",
                        help="run only operators whose qualified name contains SUBSTRING")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs (default 3)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply every instance extent by F (default 1)")
    parser.add_argument("--why", action="store_true",
                        help="after the table, the compiled engine's path for every formula: "
                             "generated code (after folding) or the reference, and why")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.scale <= 0:
        parser.error("--scale must be positive")
    return args


def run(args: argparse.Namespace, progress: Callable[[str], None] | None = None) -> list[Result]:
    """Measure every selected operator; `progress(name)` is called before each."""
    one_line_program = api.load_source(ONE_LINE_SOURCE, path="one_line.sknd")
    signatures = {s.qualified: s for module in api.stdlib_modules()
                  for s in api.operators(module)}
    for module in api.stdlib_modules():  # parse the stdlib before anything is timed
        api.load_module(module)
    results = []
    for name in lowered_operators():
        if args.only is not None and args.only not in name:
            continue
        if progress is not None:
            progress(name)
        results.append(measure(name, signatures[name], args.scale, args.repeat,
                               one_line_program))
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    started = time.perf_counter()
    results = run(args, progress=lambda name: print(f"  {name} ...", file=sys.stderr,
                                                    flush=True))
    report(results, why=args.why)
    print(f"total {time.perf_counter() - started:.1f} s (--repeat {args.repeat}, "
          f"--scale {args.scale:g})")
    bad = [r for r in results if r.name in ONE_LINE and r.check != "equal"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
