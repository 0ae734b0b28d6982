"""Input layouts in golden fixtures (docs/golden.md "Input layouts (views)"): the schema of
an input's `view`, the layout variants `<name>@view-<kind>` the builder emits, and
what the harness gives Python and command back ends. Expected layouts and arrays are computed
here with NumPy (`np.ndarray(buffer=…)` reads a buffer through byte strides and checks its
bounds), independently of refinterp.numeric.views."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from refinterp.golden.build import build_suite, read_tables
from refinterp.golden.layouts import check_layouts
from refinterp.golden.schema import ManifestError, read_case_manifest
from refinterp.golden.table import TableError, read_table
from refinterp.golden.verify import verify_suite
from refinterp.harness.backends import CommandBackend
from refinterp.harness.suite_run import BackendSpec, applicable, check_case, run_suite
from refinterp.harness.suite import Case, load_case
from refinterp.io import read_arrays

TABLE = """
module = "math"

[classes]
add = "arithmetic"
sum_reduce = "reduction"

[[case]]
op = "add"
name = "grid"
# y has zero columns 0 and 2 (padded); neither input repeats along an axis (no broadcast)
inputs = { x = "real[2,3]", y = { type = "real[2,3]", values = [[0, 5, 0], [0, -1.5, 0]] } }
layouts = true

[[case]]
op = "add"
name = "repeat"
inputs = { x = "real[4]", y = { type = "real[2,4]", values = [[1, 2, 3, 4], [1, 2, 3, 4]] } }
layouts = ["broadcast", "padded"]

[[case]]
op = "sum_reduce"
name = "empty"
inputs = { input = "real[0,3]" }
attributes = { axes = [1] }
layouts = true

[[case]]
op = "add"
name = "plain"
inputs = { x = "real[3]", y = "real[3]" }
"""

PACK_TABLE = """
module = "layout"

[classes]
concat = "exact"

