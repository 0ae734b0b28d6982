"""tools/bench_peers.py and tools/bench_memory.py on toy sizes (a few seconds in all).

bench_peers: the three models (AlexNet, ResNet blocks, LSTM) give the same outputs in refinterp
and in ONNX's reference evaluator (1e-9, float64) and in ONNX Runtime (1e-6, float32), and its
check fails when the weights are mapped wrongly. bench_memory: the children run and the figures
it derives are the hand-computed parameter and activation sizes. Nothing about time or memory
is asserted as a target."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from testsupport.tools import load_tool


@pytest.fixture(scope="module")
def peers():
    pytest.importorskip("onnx")
    return load_tool("bench_peers")


def test_relative_error_by_hand(peers) -> None:
    """max|a - b| / max|b|; a shape mismatch is infinite."""
    assert peers.relative_error(np.array([1.0, 2.0]), np.array([1.0, 4.0])) == 0.5
    assert peers.relative_error(np.zeros(2), np.zeros(2)) == 0.0
    assert peers.relative_error(np.zeros(2), np.zeros(3)) == float("inf")


def test_small_run_all_models_equal(peers, tmp_path: Path, capsys) -> None:
    pytest.importorskip("onnxruntime")
    out = tmp_path / "peers.json"
    assert peers.main(["--small", "--repeat", "1", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["failed"] is False
    results = report["results"]
    assert [r["model"].split()[0] for r in results] == ["AlexNet", "ResNet", "LSTM"]
    for r in results:
        assert r["ok"] and r["error_reference"] <= 1e-9 and r["error_ort"] <= 1e-6
        assert r["ort_dtype"] == "float32"
        assert r["verdict"] in ("ok", "SLOW")
    printed = capsys.readouterr().out
    rows = [line for line in printed.splitlines() if line.split()[-1] in ("ok", "SLOW")]
    assert len(rows) == 3 and all(line.split()[-2] == "equal" for line in rows)


def test_reference_outputs_are_not_trivial(peers) -> None:
    """The equality checks mean something: every reference output has non-zero values."""
    from onnx.reference import ReferenceEvaluator
    for build in peers.MODELS.values():
        model = build(True)
        outputs = ReferenceEvaluator(peers.onnx_model(model, np.float64)).run(
            None, model.onnx_inputs)
        assert all(np.max(np.abs(value)) > 1e-3 for value in outputs)


def test_wrong_gate_order_is_detected(peers) -> None:
    """Giving refinterp the ONNX gate order (i, o, f, c) instead of its own (i, f, g, o) makes
    the check fail: it compares real outputs, not just shapes."""
    model = peers.lstm(True)
    model.params = {**model.params, "W": model.onnx_weights["W"][0],
                    "R": model.onnx_weights["R"][0]}
    result = peers.bench(model, repeat=1, engine="auto")
    assert not result["ok"] and result["error_reference"] > 1e-3


def test_alexnet_activation_chain_at_full_size(peers) -> None:
    """The layer list that builds the ONNX AlexNet gives the known AlexNet shapes (55, 27, 13,
    6; 9216 flattened, as bench_vector's reshape says). Zero-copy broadcast arrays stand for
    the weights: only their shapes are read."""
    kernels = {1: (64, 3, 11, 11), 2: (192, 64, 5, 5), 3: (384, 192, 3, 3),
               4: (256, 384, 3, 3), 5: (256, 256, 3, 3)}
    params = {f"kernel{i}": np.broadcast_to(0.0, s) for i, s in kernels.items()}
    params |= {"weight6": np.broadcast_to(0.0, (4096, 9216)),
               "weight7": np.broadcast_to(0.0, (4096, 4096)),
               "weight8": np.broadcast_to(0.0, (1000, 4096))}
    shapes = peers.alexnet_activation_shapes((1, 3, 224, 224), params)
    assert shapes[1] == (1, 64, 55, 55) and shapes[3] == (1, 64, 27, 27)
    assert (1, 256, 6, 6) in shapes and (1, 9216) in shapes and shapes[-1] == (1, 1000)


def test_memory_small(tmp_path: Path) -> None:
    """Three child processes; the parameter bytes and the largest live pair are those of the
    toy AlexNet computed by hand (67x67 image; channels 8, 16, 24, 16, 16; fc 32, 32, 10)."""
    memory = load_tool("bench_memory")
    out = tmp_path / "memory.json"
    assert memory.main(["--small", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    weights = 8 * 3 * 121 + 16 * 8 * 25 + 24 * 16 * 9 + 16 * 24 * 9 + 16 * 16 * 9 \
        + 32 * 16 + 32 * 32 + 10 * 32
    biases = 8 + 16 + 24 + 16 + 16 + 32 + 32 + 10
    assert figures["params_bytes"] == 8 * (weights + biases)
    # the image (3x67x67) and conv1 before its relu (8x16x16) are the largest consecutive pair
    assert figures["live_bytes"] == 8 * (3 * 67 * 67 + 8 * 16 * 16)
    assert figures["peak_import"] > 0 and figures["peak_run"] >= figures["peak_import"]
    assert figures["ratio"] == pytest.approx(
        figures["run_bytes"] / (figures["params_bytes"] + figures["live_bytes"]))
    assert figures["output_ok"]
