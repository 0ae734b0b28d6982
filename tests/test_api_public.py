"""The public Python API (refinterp.api, docs/api.md) against independent expectations: shapes
and values computed by hand or with NumPy here, positions found in the test's own source text,
operator contracts read from the spec's standard library — never refinterp's own output."""

from __future__ import annotations

import json

import numpy as np
import pytest

import refinterp.api as ri
from refinterp.numeric import symbolic
from refinterp.language.modules import STDLIB_DIR

rng = np.random.default_rng(20240611)


def position(text: str, needle: str, occurrence: int = 0) -> tuple[int, int]:
    """1-based (line, column) of the `occurrence`-th `needle` in `text`."""
    index = -1
    for _ in range(occurrence + 1):
        index = text.index(needle, index + 1)
    line = text.count("\n", 0, index) + 1
    col = index - (text.rfind("\n", 0, index) + 1) + 1
    return line, col


def error_of(call, *args, **kwargs) -> ri.Error:
    with pytest.raises(ri.Error) as info:
        call(*args, **kwargs)
    return info.value


# ------------------------------------------------------------------------------ shapes

# nn.conv with stride 2 and one cell of padding on every side, then nn.relu.
# By hand (spec §4.4.1 conv, NCX): output extent = (6 + 1 + 1 - 3) / 2 + 1 = 3 (floor division),
# output channels = filter's first extent = 5, batch = 2.
NET = """import nn;

graph Net {
    @input {
        image: real[2, 3, 6, 6];
        filter: real[5, 3, 3, 3];
    }
    @output {
        y: real[2, 5, 3, 3];
    }
    @compose {
        c = nn.conv{stride = [2, 2], padding = [1, 1, 1, 1]}(image, filter);
        y = nn.relu(c);
    }
}
"""
PATH = "net.sknd"


def check(text: str) -> ri.Shapes:
    return ri.shapes(ri.load_source(text, path=PATH))


def test_the_correct_graph_is_checked_with_the_shapes_computed_by_hand() -> None:
    result = check(NET)
    assert result.checked and result.stopped is None
    assert set(result.outputs) == {"y"}
    assert result.outputs["y"].dtype == "real"
    assert tuple(result.outputs["y"].shape) == (2, 5, 3, 3)
    assert result.variables == {}


def test_the_correct_graph_computes_what_numpy_computes() -> None:
    image = rng.standard_normal((2, 3, 6, 6))
    filter_ = rng.standard_normal((5, 3, 3, 3))
    run = ri.evaluate(ri.load_source(NET, path=PATH), inputs={"image": image, "filter": filter_})
    padded = np.pad(image, ((0, 0), (0, 0), (1, 1), (1, 1)))
    expected = np.zeros((2, 5, 3, 3))
    for i in range(3):
        for j in range(3):
            window = padded[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3]
            expected[:, :, i, j] = np.tensordot(window, filter_, axes=([1, 2, 3], [1, 2, 3]))
    np.testing.assert_allclose(run.outputs["y"], np.maximum(expected, 0.0), rtol=1e-9, atol=1e-12)


def test_operator_typo_is_an_unknown_operator_at_the_call_with_a_suggestion() -> None:
    text = NET.replace("nn.relu(c)", "nn.rleu(c)")
    error = error_of(check, text)
    assert error.code == "E0601"
    assert error.span.path == PATH
    assert (error.span.line, error.span.col) == position(text, "nn.rleu")
    assert any("nn.relu" in note for note in error.notes)


def test_attribute_typo_is_reported_at_the_attribute_with_a_suggestion() -> None:
    text = NET.replace("padding =", "pading =")
    error = error_of(check, text)
    assert error.code == "E0301"
    assert error.span.path == PATH
    assert (error.span.line, error.span.col) == position(text, "pading")
    assert any("did you mean" in note and "'padding'" in note for note in error.notes)
    # the callee's declaration is a related place, in the standard library
    assert any(span.path.endswith("nn.sknd") for span, _ in error.related)


