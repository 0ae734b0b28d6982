"""Spec §2.10 "Labelling operator invocations" (scoped names, the two auto-label rules, public,
graphs as scopes), §2.7/§2.11 variables and @update, §2.14 @quantize (`shapes --quant`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from refinterp.cli import main
from testsupport.nnef_files import write_dat
from spec_tests.test_2_10_compose import OPS as BASIC_OPS  # mul, add, ...

OPS = BASIC_OPS + """
operator scaled {
  @input { x: real[n]; }
  @variable { w: real[n]; }
  @output { y: real[n]; }
  @compose { y = mul(x, w); }
}
operator wrapper {
  @input { x: real[n]; }
  @output { y: real[n]; }
  @compose { y = scaled(x); }
}
operator two_stage {
  @input { x: real[n]; }
  @output { y: real[n]; }
  @compose {
    a = scaled(x);
    y = scaled(a);
  }
}
"""


SINGLE = """
graph G {
  @input { x: real[3]; }
  @output { y: real[3]; }
  @compose { y = scaled(x); }
}"""


def model(tmp_path: Path, graph: str, extra: str = "") -> Path:
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    (folder / "main.sknd").write_text(OPS + extra + graph)
    return folder


def run(args: list[str], tmp_path: Path) -> dict[str, np.ndarray]:
    out = tmp_path / "out.npz"
    assert main([*args, "-o", str(out)]) == 0
    with np.load(out) as data:
        return {k: data[k] for k in data.files}


X = np.array([1.0, -2.0, 0.5])


def test_auto_label_rule_2_names_variables_after_the_result(tmp_path: Path) -> None:
    """`a = scaled(x)` in graph G of main: the variable is main.G.a.w (§2.10, rule 2)."""
    folder = model(tmp_path, """
graph G {
  @input { x: real[3]; }
  @output { y: real[3]; }
  @compose {
    a = scaled(x);
    y = add(a, x);
  }
}""")
    w = np.array([2.0, 3.0, 4.0])
    write_dat(folder / "main.G.a.w.dat", w)
    np.save(tmp_path / "x.npy", X)
    out = run(["eval", str(folder), "--input", f"x={tmp_path / 'x.npy'}"], tmp_path)
    assert np.array_equal(out["y"], X * w + X)


def test_rule_1_propagates_the_scope_and_labels_nest(tmp_path: Path) -> None:
    """`wrapper` has one component and no local tensors: its invocation `b` lends its scope to
    `scaled` (main.G.b.w, not main.G.b.y.w); `two_stage` has two components: main.G.c.a.w and
    main.G.c.y.w; an explicit label `lbl:` overrides the auto-label."""
    folder = model(tmp_path, """
graph G {
  @input { x: real[3]; }
  @output { y: real[3]; z: real[3]; u: real[3]; }
  @compose {
    y = wrapper(x);
    z = c: two_stage(x);
    u = lbl: scaled(x);
  }
}""")
    params = {"main.G.y.w": np.array([1.0, 2.0, 3.0]), "c.a.w": np.array([2.0, 2.0, 2.0]),
              "main.G.c.y.w": np.array([0.5, 0.5, 0.5]), "lbl.w": np.array([-1.0, 0, 1])}
    np.savez(tmp_path / "p.npz", **params)
    np.save(tmp_path / "x.npy", X)
    out = run(["eval", str(folder), "--input", f"x={tmp_path / 'x.npy'}",
               "--params", str(tmp_path / "p.npz")], tmp_path)
    assert np.array_equal(out["y"], X * params["main.G.y.w"])
    assert np.array_equal(out["z"], X * 2.0 * 0.5)
    assert np.array_equal(out["u"], X * params["lbl.w"])


def test_missing_and_misshaped_variables_are_diagnostics(tmp_path: Path, capsys) -> None:
    folder = model(tmp_path, SINGLE)
    # G has one component and no local tensors: rule 1 gives `scaled` G's own scope
    assert main(["eval", str(folder), "--input", "x=[1.0, 2.0, 3.0]"]) == 1
    err = capsys.readouterr().err
    assert "no value for variable 'main.G.w' (real[3])" in err
    assert "'main.G.w' or 'w' in --params" in err and "main.G.w.dat" in err
    assert "while invoking scaled" in err  # the operator call stack
    write_dat(folder / "main.G.w.dat", np.zeros(4))
    assert main(["eval", str(folder), "--input", "x=[1.0, 2.0, 3.0]"]) == 1
    assert "declared real[3]" in capsys.readouterr().err
    write_dat(folder / "main.G.w.dat", np.zeros(3, dtype=np.int32))
    assert main(["eval", str(folder), "--input", "x=[1.0, 2.0, 3.0]"]) == 1
    assert "holds int[3]" in capsys.readouterr().err


def test_unlabelled_invocation_with_variables_is_a_diagnostic(tmp_path: Path, capsys) -> None:
    """`y = add(scaled(x), x)`: the inner invocation has no label (rule 2 needs a single
    invocation on the right-hand side)."""
    folder = model(tmp_path, """
