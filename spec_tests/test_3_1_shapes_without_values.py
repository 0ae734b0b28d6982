"""Shapes without values (spec §3.1 dynamic extents known as symbols with upper bounds; §2.4
"The identity operator": `is` compares symbolically, `==` values; docs/semantics.md "Shapes
without values"). Expected shapes are the operators' shape formulas written out here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import refinterp.api as ri
from refinterp.cli import main
from refinterp.numeric import symbolic

IDENTITY = """
graph G {
    @input { a: real[s1|10]; b: real[s2|10]; }
    @output { same: bool[]; equal: bool[]; itself: bool[]; }
    @compose {
        same = s1 is s2;
        equal = s1 == s2;
        itself = s1 is s1;
    }
}
"""


def test_is_compares_symbols_and_eq_compares_values(tmp_path: Path) -> None:
    """§2.4 L436-441: two dynamic extents with equal run-time values: `s1 is s2` is false,
    `s1 == s2` true (and `s1 is s1` true)."""
    path = tmp_path / "p16.sknd"
    path.write_text(IDENTITY)
    run = ri.evaluate(path, inputs={"a": np.zeros(3), "b": np.ones(3)})
    assert bool(run.outputs["same"]) is False
    assert bool(run.outputs["equal"]) is True
    assert bool(run.outputs["itself"]) is True
    # without values, `==` of the two symbols is left to the run; `is` is decided
    checked = ri.shapes(path)
    assert not checked.checked and "s1 == s2" in checked.stopped


STATIC = """
operator pair {
    @input { a: real[n]; b: real[m]; }
    @output { same: bool[]; }
    @compose { same = n is m; }
}
"""


def test_shape_symbols_without_a_bound_are_static_and_compared_by_value(tmp_path: Path) -> None:
    """§2.6: only an extent declared with an upper bound (`s|10`) or `~` is dynamic; an
    operator's `real[n]` is known when it is instantiated, so `n is m` holds for equal
    lengths (and not for different ones)."""
    path = tmp_path / "pair.sknd"
    path.write_text(STATIC)
    equal = ri.evaluate(path, op="pair", inputs={"a": np.zeros(3), "b": np.ones(3)})
    assert bool(equal.outputs["same"]) is True
    other = ri.evaluate(path, op="pair", inputs={"a": np.zeros(3), "b": np.ones(2)})
    assert bool(other.outputs["same"]) is False
    # a symbol bounded once is dynamic wherever it appears (§2.6 L699): y's `s` is x's
    shared = tmp_path / "shared.sknd"
    shared.write_text("""