def test_missing_argument_is_reported_at_the_call() -> None:
    text = NET.replace("(image, filter)", "(image)")
    error = error_of(check, text)
    assert error.code == "E0305"
    assert "filter" in error.message
    assert error.span.path == PATH
    assert (error.span.line, error.span.col) == position(text, "nn.conv")
    # related: nn.conv's declaration of the input `filter`
    stdlib_text = (STDLIB_DIR / "nn.sknd").read_text()
    conv_at = stdlib_text.index("operator conv {")
    filter_line, filter_col = position(stdlib_text[conv_at:], "filter: real[fs..(d+2)]")
    conv_line = stdlib_text.count("\n", 0, conv_at)
    assert [(s.line, s.col) for s, _ in error.related if s.path.endswith("nn.sknd")] == \
        [(conv_line + filter_line, filter_col)]


def test_input_channel_mismatch_fails_the_assertion_of_conv_at_the_call() -> None:
    # nn.conv asserts `ic == fc * g` ("input-channels must equal filter-channels * groups"):
    # the image has 3 channels, the filter 2, groups is 1
    text = NET.replace("filter: real[5, 3, 3, 3]", "filter: real[5, 2, 3, 3]")
    error = error_of(check, text)
    assert error.code == "E0307"
    assert error.message == "input-channels must equal filter-channels * groups"
    assert error.span.path == PATH
    assert (error.span.line, error.span.col) == position(text, "nn.conv")
    stdlib_text = (STDLIB_DIR / "nn.sknd").read_text()
    assertion = position(stdlib_text, "ic == fc * g:")
    assert [(s.line, s.col) for s, _ in error.related] == [assertion]
    assert error.related[0][0].path.endswith("nn.sknd")


def test_wrong_declared_output_shape_is_reported_at_the_output_declaration() -> None:
    text = NET.replace("y: real[2, 5, 3, 3]", "y: real[2, 5, 4, 4]")
    error = error_of(check, text)
    assert error.code == "E0603"
    assert error.span.path == PATH
    assert (error.span.line, error.span.col) == position(text, "y: real[2, 5, 4, 4]")
    assert "[2, 5, 3, 3]" in error.message and "[2, 5, 4, 4]" in error.message


UNQUALIFIED = """import nn;

graph G {
    @input { x: real[4]; }
    @output { y: real[4]; }
    @compose { y = relu(x); }
}
"""


def test_unqualified_standard_operator_suggests_the_qualified_name() -> None:
    error = error_of(check, UNQUALIFIED)
    assert error.code == "E0601"
    assert (error.span.line, error.span.col) == position(UNQUALIFIED, "relu(x)")
    assert any("nn.relu" in note for note in error.notes)


def test_unqualified_standard_operator_without_the_import_names_the_import() -> None:
    text = UNQUALIFIED.replace("import nn;\n", "")
    error = error_of(check, text)
    assert error.code == "E0601"
    assert any("nn.relu" in note and "import nn" in note for note in error.notes)


BRANCH = """import nn;

graph G {
    @input { c: bool[]; x: real[4]; }
    @output { y: real[4]; }
    @compose { y = if c then nn.relu(x) else x; }
}
"""


def test_shapes_stops_at_a_branch_on_a_tensor_condition() -> None:
    result = ri.shapes(ri.load_source(BRANCH, path="branch.sknd"))
    assert result.checked is False
    assert result.stopped is not None
    assert "condition" in result.stopped and "tensor" in result.stopped
    assert "branch.sknd" in result.stopped
    assert tuple(result.outputs["y"].shape) == (4,)   # the declared output
    # and the graph runs: the branch is taken on the value
    x = rng.standard_normal(4)
    program = ri.load_source(BRANCH, path="branch.sknd")
    assert np.array_equal(ri.evaluate(program, inputs={"c": True, "x": x}).outputs["y"],
                          np.maximum(x, 0.0))
    assert np.array_equal(ri.evaluate(program, inputs={"c": False, "x": x}).outputs["y"], x)


def test_shapes_follows_a_compile_time_branch_and_finds_the_error_inside() -> None:
    text = """import nn;

graph G {
    @attrib { leaky: bool = true; }
    @input { x: real[4]; }
    @output { y: real[4]; }
    @compose { y = if leaky then nn.relu{alpha = 1.5}(x) else x; }
}
"""
    # nn.relu asserts 0 <= alpha <= 1
    error = error_of(check, text)
    assert error.code == "E0307"
    assert (error.span.line, error.span.col) == position(text, "nn.relu")
    assert ri.shapes(ri.load_source(text, path=PATH), attributes={"leaky": False}).checked


