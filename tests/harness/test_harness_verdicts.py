"""Harness verdicts that cannot be fooled (docs/harness.md): a case is verified before it is
trusted and the back end gets its own copy of it; a case the harness cannot read, verify or
judge is `broken` (never a pass, never the back end's crash); a command that cannot run
fails loudly, even on error cases, and stops the run early; narrow dtypes are compared by
their own rule; skips are visible and a run where nothing ran does not succeed.

Each test works on a small suite: a few case folders of golden/ copied into tmp_path with
their manifest entries (testsupport/small_suites.py); golden/ itself is never modified."""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

from refinterp.cli import main
from refinterp.core.diagnostics import Diagnostic
from refinterp.golden.tolerance import Bound, bound_of, bounds, ulp_distance, within
from refinterp.golden.verify import verify_suite
from refinterp.harness import BackendSpec, Result, run_suite
from refinterp.harness.expect import Expectation, write_expectations
from refinterp.harness.report import load_results
from refinterp.harness.suite_run import apply_expectations
from testsupport.small_suites import case_path, copy_suite, rehash_file, rewrite_case
from testsupport.module_suites import module_suite
from testsupport.paths import REPO_ROOT

ROOT = REPO_ROOT
GOLDEN = ROOT / "golden"
VERDICT = ROOT / "testsupport" / "verdict_backends.py"
ERROR = "math.sum_reduce/axis_out_of_range"  # an error case: a back end must reject it
RELU = "nn.relu/leaky_alpha"
ADD = "math.add/special"  # NaN, infinities, signed zeros, float32's extremes
MISSING = "refinterp-no-such-tool-h8"


@pytest.fixture(autouse=True)
def _project_root(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)  # `testsupport.verdict_backends:X` imports from the current folder


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    return copy_suite(GOLDEN, [ERROR, RELU, ADD], tmp_path / "suite")


def ids_of(prefix: str) -> list[str]:
    manifest = json.loads((GOLDEN / "manifest.json").read_text())
    return [e["id"] for e in manifest["cases"] if e["id"].startswith(prefix)]


def by_id(suite: Path, spec: BackendSpec, **options) -> dict[str, Result]:
    return {r.id: r for r in run_suite(suite, spec, **options)}


def verdict_command(mode: str) -> str:
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(VERDICT))} {mode} {{dir}} {{outputs}}"


def folder_of(suite: Path, case_id: str) -> Path:
    return suite / case_path(suite, case_id)


