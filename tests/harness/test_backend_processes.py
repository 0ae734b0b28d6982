"""Back ends cannot outlive the harness (docs/harness.md, "Processes"): whatever a command
back end starts is killed with its case, even in a session of its own; a Python back end
runs in a worker process, so that a hang, an exit or a segfault is one case's timeout or
crash; SIGINT / SIGTERM to `refinterp check` stop every back-end process, report what
finished and exit 130 / 143; a back end's output is kept bounded and escaped.

A process a back end leaves behind carries a marker in its command line (`sleep
31337.<n>`), written so that the marker itself appears in no other command line (`$((…))`
is expanded by the back end's shell), and the tests look for it in /proc. The Python back
ends are testsupport/process_backends.py: each misbehaves on nn.relu/leaky_alpha only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree

import pytest

from refinterp.cli import main
from refinterp.harness import BackendSpec, Options, run_suite
from refinterp.harness.backends import IsolatedBackend, close_isolated
from refinterp.harness.processes import HEAD, TAIL, Capture, printable
from testsupport.paths import REPO_ROOT

ROOT = REPO_ROOT
SUITE = ROOT / "golden"
BAD = r"^nn\.relu/leaky_alpha$"
TWO = r"^nn\.relu/(leaky_alpha|rank0)$"  # rank0: a case every back end here passes
FAULTY = f"{sys.executable} {ROOT / 'testsupport' / 'faulty_backends.py'}"

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


@pytest.fixture(autouse=True)
def _project_root(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)  # `testsupport.process_backends:X` imports from the current folder


def marked(marker: str) -> list[int]:
    """The live processes whose command line holds `marker`."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                command = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in command:
                found.append(int(name))
    return found


def wait_for(marker: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not marked(marker):
        assert time.monotonic() < deadline, f"no process {marker} started"
        time.sleep(0.02)


def one(command: str, timeout: float = 15.0, pattern: str = BAD):
    """The result of the case `pattern` on a command back end."""
    (result,) = run_suite(SUITE, BackendSpec(command=command, timeout=timeout),
                          include=pattern)
    return result


def python(name: str, pattern: str = TWO, timeout: float = 2.0, **options) -> dict:
    """Results by case id of the Python back end `process_backends:<name>`."""
    spec = BackendSpec(name=f"testsupport.process_backends:{name}", timeout=timeout,
                       in_process=options.pop("in_process", False))
    results = run_suite(SUITE, spec, Options(timeout=timeout), include=pattern, **options)
    return {r.id: r for r in results}


def check(*argv: str, timeout: float = 20.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "refinterp", "check", str(SUITE), *argv],
                          capture_output=True, text=True, cwd=ROOT, timeout=timeout)


# ------------------------------------------------------------------ command back ends


def test_a_background_process_is_killed_with_its_case() -> None:
    result = one("(sleep 31337.$((100+1)) &); exit 0")
    assert (result.status, result.reason) == ("fail", "missing-output")
    assert not marked("31337.101")


def test_a_process_in_a_session_of_its_own_is_killed_too() -> None:
    result = one("setsid sleep 31337.$((100+2)) & "
                 "setsid sh -c 'sleep 31337.$((100+3)) & exec sleep 31337.$((100+4))' & "
                 "sleep 0.2; exit 0")
    assert (result.status, result.reason) == ("fail", "missing-output")
    assert not marked("31337.102") and not marked("31337.103") and not marked("31337.104")


def test_a_failing_command_is_a_crash_at_once_though_a_child_holds_its_stderr() -> None:
    started = time.monotonic()
    result = one("(sleep 31337.$((100+5)) &); echo failed >&2; exit 1", timeout=15)
    assert (result.status, result.reason) == ("fail", "crash")
    assert "exit status 1; stderr:\nfailed" in result.explanation
    assert time.monotonic() - started < 5
    assert not marked("31337.105")


