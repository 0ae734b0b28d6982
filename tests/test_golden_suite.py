"""The committed golden suite `golden/` (docs/golden.md, "The committed suite"): it covers every
public stdlib operator, every case verifies (hashes and recomputation, bit for bit), a sample
rebuilds to the same bytes, the values agree with independent NumPy code, and it stays small."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import refinterp.api as api
from refinterp.golden import build_suite, per_operator, read_tables, select, verify_suite

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "golden"
TABLES = sorted((SUITE / "cases").glob("*.toml"))
MAX_BYTES = 25 * 2**20
PER_OPERATOR = 7  # the committed suite: `golden build golden/cases/*.toml --per-operator 7`


def manifest() -> dict:
    return json.loads((SUITE / "manifest.json").read_text())


# bundled modules whose cases form a suite of their own, golden/<module>/ (built from
# golden/<module>/cases/*.toml, every table entry: tests/test_golden_module_suites.py)
MODULE_SUITES = ("nx", "ocannl")


def public_operators() -> list[api.OperatorSignature]:
    """The public operators the main suite covers (not those of MODULE_SUITES)."""
    return [s for m in api.stdlib_modules() if m not in MODULE_SUITES
            for s in api.operators(m) if not s.name.startswith("_")]


def test_every_stdlib_operator_has_cases() -> None:
    counts = manifest()["operators"]
    missing = [s.qualified for s in public_operators() if s.qualified not in counts]
    assert not missing, f"stdlib operators without a golden case: {missing}"
    few = {s.qualified: counts[s.qualified] for s in public_operators()
           if counts[s.qualified] < 5}
    assert not few, f"operators with fewer than 5 cases: {few}"


def test_every_operator_with_asserts_has_an_error_case() -> None:
    errors = {c["operator"] for c in manifest()["cases"] if c["kind"] == "error"}
    missing = [s.qualified for s in public_operators() if s.asserts and s.qualified not in errors]
    assert not missing, f"operators with @assert but no error case: {missing}"


def test_whole_model_cases_are_there() -> None:
    ids = {c["id"] for c in manifest()["cases"]}
    assert {"models/small_cnn", "models/lstm_jagged", "models/control_flow_positive",
            "models/running_mean"} <= ids


def test_the_suite_is_small() -> None:
    """Under 25 MB counted as the disk holds it (whole 4 KiB blocks per file and folder), so
    also in file bytes."""
    paths = [p for p in SUITE.rglob("*")
             if p.relative_to(SUITE).parts[0] not in MODULE_SUITES]
    size = sum(p.stat().st_size for p in paths if p.is_file())
    blocks = sum(-(-max(p.stat().st_size, 1) // 4096) * 4096 for p in paths)
    assert size < MAX_BYTES and blocks < 25 * 10**6, f"{size} bytes, {blocks} in blocks"


def test_the_committed_suite_is_the_documented_selection() -> None:
    """golden/ holds exactly the cases `--per-operator 7` selects from the tables (and their
    profile variants): the full suite is rebuilt from the same tables without the option."""
    selected = {s.id for s in per_operator(read_tables(TABLES), PER_OPERATOR)}
    committed = {c["id"] for c in manifest()["cases"]}
    assert {i.split("@")[0] for i in committed} == selected


def test_the_whole_suite_verifies() -> None:
    """Every hash, and every case recomputed from its model.sknd bit for bit."""
    reports = verify_suite(SUITE)
    assert len(reports) == manifest()["count"]
    bad = {r.id: r.problems for r in reports if r.problems}
    assert not bad, bad


def _comparable(path: Path) -> bytes | dict:
    """A file's bytes; a case.json without its provenance (the versions of NumPy and Python
    the suite was built with may differ from the test machine's)."""
    if path.name == "case.json":
        data = json.loads(path.read_text())
        data.pop("versions")
        return data
    return path.read_bytes()


