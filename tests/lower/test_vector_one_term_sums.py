"""A `+=` that adds one product term per cell at a time (`y[i..] += xs[k][i..]`, a pack item per
step; `y[i] += a[k][i] * b[i]`) is the definition's own addition, one at a time in iteration
order: the vector engine gives the in-order sum bit for bit (no reordered sum to certify),
cancellations included."""

from __future__ import annotations

import numpy as np
import pytest

from refinterp import api

OPERATOR = """
operator weighted {
    @input { a: real[n]..(p); b: real[n]; }
    @output { y: real[n]; }
    @lower {
        y[i] += a[k][i] * b[i], k < p, i < n;
    }
}
"""


def in_order(terms: list[np.ndarray]) -> np.ndarray:
    """0 + t0 + t1 + ..., one addition at a time (independent of refinterp)."""
    total = np.zeros_like(terms[0])
    for term in terms:
        total = total + term
    return total


# cancelling sums: 1e16 + 1 rounds back to 1e16 in float64, so the order decides the answer
CANCELLING = [np.array([1e16, 1.0, 3.0, -0.0]), np.array([1.0, 1e16, 1e-300, -0.0]),
              np.array([-1e16, -1e16, -3.0, -0.0])]


@pytest.mark.parametrize("engine", ["vector", "reference"])
def test_sum_n_adds_pack_items_in_order(engine: str) -> None:
    run = api.run_operator("math.sum_n", {"xs": CANCELLING}, engine=engine)
    expected = in_order(CANCELLING)
    assert expected[0] == 0.0 and expected[1] == 0.0  # (the order matters here)
    np.testing.assert_array_equal(run["y"], expected)


@pytest.mark.parametrize("engine", ["vector", "reference"])
def test_one_product_term_per_cell_is_added_in_order(tmp_path, engine: str) -> None:
    path = tmp_path / "weighted.sknd"
    path.write_text(OPERATOR)
    b = np.array([3.0, 0.5, 1.0, 2.0])
    how: list[str] = []
    run = api.evaluate(path, op="weighted", inputs={"a": CANCELLING, "b": b}, engine=engine,
                       hooks=api.Hooks(log=lambda instance, used: how.append(used)))
    np.testing.assert_array_equal(run.outputs["y"], in_order([a * b for a in CANCELLING]))
    if engine == "vector":
        assert how and all("compiled" not in used for used in how), how
