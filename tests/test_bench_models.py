"""tools/model_zoo.py and tools/bench_models.py, the parts that need no converter.

model_zoo: the weights of a small ONNX graph built here (ConstantOfShape nodes, as in the light
models of the `onnx` wheel) become random initializers of the stated scales; the last layer
before the Softmax is scaled so the logits have standard deviation 2. bench_models: the table
and its formats, and the per-operator clock on scripted events. With a corpus (MODEL_ZOO: a
tools/model_zoo.py --work folder with SqueezeNet converted) and KHRONOS_STDLIB set, SqueezeNet
agrees with ONNX Runtime. Nothing about time is asserted."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from testsupport.tools import load_tool

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


@pytest.fixture(scope="module")
def zoo():
    return load_tool("model_zoo")


@pytest.fixture(scope="module")
def bench():
    return load_tool("bench_models")


# conv 8 -> 16 (3x3), batch norm, relu, flatten, gemm to 10 classes (transB), softmax
WEIGHTS = {"conv_w": (16, 8, 3, 3), "conv_b": (16,), "bn_s": (16,), "bn_b": (16,),
           "bn_m": (16,), "bn_v": (16,), "fc_w": (10, 16 * 4 * 4), "fc_b": (10,)}


def tiny_model():
    """An opset-9 graph whose weights are ConstantOfShape nodes of a 0.02 fill, their shapes
    initializers listed as graph inputs (IR 3), as in the light models."""
    nodes, initializers, inputs = [], [], [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])]
    for name, shape in WEIGHTS.items():
        initializers.append(numpy_helper.from_array(np.array(shape, np.int64), f"{name}__SHAPE"))
        inputs.append(helper.make_tensor_value_info(f"{name}__SHAPE", TensorProto.INT64,
                                                    [len(shape)]))
        nodes.append(helper.make_node("ConstantOfShape", [f"{name}__SHAPE"], [name],
                                      value=helper.make_tensor("v", TensorProto.FLOAT, [1],
                                                               [0.02])))
    nodes += [
        helper.make_node("Conv", ["x", "conv_w", "conv_b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "bn_s", "bn_b", "bn_m", "bn_v"], ["n"]),
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"]),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["prob"]),
    ]
    graph = helper.make_graph(nodes, "tiny", inputs,
                              [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 10])],
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
    model.ir_version = 3
    return model


def weights_of(model) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def test_randomize_replaces_constant_of_shape(zoo) -> None:
    """No ConstantOfShape is left; each weight is a float32 initializer of its shape; the
    shape initializers are gone and the only graph input is x."""
    model = zoo.randomize(tiny_model(), seed=0)
    assert [n.op_type for n in model.graph.node] == [
        "Conv", "BatchNormalization", "Relu", "Flatten", "Gemm", "Softmax"]
    weights = weights_of(model)
    assert {name: w.shape for name, w in weights.items()} == WEIGHTS
    assert all(w.dtype == np.float32 for w in weights.values())
    assert [value.name for value in model.graph.input] == ["x"]
    assert model.ir_version >= 4
    onnx.checker.check_model(model)


def test_randomize_scales(zoo) -> None:
    """He-style N(0, 2 / fan_in) for the conv filter (fan_in 8*3*3) and the gemm matrix
    (transB: fan_in 256); batch-norm scale and variance in [0.5, 1.5]; means and shifts
    N(0, 0.1); biases N(0, 0.05)."""
    weights = weights_of(zoo.randomize(tiny_model(), seed=0))
    assert np.std(weights["conv_w"]) == pytest.approx(np.sqrt(2 / 72), rel=0.1)
    assert abs(np.mean(weights["conv_w"])) < 0.02
    assert np.std(weights["fc_w"]) == pytest.approx(np.sqrt(2 / 256), rel=0.1)
    for name in ("bn_s", "bn_v"):
        assert np.all((weights[name] >= 0.5) & (weights[name] <= 1.5))
    for name, scale in (("bn_m", 0.1), ("bn_b", 0.1), ("conv_b", 0.05), ("fc_b", 0.05)):
        assert 0 < np.max(np.abs(weights[name])) < 5 * scale


def test_randomize_is_seeded(zoo) -> None:
    """The same seed gives the same weights, another seed other weights; the input is a model
    itself left unchanged."""
    original = tiny_model()
    first, again = zoo.randomize(original, 0), zoo.randomize(original, 0)
    other = zoo.randomize(original, 1)
    assert all(np.array_equal(a, b) for a, b in zip(weights_of(first).values(),
                                                    weights_of(again).values()))
    assert not np.array_equal(weights_of(first)["conv_w"], weights_of(other)["conv_w"])
    assert sum(n.op_type == "ConstantOfShape" for n in original.graph.node) == len(WEIGHTS)


def test_calibrate_logits(zoo, tmp_path) -> None:
    """After calibration ORT's logits have standard deviation 2, the softmax is not one-hot,
    and only the gemm's weight and bias changed (by one common factor)."""
    model = zoo.randomize(tiny_model(), seed=0)
    name, value = zoo.seeded_input(model)
    assert name == "x" and value.shape == (1, 8, 4, 4) and value.dtype == np.float32
    before = weights_of(model)
    calibrated = zoo.calibrate_logits(model, name, value, tmp_path / "probe.onnx")
    after = weights_of(calibrated)
    factor = after["fc_w"][0, 0] / before["fc_w"][0, 0]
    np.testing.assert_allclose(after["fc_w"], before["fc_w"] * factor, rtol=1e-6)
    np.testing.assert_allclose(after["fc_b"], before["fc_b"] * factor, rtol=1e-6)
    assert all(np.array_equal(after[k], before[k]) for k in WEIGHTS if not k.startswith("fc"))
    probe = onnx.ModelProto.FromString(calibrated.SerializeToString())
    probe.graph.output.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, None))
    onnx.save(probe, str(tmp_path / "check.onnx"))
    logits, prob = zoo.ort_session(tmp_path / "check.onnx").run(["logits", "prob"], {"x": value})
    assert np.std(logits) == pytest.approx(2.0, rel=1e-4)
    assert 0.1 < prob.max() < 0.99
    assert list(tmp_path.iterdir()) == [tmp_path / "check.onnx"]  # the probe is removed


