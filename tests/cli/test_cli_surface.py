"""The command-line surface: graphs checked before they run, discovery, reproducible
runs, output paths checked first, errors at the user's call site, `expr -inf`, and the smaller
items (hints, messages, --version, help texts, fmt --check, one rule for unknown names)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from refinterp.cli import build_parser, main
from testsupport.paths import REPO_ROOT

GRAPH = """import nn;
graph G {
    @input {
        x: real[1, 3, 8, 8];
        w: real[4, 3, 3, 3];
    }
    @output {
        y: real[1, 4, 8, 8];
    }
    @compose {
        c = nn.conv{padding = [1, 1, 1, 1]}(x, w);
        y = nn.relu(c);
    }
}
"""


def run(capsys, *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def write(tmp_path: Path, text: str, name: str = "g.sknd") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def position(text: str, needle: str) -> tuple[int, int]:
    """1-based line and column of the first occurrence of `needle` in `text`."""
    offset = text.index(needle)
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


# ------------------------------------------------------------------ 1: shapes checks @compose


def test_shapes_of_a_correct_graph(tmp_path, capsys) -> None:
    status, out, _ = run(capsys, "shapes", write(tmp_path, GRAPH), "--json")
    assert status == 0 and json.loads(out) == {
        "outputs": {"y": {"type": "real", "shape": [1, 4, 8, 8]}}}


@pytest.mark.parametrize("old, new, needle, code", [
    ("nn.relu(c)", "nn.rleu(c)", "nn.rleu(c)", "E0601"),
    ("{padding = [1, 1, 1, 1]}", "{pading = [1, 1, 1, 1]}", "pading", "E0301"),
    ("(x, w)", "(x)", "nn.conv{", "E0305"),
    ("w: real[4, 3, 3, 3]", "w: real[4, 2, 3, 3]", "nn.conv{", "E0307"),
    ("y: real[1, 4, 8, 8]", "y: real[1, 4, 9, 8]", "y: real[1, 4, 9, 8]", "E0603"),
])
def test_shapes_finds_the_five_mistakes_in_the_users_file(tmp_path, capsys, old, new, needle,
                                                          code) -> None:
    text = GRAPH.replace(old, new)
    path = write(tmp_path, text)
    status, out, err = run(capsys, "shapes", path)
    assert status == 1 and out == ""
    line, col = position(text, needle)
    assert err.startswith(f"{path}:{line}:{col}: error: ") and f"[{code}]" in err, err
    status, out, _ = run(capsys, "shapes", path, "--json")
    error = json.loads(out)["error"]
    assert status == 1 and error["code"] == code
    assert (error["location"]["file"], error["location"]["line"], error["location"]["col"]) \
        == (path, line, col)


def test_a_typo_gets_did_you_mean_and_the_stdlib_place_as_related(tmp_path, capsys) -> None:
    path = write(tmp_path, GRAPH.replace("{padding =", "{pading ="))
    _, _, err = run(capsys, "shapes", path)
    assert "did you mean 'padding'" in err
    assert "nn.sknd" in err and "as declared by nn.conv" in err
    _, _, err = run(capsys, "shapes", write(tmp_path, GRAPH.replace("nn.relu(c)", "nn.rleu(c)")))
    assert "did you mean nn.relu" in err


def test_an_unqualified_standard_operator_gets_a_hint(tmp_path, capsys) -> None:
    status, _, err = run(capsys, "shapes", write(tmp_path, GRAPH.replace("nn.relu(c)", "relu(c)")))
    assert status == 1 and "unknown operator 'relu'" in err and "did you mean nn.relu?" in err
    text = GRAPH.replace("import nn;", "import nn;\nimport math;").replace(
        "y = nn.relu(c);", "y = exp(c);")
    _, _, err = run(capsys, "shapes", write(tmp_path, text))
    assert "did you mean math.exp?" in err
    text = GRAPH.replace("y = nn.relu(c);", "y = exp(c);")
    _, _, err = run(capsys, "shapes", write(tmp_path, text))
    assert "math.exp" in err and "import math;" in err


def test_an_error_inside_the_stdlib_is_reported_at_the_users_call(tmp_path, capsys) -> None:
    """nn.softmax composes other operators; a bad axis fails inside it."""
    text = """import nn;