# ------------------------------------------------------------------------------ evaluate


def test_relu_equals_numpy() -> None:
    x = rng.standard_normal((3, 4, 5))
    assert np.array_equal(ri.evaluate("nn.relu", inputs={"x": x}).outputs["y"], np.maximum(x, 0))
    leaky = ri.evaluate("nn.relu", inputs={"x": x}, attributes={"alpha": 0.25}).outputs["y"]
    np.testing.assert_array_equal(leaky, np.where(x > 0, x, 0.25 * x))
    capped = ri.evaluate("nn.relu", inputs={"x": 3 * x}, attributes={"max": 1.0}).outputs["y"]
    np.testing.assert_array_equal(capped, np.clip(3 * x, 0.0, 1.0))


def test_add_equals_numpy_with_broadcasting() -> None:
    x, y = rng.standard_normal((2, 1, 4)), rng.standard_normal((3, 1))
    np.testing.assert_array_equal(ri.evaluate("math.add", inputs={"x": x, "y": y}).outputs["z"],
                                  x + y)
    i, j = rng.integers(-100, 100, (4, 3)), rng.integers(-100, 100, (3,))
    out = ri.evaluate("math.add", inputs={"x": i, "y": j}).outputs["z"]
    assert out.dtype == np.int64 and np.array_equal(out, i + j)


def test_matmul_equals_numpy() -> None:
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    np.testing.assert_allclose(
        ri.evaluate("linalg.matmul", inputs={"A": a, "B": b}).outputs["Z"], a @ b, rtol=1e-12)
    batched = rng.standard_normal((2, 3, 4))
    np.testing.assert_allclose(
        ri.evaluate("linalg.matmul", inputs={"A": batched, "B": b}).outputs["Z"],
        np.matmul(batched, b), rtol=1e-12)
    np.testing.assert_allclose(
        ri.evaluate("linalg.matmul", inputs={"A": a, "B": b.T},
                    attributes={"transB": True}).outputs["Z"], a @ b, rtol=1e-12)


def test_run_inputs_are_the_canonical_arrays() -> None:
    x32 = np.array([[1, -2, 3]], dtype=np.int32)
    run = ri.evaluate("math.add", inputs={"x": x32, "y": [[10], [20]]})
    assert set(run.inputs) == {"x", "y"}
    assert run.inputs["x"].dtype == np.int64 and np.array_equal(run.inputs["x"], x32)
    assert run.inputs["y"].dtype == np.int64 and run.inputs["y"].shape == (2, 1)
    assert np.array_equal(run.outputs["z"], x32 + np.array([[10], [20]]))
    f32 = np.array([0.5, -1.5], dtype=np.float32)
    run = ri.evaluate("nn.relu", inputs={"x": f32})
    assert run.inputs["x"].dtype == np.float64 and np.array_equal(run.inputs["x"], f32)
    run = ri.evaluate(ri.load_source(BRANCH, path="branch.sknd"),
                      inputs={"c": True, "x": [1.0, -1.0, 2.0, -2.0]})
    assert run.inputs["c"].dtype == np.bool_ and run.inputs["c"].shape == ()
    assert run.inputs["x"].dtype == np.float64
    assert run.operator == "branch.G"


# Variables: by the spec's labelling rules (§2.10), the variable `w` of the invocation labelled
# `first` in graph `Two` of module `main` is `main.Two.first.w`.
VARIABLES = """import linalg;
import math;

operator affine {
    @attrib { n: int; }
    @input { x: real[b, k]; }
    @variable {
        w: real[k, n];
        shift: real[n];
    }
    @output { y: real[b, n]; }
    @compose {
        product = linalg.matmul(x, w);
        y = math.add(product, shift);
    }
}

graph Two {
    @input { x: real[2, 3]; }
    @output { y: real[2, 2]; }
    @compose {
        h = first: affine{n = 4}(x);
        y = second: affine{n = 2}(h);
    }
}
"""
DECLARED = {"main.Two.first.w": (3, 4), "main.Two.first.shift": (4,),
            "main.Two.second.w": (4, 2), "main.Two.second.shift": (2,)}