graph G {
  @input { x: real[3]; }
  @output { y: real[3]; }
  @compose { y = add(scaled(x), x); }
}""")
    assert main(["eval", str(folder), "--input", "x=[1.0, 2.0, 3.0]",
                 "--random-params"]) == 1
    assert "have no scoped name" in capsys.readouterr().err


def test_random_params_are_reproducible_and_unknown_params_are_errors(tmp_path: Path,
                                                                      capsys) -> None:
    folder = model(tmp_path, SINGLE)
    args = ["eval", str(folder), "--input", "x=[1.0, 2.0, 3.0]", "--random-params"]
    first, second = run(args, tmp_path)["y"], run(args, tmp_path)["y"]
    assert np.array_equal(first, second) and np.all(np.isfinite(first))
    np.savez(tmp_path / "p.npz", **{"w": np.ones(3)})
    out = run(["eval", str(folder), "--input", "x=[1.0, 2.0, 3.0]",
               "--params", str(tmp_path / "p.npz")], tmp_path)
    assert np.array_equal(out["y"], [1.0, 2.0, 3.0])
    # an entry that names no variable is an error, found before the run (docs/api.md)
    np.savez(tmp_path / "p.npz", **{"w": np.ones(3), "y.typo": np.ones(3)})
    capsys.readouterr()
    assert main(["eval", str(folder), "--input", "x=[1.0, 2.0, 3.0]",
                 "--params", str(tmp_path / "p.npz")]) == 1
    captured = capsys.readouterr()
    assert "params entry 'y.typo' is not a variable of the run [E0702]" in captured.err
    assert "variables: main.G.w" in captured.err and captured.out == ""


UPDATE = """
graph G {
  @attrib { rate: real = 0.5; }
  @input { x: real[3]; }
  @variable { w: real[3]; }
  @output { y: real[3]; }
  @compose { y = mul(x, w); }
  @update {
    d = mul(y, x);
    w = add(w, d);
  }
}"""


def test_update_runs_after_compose_and_writes_params(tmp_path: Path) -> None:
    """§2.11: @update sees @compose's tensors; --write-params saves the new values."""
    folder = model(tmp_path, UPDATE)
    w = np.array([1.0, 2.0, 3.0])
    write_dat(folder / "main.G.w.dat", w)
    np.save(tmp_path / "x.npy", X)
    out = run(["eval", str(folder), "--input", f"x={tmp_path / 'x.npy'}", "--write-params",
               str(tmp_path / "new.npz")], tmp_path)
    assert np.array_equal(out["y"], X * w)
    with np.load(tmp_path / "new.npz") as data:
        assert list(data.files) == ["main.G.w"]
        assert np.array_equal(data["main.G.w"], w + X * w * X)
    assert main(["eval", str(folder), "--input", f"x={tmp_path / 'x.npy'}", "--write-params",
                 str(tmp_path / "dats")]) == 0
    raw = (tmp_path / "dats" / "main.G.w.dat").read_bytes()
    assert raw[:2] == b"\x4e\xef"
    assert np.array_equal(np.frombuffer(raw[128:], "<f8"), w + X * w * X)


@pytest.mark.parametrize("body,message", [
    ("@compose { y = mul(x, w); w = add(w, x); }", "can only be assigned in the @update"),
    ("@compose { y = mul(x, w); } @update { y = add(w, x); }",
     "can only be assigned in the @compose"),
    ("@compose { y = mul(x, w); } @update { w = add(x, x); w2 = mul(w, w); }", None),
])
def test_assignment_rules_of_2_11(tmp_path: Path, capsys, body: str, message) -> None:
    folder = model(tmp_path, """
graph G {
  @input { x: real[3]; }
  @variable { w: real[3]; }
  @output { y: real[3]; }
  %s
}""" % body)
    code = main(["eval", str(folder), "--input", "x=[1.0, 2.0, 3.0]", "--random-params"])
    if message is None:
        assert code == 0
    else:
        assert code == 1 and message in capsys.readouterr().err


