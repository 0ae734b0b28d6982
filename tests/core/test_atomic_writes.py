"""Every file refinterp writes is written atomically and inside its target (core.files,
docs/golden.md "How a suite is written", docs/security.md "Files refinterp writes").

Faults are injected into the system calls that write: the k-th call of `os.write`, `os.fsync`,
`os.replace` or `os.rename` touching the test's folder fails (for every k, once or from then
on), and the writer must end in a diagnostic with every file old or new whole and no
temporary left. A golden build is killed with SIGKILL at random moments, and a case table
naming a case `..` must not touch anything outside the suite."""

from __future__ import annotations

import errno
import json
import os
import random
import resource
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from refinterp.cli import main
from refinterp.core.diagnostics import Diagnostic
from refinterp.core.files import MADE_MARKER, is_temporary, recover_folders
from refinterp.golden import build_suite, read_table, read_tables, verify_suite
from refinterp.golden.build import case_folders, recover
from refinterp.harness import Options, Result, load_case, write_expectations, write_json, \
    write_junit
from refinterp.harness.explain import write_probes
from refinterp.harness.shrink import shrink
from testsupport.faulty_backends import WrongElement
from testsupport.paths import REPO_ROOT

ROOT = REPO_ROOT
REFINTERP = [sys.executable, "-m", "refinterp"]

TABLE = """module = "math"

[[case]]
op = "add"
name = "pair"
inputs = {{ x = "real[3]", y = "real[3]" }}
class = "arithmetic"

[[case]]
op = "neg"
name = "vector"
inputs = {{ x = {{ type = "real[4]", values = [{value}, -2.0, 0.5, 4.0] }} }}
class = "exact"

[[case]]
op = "mul"
name = "matrix"
inputs = {{ x = "real[2,3]", y = "real[2,3]" }}
class = "arithmetic"

[[case]]
op = "abs"
name = "ints"
inputs = {{ x = {{ type = "int[3]", values = [-3, 0, 7] }} }}
class = "exact"

[[case]]
op = "div"
name = "int_rounding"
inputs = {{ x = {{ type = "int[2]", values = [7, -7] }}, \
y = {{ type = "int[2]", values = [2, 2] }} }}
class = "exact"

[[case]]
op = "exp"
name = "small"
inputs = {{ x = "real[5]" }}
class = "transcendental"
"""