def two() -> ri.Program:
    return ri.load_source(VARIABLES, path="main.sknd")


def test_random_params_are_keyed_by_scoped_name_with_the_declared_shapes() -> None:
    x = rng.standard_normal((2, 3))
    run = ri.evaluate(two(), inputs={"x": x}, random_params=True, seed=3)
    assert {name: value.shape for name, value in run.params.items()} == DECLARED
    assert all(value.dtype == np.float64 for value in run.params.values())
    p = run.params
    expected = (x @ p["main.Two.first.w"] + p["main.Two.first.shift"]) @ p["main.Two.second.w"] \
        + p["main.Two.second.shift"]
    np.testing.assert_allclose(run.outputs["y"], expected, rtol=1e-12)
    assert run.updated == {}


def test_params_of_a_run_reproduce_it() -> None:
    x = rng.standard_normal((2, 3))
    first = ri.evaluate(two(), inputs={"x": x}, random_params=True, seed=11)
    again = ri.evaluate(two(), inputs=first.inputs, params=first.params)
    assert np.array_equal(again.outputs["y"], first.outputs["y"])
    assert again.params.keys() == first.params.keys()
    # graph-relative keys name the same variables
    relative = {name[len("main.Two."):]: value for name, value in first.params.items()}
    third = ri.evaluate(two(), inputs={"x": x}, params=relative)
    assert np.array_equal(third.outputs["y"], first.outputs["y"])


def test_shapes_lists_the_variables_reached() -> None:
    found = ri.shapes(two())
    assert found.checked
    assert {name: tuple(t.shape) for name, t in found.variables.items()} == DECLARED
    assert tuple(found.outputs["y"].shape) == (2, 2)


def test_unknown_params_key_is_an_error_with_a_suggestion() -> None:
    x = rng.standard_normal((2, 3))
    params = {name: rng.standard_normal(shape) for name, shape in DECLARED.items()}
    params["main.Two.first.shfit"] = params.pop("main.Two.first.shift")
    error = error_of(ri.evaluate, two(), inputs={"x": x}, params=params)
    assert error.code == "E0702"
    assert "main.Two.first.shfit" in error.message
    assert any("did you mean" in note and "'main.Two.first.shift'" in note
               for note in error.notes)


def test_unknown_params_key_is_found_before_the_run_when_the_composition_can_be_followed() -> None:
    # no value for any variable: a run would fail with E0700; the key is checked first
    error = error_of(ri.evaluate, two(), inputs={"x": np.zeros((2, 3))},
                     params={"nothing": np.zeros(1)})
    assert error.code == "E0702"


def test_unknown_params_key_is_found_after_the_run_where_the_check_cannot_follow() -> None:
    text = """import math;

operator scale {
    @input { x: real[n]; }
    @variable { w: real[n]; }
    @output { y: real[n]; }
    @compose { y = math.mul(x, w); }
}

graph G {
    @input { c: bool[]; x: real[3]; }
    @output { y: real[3]; }
    @compose { y = if c then s: scale(x) else x; }
}
"""
    program = ri.load_source(text, path="main.sknd")
    assert not ri.shapes(program).checked
    x = np.array([1.0, 2.0, 3.0])
    w = np.array([2.0, 0.5, -1.0])
    assert np.array_equal(ri.evaluate(program, inputs={"c": True, "x": x},
                                      params={"s.w": w}).outputs["y"], x * w)
    # the run itself fails first when it needs the variable
    assert error_of(ri.evaluate, program, inputs={"c": True, "x": x},
                    params={"s.ww": w}).code == "E0700"
    # the run completes without it; then the key is rejected
    assert error_of(ri.evaluate, program, inputs={"c": False, "x": x},
                    params={"s.ww": w}).code == "E0702"


