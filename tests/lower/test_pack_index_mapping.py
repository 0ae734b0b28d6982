"""An index pack without `..` inside a tensor access maps the access over the pack (spec §2.4
"Arguments of unary and binary operators may be packs, in which case the operations are taken
element-wise, and the result is also a pack"; §2.12 "The indices themselves may be packed
(denoted by ..)"): `x[i, p]` == `[x[i, p[0]], x[i, p[1]], ..]`, while `p..` spreads p over
several dimensions. docs/semantics.md, "Pack index without '..'".

Every case runs on the reference (the definition), on the compiled engine's generated code
where it folds, and on the vector engine; each is compared with independent NumPy code."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from refinterp import api
from refinterp.core.diagnostics import Diagnostic

RNG = np.random.default_rng(18)


def _program(lower: str, inputs: str, outputs: str, using: str = "") -> Any:
    block = f"@using {{ {using} }}" if using else ""
    return api.load_source(f"operator f {{ @input {{ {inputs} }} @output {{ {outputs} }} "
                           f"{block} @lower {{ {lower} }} }}")


def _evaluate(program: Any, inputs: dict, engine: str) -> tuple[dict, str]:
    """The outputs on `engine`, and how the engine ran the operator (`eval --verbose`)."""
    told: list[str] = []
    hooks = api.Hooks(log=lambda instance, how: told.append(how))
    return api.evaluate(program, inputs=inputs, engine=engine, hooks=hooks).outputs, told[0]


def _on_every_engine(program: Any, inputs: dict) -> dict[str, tuple[dict, str]]:
    """The outputs and the log of each engine; they are identical (the formulas here only copy
    values, or compute the same IEEE operations in the same order)."""
    results = {engine: _evaluate(program, inputs, engine)
               for engine in ("reference", "compiled", "vector")}
    reference = results["reference"][0]
    for engine, (outputs, how) in results.items():
        assert set(outputs) == set(reference)
        for name in reference:
            np.testing.assert_array_equal(outputs[name], reference[name], err_msg=engine)
    return results


def _diagnostic_on_every_engine(program: Any, inputs: dict) -> Diagnostic:
    """The diagnostic each engine reports, the same on all of them."""
    found = []
    for engine in ("reference", "compiled", "vector"):
        with pytest.raises(Diagnostic) as caught:
            _evaluate(program, inputs, engine)
        found.append(caught.value)
    assert len({(d.code, d.message, str(d.span), tuple(d.notes)) for d in found}) == 1
    return found[0]


def test_a_reversed_pack_index_gathers_the_last_axis_backwards() -> None:
    program = _program("g = x[i, j, di], y[i, j, k] = g[k], i < n, j < m, k < d;",
                       "x: real[n, m, d];", "y: real[n, m, d];", "di = [d - 1 : -1 : -1];")
    x = RNG.standard_normal((2, 3, 4))
    results = _on_every_engine(program, {"x": x})
    np.testing.assert_array_equal(results["reference"][0]["y"], x[..., ::-1])
    assert "generated code after folding" in results["compiled"][1]
    assert results["vector"][1] == "vector"  # vectorised, no formula handed to compiled


def test_two_pack_indices_of_one_length_map_together_item_by_item() -> None:
    # `x[i, p, q]` == [x[i, p[0], q[0]], x[i, p[1], q[1]], ..]: NumPy's paired advanced indexing
    program = _program("g = x[i, p, q], y[i, k] = g[k], i < n, k < 3;",
                       "x: real[n, 3, 2];", "y: real[n, 3];", "p = [0, 2, 1]; q = [1, 0, 1];")
    x = RNG.standard_normal((4, 3, 2))
    results = _on_every_engine(program, {"x": x})
    np.testing.assert_array_equal(results["reference"][0]["y"], x[:, [0, 2, 1], [1, 0, 1]])
    assert results["vector"][1] == "vector"


def test_pack_indices_of_different_lengths_are_a_diagnostic_at_the_second() -> None:
    program = _program("g = x[i, p, q], y[i] = g[0], i < n;",
                       "x: real[n, 3, 2];", "y: real[n];", "p = [0, 2, 1]; q = [1, 0];")
    diagnostic = _diagnostic_on_every_engine(program, {"x": np.zeros((2, 3, 2))})
    assert diagnostic.code == "E0503"
    assert "has length 2" in diagnostic.message and "length 3" in diagnostic.message
    # the span is the item `q` of `x[i, p, q]`
    span = diagnostic.span
    line = span.source.text.splitlines()[span.line - 1]
    assert (span.line, span.end_line) == (1, 1) and line[span.col - 1:span.end_col - 1] == "q"
    assert line[span.col - 9:span.end_col] == "x[i, p, q]"
    assert diagnostic.notes == ["at i = 0"]


def test_a_mapped_access_beside_a_spread_pack_and_in_folds() -> None:
    # `x[i, zi.., di]`: zi.. spreads over the middle dimensions, di maps; the folds read the
    # mapped pack in the order of di (reversed), as NumPy does here explicitly
    program = _program(
        "p[i, zi..] = x[i, zi.., di] * .., i < n, zi < t; "
        "s[i, zi..] = x[i, zi.., di] + .. + 1.0, i < n, zi < t;",
        "x: real[n, t.., d];", "p: real[n, t..]; s: real[n, t..];", "di = [d - 1 : -1 : -1];")
    x = RNG.standard_normal((2, 3, 2, 4))
    results = _on_every_engine(program, {"x": x})
    product, total = x[..., 3], 1.0 + x[..., 3]
    for k in (2, 1, 0):
        product = product * x[..., k]
        total = total + x[..., k]
    np.testing.assert_array_equal(results["reference"][0]["p"], product)
    np.testing.assert_array_equal(results["reference"][0]["s"], total)


def _nearest_grid_sample(image: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Independent NumPy: corners aligned, the grid's last axis is (x, y) = (width, height),
    nearest by floor(v + 0.5), zero outside the image."""
    n, c, h, w = image.shape
    _, oh, ow, _ = grid.shape
    out = np.zeros((n, c, oh, ow))
    for b in range(n):
        for r in range(oh):
            for q in range(ow):
                gx, gy = grid[b, r, q]
                col = int(np.floor((gx + 1.0) * 0.5 * (w - 1) + 0.5))
                row = int(np.floor((gy + 1.0) * 0.5 * (h - 1) + 0.5))
                if 0 <= row < h and 0 <= col < w:
                    out[b, :, r, q] = image[b, :, row, col]
    return out


