"""The text report that scales (harness.report.print_report): failures only, a shared
explanation printed once as a note, the operator table only with --verbose, skips by
reason; and the figures of a failing comparison (harness.figures) that the JSON and HTML
reports carry."""

from __future__ import annotations

import io

import numpy as np

from refinterp.harness import load_case
from refinterp.harness.figures import MAX_CELLS, _pool, error_ratio, failure_figures
from refinterp.harness.report import load_results, print_report, write_json
from refinterp.harness.suite_run import Result
from testsupport.paths import REPO_ROOT

SHARED = "Matches profile other: " + "a long paragraph that several cases share " * 4


def results() -> list[Result]:
    fails = [Result(f"math.div/case{k}", "fail", "mismatch",
                    f"output 'z' differs in element {k}\n{SHARED}\nRe-run: refinterp check",
                    operator="math.div", module="math") for k in range(3)]
    skips = [Result(f"nn.pool/s{k}", "skip", None, "pool mode 'x' unsupported\nmore",
                    operator="nn.pool", module="nn") for k in range(2)]
    passes = [Result(f"nn.relu/p{k}", "pass", operator="nn.relu", module="nn")
              for k in range(4)]
    return fails + skips + passes


def report(verbosity: int = 0) -> str:
    out = io.StringIO()
    print_report(results(), out, verbosity)
    return out.getvalue()


def test_a_shared_explanation_is_printed_once_and_referenced() -> None:
    text = report()
    assert text.count(SHARED.strip()) == 1
    assert text.count("(note 1, below)") == 3
    assert "note 1: " + SHARED.strip() in text
    for k in range(3):  # what differs between the cases stays with each
        assert f"output 'z' differs in element {k}" in text


def test_the_default_report_is_short_and_verbose_has_the_tables() -> None:
    short, verbose = report(), report(1)
    assert "nn.relu" not in short  # no row for an operator that passed everything
    assert "failing: math.div 3/3" in short
    assert "9 case(s): 4 passed, 3 failed, 2 skipped" in short
    assert "2 skipped: pool mode 'x' unsupported" in short
    assert "PASS" not in short and "nn.relu/p0" not in short
    rows = [line.split() for line in verbose.splitlines()]
    assert ["nn.relu", "4", "0", "0", "0", "0"] in rows
    assert ["math.div", "0", "3", "0", "0", "0"] in rows


CASE = REPO_ROOT / "golden" / "nn.relu" / "leaky_alpha"


def test_the_error_map_is_above_1_exactly_where_an_element_fails() -> None:
    case = load_case(CASE)
    (key, want), = case.expected.items()
    assert want.ndim == 2
    assert (error_ratio(case, key, want.copy(), want) <= 1).all()
    got = want.copy()
    got[1, 2] += 1.0
    got[0, 0] = np.nan
    ratio = error_ratio(case, key, got, want)
    assert sorted(zip(*np.nonzero(ratio > 1))) == [(0, 0), (1, 2)]
    (figure,) = failure_figures(case, {key: got}, [key])
    assert figure["failing"] == 2 and figure["worst"] == [0, 0]  # the NaN is the worst
    (plane,) = figure["slices"]
    assert plane["worst"] == [0, 0] and plane["ratio"][1][2] > 1
    assert figure["ulp_histogram"][-1] == [">65536", 1]  # the finite failing element


def test_pooling_keeps_the_worst_element() -> None:
    plane = np.zeros((100, 7))
    plane[97, 3] = 5.0
    pooled = _pool(plane, np.max)
    assert pooled.shape == (-(-100 // 3), 7) and max(pooled.shape) <= MAX_CELLS
    assert pooled[97 // 3, 3] == 5.0 and pooled.sum() == 5.0


def test_figures_survive_the_json_report(tmp_path) -> None:
    figure = {"output": "y", "shape": [2], "worst": [1], "slices": []}
    result = Result("nn.relu/x", "fail", "mismatch", "e", operator="nn.relu", module="nn",
                    figures=[figure])
    write_json(tmp_path / "run.json", [result], "b", "s")
    (loaded,), backend, _ = load_results([tmp_path / "run.json"])
    assert loaded.figures == [figure] and backend == "b"
