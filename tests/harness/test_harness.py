"""The differential harness (docs/harness.md): deliberately faulty back ends are each caught,
classified and explained; expectations, reports, shards, processes, Dask, probes, shrinking,
the pytest plugin. The back ends are testsupport/faulty_backends.py: refinterp with one
defect each."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

from refinterp.cli import main
from refinterp.harness import BackendSpec, Options, load_suite, run_suite
from refinterp.harness.report import coverage, summary
from testsupport.paths import REPO_ROOT

ROOT = REPO_ROOT
SUITE = ROOT / "golden"
FAULTY = ROOT / "testsupport" / "faulty_backends.py"
SAMPLE = (r"^(linalg\.matmul/basic|math\.div/int_rounding"
          r"|math\.sum_reduce/(negative_axes|axis_out_of_range)|math\.add/(special|rank0)"
          r"|nn\.relu/leaky_alpha)$")


def check(name: str, pattern: str = SAMPLE, **options) -> dict:
    """Run a faulty Python back end on the sample; results by case id."""
    results = run_suite(SUITE, BackendSpec(name=f"testsupport.faulty_backends:{name}"),
                        Options(**options), include=pattern)
    return {r.id: r for r in results}


def command(mode: str) -> str:
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(FAULTY))} {mode} {{dir}} {{outputs}}"


@pytest.fixture(autouse=True)
def _project_root(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)  # `testsupport.faulty_backends:X` imports from the current folder


def test_the_sample_exists() -> None:
    ids = {c.id for c in load_suite(SUITE)}
    assert {"linalg.matmul/basic", "math.div/int_rounding", "math.sum_reduce/negative_axes",
            "math.sum_reduce/axis_out_of_range", "math.add/special", "math.add/rank0",
            "nn.relu/leaky_alpha", "models/small_cnn"} <= ids


# ------------------------------------------------------------------ faults caught and explained


def test_refinterp_itself_passes() -> None:
    results = run_suite(SUITE, BackendSpec(name="refinterp:vector"), include=SAMPLE)
    assert len(results) == 7 and {r.status for r in results} == {"pass"}


def test_one_wrong_element() -> None:
    result = check("WrongElement")["linalg.matmul/basic"]
    assert (result.status, result.reason, result.phase) == ("fail", "mismatch", "compare")
    text = result.explanation
    assert "Mismatched elements: 1 / 15 (6.7%)" in text
    assert "Greatest absolute difference: 1.0 at index (0, 0)" in text
    assert "Greatest relative difference" in text and "ULP distances" in text
    # matmul has an exact reference: the golden is the closer one
    assert "the golden is closer to the exact result" in text
    assert "Re-run this case alone:" in text and "-k '^linalg\\.matmul/basic$'" in text


def test_a_transposed_output() -> None:
    result = check("Transposed")["linalg.matmul/basic"]
    assert (result.status, result.reason) == ("fail", "shape")
    assert "shape [5, 3], expected [3, 5]" in result.explanation
    assert "transposed" in result.explanation


def test_a_nan() -> None:
    result = check("OneNaN")["math.sum_reduce/negative_axes"]
    assert (result.status, result.reason) == ("fail", "mismatch")
    assert "NaN positions differ in 1 element(s), first at index (0, 0, 0)" in result.explanation


def test_a_missing_output() -> None:
    result = check("MissingOutput")["nn.relu/leaky_alpha"]
    assert (result.status, result.reason) == ("fail", "missing-output")
    assert "missing output(s) 'y'" in result.explanation


def test_a_wrong_dtype_kind() -> None:
    result = check("IntsForReals")["nn.relu/leaky_alpha"]
    assert (result.status, result.reason) == ("fail", "dtype")
    assert "dtype int64 (int), expected a real dtype" in result.explanation


def test_a_float32_back_end_passes_on_values_but_not_exact_dtypes() -> None:
    assert {r.status for r in check("Float32").values()} == {"pass"}
    exact = check("Float32", policy="exact")["nn.relu/leaky_alpha"]
    assert (exact.status, exact.reason) == ("fail", "dtype")
    assert "expected float64 (--dtype exact)" in exact.explanation


def test_a_crash() -> None:
    result = check("Crash")["nn.relu/leaky_alpha"]
    assert (result.status, result.reason, result.phase) == ("fail", "crash", "prepare")
    assert "RuntimeError: segfault in the kernel library" in result.explanation
    assert check("Crash")["math.sum_reduce/axis_out_of_range"].status == "pass"  # rejected


def test_a_hang_is_a_timeout() -> None:
    results = check("Hang", r"^nn\.relu/leaky_alpha$", timeout=1.0)
    result = results["nn.relu/leaky_alpha"]
    assert (result.status, result.reason) == ("fail", "timeout") and result.seconds < 10


def test_integer_division_truncating_is_explained_by_the_khronos_profile() -> None:
    result = check("TruncatingDivision")["math.div/int_rounding"]
    assert (result.status, result.reason) == ("fail", "mismatch")
    assert "Matches profile khronos" in result.explanation
    assert "int_division (floor in spec, trunc in khronos)" in result.explanation


def test_accepting_an_invalid_case() -> None:
    result = check("AcceptsInvalid")["math.sum_reduce/axis_out_of_range"]
    assert (result.status, result.reason) == ("fail", "accepted-invalid")
    assert "E0307" in result.explanation


def test_an_unsupported_case_is_a_skip_with_its_reason() -> None:
    results = check("NoInts")
    assert results["math.div/int_rounding"].status == "skip"
    assert results["math.div/int_rounding"].explanation == "only real inputs are supported"
    assert results["nn.relu/leaky_alpha"].status == "pass"


def test_tolerance_overrides() -> None:
    from refinterp.harness import Override
    loose = check("WrongElement", r"^linalg\.matmul/basic$", override=Override(atol=2.0))
    assert loose["linalg.matmul/basic"].status == "pass"


# ------------------------------------------------------------------ command back ends


@pytest.mark.parametrize("mode,status,reason,text", [
    ("WrongElement", "fail", "mismatch", "Mismatched elements: 1 / 15"),
    ("unsupported", "skip", None, "this back end supports no case"),
    ("hang", "fail", "timeout", "no result within 1 s"),
    ("nothing", "fail", "missing-output", "wrote no outputs file"),
    ("Crash", "fail", "crash", "exit status 1; stderr:\nRuntimeError: segfault"),
])
def test_command_back_ends(mode: str, status: str, reason, text: str) -> None:
    (result,) = run_suite(SUITE, BackendSpec(command=command(mode), timeout=1.0),
                          include=r"^nn\.relu/leaky_alpha$")
    assert (result.status, result.reason) == (status, reason)
    assert text in result.explanation


def test_a_command_rejecting_an_invalid_case_passes_it() -> None:
    (result,) = run_suite(SUITE, BackendSpec(command=command("Crash")),
                          include=r"^math\.sum_reduce/axis_out_of_range$")
    assert result.status == "pass"


# ------------------------------------------------------------------ the command line and reports


def test_cli_check_reports(tmp_path: Path, capsys) -> None:
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    status = main(["check", str(SUITE), "--backend", "testsupport.faulty_backends:WrongElement",
                   "-k", SAMPLE, "--json", str(report), "--junit", str(junit)])
    out = capsys.readouterr().out
    assert status == 1
    assert "FAIL linalg.matmul/basic [mismatch] (phase compare)" in out
    assert "7 case(s): " in out and "coverage:" in out
    data = json.loads(report.read_text())
    statuses = {c["id"]: c["status"] for c in data["cases"]}
    assert statuses["linalg.matmul/basic"] == "fail" and statuses["math.add/special"] == "pass"
    assert set(data["cases"][0]) >= {"id", "status", "reason", "explanation", "seconds"}
    assert data["summary"]["fail"] >= 1 and data["summary"]["total"] == 7
    assert "linalg.matmul" in data["coverage"]["failed"]
    tree = ElementTree.parse(junit)
    failures = tree.findall(".//testcase/failure")
    assert failures and failures[0].get("type") == "mismatch"


def test_expectations_xfail_xpass_and_update(tmp_path: Path, capsys) -> None:
    expect = tmp_path / "expect.toml"
    written = tmp_path / "written.toml"
    main(["check", str(SUITE), "--backend", "testsupport.faulty_backends:TruncatingDivision",
          "-k", SAMPLE, "--update-expect", str(written)])
    capsys.readouterr()
    text = written.read_text()
    assert 'id = "math\\\\.div/int_rounding"' in text and 'phase = "compare"' in text
    assert main(["check", str(SUITE), "--backend",
                 "testsupport.faulty_backends:TruncatingDivision", "-k", SAMPLE, "--expect",
                 str(written)]) == 0  # every failure expected
    expect.write_text('[[expect]]\nid = "nn\\\\.relu/.*"\nstatus = "fail"\nreason = "known"\n'
                      '[[expect]]\nid = "nothing/.*"\nstatus = "fail"\nreason = "stale"\n')
    status = main(["check", str(SUITE), "--backend", "refinterp:vector", "-k", SAMPLE,
                   "--expect", str(expect)])
    captured = capsys.readouterr()
    assert status == 1 and "XPASS nn.relu/leaky_alpha" in captured.out
    assert "'nothing/.*' matches no case" in captured.err
    assert main(["check", str(SUITE), "--backend", "refinterp:vector", "-k", SAMPLE,
                 "--expect", str(expect), "--allow-xpass"]) == 0


def test_shards_merge_into_the_whole_run(tmp_path: Path, capsys) -> None:
    pattern = r"^math\.(add|div)/"
    whole = tmp_path / "whole.json"
    main(["check", str(SUITE), "--backend", "refinterp:vector", "-k", pattern,
          "--json", str(whole)])
    shards = []
    for index in (1, 2, 3):
        shards.append(tmp_path / f"s{index}.json")
        main(["check", str(SUITE), "--backend", "refinterp:vector", "-k", pattern,
              "--shard", f"{index}/3", "--json", str(shards[-1])])
    sizes = [len(json.loads(s.read_text())["cases"]) for s in shards]
    assert max(sizes) - min(sizes) <= 1
    merged = tmp_path / "merged.json"
    assert main(["check", "--merge", *map(str, shards), "--json", str(merged)]) == 0
    ids = lambda path: [c["id"] for c in json.loads(path.read_text())["cases"]]  # noqa: E731
    assert ids(merged) == ids(whole) and len(ids(whole)) > 10
    capsys.readouterr()


def test_processes_give_the_serial_results() -> None:
    spec = BackendSpec(name="testsupport.faulty_backends:WrongElement")
    serial = run_suite(SUITE, spec, include=SAMPLE)
    parallel = run_suite(SUITE, spec, include=SAMPLE, jobs=2)
    assert [(r.id, r.status, r.reason) for r in serial] == \
        [(r.id, r.status, r.reason) for r in parallel]


def test_dask_local_cluster() -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        results = run_suite(SUITE, BackendSpec(name="refinterp:vector"), include=SAMPLE,
                            dask_address=cluster.scheduler_address)
    assert len(results) == 7 and {r.status for r in results} == {"pass"}


@pytest.mark.parametrize("argv,text", [
    (["check", "golden"], "needs SUITE and --backend"),
    (["check", "golden", "--backend", "refinterp:gpu"], "no built-in back end"),
    (["check", "golden", "--backend", "nomodule:x"], "cannot load back end"),
    (["check", "golden", "--backend", "refinterp:vector", "--shard", "4/3"], "--shard"),
    (["check", "golden", "--backend", "refinterp:vector", "-k", "("], "not a regular"),
])
def test_cli_misuse(argv, text, capsys) -> None:
    assert main(argv) == 2
    assert text in capsys.readouterr().err


# ------------------------------------------------------------------ probes, shrink, pytest


PROBING = f"""
import sys, numpy as np
from pathlib import Path
sys.path.insert(0, {str(ROOT)!r})
import refinterp.api as api
from refinterp.harness import load_case
from refinterp.io import encode_npz, encode_npy, flatten_packs
case = load_case(sys.argv[1])
seen = {{}}
run = api.evaluate(case.model, inputs=case.inputs, params=case.params or None,
                   hooks=api.Hooks(observe=lambda n, v: seen.__setitem__(n, v)))
