"""Conformance suites of a user's own operators (docs/golden.md "Operators of your own files",
"Saved runs", "golden index"): case tables naming a `.sknd` file and a search path, `eval
--save-case` keeping the run's attributes, profile and imports, and `golden index` turning a
folder of saved cases into a suite that verifies and is checked like a built one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from refinterp.cli import main
from refinterp.golden import TableError, index_suite, read_table
from refinterp.harness.report import coverage
from refinterp.harness.suite_run import Result
from refinterp.io import encode_npz
from testsupport.paths import REPO_ROOT

CONV1D = """operator conv1d {
    @attrib {
        k: int;
    }
    @input {
        x: real[n];
        w: real[k];
    }
    @output {
        y: real[n - k + 1];
    }
    @lower {
        y[i] += x[i + j] * w[j],
            i < n - k + 1, j < k;
    }
}
"""

HELPERS = CONV1D.replace("conv1d", "window")

# conv1d through a module it imports (a sibling file, or one found on the search path)
CONV1D_IMPORTING = """import helpers;

operator conv1d {
    @attrib {
        k: int;
    }
    @input {
        x: real[n];
        w: real[k];
    }
    @output {
        y: real[n - k + 1];
    }
    @compose {
        y = helpers.window{k = k}(x, w);
    }
}
"""

TABLE = """file = "conv1d.sknd"

[classes]
conv1d = "reduction"

[[case]]
op = "conv1d"
name = "basic"
attributes = { k = 3 }
inputs = { x = "real[8]", w = "real[3]" }
"""


def correlate(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """What conv1d computes, independently of refinterp: a 'valid' cross-correlation."""
    return np.correlate(x, w, mode="valid")


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def tree_bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------ tables naming a file


def test_a_table_names_its_operators_by_file(tmp_path: Path, capsys) -> None:
    write(tmp_path, {"conv1d.sknd": CONV1D, "t.toml": TABLE})
    [spec] = read_table(tmp_path / "t.toml")
    assert (spec.id, spec.operator) == ("conv1d.conv1d/basic", "conv1d.conv1d")
    assert spec.file == str((tmp_path / "conv1d.sknd").resolve())
    suite = tmp_path / "suite"
    assert main(["golden", "build", str(tmp_path / "t.toml"), "-o", str(suite)]) == 0
    case = suite / "conv1d.conv1d" / "basic"
    manifest = json.loads((case / "case.json").read_text())
    assert manifest["operator"] == "conv1d.conv1d" and manifest["attributes"] == {"k": 3}
    assert "conv1d.sknd" in manifest["files"]  # copied and hashed
    assert (case / "conv1d.sknd").read_text() == CONV1D
    assert "import conv1d;" in (case / "model.sknd").read_text()
    inputs, outputs = np.load(case / "inputs.npz"), np.load(case / "outputs.npz")
    np.testing.assert_allclose(outputs["y"], correlate(inputs["x"], inputs["w"]),
                               rtol=1e-12, atol=1e-12)
    capsys.readouterr()
    assert main(["golden", "verify", str(suite)]) == 0
    for backend in ("refinterp:auto", "refinterp:khronos"):
        assert main(["check", str(suite), "--backend", backend]) == 0
        assert "1 passed" in capsys.readouterr().out


def test_the_imported_modules_are_copied_and_the_case_runs_from_its_folder_alone(
        tmp_path: Path, capsys) -> None:
    """A sibling module the file imports is copied too: the suite, moved elsewhere with the
    user's files gone, still verifies."""
    source = write(tmp_path / "src", {"conv1d.sknd": CONV1D_IMPORTING,
                                      "helpers.sknd": HELPERS, "t.toml": TABLE})
    suite = tmp_path / "suite"
    assert main(["golden", "build", str(source / "t.toml"), "-o", str(suite)]) == 0
    moved = tmp_path / "elsewhere" / "suite"
    shutil.copytree(suite, moved)
    shutil.rmtree(source)
    shutil.rmtree(suite)
    case = moved / "conv1d.conv1d" / "basic"
    assert sorted(json.loads((case / "case.json").read_text())["files"]) == \
        ["bounds.npz", "conv1d.sknd", "helpers.sknd", "inputs.npz", "model.sknd",
         "outputs.npz"]
    capsys.readouterr()
    assert main(["golden", "verify", str(moved)]) == 0
    assert main(["check", str(moved), "--backend", "refinterp:auto"]) == 0
    capsys.readouterr()
    assert main(["golden", "show", str(case)]) == 0  # the copied modules are shown too
    shown = capsys.readouterr().out
    assert f"== conv1d.sknd\n{CONV1D_IMPORTING}" in shown and \
        f"== helpers.sknd\n{HELPERS}" in shown


