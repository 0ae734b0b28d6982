"""Typed empty packs (docs/semantics.md "Empty packs", spec §2.10.1 loops): a loop that runs
zero iterations gives scanned outputs that know the type and shape of the items they would
have held (the body run once on abstract tensors), a pack output of zero items knows its
declared item type, and an operator invoked with such a pack binds its input as a pack of 0
items of that type (`layout.stack` of it is `[0, ...]`). A pack of zero items of unknown item
type keeps the §2.6 deduction error, with a note saying the pack is empty.

Expected values are NumPy code written here (the LSTM: `lstm_reference` of
spec_tests/test_4_4_5_lstm.py, gates split i, f, g, o)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from refinterp.api import Hooks, evaluate, run_operator, shapes
from refinterp.core.diagnostics import Diagnostic
from refinterp.language.invocation import (EmptyPack, EmptyPackType, TensorType,
                                           describe_type, tensor_type)
from spec_tests.test_4_4_5_lstm import assert_matches_reference, lstm_reference

ENGINES = ("scalar", "vector")

PROGRAM = """
import layout;
import math;

# exp of the first k rows of x: a loop whose tensor count may be 0
operator firsts {
    @input { x: real[n, m]; k: int[]; }
    @output { y: real[~|n, m]; }
    @compose {
        rows..(n) = layout.unstack{axis=0}(x);
        ys = for r : rows do..(k) { e = math.exp(r); yield e; };
        y = layout.stack{axis=0}(ys);
    }
}

# running sums of the first k rows, carried and scanned; the scanned pack also goes through
# an expansion and a reversal before it is stacked
operator sums {
    @input { x: real[n, m]; k: int[]; }
    @output { total: real[m]; y: real[~|n, m]; }
    @compose {
        rows..(n) = layout.unstack{axis=0}(x);
        zero = math.sub(rows[0], rows[0]);
        total, ys = with acc = zero for r : rows do..(k) {
            s = math.add(acc, r);
            yield s, s;
        };
        y = layout.stack{axis=0}([ys[::-1]..]);
    }
}

# a compile-time count of 0, and a scan over a pack of zero items (x has no rows)
graph none_taken {
    @input { x: real[3, 2]; }
    @output { y: real[~|3, 2]; }
    @compose {
        rows..(3) = layout.unstack{axis=0}(x);
        ys = for r : rows do..(0) { e = math.exp(r); yield e; };
        y = layout.stack{axis=0}(ys);
    }
}

graph no_rows {
    @input { x: real[0, 2]; }
    @output { y: real[0, 2]; }
    @compose {
        rows = layout.unstack{axis=0}(x);
        ys = for r : rows do { e = math.exp(r); yield e; };
        y = layout.stack{axis=0}(ys);
    }
}

# a body that is invalid (math.add of shapes [m] and [p]): with zero iterations it never runs
operator invalid_body {
    @input { x: real[n, m]; w: real[p]; k: int[]; }
    @output { y: real[~|n, m]; }
    @compose {
        rows..(n) = layout.unstack{axis=0}(x);
        ys = for r : rows do..(k) { e = math.add(r, w); yield e; };
        y = layout.stack{axis=0}(ys);
    }
}

# the items' type is bound like an item's: here it conflicts with the explicit generic type
operator int_stack {
    @input { x: real[n, m]; k: int[]; }
    @output { y: int[~|n, m]; }
    @compose {
        rows..(n) = layout.unstack{axis=0}(x);
        ys = for r : rows do..(k) { yield r; };
        y = layout.stack<int>{axis=0}(ys);
    }
}

# a pack of zero items whose item type nothing tells
operator untyped {
    @input { x: real[n]; }
    @output { y: real[n]; }
    @compose {
        y = layout.stack{axis=0}([]);
    }
}
"""


@pytest.fixture()
def program(tmp_path: Path) -> Path:
    path = tmp_path / "empty.sknd"
    path.write_text(PROGRAM)
    return path


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("k", [0, 2])
def test_a_zero_tensor_count_stacks_to_an_empty_extent(program, engine, k):
    x = np.arange(12.0).reshape(4, 3) / 10
    y = run_operator("firsts", {"x": x, "k": np.array(k)}, file=program, engine=engine)["y"]
    assert y.shape == (k, 3) and y.dtype == np.float64
    np.testing.assert_allclose(y, np.exp(x[:k]), rtol=1e-15)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("k", [0, 1, 3])
def test_carried_and_scanned_outputs_of_zero_iterations(program, engine, k):
    """Zero iterations: the carried value keeps its initial value, the scanned pack is typed
    (its expansion and reversal too), so the stack is [0, m]."""
    x = np.arange(12.0).reshape(4, 3)
    out = run_operator("sums", {"x": x, "k": np.array(k)}, file=program, engine=engine)
    running = np.cumsum(x[:k], axis=0)
    np.testing.assert_array_equal(out["total"], running[-1] if k else np.zeros(3))
    assert out["y"].shape == (k, 3)
    np.testing.assert_array_equal(out["y"], running[::-1])


@pytest.mark.parametrize("engine", ENGINES)
def test_compile_time_zero_count_and_empty_scan(program, engine):
    y = run_operator("none_taken", {"x": np.ones((3, 2))}, file=program, engine=engine)["y"]
    assert y.shape == (0, 2)
    y = run_operator("no_rows", {"x": np.ones((0, 2))}, file=program, engine=engine)["y"]
    assert y.shape == (0, 2)


def test_shapes_follows_a_loop_of_zero_iterations(program):
    """The check without values (`shapes`) types the scanned outputs the same way."""
    for op, x in (("none_taken", (3, 2)), ("no_rows", (0, 2))):
        result = shapes(program, op=op, inputs={"x": TensorType("real", x)})
        assert result.checked, result.stopped
        assert result.outputs["y"] == TensorType("real", (0, 2))


def test_an_untyped_empty_pack_says_it_is_empty(program):
    with pytest.raises(Diagnostic) as error:
        run_operator("untyped", {"x": np.ones(2)}, file=program)
    assert error.value.code == "E0308"
    assert any("input 'inputs' is a pack of zero tensors whose item type is unknown" in note
               for note in error.value.notes)


def test_a_body_that_never_runs_reports_nothing(program):
    """Zero iterations of an invalid body: the body is not reported (it never runs); its
    scanned output is a pack of unknown item type, which the stack reports with the note. One
    iteration reports the body's error."""
    inputs = {"x": np.ones((2, 3)), "w": np.ones(4)}
    with pytest.raises(Diagnostic) as error:
        run_operator("invalid_body", {**inputs, "k": np.array(0)}, file=program)
    assert error.value.code == "E0308"
    assert any("is a pack of zero tensors whose item type is unknown" in note
               for note in error.value.notes)
    with pytest.raises(Diagnostic) as error:
        run_operator("invalid_body", {**inputs, "k": np.array(1)}, file=program)
    assert error.value.code != "E0308"