graph G {
    @input { x: real[2, 3]; }
    @output { y: real[2, 3]; }
    @compose { y = nn.softmax{axes = [5]}(x); }
}
"""
    path = write(tmp_path, text)
    status, _, err = run(capsys, "shapes", path)
    line, col = position(text, "nn.softmax")
    assert status == 1 and err.startswith(f"{path}:{line}:{col}: error: ")
    assert "stdlib" in err  # the library position stays, as a related place


# ------------------------------------------------------------------ 2: discovery


def test_ops_lists_a_module_with_kinds_and_signatures(capsys) -> None:
    status, out, _ = run(capsys, "ops", "nn")
    lines = out.splitlines()
    assert status == 0
    relu = next(line for line in lines if " nn.relu" in line)
    assert relu.split()[0] == "lowered" and "(x: real[s..]) -> (y: real[s..])" in relu
    assert any(line.split()[0] == "composed" for line in lines)
    status, out, _ = run(capsys, "ops", "--json")
    names = {o["qualified"] for o in json.loads(out)["operators"]}
    assert {"nn.conv", "math.add", "linalg.matmul", "layout.transpose"} <= names


def test_describe_prints_the_full_signature(capsys) -> None:
    status, out, _ = run(capsys, "describe", "nn.conv")
    assert status == 0 and out.startswith("nn.conv (lowered) at ")
    for text in ("stride: int..(d) = 1", "padding_align: str = \"UPPER\"",
                 "bias: optional real[bs]", "'stride' must be positive"):
        assert text in out
    status, _, err = run(capsys, "describe", "nn.cnov")
    assert status == 1 and "did you mean conv" in err


def test_eval_and_shapes_run_a_standard_operator_without_a_file(tmp_path, capsys) -> None:
    x = np.array([-1.5, 0.0, 2.5])
    np.save(tmp_path / "x.npy", x)
    out_path = tmp_path / "out.npz"
    status, _, _ = run(capsys, "eval", "--op", "nn.relu", "--input", f"x={tmp_path / 'x.npy'}",
                       "-o", str(out_path))
    assert status == 0 and np.array_equal(np.load(out_path)["y"], np.maximum(x, 0.0))
    status, out, _ = run(capsys, "shapes", "--op", "nn.conv", "--input", "input=real[1,3,8,8]",
                         "--input", "filter=real[4,3,3,3]", "--attrib", "stride=2")
    assert status == 0 and out.strip() == "output: real[1, 4, 4, 4]"
    status, _, err = run(capsys, "shapes", "nn")
    assert status == 1 and "--op nn.OP" in err
    status, _, err = run(capsys, "eval", "--op", "relu")
    assert status == 2 and "MODULE.OP" in err


def test_eval_op_names_an_operator_of_an_imported_module(tmp_path, capsys) -> None:
    path = write(tmp_path, GRAPH)
    status, out, _ = run(capsys, "shapes", path, "--op", "nn.relu", "--input", "x=real[2]")
    assert status == 0 and out.strip() == "y: real[2]"


# ------------------------------------------------------------------ 3: reproducible runs


VARIABLE = """graph G {
    @input { x: real[3]; }
    @variable { w: real[3]; }
    @output { y: real[3]; }
    @compose { y = mul(x, w); }
}
operator mul {
    @input { a: real[n]; b: real[n]; }
    @output { c: real[n]; }
    @lower { c[i] = a[i] * b[i], i < n; }
}
"""


def test_save_inputs_and_write_params_reproduce_a_random_run(tmp_path, capsys) -> None:
    path = write(tmp_path, VARIABLE)
    first = tmp_path / "first.npz"
    status, _, _ = run(capsys, "eval", path, "--random", "x", "--random-params", "--seed", "7",
                       "-o", str(first), "--save-inputs", str(tmp_path / "in.npz"),
                       "--write-params", str(tmp_path / "params.npz"))
    assert status == 0
    inputs, params = np.load(tmp_path / "in.npz"), np.load(tmp_path / "params.npz")
    assert list(inputs.files) == ["x"] and inputs["x"].shape == (3,)
    assert list(params.files) == ["g.G.w"]  # written although G has no @update
    expected = inputs["x"] * params["g.G.w"]  # independent of refinterp
    assert np.array_equal(np.load(first)["y"], expected)
    second = tmp_path / "second.npz"
    status, _, _ = run(capsys, "eval", path, "--inputs", str(tmp_path / "in.npz"), "--params",
                       str(tmp_path / "params.npz"), "-o", str(second))
    assert status == 0 and np.array_equal(np.load(second)["y"], np.load(first)["y"])


def test_eval_json_prints_the_output_summary(tmp_path, capsys) -> None:
    status, out, _ = run(capsys, "eval", "--op", "nn.relu", "--input", "x=[-1.0, 3.0]",
                         "--json")
    data = json.loads(out)
    assert status == 0 and data["operator"] == "nn.relu"
    assert data["outputs"]["y"] == {"dtype": "real", "shape": [2], "min": 0.0, "max": 3.0,
                                    "mean": 1.5}


# ------------------------------------------------------------------ 4: output paths first


def test_an_unwritable_output_fails_before_anything_runs(tmp_path, capsys) -> None:
    failing = VARIABLE  # no value for w: running it would fail with E0700
    path = write(tmp_path, failing)
    for option in ("-o", "--save-inputs", "--write-params"):
        target = str(tmp_path / "no" / "such" / "out.npz")
        status, _, err = run(capsys, "eval", path, "--input", "x=[1.0, 2.0, 3.0]", option,
                             target)
        assert status == 1 and "[E0801]" in err and "does not exist" in err, err


# ------------------------------------------------------------------ 6: expr -inf


@pytest.mark.parametrize("args, expected", [
    (["-inf"], "-inf"), (["-x", "--attrib", "x=3"], "-3"), (["-7 / 2", "--profile", "khronos"],
                                                            "-3"),
    (["--json", "-1"], "-1"), (["--", "-2"], "-2")])
def test_expr_takes_an_expression_starting_with_minus(capsys, args, expected) -> None:
    status, out, _ = run(capsys, "expr", *args)
    assert status == 0 and out.strip() == expected


# ------------------------------------------------------------------ 7: the smaller items


def test_an_unquoted_string_attribute_gets_a_hint(capsys) -> None:
    status, _, err = run(capsys, "shapes", "--op", "nn.conv", "--input", "input=real[1,1,4,4]",
                         "--input", "filter=real[1,1,3,3]", "--attrib", "padding_align=LOWER")
    assert status == 1 and "undefined name 'LOWER'" in err and "'LOWER'" in err
    assert "quoted" in err


def test_mismatch_reads_is_expected(tmp_path, capsys) -> None:
    path = write(tmp_path, GRAPH)
    status, _, err = run(capsys, "shapes", path, "--input", "x=real[3,3,8,8]")
    assert status == 1 and "input 'x' (dimension 0) is 3, expected 1 [E0306]" in err, err
    text = "operator f { @attrib { k: int; } @input { x: real[k + 1]; } }"
    status, _, err = run(capsys, "shapes", write(tmp_path, text, "f.sknd"), "--attrib", "k=2",
                         "--input", "x=real[2]")
    assert status == 1 and "input 'x' (dimension 0) is 2, expected 3 (k + 1)" in err, err


def test_no_attributes_says_none(capsys) -> None:
    status, _, err = run(capsys, "shapes", "--op", "nn.linear", "--input", "input=real[2,2]",
                         "--input", "filter=real[2,2]", "--attrib", "alpha=1.0")
    assert status == 1 and "has no attribute 'alpha'" in err and "  attributes: none\n" in err


def test_random_of_an_unknown_type_lists_the_types(capsys) -> None:
    status, _, err = run(capsys, "eval", "--op", "nn.relu", "--random", "x=float[2]")
    assert status == 1 and "real, int and bool" in err


def test_version(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0 and capsys.readouterr().out.startswith("refinterp ")


def test_every_option_of_every_command_has_help() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    for name, sub in commands.choices.items():
        for action in sub._actions:
            assert action.help, f"refinterp {name} {action.option_strings or action.dest}"


def test_fmt_takes_several_files_and_checks(tmp_path, capsys) -> None:
    canonical = "operator a {\n    @input {\n        x: real[n];\n    }\n}\n"
    good = write(tmp_path, canonical, "good.sknd")
    bad = write(tmp_path, "operator a { @input { x: real[n]; } }", "bad.sknd")
    status, out, err = run(capsys, "fmt", "--check", good, bad)
    assert status == 1 and out == "" and f"would reformat {bad}" in err and good not in err
    status, _, _ = run(capsys, "fmt", "-i", good, bad)
    assert status == 0 and Path(bad).read_text() == canonical
    assert run(capsys, "fmt", "--check", good, bad)[0] == 0


def test_a_name_given_twice_is_misuse(tmp_path, capsys) -> None:
    np.savez(tmp_path / "in.npz", x=np.ones(3))
    status, _, err = run(capsys, "eval", "--op", "nn.relu", "--inputs",
                         str(tmp_path / "in.npz"), "--random", "x=real[3]")
    assert status == 2 and "input 'x' is given by --inputs" in err


def test_an_unknown_input_name_is_an_error_like_an_unknown_params_entry(tmp_path,
                                                                        capsys) -> None:
    np.savez(tmp_path / "in.npz", x=np.ones(3), z=np.ones(3))
    status, _, err = run(capsys, "eval", "--op", "nn.relu", "--inputs",
                         str(tmp_path / "in.npz"))
    assert status == 1 and "no input 'z'" in err and "[E0304]" in err


def test_random_name_uses_the_declared_fixed_shape(tmp_path, capsys) -> None:
    path = write(tmp_path, GRAPH)
    status, out, _ = run(capsys, "eval", path, "--random-inputs", "--json")
    assert status == 0 and json.loads(out)["outputs"]["y"]["shape"] == [1, 4, 8, 8]
    status, out, _ = run(capsys, "eval", path, "--random", "x", "--random", "w", "--json")
    assert status == 0 and json.loads(out)["outputs"]["y"]["min"] >= 0.0
    status, _, err = run(capsys, "eval", "--op", "nn.relu", "--random", "x")
    assert status == 1 and "no fixed declared shape" in err


def test_a_negative_loop_count_is_an_error(tmp_path, capsys) -> None:
    text = """import nn;