def test_a_search_path_in_the_table_or_on_the_command_line(tmp_path: Path, capsys) -> None:
    write(tmp_path, {"conv1d.sknd": CONV1D_IMPORTING, "lib/helpers.sknd": HELPERS})
    write(tmp_path, {"t.toml": TABLE, "with_path.toml": 'path = ["lib"]\n' + TABLE})
    # without it: E1101 at the table's entry, saying which module is missing and where
    assert main(["golden", "build", str(tmp_path / "t.toml"), "-o",
                 str(tmp_path / "s0")]) == 1
    err = capsys.readouterr().err
    assert "t.toml:6:1: error: case conv1d.conv1d/basic: cannot load" in err
    assert "module 'helpers' not found" in err and "[E1101]" in err
    assert main(["golden", "build", str(tmp_path / "with_path.toml"), "-o",
                 str(tmp_path / "s1")]) == 0
    assert main(["golden", "build", str(tmp_path / "t.toml"), "--path",
                 str(tmp_path / "lib"), "-o", str(tmp_path / "s2")]) == 0
    case = tmp_path / "s2" / "conv1d.conv1d" / "basic"
    assert (case / "helpers.sknd").read_text() == HELPERS
    assert "--path ../lib" in json.loads((case / "case.json").read_text())["command"]
    assert main(["golden", "verify", str(tmp_path / "s2")]) == 0
    assert main(["golden", "build", str(tmp_path / "t.toml"), "--path",
                 str(tmp_path / "nowhere"), "-o", str(tmp_path / "s3")]) == 1
    assert "--path: no folder" in capsys.readouterr().err


@pytest.mark.parametrize("table, message, line", [
    ('file = "nope.sknd"\n[[case]]\nop = "conv1d"\nname = "a"\n', "file 'nope.sknd' not found",
     1),
    ('module = "m"\n[[case]]\nop = "conv1d"\nname = "a"\nfile = "nope.sknd"\n',
     "case #1: file 'nope.sknd' not found", 2),
    ('module = "other"\nfile = "conv1d.sknd"\n', "is module 'conv1d'", 1),
    ('file = "conv1d.sknd"\npath = ["missing"]\n', "folder 'missing' not found", 2),
    ('file = "conv-1d.sknd"\n', "an identifier", 1),
])
def test_a_wrong_file_or_path_is_a_table_error_at_its_entry(tmp_path: Path, table: str,
                                                            message: str, line: int) -> None:
    write(tmp_path, {"conv1d.sknd": CONV1D, "conv-1d.sknd": CONV1D, "t.toml": table})
    with pytest.raises(TableError) as caught:
        read_table(tmp_path / "t.toml")
    assert message in caught.value.message and caught.value.code == "E1100"
    assert caught.value.span.line == line


ERROR_CASE = """
[[case]]
op = "conv1d"
name = "too_short"
attributes = { k = 3 }
inputs = { x = "real[1]", w = "real[3]" }
error = { code = "E0300", message = "negative" }
"""


def test_building_a_file_based_table_is_byte_identical(tmp_path: Path) -> None:
    """With an error case too (its model.sknd declares the output's dtype from the user's
    operator), and with worker processes."""
    write(tmp_path, {"conv1d.sknd": CONV1D_IMPORTING, "helpers.sknd": HELPERS,
                     "t.toml": TABLE + ERROR_CASE})
    for name, jobs in (("a", "1"), ("b", "2")):
        assert main(["golden", "build", str(tmp_path / "t.toml"), "-o",
                     str(tmp_path / name / "suite"), "-j", jobs]) == 0
    first, second = tree_bytes(tmp_path / "a" / "suite"), tree_bytes(tmp_path / "b" / "suite")
    assert first == second and "conv1d.conv1d/basic/helpers.sknd" in first
    assert "conv1d.conv1d/too_short/conv1d.sknd" in first
    assert main(["golden", "verify", str(tmp_path / "a" / "suite")]) == 0
    # indexing a built suite rewrites its manifest.json byte for byte
    (tmp_path / "a" / "suite" / "manifest.json").unlink()
    index_suite(tmp_path / "a" / "suite")
    assert tree_bytes(tmp_path / "a" / "suite") == second


