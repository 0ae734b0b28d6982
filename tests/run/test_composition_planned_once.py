"""A composition is resolved once and reused (docs/performance.md "Invocations"): a repeated
run of a loaded program finds its operators without looking them up again, and what is kept
is keyed by what determines it — a program loaded again from a changed file runs its new
definitions, and an instance checked under one set of limits is checked again under smaller
ones. tools/bench_invocations.py runs on a toy chain and agrees with its NumPy baseline."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import refinterp.api as ri
import refinterp.run.compose as compose
from refinterp.core.diagnostics import Diagnostic

TOOLS = Path(__file__).resolve().parents[2] / "tools"

SOURCE = """import math;

operator f {{
    @input {{ x: real[4]; }}
    @output {{ y: real[4]; }}
    @compose {{ y = math.{op}(x, 2.0); }}
}}

graph G {{
    @input {{ x: real[4]; }}
    @output {{ y: real[4]; }}
    @compose {{ a = f(x); y = f(a); }}
}}
"""


def write(tmp_path: Path, op: str) -> Path:
    path = tmp_path / "main.sknd"
    path.write_text(SOURCE.format(op=op))
    return path


def test_a_repeated_run_resolves_no_operator_again(tmp_path, monkeypatch):
    program = ri.load(write(tmp_path, "add"))
    x = {"x": np.arange(4.0)}
    assert ri.evaluate(program, inputs=x).outputs["y"].tolist() == [4.0, 5.0, 6.0, 7.0]
    lookups = []
    real = compose.find_operator

    def counting(*args):
        lookups.append(args[0])
        return real(*args)
    monkeypatch.setattr(compose, "find_operator", counting)
    assert ri.evaluate(program, inputs=x).outputs["y"].tolist() == [4.0, 5.0, 6.0, 7.0]
    assert lookups == []


def test_a_program_loaded_again_runs_its_new_definitions(tmp_path):
    x = {"x": np.arange(4.0)}
    assert ri.evaluate(ri.load(write(tmp_path, "add")), inputs=x).outputs["y"].tolist() == \
        [4.0, 5.0, 6.0, 7.0]
    assert ri.evaluate(ri.load(write(tmp_path, "mul")), inputs=x).outputs["y"].tolist() == \
        [0.0, 4.0, 8.0, 12.0]


def test_an_instance_is_checked_again_under_smaller_limits(tmp_path):
    program = ri.load(write(tmp_path, "add"))
    x = {"x": np.arange(4.0)}
    ri.evaluate(program, inputs=x)
    with pytest.raises(Diagnostic) as caught:  # 4 float64 items are 32 bytes
        ri.evaluate(program, inputs=x, limits=ri.Limits(max_tensor_size=31))
    assert caught.value.code == "E1200"


def test_bench_invocations_on_a_toy_chain(capsys):
    spec = importlib.util.spec_from_file_location("bench_invocations",
                                                  TOOLS / "bench_invocations.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--chain", "10", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "chain of 10 element-wise invocations: 11 invocations" in out
    assert "LSTM" in out and "beyond the engine" in out
