#!/usr/bin/env python3
"""Peer benchmark: AlexNet, a ResNet basic-block stack and an LSTM, with the same weights, in
refinterp, in ONNX's reference evaluator (`onnx.reference.ReferenceEvaluator`) and in ONNX
Runtime; one run, printing the times and their ratios.

    python tools/bench_peers.py [--repeat N] [--model NAME ...] [--small] [--json OUT]

Each model is built twice from the same NumPy weights: as a SkriptND graph (written to a
temporary folder as main.sknd and loaded once, outside the timed region) and as an ONNX model
built with `onnx.helper`. AlexNet is the graph of tools/bench_vector.py (`ALEXNET`); `--small`
shrinks every model to a toy size (AlexNet's channel and feature counts are scaled by renaming
its numbers) so the whole run takes seconds.

Precision: refinterp computes in float64, and so does the reference evaluator here. ONNX
Runtime's CPU provider has no float64 kernel for Conv (and none for LSTM: "LSTM operator does
not support double yet"), so every ORT model is float32 — the table says so.

Checks (the benchmark is no use when the peers disagree): the refinterp outputs must equal the
reference evaluator's to a relative error of 1e-9 (both float64) and ORT's to 1e-6 (float32).
The relative error is max|a - b| / max|b| over each output: an element-wise relative error is
meaningless for values near zero, and a float32 result is only accurate relative to the scale
of the tensor. A failed check gives exit status 1.

Times are the best of N runs (default 3) after one warm-up run. Target: refinterp at least 5x
faster than the reference evaluator on each model; a missed target prints SLOW but is not a
failure.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS.parent))
sys.path.insert(0, str(TOOLS))

import bench_vector  # noqa: E402

from refinterp import api  # noqa: E402

TARGET = 5.0          # reference evaluator time / refinterp time, at least
TOLERANCE_F64 = 1e-9  # refinterp vs the reference evaluator (float64 both)
TOLERANCE_F32 = 1e-6  # refinterp vs ONNX Runtime (float32)
OPSET = 17


@dataclass
class Model:
    """One model in both forms, with its weights and inputs.

    `sknd` is the text of main.sknd and `graph` the graph to run; `inputs` and `params` (by
    name relative to the graph) are what refinterp gets. `onnx_nodes()` builds the ONNX graph's
    nodes; `onnx_inputs` are the ONNX graph inputs, `onnx_weights` its initializers, and
    `from_onnx` maps the ONNX outputs (in the order of `onnx_outputs`) to refinterp's output
    names and shapes."""
    name: str
    sknd: str
    graph: str
    inputs: dict[str, np.ndarray]
    params: dict[str, np.ndarray]
    onnx_nodes: Callable[[], list]
    onnx_inputs: dict[str, np.ndarray]
    onnx_weights: dict[str, np.ndarray]
    onnx_outputs: list[str]
    from_onnx: Callable[[list[np.ndarray]], dict[str, np.ndarray]]


best_time = bench_vector.best_time  # best of `repeat` after a warm-up


def relative_error(ours: np.ndarray, theirs: np.ndarray) -> float:
    """max|ours - theirs| / max|theirs| (see the module docstring); inf on a shape mismatch."""
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    if ours.shape != theirs.shape:
        return float("inf")
    scale = float(np.max(np.abs(theirs))) if theirs.size else 0.0
    error = float(np.max(np.abs(ours - theirs))) if theirs.size else 0.0
    return error / scale if scale > 0 else error


def load(text: str) -> tuple[Any, tempfile.TemporaryDirectory]:
    """Write `text` as main.sknd in a fresh temporary folder and load it; the folder object
    is returned so the caller keeps it alive."""
    folder = tempfile.TemporaryDirectory(prefix="bench_peers_")
    path = Path(folder.name) / "main.sknd"
    path.write_text(text)
    return api.load(path), folder


def scaled_normal(rng: np.random.Generator, shape: tuple[int, ...], scale: float) -> np.ndarray:
    """N(0, 1) * scale, scaled in place (no second array of the same size: the memory
    benchmark builds AlexNet's 61 M weights this way)."""
    values = rng.standard_normal(shape)
    values *= scale
    return values


# --------------------------------------------------------------------------- AlexNet

# tools/bench_vector.py's AlexNet numbers and their --small replacements: a 67x67 image ends
# in a 1x1 map after pool5, so the flattened size is the last conv's channel count.
ALEXNET_SMALL = {"224": "67", "64": "8", "192": "16", "384": "24", "256": "16",
                 "9216": "16", "4096": "32", "1000": "10"}

# The layers of ALEXNET in order, to build the ONNX graph and to list the activation shapes:
# ("conv", index, stride, padding) is conv + bias + relu; ("pool",) max pool 3x3 stride 2;
# ("flatten",); ("fc", index, relu).
ALEXNET_LAYERS: list[tuple] = [
    ("conv", 1, 4, 2), ("pool",), ("conv", 2, 1, 2), ("pool",), ("conv", 3, 1, 1),
    ("conv", 4, 1, 1), ("conv", 5, 1, 1), ("pool",), ("flatten",),
    ("fc", 6, True), ("fc", 7, True), ("fc", 8, False)]


def alexnet_text(small: bool) -> str:
    """bench_vector.ALEXNET, with its sizes renamed by ALEXNET_SMALL when `small`."""
    if not small:
        return bench_vector.ALEXNET
    return re.sub(r"\b(\d+)\b", lambda m: ALEXNET_SMALL.get(m.group(1), m.group(1)),
                  bench_vector.ALEXNET)


def alexnet_weights(program: Any, seed: int = 0) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Random weights for every variable of the AlexNet program (shapes as `api.shapes`
    finds them: weights N(0, 1/fan_in), biases N(0, 0.1^2)) and a random input image."""
    rng = np.random.default_rng(seed)
    checked = api.shapes(program, op="AlexNet")
    params = {}
    for scoped, tensor in checked.variables.items():
        shape = tuple(tensor.shape)
        scale = 0.1 if len(shape) == 1 else 1.0 / np.sqrt(np.prod(shape[1:]))
        params[scoped.removeprefix("main.AlexNet.")] = scaled_normal(rng, shape, scale)
    image = rng.standard_normal(tuple(checked.symbols["input"].shape))
    return params, image


def alexnet_activation_shapes(image: tuple[int, ...],
                              params: dict[str, np.ndarray]) -> list[tuple[int, ...]]:
    """The shapes of the activations of ALEXNET_LAYERS in order, the image first (a conv's
    output before and after its relu counts as two: both exist at once)."""
    shapes = [image]
    shape = image
    for layer in ALEXNET_LAYERS:
        if layer[0] == "conv":
            _, i, stride, pad = layer
            out, _, kh, kw = params[f"kernel{i}"].shape
            shape = (shape[0], out, (shape[2] + 2 * pad - kh) // stride + 1,
                     (shape[3] + 2 * pad - kw) // stride + 1)
            shapes += [shape, shape]
        elif layer[0] == "pool":
            shape = (shape[0], shape[1], (shape[2] - 3) // 2 + 1, (shape[3] - 3) // 2 + 1)
            shapes.append(shape)
        elif layer[0] == "flatten":
            shape = (shape[0], int(np.prod(shape[1:])))
            shapes.append(shape)
        else:
            shape = (shape[0], params[f"weight{layer[1]}"].shape[0])
            shapes += [shape, shape] if layer[2] else [shape]
    return shapes


def alexnet(small: bool) -> Model:
    program_text = alexnet_text(small)
    program, folder = load(program_text)
    params, image = alexnet_weights(program)
    folder.cleanup()

    def nodes() -> list:
        from onnx import helper
        made, x = [], "input"
        for layer in ALEXNET_LAYERS:
            if layer[0] == "conv":
                _, i, stride, pad = layer
                kernel = list(params[f"kernel{i}"].shape[2:])
                made.append(helper.make_node(
                    "Conv", [x, f"kernel{i}", f"bias{i}"], [f"conv{i}"], strides=[stride] * 2,
                    pads=[pad] * 4, kernel_shape=kernel))
                made.append(helper.make_node("Relu", [f"conv{i}"], [f"relu{i}"]))
                x = f"relu{i}"
            elif layer[0] == "pool":
                made.append(helper.make_node("MaxPool", [x], [x + "_pool"], kernel_shape=[3, 3],
                                             strides=[2, 2]))
                x += "_pool"
            elif layer[0] == "flatten":
                made.append(helper.make_node("Flatten", [x], ["flat"], axis=1))
                x = "flat"
            else:
                _, i, relu = layer
                out = f"fc{i}" if relu else "output"
                made.append(helper.make_node("Gemm", [x, f"weight{i}", f"bias{i}"], [out],
                                             transB=1))
                if relu:
                    made.append(helper.make_node("Relu", [out], [out + "_relu"]))
                    out += "_relu"
                x = out
        return made

    return Model("AlexNet" + (" small" if small else " 224 batch 1"), program_text, "AlexNet",
                 {"input": image}, params, nodes, {"input": image}, params, ["output"],
                 lambda outs: {"output": outs[0]})


# --------------------------------------------------------------------------- ResNet blocks

BASIC_BLOCK = """
operator basic_block {
    @input { x: real[b, c, h, w]; }
    @output { y: real[b, c, h, w]; }
    @variable {
        filter1: real[c, c, 3, 3];
        mean1: real[c]; variance1: real[c]; scale1: real[c]; shift1: real[c];
        filter2: real[c, c, 3, 3];
        mean2: real[c]; variance2: real[c]; scale2: real[c]; shift2: real[c];
    }
    @compose {
        c1 = nn.conv{padding = [1, 1, 1, 1]}(x, filter1);
        n1 = nn.batch_norm(c1, mean1, variance1, shift1, scale1);
        r1 = nn.relu(n1);
        c2 = nn.conv{padding = [1, 1, 1, 1]}(r1, filter2);
        n2 = nn.batch_norm(c2, mean2, variance2, shift2, scale2);
        s = math.add(n2, x);
        y = nn.relu(s);
    }
}
"""


def resnet(small: bool) -> Model:
    """`blocks` basic blocks (conv3x3 + batch norm + relu + conv3x3 + batch norm + residual
    add + relu) of `channels` channels on a `size` x `size` map, batch 1."""
    blocks, channels, size = (2, 4, 8) if small else (4, 64, 56)
    shape = f"real[1, {channels}, {size}, {size}]"
    calls = []
    for k in range(1, blocks + 1):
        source = "input" if k == 1 else f"x{k - 1}"
        target = "output" if k == blocks else f"x{k}"
        calls.append(f"        {target} = block{k}: basic_block({source});")
    text = ("import nn;\nimport math;\n" + BASIC_BLOCK + "\ngraph ResNetBlocks {\n"
            f"    @input {{ input: {shape}; }}\n    @output {{ output: {shape}; }}\n"
            "    @compose {\n" + "\n".join(calls) + "\n    }\n}\n")
    rng = np.random.default_rng(1)
    params = {}
    for k in range(1, blocks + 1):
        for j in (1, 2):
            params[f"block{k}.filter{j}"] = scaled_normal(
                rng, (channels, channels, 3, 3), 1.0 / np.sqrt(9 * channels))
            params[f"block{k}.mean{j}"] = rng.standard_normal(channels) * 0.1
            params[f"block{k}.variance{j}"] = rng.uniform(0.5, 1.5, channels)
            params[f"block{k}.scale{j}"] = rng.uniform(0.5, 1.5, channels)
            params[f"block{k}.shift{j}"] = rng.standard_normal(channels) * 0.1
    image = rng.standard_normal((1, channels, size, size))

    def nodes() -> list:
        from onnx import helper
        made = []
        for k in range(1, blocks + 1):
            x = "input" if k == 1 else f"x{k - 1}"
            out = "output" if k == blocks else f"x{k}"
            p = f"block{k}."
            for j, source in ((1, x), (2, f"{p}r1")):
                made.append(helper.make_node("Conv", [source, f"{p}filter{j}"], [f"{p}c{j}"],
                                             pads=[1, 1, 1, 1], kernel_shape=[3, 3]))
                made.append(helper.make_node(
                    "BatchNormalization", [f"{p}c{j}", f"{p}scale{j}", f"{p}shift{j}",
                                           f"{p}mean{j}", f"{p}variance{j}"],
                    [f"{p}n{j}"], epsilon=1e-5))
                if j == 1:
                    made.append(helper.make_node("Relu", [f"{p}n1"], [f"{p}r1"]))
            made.append(helper.make_node("Add", [f"{p}n2", x], [f"{p}s"]))
            made.append(helper.make_node("Relu", [f"{p}s"], [out]))
        return made

    return Model(f"ResNet {blocks} blocks {channels}x{size}x{size}", text, "ResNetBlocks",
                 {"input": image}, params, nodes, {"input": image}, params, ["output"],
                 lambda outs: {"output": outs[0]})


# --------------------------------------------------------------------------- LSTM

def lstm(small: bool) -> Model:
    """A single-layer LSTM. nn.lstm splits its gates as i, f, g, o (spec §4.4.5); ONNX's LSTM
    stacks them as i, o, f, c (c is g) and has two biases (W's and R's): the ONNX weights are
    the same rows reordered, with R's bias zero."""
    seq, batch, inputs, hidden = (4, 2, 3, 5) if small else (32, 4, 64, 128)
    text = f"""import nn;

graph Lstm {{
    @input {{
        X: real[{seq}, {batch}, {inputs}];
        h0: real[{batch}, {hidden}];
        c0: real[{batch}, {hidden}];
    }}
    @output {{
        Y: real[~|{seq}, {batch}, {hidden}];
        hN: real[{batch}, {hidden}];
        cN: real[{batch}, {hidden}];
    }}
    @variable {{
        W: real[{4 * hidden}, {inputs}];
        R: real[{4 * hidden}, {hidden}];
        bias: real[{4 * hidden}];
    }}
    @compose {{
        Y, hN, cN = nn.lstm(X, W, R, bias, h0, c0);
    }}
}}
"""
    rng = np.random.default_rng(2)
    params = {"W": scaled_normal(rng, (4 * hidden, inputs), 1.0 / np.sqrt(inputs)),
              "R": scaled_normal(rng, (4 * hidden, hidden), 1.0 / np.sqrt(hidden)),
              "bias": rng.standard_normal(4 * hidden) * 0.1}
    feeds = {"X": rng.standard_normal((seq, batch, inputs)),
             "h0": rng.standard_normal((batch, hidden)) * 0.5,
             "c0": rng.standard_normal((batch, hidden)) * 0.5}

    def to_onnx_order(rows: np.ndarray) -> np.ndarray:
        i, f, g, o = np.split(rows, 4, axis=0)
        return np.concatenate([i, o, f, g], axis=0)

    weights = {"W": to_onnx_order(params["W"])[None],
               "R": to_onnx_order(params["R"])[None],
               "B": np.concatenate([to_onnx_order(params["bias"]), np.zeros(4 * hidden)])[None]}
    onnx_inputs = {"X": feeds["X"], "initial_h": feeds["h0"][None], "initial_c": feeds["c0"][None]}

    def nodes() -> list:
        from onnx import helper
        return [helper.make_node("LSTM", ["X", "W", "R", "B", "", "initial_h", "initial_c"],
                                 ["Y", "Y_h", "Y_c"], hidden_size=hidden)]

    def from_onnx(outs: list[np.ndarray]) -> dict[str, np.ndarray]:
        return {"Y": outs[0][:, 0], "hN": outs[1][0], "cN": outs[2][0]}

    return Model(f"LSTM seq {seq} batch {batch} {inputs}->{hidden}", text, "Lstm", feeds,
                 params, nodes, onnx_inputs, weights, ["Y", "Y_h", "Y_c"], from_onnx)


MODELS: dict[str, Callable[[bool], Model]] = {"alexnet": alexnet, "resnet": resnet,
                                              "lstm": lstm}


# --------------------------------------------------------------------------- ONNX


def onnx_model(model: Model, dtype: type) -> Any:
    """The ONNX form of `model` with its weights as initializers of `dtype`."""
    from onnx import TensorProto, helper, numpy_helper
    element = TensorProto.DOUBLE if dtype == np.float64 else TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info(name, element, list(value.shape))
              for name, value in model.onnx_inputs.items()]
    outputs = [helper.make_tensor_value_info(name, element, None)
               for name in model.onnx_outputs]
    weights = [numpy_helper.from_array(np.ascontiguousarray(value, dtype=dtype), name)
               for name, value in model.onnx_weights.items()]
    graph = helper.make_graph(model.onnx_nodes(), model.name.replace(" ", "_"),
                              inputs, outputs, initializer=weights)
    made = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    made.ir_version = 8  # readable by older runtimes too
    return made


