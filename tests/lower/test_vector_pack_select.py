"""The vector engine chooses item by item under a pack of computed conditions (`c ? a : b` with
`c` a pack of tensors: the bicubic grid sample's reflection `r < s ? r : period - r`), as the
definition does (both branches evaluated, each item chosen by its own condition)."""

from __future__ import annotations

import numpy as np
import pytest

from refinterp import api

OPERATOR = """
operator pick {
    @input { x: real[n, m]; }
    @output { y: real[n, m]; }
    @lower {
        k = [i, j] < [2, 1] ? [i, j] : [n - 1 - i, 0],
        y[i, j] = x[k..], i < n, j < m;
    }
}
"""


def expected(x: np.ndarray) -> np.ndarray:
    n, m = x.shape
    y = np.empty_like(x)
    for i in range(n):
        for j in range(m):
            y[i, j] = x[i if i < 2 else n - 1 - i, j if j < 1 else 0]
    return y


@pytest.mark.parametrize("engine", ["vector", "scalar"])
def test_each_item_follows_its_own_condition(tmp_path, engine) -> None:
    path = tmp_path / "pick.sknd"
    path.write_text(OPERATOR)
    x = np.arange(20.0).reshape(5, 4)
    how = []
    run = api.evaluate(path, op="pick", inputs={"x": x}, engine=engine,
                       hooks=api.Hooks(log=lambda instance, used: how.append(used)))
    np.testing.assert_array_equal(run.outputs["y"], expected(x))
    if engine == "vector":
        assert how == ["vector"], how  # not a fallback to the scalar engine


def test_the_bicubic_grid_sample_runs_vectorised() -> None:
    """Every padding, aligned or not: the vector engine runs it (no fallback) and gives the
    independent point-by-point NumPy reference of tests/stdlib/test_image.py."""
    from testsupport.image_references import ref_grid_sample

    rng = np.random.default_rng(3)
    x, grid = rng.standard_normal((1, 2, 6, 5)), rng.uniform(-1.2, 1.2, (1, 4, 3, 2))
    how = []
    for padding in ("ZEROS", "REPLICATE", "REFLECT"):
        for aligned in (False, True):
            attributes = {"mode": "CUBIC", "padding": padding, "aligned": aligned}
            out = api.evaluate("image.grid_sample", inputs={"input": x, "grid": grid},
                               attributes=attributes, engine="vector",
                               hooks=api.Hooks(log=lambda instance, used: how.append(used))
                               ).outputs["output"]
            np.testing.assert_allclose(out, ref_grid_sample(x, grid, "CUBIC", padding, aligned),
                                       rtol=1e-12, atol=1e-12)
    assert set(how) == {"vector"}, how