operator twin {
    @input { x: real[s|10]; y: real[s]; z: real[t|10]; }
    @output { same: bool[]; other: bool[]; }
    @compose { same = y.shape[0] is s; other = z.shape[0] is s; }
}
""")
    run = ri.evaluate(shared, op="twin", inputs={"x": np.zeros(2), "y": np.zeros(2),
                                                "z": np.zeros(2)})
    assert bool(run.outputs["same"]) is True and bool(run.outputs["other"]) is False


BATCH = """
import nn;
import layout;
graph G {
    @input { x: real[b|64, 3, 9, 9]; w: real[4, 3, 3, 3]; }
    @output { y: real[b, 4, 5, 5]; z: real[b, 100]; p: real[b, 4, 2, 2]; c: real[b, 8, 5, 5]; }
    @compose {
        y = nn.conv{stride=[2, 2], padding=[1, 1, 1, 1]}(x, w);
        z = layout.reshape{shape=[b, 100]}(y);
        p = nn.max_pool{size=[3, 3], stride=[2, 2]}(y);
        c = layout.concat{axis=1}([y, y]);
    }
}
"""


def conv_extent(h: int, k: int, stride: int, pad: int) -> int:
    return (h + 2 * pad - k) // stride + 1


def test_a_dynamic_batch_flows_through_as_a_symbol(tmp_path: Path) -> None:
    path = tmp_path / "batch.sknd"
    path.write_text(BATCH)
    result = ri.shapes(path)
    assert result.checked and not result.runtime_checks
    b = symbolic.symbol("b", 64)
    h = conv_extent(9, 3, 2, 1)
    expected = {"y": (b, 4, h, h), "z": (b, 100), "p": (b, 4, (h - 3) // 2 + 1, (h - 3) // 2 + 1),
                "c": (b, 8, h, h)}
    for name, shape in expected.items():
        got = result.outputs[name].shape
        assert all(symbolic.identical(g, e) for g, e in zip(got, shape)), (name, got)
    assert [(s.name, s.low, s.high) for s in result.extent_symbols()] == [("b", 1, 64)]
    # every tensor the composition binds, checked against a run with values: b = 3
    run_shapes: dict[str, tuple] = {}
    ri.evaluate(path, inputs={"x": np.ones((3, 3, 9, 9)), "w": np.ones((4, 3, 3, 3))},
                hooks=ri.Hooks(observe=lambda name, value: run_shapes.__setitem__(
                    name, tuple(value.shape))))
    assert set(run_shapes) == set(result.tensors)
    for name, info in result.tensors.items():
        assert tuple(symbolic.evaluate(e, {"b": 3}) for e in info.shape) == run_shapes[name]


def test_what_the_bounds_do_not_decide_is_listed_as_a_run_time_check(tmp_path: Path,
                                                                      capsys) -> None:
    """A converter's fixed batch of 1 (`reshape{shape=[1, 100]}`) under a dynamic batch: the
    reshape's volume assert holds only for b = 1, so it is left to the run, not refused; an
    assert that fails for every value is an error."""
    fixed = BATCH.replace("z: real[b, 100]", "z: real[1, 100]").replace(
        "shape=[b, 100]", "shape=[1, 100]")
    path = tmp_path / "fixed.sknd"
    path.write_text(fixed)
    result = ri.shapes(path)
    assert result.checked
    assert any("100 == 100 * b" in why for _, why, _ in result.runtime_checks)
    assert main(["shapes", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["outputs"]["y"]["shape"] == ["b", 4, 5, 5]
    assert data["extent_symbols"] == {"b": {"low": 1, "high": 64}}
    assert any(c["because"] == "100 == 100 * b" for c in data["runtime_checks"])
    wrong = BATCH.replace("shape=[b, 100]", "shape=[b, 99]").replace(
        "z: real[b, 100]", "z: real[b, 99]")
    path.write_text(wrong)
    with pytest.raises(ri.Error) as info:
        ri.shapes(path)
    assert info.value.code == "E0307"  # 99 * b == 100 * b fails for every b >= 1


def test_shapes_prints_symbols_bounds_and_open_checks(tmp_path: Path, capsys) -> None:
    path = tmp_path / "batch.sknd"
    path.write_text(BATCH.replace("z: real[b, 100]", "z: real[1, 100]"))
    assert main(["shapes", str(path), "--tensors"]) == 0
    out = capsys.readouterr().out
    assert "y: real[b, 4, 5, 5]" in out and "symbols: b in 1..64" in out
    assert "checked at run time" in out and "output 'z': b == 1" in out
    assert "z.flattened: real[100 * b]" in out or "tensors:" in out


BROADCAST = """
import math;
graph G {
    @input { x: real[b|8, 3]; y: real[1, 3]; z: real[c|8, 3]; }
    @output { u: real[b, 3]; v: real[b, 3]; }
    @compose {
        u = math.add(x, y);
        v = math.add(x, z);
    }
}
"""


def test_broadcasting_follows_is_in_a_run_as_in_the_check(tmp_path: Path) -> None:
    """`math.add` aligns by `ex is 1` (§2.4: decided symbolically): a dynamic extent is never
    `1`, whatever its value in a run, so `[b, 3] + [c, 3]` needs b == c, also when b is 1 —
    the run decides as the check without values does (the symbols reach the invoked
    operators: `run.jagged.DynamicExtents`); `[b, 3] + [1, 3]` is fine for every b."""
    path = tmp_path / "broadcast.sknd"
    path.write_text(BROADCAST)
    checked = ri.shapes(path)
    assert [why for _, why, _ in checked.runtime_checks] == ["b == c"]
    ones = np.ones((1, 3))
    run = ri.evaluate(path, inputs={"x": np.full((3, 3), 2.0), "y": ones, "z": np.ones((3, 3))})
    np.testing.assert_array_equal(run.outputs["u"], np.full((3, 3), 3.0))
    np.testing.assert_array_equal(run.outputs["v"], np.full((3, 3), 3.0))
    with pytest.raises(ri.Error) as refused:  # b = 1, c = 3: `b is 1` is false
        ri.evaluate(path, inputs={"x": ones, "y": ones, "z": np.ones((3, 3))})
    assert refused.value.code == "E0307"