def test_the_item_type_binds_like_an_item(program):
    with pytest.raises(Diagnostic) as error:
        run_operator("int_stack", {"x": np.ones((2, 3)), "k": np.array(0)}, file=program)
    assert error.value.code == "E0308"
    assert "input 'inputs' (a pack of 0 items of type real[3])" in error.value.message


def test_the_representation():
    """An EmptyPack is the empty list; its type is the empty tuple carrying the item type."""
    item = TensorType("real", (1, 4))
    pack = EmptyPack(item)
    assert pack == [] and isinstance(pack, list)
    info = tensor_type(pack)
    assert isinstance(info, EmptyPackType) and info == () and info.item == item
    assert describe_type(info) == "real[1, 4]..(0)"


def lstm_data(b: int, s: int = 3, c: int = 3, n: int = 2, seed: int = 7) -> dict:
    rng = np.random.default_rng(seed)
    return {"X": rng.standard_normal((s, b, c)), "W": rng.standard_normal((4 * n, c)) * 0.5,
            "R": rng.standard_normal((4 * n, n)) * 0.5, "B": rng.standard_normal(4 * n) * 0.1,
            "h0": rng.standard_normal((b, n)), "c0": rng.standard_normal((b, n))}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("steps", [[0, 2], [3, 0, 1], [0, 0]])
def test_bundled_lstm_with_zero_steps_under_khronos(engine, steps):
    """The bundled nn.lstm (jagged: one loop per batch item): an item with 0 steps gives Y of
    extent 0, zero-padded with the others (profile khronos, "Jagged packs"); its final state is
    its initial state; all counts 0 give Y of extent 0."""
    arrays = lstm_data(len(steps))
    out = run_operator("nn.lstm", {**arrays, "steps": np.array(steps)}, profile="khronos",
                       engine=engine)
    assert out["Y"].shape == (max(steps), len(steps), 2)
    assert_matches_reference(out, arrays, steps=steps)


def test_bundled_lstm_with_all_steps_zero_needs_no_padding():
    """Equal counts of 0: the items agree, so profile spec runs it too."""
    arrays = lstm_data(2)
    out = run_operator("nn.lstm", {**arrays, "steps": np.array([0, 0])})
    assert out["Y"].shape == (0, 2, 2)
    np.testing.assert_array_equal(out["hN"], arrays["h0"])
    np.testing.assert_array_equal(out["cN"], arrays["c0"])


def test_a_pack_output_of_zero_items_has_its_declared_type():
    """layout.unstack of an extent 0 declares `outputs: T[...]..(n)` with n = 0: typed."""
    run = evaluate("layout.unstack", inputs={"input": np.ones((2, 0, 3))},
                   attributes={"axis": 1})
    pack = run.outputs["outputs"]
    assert pack == [] and tensor_type(pack) == () and \
        tensor_type(pack).item == TensorType("real", (2, 3))


KHRONOS = os.environ.get("KHRONOS_STDLIB")  # the Khronos skriptnd/stdlib folder, if any


@pytest.mark.skipif(not KHRONOS or not (Path(KHRONOS).parent / "test" / "unittest.sknd")
                    .is_file(), reason="KHRONOS_STDLIB is not set (tests/test_khronos_modules.py)")
@pytest.mark.parametrize("length", [0, 2])
def test_khronos_dynamic_lstm_graph(length):
    """The Khronos unittest graph `dynamic_lstm` (`nn.lstm` of the Khronos stdlib, whose
    `lstm_step` splits the gates i, f, g, o, as `lstm_reference`) with `len = [0]` and `[2]`;
    hn and cn are intermediate tensors, observed."""
    x = np.random.default_rng(1).standard_normal((3, 1, 64))
    seen: dict = {}
    run = evaluate(Path(KHRONOS).parent / "test" / "unittest.sknd", op="dynamic_lstm",
                   inputs={"X": x, "len": np.array([length])}, random_params=True,
                   stdlib=KHRONOS, profile="khronos",
                   hooks=Hooks(observe=seen.__setitem__))
    params = {name.rpartition(".")[2]: value for name, value in run.params.items()}
    zeros = np.zeros((1, 64))
    ys, h, c = lstm_reference(x, params["W"], params["R"], params["B"], zeros, zeros,
                              steps=[length])
    assert run.outputs["Y"].shape == (length, 1, 64)
    np.testing.assert_allclose(run.outputs["Y"], ys, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(seen["hn"], h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(seen["cn"], c, rtol=1e-12, atol=1e-12)
