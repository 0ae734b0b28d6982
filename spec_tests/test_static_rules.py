"""The spec's static rules of a definition (docs/semantics.md "Static rules"): decided from the
text alone by `refinterp lint` (api.lint) and refused when a program is loaded, whether or
not the invalid part is ever reached. Each test quotes the spec sentence it checks
(seed 004, L = its line)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import refinterp.api as ri
from refinterp.cli import main
from refinterp.core.diagnostics import Diagnostic

ADD = """operator add {
  @input { x: real[n]; y: real[n]; }
  @output { z: real[n]; }
  @lower { z[i] = x[i] + y[i], i < n; }
}
operator ok {
  @input { x: real[n]; }
  @output { y: real[n]; }
  @compose { y = add(x, x); }
}
"""


def lint_text(tmp_path: Path, text: str) -> list[Diagnostic]:
    path = tmp_path / "m.sknd"
    path.write_text(text)
    return ri.lint(path)


def codes(found: list[Diagnostic]) -> list[str]:
    return [diag.code for diag in found]


def refused_at_load(text: str, code: str) -> Diagnostic:
    """Loading the program raises `code` although nothing invalid is invoked."""
    with pytest.raises(Diagnostic) as info:
        ri.evaluate(ri.load_source(text), op="ok", inputs={"x": [1.0, 2.0]})
    assert info.value.code == code
    return info.value


def test_2_5_optional_attribute_has_no_explicit_default(tmp_path: Path) -> None:
    # L574: "Attributes of optional types have an implicit default value of null, and they
    # cannot have an explicit default value."
    text = ADD + """operator bad {
  @attrib { a: optional int = 3; b: optional int; }
  @input { x: real[n]; }
  @output { y: real[n]; }
  @compose { y = add(x, x); }
}
"""
    found = lint_text(tmp_path, text)
    assert codes(found) == ["E1300"]
    assert (found[0].span.line, found[0].span.col) == (12, 31)
    assert "optional attribute 'a'" in found[0].message and "§2.5" in found[0].message
    refused_at_load(text, "E1300")


def test_2_10_intermediate_names_are_unique(tmp_path: Path) -> None:
    # L985: "The @compose block may introduce intermediate tensors (z above), but each
    # intermediate tensor must have a unique name."
    text = ADD + """operator bad {
  @input { x: real[n]; }
  @output { y: real[n]; }
  @compose { z = add(x, x); [z, w] = [add(x, x), add(x, x)]; y = add(z, w); }
}
"""
    found = lint_text(tmp_path, text)
    assert codes(found) == ["E1301"]
    assert found[0].span.line == 14 and found[0].related[0][1] == "first bound here"
    assert found[0].related[0][0].col < found[0].span.col
    refused_at_load(text, "E1301")


def test_2_7_variables_have_no_explicit_value(tmp_path: Path) -> None:
    # L871: "Variables must not have their values explicitly defined, rather they are stored
    # in separate data files mapped to the variables by their (possibly scoped) names."
    text = ADD + """graph G {
  @input { x: real[2]; }
  @output { y: real[2]; }
  @variable { w: real[2] = 1.0; v: real[2]; }
  @compose { y = add(add(x, w), v); }
}
"""
    found = lint_text(tmp_path, text)
    assert codes(found) == ["E1302"]
    assert (found[0].span.line, found[0].span.col) == (14, 28)
    refused_at_load(text, "E1302")


LOOPS = ADD + """operator halve {
  @input { x: real[]; }
  @output { y: real[]; big: bool[]; }
  @lower { y[] = x[] * 0.5; big[] = x[] * 0.5 > 1.0; }
}
"""


@pytest.mark.parametrize("compose", [
    # a count read from an input tensor: known only at run time
    "y = with s: real[n] = 0.0 unroll..(c) add(s, xs[0]);",
    "y = with s: real[n] = 0.0 unroll..(i -> c + 1) add(s, xs[0]);",
])
def test_2_10_unroll_needs_a_compile_time_count(tmp_path: Path, compose: str) -> None:
    # L1283: "loop unrolling only works with loops that have a compile-time loop count,
    # hence unrolling cannot be used with condition based looping"
    text = LOOPS + f"""operator bad {{
  @input {{ xs: real[n]..(k); c: int[]; }}
  @output {{ y: real[n]; }}
  @compose {{ {compose} }}
}}
"""
    found = lint_text(tmp_path, text)
    assert codes(found) == ["E1303"]
    # the column of the `c` the count reads
    column = len("  @compose { ") + compose.index("c)" if "(c)" in compose else "c +") + 1
    assert (found[0].span.line, found[0].span.col) == (19, column)
    assert "'c'" in found[0].message
    refused_at_load(text, "E1303")


def test_2_10_unroll_cannot_loop_on_a_condition(tmp_path: Path) -> None:
    # L1283: "unrolling cannot be used with condition based looping"
    text = LOOPS + """operator bad {
  @input { x0: real[]; }
  @output { z: real[]; }
  @compose { z, ~ = with x = x0, big = true while big unroll halve(x); }
}
"""
    found = lint_text(tmp_path, text)
    assert codes(found) == ["E1303"] and "'while'" in found[0].message
    refused_at_load(text, "E1303")


def test_2_10_unroll_with_compile_time_counts_is_clean(tmp_path: Path) -> None:
    # the same section: "only with scanning and folding loops iterating over packs, or loops
    # that have explicit loop counts" -- a pack length or a shape is a compile-time count, and
    # `do` may take a run-time count
    text = LOOPS + """operator good {
  @input { xs: real[n]..(k); c: int[]; }
  @output { y: real[n]; u: real[n]; v: real[n]; w: real[n]; }
  @compose {
    y = with s: real[n] = 0.0 for x : xs unroll add(s, x);
    u = with s: real[n] = 0.0 unroll..(xs[0].shape[0] + k) add(s, xs[0]);
    v = with s: real[n] = 0.0 do..(c) add(s, xs[0]);
    w = add(y, add(u, v));
  }
}
"""
    assert lint_text(tmp_path, text) == []


@pytest.mark.parametrize("formula, culprit", [
    ("y[i] = x[i] + o[i], i < n;", "o[i]"),
    ("y[i] = x[i] * (x[i] > 0.0 ? 1.0), i < n;", "x[i] > 0.0 ?"),  # an else-less select
])
def test_2_12_optional_is_resolved_in_lower(tmp_path: Path, formula: str, culprit: str) -> None:
    # L1378: "Expressions of optional type (for example Z[i,j] above due to null propagation
    # from Z) must be resolved on the right-hand-side (for example using the ?? operator)."
    text = ADD + f"""operator bad {{
  @input {{ x: real[n]; o: optional real[n]; }}
  @output {{ y: real[n]; }}
  @lower {{ {formula} }}
}}
"""
    found = [d for d in lint_text(tmp_path, text) if d.severity == "error"]
    assert codes(found) == ["E1305"] and "§2.12" in found[0].message
    column = len("  @lower { ") + formula.index(culprit) + 1
    assert (found[0].span.line, found[0].span.col) == (14, column)
    refused_at_load(text, "E1305")  # refused whether `o` is given or not


def test_2_12_resolved_optionals_are_clean(tmp_path: Path) -> None:
    # the spec's own example (L1355): `C[i,j] = Z[i,j] ?? 0.0`
    text = """operator matmul {
  @input { A: real[m,k]; B: real[k,n]; Z: optional real[m,n]; }
  @output { C: real[m,n]; }
  @lower {
     C[i,j] = Z[i,j] ?? 0.0, i < m, j < n;
     C[i,j] += A[i,l] * B[l,j], i < m, l < k, j < n;
  }
}
operator promoted {
  @attrib { a: optional real; }
  @input { x: real[n]; }
  @output { y: real[n]; }
  @lower { y[i] = ?a ? x[i] * a : x[i], i < n; }
}
"""
    assert lint_text(tmp_path, text) == []


def test_2_6_1_binding_order_is_decided_per_definition(tmp_path: Path) -> None:
    # L801: "if there are any remaining inputs, either optional or non-optional, whose shapes
    # cannot be bound unambiguously, the operator definition is invalid" -- found without
    # invoking the operator (its example L754: `x: real[s..,t..]`)
    text = ADD + """operator ambiguous {
  @input { x: real[s..,t..]; }
  @output { y: real[]; }
  @lower { y[] = 0.0; }
}
"""
    found = [d for d in lint_text(tmp_path, text) if d.severity == "error"]
    assert codes(found) == ["E0300"] and "'x'" in found[0].message
    assert (found[0].span.line, found[0].span.col) == (12, 12)
    refused_at_load(text, "E0300")


def test_2_6_1_binding_order_follows_the_profile(tmp_path: Path, capsys) -> None:
    # §2.9: @using symbols are not visible in @input under the spec; the Khronos tools let
    # input shapes use those computed from attributes alone
    text = ADD + """operator hidden {
  @attrib { r: int; }
  @using { d = r - 1; }
  @input { x: real[s..(d),t..]; }
  @output { y: real[]; }
  @lower { y[] = x[0, 0] * 2.0; }
}
"""
    path = tmp_path / "m.sknd"
    path.write_text(text)
    assert codes(ri.lint(path)) == ["E0300"]
    assert codes(ri.lint(path, profile="khronos")) == []
    assert main(["lint", str(path)]) == 1
    assert main(["lint", "--profile", "khronos", str(path)]) == 0
    capsys.readouterr()
    ri.load_source(text)  # loading knows no profile: instantiation decides under the run's


MAIN_GRAPH = """import math;
graph G {
  @attrib { k: int = 3; }
  @input { DECLS }
  @output { y: real; }
  @compose { y = math.exp(a); }
}
"""


def main_graph(decls: str) -> str:
    return MAIN_GRAPH.replace("DECLS", decls)


def main_inputs(decls: str, a: np.ndarray, b: np.ndarray | None = None) -> dict:
    return {"a": a} if "b:" not in decls else {"a": a, "b": b}


@pytest.mark.parametrize("decls, culprit, shape", [
    ("a: real[s];", "symbol 's'", (3,)),
    ("a: real[~, k];", "'~'", (2, 3)),
    ("a: real[s|10]; b: real[t, s];", "symbol 't'", (2,)),
    ("a: real;", "rank", (2, 3)),
    ("a: real[~|10..];", "rank", (2, 3)),
])
def test_2_6_main_graph_inputs_have_upper_bounds(tmp_path: Path, decls: str, culprit: str,
                                                 shape: tuple) -> None:
    # L713: "in case of the *main* graph, the upper bound must be defined. [...] The
    # components may be packed, but the rank must be defined"
    errors = [d for d in lint_text(tmp_path, main_graph(decls)) if d.severity == "error"]
    assert codes(errors) == ["E1306"]
    assert culprit in errors[0].message and "spec §2.6" in errors[0].message
    a = np.arange(float(np.prod(shape))).reshape(shape)
    inputs = main_inputs(decls, a, np.ones((4, 2)))
    program = ri.load_source(main_graph(decls))  # loads: the main graph is known at a run
    with pytest.raises(Diagnostic) as info:
        ri.evaluate(program, inputs=inputs)
    assert info.value.code == "E1306" and culprit in info.value.message
    # --profile khronos runs it, as the Khronos tools do
    run = ri.evaluate(program, profile="khronos", inputs=inputs)
    assert np.allclose(run.outputs["y"], np.exp(a), rtol=1e-15, atol=0)
    assert [d for d in ri.lint(tmp_path / "m.sknd", profile="khronos")
            if d.severity == "error"] == []


@pytest.mark.parametrize("decls", [
    "a: real[s|10, k];",                 # a bounded symbol; an attribute is static
    "a: real[~|10, 3];",                 # a bounded placeholder
    "a: real[s|10, 3]; b: real[s, 2];",  # L699: "the upper bound need not be specified again"
    "b: real[3|4]; a: real[2, b.shape[0]];",  # read through another input's shape
    "a: real[~|10..(2)];",               # packed components with a rank (L714)
])
def test_2_6_bounded_main_graph_inputs_run(tmp_path: Path, decls: str) -> None:
    assert [d for d in lint_text(tmp_path, main_graph(decls)) if d.severity == "error"] == []
    a = np.arange(6.0).reshape(2, 3)
    b = np.ones(3) if "b: real[3" in decls else np.ones((2, 2))
    run = ri.evaluate(ri.load_source(main_graph(decls)), inputs=main_inputs(decls, a, b))
    assert np.allclose(run.outputs["y"], np.exp(a), rtol=1e-15, atol=0)


def test_2_6_bounds_of_a_main_graph_input_are_checked_at_run_time() -> None:
    # L707: "Such agreement constraints and upper bounds prescribe runtime checks for input
    # shapes"
    program = ri.load_source(main_graph("a: real[s|3];"))
    with pytest.raises(Diagnostic) as info:
        ri.evaluate(program, inputs={"a": np.ones(4)})
    assert "above its bound 3" in info.value.message


def test_2_6_a_subgraph_needs_no_bound(tmp_path: Path) -> None:
    # L715: "In case of subgraphs (not the main graph but invoked by a dynamic control flow
    # construct), the input shape components can be omitted (~) without specifying the upper
    # bound"
    text = main_graph("a: real[s|10];").replace(
        "y = math.exp(a);", "y = if a.shape[0] > 1 then body(a) else body(a);") + """
