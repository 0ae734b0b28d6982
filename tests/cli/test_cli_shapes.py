"""`refinterp shapes`: instantiate an operator from the command line."""

from __future__ import annotations

import json
from pathlib import Path

from refinterp.cli import main
from testsupport.paths import REPO_ROOT

CORPUS = REPO_ROOT / "spec_tests" / "corpus"
CONV = str(CORPUS / "4_4_1_linear_operators_02.sknd")
PACKS = """operator f {
    @input { xs: real[n]..(k); }
    @output { ys: real[n]..(k); total: real[n * k]; }
}
"""


def run(capsys, *args: str) -> tuple[int, str, str]:
    status = main(["shapes", *args])
    captured = capsys.readouterr()
    return status, captured.out.strip(), captured.err


def test_json_output(capsys) -> None:
    status, out, _ = run(capsys, CONV, "--input", "input=real[1,3,8,8]",
                         "--input", "filter=real[4,3,3,3]", "--attrib", "stride=2", "--json")
    assert status == 0
    assert json.loads(out) == {"outputs": {"output": {"type": "real", "shape": [1, 4, 4, 4]}}}


def test_text_output_and_symbols(capsys) -> None:
    status, out, _ = run(capsys, CONV, "--input", "input=real[1,3,8,8]",
                         "--input", "filter=real[4,3,3,3]", "--symbols")
    assert status == 0 and out.splitlines()[0] == "output: real[1, 4, 8, 8]"
    assert "  d = 2" in out.splitlines()


def test_pack_inputs_whole_and_per_item(tmp_path: Path, capsys) -> None:
    path = tmp_path / "f.sknd"
    path.write_text(PACKS)
    status, out, _ = run(capsys, str(path), "--input", "xs=real[4]..(3)", "--json")
    data = json.loads(out)["outputs"]
    assert status == 0 and data["ys"] == [{"type": "real", "shape": [4]}] * 3
    assert data["total"] == {"type": "real", "shape": [12]}
    status, out, _ = run(capsys, str(path), "--input", "xs.0=real[2]", "--input", "xs.1=real[2]",
                         "--json")
    assert json.loads(out)["outputs"]["total"]["shape"] == [4]
    status, _, err = run(capsys, str(path), "--input", "xs.1=real[2]")
    assert status == 1 and "without gaps" in err


def test_failed_assertion_is_a_diagnostic(capsys) -> None:
    status, _, err = run(capsys, CONV, "--input", "input=real[1,3,8,8]",
                         "--input", "filter=real[4,3,3,3]", "--attrib", "dilation=0")
    assert status == 1
    assert "error: 'dilation' must be positive" in err and "dilation = [0, 0]" in err


def test_operator_selection(tmp_path: Path, capsys) -> None:
    path = tmp_path / "two.sknd"
    path.write_text("operator a { }\noperator b { @output { y: real[]; } }\n")
    status, _, err = run(capsys, str(path))
    assert status == 1 and "choose one with --op" in err and "a, b" in err
    assert run(capsys, str(path), "--op", "b")[1] == "y: real[]"
    status, _, err = run(capsys, str(path), "--op", "c")
    assert status == 1 and "candidates: a, b" in err


def test_bad_input_syntax(capsys) -> None:
    status, _, err = run(capsys, CONV, "--input", "input=real(1,3)")
    assert status == 1 and "NAME=TYPE[EXTENTS]" in err


def test_explicit_generic_types(tmp_path: Path, capsys) -> None:
    path = tmp_path / "g.sknd"
    path.write_text("operator f { @dtype { T: num; } @attrib { n: int; } "
                    "@output { y: T[n]; } }\n")
    status, _, err = run(capsys, str(path), "--attrib", "n=2")
    assert status == 1 and "cannot be deduced" in err
    assert run(capsys, str(path), "--attrib", "n=2", "--generic", "int")[1] == "y: int[2]"