def test_invoked_graph_is_its_own_scope_unless_labelled(tmp_path: Path) -> None:
    """§2.10: a graph defines its own name scope (main.H.v); an explicit label puts it under the
    invoking scope (main.G.sub.v); auto-labels do not apply."""
    folder = model(tmp_path, """
graph H {
  @input { x: real[3]; }
  @variable { v: real[3]; }
  @output { y: real[3]; }
  @compose { y = add(x, v); }
}
graph G {
  @input { x: real[3]; }
  @output { a: real[3]; b: real[3]; }
  @compose {
    a = H(x);
    b = sub: H(x);
  }
}""")
    np.savez(tmp_path / "p.npz", **{"main.H.v": np.full(3, 10.0), "sub.v": np.full(3, 20.0)})
    out = run(["eval", str(folder), "--op", "G", "--input", "x=[1.0, 2.0, 3.0]",
               "--params", str(tmp_path / "p.npz")], tmp_path)
    assert np.array_equal(out["a"], [11.0, 12.0, 13.0])
    assert np.array_equal(out["b"], [21.0, 22.0, 23.0])


def test_private_operators_are_private_to_their_module(tmp_path: Path, capsys) -> None:
    (tmp_path / "lib.sknd").write_text("""
operator _helper {
  @input { x: real[n]; }
  @output { y: real[n]; }
  @lower { y[i] = x[i] * 2.0, i < n; }
}
operator public_op {
  @input { x: real[n]; }
  @output { y: real[n]; }
  @compose { y = _helper(x); }
}""")
    (tmp_path / "ok.sknd").write_text("""import lib;
graph G { @input { x: real[2]; } @output { y: real[2]; } @compose { y = lib.public_op(x); } }""")
    (tmp_path / "bad.sknd").write_text("""import lib;
graph G { @input { x: real[2]; } @output { y: real[2]; } @compose { y = lib._helper(x); } }""")
    assert run(["eval", str(tmp_path / "ok.sknd"), "--input", "x=[1.0, 2.0]"],
               tmp_path)["y"].tolist() == [2.0, 4.0]
    assert main(["eval", str(tmp_path / "bad.sknd"), "--input", "x=[1.0, 2.0]"]) == 1
    assert "private to module 'lib'" in capsys.readouterr().err


def test_typed_results_are_checked(tmp_path: Path, capsys) -> None:
    text = OPS + """
graph G {
  @input { x: real[3]; }
  @output { y: real[3]; }
  @compose { t: real[%s] = add(x, x); y = add(t, x); }
}"""
    (tmp_path / "ok.sknd").write_text(text % "3")
    (tmp_path / "bad.sknd").write_text(text % "4")
    assert run(["eval", str(tmp_path / "ok.sknd"), "--input", "x=[1.0, 2.0, 3.0]"],
               tmp_path)["y"].tolist() == [3.0, 6.0, 9.0]
    assert main(["eval", str(tmp_path / "bad.sknd"), "--input", "x=[1.0, 2.0, 3.0]"]) == 1
    assert "'t' is declared with shape [4] but the result has shape [3]" in \
        capsys.readouterr().err


QUANT = """
import quant;
public operator stage {
  @input { x: real[n]; }
  @variable { w: real[n]; }
  @output { y: real[n]; }
  @compose { t = mul(x, w); y = add(t, x); }
}
graph G {
  @input { x: real[2, 4]; v: real[4]; }
  @output { z: real[4]; }
  @compose {
    a = s1: scaled(v);
    b = stage(a);
    z = add(a, b);
  }
  @quantize {
    x: quant.zero_point_linear_quantize{zero_point = 0, scale = 0.5, bits = 8};
    a: quant.min_max_linear_quantize{min = -1.0, max = 1.0, bits = 8};
    s1.w: quant.min_max_linear_quantize{min = -2.0, max = 2.0, bits = 8};
    b.t: quant.min_max_linear_quantize{min = -3.0, max = 3.0, bits = %s};
  }
}"""


