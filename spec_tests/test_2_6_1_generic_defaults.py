"""Spec §2.6.1 / §2.5 generics: an attribute default that casts to a generic type deduced from
an input, `k: T = T(2)`.

§2.6.1 (L830-832): "1. Attribute values are evaluated and bound to the attribute names. Default
values are only substituted if they are constant expressions ... 2. Going through the inputs in
the (already known) binding order, each input component is bound to the actual shapes ...
3. Attributes whose default values are non-constant expressions are evaluated if they are not
assigned a value by the invocation." §3 (L1767): "During the above two steps, generic data-types
shall be deduced from the substituted attribute values and tensors." §2.5 (L1538): "data-types
that can be deduced from the inputs and attributes need not be specified explicitly."

So `T(2)` is not known in step 1 when T comes from an input: it is evaluated in step 3, once T
is bound; a generic type no input or attribute binds takes its own default first.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import refinterp.api as api
from refinterp.core.diagnostics import Diagnostic

OPS = """
operator shift {
  @dtype { T: num; }
  @attrib { k: T = T(2); }
  @input { x: T[n]; }
  @output { y: T[n]; }
  @lower { y[i] = x[i] + k, i < n; }
}
operator fill {
  @dtype { T: num = int; }
  @attrib { k: T = T(2); n: int; }
  @output { y: T[n]; }
  @lower { y[i] = k, i < n; }
}
operator untyped {
  @dtype { T: num; }
  @attrib { k: T = T(2); n: int; }
  @output { y: T[n]; }
  @lower { y[i] = k, i < n; }
}
"""


def write(tmp_path: Path, main: str) -> Path:
    path = tmp_path / "main.sknd"
    path.write_text(OPS + main)
    return path


def test_default_cast_to_type_deduced_from_input(tmp_path: Path) -> None:
    path = write(tmp_path, """
graph main {
  @input { x: real[3]; i: int[2]; }
  @output { y: real[3]; z: int[2]; w: real[3]; }
  @compose { y = shift(x); z = shift(i); w = shift{k=0.5}(x); }
}
""")
    x = np.array([1.5, -2.0, 0.25])
    i = np.array([7, -3])
    run = api.evaluate(path, inputs={"x": x, "i": i})
    np.testing.assert_array_equal(run.outputs["y"], x + 2.0)
    assert run.outputs["z"].dtype == np.int64
    np.testing.assert_array_equal(run.outputs["z"], i + 2)
    np.testing.assert_array_equal(run.outputs["w"], x + 0.5)
    shapes = api.shapes(path)
    assert shapes.outputs["z"].dtype == "int" and tuple(shapes.outputs["z"].shape) == (2,)


def test_default_cast_to_defaulted_or_explicit_type(tmp_path: Path) -> None:
    path = write(tmp_path, """
graph main {
  @output { y: int[2]; w: real[2]; }
  @compose { y = fill{n=2}(); w = fill<real>{n=2}(); }
}
""")
    run = api.evaluate(path)
    np.testing.assert_array_equal(run.outputs["y"], np.array([2, 2]))
    assert run.outputs["w"].dtype == np.float64
    np.testing.assert_array_equal(run.outputs["w"], np.array([2.0, 2.0]))


def test_type_never_bound_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, """
graph main {
  @output { y: int[2]; }
  @compose { y = untyped{n=2}(); }
}
""")
    with pytest.raises(Diagnostic) as info:
        api.evaluate(path)
    assert info.value.code == "E0308"
    assert "cannot be deduced" in info.value.message


@pytest.mark.parametrize("attributes", ["@dtype { T: num; } @attrib { k: T = T(2); }",
                                        "@attrib { n: int = 1; k: int = n + 1; }"])
def test_input_shape_cannot_read_a_deferred_default(tmp_path: Path, attributes: str) -> None:
    """§2.6.1: "The binding order ensures that each component ... can be either deduced (if
    it is an affine expression), or evaluated and checked against the substituted values";
    a deferred attribute (step 3) is neither when the inputs are bound (step 2), so an input
    shape that reads one makes the definition invalid, at load and in lint."""
    text = f"""operator f {{
  {attributes}
  @input {{ x: int[k]; }}
  @output {{ y: int[k]; }}
  @lower {{ y[i] = x[i], i < k; }}
}}
"""
    path = tmp_path / "f.sknd"
    path.write_text(text)
    found = api.lint(path)
    assert [d.code for d in found] == ["E0300"]
    assert "reads attribute 'k'" in found[0].message and "§2.6.1" in found[0].message
    assert (found[0].span.line, found[0].span.col) == (3, 19)
    with pytest.raises(Diagnostic) as info:  # a length-3 x was once run with k = 2
        api.evaluate(path, inputs={"x": np.array([1, 2, 3])})
    assert info.value.code == "E0300"
