"""The LSTM of spec §4.4.5 (static and jagged forms), run through @compose with loops, packs,
optional inputs and dynamic counts, against an LSTM written in NumPy here.

The operators are the spec's text (spec_tests/corpus/4_4_5_recurrent_operators_0*.sknd); the
two operators the text uses unqualified and the spec never defines in §4.4.5 — `linear` and
`sigmoid` — are defined here, and `math.*` / `layout.*` come from the standard library."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from refinterp.cli import main

CORPUS = Path(__file__).parent / "corpus"
HELPERS = """import math;
import layout;

operator linear {
    @input {
        input: real[b,c];
        filter: real[n,c];
        bias: real[n] = 0.0;
    }
    @output {
        output: real[b,n];
    }
    @lower {
        output[i,j] = bias[j], i < b, j < n;
        output[i,j] += input[i,k] * filter[j,k], i < b, j < n, k < c;
    }
}

operator sigmoid {
    @input { x: real[b,n]; }
    @output { y: real[b,n]; }
    @lower { y[i,j] = 1.0 / (1.0 + exp(-x[i,j])), i < b, j < n; }
}
"""


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def lstm_reference(X, W, R, B, h0, c0, steps=None):
    """Gates in the order of the spec's split: i, f, g, o. Returns Y (steps × b × n) and the
    final h, c; with per-item `steps`, item k runs steps[k] steps."""
    s, b, _ = X.shape
    counts = [s] * b if steps is None else list(steps)
    ys = np.zeros((max(counts), b, R.shape[1]))
    h_final, c_final = h0.copy(), c0.copy()
    for k in range(b):
        h, c = h0[k:k + 1], c0[k:k + 1]
        for t in range(counts[k]):
            gates = X[t, k:k + 1] @ W.T + B + h @ R.T
            i, f, g, o = np.split(gates, 4, axis=1)
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            h = sigmoid(o) * np.tanh(c)
            ys[t, k] = h[0]
        h_final[k], c_final[k] = h[0], c[0]
    return ys, h_final, c_final


def assert_matches_reference(out: dict, arrays: dict, steps=None) -> None:
    """`out` (Y, hN, cN) equals `lstm_reference` on the same arrays, to 1e-12."""
    ys, h, c = lstm_reference(*(arrays[k] for k in ("X", "W", "R", "B", "h0", "c0")),
                              steps=steps)
    np.testing.assert_allclose(out["Y"], ys, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out["hN"], h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out["cN"], c, rtol=1e-12, atol=1e-12)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    text = HELPERS + "\n".join(p.read_text() for p in
                               sorted(CORPUS.glob("4_4_5_recurrent_operators_0*.sknd")))
    (tmp_path / "lstm.sknd").write_text(text)
    return tmp_path / "lstm.sknd"


def data(s=4, b=2, c=3, n=2, seed=5):
    rng = np.random.default_rng(seed)
    return {"X": rng.standard_normal((s, b, c)), "W": rng.standard_normal((4 * n, c)) * 0.5,
            "R": rng.standard_normal((4 * n, n)) * 0.5, "B": rng.standard_normal(4 * n) * 0.1,
            "h0": rng.standard_normal((b, n)), "c0": rng.standard_normal((b, n))}


def run(model: Path, tmp_path: Path, arrays: dict, *options: str) -> dict:
    np.savez(tmp_path / "in.npz", **arrays)
    assert main(["eval", str(model), "--op", "lstm", "--inputs", str(tmp_path / "in.npz"),
                 "-o", str(tmp_path / "out.npz"), *options]) == 0
    with np.load(tmp_path / "out.npz") as out:
        return {k: out[k] for k in out.files}


def test_static_lstm_matches_numpy(model: Path, tmp_path: Path) -> None:
    arrays = data()
    out = run(model, tmp_path, arrays)
    assert_matches_reference(out, arrays)


def test_static_lstm_default_initial_state(model: Path, tmp_path: Path) -> None:
    """h0 and c0 default to 0.0 (inputs with defaults, §2.5)."""
    arrays = data(s=3, b=1)
    del arrays["h0"], arrays["c0"]
    out = run(model, tmp_path, arrays)
    zeros = np.zeros((1, 2))
    ys, h, c = lstm_reference(arrays["X"], arrays["W"], arrays["R"], arrays["B"], zeros, zeros)
    np.testing.assert_allclose(out["Y"], ys, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out["hN"], h, rtol=1e-12, atol=1e-12)


def test_jagged_lstm_with_equal_counts_runs_the_partial_scan(model: Path,
                                                             tmp_path: Path) -> None:
    """`steps` given: each batch item runs its own dynamic count (here 2 of 4 steps); Y has the
    run-time extent 2 (declared `~|s`)."""
    arrays = data()
    arrays["steps"] = np.array([2, 2])
    out = run(model, tmp_path, arrays)
    assert out["Y"].shape == (2, 2, 2)
    assert_matches_reference(out, arrays, steps=[2, 2])


def test_jagged_lstm_with_different_counts_cannot_stack(model: Path, tmp_path: Path,
                                                        capsys) -> None:
    """With different counts the per-item outputs Ys have different extents, and the spec's
    `layout.stack` of them is invalid: a diagnostic with the call stack, not a crash."""
    arrays = data()
    arrays["steps"] = np.array([1, 3])
    np.savez(tmp_path / "in.npz", **arrays)
    assert main(["eval", str(model), "--op", "lstm", "--inputs",
                 str(tmp_path / "in.npz")]) == 1
    err = capsys.readouterr().err
    assert "error:" in err and "while invoking layout.stack" in err
    assert "--profile khronos pads them with zeros" in err


@pytest.mark.parametrize("counts", [[1, 3], [3, 1, 2], [4, 1]])
def test_jagged_lstm_with_different_counts_pads_under_khronos(model: Path, tmp_path: Path,
                                                             counts: list[int]) -> None:
    """Profile khronos (`jagged_packs = "pad"`): the per-item outputs, declared `~|s`, are
    zero-padded to the largest count before `layout.stack`, so Y holds zeros past each item's
    own count (as ONNX's LSTM with sequence_lens); hN, cN are each item's last state."""
    arrays = data(b=len(counts))
    arrays["steps"] = np.array(counts)
    out = run(model, tmp_path, arrays, "--profile", "khronos")
    assert out["Y"].shape == (max(counts), len(counts), 2)
    assert_matches_reference(out, arrays, steps=counts)