def test_shapes_quant_lists_entries_attached_to_tensors(tmp_path: Path, capsys) -> None:
    (tmp_path / "q.sknd").write_text(OPS + QUANT % "8")
    assert main(["shapes", str(tmp_path / "q.sknd"), "--quant"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "z: real[4]" and lines[1] == "quantization:"
    assert lines[2] == ("  x (input, real[2, 4]): quant.zero_point_linear_quantize"
                        "{zero_point = 0, scale = 0.5, bits = 8}")
    assert lines[3].startswith("  a (intermediate): quant.min_max_linear_quantize")
    assert lines[4].startswith("  s1.w (nested): ")
    assert lines[5].startswith("  b.t (nested): ")  # stage is public: intermediates visible
    import json

    assert main(["shapes", str(tmp_path / "q.sknd"), "--quant", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["quantization"][0]["type"] == {"type": "real", "shape": [2, 4]}
    assert data["quantization"][3]["attributes"] == {"min": -3.0, "max": 3.0, "bits": 8}


@pytest.mark.parametrize("old,new,message", [
    ("s1.w:", "s1.t:", "no accessible tensor 't'"),
    ("a: quant", "nope: quant", "no accessible tensor 'nope'"),
    ("s1.w:", "s9.w:", "'s9' is not the label"),
    ("x: quant.zero_point_linear_quantize{zero_point = 0,",
     "x: quant.zero_point_linear_quantize{zero_point = [0, 1, 2],", "must have"),
    ("a: quant.min_max_linear_quantize", "a: mul", "exactly one input and one output"),
])
def test_shapes_quant_errors(tmp_path: Path, capsys, old: str, new: str, message: str) -> None:
    (tmp_path / "q.sknd").write_text((OPS + QUANT % "8").replace(old, new))
    assert main(["shapes", str(tmp_path / "q.sknd"), "--quant"]) == 1
    assert message in capsys.readouterr().err


def test_a_module_may_call_its_own_operators_by_qualified_name(tmp_path: Path, capsys) -> None:
    """§4.2.6's lp_reduce, inside module math, invokes `math.abs`: a module's own name
    qualifies its operators (also private ones) without importing itself."""
    (tmp_path / "lib.sknd").write_text("""
operator _twice {
  @input { x: real[n]; }
  @output { y: real[n]; }
  @lower { y[i] = x[i] * 2.0, i < n; }
}
operator quad {
  @input { x: real[n]; }
  @output { y: real[n]; }
  @compose { t = lib._twice(x); y = lib._twice(t); }
}
operator wrong {
  @input { x: real[n]; }
  @output { y: real[n]; }
  @compose { y = lib.thrice(x); }
}""")
    (tmp_path / "ok.sknd").write_text("""import lib;
graph G { @input { x: real[2]; } @output { y: real[2]; } @compose { y = lib.quad(x); } }""")
    (tmp_path / "bad.sknd").write_text("""import lib;
graph G { @input { x: real[2]; } @output { y: real[2]; } @compose { y = lib.wrong(x); } }""")
    assert run(["eval", str(tmp_path / "ok.sknd"), "--input", "x=[1.0, 2.0]"],
               tmp_path)["y"].tolist() == [4.0, 8.0]
    assert main(["eval", str(tmp_path / "bad.sknd"), "--input", "x=[1.0, 2.0]"]) == 1
    assert "unknown operator 'lib.thrice'" in capsys.readouterr().err


def test_intermediate_tensors_are_released_after_their_last_use() -> None:
    """The executor drops a tensor once no later component, output or variable reads it (its
    memory is reused by later operators); not with an @update block, which sees them all."""
    from refinterp.run.scope import liveness
    from refinterp.core.source import SourceFile
    from refinterp.syntax import parse_module

    tree = parse_module(SourceFile("<t>", """
operator f {
  @input { x: real[n]; }
  @output { y: real[n]; }
  @compose { a = neg(x); b = neg(a); c = add(b, x); y = neg(c.shape[0] > 0 ? c : b); }
}
operator g {
  @input { x: real[n]; }
  @output { y: real[n]; }
  @variable { v: real[n]; }
  @compose { a = neg(x); y = neg(a); }
  @update { v = a; }
}""")).module
    f, g = tree.definitions
    # names read later (a later target such as b is listed before it exists: nothing to drop)
    found = liveness(f)
    assert list(found.live) == [{"a", "b", "c", "x", "y"}, {"b", "c", "x", "y"},
                                {"b", "c", "y"}, {"y"}]
    assert list(found.dying) == [set(), {"a"}, {"x"}, {"b", "c"}]
    assert liveness(g) is None
    # the executor's releases, component by component (each adds its target last)
    tensors = {"x": 1}
    left = [{"x", "a"}, {"x", "b"}, {"b", "c"}, {"y"}]
    for k, name in enumerate(["a", "b", "c", "y"]):
        tensors[name] = k
        found.release(tensors, k, 1)
        assert set(tensors) == left[k]