def test_the_documented_table_builds(tmp_path: Path) -> None:
    """The example of docs/golden.md "Operators of your own files" builds as written."""
    doc = (REPO_ROOT / "docs" / "golden.md").read_text()
    example = doc.split("### Operators of your own files")[1].split("```\n")[1]
    write(tmp_path, {"conv1d.sknd": CONV1D_IMPORTING, "lib/helpers.sknd": HELPERS,
                     "t.toml": example})
    assert main(["golden", "build", str(tmp_path / "t.toml"), "-o",
                 str(tmp_path / "suite")]) == 0
    assert (tmp_path / "suite" / "conv1d.conv1d" / "basic" / "helpers.sknd").exists()


# ------------------------------------------------------------------ eval --save-case


def test_save_case_keeps_the_attributes_and_creates_parent_folders(tmp_path: Path,
                                                                   capsys) -> None:
    write(tmp_path, {"conv1d.sknd": CONV1D})
    case = tmp_path / "mysuite" / "runs" / "c"
    assert main(["eval", str(tmp_path / "conv1d.sknd"), "--attrib", "k=3", "--random",
                 "x=real[8]", "--random", "w=real[3]", "--profile", "khronos",
                 "--save-case", str(case)]) == 0
    manifest = json.loads((case / "case.json").read_text())
    assert manifest["id"] == "conv1d.conv1d/c" and manifest["kind"] == "operator"
    assert manifest["attributes"] == {"k": 3} and manifest["profile"] == "khronos"
    assert "--attrib k=3" in manifest["command"]
    assert "conv1d.conv1d{k = 3}(x, w)" in (case / "model.sknd").read_text()
    inputs, outputs = np.load(case / "inputs.npz"), np.load(case / "outputs.npz")
    np.testing.assert_allclose(outputs["y"], correlate(inputs["x"], inputs["w"]),
                               rtol=1e-12, atol=1e-12)
    capsys.readouterr()
    assert main(["golden", "verify", str(case)]) == 0


def test_save_case_keeps_the_generic_types(tmp_path: Path, capsys) -> None:
    write(tmp_path, {"gen.sknd": """operator twice {
    @dtype {
        T: num;
    }
    @input {
        x: T[n];
    }
    @output {
        y: T[n];
    }
    @lower {
        y[i] = x[i] + x[i],
            i < n;
    }
}
"""})
    case = tmp_path / "c"
    assert main(["eval", str(tmp_path / "gen.sknd"), "--generic", "int", "--input",
                 "x=[1, 2, 3]", "--save-case", str(case)]) == 0
    assert json.loads((case / "case.json").read_text())["generics"] == ["int"]
    assert "gen.twice<int>(x)" in (case / "model.sknd").read_text()
    assert np.load(case / "outputs.npz")["y"].tolist() == [2, 4, 6]
    capsys.readouterr()
    assert main(["golden", "verify", str(case)]) == 0


def test_save_case_copies_sibling_and_search_path_modules(tmp_path: Path, capsys) -> None:
    """An operator file importing a sibling module, and a graph importing the operator's
    file through --path: both saved cases verify from their folders alone."""
    write(tmp_path, {"lib/conv1d.sknd": CONV1D_IMPORTING, "lib/helpers.sknd": HELPERS,
                     "app/net.sknd": """import conv1d;

graph net {
    @input {
        x: real[8];
    }
    @output {
        y: real[6];
    }
    @variable {
        w: real[3];
    }
    @compose {
        y = conv1d.conv1d{k = 3}(x, w);
    }
}
"""})
    runs = tmp_path / "runs"
    assert main(["eval", str(tmp_path / "lib" / "conv1d.sknd"), "--attrib", "k=2", "--random",
                 "x=real[5]", "--random", "w=real[2]", "--save-case", str(runs / "op")]) == 0
    assert main(["eval", str(tmp_path / "app" / "net.sknd"), "--path", str(tmp_path / "lib"),
                 "--random", "x", "--random-params", "--save-case", str(runs / "net")]) == 0
    for name in ("op", "net"):
        assert (runs / name / "helpers.sknd").read_text() == HELPERS
        assert (runs / name / "conv1d.sknd").read_text() == CONV1D_IMPORTING
    net = runs / "net"
    x, w = np.load(net / "inputs.npz")["x"], np.load(net / "params.npz")["w"]
    np.testing.assert_allclose(np.load(net / "outputs.npz")["y"], correlate(x, w), rtol=1e-12)
    shutil.rmtree(tmp_path / "lib")
    capsys.readouterr()
    assert main(["golden", "verify", str(runs / "op")]) == 0
    assert main(["golden", "verify", str(runs / "net")]) == 0


