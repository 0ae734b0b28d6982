"""User input that once ended in an internal error (a traceback, exit 3) ends in a diagnostic
with a stable code (exit 1) or a usage error (exit 2): int(inf) in arithmetic and packs, an
extent of 10**100000 in a message, a `@lower` formula too deep for the engines, damaged case
tables and a `-k` pattern that is not a regular expression; also int(inf) as a range bound
or a tensor index, a real, bool or string as a tensor index, a string as an invocation's
argument, indexing a single value in a formula, constants of values of another type, and a
tolerance beyond a float in a golden case. Related regressions live in
test_hostile_programs.py and test_absent_optionals.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from refinterp.cli import main
from testsupport.paths import REPO_ROOT

ROOT = REPO_ROOT


def run(args: list[str], capsys) -> tuple[int, str]:
    """Exit status and standard error of `refinterp ARGS` (argparse's exit included)."""
    try:
        status = main(args)
    except SystemExit as stop:
        status = stop.code
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err
    return status, err


def run_f(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
          *options: str) -> tuple[Path, int, str]:
    """Write `text` as f.sknd and run its operator `f` on x = [1.0, 2.0]: the file, the exit
    status and the standard error (`status_and_err`)."""
    model = tmp_path / "f.sknd"
    model.write_text(text)
    status, err = status_and_err(capsys, "eval", str(model), "--op", "f", "--input",
                                 "x=[1.0, 2.0]", *options)
    return model, status, err


@pytest.mark.parametrize("text", ["int(inf) + 1", "1 - int(-inf)", "2 ** int(inf)",
                                  "int(inf) % 2", "[1 ..(int(inf))]", "[1, 2][[0, int(-inf)]]",
                                  "[1, 2, 3][int(-inf)]"])
def test_int_infinity_in_arithmetic_and_indices_is_e0402(capsys, text: str) -> None:
    status, err = run(["expr", text], capsys)
    assert status == 1 and err.startswith("<expr>:1:") and "[E0402]" in err


BIG_EXTENT = """graph G {
@input { x: real[10**100000]; }
@output { y: real[1]; }
@compose { y = x; }
}
"""


@pytest.mark.parametrize("command, code, shown", [
    (["shapes"], "E0603", "composed as real[about 1e+100000] but declared real[1]"),
    (["eval", "--random", "x=real[1]"], "E0306", "is 1, expected about 1e+100000")])
def test_an_extent_of_100000_digits_is_rounded_in_messages(tmp_path: Path, capsys,
                                                           command: list[str], code: str,
                                                           shown: str) -> None:
    path = tmp_path / "g.sknd"
    path.write_text(BIG_EXTENT)
    status, err = run([command[0], str(path), *command[1:]], capsys)
    assert status == 1 and f"[{code}]" in err and shown in err and len(err) < 2000


def test_a_lower_formula_too_deep_for_the_engines_is_e0500(tmp_path: Path, capsys) -> None:
    path = tmp_path / "f.sknd"
    terms = " + ".join(["x[i]"] * 8000)
    path.write_text(f"operator f {{\n @input {{ x: real[n]; }}\n @output {{ y: real[n]; }}\n"
                    f" @lower {{ y[i] = {terms}, i < n; }}\n}}\n")
    status, err = run(["eval", str(path), "--op", "f", "--random", "x=real[2]"], capsys)
    assert status == 1
    assert err.startswith(f"{path}:4:11: error: this formula is nested too deeply to run")
    assert "[E0500]" in err


TABLE_HEAD = 'module = "math"\n[classes]\nneg = "exact"\nadd = "arithmetic"\n'


@pytest.mark.parametrize("body", [
    '[[case]]\nop = "neg"\nname = "c"\ninputs = { x = { type = 3 } }',
    '[[case]]\nop = "neg"\nname = "c"\ninputs = 3',
    '[[case]]\nop = "neg"\nname = "c"\ninputs = { x = "real[2]" }\nattributes = 3',
    '[[case]]\nop = "neg"\nname = "c"\ninputs = { x = "real[2]" }\ngenerics = 3',
    '[[case]]\nop = "neg"\nname = "c"\ninputs = { x = "real[2]" }\ndomain = "abc"',
    '[[case]]\nop = "neg"\nname = "c"\ninputs = { x = { type = "int[2]", seed = 1e400 } }',
    '[[case]]\nop = "neg"\nname = "c"\ninputs = { x = { type = "real[2]", seed = -1 } }',
    '[[case]]\nop = "neg"\nname = "c"\ninputs = { x = { type = "real[2]", seed = [1] } }',
    '[[case]]\nop = "neg"\nname = "c"\ninputs = { x = "real[99999999999999999999]" }',
    '[[case]]\nop = "neg"\nname = "c"\ninputs = { x = "real[' + ",".join(["1"] * 70) + ']" }',
    'case = 3',
    'family = [3]',
    '[[family]]\nops = ["add"]\nkind = "elementwise"\ninputs = ["x", "y"]\ndtypes = 3',
    '[[family]]\nops = ["add"]\nkind = "elementwise"\ninputs = ["x", "y"]\nattributes = 3',
    '[[family]]\nops = ["add"]\nkind = "elementwise"\ninputs = [1, 2]',
    'classes = 3'])
def test_damaged_case_tables_are_table_errors(tmp_path: Path, capsys, body: str) -> None:
    table = tmp_path / "t.toml"
    head = TABLE_HEAD if not body.startswith("classes") else 'module = "math"\n'
    table.write_text(head + body + "\n")
    status, err = run(["golden", "build", str(table), "-o", str(tmp_path / "out")], capsys)
    assert status == 1 and err.startswith(f"{table}:") and "[E1100]" in err


@pytest.mark.parametrize("command", [["golden", "build", "{table}", "-o", "{out}"],
                                     ["golden", "verify", "{suite}"],
                                     ["check", "{suite}", "--backend-cmd", "true {inputs}"]])
def test_a_k_pattern_that_is_not_a_regular_expression_is_misuse(tmp_path: Path, capsys,
                                                                command: list[str]) -> None:
    table = tmp_path / "t.toml"
    table.write_text(TABLE_HEAD + '[[case]]\nop = "neg"\nname = "c"\ninputs = { x = "real[2]" }\n')
    (tmp_path / "suite").mkdir()
    names = {"table": str(table), "out": str(tmp_path / "out"), "suite": str(tmp_path / "suite")}
    status, err = run([part.format(**names) if part.startswith("{") and part != "{inputs}"
                       else part for part in command] + ["-k", "("], capsys)
    assert status == 2 and "-k: not a regular expression" in err


# ------------------------------------------------------------------ more of the same kinds


def status_and_err(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """The exit status and the standard error of one command, which is no internal error."""
    return run(list(argv), capsys)


@pytest.mark.parametrize("expression, position, message", [
    ("[0:int(inf)]", "<expr>:1:4:", "a range cannot run from, to or by int(inf)"),
    ("[int(-inf):3]", "<expr>:1:2:", "a range cannot run from, to or by int(-inf)"),
    ("[0:3:int(-inf)]", "<expr>:1:6:", "a range cannot run from, to or by int(-inf)"),
    ("[1, 2, 3][int(-inf)] <- 4", "<expr>:1:11:",
     "index int(-inf) is out of range for length 3")])
def test_infinite_ints_are_no_range_bound(capsys, expression: str, position: str,
                                          message: str) -> None:
    """A range of int(inf) items has no length (a TypeError from Python's range before)."""
    status, err = status_and_err(capsys, "expr", expression)
    assert status == 1
    assert err.startswith(f"{position} error: {message}") and "[E0402]" in err


def test_infinite_slice_bounds_still_clip(capsys) -> None:
    """§2.4 (docs/semantics.md "Slices"): as slice bounds they lie beyond every position."""
    assert main(["expr", "[1, 2, 3][int(-inf):int(inf)]"]) == 0
    assert capsys.readouterr().out.strip() == "[1, 2, 3]"


@pytest.mark.parametrize("engine", ["scalar", "vector"])
@pytest.mark.parametrize("value", ["int(inf)", "int(-inf)"])
def test_an_infinite_tensor_index_is_out_of_range(tmp_path: Path, capsys, engine: str,
                                                  value: str) -> None:
    """In a @lower formula: beyond every position, so out of range (a TypeError before); a
    guarded index `|k|` beyond the extent skips its iterations."""
    model, status, err = run_f(
        tmp_path, capsys,
        f"operator f {{\n    @attrib {{ k: int = {value}; }}\n"
        f"    @input {{ x: real[n]; }}\n    @output {{ y: real[n]; z: real[n]; }}\n"
        f"    @lower {{\n        y[i] = x[|k|] + 1.0, i < n;\n"
        f"        z[i] = x[k], i < n;\n    }}\n}}\n", "--engine", engine)
    assert status == 1
    assert err.startswith(f"{model}:7:16: error: index [{value}] is out of range for 'x' of "
                          f"shape [2] [E0501]")


@pytest.mark.parametrize("engine", ["scalar", "vector"])
@pytest.mark.parametrize("index, shown", [("1.5", "1.5"), ("true", "true"), ("'a'", '"a"'),
                                          ("|'a'|", '"a"'), ("|i + 5 <> 0 : 'a'|", '"a"')])
def test_a_tensor_index_that_is_no_int_is_a_diagnostic(tmp_path: Path, capsys, engine: str,
                                                       index: str, shown: str) -> None:
    """A string was a ValueError or TypeError; a real or a bool was silently truncated."""
    model, status, err = run_f(
        tmp_path, capsys,
        "operator f {\n    @input { x: real[n]; }\n    @output { y: real[n]; }\n"
        f"    @lower {{ y[i] = x[{index}], i < n; }}\n}}\n", "--engine", engine)
    assert status == 1
    assert err.startswith(f"{model}:4:23: error: a tensor index must be an int; got {shown} "
                          f"[E0503]")


@pytest.mark.parametrize("command", ["eval", "shapes"])
def test_a_string_argument_of_an_invocation_is_a_diagnostic(tmp_path: Path, capsys,
                                                            command: str) -> None:
    """Was a KeyError ('str') making the string a tensor."""
    model, status, err = run_f(
        tmp_path, capsys,
        "import math;\noperator f {\n    @input { x: real[n]; }\n"
        "    @output { y: real[n]; }\n    @compose { y = math.add(x, 'a'); }\n}\n")
    given = "x=[1.0]" if command == "eval" else "x=real[1]"
    status, err = status_and_err(capsys, command, str(model), "--op", "f", "--input", given)
    assert status == 1
    assert err.startswith(f"{model}:5:32: error: a string is not a tensor; a compile-time "
                          f"scalar argument is a real, an int or a bool [E0600]")


def test_an_input_of_ten_to_the_100000_elements_is_a_size_diagnostic(tmp_path: Path,
                                                                      capsys) -> None:
    """The size in the E1200 message was an OverflowError (true division into a float)."""
    model = tmp_path / "g.sknd"
    model.write_text("graph G {\n    @input { x: real[10 ** 100000]; }\n"
                     "    @output { y: real[1]; }\n    @compose { y = x; }\n}\n")
    status, err = status_and_err(capsys, "eval", str(model), "--random-inputs")
    assert status == 1
    assert err.startswith(f"{model}:2:14: error: input 'x' (real[about 1e+100000]) would take "
                          f"about 8e+100000 bytes, above the tensor size limit of 1073741824 "
                          f"bytes (1 GiB) [E1200]")


@pytest.mark.parametrize("engine", ["scalar", "vector"])
def test_a_formula_too_deep_is_reported_by_both_engines(tmp_path: Path, capsys,
                                                        engine: str) -> None:
    chain = " + ".join(["x[i]"] * 10_000)
    model, status, err = run_f(
        tmp_path, capsys,
        "operator f {\n    @input { x: real[n]; }\n    @output { y: real[n]; }\n"
        f"    @lower {{\n        y[i] = {chain}, i < n;\n    }}\n}}\n", "--engine", engine)
    assert status == 1
    assert err.startswith(f"{model}:5:9: error: this formula is nested too deeply to run "
                          f"(10002 levels of operators and operands) [E0500]")


def test_a_formula_of_a_thousand_terms_runs(tmp_path: Path, capsys) -> None:
    model = tmp_path / "f.sknd"
    chain = " + ".join(["x[i]"] * 1000)
    model.write_text("operator f {\n    @input { x: real[n]; }\n    @output { y: real[n]; }\n"
                     f"    @lower {{ y[i] = {chain}, i < n; }}\n}}\n")
    assert main(["eval", str(model), "--op", "f", "--input", "x=[1.0, 2.0]", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["outputs"]["y"]
    assert (summary["min"], summary["max"]) == (1000.0, 2000.0)


@pytest.mark.parametrize("entry, message", [
    ('inputs = { x = { type = "real[2]", seed = "abc" } }', "seed 'abc' is not an int >= 0"),
    ('inputs = { x = { type = "real[2]", values = ["a", 2] } }',
     "values do not fit real[2]: could not convert string to float: 'a'"),
    ('inputs = { x = { type = "int[2]", values = [100000000000000000000000, 2] } }',
     "values do not fit int[2]"),
    ('inputs = { x = { type = "int[2]", range = [0.5, 0.7] } }',
     "range [0.5, 0.7] holds no int to draw")])
def test_odd_values_of_a_table_input_are_table_errors(tmp_path: Path, capsys, entry: str,
                                                      message: str) -> None:
    table = tmp_path / "t.toml"
    table.write_text(f'module = "math"\n[classes]\nneg = "exact"\n[[case]]\nop = "neg"\n'
                     f'name = "c"\n{entry}\n')
    status, err = status_and_err(capsys, "golden", "build", str(table), "-o",
                                 str(tmp_path / "out"))
    assert status == 1
    assert err.startswith(f"{table}:4:1: error: case #1 (neg/c): ") and message in err
    assert "[E1100]" in err


def test_a_tolerance_beyond_a_float_is_a_problem_of_the_case(tmp_path: Path, capsys) -> None:
    """An atol of 10**400 in case.json was an OverflowError in `golden verify`."""
    case = tmp_path / "case"
    shutil.copytree(ROOT / "golden" / "math.neg" / "rank0", case)
    manifest = json.loads((case / "case.json").read_text())
    manifest["outputs"]["y"]["tolerance"]["float64"]["atol"] = 10 ** 400
    (case / "case.json").write_text(json.dumps(manifest))
    status, err = status_and_err(capsys, "golden", "verify", str(case))
    assert status == 1
    assert "outputs['y'].tolerance.float64.atol must be a finite number" in err


@pytest.mark.parametrize("engine", ["scalar", "vector"])
def test_indexing_a_single_value_in_a_formula_is_a_diagnostic(tmp_path: Path, capsys,
                                                              engine: str) -> None:
    """`inf[0:i]` (a slice of a real, computed per iteration) was a TypeError."""
    model, status, err = run_f(
        tmp_path, capsys,
        "operator f {\n    @input { x: real[n]; }\n    @output { y: real[n]; }\n"
        "    @lower { y[i] = inf[0:i] + .., i < n; }\n}\n", "--engine", engine)
    assert status == 1
    assert err.startswith(f"{model}:4:21: error: only a pack or a tensor can be indexed; got "
                          f"inf [E0503]")


@pytest.mark.parametrize("declaration, message", [
    ("real[2] = 'ab'", "the real constant 'c' gets \"ab\""),
    ("real[2] = x", "the real constant 'c' gets real[2]"),
    ("real[2] = 'a', i < 2", "the real constant 'c' gets \"a\""),
    ("int[2] = [1, 10 ** 30]", "the int constant 'c' gets 1000000000000000000000000000000, "
                               "which does not fit in int64"),
    ("int[2] = 1.5", "the int constant 'c' gets 1.5"),
    ("bool[2] = 2", "the bool constant 'c' gets 2")])
def test_a_constant_of_values_of_another_type_is_a_diagnostic(tmp_path: Path, capsys,
                                                              declaration: str,
                                                              message: str) -> None:
    """Strings, tensors and ints beyond int64 were ValueErrors, TypeErrors and OverflowErrors
    filling the array; a real in an int constant was truncated."""
    model, status, err = run_f(
        tmp_path, capsys,
        "operator f {\n    @input { x: real[n]; }\n"
        f"    @constant {{ c: {declaration}; }}\n    @output {{ y: real[n]; }}\n"
        "    @lower { y[i] = x[i], i < n; }\n}\n")
    assert status == 1
    assert err.startswith(f"{model}:3:") and f"error: {message} [E0300]" in err


def test_infinite_ints_fill_constants_with_extreme_values(tmp_path: Path) -> None:
    """int(inf) and int(-inf) are the int64 extremes in an int tensor, ±inf in a real one."""
    model = tmp_path / "f.sknd"
    model.write_text("operator f {\n    @input { x: real[n]; }\n    @constant {\n"
                     "        c: int[2] = [int(-inf), int(inf)];\n        r: real[1] = int(-inf);\n"
                     "    }\n    @output { y: int[2]; z: real[1]; }\n"
                     "    @lower { y[i] = c[i], i < 2; z[i] = r[i], i < 1; }\n}\n")
    out = tmp_path / "out.npz"
    assert main(["eval", str(model), "--op", "f", "--input", "x=[1.0]", "-o", str(out)]) == 0
    with np.load(out) as arrays:
        assert arrays["y"].tolist() == [-2 ** 63, 2 ** 63 - 1]
        assert arrays["z"].tolist() == [float("-inf")]