def table(folder: Path, value: float = 1.0) -> Path:
    """A case table of six small cases (one with a @khronos variant); `value` changes the
    case math.neg/vector, so that a rebuild writes other bytes."""
    path = folder / "cases.toml"
    path.write_text(TABLE.format(value=value))
    return path


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under `root`, by relative path."""
    found: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        found[path.relative_to(root).as_posix()] = \
            None if path.is_dir() else path.read_bytes()
    return found


def hidden(root: Path) -> list[str]:
    """Hidden (temporary, marker) names left anywhere under `root`."""
    return [p.relative_to(root).as_posix() for p in root.rglob("*") if is_temporary(p.name)]


# ------------------------------------------------------------------ injected faults


class Faults:
    """Counts the calls of os.write, os.fsync, os.replace and os.rename that touch `root`
    (a path under it, or an open file under it), and makes the `fail_at`-th of them fail
    with ENOSPC — only that one, or (`persist`) every one from then on."""

    NAMES = ("write", "fsync", "replace", "rename")

    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path, fail_at: int = 0,
                 persist: bool = False) -> None:
        self.root, self.fail_at, self.persist, self.count = root.resolve(), fail_at, persist, 0
        for name in self.NAMES:
            monkeypatch.setattr(os, name, self._wrap(getattr(os, name)))

    def _touches(self, argument: Any) -> bool:
        try:
            path = os.readlink(f"/proc/self/fd/{argument}") if isinstance(argument, int) \
                else os.path.realpath(os.fspath(argument))
        except (OSError, TypeError):
            return False
        return path == str(self.root) or path.startswith(str(self.root) + os.sep)

    def _wrap(self, original: Callable) -> Callable:
        def call(*args: Any, **kwargs: Any) -> Any:
            if any(self._touches(a) for a in args[:2]):
                self.count += 1
                if self.count == self.fail_at or (self.persist and self.count > self.fail_at
                                                  and self.fail_at):
                    raise OSError(errno.ENOSPC, "No space left on device (injected)")
            return original(*args, **kwargs)
        return call


def every_fault(monkeypatch: pytest.MonkeyPatch, root: Path,
                prepare: Callable[[Path], None], act: Callable[[Path], bool],
                persist: bool = False) -> tuple[dict, dict, dict[int, dict]]:
    """Run `act` (True: it succeeded) on a folder made by `prepare`, first without faults
    (counting the calls), then once per call k with the k-th call failing (`persist`: and
    every later one). A failed run must end in a diagnostic (E0801, or E1101 naming the case),
    a run that reports success must have written everything. Returns the snapshots before
    and after the clean run, and after each failed run (by k, its folder `root/fault<k>`)."""
    clean = root / "clean"
    clean.mkdir()
    prepare(clean)
    old = snapshot(clean)
    with monkeypatch.context() as patch:
        faults = Faults(patch, clean)
        assert act(clean)
    new = snapshot(clean)
    assert faults.count > 0 and new != old and not hidden(clean)
    failed = {}
    for k in range(1, faults.count + 1):
        folder = root / f"fault{k}"
        folder.mkdir()
        prepare(folder)
        with monkeypatch.context() as patch:
            Faults(patch, folder, k, persist)
            try:
                succeeded = act(folder)
            except Diagnostic as error:
                assert error.code in ("E0801", "E1101"), error
                succeeded = False
        if succeeded:  # only a failure that loses nothing may go unreported (a folder sync)
            assert snapshot(folder) == new, f"call {k}"
        else:
            failed[k] = snapshot(folder)
    assert failed, "no injected fault was reported"
    return old, new, failed


def whole(before: dict, after: dict, new: dict, label: Any) -> None:
    """Every file of `after` is its `before` or its `new` content, byte for byte, and no
    temporary is left."""
    assert not [p for p in after if is_temporary(p.rsplit("/", 1)[-1])], (label, list(after))
    for path, content in after.items():
        assert content in (before.get(path, "absent"), new.get(path, "absent")), (label, path)


def check_writer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                 prepare: Callable[[Path], None], act: Callable[[Path], bool]) -> int:
    """Every fault of a one-file writer: each failure leaves the old file byte for byte (and
    nothing else); the number of faults injected."""
    old, new, failed = every_fault(monkeypatch, tmp_path, prepare, act)
    for k, after in failed.items():
        assert after == old, f"call {k} failed: the old content is not intact"
    return len(failed)


OLD = "old content, kept whole\n" * 10


def test_fmt_in_place_keeps_the_original_when_writing_fails(monkeypatch, tmp_path) -> None:
    source = "operator  neg2 {\n @input { x: real[n]; }\n @output { y: real[n]; }\n" \
             " @lower { y[i] = -x[i], i < n; }\n}\n"

    def prepare(folder: Path) -> None:
        (folder / "m.sknd").write_text(source)

    def act(folder: Path) -> bool:
        return main(["fmt", "-i", str(folder / "m.sknd")]) == 0
    assert check_writer(monkeypatch, tmp_path, prepare, act) >= 3


def test_the_trace_is_old_or_new_whole(monkeypatch, tmp_path) -> None:
    def prepare(folder: Path) -> None:
        (folder / "run.trace").write_text(OLD)

    def act(folder: Path) -> bool:
        return main(["eval", "--op", "math.neg", "--input", "x=[1.0, -2.0]", "--trace",
                     str(folder / "run.trace")]) == 0
    check_writer(monkeypatch, tmp_path, prepare, act)


RESULTS = [Result("math.add/a", "fail", "mismatch", "1 element differs", 0.1, "compare",
                  "math.add", "math"),
           Result("math.neg/b", "skip", "unsupported", "no ints", 0.0, "prepare", "math.neg",
                  "math"),
           Result("math.exp/c", "pass", None, "", 0.2, "", "math.exp", "math")]


@pytest.mark.parametrize("writer", ["json", "junit", "expectations"])
def test_reports_are_old_or_new_whole(monkeypatch, tmp_path, writer: str) -> None:
    def prepare(folder: Path) -> None:
        (folder / "report").write_text(OLD)

    def act(folder: Path) -> bool:
        path = folder / "report"
        if writer == "json":
            write_json(path, RESULTS, "a back end", "suite")
        elif writer == "junit":
            write_junit(path, RESULTS, "a back end")
        else:
            write_expectations(path, RESULTS)
        return True
    check_writer(monkeypatch, tmp_path, prepare, act)


def test_probes_are_each_old_or_new_whole(monkeypatch, tmp_path) -> None:
    def prepare(folder: Path) -> None:
        (folder / "probes").mkdir()
        for name in ("a", "b"):
            (folder / "probes" / f"{name}.npy").write_bytes(b"old " + name.encode())

    def act(folder: Path) -> bool:
        write_probes(folder / "probes", {"a": np.arange(3.0), "b": np.ones(2, bool)})
        return True
    old, new, failed = every_fault(monkeypatch, tmp_path, prepare, act)
    for k, after in failed.items():
        whole(old, after, new, k)


def test_shrink_replaces_its_smallest_case_whole(monkeypatch, tmp_path) -> None:
    """A search that finds two smaller cases in turn (1.5 rounded to 2.0, then ones): the
    second replaces the first."""
    (tmp_path / "t.toml").write_text(
        'module = "math"\n[[case]]\nop = "neg"\nname = "half"\nclass = "exact"\n'
        'inputs = { x = { type = "real[1]", values = [1.5] } }\n')
    build_suite(read_table(tmp_path / "t.toml"), tmp_path / "suite")
    case = load_case(tmp_path / "suite" / "math.neg" / "half")
    backend = WrongElement()  # in this process: the faults are injected here

    def act(folder: Path) -> bool:
        found = shrink(backend, case, Options(explain=False), folder)
        return found is not None and found.folder == folder / "smallest"
    runs = tmp_path / "runs"
    runs.mkdir()
    old, new, failed = every_fault(monkeypatch, runs, lambda folder: None, act)
    assert np.load(runs / "clean" / "smallest" / "inputs.npz")["x"].tolist() == [1.0]
    for k in failed:  # the smallest case found so far stays whole; no trial is left
        folder = runs / f"fault{k}"
        assert not hidden(folder), k
        if (folder / "smallest").exists():
            smallest = load_case(folder / "smallest")
            assert smallest.inputs["x"].tolist() in ([2.0], [1.0])
            assert set(smallest.expected) == {"y"}


def _suite_parts(snap: dict) -> dict[str, dict]:
    """A suite snapshot by part: each case folder, and manifest.json."""
    parts: dict[str, dict] = {}
    for path, content in snap.items():
        segments = path.split("/")
        key = "/".join(segments[:2]) if len(segments) >= 2 else segments[0]
        parts.setdefault(key, {})[path] = content
    return parts


@pytest.mark.parametrize("persist", [False, True], ids=["one-call", "from-then-on"])
def test_a_golden_rebuild_leaves_every_case_folder_and_the_manifest_whole(
        monkeypatch, tmp_path, persist: bool) -> None:
    """A rebuild of one case whose bytes change: whatever call fails, the case folder and
    manifest.json are each old or new whole, and a diagnostic says it failed. When the
    failure persists (a full disk) the old folder may stay set aside: the next build's
    recovery puts it back. A build after the failure completes and verifies."""
    template = tmp_path / "template"
    template.mkdir()
    specs = read_table(table(template))
    build_suite([s for s in specs if s.operator in ("math.neg", "math.abs")], template / "suite")
    table(template, value=3.0)

    def prepare(folder: Path) -> None:
        shutil.copytree(template, folder, dirs_exist_ok=True)

    def act(folder: Path) -> bool:
        specs = [s for s in read_table(folder / "cases.toml") if s.id == "math.neg/vector"]
        build_suite(specs, folder / "suite")
        return True
    runs = tmp_path / "runs"
    runs.mkdir()
    old, new, failed = every_fault(monkeypatch, runs, prepare, act, persist)
    assert len(failed) >= 8
    parts_old, parts_new = _suite_parts(old), _suite_parts(new)
    for k in failed:
        folder = runs / f"fault{k}"
        if not persist:
            assert not hidden(folder), k
        recover(folder / "suite")  # what the next build does first
        now = _suite_parts(snapshot(folder))
        assert set(now) == set(parts_old), k
        for key, part in now.items():
            assert part in (parts_old[key], parts_new[key]), (k, key)
    folder = runs / f"fault{min(failed)}"
    build_suite(read_table(folder / "cases.toml"), folder / "suite")
    assert not [r for r in verify_suite(folder / "suite") if r.problems]


# ------------------------------------------------------------------ names and places


def test_a_case_named_dot_dot_touches_nothing(tmp_path) -> None:
    """`..` passes the case-name pattern: it is refused at its entry (E1100) before any
    folder is made, and the output folder and its parent keep every file."""
    (tmp_path / "sentinel").write_text("parent")
    out = tmp_path / "wipe"
    out.mkdir()
    (out / "sentinel").write_text("suite")
    bad = tmp_path / "dd.toml"
    bad.write_text('module = "math"\n\n[[case]]\nop = "sub"\nname = ".."\n'
                   'inputs = { x = "real[2]", y = "real[2]" }\nclass = "arithmetic"\n')
    before = snapshot(tmp_path)
    completed = subprocess.run([*REFINTERP, "golden", "build", str(bad), "-o", str(out)],
                               capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert completed.returncode == 1
    assert f"{bad}:3:1: error: case #1: the case name '..'" in completed.stderr
    assert "[E1100]" in completed.stderr
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name", ["..", ".", ".hidden", "a/b", "a\\b", ""])
def test_unsafe_names_are_refused_even_past_the_table(tmp_path, name: str) -> None:
    """A CaseSpec built by a program (not read from a table) with an unsafe name: the build
    refuses it (E0801) and leaves the suite and its parent as they were."""
    import dataclasses
    out = tmp_path / "suite"
    build_suite(read_table(table(tmp_path))[:1], out)
    before = snapshot(tmp_path)
    spec = dataclasses.replace(read_table(tmp_path / "cases.toml")[0], name=name)
    with pytest.raises(Diagnostic) as caught:
        build_suite([spec], out)
    assert caught.value.code == "E0801"
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("module, op", [("..", "x"), ("math", "add/../../x"),
                                        (".math", "add")])
def test_unsafe_operator_names_are_table_errors(tmp_path, module: str, op: str) -> None:
    path = tmp_path / "t.toml"
    path.write_text(f'module = "{module}"\n\n[[case]]\nop = "{op}"\nname = "a"\n'
                    f'inputs = {{ x = "real[2]" }}\nclass = "exact"\n')
    with pytest.raises(Diagnostic) as caught:
        read_table(path)
    assert caught.value.code == "E1100" and caught.value.span is not None


def test_output_that_is_a_file_or_holds_damaged_cases_is_a_diagnostic(tmp_path, capsys) -> None:
    cases = table(tmp_path)
    (tmp_path / "file").write_text("x")
    assert main(["golden", "build", str(cases), "-o", str(tmp_path / "file")]) == 1
    assert "it exists and is not a folder [E0801]" in capsys.readouterr().err
    out = tmp_path / "suite"
    build_suite(read_table(cases)[:2], out)
    damaged = out / "math.sub" / "old"
    damaged.mkdir(parents=True)
    for content, reason in (("{not json", "not JSON"), ('{"no": "id"}', "string 'id'"),
                            ('{"id": 3}', "string 'id'")):
        (damaged / "case.json").write_text(content)
        before = snapshot(out)
        assert main(["golden", "build", str(cases), "-o", str(out), "-k", "neg"]) == 1
        err = capsys.readouterr().err
        assert "case.json' is no case manifest" in err and reason in err and "[E0800]" in err
        assert snapshot(out) == before  # stopped before building anything


def test_leftovers_are_never_cases_and_are_recovered(tmp_path) -> None:
    """A temporary folder with a case.json (a build killed while writing) is no case for
    verify, the manifest or the harness; a set-aside old folder whose target is missing is
    put back by the next build; a stray marker is dropped."""
    out = tmp_path / "suite"
    build_suite(read_table(table(tmp_path)), out)
    folder = out / "math.neg" / "vector"
    shutil.copytree(folder, out / "math.neg" / ".vector.new.0123abcd")
    (out / "math.neg" / ".vector.new.0123abcd" / MADE_MARKER).write_text("")
    shutil.copytree(folder, out / "math.add" / ".pair.new.0123abcd")  # unmarked: not ours
    os.rename(out / "math.mul" / "matrix", out / "math.mul" / ".matrix.old.89abcdef")
    (out / "math.mul" / ".matrix.old.89abcdef" / MADE_MARKER).write_text("")
    (out / "math.abs" / "ints" / MADE_MARKER).write_text("")
    (out / ".manifest.json.tmp.0a0b0c0d").write_text("{")
    assert all(not is_temporary(p.name) for p in case_folders(out))
    problems = {r.path: r.problems for r in verify_suite(out) if r.problems}
    assert problems == {"math.mul/matrix": ["listed in manifest.json but missing"]}
    manifest = (out / "manifest.json").read_bytes()
    assert recover(out) == ["math.mul/matrix"]
    assert hidden(out) == ["math.add/.pair.new.0123abcd"]  # never deleted: not marked
    assert not [r for r in verify_suite(out) if r.problems]
    assert (out / "manifest.json").read_bytes() == manifest
    assert recover_folders(tmp_path / "missing") == []


def test_a_manifest_listing_a_hidden_path_is_refused(tmp_path) -> None:
    out = tmp_path / "suite"
    build_suite(read_table(table(tmp_path))[:1], out)
    data = json.loads((out / "manifest.json").read_text())
    data["cases"][0]["path"] = "math.add/.pair.new.0123abcd"
    (out / "manifest.json").write_text(json.dumps(data))
    (report,) = verify_suite(out)
    assert "cases[0].path must be a relative path inside the suite" in report.problems[0]


def test_a_build_leaves_nested_suites_alone(tmp_path) -> None:
    """Module suites nested in a suite (their own manifest.json: docs/golden.md "Module
    suites") are neither indexed by the outer manifest nor touched by its build."""
    out = tmp_path / "suite"
    cases = read_table(table(tmp_path))
    build_suite(cases[2:], out / "inner")
    inner = snapshot(out / "inner")
    build_suite(cases[:2], out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert [c["path"] for c in manifest["cases"]] == ["math.add/pair", "math.neg/vector"]
    assert snapshot(out / "inner") == inner
    assert not [r for r in verify_suite(out) if r.problems]
    assert not [r for r in verify_suite(out / "inner") if r.problems]


# ------------------------------------------------------------------ kill -9


def _build_command(suite: Path, cases: Path) -> list[str]:
    return [*REFINTERP, "golden", "build", str(cases), "-o", str(suite)]


@pytest.fixture(scope="module")
def build_seconds(tmp_path_factory: pytest.TempPathFactory) -> float:
    """How long a whole build of the table takes in a new process (start-up included)."""
    folder = tmp_path_factory.mktemp("timing")
    started = time.perf_counter()
    subprocess.run(_build_command(folder / "suite", table(folder)), cwd=ROOT, check=True,
                   capture_output=True, timeout=120)
    return time.perf_counter() - started


@pytest.mark.parametrize("seed", range(8))
def test_a_build_killed_at_any_moment_leaves_a_sound_suite(tmp_path, seed: int,
                                                           build_seconds: float) -> None:
    """SIGKILL after a random part of a build's time, into a built suite (even seeds) or an
    empty folder (odd seeds). Afterwards a built suite verifies, or reports exactly cases
    missing — never a leftover as a case, never a half-written one; every case folder present
    is whole; a second build completes and verifies, leaving no temporary."""
    cases = table(tmp_path)
    suite = tmp_path / "suite"
    if seed % 2 == 0:
        build_suite(read_table(cases), suite)
    process = subprocess.Popen(_build_command(suite, cases), cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(random.Random(seed).uniform(0.3, 1.0) * build_seconds)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    if (suite / "manifest.json").exists():
        for report in verify_suite(suite):
            assert report.problems in ([], ["listed in manifest.json but missing"]), report
    for folder in case_folders(suite) if suite.exists() else []:
        assert not is_temporary(folder.name)
        (report,) = verify_suite(folder, recompute_cases=False)
        assert not report.problems, report
    build_suite(read_tables([cases]), suite)
    assert len([r for r in verify_suite(suite) if not r.problems]) == 7
    assert not hidden(suite)


# ------------------------------------------------------------------ outputs refused early


def _nodes(tmp_path: Path) -> list[tuple[str, Path]]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere" / "file")
    nodes = [("fifo", fifo), ("dangling", dangling), ("folder", tmp_path)]
    if os.geteuid() == 0:
        nodes.append(("device", Path("/dev/full")))
    return nodes


def _identity(path: Path) -> tuple:
    """What must not change about a node: inode, type and mode, device, size, link target."""
    info = os.lstat(path)
    link = os.readlink(path) if stat.S_ISLNK(info.st_mode) else None
    return info.st_ino, info.st_mode, info.st_rdev, info.st_size, link


@pytest.mark.parametrize("option", ["-o", "--trace", "--save-inputs"])
def test_eval_refuses_outputs_that_are_no_regular_file(tmp_path, capsys, option) -> None:
    for kind, node in _nodes(tmp_path):
        before = _identity(node)
        status = main(["eval", "--op", "math.neg", "--input", "x=[1.0]", option, str(node)])
        err = capsys.readouterr().err
        assert status == 1 and "[E0801]" in err, (kind, err)
        assert _identity(node) == before, kind
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("option", ["--json", "--junit", "--update-expect"])
def test_check_refuses_its_outputs_before_the_run(tmp_path, capsys, option) -> None:
    for kind, node in [*_nodes(tmp_path), ("missing folder", tmp_path / "no" / "r.json")]:
        before = _identity(node) if os.path.lexists(node) else None
        status = main(["check", str(ROOT / "golden"), "--backend", "refinterp:scalar",
                       option, str(node)])
        captured = capsys.readouterr()
        assert status == 1 and "[E0801]" in captured.err, (kind, captured.err)
        assert "case(s)" not in captured.out, kind  # nothing ran
        if before is not None:
            assert _identity(node) == before, kind


def test_a_trace_that_cannot_be_written_is_a_diagnostic_noting_the_run(monkeypatch,
                                                                        tmp_path) -> None:
    from refinterp.trace import run_traced
    with monkeypatch.context() as patch:
        Faults(patch, tmp_path, fail_at=1, persist=True)
        with pytest.raises(Diagnostic) as caught:
            run_traced("math.add", tmp_path / "t", inputs={"x": np.ones(2), "y": np.ones(3)})
    assert caught.value.code == "E0801"
    assert any("the run failed too" in note and "[E0307]" in note for note in
               caught.value.notes), caught.value.notes
    assert not list(tmp_path.iterdir())


def _ignore_sigxfsz() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))


def test_fmt_in_place_past_the_file_size_limit_keeps_the_original(tmp_path) -> None:
    """`ulimit -f 2`: the write fails with EFBIG (SIGXFSZ ignored) — fmt reports it, and the
    user's source is whole (it was truncated to 2 048 bytes before)."""
    body = "".join(f"    # comment line {k:04d}, long enough to make the file large\n"
                   for k in range(100))
    source = tmp_path / "m.sknd"
    source.write_text(f"operator  neg2 {{\n{body} @input {{ x: real[n]; }}\n"
                      f" @output {{ y: real[n]; }}\n @lower {{ y[i] = -x[i], i < n; }}\n}}\n")
    original = source.read_bytes()
    assert len(original) > 6000
    completed = subprocess.run([*REFINTERP, "fmt", "-i", str(source)], capture_output=True,
                               text=True, cwd=ROOT, timeout=60, preexec_fn=_ignore_sigxfsz)
    assert completed.returncode == 1, completed.stderr
    assert "cannot write the formatted file" in completed.stderr
    assert "[E0801]" in completed.stderr
    assert source.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.sknd"]