def test_formats(bench) -> None:
    assert bench.format_seconds(0.353) == "353 ms"
    assert bench.format_seconds(3.584) == "3.58 s"
    assert bench.format_seconds(0.0331) == "33.1 ms"
    assert bench.format_seconds(0.00512) == "5.12 ms"
    assert bench.format_seconds(None) == ""
    assert bench.format_ratio(1.84) == "1.8×"
    assert bench.format_ratio(0.8) == "0.8×"
    assert bench.format_ratio(110.4) == "110×"
    assert bench.format_ratio(None) == ""


def test_table(bench) -> None:
    """One row per model; a missed target or a disagreement is bold; a refused model shows
    its diagnostic and keeps the peers' times."""
    Result = bench.Result
    fast = Result("a", "Fast", error=1e-7, refinterp=0.1, cold=0.2, ort=0.02, reference=1.0)
    slow = Result("b", "Slow", error=2e-3, refinterp=1.0, cold=1.3, ort=0.05, reference=0.8)
    refused = Result("c", "Big", refused="E1201: too many iterations", ort=0.5, reference=2.0)
    lines = bench.format_table([fast, slow, refused]).splitlines()
    assert lines[0].startswith("| model | max rel. error vs ORT | refinterp |")
    assert lines[2] == "| Fast | 1.0e-07 | 100 ms | 200 ms | 20.0 ms | 1.00 s | 10× | 5.0× | 2.0× |"
    assert lines[3] == ("| Slow | **2.0e-03** | 1.00 s | 1.30 s | 50.0 ms | 800 ms | **0.8×** "
                        "| **20×** | 1.3× |")
    assert lines[4] == ("| Big | **refused**: E1201: too many iterations |  |  | 500 ms "
                        "| 2.00 s |  |  |  |")
    assert len(lines) == 5


def test_format_operators(bench) -> None:
    """One line per model that has per-operator shares; the weights' read time beside."""
    shares = bench.Result("a", "Net", operators=[("nn.conv", 0.5), ("nn.relu", 0.25)],
                          weights_read=0.012)
    assert bench.format_operators([shares, bench.Result("b", "Other")]) == \
        "- Net: nn.conv 50%, nn.relu 25%; reading its .dat files alone: 12.0 ms"


