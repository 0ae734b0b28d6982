"""Packs of dynamic tensors (profile field `jagged_packs`, docs/semantics.md "Jagged packs"):
items that differ only in extents their operator declared dynamic (`~|n`) are zero-padded to the
largest under profile khronos, and are an error under profile spec.
Expected values are built with NumPy here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from refinterp.api import run_operator
from refinterp.core.diagnostics import Diagnostic
from refinterp.language.invocation import TensorType
from refinterp.run.jagged import DynamicExtents

PROGRAM = """
import layout;

# the first k items of x: an output whose extent is dynamic, at most n
operator head {
    @input { x: real[n]; k: int[]; }
    @output { y: real[~|n]; }
    @compose {
        xs..(n) = layout.unstack{axis=0}(x);
        ys = for xi : xs do..(k) { yield xi; };
        y = layout.stack{axis=0}(ys);
    }
}

# row j of x cut to ks[j] items, the rows stacked as columns
operator jagged {
    @input { x: real[b, n]; ks: int[b]; }
    @output { y: real[~|n, b]; }
    @compose {
        rows..(b) = layout.unstack{axis=0}(x);
        counts..(b) = layout.unstack{axis=0}(ks);
        parts..(b) = for r : rows, c : counts do..(b) item: head(r, c);
        y = layout.stack{axis=1}(parts);
    }
}

# two static tensors of different lengths: not dynamic, never padded
operator pair {
    @input { a: real[n]; c: real[m]; }
    @output { y: real[n, 2]; }
    @compose { y = layout.stack{axis=1}([a, c]); }
}
"""


@pytest.fixture()
def program(tmp_path: Path) -> Path:
    path = tmp_path / "jagged.sknd"
    path.write_text(PROGRAM)
    return path


def expected(x: np.ndarray, ks: list[int]) -> np.ndarray:
    out = np.zeros((max(ks), len(ks)))
    for j, k in enumerate(ks):
        out[:k, j] = x[j, :k]
    return out


@pytest.mark.parametrize("ks", [[2, 4, 1], [3, 3, 3], [1, 4, 4]])
def test_khronos_pads_dynamic_extents_with_zeros(program, ks):
    x = np.arange(12.0).reshape(3, 4) + 1
    out = run_operator("jagged", {"x": x, "ks": np.array(ks)}, file=program,
                       profile="khronos")["y"]
    np.testing.assert_array_equal(out, expected(x, ks))


def test_spec_reports_the_jagged_pack_and_names_the_profile(program):
    x = np.arange(12.0).reshape(3, 4)
    with pytest.raises(Diagnostic) as error:
        run_operator("jagged", {"x": x, "ks": np.array([2, 4, 1])}, file=program)
    assert error.value.code == "E0306"
    assert any("--profile khronos pads them with zeros" in note for note in error.value.notes)


def test_equal_counts_need_no_padding_in_either_profile(program):
    x = np.arange(8.0).reshape(2, 4)
    for profile in ("spec", "khronos"):
        out = run_operator("jagged", {"x": x, "ks": np.array([3, 3])}, file=program,
                           profile=profile)["y"]
        np.testing.assert_array_equal(out, x[:, :3].T)


def test_static_extents_are_never_padded(program):
    with pytest.raises(Diagnostic) as error:
        run_operator("pair", {"a": np.ones(2), "c": np.ones(3)}, file=program,
                     profile="khronos")
    assert error.value.code == "E0306"


def test_only_axes_dynamic_in_every_item_are_padded():
    table = DynamicExtents()
    a, b, c = np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 5))
    table.mark({"y": (TensorType("real", (None, 3), (4, None)),
                      TensorType("real", (None, 3), (4, None)),
                      TensorType("real", (None, 5), (4, None)))}, {"y": [a, b, c]})
    padded = table.pad([a, b])
    assert padded[0].shape == (4, 3) and not padded[0][2:].any() and padded[1] is b
    kept = table.pad([b, c])                    # they differ in axis 1, which is static
    assert kept[0] is b and kept[1] is c
    unmarked = np.ones((3, 3))
    assert table.pad([a, unmarked])[0] is a     # an unmarked item: nothing is padded
