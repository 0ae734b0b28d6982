"""Spec §2.10 (L1000-1012): packed results in a target list, `a..(n), [b, c..(k)] = op(...)`.

"In case an invocation has packed results, the length of such results **must** be explicitly
denoted, as it could not always be derived easily from the operator invocation on the right
hand side. This can be done similarly as in case of parameter declarations, after the ..
operator: `a..(n), [b, c..(k)] = op(x, [y, z]);`"

A packed target `a..(n)` binds a whole packed result of n tensors; brackets destructure one
packed result: `[b, c..(k)]` binds its first tensor to b and the k after it to c.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import refinterp.api as api
from refinterp.core.diagnostics import Diagnostic

OPS = """
operator scale {
  @attrib { k: real = 1.0; }
  @input { x: real[n]; }
  @output { z: real[n]; }
  @lower { z[i] = x[i] * k, i < n; }
}
operator two_packs {
  @input { x: real[n]; }
  @output { a: real[n]..(2); d: real[n]..(4); }
  @compose {
    a = [scale{k=1.0}(x), scale{k=2.0}(x)];
    d = [scale{k=3.0}(x), scale{k=4.0}(x), scale{k=5.0}(x), scale{k=6.0}(x)];
  }
}
"""

MAIN = """
graph main {
  @input { x: real[3]; }
  @output { p: real[3]..(2); q: real[3]; r: real[3]..(3); }
  @compose {
    TARGETS = two_packs(x);
    p = a; q = b; r = c;
  }
}
"""

X = np.array([1.0, -2.0, 0.5])


def write(tmp_path: Path, targets: str) -> Path:
    path = tmp_path / "main.sknd"
    path.write_text(OPS + MAIN.replace("TARGETS", targets))
    return path


def test_pack_and_destructured_pack_run(tmp_path: Path) -> None:
    run = api.evaluate(write(tmp_path, "a..(2), [b, c..(3)]"), inputs={"x": X})
    np.testing.assert_allclose(run.outputs["p"][0], X * 1.0)
    np.testing.assert_allclose(run.outputs["p"][1], X * 2.0)
    np.testing.assert_allclose(run.outputs["q"], X * 3.0)
    for got, k in zip(run.outputs["r"], (4.0, 5.0, 6.0)):
        np.testing.assert_allclose(got, X * k)


def test_pack_targets_checked_without_values(tmp_path: Path) -> None:
    shapes = api.shapes(write(tmp_path, "a..(2), [b, c..(3)]"))
    assert len(shapes.outputs["p"]) == 2
    assert tuple(shapes.outputs["q"].shape) == (3,)
    assert [tuple(t.shape) for t in shapes.outputs["r"]] == [(3,)] * 3


def test_placeholder_and_unzip_inside_brackets(tmp_path: Path) -> None:
    path = tmp_path / "main.sknd"
    path.write_text(OPS + """
graph main {
  @input { x: real[3]; }
  @output { e: real[3]..(1); g: real[3]..(1); f: real[3]; h: real[3]..(0); }
  @compose {
    ~, [~, (e, g)..(1), ~] = two_packs(x);
    [f, h..(0)] = [scale{k=7.0}(x)];
  }
}
""")
    run = api.evaluate(path, inputs={"x": X})
    np.testing.assert_allclose(run.outputs["e"][0], X * 4.0)  # d = [3x, 4x, 5x, 6x]
    np.testing.assert_allclose(run.outputs["g"][0], X * 5.0)
    np.testing.assert_allclose(run.outputs["f"], X * 7.0)
    assert len(run.outputs["h"]) == 0


@pytest.mark.parametrize("targets, message", [
    ("a..(2), [b, c..(2)]", "'c' is declared as a pack of 2 tensors"),
    ("a..(3), [b, c..(3)]", "'a' is declared as a pack of 3 tensors"),
    ("a..(2), [b, c, e]", "a list of 3 targets cannot take a pack of 4 items"),
    ("a..(2), [b..(1), c..(3)]", "at most one packed target"),
])
def test_declared_lengths_must_match(tmp_path: Path, targets: str, message: str) -> None:
    path = write(tmp_path, targets)
    with pytest.raises(Diagnostic) as info:
        api.shapes(path)
    assert message in str(info.value)
    component_line = path.read_text().splitlines().index(f"    {targets} = two_packs(x);") + 1
    assert info.value.span is not None and info.value.span.line == component_line


def test_printer_round_trip(tmp_path: Path) -> None:
    path = write(tmp_path, "a..(2), [b, c..(3)]")
    text, _, _ = api.format_file(path)
    assert "a..(2), [b, c..(3)] = two_packs(x);" in text
    again = tmp_path / "again.sknd"
    again.write_text(text)
    assert api.format_file(again)[0] == text


@pytest.mark.parametrize("targets", ["a..(2), [b, c..]", "~, [~, (e, g).., ~]",
                                     "a.., [b, c..(3)]"])
def test_packed_target_without_length_is_refused_under_spec(tmp_path: Path,
                                                            targets: str) -> None:
    """"the length of such results **must** be explicitly denoted": `[b, c..]` (and an
    unzipping `(e, g)..`, and a whole packed result `a..`, without its length) is refused
    under --profile spec, at its position."""
    path = write(tmp_path, targets)
    with pytest.raises(Diagnostic) as info:
        api.shapes(path)
    assert info.value.code == "E0600"
    assert "must state its length" in str(info.value) and "§2.10" in str(info.value)
    line = path.read_text().splitlines().index(f"    {targets} = two_packs(x);") + 1
    assert info.value.span is not None and info.value.span.line == line
    culprit = "a.." if targets.startswith("a..,") else "c.." if "c.." in targets else "(e,"
    column = path.read_text().splitlines()[line - 1].index(culprit)
    assert info.value.span.col == column + 1


def test_packed_target_without_length_takes_the_rest_under_khronos(tmp_path: Path) -> None:
    """The Khronos parser accepts `c..` inside brackets (and `a..`, the whole pack):
    --profile khronos binds the rest."""
    run = api.evaluate(write(tmp_path, "a.., [b, c..]"), inputs={"x": X},
                       profile="khronos")
    np.testing.assert_allclose(run.outputs["p"][1], X * 2.0)
    np.testing.assert_allclose(run.outputs["q"], X * 3.0)
    for got, k in zip(run.outputs["r"], (4.0, 5.0, 6.0)):
        np.testing.assert_allclose(got, X * k)