graph G {
    @input { x: real[2]; }
    @output { y: real[2]; }
    @compose { y = with z = x do..(-1) nn.relu(z); }
}
"""
    status, _, err = run(capsys, "eval", write(tmp_path, text), "--input", "x=[1.0, 2.0]")
    assert status == 1 and "negative" in err and "[E0607]" in err


# ------------------------------------------------------------------ the CLI holds no semantics


def test_cli_imports_only_the_api_io_diagnostics_and_value_printing() -> None:
    """The cli package is argument parsing, file I/O through refinterp.io and rendering: every
    refinterp module outside the package that it imports is one of these four
    (docs/architecture.md)."""
    import ast as python_ast

    folder = REPO_ROOT / "refinterp" / "cli"
    nodes = [n for path in sorted(folder.glob("*.py"))
             for n in python_ast.walk(python_ast.parse(path.read_text()))]
    imported = set()
    for node in nodes:
        if isinstance(node, python_ast.ImportFrom) and node.module == "refinterp":
            imported.update(f"refinterp.{alias.name}" for alias in node.names)
        elif isinstance(node, python_ast.ImportFrom) and node.module and \
                node.module.startswith("refinterp."):
            imported.add(node.module)
    imported = {m for m in imported if not m.startswith("refinterp.cli")}
    assert imported and imported <= {"refinterp.api", "refinterp.io", "refinterp.golden",
                                     "refinterp.harness", "refinterp.trace", "refinterp.einsum",
                                     "refinterp.__version__",
                                     "refinterp.core.diagnostics",
                                     "refinterp.core.files",  # fmt -i: an atomic rewrite
                                     "refinterp.language.values"}, imported


# ------------------------------------------------------------------ progress of a long run


def test_a_long_run_reports_which_operators_are_running() -> None:
    from refinterp import api

    seen: list[tuple[list[str], float]] = []
    # large enough to last several intervals on the scalar engine's generated code
    a = np.arange(80 * 96, dtype=float).reshape(80, 96) / 100
    b = np.ones((96, 64))
    hooks = api.Hooks(progress=lambda running, seconds: seen.append((running, seconds)),
                      progress_interval=0.01)
    run = api.evaluate("linalg.matmul", inputs={"A": a, "B": b}, engine="scalar", hooks=hooks)
    assert np.allclose(run.outputs["Z"], a @ b)
    assert seen and seen[0][0][0] == "matmul" and all(s > 0 for _, s in seen)


def test_progress_lines_go_to_stderr(capsys) -> None:
    from refinterp.cli import progress_line

    progress_line(["G", "nn.conv"], 12.3)
    assert capsys.readouterr().err == "refinterp: still running G > nn.conv (12 s)\n"


# ------------------------------------------------------------------ --json on every command


@pytest.mark.parametrize("args", [
    ["parse", "{bad}"], ["fmt", "{bad}"], ["expr", "1 +"], ["ops", "nosuchmodule"],
    ["describe", "nn.nope"], ["shapes", "{bad}"], ["eval", "{bad}"]])
def test_json_errors_on_every_command(tmp_path, capsys, args) -> None:
    bad = write(tmp_path, "operator a { @input { x: real[n] } }", "bad.sknd")
    status, out, err = run(capsys, *[a.replace("{bad}", bad) for a in args], "--json")
    data = json.loads(out)
    error = data["error"] if "error" in data else data["files"][0]["error"]
    assert status == 1 and err == "" and error["code"].startswith("E")
    assert set(error) == {"code", "severity", "message", "location", "related", "notes", "stack"}


def test_json_results_carry_warnings(tmp_path, capsys) -> None:
    path = write(tmp_path, "operator a { @input { x: real[n]; } @output { y: real[n]; } "
                           "@lower { y[i] = x[i], i < n; } }")
    status, out, err = run(capsys, "eval", path, "--input", "x=[1.0]", "--verbose", "--json")
    data = json.loads(out)
    assert status == 0 and err == "" and data["warnings"][0]["code"] == "N0001"
    assert data["warnings"][0]["message"].startswith("engine: a")


@pytest.mark.parametrize("args, message", [
    (["eval", "--op", ".relu"], "no standard module ''"),
    (["eval", "--op", "nnn.relu", "--random", "x=real[2]"], "did you mean 'nn'?"),
    (["eval", "--op", "nn.relu", "--random", "x=real[2]", "--seed", "-1"],
     "a seed is a non-negative int"),
])
def test_odd_operator_names_and_seeds_are_diagnostics(capsys, args, message) -> None:
    """Odd operator names and seeds are diagnostics, never internal errors; a bad option
    value (--seed -1) is command-line misuse, exit 2."""
    status, _, err = run(capsys, *args)
    assert status == (2 if "--seed" in args else 1) and message in err, err


# ------------------------------------------------------------------ the package's own layout


def test_each_command_is_one_module_with_its_parser_and_its_action() -> None:
    """`main` builds the parser from the command modules: `cmd_NAME.py` for every command,
    each with `add_parser` and `run`, and no command module besides."""
    from refinterp import cli

    folder = REPO_ROOT / "refinterp" / "cli"
    assert sorted(cli.COMMANDS) == sorted(p.stem[4:] for p in folder.glob("cmd_*.py"))
    for name in cli.COMMANDS:
        module = cli.command_module(name)
        assert callable(module.add_parser) and callable(module.run), name


def test_the_cli_modules_import_one_way() -> None:
    """__init__ -> cmd_* -> arrays -> options -> output: a module of the package imports only
    modules below it (so there is no import circle), lazily imported ones included."""
    import ast as python_ast

    # golden_generate: the `golden generate` action, which cmd_golden registers
    rank = {"output": 0, "options": 1, "arrays": 2, "golden_generate": 2.5, "cmd": 3,
            "__init__": 4}
    folder = REPO_ROOT / "refinterp" / "cli"
    wrong = []
    for path in sorted(folder.glob("*.py")):
        own = rank[path.stem.partition("_")[0] if path.stem.startswith("cmd_") else path.stem]
        for node in python_ast.walk(python_ast.parse(path.read_text())):
            names = []
            if isinstance(node, python_ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, python_ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[:2] != ["refinterp", "cli"] or len(parts) < 3:
                    continue
                stem = parts[2]
                target = rank.get("cmd" if stem.startswith("cmd_") else stem)
                if target is not None and target >= own:
                    wrong.append(f"{path.name} imports {name}")
    assert not wrong, wrong