def check(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(["check", *map(str, argv), "--no-progress"])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


# ------------------------------------------------------------------ a back end that cannot run


@pytest.mark.parametrize("script,status,text", [
    # before: every one of these passed the error case ("rejected, as it must be")
    (MISSING, "fail", "the command was not found (exit status 127)"),
    ("kill -SEGV $$", "fail", "killed by signal 11 (SIGSEGV)"),
    ("exit 2", "fail", "exit status 2"),
    ("exit 1", "fail", "exit status 1 without a message on stderr"),
    ("echo 'axis 5 is out of range' >&2; exit 1", "pass",
     "rejected, as it must be (exit status 1; stderr:\naxis 5 is out of range"),
])
def test_only_exit_1_with_a_message_rejects_an_error_case(suite: Path, script: str,
                                                         status: str, text: str) -> None:
    # the other cases skip (77), so that the run goes on: one command that cannot start is
    # not yet a back end that cannot run
    command = f"case {{dir}} in *axis_out*) {script};; *) exit 77;; esac"
    result = by_id(suite, BackendSpec(command=command))[ERROR]
    assert result.status == status and text in result.explanation
    if status == "fail":
        assert result.reason == "crash"


def test_a_python_back_end_that_dies_on_an_error_case_crashes(suite: Path) -> None:
    """Before: its worker's death passed the error case."""
    results = by_id(suite, BackendSpec(name="testsupport.verdict_backends:DiesOnErrors"))
    assert (results[ERROR].status, results[ERROR].reason) == ("fail", "crash")
    assert "exit status 3" in results[ERROR].explanation
    assert results[RELU].status == results[ADD].status == "pass"


def test_a_command_that_cannot_be_started_stops_the_run_early(tmp_path: Path,
                                                              capsys) -> None:
    """Before: all 1,039 cases ran, 195 error cases passed."""
    relu = copy_suite(GOLDEN, ids_of("nn.relu/"), tmp_path / "relu")  # 7 cases
    seen: list[Result] = []
    with pytest.raises(Diagnostic) as info:
        run_suite(relu, BackendSpec(command=f"{MISSING} {{model}}"), progress=seen.append)
    assert len(seen) == 5 and info.value.code == "E0901"
    assert f"{MISSING}: not found" in info.value.message
    assert "could not be started in any of the first 5 case(s)" in info.value.message
    status, out, err = check(capsys, relu, "--backend-cmd", f"{MISSING} {{model}}")
    assert status == 1 and "the back end cannot be run" in err and MISSING in err
    assert "case(s):" not in out  # no report of a run that did not happen
    script = tmp_path / "tool.sh"
    script.write_text("#!/bin/sh\nexit 0\n")  # not executable: exit status 126
    status, out, err = check(capsys, relu, "--backend-cmd", f"{script} {{model}}", "-j", "2")
    assert status == 1 and "could not be executed (exit status 126)" in err
    assert "Permission denied" in err


def test_a_wrong_command_template_is_a_usage_error(suite: Path, capsys) -> None:
    status, _, err = check(capsys, suite, "--backend-cmd", "tool {model} {nothing}")
    assert status == 2 and "the --backend-cmd template is wrong" in err and "{views}" in err


# ------------------------------------------------------------------ the suite is checked


def _truncate(folder: Path, name: str) -> None:
    path = folder / name
    path.write_bytes(path.read_bytes()[:40])


def test_a_damaged_error_case_is_broken_in_every_report(suite: Path, tmp_path: Path,
                                                        capsys) -> None:
    """Before: `--backend-cmd true` passed it ("rejected, as it must be (E0800: …)")."""
    _truncate(folder_of(suite, ERROR), "inputs.npz")
    result = by_id(suite, BackendSpec(command="true"))[ERROR]
    assert (result.status, result.reason) == ("broken", None)
    assert "inputs.npz: sha256 differs from case.json" in result.explanation
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    status, out, _ = check(capsys, suite, "--backend-cmd", "true", "-k", ERROR,
                           "--json", report, "--junit", junit)
    assert status == 1 and f"BROKEN {ERROR} (phase prepare)" in out
    assert "0 unexpected pass(es), 1 broken" in out
    data = json.loads(report.read_text())
    assert data["summary"]["broken"] == 1 and data["cases"][0]["status"] == "broken"
    assert "started" not in data["cases"][0]
    suite_xml = ElementTree.parse(junit).find("testsuite")
    assert suite_xml.get("errors") == "1" and suite_xml.get("failures") == "0"
    assert suite_xml.find("testcase/error").get("type") == "broken"
    # merging keeps it broken (and failing); expectations never excuse it
    status, out, _ = check(capsys, "--merge", report)
    assert status == 1 and "1 broken" in out
    (merged,) = load_results([report])[0]
    apply_expectations([merged], [Expectation(".*", "fail", "known")])
    assert merged.status == "broken"
    assert write_expectations(tmp_path / "e.toml", [merged]) == 0


def _replace_golden_by_zeros(suite: Path) -> None:
    """A consistent case (every file hash recorded) whose golden array is not the one
    case.json's array hash states."""
    path = folder_of(suite, RELU) / "outputs.npz"
    with np.load(path) as stored:
        np.savez(path, **{k: np.zeros_like(stored[k]) for k in stored.files})
    rehash_file(suite, RELU, "outputs.npz")


@pytest.mark.parametrize("damage,text", [
    (lambda s: _truncate(folder_of(s, RELU), "outputs.npz"),
     "outputs.npz: sha256 differs from case.json"),
    (lambda s: (folder_of(s, RELU) / "model.sknd").unlink(), "model.sknd is missing"),
    (lambda s: (folder_of(s, RELU) / "case.json").write_text("{not json"), "invalid JSON"),
    (lambda s: (folder_of(s, RELU) / "case.json").write_text(
        (folder_of(s, RELU) / "case.json").read_text() + "\n"),
     "case.json: sha256 differs from the suite's manifest.json"),
    (_replace_golden_by_zeros, "outputs.npz 'y': sha256 differs from case.json"),
    (lambda s: rewrite_case(s, RELU, lambda d: d["files"].pop("outputs.npz")),
     "outputs.npz is not listed in case.json's files"),
    (lambda s: (os.unlink(folder_of(s, RELU) / "inputs.npz"),
                os.mkfifo(folder_of(s, RELU) / "inputs.npz")), "inputs.npz"),
])
def test_a_case_the_harness_cannot_trust_is_broken(suite: Path, damage, text: str) -> None:
    """Before: a crash of the back end ("the harness could not run the case"), a pass, or
    (case.json) a run that did not start."""
    damage(suite)
    results = by_id(suite, BackendSpec(name="refinterp:vector"))
    assert results[RELU].status == "broken" and text in results[RELU].explanation
    assert results[ADD].status == results[ERROR].status == "pass"  # the others still run


def test_a_view_too_large_to_materialise_is_broken(tmp_path: Path) -> None:
    """Before: the back end's crash, "MemoryError: Unable to allocate 74.5 GiB"."""
    case_id = "nx.reshape/rank3_to_rank2@view-flipped"
    nx = copy_suite(module_suite("nx"), [case_id], tmp_path / "nx")

    def huge(data: dict) -> None:
        data["inputs"]["t"]["shape"] = [100000, 100000]
        data["inputs"]["t"]["view"].update(shape=[100000, 100000], strides=[0, 0], offset=0)
    rewrite_case(nx, case_id, huge)
    (result,) = run_suite(nx, BackendSpec(command="true"))
    assert result.status == "broken"
    assert "the view of input 't' has 10000000000 elements" in result.explanation


def test_a_back_end_cannot_change_the_goldens(suite: Path, tmp_path: Path) -> None:
    """Before: zeros written to {outputs} and to {dir}/outputs.npz passed, and the suite no
    longer verified."""
    results = by_id(suite, BackendSpec(command=verdict_command("zeros")), include=RELU)
    assert (results[RELU].status, results[RELU].reason) == ("fail", "mismatch")
    results = by_id(suite, BackendSpec(name="testsupport.verdict_backends:Overwriter"),
                    include=RELU)
    assert (results[RELU].status, results[RELU].reason) == ("fail", "mismatch")
    assert all(not report.problems for report in verify_suite(suite))
    # {dir} is a fresh folder named as the case's, outside the suite, gone after the case
    seen = tmp_path / "dir.txt"
    run_suite(suite, BackendSpec(command=f"echo {{dir}} > {seen}; exit 77"), include=RELU)
    given = Path(seen.read_text().strip())
    assert given.name == "leaky_alpha" and suite.resolve() not in given.resolve().parents
    assert not given.exists() and not given.parent.exists()


def test_a_worker_that_dies_leaves_no_copy_of_its_case(tmp_path: Path, monkeypatch) -> None:
    relu = copy_suite(GOLDEN, ids_of("nn.relu/"), tmp_path / "relu")
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))  # the -j workers' temporary folder
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # and this process's
    spec = BackendSpec(name="testsupport.process_backends:Segfault", in_process=True)
    results = by_id(relu, spec, jobs=2)
    assert results[RELU].reason == "crash" and "SIGSEGV" in results[RELU].explanation
    assert not list(temp.glob("refinterp-case-*"))