[[case]]
op = "concat"
name = "pack"
inputs = { inputs = ["real[2,2]", "real[2,2]"] }
attributes = { axis = 1 }
layouts = ["flipped"]
"""

KINDS_OF_GRID = ["contiguous", "flipped", "padded", "permuted", "shrunk"]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("views")
    table = folder / "math.toml"
    table.write_text(TABLE)
    packs = folder / "layout.toml"
    packs.write_text(PACK_TABLE)
    build_suite(read_tables([table, packs]), folder / "suite")
    return folder / "suite"


def _case(suite: Path, case_id: str) -> Case:
    return load_case(suite / case_id)


def _read_by_numpy(buffer: np.ndarray, view: dict[str, Any]) -> np.ndarray:
    """The array a view without a mask reads, built by NumPy from byte strides."""
    size = buffer.itemsize
    if 0 in view["shape"]:
        return np.zeros(view["shape"], buffer.dtype)
    return np.ndarray(view["shape"], buffer.dtype, buffer=buffer, offset=view["offset"] * size,
                      strides=[s * size for s in view["strides"]])


# --------------------------------------------------------------------------- building


def test_the_builder_emits_the_kinds_that_apply(suite: Path) -> None:
    ids = sorted(p.parent.relative_to(suite).as_posix() for p in suite.rglob("case.json"))
    assert ids == sorted(
        ["math.add/grid", "math.add/plain", "math.add/repeat", "math.sum_reduce/empty"]
        + [f"math.add/grid@view-{k}" for k in KINDS_OF_GRID]
        + ["math.add/repeat@view-broadcast", "math.sum_reduce/empty@view-zero-size",
           "layout.concat/pack", "layout.concat/pack@view-flipped"])
    manifest = json.loads((suite / "manifest.json").read_text())
    assert manifest["count"] == len(ids)


def test_variants_hold_the_base_inputs_and_outputs(suite: Path) -> None:
    for folder in suite.glob("*/*@view-*"):
        base = folder.parent / folder.name.split("@")[0]
        for name in ("inputs.npz", "outputs.npz"):
            assert (folder / name).read_bytes() == (base / name).read_bytes(), folder
        case = read_case_manifest(folder)
        assert case["layout"] == folder.name.split("@view-")[1]
        assert case["outputs"] == read_case_manifest(base)["outputs"]
    assert not (suite / "math.add/plain/views.npz").exists()
    assert "layout" not in read_case_manifest(suite / "math.add/grid")


def test_every_view_reads_back_its_logical_input(suite: Path) -> None:
    for folder in suite.glob("*/*@view-*"):
        case = read_case_manifest(folder)
        logical = read_arrays(folder / "inputs.npz", "inputs")
        buffers = read_arrays(folder / "views.npz", "views")
        assert "views.npz" in case["files"]
        for key, entry in case["inputs"].items():
            if "view" not in entry:
                continue
            view = entry["view"]
            buffer = buffers[view["buffer"]]
            assert buffer.ndim == 1 and buffer.dtype == logical[key].dtype
            if view["mask"] is None:
                read = _read_by_numpy(buffer, view)
            else:  # the valid box is a plain strided view; the rest is padding (0)
                read = np.zeros(view["shape"], buffer.dtype)
                box = tuple(slice(b, e) for b, e in view["mask"])
                start = view["offset"] + sum(b * s for (b, _), s in
                                             zip(view["mask"], view["strides"]))
                inner = {"shape": [e - b for b, e in view["mask"]],
                         "strides": view["strides"], "offset": start}
                read[box] = _read_by_numpy(buffer, inner)
            np.testing.assert_array_equal(read, logical[key], err_msg=str(folder))


def test_the_documented_layouts(suite: Path) -> None:
    def view(case_id: str, key: str) -> dict[str, Any]:
        return read_case_manifest(suite / case_id)["inputs"][key]["view"]

    assert view("math.add/grid@view-contiguous", "x") == {
        "buffer": "x", "shape": [2, 3], "strides": [3, 1], "offset": 0, "mask": None}
    assert view("math.add/grid@view-permuted", "x")["strides"] == [1, 2]
    flipped = view("math.add/grid@view-flipped", "x")
    assert (flipped["strides"], flipped["offset"]) == ([-3, -1], 5)
    assert view("math.add/grid@view-shrunk", "x")["offset"] == 1 * 5 + 1
    padded = view("math.add/grid@view-padded", "y")
    assert (padded["strides"], padded["offset"], padded["mask"]) == ([1, 1], -1, [[0, 2], [1, 2]])
    # x (random) has no zero border and no repeats: it keeps its plain delivery there
    assert "view" not in read_case_manifest(suite / "math.add/grid@view-padded")["inputs"]["x"]
    assert view("math.add/repeat@view-broadcast", "y")["strides"] == [0, 1]
    empty = view("math.sum_reduce/empty@view-zero-size", "input")
    assert (empty["offset"], empty["mask"]) == (0, None) and empty["strides"] != [3, 1]
    assert read_arrays(suite / "math.sum_reduce/empty@view-zero-size/views.npz",
                       "views")["input"].shape == (0,)


def test_the_suite_verifies_and_a_wrong_view_is_found(suite: Path) -> None:
    reports = verify_suite(suite)
    assert [r.problems for r in reports if r.problems] == []
    folder = suite / "math.add/grid@view-flipped"
    case = read_case_manifest(folder)
    case["inputs"]["x"]["view"]["offset"] = 4                  # reads one element too early
    assert any("outside" in p or "addresses" in p for p in check_layouts(folder, case))
    case["inputs"]["x"]["view"].update(offset=5, strides=[-1, -2])   # other elements
    assert check_layouts(folder, case) == ["input 'x': the view does not read back the input "
                                           "of inputs.npz"]


def test_table_options_are_checked(tmp_path: Path) -> None:
    table = tmp_path / "t.toml"
    table.write_text(TABLE.replace('layouts = ["broadcast", "padded"]', 'layouts = ["sideways"]'))
    with pytest.raises(TableError, match="layouts = true or a list of kinds"):
        read_table(table)
    table.write_text('module = "m"\n[[case]]\nmodel = "x.sknd"\nname = "m"\nclass = "exact"\n'
                     'layouts = true\n')
    with pytest.raises(TableError, match="operator cases only"):
        read_table(table)


# --------------------------------------------------------------------------- the schema


def _write(folder: Path, case: dict[str, Any]) -> None:
    (folder / "case.json").write_text(json.dumps(case))


@pytest.mark.parametrize("change, field", [
    ({"buffer": 3}, "view.buffer"),
    ({"buffer": "../x"}, "view.buffer"),
    ({"strides": [1]}, "view"),
    ({"offset": 1.5}, "view.offset"),
    ({"mask": [[0, 2]]}, "view"),
    ({"mask": [[0, 3], [0, 3]]}, "view"),
    ({"shape": [3, 2], "strides": [2, 1]}, "view.shape"),
    ({"shape": "2x3"}, "view"),
])
def test_the_schema_rejects_malformed_views(suite: Path, tmp_path: Path, change: dict,
                                            field: str) -> None:
    case = read_case_manifest(suite / "math.add/grid@view-flipped")
    case["inputs"]["x"]["view"].update(change)
    _write(tmp_path, case)
    with pytest.raises(ManifestError, match=rf"inputs\['x'\]\.{field}"):
        read_case_manifest(tmp_path)


def test_the_schema_accepts_views(suite: Path, tmp_path: Path) -> None:
    case = read_case_manifest(suite / "math.add/grid@view-padded")
    _write(tmp_path, case)
    assert read_case_manifest(tmp_path)["inputs"]["y"]["view"]["mask"] == [[0, 2], [1, 2]]
    del case["inputs"]["y"]["view"]["mask"]
    _write(tmp_path, case)
    with pytest.raises(ManifestError, match="view.mask"):
        read_case_manifest(tmp_path)


# --------------------------------------------------------------------------- the harness


class Recorder:
    """A Python back end that records how its inputs are laid out, and adds them."""

    def __init__(self) -> None:
        self.seen: dict[str, dict[str, Any]] = {}

    def prepare(self, case: Case) -> "Recorder":
        self.case = case
        return self

    def run(self, inputs: dict[str, Any]) -> dict[str, Any]:
        if "inputs" in inputs:  # a pack: a list of arrays
            self.seen[self.case.id] = {f"inputs.{k}": a.strides
                                       for k, a in enumerate(inputs["inputs"])}
            return {"output": np.concatenate(inputs["inputs"], axis=1)}
        self.seen[self.case.id] = {k: (a.strides, a.base, a.flags.owndata, a.flags.writeable)
                                   for k, a in inputs.items()}
        if "input" in inputs:
            return {"output": np.sum(inputs["input"], axis=1, keepdims=True)}
        return {"z": inputs["x"] + inputs["y"]}


def test_a_python_back_end_gets_real_strided_views(suite: Path) -> None:
    recorder = Recorder()
    for folder in sorted(suite.glob("*/*")):
        assert check_case(recorder, load_case(folder)).status == "pass", folder
    seen = recorder.seen
    assert seen["math.add/grid@view-flipped"]["x"][0] == (-24, -8)
    assert seen["math.add/grid@view-permuted"]["x"][0] == (8, 16)
    assert seen["math.add/grid@view-shrunk"]["x"][0] == (40, 8)
    assert seen["math.add/repeat@view-broadcast"]["y"][0] == (0, 8)
    for case_id, key in (("math.add/grid@view-flipped", "x"),
                         ("math.add/grid@view-flipped", "y"),
                         ("math.add/repeat@view-broadcast", "y")):
        _, base, owns, writeable = seen[case_id][key]
        assert base is not None and not owns and not writeable, (case_id, key)
    assert seen["math.add/repeat@view-broadcast"]["x"][0] == (8,)  # no view: as read
    assert seen["layout.concat/pack@view-flipped"] == {"inputs.0": (-16, -8),
                                                        "inputs.1": (-16, -8)}
    # a mask: the materialized array (padding 0), a fresh C-contiguous one
    strides, _, owns, _ = seen["math.add/grid@view-padded"]["y"]
    assert strides == (24, 8) and owns
    # no view: the array of inputs.npz as read
    assert seen["math.add/plain"]["x"][0] == (8,)


def test_refinterp_passes_every_variant(suite: Path) -> None:
    results = run_suite(suite, BackendSpec("refinterp:vector"))
    assert len(results) == 13 and {r.status for r in results} == {"pass"}


def test_a_command_back_end_gets_the_views_file(suite: Path, tmp_path: Path) -> None:
    copy = tmp_path / "views.json"
    backend = CommandBackend(f"cp {{views}} {copy}; exit 77")
    case = _case(suite, "math.add/grid@view-padded")
    assert check_case(backend, case).status == "skip"
    document = json.loads(copy.read_text())
    assert document["format"] == "refinterp-views/1"
    assert Path(document["buffers"]) == (suite / "math.add/grid@view-padded/views.npz").resolve()
    assert document["inputs"] == {"y": {"dtype": "real", "buffer": "y", "shape": [2, 3],
                                        "strides": [1, 1], "offset": -1,
                                        "mask": [[0, 2], [1, 2]]}}
    buffers = read_arrays(document["buffers"], "buffers")
    np.testing.assert_array_equal(buffers["y"], [5.0, -1.5])
    check_case(backend, _case(suite, "math.add/plain"))
    assert json.loads(copy.read_text()) == {"format": "refinterp-views/1", "buffers": None,
                                            "inputs": {}}


def test_layout_variants_go_with_their_base_case() -> None:
    def case(case_id: str) -> Case:
        return Case(case_id, Path("."), {"id": case_id})

    cases = [case(i) for i in ("m.div/a", "m.div/a@khronos", "m.div/a@view-flipped",
                               "m.div/b", "m.div/b@view-shrunk")]
    assert [c.id for c in applicable(cases, "spec")] == [
        "m.div/a", "m.div/a@view-flipped", "m.div/b", "m.div/b@view-shrunk"]
    assert [c.id for c in applicable(cases, "khronos")] == [
        "m.div/a@khronos", "m.div/b", "m.div/b@view-shrunk"]


def test_a_rank0_input_reads_back_in_every_layout_that_applies() -> None:
    """A rank-0 input (a fill value) is its own shape, not a 1-element vector, in every kind."""
    from refinterp.golden import layouts as L
    for value in (np.array(-1.5), np.array(np.nan), np.array(9), np.array(True)):
        for kind in L.KINDS:
            found = L.layout(value, kind)
            if found is not None:
                assert L.mismatch(value, *found) is None, (value, kind)
