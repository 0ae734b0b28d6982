"""Per-element error bounds in the comparison (docs/golden.md "Per-element error bounds"): a
case's `bounds.npz` holds an error magnitude m per element of a real output, and the allowed
error of an element is 2·u_d·m (u_d = eps_d / 2) instead of the class's atol + rtol·|e|; an
element whose m is NaN keeps the class rule. The expected verdicts are worked out by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from refinterp.golden.tolerance import Bound, allowed_errors, within
from refinterp.harness import BackendSpec, run_suite
from refinterp.io import encode_npz, read_arrays
from testsupport.small_suites import case_path, copy_suite, rehash_file

ROOT = Path(__file__).resolve().parent.parent
CASE = "nn.softmax/large_magnitudes_no_overflow"


def test_allowed_errors_are_two_half_epsilons_times_the_magnitude() -> None:
    m = np.array([1.0, 0.0, np.nan, 2.0 ** 10])
    assert allowed_errors(m, "float64")[[0, 1, 3]].tolist() == [2.0 ** -52, 0.0, 2.0 ** -42]
    assert allowed_errors(m, "float32")[0] == 2.0 ** -23
    assert np.isnan(allowed_errors(m, "float32")[2])


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


def _suite_with_magnitudes(tmp_path: Path, scale: float) -> Path:
    """The softmax case whose class bound let garbage pass, with error magnitudes m = scale·1
    per element (a hand-chosen stand-in: softmax outputs are at most 1, and for inputs whose
    differences are exact a correctly rounded result is within a few ULPs of 1)."""
    suite = copy_suite(ROOT / "golden", [CASE], tmp_path / "suite")
    folder = suite / case_path(suite, CASE)
    outputs = read_arrays(folder / "outputs.npz", "outputs")
    (folder / "bounds.npz").write_bytes(encode_npz(
        {key: np.full(value.shape, scale) for key, value in outputs.items()}))
    rehash_file(suite, CASE, "bounds.npz")
    return suite


def test_garbage_fails_where_the_class_bound_let_it_pass(tmp_path: Path) -> None:
    suite = _suite_with_magnitudes(tmp_path, 8.0)
    (before,) = run_suite(ROOT / "golden", BackendSpec(
        name="testsupport.garbage_backends:Scaled", in_process=True), include=f"^{CASE}$")
    assert before.status == "pass"  # the committed case: atol from the inputs' magnitude
    for garbage in ("Scaled", "Constant", "Float16", "Noise"):
        (result,) = run_suite(suite, BackendSpec(
            name=f"testsupport.garbage_backends:{garbage}", in_process=True))
        assert result.status == "fail", garbage
    (mismatch,) = run_suite(suite, BackendSpec(name="testsupport.garbage_backends:Scaled",
                                               in_process=True))
    assert "allowed here" in mismatch.explanation and "error magnitude m = 8.0" in \
        mismatch.explanation
    (right,) = run_suite(suite, BackendSpec(name="refinterp:vector"))
    assert right.status == "pass"
    (float32,) = run_suite(suite, BackendSpec(name="testsupport.faulty_backends:Float32",
                                              in_process=True))
    assert float32.status == "pass"