def test_save_case_keeps_modules_of_another_stdlib(tmp_path: Path, capsys) -> None:
    write(tmp_path, {"std/mini.sknd": CONV1D.replace("conv1d", "corr"),
                     "m.sknd": """import mini;

graph G {
    @input {
        x: real[4];
        w: real[2];
    }
    @output {
        y: real[3];
    }
    @compose {
        y = mini.corr{k = 2}(x, w);
    }
}
"""})
    case = tmp_path / "case"
    assert main(["eval", str(tmp_path / "m.sknd"), "--stdlib", str(tmp_path / "std"),
                 "--random", "x", "--random", "w", "--save-case", str(case)]) == 0
    assert (case / "mini.sknd").exists()
    capsys.readouterr()
    assert main(["golden", "verify", str(case)]) == 0


def test_save_case_refuses_a_graph_run_with_attributes(tmp_path: Path, capsys) -> None:
    write(tmp_path, {"g.sknd": """import math;

graph G {
    @attrib {
        k: real;
    }
    @input {
        x: real[4];
    }
    @output {
        y: real[4];
    }
    @compose {
        y = math.mul(x, k);
    }
}
"""})
    assert main(["eval", str(tmp_path / "g.sknd"), "--attrib", "k=2.0", "--random", "x",
                 "--save-case", str(tmp_path / "c")]) == 2
    assert "a model case runs its graph with inputs and params alone" in \
        capsys.readouterr().err
    assert not (tmp_path / "c").exists()
    # a model case runs its file's first graph: another one chosen by --op is refused
    (tmp_path / "two.sknd").write_text("import math;\n" + "".join(
        f"graph {name} {{\n    @input {{ x: real[2]; }}\n    @output {{ y: real[2]; }}\n"
        f"    @compose {{ y = math.neg(x); }}\n}}\n" for name in "AB"))
    assert main(["eval", str(tmp_path / "two.sknd"), "--op", "B", "--random", "x",
                 "--save-case", str(tmp_path / "c")]) == 2
    assert "runs its file's first graph, not 'B'" in capsys.readouterr().err
    assert main(["eval", str(tmp_path / "two.sknd"), "--op", "A", "--random", "x",
                 "--save-case", str(tmp_path / "c")]) == 0


# ------------------------------------------------------------------ golden index


def saved_runs(tmp_path: Path) -> Path:
    """A folder of two saved runs of conv1d (no manifest.json)."""
    write(tmp_path, {"conv1d.sknd": CONV1D})
    suite = tmp_path / "mysuite"
    for name, k in (("k2", 2), ("k3", 3)):
        assert main(["eval", str(tmp_path / "conv1d.sknd"), "--attrib", f"k={k}", "--random",
                     "x=real[6]", "--random", f"w=real[{k}]", "--save-case",
                     str(suite / name)]) == 0
    return suite


