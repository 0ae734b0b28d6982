"""The committed golden suite `golden/` (docs/golden.md, "The committed suite"): it covers every
public stdlib operator, every case verifies (hashes and recomputation, bit for bit), a sample
rebuilds to the same bytes, the values agree with independent NumPy code, and it stays small."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import refinterp.api as api
from refinterp.golden import build_suite, per_operator, read_tables, verify_suite
from testsupport.module_suites import MODULE_SUITES, module_suite
from testsupport.paths import REPO_ROOT

ROOT = REPO_ROOT
SUITE = ROOT / "golden"
TABLES = sorted((SUITE / "cases").glob("*.toml"))
MAX_BYTES = 25 * 2**20
PER_OPERATOR = 7  # the committed suite: `golden build golden/cases/*.toml --per-operator 7`


def manifest() -> dict:
    return json.loads((SUITE / "manifest.json").read_text())


# bundled modules whose cases form a suite of their own, golden/<module>/ (built from
# golden/<module>/cases/*.toml, every table entry: tests/golden/test_golden_module_suites.py)


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
    """Everything committed under golden/ (the main suite, the tables, the module suites' tables
    and manifest hashes) under 25 MB counted as the disk holds it (whole 4 KiB blocks per file
    and folder), so also in file bytes."""
    paths = [p for p in SUITE.rglob("*")  # all that is committed: not a module suite built
             if p.relative_to(SUITE).parts[0] not in MODULE_SUITES  # in place (.gitignore)
             or p.relative_to(SUITE).parts[1:2] in ((), ("cases",))]
    size = sum(p.stat().st_size for p in paths if p.is_file())
    blocks = sum(-(-max(p.stat().st_size, 1) // 4096) * 4096 for p in paths)
    assert size < MAX_BYTES and blocks < 25 * 10**6, f"{size} bytes, {blocks} in blocks"


def test_the_committed_suite_is_the_documented_selection() -> None:
    """golden/ holds exactly the cases `--per-operator 7` selects from the tables, each under its
    own id or as a profile variant `<id>@<profile>` of one."""
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


def test_the_committed_suite_is_exactly_the_documented_build(tmp_path: Path) -> None:
    """The documented rebuild (`golden build golden/cases/*.toml -o golden -j 2
    --per-operator 7`, README and docs/golden.md) into a copy of the suite's layout gives the
    committed suite: the same case ids, profile variants included (a variant that a change of
    the code adds or drops is caught here, by its full id), and the same bytes in every file."""
    suite = tmp_path / "golden"
    shutil.copytree(SUITE / "cases", suite / "cases")
    specs = per_operator(read_tables(sorted((suite / "cases").glob("*.toml"))), PER_OPERATOR)
    written = build_suite(specs, suite, jobs=2)
    rebuilt = {case_id for case_id, _, _ in written}
    committed = {c["id"] for c in manifest()["cases"]}
    assert sorted(rebuilt - committed) == [] and sorted(committed - rebuilt) == []
    differing = []
    for case_id, path, _ in written:
        for file in sorted((suite / path).iterdir()):
            if _comparable(file) != _comparable(SUITE / path / file.name):
                differing.append(f"{case_id}: {file.name}")
    assert not differing, differing[:20]
    assert json.loads((suite / "manifest.json").read_text()) == manifest()


@pytest.mark.parametrize("backend", ["refinterp:auto", "refinterp:khronos"])
@pytest.mark.parametrize("folder", ["", *MODULE_SUITES])
def test_refinterp_passes_its_own_suites(folder: str, backend: str) -> None:
    """`refinterp check golden --backend refinterp:auto` (and `refinterp:khronos`, which runs
    the `@khronos` variants where there are some and the base cases elsewhere) passes every case
    of the committed suite and of each module suite (built from its tables): no failure, no
    skip."""
    suite = module_suite(folder) if folder else SUITE
    result = subprocess.run([sys.executable, "-m", "refinterp", "check", str(suite),
                             "--backend", backend, "-j", "2"],
                            capture_output=True, text=True, timeout=600)
    summary = [line for line in result.stdout.splitlines() if " case(s): " in line]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert summary and ", 0 failed, 0 skipped," in summary[-1], summary


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