def test_unknown_input_name_is_an_error() -> None:
    error = error_of(ri.evaluate, "nn.relu", inputs={"x": [1.0], "y": [2.0]})
    assert error.code == "E0304"
    assert "'y'" in error.message
    program = ri.load_source(NET, path=PATH)
    error = error_of(ri.evaluate, program, inputs={"image": np.zeros((2, 3, 6, 6)),
                                                   "filter": np.zeros((5, 3, 3, 3)),
                                                   "imgae": np.zeros((2, 3, 6, 6))})
    assert error.code == "E0304"
    assert any("'image'" in note for note in error.notes)


# ------------------------------------------------------------------------------ errors


def test_error_as_json_has_every_part_and_is_json() -> None:
    text = NET.replace("padding =", "pading =")
    error = error_of(check, text)
    data = error.as_json()
    assert {"code", "message", "location", "related", "notes", "stack"} <= set(data)
    assert data["code"] == "E0301"
    assert data["message"] == error.message
    line, col = position(text, "pading")
    assert (data["location"]["file"], data["location"]["line"], data["location"]["col"]) == \
        (PATH, line, col)
    assert data["related"] and all({"file", "line", "col", "label"} <= set(r)
                                   for r in data["related"])
    assert data["notes"] == error.notes
    call_line, call_col = position(text, "nn.conv")
    assert [(f["operator"], f["file"], f["line"], f["col"]) for f in data["stack"]] == \
        [("nn.conv", PATH, call_line, call_col)]
    assert json.loads(json.dumps(data)) == data


def test_error_without_a_place_has_no_location() -> None:
    error = error_of(ri.evaluate, "nn.relu", inputs={"x": [1.0]}, engine="no-such-engine")
    assert error.code == "E0901"
    data = error.as_json()
    assert data["location"] is None
    json.dumps(data)


def test_load_source_names_the_file_in_diagnostics_as_given() -> None:
    path = "models/toy/net_v2.sknd"
    text = NET.replace("nn.relu(c)", "nn.rleu(c)")
    error = error_of(lambda: ri.shapes(ri.load_source(text, path=path)))
    line, col = position(text, "nn.rleu")
    assert error.span.path == path
    assert str(error).startswith(f"{path}:{line}:{col}: error: ")
    assert error.as_json()["location"]["file"] == path
    # a syntax error names it too
    syntax = error_of(ri.load_source, "graph G {\n  @input { x: real[2] }\n}\n", path=path)
    assert syntax.code == "E0100"
    assert syntax.span.path == path and str(syntax).startswith(f"{path}:2:")


# ------------------------------------------------------------------ review findings, pinned


def test_a_misshaped_variable_value_is_E0701() -> None:
    program = ri.load_source("""import math;
graph G {
    @input { x: real[3]; }
    @variable { w: real[3]; }
    @output { y: real[3]; }
    @compose { y = math.mul(x, w); }
}
""", path="pinned.sknd")
    error = error_of(ri.evaluate, program, inputs={"x": np.ones(3)}, params={"w": np.ones(4)})
    assert error.code == "E0701" and "declared real[3]" in error.message


def test_a_misspelt_relative_params_key_gets_did_you_mean() -> None:
    program = ri.load_source("""import math;
graph G {
    @input { x: real[3]; }
    @variable { w: real[3]; }
    @output { y: real[3]; }
    @compose { y = math.mul(x, w); }
}
""", path="pinned.sknd")
    error = error_of(ri.evaluate, program, inputs={"x": np.ones(3)},
                     params={"w": np.ones(3), "ww": np.ones(3)})
    assert error.code == "E0702" and "did you mean 'w'" in error.notes[0]
    both = ri.evaluate(program, inputs={"x": np.ones(3)},
                       params={"pinned.G.w": np.full(3, 2.0), "w": np.full(3, 2.0)})
    assert both.outputs["y"].tolist() == [2.0, 2.0, 2.0]


def test_a_qualified_operator_of_a_module_not_imported_names_the_import() -> None:
    error = error_of(ri.shapes, ri.load_source("""graph G {
    @input { x: real[3]; }
    @output { y: real[3]; }
    @compose { y = nn.relu(x); }
}
"""))
    assert error.code == "E0601" and "add 'import nn;'" in error.notes


