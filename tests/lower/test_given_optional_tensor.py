"""`?o` on an optional tensor input inside @lower is whether `o` was given (§2.12): true at
every item when it is, false when it is absent. Every engine runs it itself (no fallback)."""

from __future__ import annotations

import numpy as np
import pytest

from refinterp import api

OPERATOR = """
operator add_optional {
    @input { x: real[n]; o: optional real[n]; }
    @output { y: real[n]; }
    @lower { y[i] = ?o ? x[i] + o[i] : x[i] * 2.0, i < n; }
}
"""

X = np.array([1.0, -2.0, 0.5, 4.0])
O = np.array([10.0, 20.0, -30.0, 0.25])


@pytest.mark.parametrize("engine", ["reference", "compiled", "vector"])
@pytest.mark.parametrize("given", [True, False])
def test_is_given_on_an_optional_tensor(tmp_path, engine: str, given: bool) -> None:
    path = tmp_path / "add_optional.sknd"
    path.write_text(OPERATOR)
    inputs = {"x": X, "o": O} if given else {"x": X}
    how: list[str] = []
    run = api.evaluate(path, op="add_optional", inputs=inputs, engine=engine,
                       hooks=api.Hooks(log=lambda instance, used: how.append(used)))
    np.testing.assert_allclose(run.outputs["y"], np.add(X, O) if given else np.multiply(X, 2.0))
    assert len(how) == 1 and how[0].startswith(engine), how  # not a fallback


PACKS = """
operator pick {
    @attrib { p: optional int..(2); }
    @input { x: real[n]; o: optional real[n]..(2); }
    @output { y: real[n]; z: real[n]; }
    @lower {
        y[i] = ?p ? x[i] + 1.0 : x[i] - 1.0, i < n;
        z[i] = ?o ? x[i] * o[1][i] : x[i] * 3.0, i < n;
    }
}
"""


@pytest.mark.parametrize("engine", ["reference", "compiled", "vector"])
@pytest.mark.parametrize("given", [True, False])
def test_is_given_on_optional_packs(tmp_path, engine: str, given: bool) -> None:
    """`?p` on an optional attribute pack and `?o` on an optional tensor pack: whether each
    was given, as for a single value."""
    path = tmp_path / "pick.sknd"
    path.write_text(PACKS)
    inputs = {"x": X, "o": [O, -O]} if given else {"x": X}
    attributes = {"p": [1, 2]} if given else {}
    run = api.evaluate(path, op="pick", inputs=inputs, attributes=attributes, engine=engine)
    np.testing.assert_allclose(run.outputs["y"], X + 1.0 if given else X - 1.0)
    np.testing.assert_allclose(run.outputs["z"], X * -O if given else X * 3.0)