graph body {
  @input { x: real[~]; }
  @output { y: real; }
  @compose { y = math.exp(x); }
}
"""
    assert [d for d in lint_text(tmp_path, text) if d.severity == "error"] == []
    a = np.array([0.5, 1.0, 2.0])
    run = ri.evaluate(ri.load_source(text), inputs={"a": a})
    assert np.allclose(run.outputs["y"], np.exp(a), rtol=1e-15, atol=0)
    with pytest.raises(Diagnostic) as info:  # run as the main graph, body needs its bound
        ri.evaluate(ri.load_source(text), op="body", inputs={"x": a})
    assert info.value.code == "E1306"


YIELDS = """import math;
operator f {
  @attrib { k: optional real; }
  @input { x: real[n]; o: optional real[n]; }
  @output { y: real[n]; }
  @compose {
    y = BODY;
  }
}
"""


@pytest.mark.parametrize("body, culprit", [
    ("if x.shape[0] > 1 then { a = math.exp(x); yield o; } else { yield x; }", "'o'"),
    ("if x.shape[0] > 1 then { yield x; } else { a = math.exp(x); yield o; }", "'o'"),
    ("if ?k then { yield o; } else { yield x; }", "'o'"),
])
def test_2_10_yielded_results_are_not_optional(tmp_path: Path, body: str, culprit: str) -> None:
    # L1060: "The yielded results must not be optional expressions."
    text = YIELDS.replace("BODY", body)
    found = lint_text(tmp_path, text)
    assert codes(found) == ["E1307"]
    assert culprit in found[0].message and "spec §2.10" in found[0].message
    line = text.splitlines()[found[0].span.line - 1]
    assert line[found[0].span.col - 1:].startswith("o;")
    with pytest.raises(Diagnostic) as info:  # refused at load, even with o given
        ri.evaluate(ri.load_source(text), inputs={"x": np.ones(2), "o": np.ones(2)})
    assert info.value.code == "E1307"


def test_2_10_resolved_yields_are_clean(tmp_path: Path) -> None:
    body = "if ?o then { a = math.exp(o); yield o; } else { yield x; }"
    text = YIELDS.replace("BODY", body)
    assert lint_text(tmp_path, text) == []
    x, o = np.array([1.0, 2.0]), np.array([-3.0, 0.5])
    program = ri.load_source(text)
    assert np.array_equal(ri.evaluate(program, inputs={"x": x, "o": o}).outputs["y"], o)
    assert np.array_equal(ri.evaluate(program, inputs={"x": x}).outputs["y"], x)


TYPED = """operator f {
  @dtype { T: num; }
  @attrib { k: int = 2; name: str = 'a'; flag: bool = true; r: T; }
  @input { x: T[n, m..]; }
  @output { y: T[n]; }
  @assert { ASSERT; }
  @using { USING; }
  @lower { y[i] = x[i, 0..], i < n; }
}
"""


@pytest.mark.parametrize("assertion, using, message", [
    ("k + name > 0", "u = k", "'+' needs operands of one type; got int and str"),
    ("x.rank && 1", "u = k", "'&&' needs bool operands; got int and int"),
    ("n > 0", "u = k * 2.0", "'*' needs operands of one type; got int and real"),
    ("n > 0", "u = k > 1; v = u + 1", "got bool and int"),
    ("m && flag", "u = k", "got int.. and bool"),  # m.. is a pack of extents
])
def test_2_4_expression_types_are_checked_without_values(tmp_path: Path, assertion: str,
                                                         using: str, message: str) -> None:
    # §2.4 Operators: "arithmetic operators ... operands must be of the same type", "logical
    # operators ... bool operands"; the types follow from the declarations (§2.3), so a
    # definition that breaks them is refused before anything is instantiated
    text = TYPED.replace("ASSERT", assertion).replace("USING", using)
    found = lint_text(tmp_path, text)
    assert codes(found) == ["E0400"]
    assert message in found[0].message


def test_2_4_expression_types_that_need_values_are_left_to_instantiation(tmp_path: Path
                                                                         ) -> None:
    text = TYPED.replace("ASSERT", "r > T(0) && flag; m > 0").replace(
        "USING", "u = [k, n]; w = u[0] + n; z = name == 'b'")
    assert lint_text(tmp_path, text) == []


def test_2_15_model_main_module_has_a_graph(tmp_path: Path) -> None:
    # L1589: "The module from which parsing starts is the main module, and must be named main
    # in the model folder. It must contain at least one graph definition"
    model = tmp_path / "model"
    model.mkdir()
    (model / "main.sknd").write_text(ADD)
    found = ri.lint(model)
    assert codes(found) == ["E1304"] and "§2.15" in found[0].message
    with pytest.raises(Diagnostic) as info:
        ri.load(model)
    assert info.value.code == "E1304"
    # a lone file is no model: its operators may be run on their own
    assert ri.lint(model / "main.sknd") == []


def test_unused_input_is_a_warning(tmp_path: Path) -> None:
    text = ADD + """operator fst {
  @input { x: real[n]; unused: real[n]; }
  @output { y: real[n]; }
  @compose { y = add(x, x); }
}
"""
    found = lint_text(tmp_path, text)
    assert [(d.code, d.severity) for d in found] == [("W1300", "warning")]
    assert "'unused'" in found[0].message
    ri.load_source(text)  # a warning does not refuse the program


def test_lint_command_exit_status_and_json(tmp_path: Path, capsys) -> None:
    good, bad = tmp_path / "good.sknd", tmp_path / "bad.sknd"
    good.write_text(ADD)
    bad.write_text(ADD.replace("@input { x: real[n]; }",
                               "@attrib { a: optional real = 1.0; }\n  @input { x: real[n]; }"))
    assert main(["lint", str(good)]) == 0
    assert main(["lint", str(good), str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:7:32: error: optional attribute 'a'" in err and "[E1300]" in err
    assert main(["lint", "--json", str(bad)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["errors"] == 1 and data["diagnostics"][0]["code"] == "E1300"
    assert data["diagnostics"][0]["location"]["line"] == 7
    assert main(["lint", str(tmp_path / "missing.sknd")]) == 1
    assert "[E0200]" in capsys.readouterr().err


def test_the_bundled_standard_library_is_clean(capsys) -> None:
    assert main(["lint", str(Path(ri.__file__).parent / "stdlib")]) == 0
    assert "error" not in capsys.readouterr().err