def test_a_data_dependent_extent_of_the_stdlib_is_checked_as_a_bounded_symbol() -> None:
    """nonzero's count is known only to a run: the check goes on with a fresh symbol bounded
    by the declaration (docs/semantics.md "Shapes without values"), it does not stop."""
    text = """import layout;
graph G {
    @input { x: bool[5]; }
    @output { y: int[1, ~|5]; }
    @compose { y = layout.nonzero(x); }
}
"""
    result = ri.shapes(ri.load_source(text, path="nz.sknd"))
    assert result.checked and result.stopped is None
    count = result.outputs["y"].shape[1]
    assert str(count) == "nonzero.index.1" and symbolic.interval(count) == (0, 5)


# ------------------------------------------------------------------------ limits, hooks, targets

TWICE = """operator twice {
    @input { x: real[n]; }
    @output { y: real[n]; }
    @lower { y[i] = x[i] * 2.0, i < n; }
}
"""


def test_limits_and_hooks_reach_the_executor_as_the_caller_made_them(monkeypatch) -> None:
    """One `Limits` and one `Hooks`, made by the caller, are the very objects the executor
    gets: nothing rebuilds them on the way (docs/api.md "Limits and hooks")."""
    from refinterp.run.compose import Executor

    seen: list[tuple] = []
    original = Executor.__init__

    def init(self, *args, **kwargs):
        seen.append((kwargs.get("limits"), kwargs.get("hooks")))
        original(self, *args, **kwargs)

    monkeypatch.setattr(Executor, "__init__", init)
    limits = ri.Limits(max_work=10 ** 6, max_memory=2 ** 20, timeout=60.0)
    bound: list[str] = []
    hooks = ri.Hooks(observe=lambda name, value: bound.append(name))
    program = ri.load_source(TWICE.replace("operator twice", "operator twice_") + """
graph G {
    @input { x: real[2]; }
    @output { z: real[2]; }
    @compose { y = twice_(x); z = twice_(y); }
}
""", path="twice.sknd")
    run = ri.evaluate(program, inputs={"x": [1.0, -2.0]}, limits=limits, hooks=hooks)
    assert run.outputs["z"].tolist() == [4.0, -8.0]  # 4x by hand
    assert bound == ["y", "z"]
    assert seen and all(got_limits is limits and got_hooks is hooks
                        for got_limits, got_hooks in seen)
    checked = ri.shapes(program, limits=limits)
    assert checked.outputs["z"].shape == (2,) and seen[-1][0] is limits


def test_a_resolved_target_is_used_as_it_is(monkeypatch) -> None:
    """`resolve` finds the operator once; `fixed_inputs`, `shapes` and `evaluate` given the
    `Target` do not look it up again."""
    program = ri.load_source(TWICE, path="twice.sknd")
    target = ri.resolve(program)
    # the module is named after the file: twice.sknd
    assert (target.name, target.definition.name) == ("twice.twice", "twice")
    assert target.program is program
    found = []
    original = ri.Program.find
    monkeypatch.setattr(ri.Program, "find",
                        lambda self, name=None: found.append(name) or original(self, name))
    assert ri.fixed_inputs(target) == {}
    checked = ri.shapes(target, inputs={"x": ri.TensorType("real", (3,))})
    assert checked.outputs["y"].shape == (3,)
    assert ri.evaluate(target, inputs={"x": [1.0, 2.0]}).outputs["y"].tolist() == [2.0, 4.0]
    assert found == []
    assert error_of(ri.resolve, target, "twice").code == "E0901"


def test_the_command_line_resolves_its_target_once(monkeypatch, tmp_path, capsys) -> None:
    """`eval --random-inputs` lists the fixed inputs, then runs: one look-up of the operator."""
    from refinterp.cli import main

    path = tmp_path / "g.sknd"
    path.write_text(TWICE + """
graph G {
    @input { x: real[3]; }
    @output { y: real[3]; }
    @compose { y = twice(x); }
}
""")
    found = []
    original = ri.Program.find
    monkeypatch.setattr(ri.Program, "find",
                        lambda self, name=None: found.append(name) or original(self, name))
    assert main(["eval", str(path), "--random-inputs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["outputs"]["y"]["shape"] == [3]
    assert found == [None]
