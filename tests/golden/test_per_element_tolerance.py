"""Per-element error bounds in the comparison (docs/golden.md "Tolerances"): a case's
`bounds.npz` holds an error magnitude m per element of a real output, and the allowed error of
an element is the larger of 2·u_d·m (u_d = eps_d / 2) and the class's floor (its atol and
rtol·|e| with the inputs' magnitude taken as 1) instead of the class's atol + rtol·|e|; an
element whose m is NaN keeps the class rule. The expected verdicts are worked out by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from refinterp.golden.tolerance import Bound, allowed_errors, magnitude_errors, within
from refinterp.harness import BackendSpec, run_suite
from refinterp.io import encode_npz, read_arrays
from testsupport.small_suites import case_path, copy_suite, rehash_file, rewrite_case
from testsupport.paths import REPO_ROOT

ROOT = REPO_ROOT
CASE = "nn.softmax/large_magnitudes_no_overflow"


def test_magnitude_errors_are_two_half_epsilons_times_the_magnitude() -> None:
    m = np.array([1.0, 0.0, np.nan, 2.0 ** 10])
    assert magnitude_errors(m, "float64")[[0, 1, 3]].tolist() == [2.0 ** -52, 0.0, 2.0 ** -42]
    assert magnitude_errors(m, "float32")[0] == 2.0 ** -23
    assert np.isnan(magnitude_errors(m, "float32")[2])


def test_the_allowance_is_the_larger_of_the_magnitudes_and_the_class_floor() -> None:
    """A sum of n = 10 terms (class reduction): floor = 2·n·eps_d·(1 + |e|) — the stored
    atol's input magnitude A (here 1e30) is not used."""
    tolerance = {"class": "reduction", "reduction_length": 10,
                 "float32": {"ulp": 4, "rtol": 20 * 2.0 ** -23, "atol": 20 * 2.0 ** -23 * 1e30}}
    expected = np.array([1.0, 1.0, 3.0])
    m = np.array([2.0 ** 30, 0.0, np.nan])
    allowed = allowed_errors(m, expected, tolerance, "float32")
    assert allowed[0] == 2.0 ** 7  # 2·u·m
    assert allowed[1] == 20 * 2.0 ** -23 * 2  # the floor: atol (A = 1) + rtol·|1|
    assert np.isnan(allowed[2])  # no analysis: the class rule whole


def test_a_finite_magnitude_replaces_the_class_bound_and_nan_keeps_it() -> None:
    expected = np.array([1.0, 1.0, 1.0])
    actual = np.array([1.0 + 1e-6, 1.0 + 1e-6, 1.0 + 1e-6])
    loose = Bound(ulp=0, atol=1e-3)  # the class alone passes all three
    assert within(actual, expected, loose).all()
    allowed = np.array([1e-9, 1e-5, np.nan])  # tight, loose enough, no analysis
    assert within(actual, expected, loose, allowed).tolist() == [False, True, True]
    # the ULP rule still applies beside the per-element bound: 1 ULP off passes with m = 0
    one_ulp = np.nextafter(expected, 2.0)
    assert within(one_ulp, expected, Bound(ulp=1), np.zeros(3)).all()
    assert not within(one_ulp, expected, Bound(ulp=0), np.zeros(3)).any()


def _suite_without_magnitudes(tmp_path: Path) -> Path:
    """The softmax case as the class rule alone judges it (its bounds.npz removed)."""
    suite = copy_suite(ROOT / "golden", [CASE], tmp_path / "without")
    (suite / case_path(suite, CASE) / "bounds.npz").unlink(missing_ok=True)

    def drop(data: dict) -> None:
        data["files"].pop("bounds.npz", None)
        for entry in data["outputs"].values():
            entry["tolerance"].pop("bound", None)
    rewrite_case(suite, CASE, drop)
    return suite


def _suite_with_magnitudes(tmp_path: Path, scale: float) -> Path:
    """The softmax case whose class bound let garbage pass, with error magnitudes m = scale·1
    per element (a hand-chosen stand-in: softmax outputs are at most 1, and for inputs whose
    differences are exact a correctly rounded result is within a few ULPs of 1)."""
    suite = _suite_without_magnitudes(tmp_path / "with")
    folder = suite / case_path(suite, CASE)
    outputs = read_arrays(folder / "outputs.npz", "outputs")
    (folder / "bounds.npz").write_bytes(encode_npz(
        {key: np.full(value.shape, scale) for key, value in outputs.items()}))
    rehash_file(suite, CASE, "bounds.npz")
    return suite


def test_garbage_fails_where_the_class_bound_let_it_pass(tmp_path: Path) -> None:
    without = _suite_without_magnitudes(tmp_path)
    (before,) = run_suite(without, BackendSpec(name="testsupport.garbage_backends:Scaled",
                                               in_process=True))
    assert before.status == "pass"  # the class rule alone: atol from the inputs' magnitude
    suite = _suite_with_magnitudes(tmp_path, 8.0)
    for garbage in ("Scaled", "Constant", "Float16", "Noise"):
        (result,) = run_suite(suite, BackendSpec(
            name=f"testsupport.garbage_backends:{garbage}", in_process=True))
        assert result.status == "fail", garbage
    (mismatch,) = run_suite(suite, BackendSpec(name="testsupport.garbage_backends:Scaled",
                                               in_process=True))
    assert "allowed here" in mismatch.explanation and "error magnitude m = 8.0" in \
        mismatch.explanation and "class's floor" in mismatch.explanation
    (right,) = run_suite(suite, BackendSpec(name="refinterp:vector"))
    assert right.status == "pass"
    (float32,) = run_suite(suite, BackendSpec(name="testsupport.faulty_backends:Float32",
                                              in_process=True))
    assert float32.status == "pass"
