#!/usr/bin/env python3
"""Benchmark of the vector engine: each case is run by refinterp (the stdlib
operator through `api.evaluate`, engine `vector`) and by the same computation hand-written in
NumPy, in the same run; the ratio refinterp / NumPy is printed, with its target
(docs/performance.md "The certified-sum floor": contractions and reductions — matmul, sum,
softmax — <= 2x, element-wise <= 1.3x, convolution <= 1.5x, pooling <= 1.3x; the transposed
convolution and the bicubic grid sample <= 2x; AlexNet in-process <= 1.5x).

    python tools/bench_vector.py [--repeat N] [--case NAME ...] [--large]

The "K ..." rows run the Khronos stdlib's operators (`--profile khronos`; the folder named by
KHRONOS_STDLIB, else /tmp/khr/skriptnd-pyproject/skriptnd/stdlib; skipped when absent) on
AlexNet-sized shapes, next to the same operators of our stdlib ("ours ...") and one NumPy
baseline (`--case K --case ours` runs only them); their targets are the restated ones against
the certified-sum floor: convolution <= 1.5x, pooling and batch norm <= 1.3x, the linear
layer and LRN <= 2x.

Times are the best of N runs (after one warm-up run that also parses the stdlib). Every case
also checks that both results agree (the benchmark is no use if the engine is wrong).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from numpy.lib.stride_tricks import sliding_window_view  # noqa: E402

from refinterp.api import Limits, evaluate  # noqa: E402
from refinterp.lower import engines  # noqa: E402


DEFAULT_KHRONOS_STDLIB = "/tmp/khr/skriptnd-pyproject/skriptnd/stdlib"
LOWER_ITERATIONS = 2 * 10 ** 10  # the large deconvolution iterates 1e10 times


def best_time(function: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    result = function()  # warm-up
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


# --------------------------------------------------------------------------- NumPy references


def np_conv(x: np.ndarray, w: np.ndarray, stride: int = 1, pad: int = 0,
            bias: np.ndarray | None = None) -> np.ndarray:
    """NCHW convolution by sliding windows and tensordot."""
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = sliding_window_view(x, w.shape[2:], axis=(2, 3))[:, :, ::stride, ::stride]
    y = np.tensordot(windows, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2)
    return y + bias.reshape(1, -1, 1, 1) if bias is not None else y


def np_deconv(x: np.ndarray, w: np.ndarray, stride: int = 1) -> np.ndarray:
    """NCHW transposed convolution with the default padding of nn.deconv (output size
    input * stride), one BLAS product per filter tap added into a strided slice."""
    b, n, h, wd = x.shape
    fc, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    full = np.zeros((b, fc, (h - 1) * stride + kh, (wd - 1) * stride + kw))
    rows = x.reshape(b, n, h * wd)
    for j in range(kh):
        for k in range(kw):
            tap = np.matmul(w[:, :, j, k].T, rows).reshape(b, fc, h, wd)
            full[:, :, j:j + stride * (h - 1) + 1:stride, k:k + stride * (wd - 1) + 1:stride] \
                += tap
    front = [(kh - stride) // 2, (kw - stride) // 2]
    return full[:, :, front[0]:front[0] + h * stride, front[1]:front[1] + wd * stride]


def np_cubic_grid_sample(x: np.ndarray, grid: np.ndarray, a: float = -0.75) -> np.ndarray:
    """Bicubic grid sampling of NCHW `x` at `grid` (N, H', W', 2: x then y in [-1, 1]), corners
    not aligned, zeros outside (PyTorch's `grid_sample(mode='bicubic')`): Keys' kernel with
    a = -0.75 over the 4 x 4 neighbours; one gather of all channels per tap."""
    n, c, h, w = x.shape

    def weights(t: np.ndarray) -> list[np.ndarray]:
        """The four kernel weights at distances 1 + t, t, 1 - t, 2 - t."""
        def near(d):  # |d| <= 1
            return ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0

        def far(d):  # 1 < |d| < 2
            return ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a
        return [far(1.0 + t), near(t), near(1.0 - t), far(2.0 - t)]

    u = ((grid[..., 0] + 1.0) * w - 1.0) * 0.5  # column coordinate
    v = ((grid[..., 1] + 1.0) * h - 1.0) * 0.5  # row coordinate
    u0, v0 = np.floor(u), np.floor(v)
    wu, wv = weights(u - u0), weights(v - v0)
    u0, v0 = u0.astype(np.int64) - 1, v0.astype(np.int64) - 1
    batch = np.arange(n)[:, None, None]
    out = np.zeros((n, c) + grid.shape[1:3])
    for p in range(4):
        rows = v0 + p
        row_in = (rows >= 0) & (rows < h)
        for q in range(4):
            cols = u0 + q
            inside = row_in & (cols >= 0) & (cols < w)
            taps = x[batch, :, np.clip(rows, 0, h - 1), np.clip(cols, 0, w - 1)]  # N H' W' C
            weight = np.where(inside, wv[p] * wu[q], 0.0)
            out += (taps * weight[..., None]).transpose(0, 3, 1, 2)
    return out


def np_max_pool(x: np.ndarray, size: int, stride: int) -> np.ndarray:
    windows = sliding_window_view(x, (size, size), axis=(2, 3))[:, :, ::stride, ::stride]
    return windows.max(axis=(4, 5))


def np_grouped_conv(x: np.ndarray, w: np.ndarray, groups: int, pad: int,
                    bias: np.ndarray) -> np.ndarray:
    """NCHW convolution in `groups` groups (ONNX Conv's `group`): `np_conv` per group."""
    xs, ws = np.split(x, groups, axis=1), np.split(w, groups, axis=0)
    y = np.concatenate([np_conv(a, b, 1, pad) for a, b in zip(xs, ws)], axis=1)
    return y + bias.reshape(1, -1, 1, 1)


def np_lrn(x: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    """Local response normalization across channels (ONNX LRN): x / (bias + alpha / size *
    the sum of squares over `size` neighbouring channels) ** beta."""
    squares = np.pad(x * x, ((0, 0), ((size - 1) // 2, size // 2), (0, 0), (0, 0)))
    window = sliding_window_view(squares, size, axis=1).sum(axis=-1)
    return x / (bias + alpha / size * window) ** beta


def np_batch_norm(x: np.ndarray, mean: np.ndarray, variance: np.ndarray, bias: np.ndarray,
                  scale: np.ndarray, epsilon: float = 1e-5) -> np.ndarray:
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return (x - mean.reshape(shape)) / np.sqrt(variance.reshape(shape) + epsilon) * \
        scale.reshape(shape) + bias.reshape(shape)


def np_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# --------------------------------------------------------------------------- cases


def operator_case(name: str, inputs: dict, attributes: dict, output: str,
                  reference: Callable[[], np.ndarray], engine: str,
                  stdlib: str | None = None, profile: str = "spec"):
    """The engine runs of the operator, on instances built once (instantiation — attributes,
    shapes, asserts — is the compile step; `total` in the report includes it and the
    composition). A composed operator (softmax) is timed as the engine runs of its @lower
    parts in order, on the intermediate tensors of one run; the result is the last part's."""
    captured: list[tuple] = []

    def capture(instance, arrays, profile):
        captured.append((instance, dict(arrays), profile))
        return engines.make_engine(engine)(instance, arrays, profile)

    evaluate(name, inputs=inputs, attributes=attributes, engine=capture, stdlib=stdlib,
             profile=profile, limits=Limits(max_lower_iterations=LOWER_ITERATIONS))
    run = engines.make_engine(engine)

    def ours() -> np.ndarray:
        for instance, arrays, profile in captured:
            result = run(instance, arrays, profile)
        return result[output] if len(captured) == 1 else next(iter(result.values()))

    def total() -> np.ndarray:
        return evaluate(name, inputs=inputs, attributes=attributes, engine=engine,
                        stdlib=stdlib, profile=profile,
                        limits=Limits(max_lower_iterations=LOWER_ITERATIONS)).outputs[output]
    return ours, reference, total


ALEXNET = """
import nn;
import layout;

graph AlexNet {
    @input { input: real[1,3,224,224]; }
    @output { output: real[1,1000]; }
    @variable {
        kernel1: real[64,3,11,11]; bias1: real[64];
        kernel2: real[192,64,5,5]; bias2: real[192];
        kernel3: real[384,192,3,3]; bias3: real[384];
        kernel4: real[256,384,3,3]; bias4: real[256];
        kernel5: real[256,256,3,3]; bias5: real[256];
        weight6: real[4096,9216]; bias6: real[4096];
        weight7: real[4096,4096]; bias7: real[4096];
        weight8: real[1000,4096]; bias8: real[1000];
    }
    @compose {
        conv1 = nn.relu(nn.conv{stride = 4, padding = [2,2,2,2]}(input, kernel1, bias1));
        pool1 = nn.max_pool{size = [3,3], stride = [2,2], padding = [0,0,0,0]}(conv1);
        conv2 = nn.relu(nn.conv{padding = [2,2,2,2]}(pool1, kernel2, bias2));
        pool2 = nn.max_pool{size = [3,3], stride = [2,2], padding = [0,0,0,0]}(conv2);
        conv3 = nn.relu(nn.conv{padding = [1,1,1,1]}(pool2, kernel3, bias3));
        conv4 = nn.relu(nn.conv{padding = [1,1,1,1]}(conv3, kernel4, bias4));
        conv5 = nn.relu(nn.conv{padding = [1,1,1,1]}(conv4, kernel5, bias5));
        pool5 = nn.max_pool{size = [3,3], stride = [2,2], padding = [0,0,0,0]}(conv5);
        flat = layout.reshape{shape = [1, 9216]}(pool5);
        fc6 = nn.relu(nn.linear(flat, weight6, bias6));
        fc7 = nn.relu(nn.linear(fc6, weight7, bias7));
        output = nn.linear(fc7, weight8, bias8);
    }
}
"""


def alexnet_case(rng: np.random.Generator, engine: str):
    shapes = {"kernel1": (64, 3, 11, 11), "kernel2": (192, 64, 5, 5),
              "kernel3": (384, 192, 3, 3), "kernel4": (256, 384, 3, 3),
              "kernel5": (256, 256, 3, 3), "weight6": (4096, 9216),
              "weight7": (4096, 4096), "weight8": (1000, 4096)}
    params: dict[str, np.ndarray] = {}
    for i, (name, shape) in enumerate(shapes.items(), start=1):
        fan_in = int(np.prod(shape[1:]))
        params[name] = rng.standard_normal(shape) / np.sqrt(fan_in)
        params[f"bias{i}"] = rng.standard_normal(shape[0]) * 0.1
    x = rng.standard_normal((1, 3, 224, 224))
    temporary = tempfile.TemporaryDirectory(prefix="bench_alexnet_")  # removed with `ours`
    folder = Path(temporary.name)
    (folder / "main.sknd").write_text(ALEXNET)

    from refinterp import api

    program = api.load(folder / "main.sknd")

    def ours() -> np.ndarray:
        return api.evaluate(program, op="AlexNet", inputs={"input": x}, params=params,
                            engine=engine).outputs["output"]

    def reference() -> np.ndarray:
        relu = lambda v: np.maximum(v, 0.0)  # noqa: E731
        p = params
        y = relu(np_conv(x, p["kernel1"], 4, 2, p["bias1"]))
        y = np_max_pool(y, 3, 2)
        y = relu(np_conv(y, p["kernel2"], 1, 2, p["bias2"]))
        y = np_max_pool(y, 3, 2)
        y = relu(np_conv(y, p["kernel3"], 1, 1, p["bias3"]))
        y = relu(np_conv(y, p["kernel4"], 1, 1, p["bias4"]))
        y = relu(np_conv(y, p["kernel5"], 1, 1, p["bias5"]))
        y = np_max_pool(y, 3, 2).reshape(1, -1)
        y = relu(y @ p["weight6"].T + p["bias6"])
        y = relu(y @ p["weight7"].T + p["bias7"])
        return y @ p["weight8"].T + p["bias8"]

    ours.temporary = temporary  # type: ignore[attr-defined]  # keeps the folder alive
    ours.params = params  # type: ignore[attr-defined]  # the weights, for other tools
    return ours, reference, None


def build_cases(engine: str, large: bool = False) -> dict[str, tuple]:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((256, 256)), rng.standard_normal((256, 256))
    x1m, y1m = rng.standard_normal((1000, 1000)), rng.standard_normal((1000, 1000))
    conv_x, conv_w = rng.standard_normal((1, 64, 56, 56)), rng.standard_normal((64, 64, 3, 3))
    pool_x = rng.standard_normal((1, 64, 112, 112))
    deconv_x, deconv_w = rng.standard_normal((1, 64, 56, 56)), rng.standard_normal((64, 32, 5, 5))
    def case(name, inputs, attributes, output, reference, target):
        return lambda: (*operator_case(name, inputs, attributes, output, reference, engine),
                        target)

    return {
        "matmul 256^3": case("linalg.matmul", {"A": a, "B": b}, {}, "Z", lambda: a @ b, 2.0),
        "add 1M": case("math.add", {"x": x1m, "y": y1m}, {}, "z", lambda: x1m + y1m, 1.3),
        "sum_reduce 1000x1000 axis 1": case(
            "math.sum_reduce", {"input": x1m}, {"axes": [1]}, "output",
            lambda: x1m.sum(axis=1, keepdims=True), 2.0),
        "conv 1x64x56x56 3x3->64": case(
            "nn.conv", {"input": conv_x, "filter": conv_w}, {"padding": [1, 1, 1, 1]},
            "output", lambda: np_conv(conv_x, conv_w, 1, 1), 1.5),
        "deconv 1x64x56x56 5x5/2->32": case(
            "nn.deconv", {"input": deconv_x, "filter": deconv_w}, {"stride": [2, 2]},
            "output", lambda: np_deconv(deconv_x, deconv_w, 2), 2.0),
        "max_pool 3x3/2 1x64x112x112": case(
            "nn.max_pool", {"input": pool_x},
            {"size": [3, 3], "stride": [2, 2], "padding": [0, 0, 0, 0]}, "output",
            lambda: np_max_pool(pool_x, 3, 2), 1.3),
        "softmax 1000x1000": case("nn.softmax", {"input": x1m}, {"axes": [1]}, "output",
                                  lambda: np_softmax(x1m, 1), 2.0),
        "AlexNet 224 batch 1": lambda: (*alexnet_case(rng, engine), 1.5),
        **khronos_cases(rng, engine),
        **(large_cases(rng, case) if large else {}),
    }


def khronos_stdlib() -> str | None:
    """The Khronos stdlib folder (KHRONOS_STDLIB, else the usual extracted copy), or None."""
    folder = Path(os.environ.get("KHRONOS_STDLIB", DEFAULT_KHRONOS_STDLIB))
    return str(folder) if (folder / "nn.sknd").is_file() else None


def khronos_cases(rng: np.random.Generator, engine: str) -> dict[str, Callable]:
    """The AlexNet-sized operators a converted model (ONNX -> SkriptND, Khronos converter) runs,
    each through the Khronos stdlib with `--profile khronos` ("K ..." rows) and through our
    stdlib ("ours ..." rows), against the same NumPy baseline in the same run; empty when the
    Khronos stdlib is absent. The grouped convolution is AlexNet's second layer (ONNX `group`
    2), the asymmetric max pooling its last (pads 0,0,1,1)."""
    stdlib = khronos_stdlib()
    if stdlib is None:
        return {}
    x, w, b = (rng.standard_normal((1, 64, 27, 27)), rng.standard_normal((192, 64, 5, 5)),
               rng.standard_normal(192))
    gx, gw, gb = (rng.standard_normal((1, 96, 27, 27)), rng.standard_normal((256, 48, 5, 5)),
                  rng.standard_normal(256))
    px, ax = rng.standard_normal((1, 64, 55, 55)), rng.standard_normal((1, 256, 13, 13))
    fx, fw, fb = (rng.standard_normal((1, 9216)), rng.standard_normal((4096, 9216)),
                  rng.standard_normal(4096))
    lx = rng.standard_normal((1, 96, 55, 55))
    bx = rng.standard_normal((1, 64, 56, 56))
    mean, scale, shift = (rng.standard_normal(64) for _ in range(3))
    variance = rng.uniform(0.5, 1.5, 64)
    lrn = {"size": [5], "alpha": 1e-4, "beta": 0.75, "bias": 1.0}
    operators = {
        "conv 1x64x27x27 5x5->192": (
            "nn.conv", {"input": x, "filter": w, "bias": b}, {"padding": [2, 2, 2, 2]},
            lambda: np_conv(x, w, 1, 2, b), 1.5),
        "conv 1x96x27x27 5x5->256 g2": (
            "nn.conv", {"input": gx, "filter": gw, "bias": gb},
            {"padding": [2, 2, 2, 2], "groups": 2}, lambda: np_grouped_conv(gx, gw, 2, 2, gb),
            1.5),
        "max_pool 3x3/2 1x64x55x55": (
            "nn.max_pool", {"input": px}, {"size": [3, 3], "stride": [2, 2],
                                           "padding": [0, 0, 0, 0]},
            lambda: np_max_pool(px, 3, 2), 1.3),
        "max_pool 3x3/2 pad 0,0,1,1": (
            "nn.max_pool", {"input": ax}, {"size": [3, 3], "stride": [2, 2],
                                           "padding": [0, 0, 1, 1]},
            lambda: np_max_pool(np.pad(ax, ((0, 0), (0, 0), (0, 1), (0, 1)),
                                       constant_values=-np.inf), 3, 2), 1.3),
        "linear 9216->4096": (
            "nn.linear", {"input": fx, "filter": fw, "bias": fb}, {},
            lambda: fx @ fw.T + fb, 2.0),
        "lrn 5 1x96x55x55": (
            "nn.local_response_norm", {"input": lx}, lrn,
            lambda: np_lrn(lx, 5, 1e-4, 0.75, 1.0), 2.0),
        "batch_norm 1x64x56x56": (
            "nn.batch_norm", {"input": bx, "mean": mean, "variance": variance, "bias": shift,
                              "scale": scale}, {},
            lambda: np_batch_norm(bx, mean, variance, shift, scale), 1.3),
    }
    cases: dict[str, Callable] = {}
    for label, (name, inputs, attributes, reference, target) in operators.items():
        for prefix, folder, profile in (("K", stdlib, "khronos"), ("ours", None, "spec")):
            cases[f"{prefix} {label}"] = (
                lambda name=name, inputs=inputs, attributes=attributes, reference=reference,
                target=target, folder=folder, profile=profile: (
                    *operator_case(name, inputs, attributes, "output", reference, engine,
                                   folder, profile), target))
    return cases


def large_cases(rng: np.random.Generator, case: Callable) -> dict[str, Callable]:
    """The sizes of the slowest operators (`--large`; minutes before the vector engine's taps): a
    transposed convolution 4x64x224x224, 5x5 -> 32 channels, and a bicubic grid sample
    4x32x224x224; target <= 2x the hand-written NumPy version."""
    x, w = rng.standard_normal((4, 64, 224, 224)), rng.standard_normal((64, 32, 5, 5)) * 0.05
    image = rng.standard_normal((4, 32, 224, 224))
    grid = rng.uniform(-1.05, 1.05, (4, 224, 224, 2))
    return {
        "deconv 4x64x224x224 5x5->32": case(
            "nn.deconv", {"input": x, "filter": w}, {}, "output", lambda: np_deconv(x, w, 1),
            2.0),
        "cubic grid_sample 4x32x224x224": case(
            "image.grid_sample", {"input": image, "grid": grid}, {"mode": "CUBIC"}, "output",
            lambda: np_cubic_grid_sample(image, grid), 2.0),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--case", action="append", default=[],
                        help="run only cases whose name contains this text")
    parser.add_argument("--engine", default="vector", choices=["vector", "auto"])
    parser.add_argument("--large", action="store_true",
                        help="also the large deconvolution and bicubic grid sample (minutes)")
    args = parser.parse_args()
    failed = False
    print(f"{'case':36} {'engine':>9} {'numpy':>9} {'ratio':>7} {'target':>7}  check"
          f"        {'total':>9} {'ratio':>7}")
    for name, build in build_cases(args.engine, args.large).items():
        if args.case and not any(c in name for c in args.case):
            continue
        try:
            ours, reference, total, target = build()
            ours_time, ours_result = best_time(ours, args.repeat)
            total_time = best_time(total, args.repeat)[0] if total else None
        except Exception as error:  # a broken operator must not hide the other figures
            print(f"{name:36} failed: {str(error).splitlines()[0]}")
            failed = True
            continue
        ref_time, ref_result = best_time(reference, args.repeat)
        ok = np.allclose(ours_result, ref_result, rtol=1e-9, atol=1e-9)
        ratio = ours_time / ref_time
        verdict = "ok" if ratio <= target else "SLOW"
        goal = f"<= {target:g}x"
        failed |= verdict != "ok" or not ok
        line = (f"{name:36} {ours_time * 1e3:7.1f}ms {ref_time * 1e3:7.1f}ms {ratio:6.2f}x "
                f"{goal:>7}  {'equal' if ok else 'DIFFERENT'} {verdict:4}")
        if total_time is not None:
            line += f"   {total_time * 1e3:7.1f}ms {total_time / ref_time:6.2f}x"
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
