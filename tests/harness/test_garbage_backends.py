"""Verdicts that cannot be fooled (docs/golden.md "Tolerances", "Per-element error bounds"):
back ends that are wrong on purpose — a constant, zeros, every value ×(1 + 1e-3), values
rounded to float16, 1 % noise (testsupport/garbage_backends.py) — fail every case of the
committed suite whose real outputs they changed beyond float32 precision. The sample holds the
cases whose class tolerance took its atol from the inputs' magnitude (softmax of inputs up to
1e30, means of 1e23 entries) and sums, contractions, libm functions, normalisations and whole
models; `python tools/garbage_backends.py` runs the whole suites."""

from __future__ import annotations

from pathlib import Path

import pytest

from testsupport.garbage_backends import GARBAGE, false_passes
from testsupport.paths import REPO_ROOT

ROOT = REPO_ROOT
SAMPLE = (r"^(nn\.softmax/|math\.mean_reduce/|math\.sum_reduce/|linalg\.matmul/|nn\.conv/|"
          r"math\.exp/|nn\.batch_norm/|nn\.sigmoid/|image\.linear_resize/|models/)")


@pytest.mark.parametrize("name", GARBAGE)
def test_a_garbage_back_end_fails_every_case_it_changed(name: str) -> None:
    ran, failed, wrong = false_passes(ROOT / "golden", name, include=SAMPLE, in_process=True)
    assert ran >= 50 and failed >= 30, (ran, failed)
    assert wrong == [], f"{name} passed cases it changed beyond float32 precision: {wrong}"


def test_the_sample_holds_the_cases_the_class_rule_let_garbage_pass() -> None:
    import re
    assert re.match(SAMPLE, "nn.softmax/large_magnitudes_no_overflow")
    assert re.match(SAMPLE, "math.mean_reduce/special_rows")