for name, value in flatten_packs(seen).items():
    if name == "act2":
        value = value + 0.5   # the defect: everything from act2 on is off
    Path(sys.argv[3], name + ".npy").write_bytes(encode_npy(value))
outputs = flatten_packs(run.outputs)
outputs = {{k: v + 0.5 for k, v in outputs.items()}}
Path(sys.argv[2]).write_bytes(encode_npz(outputs))
"""


def test_probes_name_the_first_diverging_intermediate(tmp_path: Path) -> None:
    script = tmp_path / "probing.py"
    script.write_text(PROBING)
    backend = f"{shlex.quote(sys.executable)} {script} {{dir}} {{outputs}} {{probes}}"
    (result,) = run_suite(SUITE, BackendSpec(command=backend),
                          Options(probe_dir=str(tmp_path / "probes")),
                          include=r"^models/small_cnn$")
    assert (result.status, result.reason) == ("fail", "mismatch")
    assert "the first intermediate that diverges is 'act2'" in result.explanation
    assert "last: 'conv2'" in result.explanation
    written = tmp_path / "probes" / "models__small_cnn" / "refinterp"
    assert (written / "conv1.npy").exists() and (written / "probabilities.npy").exists()
    # the probe names the intermediate by its run-trace id too, and the trace is beside it
    # (docs/trace.md): act2 is the tensor T9 of small_cnn's trace
    assert "'act2' (trace id T9;" in result.explanation
    assert "  bind act2 T9\n" in (written / "trace.txt").read_text()


def test_shrink_finds_a_smaller_failing_case(capsys) -> None:
    status = main(["check", str(SUITE), "--backend", "testsupport.faulty_backends:WrongElement",
                   "-k", r"^linalg\.matmul/basic$", "--shrink", "--keep", "--no-explain"])
    out = capsys.readouterr().out
    assert status == 1
    assert "\n  shrink: the smallest failing case has inputs " \
           "A: float64[1, 1], B: float64[1, 1]; it is in " in out
    folder = Path(out.split("it is in ")[1].split(" ")[0])
    try:
        assert np.load(folder / "inputs.npz")["A"].shape == (1, 1)
    finally:
        shutil.rmtree(folder.parent)  # --keep: the temporary folder is the caller's to remove


def test_pytest_plugin_runs_one_test_per_case() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--refinterp-suite",
         str(SUITE), "--refinterp-backend", "testsupport.faulty_backends:TruncatingDivision",
         "-k", "math.div", "-rA"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert completed.returncode == 1, completed.stdout[-2000:]
    assert "FAILED golden/manifest.json::math.div/int_rounding" in completed.stdout
    assert "Matches profile khronos" in completed.stdout
    assert "PASSED golden/manifest.json::math.div/rank0" in completed.stdout


def test_summary_and_coverage_count_by_operator() -> None:
    results = list(check("WrongElement").values())
    data = summary(results)
    assert data["operators"]["linalg.matmul"]["fail"] == 1
    assert data["total"] == 7 and sum(data[s] for s in ("pass", "fail", "skip")) == 7
    cover = coverage(results)
    assert "nn.relu" in cover["failed"] or "nn.relu" in cover["partial"]
    assert "math.div" in cover["passed"]


# ------------------------------------------------------------------ docs/harness.md


DOC = (ROOT / "docs" / "harness.md").read_text()


def test_the_documented_mismatch_report_is_what_check_prints(capsys) -> None:
    block = DOC.split("A mismatch is reported")[1].split("```\n")[1]
    main(["check", "golden", "--backend", "testsupport.faulty_backends:WrongElement",
          "-k", r"^linalg\.matmul/basic$"])
    printed = capsys.readouterr().out
    for line in block.rstrip("\n").splitlines():
        expected = line.replace("--backend mybackend",
                                "--backend testsupport.faulty_backends:WrongElement")
        assert expected in printed, expected


def test_the_documented_expectations_file_reads(tmp_path: Path) -> None:
    from refinterp.harness import read_expectations
    block = DOC.split("```toml\n")[2].split("```")[0]
    (tmp_path / "e.toml").write_text(block)
    (entry,) = read_expectations(tmp_path / "e.toml")
    assert entry.matches("math.div/int_rounding") and entry.phase == "compare"


def test_built_in_back_ends_are_the_engines_by_name() -> None:
    """Each engine of refinterp.lower.engines is a built-in back end; `refinterp:scalar`, the
    name of earlier releases, is the compiled engine; an unknown one lists the real names."""
    from refinterp.harness import backends
    from refinterp.lower.engines import ENGINE_NAMES

    for engine in ENGINE_NAMES:
        backend = backends.resolve(f"refinterp:{engine}")
        assert (backend.engine, backend.profile) == (engine, "spec")
    assert backends.resolve("refinterp:scalar").engine == "compiled"
    assert backends.resolve("refinterp:khronos").profile == "khronos"
    with pytest.raises(backends.BackendNameError) as raised:
        backends.resolve("refinterp:fast")
    assert "refinterp:reference" in str(raised.value) and "scalar" not in str(raised.value)

