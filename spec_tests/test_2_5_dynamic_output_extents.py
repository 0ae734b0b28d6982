"""Spec §2.6 "Dynamic input and output shapes" with §2.12 conditional assignment and §3.1
"Dynamic tensor shapes": output extents that a @lower block decides (docs/semantics.md,
"Counted output extents"). Expected values come from independent NumPy code.

§2.6: "The same syntax can be used for defining operators whose output shapes are dynamic
because they depend on the actual data. As in that case there is no way to express the actual
output shape, it is mostly left undefined (~), only the upper bound must be defined." —
"However, an explicit symbol may be used to declare agreement of two or more dynamic output
shapes, as s does in the following example: y: real[s|k,m]; z: real[s|k,m];"

§3.1: "the shape expressions for operator outputs specifies their shape in case the operation is
static, or alternatively an upper bound the shapes in case the operator is dynamic (when its
output shapes depend on the data itself)."

§2.12: "It is possible to guard the assignment with a condition, allowing it to be executed only
if the condition evaluates to true. [...] The condition may depend on loop index variables or on
tensor values".
"""

from __future__ import annotations

import numpy as np
import pytest

import refinterp.api as ri

# The spec's agreement example `y: real[s|k,m]; z: real[s|k,m]`, given a @lower block: the rows
# of x whose sum is positive (y) and their row numbers (z). Each iteration that stores writes
# one entry along s, so a row is written as one unit with `:`.
POSITIVE_ROWS = """operator positive_rows {
    @attrib { k: int; }
    @input { x: real[n, m]; }
    @output { y: real[s|k, m]; z: int[s|k]; }
    @lower {
        y[s, :] = x[i, :], i < n | x[i, :] + .. > 0.0;
        z[s] = i, i < n | x[i, :] + .. > 0.0;
    }
}
"""


def positive_rows(x: np.ndarray, k: int, engine: str = "scalar") -> dict:
    return ri.evaluate(ri.load_source(POSITIVE_ROWS, path="rows.sknd"), op="positive_rows",
                       inputs={"x": x}, attributes={"k": k}, engine=engine).outputs


@pytest.mark.parametrize("engine", ["scalar", "vector"])
def test_an_explicit_symbol_declares_agreement_of_dynamic_output_extents(engine: str) -> None:
    x = np.random.default_rng(5).standard_normal((8, 3))
    keep = x.sum(axis=1) > 0  # independent NumPy: the rows with a positive sum, in order
    out = positive_rows(x, 8, engine)
    np.testing.assert_array_equal(out["y"], x[keep])
    np.testing.assert_array_equal(out["z"], np.flatnonzero(keep))
    assert out["y"].shape[0] == out["z"].shape[0] == keep.sum()


def test_the_declared_extent_is_an_upper_bound() -> None:
    x = np.ones((4, 2))  # every row is kept: 4 entries, above the bound 3
    with pytest.raises(ri.Error) as info:
        positive_rows(x, 3)
    assert info.value.code == "E0501"
    assert "above its bound 3" in info.value.message


def test_shapes_report_the_upper_bound_of_a_dynamic_output() -> None:
    result = ri.shapes(ri.load_source(POSITIVE_ROWS), op="positive_rows",
                       inputs={"x": ri.TensorType("real", (5, 2))}, attributes={"k": 5})
    y, z = result.outputs["y"], result.outputs["z"]
    assert (y.shape, y.bounds) == ((None, 2), (5, None))
    assert (z.shape, z.bounds) == ((None,), (5,))


def test_only_the_upper_bound_leaves_nothing_for_a_lower_block_to_compute() -> None:
    """`~|k` declares no symbol a formula could count by: refinterp refuses it in a @lower
    block rather than guessing an extent (§3.1 expects such operators to be intrinsics)."""
    text = """operator op {
    @attrib { k: int; }
    @input { x: real[n, m]; }
    @output { y: real[~|k, m]; }
    @lower { y[i, j] = x[i, j], i < n, j < m; }
}
"""
    with pytest.raises(ri.Error) as info:
        ri.evaluate(ri.load_source(text), op="op", inputs={"x": np.ones((2, 2))},
                    attributes={"k": 4})
    assert info.value.code == "E0500"
    assert info.value.message == ("output 'y' has the dynamic extent ~|4 in dimension 0, which "
                                  "the @lower block does not compute")