def ort_session(model: Any) -> Any | None:
    """An ONNX Runtime CPU session of `model`, or None without onnxruntime."""
    if importlib.util.find_spec("onnxruntime") is None:
        return None
    import onnxruntime
    return onnxruntime.InferenceSession(model.SerializeToString(),
                                        providers=["CPUExecutionProvider"])


# --------------------------------------------------------------------------- the benchmark


def bench(model: Model, repeat: int, engine: str) -> dict[str, Any]:
    """Time `model` in the three implementations and compare their outputs."""
    from onnx.reference import ReferenceEvaluator

    program, folder = load(model.sknd)

    def ours() -> dict[str, np.ndarray]:
        return api.evaluate(program, op=model.graph, inputs=model.inputs, params=model.params,
                            engine=engine).outputs

    reference = ReferenceEvaluator(onnx_model(model, np.float64))
    session = ort_session(onnx_model(model, np.float32))
    feeds32 = {name: value.astype(np.float32) for name, value in model.onnx_inputs.items()}

    ours_time, ours_out = best_time(ours, repeat)
    ref_time, ref_out = best_time(lambda: reference.run(None, model.onnx_inputs), repeat)
    ref_out = model.from_onnx(ref_out)
    ref_error = max(relative_error(ours_out[name], ref_out[name]) for name in ref_out)
    result = {"model": model.name, "refinterp_ms": ours_time * 1e3,
              "reference_ms": ref_time * 1e3, "ratio_reference": ref_time / ours_time,
              "error_reference": ref_error, "ok": ref_error <= TOLERANCE_F64,
              "ort_ms": None, "ratio_ort": None, "error_ort": None, "ort_dtype": None}
    if session is not None:
        ort_time, ort_out = best_time(lambda: session.run(None, feeds32), repeat)
        ort_out = model.from_onnx(ort_out)
        ort_error = max(relative_error(ours_out[name], ort_out[name]) for name in ort_out)
        result.update(ort_ms=ort_time * 1e3, ratio_ort=ours_time / ort_time,
                      error_ort=ort_error, ort_dtype="float32",
                      ok=result["ok"] and ort_error <= TOLERANCE_F32)
    result["verdict"] = "ok" if result["ratio_reference"] >= TARGET else "SLOW"
    folder.cleanup()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per measurement")
    parser.add_argument("--model", action="append", choices=sorted(MODELS), default=[],
                        help="run only this model (repeatable)")
    parser.add_argument("--small", action="store_true", help="toy sizes (a quick check)")
    parser.add_argument("--engine", default="auto", choices=["auto", "vector"])
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("onnx") is None:
        print("bench_peers: needs onnx (pip install onnx onnxruntime)", file=sys.stderr)
        return 2
    print(f"{'model':30} {'refinterp':>10} {'reference':>10} {'ORT f32':>10} "
          f"{'ref/ri':>7} {'target':>7} {'ri/ORT':>7} {'err ref':>8} {'err ORT':>8}  check")
    results, failed = [], False
    for key in args.model or list(MODELS):
        result = bench(MODELS[key](args.small), args.repeat, args.engine)
        results.append(result)
        failed |= not result["ok"]
        ort = "n/a" if result["ort_ms"] is None else f"{result['ort_ms']:8.1f}ms"
        ratio_ort = "n/a" if result["ratio_ort"] is None else f"{result['ratio_ort']:6.2f}x"
        error_ort = "n/a" if result["error_ort"] is None else f"{result['error_ort']:8.1e}"
        print(f"{result['model']:30} {result['refinterp_ms']:8.1f}ms "
              f"{result['reference_ms']:8.1f}ms {ort:>10} {result['ratio_reference']:6.1f}x "
              f"{'>= ' + format(TARGET, 'g') + 'x':>7} {ratio_ort:>7} "
              f"{result['error_reference']:8.1e} {error_ort:>8}  "
              f"{'equal' if result['ok'] else 'DIFFERENT'} {result['verdict']}")
    print(f"(refinterp and the reference evaluator in float64; ORT in float32, as it has no "
          f"float64 Conv or LSTM kernel; equal means relative error <= {TOLERANCE_F64:g} "
          f"vs reference, <= {TOLERANCE_F32:g} vs ORT; best of {args.repeat})")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "failed": failed}, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
