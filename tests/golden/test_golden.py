"""Golden fixtures (docs/golden.md): the bytes of array files, the tolerance rule, case tables,
building (byte-identical, any -j), verifying, showing, eval --save-case. The committed suite
itself is checked in tests/golden/test_golden_suite.py."""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from refinterp.cli import main
from refinterp.golden import (Bound, BuildError, TableError, bounds, build_suite, read_table,
                              read_tables, show_case, ulp_distance, verify_suite, within)
from refinterp.golden.table import derived_seed
from refinterp.io import encode_npy, encode_npz
from testsupport.paths import REPO_ROOT

ROOT = REPO_ROOT
DOC = (ROOT / "docs" / "golden.md").read_text()


# ------------------------------------------------------------------ array bytes


@pytest.mark.parametrize("array", [np.zeros(()), np.arange(5.0), np.ones((2, 3), np.int64),
                                   np.zeros((0, 3), bool), np.array([np.nan, -0.0, np.inf]),
                                   np.arange(24.0).reshape(2, 3, 4)])
def test_npy_bytes_are_what_numpy_save_writes(array: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.save(buffer, array)
    assert encode_npy(array) == buffer.getvalue()
    raw = encode_npy(array)
    header_length = int.from_bytes(raw[8:10], "little")
    assert raw[:8] == b"\x93NUMPY\x01\x00" and (10 + header_length) % 64 == 0


def test_every_nan_is_written_as_the_one_quiet_nan() -> None:
    """A NaN's sign and payload depend on the order of operations, never on the semantics: the
    bytes must not (docs/golden.md "Arrays: the bytes")."""
    negative = np.array([1.0, 0.0]).view(np.uint64)
    negative[:] = [0xFFF8000000000000, 0x7FF0000000000123]  # -NaN, a signalling NaN payload
    values = np.array([negative.view(np.float64)[0], 2.5, negative.view(np.float64)[1]])
    data = np.frombuffer(encode_npy(values)[-24:], "<u8")
    assert data.tolist() == [0x7FF8000000000000, np.float64(2.5).view(np.uint64),
                             0x7FF8000000000000]


def test_npz_bytes_are_fixed_and_readable() -> None:
    arrays = {"x": np.arange(3.0), "ys": [np.ones(2, np.int64), np.zeros(1, bool)]}
    data = encode_npz(arrays)
    assert data == encode_npz(arrays)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = archive.infolist()
        assert [i.filename for i in infos] == ["x.npy", "ys.0.npy", "ys.1.npy"]
        assert all(i.date_time == (1980, 1, 1, 0, 0, 0) and i.compress_type == zipfile.ZIP_STORED
                   and i.external_attr >> 16 == 0o644 for i in infos)
    loaded = np.load(io.BytesIO(data))
    assert np.array_equal(loaded["ys.0"], [1, 1]) and loaded["ys.1"].dtype == bool


# ------------------------------------------------------------------ tolerances


def test_ulp_distance_counts_representable_values() -> None:
    one = np.array([1.0])
    assert ulp_distance(np.nextafter(one, 2.0), one)[0] == 1
    assert ulp_distance(np.array([-0.0]), np.array([0.0]))[0] == 0
    tiny = np.array([5e-324])  # the smallest subnormal on either side of zero: 2 apart
    assert ulp_distance(-tiny, tiny)[0] == 2
    f32 = np.array([1.0], np.float32)
    # 1 + 2^-23 is one float32 ULP above 1, and 1 + 2^-24 rounds (to even) to 1
    assert ulp_distance(np.nextafter(f32, np.float32(2)), np.array([1.0]))[0] == 1
    assert ulp_distance(f32, np.array([1.0 + 2.0 ** -24]))[0] == 0


def test_within_applies_the_one_rule() -> None:
    expected = np.array([np.nan, np.inf, -np.inf, 1.0, 0.0, 100.0])
    assert within(expected.copy(), expected, Bound()).all()
    assert not within(np.array([0.0]), np.array([np.nan]), Bound(ulp=10)).any()
    assert not within(np.array([np.finfo(float).max]), np.array([np.inf]), Bound(ulp=10)).any()
    assert not within(np.array([np.nan]), np.array([1.0]), Bound(atol=1e9)).any()
    near = np.nextafter(np.array([1.0]), 2.0)
    assert within(near, np.array([1.0]), Bound(ulp=1)).all()
    assert not within(near, np.array([1.0]), Bound(ulp=0)).all()
    assert within(np.array([1.5]), np.array([1.0]), Bound(atol=0.25, rtol=0.25)).all()
    assert not within(np.array([1.6]), np.array([1.0]), Bound(atol=0.25, rtol=0.25)).all()
    assert within(np.array([3, 4]), np.array([3, 4]), Bound()).all()
    # a float32 back end: ULPs counted in float32 against the golden rounded to float32
    assert within(np.array([0.1], np.float32), np.array([0.1]), Bound()).all()
    # a float64 golden beyond float32's range is float32's infinity; one below it, zero
    huge, tiny = np.array([1e39, -1e39]), np.array([1e-50])
    assert within(np.array([np.inf, -np.inf], np.float32), huge, Bound()).all()
    assert not within(np.array([np.finfo(np.float32).max] * 2, np.float32), huge, Bound()).any()
    assert within(np.array([0.0], np.float32), tiny, Bound()).all()
    assert not within(np.array([np.inf]), huge[:1], Bound(ulp=4)).any()  # float64: finite


def test_bounds_follow_the_documented_table() -> None:
    eps32 = 2.0 ** -23
    assert bounds("exact")["float32"] == Bound()
    assert bounds("arithmetic")["float64"] == Bound(ulp=1)
    assert bounds("transcendental")["float32"] == Bound(ulp=4, atol=4 * eps32)
    reduction = bounds("reduction", length=10, magnitude=3.0)["float32"]
    assert reduction == Bound(ulp=4, rtol=20 * eps32, atol=60 * eps32)
    for klass in ("exact", "arithmetic", "transcendental", "reduction"):
        assert f"| `{klass}` |" in DOC
    with pytest.raises(ValueError):
        bounds("loose")


# ------------------------------------------------------------------ case tables


def write_table(folder: Path, text: str, name: str = "t.toml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


SMALL = """module = "math"

[classes]
add = "arithmetic"
div = "arithmetic"
sum_reduce = "reduction"

[[family]]
ops = ["add"]
kind = "elementwise"
inputs = ["x", "y"]

[[case]]
op = "div"
name = "int_rounding"
inputs = { x = { type = "int[4]", values = [7, -7, 7, -7] }, \
y = { type = "int[4]", values = [2, 2, -2, -2] } }

[[case]]
op = "sum_reduce"
name = "bad_axis"
inputs = { input = "real[2,3]" }
attributes = { axes = [5] }
error = { code = "E0307", message = "'axes' must be between" }
"""


def test_a_family_expands_into_its_sample_set(tmp_path: Path) -> None:
    specs = read_table(write_table(tmp_path, SMALL))
    names = [s.id for s in specs]
    assert names == [f"math.add/{n}" for n in ("rank0", "vector", "matrix", "empty", "special",
                                               "broadcast", "broadcast_ones")] + \
        ["math.div/int_rounding", "math.sum_reduce/bad_axis"]
    special = next(s for s in specs if s.name == "special").arrays()
    # every special value of x meets every special value of y
    pairs = {(repr(a), repr(b)) for a, b in zip(special["x"], special["y"])}
    assert len(pairs) == 144
    vector = next(s for s in specs if s.name == "vector")
    seed = int.from_bytes(hashlib.sha256(b"math.add/vector/x").digest()[:4], "little")
    assert vector.inputs["x"].seed == seed == derived_seed("math.add/vector", "x")
    x = vector.arrays()["x"]
    assert np.array_equal(x, x.astype(np.float32).astype(np.float64))  # float32-exact
    assert ((-4 <= x) & (x < 4)).all()


@pytest.mark.parametrize("text,message,line", [
    ("module = 1\n", "starts with module", 1),
    ('module = "math"\n[[case]]\nop = "add"\nname = "x"\n', "no tolerance class", 2),
    ('module = "math"\n[classes]\nadd = "loose"\n', "tolerance class 'loose'", 1),
    ('module = "math"\n[[case]]\nop = "add"\nname = "x"\nclass = "exact"\nshape = 1\n',
     "unknown key", 2),
    ('module = "math"\n[[case]]\nop = "add"\nname = "x"\nclass = "exact"\n'
     'inputs = { x = "real[2" }\n', "is not real|int|bool", 2),
    ('module = "math"\nx = [\n', "not valid TOML", 3),
])
def test_table_errors_are_located_diagnostics(tmp_path: Path, text: str, message: str,
                                              line: int) -> None:
    path = write_table(tmp_path, text)
    with pytest.raises(TableError) as caught:
        read_table(path)
    assert caught.value.code == "E1100" and message in caught.value.message
    assert caught.value.span is not None and caught.value.span.line == line
    assert str(path) in str(caught.value)


# ------------------------------------------------------------------ building and verifying


def test_build_is_byte_identical_whatever_the_jobs_and_order(tmp_path: Path) -> None:
    table = write_table(tmp_path, SMALL)
    specs = read_tables([table])
    build_suite(specs, tmp_path / "one", jobs=1)
    build_suite(list(reversed(specs)), tmp_path / "two", jobs=2)
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*")
                   if p.is_file())
    assert len(files) > 30
    for name in files:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    manifest = json.loads((tmp_path / "one" / "manifest.json").read_text())
    assert manifest["count"] == 10 and manifest["operators"]["math.div"] == 2
    assert [c["id"] for c in manifest["cases"]] == sorted(c["id"] for c in manifest["cases"])


def test_profile_variants_and_error_cases(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    build_suite(read_tables([write_table(tmp_path, SMALL)]), suite)
    spec = suite / "math.div" / "int_rounding"
    khronos = suite / "math.div" / "int_rounding@khronos"
    x, y = np.array([7, -7, 7, -7]), np.array([2, 2, -2, -2])
    # spec: integer division rounds toward minus infinity; khronos: toward zero
    assert np.array_equal(np.load(spec / "outputs.npz")["z"], np.floor_divide(x, y))
    assert np.array_equal(np.load(khronos / "outputs.npz")["z"],
                          np.trunc(x / y).astype(np.int64))
    assert json.loads((khronos / "case.json").read_text())["profile"] == "khronos"
    assert not (suite / "math.add" / "matrix@khronos").exists()  # same values: no variant
    error = json.loads((suite / "math.sum_reduce" / "bad_axis" / "case.json").read_text())
    assert error["error"]["code"] == "E0307" and "outputs" not in error
    assert "z: real;" not in (suite / "math.sum_reduce" / "bad_axis" / "model.sknd").read_text()
    assert "output: real;" in (suite / "math.sum_reduce" / "bad_axis" / "model.sknd").read_text()


def test_golden_values_equal_independent_numpy(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    build_suite(read_tables([write_table(tmp_path, SMALL)]), suite)
    for name in ("matrix", "broadcast", "broadcast_ones", "special", "empty", "rank0"):
        folder = suite / "math.add" / name
        inputs, outputs = np.load(folder / "inputs.npz"), np.load(folder / "outputs.npz")
        with np.errstate(invalid="ignore", over="ignore"):
            expected = inputs["x"] + inputs["y"]
        assert np.array_equal(outputs["z"], expected, equal_nan=True), name
        case = json.loads((folder / "case.json").read_text())
        assert case["outputs"]["z"]["shape"] == list(expected.shape)
        assert case["outputs"]["z"]["sha256"] == hashlib.sha256(encode_npy(expected)).hexdigest()
        assert case["files"]["outputs.npz"] == \
            hashlib.sha256((folder / "outputs.npz").read_bytes()).hexdigest()


def test_a_case_that_does_not_build_as_declared_is_a_diagnostic(tmp_path: Path) -> None:
    wrong = SMALL.replace('code = "E0307"', 'code = "E0306"')
    with pytest.raises(BuildError) as caught:
        build_suite(read_tables([write_table(tmp_path, wrong)]), tmp_path / "s")
    assert caught.value.code == "E1101" and "got E0307" in caught.value.message
    runs = SMALL.replace("axes = [5]", "axes = [1]")
    with pytest.raises(BuildError, match="expects error E0307, but the case runs"):
        build_suite(read_tables([write_table(tmp_path, runs)]), tmp_path / "s")


def test_build_never_replaces_a_folder_that_is_no_case(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    precious = suite / "math.div" / "int_rounding"
    precious.mkdir(parents=True)
    (precious / "notes.txt").write_text("mine")
    with pytest.raises(BuildError, match="is no case folder"):
        build_suite(read_tables([write_table(tmp_path, SMALL)]), suite)
    assert (precious / "notes.txt").read_text() == "mine"


def test_verify_finds_tampering_and_drift(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    build_suite(read_tables([write_table(tmp_path, SMALL)]), suite)
    assert not [r for r in verify_suite(suite) if r.problems]
    folder = suite / "math.add" / "matrix"
    # 1. a changed file: its hash no longer matches
    original = (folder / "outputs.npz").read_bytes()
    outputs = dict(np.load(folder / "outputs.npz"))
    outputs["z"][0, 0] += 1.0
    (folder / "outputs.npz").write_bytes(encode_npz(outputs))
    problems = [p for r in verify_suite(suite) for p in r.problems]
    assert any("outputs.npz: sha256 differs" in p for p in problems)
    # 2. the hashes updated too: the recomputation finds the drift
    case = json.loads((folder / "case.json").read_text())
    case["files"]["outputs.npz"] = hashlib.sha256((folder / "outputs.npz").read_bytes()).hexdigest()
    case["outputs"]["z"]["sha256"] = hashlib.sha256(encode_npy(outputs["z"])).hexdigest()
    (folder / "case.json").write_text(json.dumps(case, sort_keys=True, indent=2) + "\n")
    problems = [p for r in verify_suite(suite) for p in r.problems]
    assert any("case.json: sha256 differs from manifest.json" in p for p in problems)
    from refinterp.golden import write_suite_manifest
    write_suite_manifest(suite)
    problems = [p for r in verify_suite(suite) for p in r.problems]
    assert problems == ["output 'z': 1 element(s) differ from the stored value (beyond its "
                        "float64 tolerance)"]
    (folder / "outputs.npz").write_bytes(original)
    # 3. a case folder the manifest does not list; a listed one that is gone
    shutil.copytree(folder, suite / "math.add" / "stray")
    shutil.rmtree(suite / "math.add" / "vector")
    problems = [p for r in verify_suite(suite, recompute_cases=False) for p in r.problems]
    assert "a case folder that manifest.json does not list" in problems
    assert "listed in manifest.json but missing" in problems


def test_show_is_deterministic_and_complete(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    build_suite(read_tables([write_table(tmp_path, SMALL)]), suite)
    text = show_case(suite / "math.div" / "int_rounding")
    assert text == show_case(suite / "math.div" / "int_rounding")
    assert "== model.sknd" in text and "z = math.div(x, y);" in text
    assert "== inputs.npz x: int[4]\n[ 7, -7,  7, -7]" in text
    assert "== outputs.npz z: int[4]\n[ 3, -4, -4,  3]" in text
    special = show_case(suite / "math.add" / "special")
    assert "nan" in special and "1.401298464324817e-45" in special


# ------------------------------------------------------------------ the command line


def test_cli_build_verify_show(tmp_path: Path, capsys) -> None:
    table = write_table(tmp_path, SMALL)
    suite = tmp_path / "suite"
    assert main(["golden", "build", str(table), "-o", str(suite), "-j", "2", "-k", "div"]) == 0
    assert "built 2 case(s)" in capsys.readouterr().out
    assert main(["golden", "verify", str(suite)]) == 0
    assert "2 sound, 0 with problems" in capsys.readouterr().out
    assert main(["golden", "verify", str(suite), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["checked"] == 2 and report["cases_per_second"] > 0
    assert main(["golden", "show", str(suite / "math.div" / "int_rounding")]) == 0
    assert "== case.json" in capsys.readouterr().out
    (suite / "math.div" / "int_rounding" / "inputs.npz").write_bytes(b"broken")
    assert main(["golden", "verify", str(suite)]) == 1
    err = capsys.readouterr().err
    assert "[E1102]" in err and "inputs.npz: sha256 differs" in err
    case = json.loads((suite / "math.div" / "int_rounding" / "case.json").read_text())
    assert case["command"].startswith("refinterp golden build ../t.toml -o . -k ")


@pytest.mark.parametrize("argv,status,text", [
    (["golden", "build", "T", "-o", "S", "-k", "("], 2, "not a regular expression"),
    (["golden", "build", "T", "-o", "S", "-j", "0"], 2, "-j must be between 1 and 256"),
    (["golden", "verify", "missing"], 1, "no suite folder"),
    (["golden", "show", "."], 1, "no case folder"),
    (["golden", "build", "missing.toml", "-o", "S"], 1, "cannot read the case table"),
])
def test_cli_misuse_and_bad_input(tmp_path: Path, capsys, monkeypatch, argv, status,
                                  text) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "T").write_text(SMALL)
    assert main(argv) == status
    assert text in capsys.readouterr().err


def test_eval_save_case_freezes_a_model_run(tmp_path: Path, capsys) -> None:
    model = tmp_path / "m.sknd"
    model.write_text("""import math;
graph G {
    @input { x: real[3]; }
    @variable { w: real[3]; }
    @output { y: real[3]; }
    @compose { y = math.mul(x, w); }
    @update { w = math.add(w, x); }
}
""")
    case = tmp_path / "frozen"
    assert main(["eval", str(model), "--random", "x", "--random-params", "--seed", "3",
                 "--save-case", str(case)]) == 0
    capsys.readouterr()
    inputs, params = np.load(case / "inputs.npz"), np.load(case / "params.npz")
    assert list(params.files) == ["w"]  # relative to the graph
    assert np.array_equal(np.load(case / "outputs.npz")["y"], inputs["x"] * params["w"])
    assert np.array_equal(np.load(case / "updated.npz")["w"], params["w"] + inputs["x"])
    manifest = json.loads((case / "case.json").read_text())
    assert manifest["kind"] == "model" and manifest["graph"] == "G"
    assert manifest["command"].startswith("refinterp eval ") and "--save-case" in \
        manifest["command"]
    assert main(["golden", "verify", str(case)]) == 0
    # a standard operator's run is frozen as an operator case (model.sknd invokes it)
    assert main(["eval", "--op", "math.neg", "--input", "x=[1.0]", "--save-case",
                 str(tmp_path / "c2")]) == 0
    assert json.loads((tmp_path / "c2" / "case.json").read_text())["id"] == "math.neg/c2"
    assert main(["golden", "verify", str(tmp_path / "c2")]) == 0


# ------------------------------------------------------------------ docs/golden.md


def test_the_documented_tables_build(tmp_path: Path) -> None:
    """The TOML examples of docs/golden.md build as written (the model example with the
    committed small CNN)."""
    blocks = re.findall(r"```toml\n(.*?)```", DOC, re.S)
    assert len(blocks) == 2
    table = write_table(tmp_path, blocks[0], "doc.toml")
    written = build_suite(read_tables([table]), tmp_path / "suite")
    ids = [w[0] for w in written]
    assert "math.div/int_rounding" in ids and "math.sum_reduce/axis_out_of_range" in ids
    (tmp_path / "models").mkdir()
    shutil.copy(ROOT / "golden" / "cases" / "models" / "small_cnn.sknd", tmp_path / "models")
    model_table = write_table(tmp_path, 'module = "models"\n' + blocks[1], "models.toml")
    written = build_suite(read_tables([model_table]), tmp_path / "suite")
    assert [w[0] for w in written] == ["models/small_cnn"]
    assert not [r for r in verify_suite(tmp_path / "suite") if r.problems]


EDGES = """module = "layout"

[classes]
constant = "exact"
concat = "exact"

[[case]]
op = "constant"
name = "non_finite"
attributes = { shape = [3], value = [nan, inf, -inf] }

[[case]]
op = "concat"
name = "unequal"
inputs = { inputs = ["real[2,3]", "real[1,3]"] }
attributes = { axis = 0 }
"""


def test_non_finite_attributes_and_unequal_packs(tmp_path: Path) -> None:
    table = EDGES  # TOML's own spelling of the non-finite reals
    suite = tmp_path / "suite"
    build_suite(read_tables([write_table(tmp_path, table)]), suite)
    constant = suite / "layout.constant" / "non_finite"
    assert "value = [(inf - inf), inf, -inf]" in (constant / "model.sknd").read_text()
    out = np.load(constant / "outputs.npz")["output"]
    assert np.isnan(out[0]) and out[1] == np.inf and out[2] == -np.inf
    assert json.loads((constant / "case.json").read_text())["attributes"]["value"] == \
        ["nan", "inf", "-inf"]
    concat = suite / "layout.concat" / "unequal"
    assert "inputs: real[~|2, 3]..(2);" in (concat / "model.sknd").read_text()
    inputs = np.load(concat / "inputs.npz")
    assert np.array_equal(np.load(concat / "outputs.npz")["output"],
                          np.concatenate([inputs["inputs.0"], inputs["inputs.1"]]))


def test_a_failed_case_leaves_no_folder_behind(tmp_path: Path) -> None:
    wrong = EDGES.replace('[[case]]\nop = "concat"', '[[case]]\nerror = { code = "E0307" }\n'
                                                   'op = "concat"')
    suite = tmp_path / "suite"
    with pytest.raises(BuildError, match="expects error E0307"):
        build_suite(read_tables([write_table(tmp_path, wrong)]), suite)
    assert not (suite / "layout.concat").exists() or \
        not list((suite / "layout.concat").iterdir())
    build_suite(read_tables([write_table(tmp_path, EDGES)]), suite)  # the next build works
    assert (suite / "layout.concat" / "unequal" / "case.json").exists()


def test_rank0_bool_pack_inputs(tmp_path: Path) -> None:
    table = ('module = "math"\n[classes]\nany_n = "exact"\n[[case]]\nop = "any_n"\n'
             'name = "rank0"\ninputs = { xs = ["bool[]", "bool[]"] }\n')
    suite = tmp_path / "suite"
    build_suite(read_tables([write_table(tmp_path, table)]), suite)
    inputs = np.load(suite / "math.any_n" / "rank0" / "inputs.npz")
    assert np.load(suite / "math.any_n" / "rank0" / "outputs.npz")["y"] == \
        (inputs["xs.0"] | inputs["xs.1"])


def test_save_case_into_an_unwritable_place_is_a_diagnostic(tmp_path: Path, capsys) -> None:
    """Found by tools/fuzz.py: `--save-case /proc/x` was an internal error."""
    model = tmp_path / "m.sknd"
    model.write_text("import math;\ngraph G {\n    @input { x: real[3]; }\n"
                     "    @output { y: real[3]; }\n    @compose { y = math.neg(x); }\n}\n")
    assert main(["eval", str(model), "--random", "x", "--save-case", "/proc/x"]) == 1
    assert "[E0801]" in capsys.readouterr().err
    from refinterp.golden.build import CaseWriter
    with pytest.raises(BuildError) as caught:
        CaseWriter(Path("/proc/refinterp-no/case"))
    assert caught.value.code == "E0801"
