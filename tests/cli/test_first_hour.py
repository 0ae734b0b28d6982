"""The first hour with refinterp on the command line: what a new user runs into first. Small
outputs print their values; a nested list given to --input is a rank-2 array; did-you-mean
looks in every module and never offers a private name; a file that is no SkriptND text is named
for what it is; `check --json -` writes its report to stdout; --shrink prints its result with
its case and leaves no folder behind; misuse prints the usage of the command misused.
Expected values are computed here (Python's float repr, NumPy) or written by hand."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

from refinterp.cli import main
from testsupport.paths import REPO_ROOT

SUITE = REPO_ROOT / "golden"


def run(capsys, *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


# ------------------------------------------------------------------ values of small outputs


def test_eval_prints_the_values_of_a_small_output(capsys) -> None:
    status, out, _ = run(capsys, "eval", "--op", "nn.relu", "--input",
                         "x=[[-1.0, 2.0], [3.0, -4.0]]")
    assert status == 0
    assert out.splitlines() == ["output  dtype  shape   min  max  mean",
                                "y       real   [2, 2]  0    3    1.25",
                                "y = [[0. 2.]",
                                "     [3. 0.]]"]


def test_values_print_with_the_digits_that_read_back(capsys) -> None:
    status, out, _ = run(capsys, "eval", "--op", "math.add", "--input", "x=[0.1, 1.0]",
                         "--input", "y=[0.2, 2.0]")
    assert status == 0
    third = repr(0.1 + 0.2)  # 0.30000000000000004: the shortest text of that float64
    assert out.splitlines()[-1] == f"z = [{third} 3.                 ]"
    assert float(out.splitlines()[-1].split("[")[1].split()[0]) == 0.1 + 0.2


@pytest.mark.parametrize("count, printed", [(64, True), (65, False)])
def test_only_outputs_of_at_most_64_elements_print_their_values(count, printed,
                                                               capsys) -> None:
    status, out, _ = run(capsys, "eval", "--op", "nn.relu", "--random", f"x=real[{count}]")
    assert status == 0
    assert any(line.startswith("y = [") for line in out.splitlines()) == printed
    assert len(out.splitlines()) > 1  # the summary table always


def test_eval_json_keeps_its_summary_only(capsys) -> None:
    status, out, _ = run(capsys, "eval", "--op", "nn.relu", "--input", "x=[-1.0, 3.0]",
                         "--json")
    assert status == 0
    assert json.loads(out)["outputs"]["y"] == {"dtype": "real", "shape": [2], "min": 0.0,
                                               "max": 3.0, "mean": 1.5}


# ------------------------------------------------------------------ nested input literals


def test_a_nested_input_literal_is_a_rank_2_array(tmp_path, capsys) -> None:
    out = tmp_path / "out.npz"
    status, _, err = run(capsys, "eval", "--op", "nn.relu", "--input",
                         "x=[[1.0, -2.0, 3.0]]", "-o", str(out))
    assert status == 0, err
    y = np.load(out)["y"]
    assert y.shape == (1, 3) and y.tolist() == [[1.0, 0.0, 3.0]]


def test_a_rank_3_input_literal(tmp_path, capsys) -> None:
    out = tmp_path / "out.npz"
    status, _, err = run(capsys, "eval", "--op", "math.neg", "--input",
                         "x=[[[1, 2]], [[3, 4]]]", "-o", str(out))
    assert status == 0, err
    assert np.load(out)["y"].tolist() == [[[-1, -2]], [[-3, -4]]]


@pytest.mark.parametrize("literal, message", [
    ("[[1.0, 2.0], [3.0]]", "a ragged array: this row is real[1], the first real[2]"),
    ("[[1.0, 2.0], 3.0]", "a ragged array: every item of a list of lists must be a list"),
    ("[[1.0, 2.0], [3, 4]]", "a ragged array: this row is int[2], the first real[2]"),
])
def test_a_ragged_input_literal_is_a_positioned_diagnostic(literal, message, capsys) -> None:
    status, _, err = run(capsys, "eval", "--op", "nn.relu", "--input", f"x={literal}")
    col = literal.index("], ") + len("], ") + 1  # the second row, 1-based
    assert status == 1
    assert err.splitlines()[0] == f"<input x>:1:{col}: error: {message} [E0901]"


def test_an_attribute_literal_keeps_skriptnd_meaning(capsys) -> None:
    """In SkriptND `[[1, 0]]` is a pack inside a list (an error), not a matrix."""
    status, _, err = run(capsys, "shapes", "--op", "layout.transpose", "--input",
                         "input=real[2,3]", "--attrib", "axes=[[1, 0]]")
    assert status == 1
    assert "a pack inside a list must be expanded" in err and "[E0400]" in err


# ------------------------------------------------------------------ did you mean


def test_describe_suggests_a_close_name_of_another_module(capsys) -> None:
    status, _, err = run(capsys, "describe", "math.sofmax")
    assert status == 1
    assert "  did you mean nn.softmax or max?" in err.splitlines()


def test_eval_op_suggests_the_same(capsys) -> None:
    status, _, err = run(capsys, "eval", "--op", "nn.sofmax", "--input", "x=[1.0]")
    assert status == 1 and "  did you mean softmax?" in err.splitlines()


def test_no_private_name_is_suggested_or_listed(capsys) -> None:
    status, _, err = run(capsys, "describe", "nn.lstm_step")
    assert status == 1
    assert "_lstm" not in err  # neither suggested nor among the candidates
    assert "did you mean lstm?" in err and "candidates: " in err and ", lstm" in err
    status, _, err = run(capsys, "describe", "nn._lstm_stp")  # a private name: its kin
    assert "did you mean _lstm_step" in err
    status, out, _ = run(capsys, "ops", "nn")
    assert status == 0 and "nn.lstm(" in out and "nn._lstm" not in out
    status, out, _ = run(capsys, "ops", "nn", "--private")
    assert status == 0 and "nn._lstm_step(" in out


GRAPH = """import math;
import mylib;
operator _helper {
    @input { x: real[n]; }
    @output { y: real[n]; }
    @compose { y = math.neg(x); }
}
graph G {
    @input { x: real[3]; }
    @output { y: real[3]; }
    @compose { y = CALL(x); }
}
"""
MYLIB = """operator scale {
    @input { x: real[n]; }
    @output { y: real[n]; }
    @compose { y = x; }
}
"""


@pytest.mark.parametrize("call, note", [
    ("math.sofmax", "did you mean nn.softmax or math.max?"),
    ("mylib.scael", "did you mean mylib.scale?"),  # no other module's name is closer
    ("scael", "did you mean mylib.scale or "),  # the module itself has none close
    ("_helpr", "did you mean _helper?"),
    ("helpr", None),  # a private name is offered only for a private name
    ("nn._lstm_stp", None),  # nn is not imported here
])
def test_unknown_operators_in_a_program_get_notes_from_every_module(call, note, tmp_path,
                                                                   capsys) -> None:
    (tmp_path / "mylib.sknd").write_text(MYLIB)
    path = tmp_path / "g.sknd"
    path.write_text(GRAPH.replace("CALL", call))
    status, _, err = run(capsys, "shapes", str(path))
    assert status == 1 and f"unknown operator '{call}' [E0601]" in err
    assert "_helper" not in err.replace("_helpr", "") or call == "_helpr"
    assert "_lstm" not in err.replace(call, "")
    if note is not None:
        notes = [line.strip() for line in err.splitlines() if line.startswith("  did you")]
        assert len(notes) == 1 and notes[0].startswith(note)
        assert note.endswith(" or ") or notes[0] == note


# ------------------------------------------------------------------ files that are no text


def onnx_bytes() -> bytes:
    """The start of an ONNX ModelProto written by hand: ir_version 8 (field 1, varint), then
    producer_name "pytorch" (field 2, length-delimited), then a graph field (7)."""
    return b"\x08\x08\x12\x07pytorch" + b"\x3a\x04\x0a\x01x\x00"


def non_text_files(folder: Path) -> dict[str, tuple[Path, str, str]]:
    """name -> (file, message, where) of each kind of file that is no SkriptND text."""
    files = {}

    def put(name: str, data: bytes, message: str, where: str = "1:1") -> None:
        path = folder / name
        path.write_bytes(data)
        files[name] = (path, message, where)
    put("model.onnx", onnx_bytes(), "this is an ONNX model (protobuf), not SkriptND text")
    put("onnx.sknd", onnx_bytes(), "this is an ONNX model (protobuf), not SkriptND text")
    np.savez(folder / "arrays.npz", x=np.zeros(2))
    files["arrays.npz"] = (folder / "arrays.npz", "this is a zip archive (a NumPy .npz file "
                           "is one), not SkriptND text", "1:1")
    np.save(folder / "array.npy", np.zeros(2))
    files["array.npy"] = (folder / "array.npy", "this is a NumPy .npy array, not SkriptND "
                          "text", "1:1")
    put("bom16.sknd", "operator f {}\n".encode("utf-16"), "this is UTF-16 text, not SkriptND "
        "text")
    put("le16.sknd", "operator f {}\n".encode("utf-16-le"), "this is UTF-16 text, not "
        "SkriptND text")
    put("random.sknd", bytes(range(256)) * 4, "this is a binary file, not SkriptND text")
    put("nul.sknd", b"operator f {\n  @input { x\0: real[2]; }\n}\n",
        "this file holds a NUL byte: it is not SkriptND text", "2:13")
    return files


@pytest.mark.parametrize("command", ["eval", "shapes", "parse", "lint", "fmt"])
def test_a_file_that_is_no_skriptnd_text_is_named_as_such(command, tmp_path, capsys) -> None:
    for name, (path, message, where) in non_text_files(tmp_path).items():
        status, _, err = run(capsys, command, str(path))
        assert status == 1, name
        assert err.splitlines()[0] == f"{path}:{where}: error: {message} [E0803]", name
        assert "unexpected character" not in err


def test_the_onnx_note_points_to_the_converter(tmp_path, capsys) -> None:
    (path, _, _) = non_text_files(tmp_path)["model.onnx"]
    status, out, _ = run(capsys, "parse", "--json", str(path))
    error = json.loads(out)["files"][0]["error"]
    assert status == 1 and error["code"] == "E0803"
    assert error["location"]["line"] == 1 and error["location"]["col"] == 1
    assert error["notes"] == ["convert it to SkriptND with the Khronos NNEF-Tools converter "
                              "(docs/api.md, \"Files that are not SkriptND text\")"]


def test_an_imported_module_that_is_no_text_is_named_too(tmp_path, capsys) -> None:
    (tmp_path / "lib.sknd").write_bytes("operator f {}\n".encode("utf-16"))
    main_file = tmp_path / "g.sknd"
    main_file.write_text("import lib;\n")
    status, _, err = run(capsys, "parse", str(main_file))
    assert status == 1
    assert f"{tmp_path / 'lib.sknd'}:1:1: error: this is UTF-16 text, not SkriptND text " \
           f"[E0803]" in err


def test_a_real_onnx_model_is_recognised(tmp_path, capsys) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    path = tmp_path / "model.sknd"  # misnamed: recognised by its bytes
    path.write_bytes(helper.make_model(graph, producer_name="test").SerializeToString())
    assert onnx.load(str(path)).graph.node[0].op_type == "Relu"
    status, _, err = run(capsys, "eval", str(path))
    assert status == 1 and "this is an ONNX model (protobuf), not SkriptND text" in err


# ------------------------------------------------------------------ check: reports on stdout

ONE_CASE = ["check", str(SUITE), "--backend", "refinterp:reference", "-k", r"^nn\.relu/rank0$"]


def test_check_json_dash_writes_the_report_to_stdout(capsys) -> None:
    status, out, err = run(capsys, *ONE_CASE, "--json", "-")
    assert status == 0
    report = json.loads(out)  # stdout holds the report alone
    assert [case["id"] for case in report["cases"]] == ["nn.relu/rank0"]
    assert report["cases"][0]["status"] == "pass"
    assert "1 case(s): 1 passed" in err  # the readable summary went to stderr


def test_check_junit_dash_writes_xml_to_stdout(capsys) -> None:
    status, out, err = run(capsys, *ONE_CASE, "--junit", "-")
    assert status == 0
    root = ElementTree.fromstring(out)
    assert [case.get("name") for case in root.iter("testcase")] == ["nn.relu/rank0"]
    assert "coverage:" in err


def test_only_one_report_can_take_stdout(capsys) -> None:
    status, out, err = run(capsys, *ONE_CASE, "--json", "-", "--junit", "-")
    assert status == 2 and out == ""
    assert err.startswith("usage: refinterp check ")
    assert "refinterp check: error: --json - and --junit -: only one report can be written " \
           "to stdout" in err


# ------------------------------------------------------------------ check --shrink

SHRINK = ["check", str(SUITE), "--backend", "testsupport.faulty_backends:WrongElement",
          "-k", r"^linalg\.matmul/basic$", "--shrink", "--no-explain"]


def test_shrink_prints_with_its_case_and_removes_its_folder(tmp_path, monkeypatch,
                                                          capsys) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the search works
    status, out, _ = run(capsys, *SHRINK)
    assert status == 1
    lines = out.splitlines()
    fail = lines.index("FAIL linalg.matmul/basic [mismatch] (phase compare)")
    shrunk = lines.index("  shrink: the smallest failing case has inputs A: float64[1, 1], "
                         "B: float64[1, 1]; --keep keeps its folder")
    table = next(i for i, line in enumerate(lines) if " case(s): " in line)  # the totals
    assert fail < shrunk < table  # inside its case's block, before the summary
    assert lines[shrunk + 1].startswith("    A = [[") and lines[shrunk + 2].startswith(
        "    B = [[")
    assert list(tmp_path.iterdir()) == []  # nothing left behind


def test_shrink_keep_keeps_and_names_the_folder(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    status, out, _ = run(capsys, *SHRINK, "--keep")
    assert status == 1
    (made,) = tmp_path.iterdir()
    smallest = made / "smallest"
    assert f"; it is in {smallest} (refinterp golden show {smallest})" in out
    assert np.load(smallest / "inputs.npz")["A"].shape == (1, 1)


def test_keep_without_shrink_is_misuse(capsys) -> None:
    status, _, err = run(capsys, *ONE_CASE, "--keep")
    assert status == 2 and "refinterp check: error: --keep is for --shrink" in err


# ------------------------------------------------------------------ misuse: the command's usage


@pytest.mark.parametrize("argv, usage, message", [
    (["check"], "usage: refinterp check ",
     "refinterp check: error: check needs SUITE and --backend NAME"),
    (["check", "golden"], "usage: refinterp check ", "refinterp check: error: check needs"),
    (["golden", "verify", "golden", "-k", "("], "usage: refinterp golden verify ",
     "refinterp golden verify: error: -k: not a regular expression"),
    (["golden", "build", "x.toml"], "usage: refinterp golden build ",
     "refinterp golden build: error: the following arguments are required: -o/--output"),
    (["eval"], "usage: refinterp eval ", "refinterp eval: error: give a FILE"),
    (["shapes", "--op", "relu"], "usage: refinterp shapes ", "refinterp shapes: error: give"),
    (["ops", "--bogus"], "usage: refinterp ops ",
     "refinterp ops: error: unrecognized arguments: --bogus"),
    (["golden", "show", "x", "--bogus"], "usage: refinterp golden show ",
     "refinterp golden show: error: unrecognized arguments: --bogus"),
    (["--bogus", "ops"], "usage: refinterp [-h]",
     "refinterp: error: unrecognized arguments: --bogus"),  # before the command: the top's
])
def test_misuse_prints_the_usage_of_the_command_misused(argv, usage, message,
                                                        capsys) -> None:
    try:
        status = main(argv)
    except SystemExit as exit_:  # misuse argparse finds itself
        status = exit_.code
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith(usage) and message in err