def test_a_timeout_kills_everything_the_command_started() -> None:
    result = one("setsid sleep 31337.$((100+6)) & sleep 31337.$((100+7))", timeout=0.5)
    assert (result.status, result.reason) == ("fail", "timeout")
    assert "no result within 0.5 s" in result.explanation
    assert not marked("31337.106") and not marked("31337.107")


def test_a_killed_command_says_by_which_signal() -> None:
    result = one("kill -SEGV $$")
    assert (result.status, result.reason) == ("fail", "crash")
    assert "killed by signal 11 (SIGSEGV)" in result.explanation


def test_a_command_that_still_works_is_unchanged() -> None:
    result = one(f"{FAULTY} Faulty {{dir}} {{outputs}}")
    assert result.status == "pass"


# ------------------------------------------------------------------ stderr: bounded, escaped


def test_a_stderr_flood_is_capped_and_escaped(tmp_path: Path, capsys) -> None:
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    flood = ("printf '\\033[31mred\\033[0m\\n' >&2; "
             "(yes 31337.$((100+8)) >&2 &); sleep 0.5; echo the-last-line >&2; exit 1")
    status = main(["check", str(SUITE), "-k", BAD, "--backend-cmd", flood,
                   "--json", str(report), "--junit", str(junit)])
    printed = capsys.readouterr().out
    assert status == 1 and not marked("31337.108")
    (case,) = json.loads(report.read_text())["cases"]
    text = case["explanation"]
    assert case["reason"] == "crash"
    assert text.count("\n") < 2 * (HEAD + TAIL) // 10  # the flood's lines are 10 bytes
    assert len(text) < HEAD + TAIL + 1000
    assert "bytes left out …]" in text and "the-last-line" in text
    assert "\\x1b[31mred\\x1b[0m" in text and "\x1b" not in text
    assert "\\x1b[31mred" in printed and "\x1b" not in printed
    failure = ElementTree.parse(junit).find(".//failure")
    assert "\\x1b[31mred" in failure.text and "\x1b" not in failure.text


def test_the_capture_keeps_the_first_and_the_last_bytes() -> None:
    capture = Capture()
    for _ in range(100):
        capture.feed(b"a" * 1000)
    capture.feed(b"z" * 10)
    text = capture.text()
    assert text.startswith("a" * HEAD + "\n[… 34474 bytes left out …]\n")  # 100010 - 65536
    assert text.endswith("a" * (TAIL - 10) + "z" * 10)


def test_printable_escapes_every_control_but_newline_and_tab() -> None:
    assert printable("a\x1b[2J\tb\r\nc\x00\x7f\x9b") == "a\\x1b[2J\tb\\x0d\nc\\x00\\x7f\\x9b"
    assert printable("é ✓ 😀") == "é ✓ 😀"
    cut = printable("a" * 10 + "b" * 10, limit=8)
    assert cut == "aaaa\n[… 12 characters left out …]\nbbbb"


# ------------------------------------------------------------------ Python back ends


def test_python_back_ends_run_in_a_worker_unless_in_process() -> None:
    try:
        isolated = BackendSpec(name="testsupport.process_backends:Hang").make()
        assert isinstance(isolated, IsolatedBackend) and isolated.profile == "spec"
        assert isolated.name == "testsupport.process_backends:Hang"
    finally:
        close_isolated()
    own = BackendSpec(name="testsupport.process_backends:Hang", in_process=True).make()
    assert type(own).__name__ == "Hang"
    assert BackendSpec(name="refinterp:vector").make().name == "refinterp:vector"


def test_a_hanging_python_back_end_times_out_and_check_ends() -> None:
    started = time.monotonic()
    done = check("-k", TWO, "--backend", "testsupport.process_backends:Hang", "--timeout", "1")
    assert done.returncode == 1 and time.monotonic() - started < 8
    assert "FAIL nn.relu/leaky_alpha [timeout]" in done.stdout
    assert "no result within 1 s; the back end's worker process was killed" in done.stdout
    assert "2 case(s): 1 passed, 1 failed" in done.stdout