def test_index_makes_saved_runs_a_suite(tmp_path: Path, capsys) -> None:
    suite = saved_runs(tmp_path)
    capsys.readouterr()
    assert main(["golden", "verify", str(suite)]) == 1  # both verified, the index missing
    captured = capsys.readouterr()
    assert "verified 2 case(s)" in captured.out and "2 sound" in captured.out
    assert "refinterp golden index" in captured.err
    assert main(["golden", "index", str(suite), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["count"] == 2 and [c["path"] for c in data["cases"]] == ["k2", "k3"]
    assert main(["golden", "index", str(suite)]) == 0
    assert "indexed 2 case(s)" in capsys.readouterr().out
    manifest = json.loads((suite / "manifest.json").read_text())
    assert [c["id"] for c in manifest["cases"]] == ["conv1d.conv1d/k2", "conv1d.conv1d/k3"]
    assert main(["golden", "verify", str(suite)]) == 0
    assert "verified 2 case(s)" in capsys.readouterr().out
    assert main(["check", str(suite), "--backend", "refinterp:auto"]) == 0
    assert "2 passed" in capsys.readouterr().out
    # refreshed after one more run is saved
    assert main(["eval", str(tmp_path / "conv1d.sknd"), "--attrib", "k=1", "--random",
                 "x=real[3]", "--random", "w=real[1]", "--save-case", str(suite / "k1")]) == 0
    assert main(["golden", "verify", str(suite)]) == 1
    assert index_suite(suite)["count"] == 3
    assert main(["golden", "verify", str(suite)]) == 0


def test_index_refuses_a_damaged_case_and_writes_nothing(tmp_path: Path, capsys) -> None:
    suite = saved_runs(tmp_path)
    (suite / "k3" / "inputs.npz").write_bytes(encode_npz({"x": np.zeros(6), "w": np.zeros(3)}))
    assert main(["golden", "index", str(suite)]) == 1
    err = capsys.readouterr().err
    assert "case k3: inputs.npz: sha256 differs from case.json" in err and "[E1102]" in err
    assert not (suite / "manifest.json").exists()


def test_index_refuses_two_cases_with_one_id(tmp_path: Path, capsys) -> None:
    suite = saved_runs(tmp_path)
    shutil.copytree(suite / "k2", suite / "copies" / "k2")
    assert main(["golden", "index", str(suite)]) == 1
    assert "its id 'conv1d.conv1d/k2' is also the id of" in capsys.readouterr().err


def test_empty_folders_have_no_cases(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["golden", "verify", str(empty)]) == 1
    captured = capsys.readouterr()
    assert "verified 0 case(s)" in captured.out and "no cases" in captured.err
    assert main(["golden", "index", str(empty)]) == 1
    assert "no cases in" in capsys.readouterr().err
    assert not (empty / "manifest.json").exists()
    assert main(["golden", "index", str(tmp_path / "missing")]) == 1
    assert "no suite folder" in capsys.readouterr().err


def test_a_saved_model_case_counts_in_the_coverage(tmp_path: Path, capsys) -> None:
    model = tmp_path / "m.sknd"
    model.write_text("import math;\ngraph G {\n    @input { x: real[3]; }\n"
                     "    @output { y: real[3]; }\n    @compose { y = math.neg(x); }\n}\n")
    assert main(["eval", str(model), "--random", "x", "--save-case",
                 str(tmp_path / "runs" / "neg")]) == 0
    assert main(["golden", "index", str(tmp_path / "runs")]) == 0
    capsys.readouterr()
    assert main(["check", str(tmp_path / "runs"), "--backend", "refinterp:auto"]) == 0
    assert "coverage: 1 operator(s) pass every case" in capsys.readouterr().out
    results = [Result("neg", "pass", module="models"),
               Result("math.neg/a", "fail", operator="math.neg", module="math")]
    cover = coverage(results)
    assert cover["passed"] == ["neg"] and cover["failed"] == ["math.neg"]


def test_a_table_with_a_nul_byte_is_a_table_error(tmp_path: Path) -> None:
    """A table that is not valid TOML is E1100 at its position, also when the culprit is a
    byte SkriptND sources refuse (the table is read as TOML, never as SkriptND text)."""
    table = tmp_path / "bad.toml"
    table.write_bytes(b'module = "math"\n[[case]]\nop = "add\x00"\n')
    with pytest.raises(TableError) as info:
        read_table(table)
    assert info.value.code == "E1100" and info.value.span.line == 3


FLIPPED = """import json, sys
import numpy as np
folder, inputs, outputs = sys.argv[1:]
arrays = np.load(inputs)
x, w = arrays["x"], arrays["w"]
if json.load(open(folder + "/case.json"))["attributes"]["k"] > len(x):
    sys.exit("rejected")
np.savez(outputs, y=np.convolve(x, w, "valid"))  # flips the kernel: wrong
"""


def test_shrink_works_on_a_users_operator(tmp_path: Path, capsys) -> None:
    """--shrink runs the case's own copy of the user's module (not a standard one): a back end
    that flips the kernel fails a smaller case too, and the temporary folder is removed."""
    import sys
    import tempfile

    (tmp_path / "conv1d.sknd").write_text(CONV1D)
    backend = tmp_path / "flipped.py"
    backend.write_text(FLIPPED)
    table = tmp_path / "t.toml"
    table.write_text('file = "conv1d.sknd"\n[[case]]\nop = "conv1d"\nname = "wide"\n'
                     'inputs = { x = "real[6]", w = "real[3]" }\nattributes = { k = 3 }\nclass = "reduction"\n')
    suite = tmp_path / "suite"
    assert main(["golden", "build", str(table), "-o", str(suite)]) == 0
    before = set(Path(tempfile.gettempdir()).glob("refinterp-shrink-*"))
    command = f"{sys.executable} {backend} {{dir}} {{inputs}} {{outputs}}"
    assert main(["check", str(suite), "--backend-cmd", command, "--shrink"]) == 1
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "shrink: the smallest failing case" in x)
    assert "x: float64[" in line and "[6]" not in line.split("x: ")[1].split(",")[0]
    assert set(Path(tempfile.gettempdir()).glob("refinterp-shrink-*")) == before
