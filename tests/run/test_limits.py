"""The limits of a run (docs/limits.md): every input ends in a diagnostic (exit 1) or
command-line misuse (exit 2) — never an internal error (exit 3) or a run that does not end.
Every test here is fast: the limits are checked before anything big is allocated or run, so
a test that took long would itself show a missing check.

Expected byte counts and defaults are written out by hand (from docs/limits.md), never taken
from refinterp."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

import refinterp.api as ri
from refinterp.cli import build_parser, main
from refinterp.io import read_arrays
from testsupport.paths import REPO_ROOT

ROOT = REPO_ROOT

PROGRAM = """import math;

operator square {
    @attrib { n: int; }
    @input { x: real[]; }
    @output { y: real[n, n]; }
    @lower { y[i, j] = x[], i < n, j < n; }
}

operator reduce {
    @attrib { n: int; }
    @input { x: real[]; }
    @output { y: real[]; }
    @lower { y[] += x[] * 0.5, i < n; }
}

operator constant {
    @attrib { n: int; }
    @input { x: real[]; }
    @constant { c: real[n] = 1.0; }
    @output { y: real[]; }
    @compose { y = math.add(x, x); }
}

operator defaulted {
    @attrib { n: int; }
    @input { x: real[n] = 0.0; k: real[]; }
    @output { y: real[]; }
    @lower { y[] = k[]; }
}

operator carried {
    @attrib { n: int; }
    @input { x: real[]; }
    @output { y: real[]; }
    @compose {
        h = with h: real[n] = x do..(1) math.add(h, h);
        y = x;
    }
}

operator split {
    @attrib { n: int; }
    @input { x: real[]; }
    @output { ys: real[]..(n); }
    @lower { ys[k][] = x[], k < n; }
}

operator scan {
    @input { x: real[]; }
    @output { y: real[]; }
    @compose {
        h, ys = with h = x do..(30) { a = math.add(h, x); yield a, a; };
        y = h;
    }
}

operator huge_int {
    @input { x: int[]; }
    @output { y: int[]; }
    @compose { y = math.add(x, 729835811307233063839); }
}

operator forever {
    @input { x: int[]; }
    @output { y: int[]; }
    @compose { y = with s = x while true do math.add(s, s); }
}