def test_in_process_a_hanging_back_end_still_lets_check_end() -> None:
    done = check("-k", BAD, "--backend", "testsupport.process_backends:Hang", "--timeout", "1",
                 "--in-process", timeout=10)
    assert done.returncode == 1 and "[timeout]" in done.stdout


@pytest.mark.parametrize("name,text", [
    ("Exit", "ended during run: exit status 0"),
    ("SysExit", "ended during run: exit status 5"),
    ("Segfault", "ended during run: killed by signal 11 (SIGSEGV); it wrote:\n"
                 "Fatal Python error: Segmentation fault"),
])
def test_an_ending_python_back_end_is_that_cases_crash(name: str, text: str) -> None:
    results = python(name)
    bad, good = results["nn.relu/leaky_alpha"], results["nn.relu/rank0"]
    assert (bad.status, bad.reason, bad.phase) == ("fail", "crash", "run")
    assert text in bad.explanation
    assert good.status == "pass"


def test_a_process_a_python_back_end_started_is_killed_with_its_worker() -> None:
    results = python("LeavesProcess", BAD, timeout=1.0)
    assert results["nn.relu/leaky_alpha"].reason == "timeout"
    assert not marked("31337.81")


def test_a_python_back_ends_output_is_capped_and_escaped() -> None:
    (result,) = python("Noisy", BAD).values()
    text = result.explanation
    assert "exit status 3; it wrote:\n\\x1b[31mred alert\\x1b[0m\n" in text
    assert "bytes left out …]" in text and "the last line" in text
    assert len(text) < HEAD + TAIL + 1000 and "\x1b" not in text


@pytest.mark.parametrize("in_process", [False, True])
def test_a_segfault_under_j2_is_one_crash_and_the_run_goes_on(in_process: bool) -> None:
    results = python("Segfault", r"^nn\.relu/", jobs=2, in_process=in_process)
    bad = results.pop("nn.relu/leaky_alpha")
    assert (bad.status, bad.reason) == ("fail", "crash")
    assert "killed by signal 11 (SIGSEGV)" in bad.explanation
    assert "BrokenProcessPool" not in bad.explanation
    assert len(results) == 6 and {r.status for r in results.values()} == {"pass"}


def test_worker_processes_end_with_the_program() -> None:
    program = ("from refinterp.harness.backends import make_backend; "
               "print(make_backend('testsupport.process_backends:Hang')._worker.process.pid)")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          cwd=ROOT, timeout=20)
    pid = int(done.stdout)
    assert done.returncode == 0 and not Path(f"/proc/{pid}").exists()


# ------------------------------------------------------------------ SIGINT / SIGTERM


@pytest.mark.parametrize("signum,jobs,backend,marker", [
    (signal.SIGTERM, "1", "command", "31337.115"),
    (signal.SIGINT, "2", "command", "31337.116"),
    (signal.SIGTERM, "2", "python", "31337.81"),
])
def test_a_signal_stops_the_back_end_and_reports_what_finished(signum, jobs, backend,
                                                               marker) -> None:
    if backend == "command":
        script = (f"case {{dir}} in *leaky*) sleep 31337.$((100+{marker[-2:]}));; "
                  f"*) {FAULTY} Faulty {{dir}} {{outputs}};; esac")
        chosen = ["--backend-cmd", script]
    else:
        chosen = ["--backend", "testsupport.process_backends:LeavesProcess"]
    process = subprocess.Popen([sys.executable, "-m", "refinterp", "check", str(SUITE), "-k",
                                TWO, "-j", jobs, "--timeout", "30", *chosen], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(marker)
        process.send_signal(signum)
        out, err = process.communicate(timeout=10)
    finally:
        process.kill()
    assert process.returncode == 128 + signum
    assert not marked(marker)
    assert f"interrupted ({signal.Signals(signum).name})" in err
    assert "case(s): " in out  # the summary of what finished


def test_in_process_is_for_python_back_ends(capsys) -> None:
    assert main(["check", str(SUITE), "--backend-cmd", "true", "--in-process"]) == 2
    assert "--in-process is for a Python --backend" in capsys.readouterr().err