def test_a_sample_rebuilds_to_the_same_bytes(tmp_path: Path) -> None:
    """One case of each table (and its profile variants) rebuilt: identical files."""
    specs = per_operator(read_tables(TABLES), PER_OPERATOR)
    sample = []
    for table in TABLES:
        first = next(s for s in specs if s.table == str(table))
        sample.extend(select(specs, f"^{first.id.replace('.', '[.]')}$"))
    # build into a copy of the suite's layout so that the recorded commands are the same
    suite = tmp_path / "golden"
    (suite / "cases").mkdir(parents=True)
    for table in TABLES:
        (suite / "cases" / table.name).write_text(table.read_text())
    rebuilt_specs = per_operator(read_tables(sorted((suite / "cases").glob("*.toml"))),
                                 PER_OPERATOR)
    ids = {s.id for s in sample}
    import shutil
    shutil.copytree(SUITE / "cases" / "models", suite / "cases" / "models")
    written = build_suite([s for s in rebuilt_specs if s.id in ids], suite, jobs=2)
    assert len(written) >= len(TABLES)
    for case_id, path, _ in written:
        for file in sorted((suite / path).iterdir()):
            assert _comparable(file) == _comparable(SUITE / path / file.name), \
                f"{case_id}: {file.name} differs from the committed one"


def _case(path: str) -> tuple[dict, dict]:
    folder = SUITE / path
    return dict(np.load(folder / "inputs.npz")), dict(np.load(folder / "outputs.npz"))


def _cases_of(operator: str) -> list[str]:
    return [c["path"] for c in manifest()["cases"]
            if c["operator"] == operator and c["kind"] == "value"
            and not c["path"].endswith("@khronos")]


@pytest.mark.parametrize("operator,expected", [
    ("math.exp", lambda i: np.exp(i["x"])),
    ("math.sqrt", lambda i: np.sqrt(i["x"])),
    ("math.mul", lambda i: i["x"] * i["y"]),
    ("math.sub", lambda i: i["x"] - i["y"]),
])
def test_elementwise_goldens_equal_numpy(operator: str, expected) -> None:
    """Cases without alignment attributes broadcast as NumPy does."""
    paths = [p for p in _cases_of(operator)
             if not json.loads((SUITE / p / "case.json").read_text())["attributes"]]
    assert len(paths) >= 5
    for path in paths:
        inputs, outputs = _case(path)
        with np.errstate(all="ignore"):
            want = expected(inputs)
        (name, got), = outputs.items()
        assert got.shape == want.shape, path
        assert np.allclose(got, want, rtol=1e-15, atol=0, equal_nan=True), path


def test_matmul_goldens_equal_numpy() -> None:
    checked = 0
    for path in _cases_of("linalg.matmul"):
        case = json.loads((SUITE / path / "case.json").read_text())
        inputs, outputs = _case(path)
        a, b = inputs["A"], inputs["B"]
        if case["attributes"].get("transA"):
            a = np.swapaxes(a, -1, -2)
        if case["attributes"].get("transB"):
            b = np.swapaxes(b, -1, -2)
        want = np.matmul(a, b) + inputs.get("C", 0.0)
        assert np.allclose(outputs["Z"], want, rtol=1e-12, atol=1e-12, equal_nan=True), path
        checked += 1
    assert checked >= 3


def test_sum_reduce_goldens_equal_numpy() -> None:
    checked = 0
    for path in _cases_of("math.sum_reduce"):
        case = json.loads((SUITE / path / "case.json").read_text())
        inputs, outputs = _case(path)
        x = inputs["input"]
        axes = tuple(sorted({a % x.ndim for a in case["attributes"].get("axes", range(x.ndim))}))
        squeeze = case["attributes"].get("squeeze", False)
        with np.errstate(invalid="ignore"):
            want = np.sum(x, axis=axes, keepdims=not squeeze)
        assert np.allclose(outputs["output"], want, rtol=1e-12, atol=1e-12,
                           equal_nan=True), path
        checked += 1
    assert checked >= 5
