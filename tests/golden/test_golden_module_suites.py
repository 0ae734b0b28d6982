"""The golden suites of bundled modules that have their own (golden/<module>/, built from every
entry of golden/<module>/cases/*.toml; docs/golden.md "Module suites"): each built suite is
byte for byte the frozen one (the committed sha256 of its manifest, which pins every
file's hash), covers every
public operator of its module, has an error case for every operator with an @assert, verifies
(hashes and recomputation bit for bit), is exactly its tables' cases, and stays small."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

import refinterp.api as api
from refinterp.golden import read_tables, verify_suite
from testsupport.module_suites import (MODULE_SUITES, frozen_manifest_sha256, module_suite,
                                      tables)

MODULES = list(MODULE_SUITES)
MAX_BLOCK_BYTES = 20 * 10**6  # on disk, whole 4 KiB blocks


def suite(module: str) -> Path:
    return module_suite(module)


def manifest(module: str) -> dict:
    return json.loads((suite(module) / "manifest.json").read_text())


@pytest.mark.parametrize("module", MODULES)
def test_the_built_suite_is_the_frozen_one(module: str) -> None:
    """Every case's case.json hash is in the manifest and every file's hash in its case.json:
    equal manifests mean equal bytes everywhere."""
    built = hashlib.sha256((suite(module) / "manifest.json").read_bytes()).hexdigest()
    assert built == frozen_manifest_sha256(module)


@pytest.mark.parametrize("module", MODULES)
def test_every_operator_has_cases_and_every_assert_an_error_case(module: str) -> None:
    operators = [s for s in api.operators(module) if not s.name.startswith("_")]
    counts = manifest(module)["operators"]
    missing = [s.qualified for s in operators if counts.get(s.qualified, 0) < 3]
    assert not missing, f"{module} operators with fewer than 3 cases: {missing}"
    errors = {c["operator"] for c in manifest(module)["cases"] if c["kind"] == "error"}
    unasserted = [s.qualified for s in operators if s.asserts and s.qualified not in errors]
    assert not unasserted, f"{module} operators with @assert but no error case: {unasserted}"


@pytest.mark.parametrize("module", MODULES)
def test_the_suite_is_every_case_of_its_tables(module: str) -> None:
    expected = {s.id for s in read_tables(tables(module))}
    committed = {c["id"].split("@")[0] for c in manifest(module)["cases"]}
    assert committed == expected


@pytest.mark.parametrize("module", MODULES)
def test_the_suite_verifies(module: str) -> None:
    reports = verify_suite(suite(module))
    assert len(reports) == manifest(module)["count"]
    bad = {r.id: r.problems for r in reports if r.problems}
    assert not bad, bad


@pytest.mark.parametrize("module", MODULES)
def test_the_suite_is_small(module: str) -> None:
    paths = list(suite(module).rglob("*"))
    blocks = sum(-(-max(p.stat().st_size, 1) // 4096) * 4096 for p in paths)
    assert blocks < MAX_BLOCK_BYTES, blocks


def _value_cases(module: str, operator: str) -> list[Path]:
    return [suite(module) / c["path"] for c in manifest(module)["cases"]
            if c["operator"] == f"{module}.{operator}" and c["kind"] == "value"]


def test_nx_integer_division_truncates_and_remainder_takes_the_dividend_sign() -> None:
    """Seed 000: integer division truncates toward zero (C), the remainder has the sign of the
    dividend (fmod): checked on every int case of the suite with NumPy's own trunc/fmod."""
    checked = 0
    for operator, expected in (("div", lambda a, b: np.trunc(a / b)),
                               ("mod_", np.fmod)):
        for folder in _value_cases("nx", operator):
            inputs = dict(np.load(folder / "inputs.npz"))
            outputs = dict(np.load(folder / "outputs.npz"))
            a, b = (inputs[k] for k in sorted(inputs))
            (out,) = outputs.values()
            typed = "types" in json.loads((folder / "case.json").read_text())
            if out.dtype.kind != "i" or typed:  # a typed case wraps (docs/nx.md)
                continue
            want = expected(a.astype(np.float64), b.astype(np.float64))
            assert np.array_equal(out, want.astype(np.int64)), folder.name
            checked += 1
    assert checked >= 2
