"""Back ends that are wrong on purpose, to prove that golden tolerances cannot be fooled: each
is refinterp itself with its real outputs changed in one systematic way. A verdict is sound when
every case whose real outputs such a back end changed beyond float32 precision fails
(`changed_beyond_float32`), and the harness's tolerances are judged by how many such cases pass
(`tools/garbage_backends.py` counts them; tests/harness/test_garbage_backends.py requires none).

Named as Python back ends `testsupport.garbage_backends:<Class>`.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import numpy as np

import refinterp.api as api
from refinterp.harness import BackendSpec, load_suite, run_suite
from refinterp.io import flatten_packs, read_arrays


class _Runner:
    def __init__(self, backend: "Garbage", case: Any) -> None:
        self.backend, self.case = backend, case
        self.program = api.load(case.model)

    def run(self, inputs: dict[str, Any]) -> dict[str, Any]:
        outputs = flatten_packs(api.evaluate(self.program, inputs=inputs,
                                             params=self.case.params or None).outputs)
        return {k: self.backend.change(v, case_rng(self.case.id)) if v.dtype.kind == "f"
                else v for k, v in outputs.items()}


def case_rng(case_id: str) -> np.random.Generator:
    """The random generator of a case (the same for the back end and for judging it)."""
    return np.random.default_rng(zlib.crc32(case_id.encode()))


class Garbage:
    """refinterp, then `change` applied to every real output."""

    profile = "spec"

    def prepare(self, case: Any) -> _Runner:
        return _Runner(self, case)

    def change(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return values


class Constant(Garbage):
    """12345.0 everywhere."""

    def change(self, values, rng):
        return np.full_like(values, 12345.0)


class Zeros(Garbage):
    def change(self, values, rng):
        return np.zeros_like(values)


class Scaled(Garbage):
    """Every value ×(1 + 1e-3)."""

    def change(self, values, rng):
        return values * (1 + 1e-3)


class Float16(Garbage):
    """Every value rounded to float16 (returned as float64)."""

    def change(self, values, rng):
        with np.errstate(over="ignore"):
            return values.astype(np.float16).astype(np.float64)


class Noise(Garbage):
    """Every value with 1 % relative noise."""

    def change(self, values, rng):
        return values * (1 + 0.01 * rng.standard_normal(values.shape))


GARBAGE = ("Constant", "Zeros", "Scaled", "Float16", "Noise")


def changed_beyond_float32(got: np.ndarray, expected: np.ndarray) -> bool:
    """Whether `got` differs from `expected` anywhere by more than float32 precision: more than
    4 float32 ULPs of the expected value (and not both NaN or the same infinity)."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    if got.shape != expected.shape:
        return True
    same = (got == expected) | (np.isnan(got) & np.isnan(expected))
    finite = np.isfinite(expected) & np.isfinite(got)
    with np.errstate(over="ignore", invalid="ignore"):
        scale = np.maximum(np.abs(expected), np.finfo(np.float32).tiny)
        close = finite & (np.abs(got - expected) <= 4 * np.finfo(np.float32).eps * scale)
    return bool(np.any(~(same | close)))


def false_passes(suite: Path, name: str, *, include: str | None = None, jobs: int = 1,
                 in_process: bool = False) -> tuple[int, int, list[str]]:
    """(value and error cases run, failed, ids of false passes) of the garbage back end `name`
    on `suite` (the cases matching `include`): a false pass is a value case it passed although
    it changed some real output beyond float32 precision."""
    backend = globals()[name]()
    cases = {case.id: case for case in load_suite(suite)}
    results = run_suite(suite, BackendSpec(name=f"testsupport.garbage_backends:{name}",
                                           in_process=in_process), include=include, jobs=jobs)
    ran = [r for r in results if r.status in ("pass", "fail")]
    wrong = []
    for result in ran:
        case = cases[result.id]
        if result.status != "pass" or case.error is not None:
            continue
        expected = read_arrays(case.folder / "outputs.npz", "outputs.npz")
        if any(value.dtype.kind == "f" and changed_beyond_float32(
                backend.change(value, case_rng(case.id)), value)
               for value in expected.values()):
            wrong.append(result.id)
    return len(ran), sum(r.status == "fail" for r in ran), wrong