operator recurse {
    @input { x: int[]; }
    @output { y: int[]; }
    @compose { y = recurse(x); }
}
"""


@pytest.fixture
def program(tmp_path: Path) -> str:
    path = tmp_path / "limits.sknd"
    path.write_text(PROGRAM)
    return str(path)


def line_of(needle: str) -> int:
    return PROGRAM.splitlines().index(next(l for l in PROGRAM.splitlines() if needle in l)) + 1


def cli(capsys, *args: str) -> tuple[int, dict | None, str]:
    """Run the command line with --json: (status, the JSON error or None, stderr)."""
    status = main([*args, "--json"])
    captured = capsys.readouterr()
    data = json.loads(captured.out) if captured.out.strip() else {}
    return status, data.get("error"), captured.err


def expect_limit(capsys, code: str, option: str, *args: str) -> dict:
    """The command ends with the diagnostic `code`, naming the option that raises the limit."""
    status, error, err = cli(capsys, *args)
    assert status == 1, err
    assert error["code"] == code, error
    assert any(option in note for note in error["notes"]), error
    return error


def expect_usage(capsys, text: str, *args: str) -> None:
    """The command is command-line misuse: exit 2 with a message naming the option."""
    status = main(list(args))
    err = capsys.readouterr().err
    assert status == 2, err
    assert text in err, err


# ------------------------------------------------------------------ item 2: memory


@pytest.mark.parametrize("shape, size", [
    ("100000,100000", "80000000000 bytes"),
    ("99999999999999999999999", "799999999999999999999992 bytes"),
    ("2147483648,2147483648", "36893488147419103232 bytes"),
    ("0,2147483648,2147483648", "36893488147419103232 bytes"),  # empty, but NumPy refuses it
])
def test_random_inputs_above_the_tensor_size_are_diagnostics(capsys, shape, size) -> None:
    error = expect_limit(capsys, "E1200", "--max-tensor-size",
                         "eval", "--op", "math.neg", "--random", f"x=real[{shape}]")
    assert size in error["message"] and "1073741824 bytes (1 GiB)" in error["message"]


def test_the_tensor_size_limit_is_an_option(capsys) -> None:
    error = expect_limit(capsys, "E1200", "--max-tensor-size", "eval", "--op", "math.neg",
                         "--random", "x=bool[2000]", "--max-tensor-size", "1K")
    assert "2000 bytes" in error["message"] and "1024 bytes" in error["message"]
    assert main(["eval", "--op", "math.neg", "--random", "x=real[100]",
                 "--max-tensor-size", "1K"]) == 0  # 800 bytes


def sparse_npy(path: Path, shape: tuple[int, ...]) -> Path:
    """An .npy file of float64 zeros of `shape` that takes no disk space (sparse): reading its
    data would take seconds and gigabytes."""
    header = {"descr": "<f8", "fortran_order": False, "shape": shape}
    with open(path, "wb") as stream:
        np.lib.format.write_array_header_1_0(stream, header)
        stream.truncate(stream.tell() + 8 * int(np.prod(shape)))
    return path


def test_an_npy_header_above_the_limit_is_refused_before_its_data_is_read(tmp_path,
                                                                         capsys) -> None:
    big = sparse_npy(tmp_path / "big.npy", (2 ** 28,))  # 2 GiB of data
    error = expect_limit(capsys, "E1200", "--max-tensor-size",
                         "eval", "--op", "math.neg", "--input", f"x={big}")
    assert "2147483648 bytes" in error["message"] and "big.npy" in error["message"]


def test_an_npz_member_above_the_limit_is_refused(tmp_path) -> None:
    archive = tmp_path / "in.npz"
    np.savez(archive, a=np.zeros(3), b=np.zeros(300, dtype=np.float32))  # b: 2400 bytes held
    with pytest.raises(ri.Error) as raised:
        read_arrays(archive, "--inputs", max_tensor_size=2000)
    assert raised.value.code == "E1200" and "member 'b.npy'" in raised.value.message
    assert "2400 bytes" in raised.value.message
    assert list(read_arrays(archive, "--inputs", max_tensor_size=2400)) == ["a", "b"]
    with zipfile.ZipFile(archive) as opened:  # the members are intact
        assert sorted(opened.namelist()) == ["a.npy", "b.npy"]


@pytest.mark.parametrize("op, attribute, given, declared, size", [
    ("square", "n=1000000", "x", "y: real[n, n]", "8000000000000 bytes"),
    ("square", f"n={2 ** 63}", "x", "y: real[n, n]", f"{8 * 2 ** 126} bytes"),
    ("constant", "n=1000000000", "x", "c: real[n] = 1.0", "8000000000 bytes"),
    ("defaulted", "n=1000000000", "k", "x: real[n] = 0.0", "8000000000 bytes"),
])
def test_tensors_an_operator_declares_are_checked_before_it_runs(program, capsys, op, attribute,
                                                                 given, declared, size) -> None:
    error = expect_limit(capsys, "E1200", "--max-tensor-size", "eval", program, "--op", op,
                         "--attrib", attribute, "--random", f"{given}=real[]")
    assert size in error["message"]
    assert error["location"]["line"] == line_of(declared)


def test_a_carried_loop_tensor_is_checked_before_it_is_filled(program, capsys) -> None:
    error = expect_limit(capsys, "E1200", "--max-tensor-size", "eval", program, "--op",
                         "carried", "--attrib", "n=1000000000", "--random", "x=real[]")
    assert "8000000000 bytes" in error["message"]
    assert error["location"]["line"] == line_of("with h: real[n]")


def test_an_intrinsic_output_is_checked_before_the_intrinsic_runs(capsys) -> None:
    error = expect_limit(capsys, "E1200", "--max-tensor-size", "eval", "--op",
                         "image.cubic_resize", "--attrib", "size=[1000000, 1000000]",
                         "--random", "input=real[2,2]")
    assert "8000000000000 bytes" in error["message"]


def test_the_api_checks_tensor_sizes() -> None:
    with pytest.raises(ri.Error) as raised:
        ri.evaluate("nn.relu", inputs={"x": np.zeros(200, dtype=np.float32)},
                    limits=ri.Limits(max_tensor_size=1000))  # held as float64: 1600 bytes
    assert raised.value.code == "E1200" and "1600 bytes" in raised.value.message
    with pytest.raises(ri.Error) as raised:
        ri.random_inputs({"x": ri.TensorType("real", (10 ** 6, 10 ** 6))})
    assert raised.value.code == "E1200"
    with pytest.raises(ri.Error) as raised:
        ri.random_inputs({"x": ri.TensorType("real", (-1,))})
    assert raised.value.code == "E0901"
    out = ri.evaluate("nn.relu", inputs={"x": [-1.0, 2.0]}, limits=ri.Limits(max_tensor_size=16))
    assert out.outputs["y"].tolist() == [0.0, 2.0]


@pytest.mark.parametrize("option", [{"max_tensor_size": 0}, {"max_lower_iterations": -1},
                                    {"max_pack_length": 0}, {"max_depth": 10 ** 9},
                                    {"max_memory": 0}, {"max_iterations": True},
                                    {"max_memory": 1.5}, {"timeout": 0}, {"timeout": -1.0},
                                    {"timeout": float("nan")}, {"timeout": float("inf")},
                                    {"timeout": True}, {"timeout": "1"}])
def test_api_limits_must_be_positive_ints(option) -> None:
    """Every limit is checked once, where `Limits` is made (E0901, naming the option)."""
    with pytest.raises(ri.Error) as raised:
        ri.Limits(**option)
    name = next(iter(option))
    assert raised.value.code == "E0901" and raised.value.span is None
    assert raised.value.message.startswith(f"{name} (--{name.replace('_', '-')}) must be")


def test_limits_hold_the_memory_and_time_of_a_run_too() -> None:
    """max_memory (None: the vector engine's own default) and timeout (None: none) are limits
    like the others: made once, compared and shown by value."""
    assert (ri.Limits().max_memory, ri.Limits().timeout) == (None, None)
    limits = ri.Limits(max_memory=4096, timeout=2.5)
    assert limits == ri.Limits(max_memory=4096, timeout=2.5) != ri.Limits()
    run = ri.evaluate("math.add", inputs={"x": np.ones(3), "y": np.ones(3)}, engine="vector",
                      limits=limits)
    assert run.outputs["z"].tolist() == [2.0, 2.0, 2.0]


# ------------------------------------------------------------------ item 5: option values


@pytest.mark.parametrize("args, text", [
    (["--max-depth", "1000000000"], "--max-depth"),
    (["--max-depth", "0"], "--max-depth"),
    (["--max-iterations", "0"], "--max-iterations"),
    (["--max-iterations", "-1"], "--max-iterations"),
    (["--max-lower-iterations", "0"], "--max-lower-iterations"),
    (["--max-pack-length", "-3"], "--max-pack-length"),
    (["--max-memory", "garbage"], "--max-memory"),
    (["--max-memory", "1e400"], "--max-memory"),
    (["--max-memory", "0"], "--max-memory"),
    (["--max-tensor-size", "nan"], "--max-tensor-size"),
    (["--seed", "-1"], "--seed"),
    (["-o", ""], "-o"),
    (["--save-inputs", ""], "--save-inputs"),
    (["--save-params", ""], "--save-params"),
    (["--write-params", ""], "--write-params"),
    (["--inputs", ""], "--inputs"),
    (["--params", ""], "--params"),
    (["--stdlib", ""], "--stdlib"),
    (["--path", ""], "--path"),
])
def test_unusable_eval_options_are_usage_errors(capsys, args, text) -> None:
    expect_usage(capsys, text, "eval", "--op", "nn.relu", "--input", "x=[1.0]", *args)


@pytest.mark.parametrize("args, text", [
    (["shapes", "--op", "nn.relu", "--input", "x=real[1]", "--max-depth", "0"], "--max-depth"),
    (["shapes", "--op", "nn.relu", "--input", "x=real[1]", "--max-iterations", "-1"],
     "--max-iterations"),
    (["shapes", "--op", "nn.relu", "--input", "x=real[1]", "--max-pack-length", "0"],
     "--max-pack-length"),
    (["shapes", ""], "FILE|DIR"),
    (["eval", ""], "FILE|DIR"),
    (["parse", ""], "FILE"),
    (["ops", ""], "MODULE|FILE"),
    (["describe", ""], "MODULE.OP|FILE"),
])
def test_unusable_values_of_other_commands_are_usage_errors(capsys, args, text) -> None:
    expect_usage(capsys, text, *args)


def test_an_output_path_the_system_refuses_is_a_diagnostic(capsys) -> None:
    """Found by tools/fuzz.py: a file name too long for the file system was an OSError."""
    status, error, _ = cli(capsys, "eval", "--op", "nn.relu", "--input", "x=[1.0]",
                           "-o", "a" * 300 + ".npz")
    assert status == 1 and error["code"] == "E0801"
    status, error, _ = cli(capsys, "eval", "--op", "nn.relu", "--input", "x=[1.0]",
                           "--params", "a" * 300 + ".npz")
    assert status == 1 and error["code"] == "E0800"


def test_a_compile_time_int_outside_int64_is_no_tensor(program, capsys) -> None:
    """Found by tools/fuzz.py: an OverflowError while a composition made a rank-0 tensor."""
    for command, x in (("eval", ["--input", "x=1"]), ("shapes", [])):
        status, error, _ = cli(capsys, command, program, "--op", "huge_int", *x)
        assert status == 1 and error["code"] == "E0502", error
        assert error["location"]["line"] == line_of("729835811307233063839")


# ------------------------------------------------------------------ item 6: runaway work


def test_a_never_ending_loop_names_the_iteration_limit(program, capsys) -> None:
    error = expect_limit(capsys, "E0604", "--max-iterations", "eval", program, "--op",
                         "forever", "--input", "x=0", "--max-iterations", "50")
    assert error["message"].startswith("the loop ran 50 iterations (--max-iterations)")
    error = expect_limit(capsys, "E0604", "--max-depth", "eval", program, "--op", "recurse",
                         "--input", "x=0", "--max-depth", "20")
    assert "nest deeper than 20" in error["message"]


def test_the_defaults_are_the_documented_ones() -> None:
    """docs/limits.md: a never-ending loop stops after 10,000 iterations (about 2 s), not
    1,000,000 (12 minutes)."""
    assert (ri.MAX_ITERATIONS, ri.MAX_DEPTH, ri.MAX_TENSOR_SIZE, ri.MAX_LOWER_ITERATIONS,
            ri.MAX_PACK_LENGTH) == (10_000, 256, 2 ** 30, 10 ** 9, 100_000)
    assert ri.Limits() == ri.Limits(10_000, 256, 2 ** 30, 10 ** 9, 100_000)


@pytest.mark.parametrize("n, engine", [(10 ** 12, "auto"), (2 ** 63, "vector"),
                                       (10 ** 12, "scalar")])
def test_a_huge_lower_iteration_space_is_refused_before_it_runs(program, capsys, n,
                                                                engine) -> None:
    error = expect_limit(capsys, "E1201", "--max-lower-iterations", "eval", program, "--op",
                         "reduce", "--attrib", f"n={n}", "--random", "x=real[]",
                         "--engine", engine)
    assert f"iterates {n} times" in error["message"] and "1000000000" in error["message"]
    assert error["location"]["line"] == line_of("@lower { y[] += x[] * 0.5")


def test_the_lower_iteration_limit_is_an_option(program, capsys) -> None:
    expect_limit(capsys, "E1201", "--max-lower-iterations", "eval", program, "--op", "reduce",
                 "--attrib", "n=11", "--random", "x=real[]", "--max-lower-iterations", "10")
    run = ri.evaluate(ri.load(program), op="reduce", inputs={"x": 2.0},
                      attributes={"n": 10}, limits=ri.Limits(max_lower_iterations=10))
    assert run.outputs["y"].tolist() == 10.0


@pytest.mark.parametrize("command", ["eval", "shapes"])
def test_a_long_pack_is_refused_before_it_is_built(capsys, command) -> None:
    option = "--random" if command == "eval" else "--input"
    error = expect_limit(capsys, "E1202", "--max-pack-length", command, "--op",
                         "layout.concat", "--attrib", "axis=0", option,
                         "inputs=real[4]..(100000000)")
    assert "100000000 tensors" in error["message"] and "100000" in error["message"]


@pytest.mark.parametrize("command", ["eval", "shapes"])
def test_a_declared_pack_above_the_limit_is_refused(program, capsys, command) -> None:
    x = ["--random", "x=real[]"] if command == "eval" else ["--input", "x=real[]"]
    error = expect_limit(capsys, "E1202", "--max-pack-length", command, program, "--op",
                         "split", "--attrib", "n=20", *x, "--max-pack-length", "10")
    assert error["location"]["line"] == line_of("ys: real[]..(n)")


def test_a_loop_stops_when_its_scanned_outputs_grow_too_long(program, capsys) -> None:
    error = expect_limit(capsys, "E1202", "--max-pack-length", "eval", program, "--op", "scan",
                         "--random", "x=real[]", "--max-pack-length", "10")
    assert "pack of 11 tensors" in error["message"]
    assert error["location"]["line"] == line_of("h, ys = with h = x do..(30)")
    assert main(["eval", program, "--op", "scan", "--input", "x=1.0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["outputs"]["y"]["max"] == 31.0


def test_the_api_checks_pack_lengths() -> None:
    pack = [np.zeros(1)] * 3
    with pytest.raises(ri.Error) as raised:
        ri.evaluate("layout.concat", inputs={"inputs": pack}, attributes={"axis": 0},
                    limits=ri.Limits(max_pack_length=2))
    assert raised.value.code == "E1202"
    with pytest.raises(ri.Error) as raised:
        ri.shapes("layout.concat", inputs={"inputs": pack}, attributes={"axis": 0},
                  limits=ri.Limits(max_pack_length=2))
    assert raised.value.code == "E1202"
    with pytest.raises(ri.Error) as raised:
        ri.random_inputs({"xs": (ri.TensorType("real", (1,)),) * 3},
                         limits=ri.Limits(max_pack_length=2))
    assert raised.value.code == "E1202"


# ------------------------------------------------------------------ documentation


def test_every_limit_is_documented_with_its_default() -> None:
    """docs/limits.md and each option's --help name the default (10000, 256, 1G, 1000000000,
    100000); README links the page."""
    limits_doc = (ROOT / "docs" / "limits.md").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "docs/limits.md" in readme
    helps = {action.option_strings[0]: action.help
             for parser in (build_parser()._subparsers._group_actions[0].choices["eval"],)
             for action in parser._actions if action.option_strings}
    for option, default in [("--max-iterations", "10000"), ("--max-depth", "256"),
                            ("--max-tensor-size", "1G"), ("--max-pack-length", "100000"),
                            ("--max-lower-iterations", "1000000000"), ("--max-memory", "2G")]:
        assert f"(default {default}" in helps[option], option
        assert f"`{option}" in limits_doc and option in readme, option
    for code in ("E1200", "E1201", "E1202", "E0604"):
        assert code in limits_doc


def test_shapes_checks_a_declared_output_pack_before_building_it(tmp_path) -> None:
    """`shapes` gives the root instantiation the run's limits: a declared pack above
    --max-pack-length is E1202 at its declaration, before the pack exists."""
    import refinterp.api as api

    program = api.load_source("operator p {\n    @output { y: int[]..(5000); }\n"
                              "    @lower { y[k][] = k, k < 5000; }\n}\n")
    with pytest.raises(api.Error) as caught:
        api.shapes(program, limits=api.Limits(max_pack_length=100))
    assert caught.value.code == "E1202" and caught.value.span.line == 2


def test_params_dat_folder_is_read_with_the_tensor_size_limit(tmp_path) -> None:
    """A folder of .dat files given as --params is held to --max-tensor-size before its data
    is read (E1200)."""
    import numpy as np

    import refinterp.api as api
    from refinterp.io import read_params
    from testsupport.nnef_files import write_dat

    write_dat(tmp_path / "w.dat", np.ones(1000))
    with pytest.raises(api.Error) as caught:
        read_params(tmp_path, max_tensor_size=100)
    assert caught.value.code == "E1200" and "8000 bytes" in caught.value.message
    assert read_params(tmp_path, max_tensor_size=8000)["w"].shape == (1000,)