def test_operator_clock(bench, monkeypatch) -> None:
    """Own time per operator: a call's time minus its callees'; the root is the graph."""
    ticks = iter([0.0, 1.0, 2.0, 3.0, 6.0, 10.0])
    monkeypatch.setattr(bench.time, "perf_counter", lambda: next(ticks))
    clock = bench.OperatorClock()
    for event, operator in [("call", "main.G"), ("call", "nn.conv"), ("call", "nn.pad"),
                            ("return", "nn.pad"), ("return", "nn.conv"), ("return", "main.G")]:
        clock(event, operator, None, {})
    assert clock.totals == {clock.ROOT: 5.0, "nn.conv": 4.0, "nn.pad": 1.0}
    assert clock.top(2) == [(clock.ROOT, 0.5), ("nn.conv", 0.4)]


CORPUS = os.environ.get("MODEL_ZOO")
KHRONOS = os.environ.get("KHRONOS_STDLIB")


def test_squeezenet_agrees_with_ort(bench) -> None:
    """The converted SqueezeNet of a built corpus agrees with ORT within 1e-4 relative."""
    if not CORPUS or not KHRONOS:
        pytest.skip("MODEL_ZOO (a tools/model_zoo.py corpus) or KHRONOS_STDLIB is not set")
    folder = Path(CORPUS) / "models" / "squeezenet"
    if not (folder / "sknd" / "main.sknd").exists():
        pytest.skip(f"SqueezeNet is not converted in {CORPUS}")
    model = bench.Model(folder, Path(KHRONOS))
    model.load()
    assert bench.relative_error(model.run_refinterp(), model.expected) < bench.TOLERANCE


TINY_SKND = """import math;

graph G {
    @input { x: real[4]; }
    @output { y: real[4]; }
    @compose { y = math.exp(x); }
}
"""


def tiny_folder(tmp_path: Path, source: str):
    """A corpus-like model folder: sknd/main.sknd and input.npy."""
    folder = tmp_path / "model"
    (folder / "sknd").mkdir(parents=True)
    (folder / "sknd" / "main.sknd").write_text(source)
    np.save(folder / "input.npy", np.array([0.0, 1.0, -1.0, 0.5], np.float32))
    return folder


def test_before_head_times_the_extracted_revision(bench, tmp_path) -> None:
    """--before HEAD: the extracted tree's refinterp (not this one) runs the model in a child
    process, gives a time and its output (exp of the input); a refused model its diagnostic."""
    from refinterp import api

    tree = tmp_path / "tree"
    tree.mkdir()
    bench.extract_revision("HEAD", tree)
    assert (tree / "refinterp" / "api.py").exists()
    model = bench.Model.__new__(bench.Model)
    model.folder = tiny_folder(tmp_path, TINY_SKND)
    model.sknd, model.stdlib = model.folder / "sknd", Path(api.__file__).parent / "stdlib"
    answer = bench.run_before(model, tree, 2, tmp_path / "out.npy")
    assert answer["best"] > 0
    assert Path(answer["module"]).resolve() == (tree / "refinterp" / "__init__.py").resolve()
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), np.exp([0.0, 1.0, -1.0, 0.5]))
    (model.sknd / "main.sknd").write_text(TINY_SKND.replace("math.exp(x)", "math.exp(z)"))
    assert bench.run_before(model, tree, 1)["refused"].startswith("E")
    with pytest.raises(ValueError):
        bench.extract_revision("no-such-revision", tree)


def test_table_with_before(bench) -> None:
    """The --before columns: the older error, its time and before / after; its refusal."""
    Result = bench.Result
    faster = Result("a", "Net", error=1e-7, refinterp=0.1, cold=0.2, ort=0.02, reference=1.0,
                    before=0.25, before_error=2e-7)
    refused = Result("b", "Old", error=1e-7, refinterp=0.1, cold=0.2, ort=0.02, reference=1.0,
                     before_refused="E1201: too many iterations")
    lines = bench.format_table([faster, refused], before=True).splitlines()
    assert lines[0].endswith("| before: max rel. error vs ORT | before "
                             "| speed-up (before / after) |")
    assert lines[1] == "|" + "---|" * 12
    assert lines[2].endswith("| 2.0× | 2.0e-07 | 250 ms | 2.5× |")
    assert lines[3].endswith("| 2.0× | **refused**: E1201: too many iterations |  |  |")
    assert faster.speedup == pytest.approx(2.5) and refused.speedup is None