# ------------------------------------------------------------------ narrow dtypes


def test_ulps_and_bounds_of_narrow_dtypes() -> None:
    one = np.float16(1.0)
    assert ulp_distance(np.array([np.nextafter(one, np.float16(2))]), np.array([1.0]))[0] == 1
    assert ulp_distance(np.array([-0.0], np.float16), np.array([0.0]))[0] == 0
    stored = {k: b.as_json() for k, b in bounds("reduction", 10, 3.0).items()}
    # every term is eps_d times a constant: float16's is float32's scaled by 2^13
    assert bound_of(stored, "float16") == Bound(4, 20 * 2.0 ** -10, 60 * 2.0 ** -10)
    assert bound_of(stored, "float16") == bounds("reduction", 10, 3.0, ("float16",))["float16"]
    assert bound_of(stored, "bfloat16").atol == 60 * 2.0 ** -7
    # a golden beyond float16's range: its infinity is right, its largest finite is not
    golden = np.array([1e5, 1e5, 1.0 / 3])
    got = np.array([np.inf, 65504.0, 1.0 / 3], np.float16)
    assert within(got, golden, Bound(1)).tolist() == [True, False, True]


def test_bfloat16_is_compared_in_bfloat16() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    golden = np.array([1.0 / 3, 1e-3, -7.25, 1e39])
    with np.errstate(over="ignore"):
        rounded = golden.astype(ml_dtypes.bfloat16)
    assert rounded[3] == np.inf  # beyond bfloat16's range (3.4e38)
    assert within(rounded, golden, Bound(1)).all()
    two_off = rounded.view(np.int16) + np.int16(2)
    assert not within(two_off.view(ml_dtypes.bfloat16)[:3], golden[:3], Bound(1)).any()
    assert ulp_distance(two_off.view(ml_dtypes.bfloat16)[:3], golden[:3]).tolist() == [2, 2, 2]


