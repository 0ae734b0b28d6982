"""Counted output extents: an output extent `k|bound` that a @lower formula decides by indexing
the output with `k` on its left-hand side (spec §2.6 "Dynamic input and output shapes", §2.12
conditional assignment, §3.1; the Khronos dialect's `layout.nonzero`). docs/semantics.md,
"Counted output extents". Expected values come from NumPy (`np.nonzero`: row-major order).

The Khronos module itself runs only when KHRONOS_STDLIB names its stdlib folder."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import refinterp.api as ri
from refinterp.lower.engines import make_engine

rng = np.random.default_rng(18)

# Our own minimal program: the indices of the non-zero elements of a tensor of any rank, one
# column per element, in row-major order.
NONZERO = """operator nz {
    @input { x: real[s..(d)]; }
    @output { index: int[d, k|(s * ..)]; }
    @lower { index[:, k] = i, i < s | x[i..] != 0.0; }
}
"""

ENGINES = ("reference", "compiled", "vector", "auto")


def nonzero(x: np.ndarray, engine: str = "scalar", profile: str = "spec") -> np.ndarray:
    run = ri.evaluate(ri.load_source(NONZERO, path="nz.sknd"), op="nz", inputs={"x": x},
                      engine=engine, profile=profile)
    return run.outputs["index"]


def expected_nonzero(x: np.ndarray) -> np.ndarray:
    """Independent NumPy: column j is the multi-index of the j-th non-zero element."""
    return np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)


def error_of(call, *args, **kwargs) -> ri.Error:
    with pytest.raises(ri.Error) as info:
        call(*args, **kwargs)
    return info.value


def sparse(shape: tuple[int, ...]) -> np.ndarray:
    x = rng.standard_normal(shape)
    x[rng.random(shape) < 0.5] = 0.0
    return x


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("profile", ["spec", "khronos"])
def test_nonzero_of_a_vector(engine: str, profile: str) -> None:
    x = np.array([0.0, 1.5, 0.0, -2.0, 0.0, 0.0, 3.0])
    got = nonzero(x, engine, profile)
    assert got.dtype == np.int64 and got.shape == (1, 3)
    np.testing.assert_array_equal(got, expected_nonzero(x))
    np.testing.assert_array_equal(got, [[1, 3, 6]])


@pytest.mark.parametrize("engine", ENGINES)
def test_nonzero_of_a_3d_tensor_in_row_major_order(engine: str) -> None:
    x = sparse((3, 4, 5))
    got = nonzero(x, engine)
    np.testing.assert_array_equal(got, expected_nonzero(x))
    np.testing.assert_array_equal(got, np.argwhere(x).T)


def test_all_zero_gives_an_empty_extent() -> None:
    x = np.zeros((2, 3))
    got = nonzero(x)
    assert got.shape == (2, 0) and got.dtype == np.int64


def test_all_nonzero_fills_the_bound() -> None:
    x = rng.standard_normal((2, 3)) + 10.0
    got = nonzero(x)
    assert got.shape == (2, 6)
    np.testing.assert_array_equal(got, expected_nonzero(x))


def test_nan_and_negative_zero() -> None:
    x = np.array([np.nan, -0.0, 0.0, np.inf])  # nan != 0 is true; -0.0 == 0.0
    np.testing.assert_array_equal(nonzero(x), [[0, 3]])


BOUNDED = """operator positive {
    @attrib { most: int; }
    @input { x: real[n]; }
    @output { index: int[k|most]; }
    @lower { index[k] = i, i < n | x[i] > 0.0; }
}
"""


def positive(x: np.ndarray, most: int, engine: str = "scalar") -> np.ndarray:
    run = ri.evaluate(ri.load_source(BOUNDED, path="positive.sknd"), op="positive",
                      inputs={"x": x}, attributes={"most": most}, engine=engine)
    return run.outputs["index"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_count_within_a_smaller_bound(engine: str) -> None:
    x = np.array([1.0, -1.0, 2.0, -2.0, 3.0])
    np.testing.assert_array_equal(positive(x, 3, engine), np.flatnonzero(x > 0))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_count_above_its_bound_is_a_diagnostic(engine: str) -> None:
    x = np.array([1.0, -1.0, 2.0, 3.0, 4.0])
    error = error_of(positive, x, 2, engine)
    assert error.code == "E0501"
    assert error.message == ("output 'index' gets more than 2 entries along its dynamic extent "
                             "'k' (dimension 0), above its bound 2")
    assert (error.span.line, error.span.col) == (5, 14)  # the formula
    assert error.notes == ["at i = 3, k = 2"]  # the third positive element, x[3]


def test_a_guarded_index_that_skips_does_not_count() -> None:
    text = """operator shifted {
    @input { x: real[n]; }
    @output { y: real[k|n]; }
    @lower { y[k] = x[|i + 1|], i < n; }
}
"""
    x = rng.standard_normal(5)
    run = ri.evaluate(ri.load_source(text), op="shifted", inputs={"x": x})
    np.testing.assert_array_equal(run.outputs["y"], x[1:])  # the last iteration is skipped


AGREEING = """operator pick {
    @input { x: real[n]; }
    @output { values: real[s|n]; where: int[s|n]; }
    @lower {
        values[s] = x[i], i < n | x[i] > LIMIT;
        where[s] = i, i < n | x[i] > 0.0;
    }
}
"""


def test_outputs_naming_one_extent_agree() -> None:
    x = np.array([0.5, -1.0, 2.0, 0.0, 3.0])
    run = ri.evaluate(ri.load_source(AGREEING.replace("LIMIT", "0.0")), op="pick",
                      inputs={"x": x})
    np.testing.assert_array_equal(run.outputs["values"], x[x > 0])
    np.testing.assert_array_equal(run.outputs["where"], np.flatnonzero(x > 0))


def test_outputs_naming_one_extent_that_disagree_are_a_diagnostic() -> None:
    x = np.array([0.5, -1.0, 2.0, 0.0, 3.0])
    error = error_of(ri.evaluate, ri.load_source(AGREEING.replace("LIMIT", "1.0")), op="pick",
                     inputs={"x": x})
    assert error.code == "E0503"
    assert error.message == ("the dynamic extent 's' is 3 for output 'where' but 2 for output "
                             "'values'; outputs naming the same extent must agree")


def test_the_counter_must_index_the_dimension_it_names() -> None:
    text = """operator wrong {
    @input { x: real[n]; }
    @output { y: int[k|n, 1]; }
    @lower { y[0, k] = i, i < n | x[i] > 0.0; }
}
"""
    error = error_of(ri.evaluate, ri.load_source(text), op="wrong", inputs={"x": np.ones(3)})
    assert error.code == "E0503"
    assert error.message == "'k' indexes dimension 1 of 'y', but it names the dynamic extent " \
                            "of dimension 0"


REFUSED = {
    "a ~ extent": ("@output { y: int[~|n]; }", "y[i] = i, i < n;",
                   "output 'y' has the dynamic extent ~|5 in dimension 0, which the @lower "
                   "block does not compute"),
    "a named extent no formula counts": (
        "@output { y: int[k|n]; }", "y[i] = i, i < n;",
        "output 'y' has the dynamic extent k|5 in dimension 0, which the @lower block does not "
        "compute"),
    "the counter in the value": (
        "@output { y: int[k|n]; }", "y[k] = k, i < n;",
        "'k' names a counted dynamic output extent: it may only stand as a whole index of the "
        "left-hand side of the formula writing that output"),
    "the counter in an index expression": (
        "@output { y: int[k|n]; }", "y[k + 0] = i, i < n;",
        "'k' names a counted dynamic output extent: it may only stand as a whole index of the "
        "left-hand side of the formula writing that output"),
    "the counter as a loop index": (
        "@output { y: int[k|n]; }", "y[k] = 1, k < n;",
        "'k' names a dynamic output extent; it cannot also be a loop index"),
    "an update": ("@output { y: int[k|n]; }", "y[k] += i, i < n;",
                  "a formula counting the extent 'k' writes each new position once, with '='; "
                  "not '+='"),
    "two formulas": ("@output { y: int[k|n]; }", "y[k] = i, i < n; y[k] = i, i < n;",
                     "output 'y' has the counted extent 'k', so one formula alone writes it; it "
                     "is assigned by 2 formulas"),
    "the extent of another output": (
        "@output { y: int[k|n]; z: int[n]; }", "y[k] = i, i < n; z[k] = i, i < n;",
        "'k' names a dynamic extent of another output, not of 'z'"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_forms_that_are_refused(case: str) -> None:
    output, formulas, message = REFUSED[case]
    text = f"""operator op {{
    @input {{ x: real[n]; }}
    {output}
    @lower {{ {formulas} }}
}}
"""
    error = error_of(ri.evaluate, ri.load_source(text), op="op", inputs={"x": np.ones(5)})
    assert error.code == "E0500", error
    assert error.message == message


def test_an_allocation_at_a_huge_bound_is_a_limit_diagnostic() -> None:
    error = error_of(positive, np.ones(3), 10 ** 15)
    assert error.code == "E1200"
    assert "at the bound of its extent 'k'" in error.message


def test_shapes_show_the_bound() -> None:
    program = ri.load_source(NONZERO)
    result = ri.shapes(program, op="nz", inputs={"x": ri.TensorType("real", (2, 3))})
    index = result.outputs["index"]
    assert (index.dtype, index.shape, index.bounds) == ("int", (2, None), (None, 6))
    assert ri.describe_type(index) == "int[2, ~|6]"


def test_engines_refuse_the_counting_formula_and_say_why() -> None:
    program = ri.load_source(NONZERO)
    for name, expected in [("compiled", "compiled; formula at line 4: reference (it counts "
                                        "the dynamic extent 'k')"),
                           ("vector", "vector; formula at line 4: compiled (it counts the "
                                      "dynamic extent 'k')")]:
        said: list[str] = []
        engine = make_engine(name, log=lambda instance, how: said.append(how))
        x = sparse((4, 3))
        run = ri.evaluate(program, op="nz", inputs={"x": x}, engine=engine)
        np.testing.assert_array_equal(run.outputs["index"], expected_nonzero(x))
        assert said == [expected]


KHRONOS = os.environ.get("KHRONOS_STDLIB")
needs_khronos = pytest.mark.skipif(not KHRONOS or not Path(KHRONOS, "layout.sknd").is_file(),
                                   reason="KHRONOS_STDLIB does not name the Khronos stdlib")


@needs_khronos
@pytest.mark.parametrize("shape", [(10,), (3, 4, 5), (1, 7)])
@pytest.mark.parametrize("engine", ENGINES)
def test_khronos_nonzero_matches_numpy(shape: tuple[int, ...], engine: str) -> None:
    x = sparse(shape)
    got = ri.run_operator("layout.nonzero", {"input": x}, stdlib=KHRONOS, profile="khronos",
                          engine=engine)["index"]
    np.testing.assert_array_equal(got, expected_nonzero(x))


@needs_khronos
def test_khronos_nonzero_then_gather_matches_numpy() -> None:
    text = """import layout;
import math;
graph G {
    @input { x: real[12]; }
    @output { y: real[1, ~|12]; }
    @compose {
        mask = math.gt(x, 0.0);
        found = layout.nonzero(mask);
        y = layout.gather{axis=0}(x, found);
    }
}
"""
    x = rng.standard_normal(12)
    run = ri.evaluate(ri.load_source(text, stdlib=KHRONOS), inputs={"x": x},
                      profile="khronos")
    np.testing.assert_array_equal(run.outputs["y"], x[x > 0].reshape(1, -1))