def test_a_grid_sample_like_nearest_lookup_matches_numpy() -> None:
    program = _program(
        "g = (grid[ni, zi.., di] + 1.0) * 0.5, v = g * real(s - 1), "
        "i = int(`floor`(v + 0.5)), "
        "out[ni, ci, zi..] = (i >= 0 && i < s) && .. ? image[ni, ci, i..] : 0.0, "
        "ni < n, ci < c, zi < z;",
        "image: real[n, c, s..(2)]; grid: real[n, z..(2), 2];", "out: real[n, c, z..];",
        "di = [1, 0];")
    image = RNG.standard_normal((2, 3, 4, 5))
    grid = RNG.uniform(-1.3, 1.3, (2, 3, 6, 2))
    results = _on_every_engine(program, {"image": image, "grid": grid})
    np.testing.assert_array_equal(results["reference"][0]["out"],
                                  _nearest_grid_sample(image, grid))
    assert results["vector"][1] == "vector"


def test_a_pack_index_on_the_left_writes_its_cells_as_one_update() -> None:
    # `y[i, p] = x[i, q]`: cell y[i, p[k]] gets x[i, q[k]] (NumPy: y[:, p] = x[:, q])
    program = _program("y[i, p] = x[i, q], i < n;", "x: real[n, 3];", "y: real[n, 3];",
                       "p = [2, 0, 1]; q = [0, 1, 2];")
    x = RNG.standard_normal((3, 3))
    expected = np.zeros((3, 3))
    expected[:, [2, 0, 1]] = x[:, [0, 1, 2]]
    results = _on_every_engine(program, {"x": x})
    np.testing.assert_array_equal(results["reference"][0]["y"], expected)


def test_a_packed_index_symbol_without_dots_maps_too() -> None:
    # `i < s` with s a pack makes i a pack: `x[i]` on a rank-2 tensor is a pack of two
    # rank-1 accesses (a rank error), `x[i..]` the element
    program = _program("y[i..] = x[i], i < s;", "x: real[s..];", "y: real[s..];")
    diagnostic = _diagnostic_on_every_engine(program, {"x": np.zeros((2, 3))})
    assert "'x' has rank 2 but is accessed with 1 indices" in diagnostic.message
    assert diagnostic.notes[0] == "at i = [0, 0]" and "'p..' spreads it" in diagnostic.notes[1]
    spread = _program("y[i..] = x[i..], i < s;", "x: real[s..];", "y: real[s..];")
    x = RNG.standard_normal((2, 3))
    np.testing.assert_array_equal(_on_every_engine(spread, {"x": x})["reference"][0]["y"], x)


def test_a_pack_index_cannot_map_a_whole_pack_of_tensors_or_beside_a_colon() -> None:
    whole = _program("g = xs[p], y[i] = g[0], i < n;", "xs: real[n]..(2);", "y: real[n];",
                     "p = [0, 1];")
    diagnostic = _diagnostic_on_every_engine(whole, {"xs": [np.zeros(2), np.zeros(2)]})
    assert "cannot index a whole pack of tensors" in diagnostic.message
    colon = _program("g = x[p, :], y[i] = 0.0, i < n;", "x: real[n, n];", "y: real[n];",
                     "p = [0, 1];")
    diagnostic = _diagnostic_on_every_engine(colon, {"x": np.zeros((2, 2))})
    assert "pack of packs" in diagnostic.message


def test_an_empty_pack_index_reads_nothing() -> None:
    # d = 0: the mapped access is the empty pack; its sum with an initial value is that value
    program = _program("y[i] = x[i, di] + .. + 2.0, i < n;", "x: real[n, d];", "y: real[n];",
                       "di = [0 : d];")
    results = _on_every_engine(program, {"x": np.zeros((3, 0))})
    np.testing.assert_array_equal(results["reference"][0]["y"], np.full(3, 2.0))


def test_a_guard_on_a_pack_index_is_checked_for_every_item() -> None:
    # `x[i, |i + p|]`: one item out of range skips the whole iteration (y keeps its 0.0)
    program = _program("y[i] = x[i, |i + p|] + .. + 0.0, i < n;", "x: real[n, n];",
                       "y: real[n];", "p = [0, 1];")
    x = RNG.standard_normal((4, 4))
    expected = np.array([0.0 + x[i, i] + x[i, i + 1] if i + 1 < 4 else 0.0 for i in range(4)])
    results = _on_every_engine(program, {"x": x})
    np.testing.assert_array_equal(results["reference"][0]["y"], expected)
    assert results["vector"][1] == "vector"