def test_float16_results_pass_when_right_and_fail_when_wrong(suite: Path) -> None:
    """Before: "the harness could not run the case: KeyError: 2", right or wrong."""
    right = by_id(suite, BackendSpec(command=verdict_command("float16")), include="relu|add")
    assert {r.status for r in right.values()} == {"pass"}
    wrong = by_id(suite, BackendSpec(command=verdict_command("garbage16")), include=RELU)
    assert (wrong[RELU].status, wrong[RELU].reason) == ("fail", "mismatch")
    assert "float16[" in wrong[RELU].explanation and "ULP distances" in wrong[RELU].explanation


def test_bfloat16_results_of_a_python_back_end(suite: Path) -> None:
    pytest.importorskip("ml_dtypes")
    right = by_id(suite, BackendSpec(name="testsupport.verdict_backends:BFloat16"),
                  include="relu|add")
    assert {r.status for r in right.values()} == {"pass"}
    wrong = by_id(suite, BackendSpec(name="testsupport.verdict_backends:BFloat16Garbage"),
                  include=RELU)
    assert (wrong[RELU].status, wrong[RELU].reason) == ("fail", "mismatch")
    assert "bfloat16" in wrong[RELU].explanation


# ------------------------------------------------------------------ skips


def test_skips_are_grouped_by_reason(suite: Path, capsys) -> None:
    command = ("case {dir} in *special*) echo 'no special values' >&2;; "
               "*) echo 'no  GPU here' >&2;; esac; exit 77")
    status, out, err = check(capsys, suite, "--backend-cmd", command)
    assert "2 skipped: no GPU here\n1 skipped: no special values\n" in out
    assert status == 4 and "no case ran: every one of the 3 case(s) was skipped" in err
    assert check(capsys, suite, "--backend-cmd", command, "--allow-skip")[0] == 0


def test_a_run_in_which_no_case_ran_exits_4(suite: Path, tmp_path: Path, capsys) -> None:
    status, _, err = check(capsys, suite, "--backend", "refinterp:vector", "-k", "nothing")
    assert status == 4 and "no case was selected" in err
    report = tmp_path / "skips.json"
    assert check(capsys, suite, "--backend-cmd", "exit 77", "--json", report)[0] == 4
    assert check(capsys, "--merge", report)[0] == 4
    assert check(capsys, "--merge", report, "--allow-skip")[0] == 0
    # with a case that ran and passed, skips are fine
    command = "case {dir} in *axis_out*) echo no >&2; exit 1;; *) exit 77;; esac"
    assert check(capsys, suite, "--backend-cmd", command)[0] == 0


def test_a_back_end_whose_framework_is_missing(suite: Path, capsys) -> None:
    """Before: `--backend torch` without torch: every case skipped, exit 0, no reason."""
    if __import__("importlib.util").util.find_spec("torch") is not None:
        pytest.skip("torch is installed")
    status, out, _ = check(capsys, suite, "--backend", "torch")
    assert status == 4 and "skipped: torch is not installed" in out


def test_an_unknown_back_end_lists_only_what_is_installed(monkeypatch) -> None:
    """Before: "(installed: jax, jax-jit, onnxruntime, torch)" without jax or torch."""
    from refinterp.harness import backends

    monkeypatch.setattr(backends, "_findable", lambda module: module.startswith("onnx"))
    with pytest.raises(backends.BackendNameError) as info:
        backends.resolve("no-such-back-end")
    message = str(info.value)
    assert "(installed: onnxruntime; not installed: jax (needs jax), jax-jit (needs jax), " \
           "torch (needs torch))" in message


def test_the_exit_statuses_are_in_the_help(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "4 no case ran" in text and "--allow-skip" in text
