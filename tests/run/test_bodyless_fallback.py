"""Body-less declarations of another standard library (docs/semantics.md,
"Body-less operators"): a library operator without @lower/@compose and without an intrinsic runs
refinterp's bundled definition of the same qualified name when the interfaces match.

The library modules here are minimal texts written for the test (the Khronos `image` module
declares `_cubic_grid_sample` this way); expected values come from the independent NumPy
grid-sample reference of tests/stdlib/test_image.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from refinterp.api import run_operator
from refinterp.core.diagnostics import Diagnostic

from testsupport.image_references import ref_grid_sample

# A private body-less declaration with refinterp's interface, and a public operator using it.
IMAGE = """
operator _cubic_grid_sample {
    @attrib { padding: str = 'ZEROS'; aligned: bool = false; }
    @input { input: real[n, c, s..(d)]; grid: real[n, z..(d), d]; }
    @output { output: real[n, c, z..]; }
}

operator bicubic {
    @attrib { padding: str = 'ZEROS'; }
    @input { input: real[n, c, s..(d)]; grid: real[n, z..(d), d]; }
    @output { output: real[n, c, z..]; }
    @compose { output = _cubic_grid_sample{padding=padding}(input, grid); }
}

operator _shifted {
    @attrib { padding: str = 'ZEROS'; }
    @input { input: real[n, c, s..(d)]; grid: real[n, z..(d), d]; }
    @output { output: real[n, c, z..]; }
}

operator _cubic_grid_sample_renamed {
    @input { x: real[n]; }
    @output { y: real[n]; }
}
"""

MAIN = """
import image;

operator uses_private {
    @input { x: real[n, c, h, w]; g: real[n, p, q, 2]; }
    @output { y: real[n, c, p, q]; }
    @compose { y = image.bicubic{padding='REFLECT'}(x, g); }
}
"""


@pytest.fixture()
def library(tmp_path: Path) -> Path:
    stdlib = tmp_path / "stdlib"
    stdlib.mkdir()
    (stdlib / "image.sknd").write_text(IMAGE)
    return stdlib


@pytest.mark.parametrize("engine", ["scalar", "vector"])
@pytest.mark.parametrize("padding", ["ZEROS", "REFLECT"])
def test_bodyless_library_operator_runs_the_bundled_definition(library, engine, padding):
    rng = np.random.default_rng(18)
    x = rng.standard_normal((1, 2, 4, 5))
    grid = rng.uniform(-1.2, 1.2, size=(1, 3, 2, 2))
    out = run_operator("image.bicubic", {"input": x, "grid": grid}, {"padding": padding},
                       stdlib=library, engine=engine)["output"]
    np.testing.assert_allclose(out, ref_grid_sample(x, grid, "CUBIC", padding, False),
                               atol=1e-12)


def test_called_from_a_user_module(library, tmp_path):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 1, 3, 3))
    g = rng.uniform(-1, 1, size=(1, 2, 2, 2))
    main = tmp_path / "main.sknd"
    main.write_text(MAIN)
    out = run_operator("uses_private", {"x": x, "g": g}, file=main, stdlib=library)["y"]
    np.testing.assert_allclose(out, ref_grid_sample(x, g, "CUBIC", "REFLECT", False),
                               atol=1e-12)


def test_no_bundled_definition_is_still_an_error(library):
    # image._shifted exists nowhere in refinterp's stdlib: E0606 at its declaration
    x = np.zeros((1, 1, 2, 2))
    with pytest.raises(Diagnostic) as error:
        run_operator("image._shifted", {"input": x, "grid": np.zeros((1, 1, 1, 2))},
                     stdlib=library)
    assert error.value.code == "E0606"
    assert "no @lower or @compose block and no intrinsic" in error.value.message


def test_a_different_interface_is_not_substituted(tmp_path):
    stdlib = tmp_path / "stdlib"
    stdlib.mkdir()
    # the same qualified name as the bundled operator, but other input names: not run by it
    (stdlib / "image.sknd").write_text(IMAGE.replace(
        "input: real[n, c, s..(d)]; grid: real[n, z..(d), d]; }\n    @output { output: real"
        "[n, c, z..]; }\n}\n\noperator bicubic",
        "data: real[n, c, s..(d)]; grid: real[n, z..(d), d]; }\n    @output { output: real"
        "[n, c, z..]; }\n}\n\noperator bicubic", 1).replace(
        "_cubic_grid_sample{padding=padding}(input, grid)",
        "_cubic_grid_sample{padding=padding}(input, grid)"))
    with pytest.raises(Diagnostic) as error:
        run_operator("image.bicubic", {"input": np.zeros((1, 1, 2, 2)),
                                       "grid": np.zeros((1, 1, 1, 2))}, stdlib=stdlib)
    assert error.value.code == "E0606"
    assert any("@input declares data, grid here and input, grid in refinterp's module" in note
               for note in error.value.notes)


def test_a_user_module_is_never_substituted(tmp_path):
    # a body-less operator of the user's own module named like a bundled one stays an error
    main = tmp_path / "image.sknd"
    main.write_text(IMAGE)
    with pytest.raises(Diagnostic) as error:
        run_operator("bicubic", {"input": np.zeros((1, 1, 2, 2)),
                                 "grid": np.zeros((1, 1, 1, 2))}, file=main)
    assert error.value.code == "E0606"
