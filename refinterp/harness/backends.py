"""Back ends: what the harness runs a golden case on (docs/harness.md, "Plugging a back end in").

A back end is an object with `prepare(case) -> runner`, where `runner.run(inputs) -> outputs`
(arrays by name, a pack as a list); it raises `Unsupported` (from `prepare` or `run`) to skip a
case, and anything else to fail it. An optional attribute `profile` ("spec", the default, or
"khronos") says which semantics profile it follows (the harness then runs the cases of that
profile, docs/harness.md "Profiles"); an optional `requires` names the top-level modules it
needs (an unknown back-end name lists it as not installed when one is missing). Three kinds:

- `CommandBackend`: any program, in any language, run per case through the shell with the
  case's files (`{model} {dir} {inputs} {params} {outputs} {probes} {views}`); exit 0 = outputs
  written, 77 = unsupported (skip), 1 with a message on stderr = the back end rejects the
  case (`BackendError`), anything else = failure (126, 127: it could not be started); it runs
  in a session of its own, and once the shell exits (or at the timeout) everything it
  started is killed (`processes`);
- a Python object named `module:attribute` (an instance, or a class called without
  arguments; the module is imported with the current folder on the path, as `python -m`
  does), or registered under the entry-point group `refinterp.backends`; by default it runs
  in a worker process (`IsolatedBackend`), so that a hang, an exit or a segfault is one case's
  timeout or crash; `make_backend(..., in_process=True)` loads it into this process;
- the built-in `refinterp:reference`, `refinterp:compiled`, `refinterp:vector`,
  `refinterp:auto` and `refinterp:khronos` (refinterp itself under the khronos profile),
  always in this process; `refinterp:scalar`, the name of earlier releases, is
  `refinterp:compiled`.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import os
import selectors
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

import refinterp.api as api
from refinterp.golden.layouts import VIEWS_FILE, views_document
from refinterp.harness import processes
from refinterp.harness.suite import Case
from refinterp.harness.worker import Worker, WorkerFailed, WorkerGone
from refinterp.io import group_packs, read_arrays

UNSUPPORTED_EXIT = 77
REJECTED_EXIT = 1  # with a message on stderr: the back end rejects the case
NOT_STARTED = {126: "the command could not be executed", 127: "the command was not found"}
DEFAULT_TIMEOUT = 60.0
START_TIMEOUT = 60.0  # at least this long for a Python back end's worker to import it
DRAIN_SECONDS = 0.2   # reading what a command left in its stderr pipe after it exited
PLACEHOLDERS = ("model", "dir", "inputs", "params", "outputs", "probes", "views")


class Unsupported(Exception):
    """Raised by a back end for a case it does not support: the case is skipped."""


class BackendFailure(Exception):
    """A back end failed a case: `reason` is "crash", "timeout" or "missing-output"; never a
    rejection of an error case. `started` is False for a command that could not be started
    (exit status 126 or 127)."""

    def __init__(self, reason: str, detail: str, started: bool = True) -> None:
        super().__init__(detail)
        self.reason, self.detail, self.started = reason, detail, started


class BackendError(Exception):
    """The back end's own refusal of a case: a Python back end's exception raised in its
    worker process (the text is `describe_error` of the original), or a command's exit
    status 1 with a message on stderr. The rejection an error case needs; for a value case,
    a crash."""


def describe_error(error: BaseException) -> str:
    """How a failure is shown: `E0301: message` for refinterp's own errors, `Type: message`
    for another exception; printable (`processes.printable`) and bounded."""
    if isinstance(error, BackendError):
        return str(error)
    if isinstance(error, api.Error):
        return processes.printable(f"{error.code}: {error.message}")
    return processes.printable(f"{type(error).__name__}: {error}")


class Runner(Protocol):
    def run(self, inputs: dict[str, Any]) -> dict[str, Any]: ...


class Backend(Protocol):
    def prepare(self, case: Case) -> Runner: ...


# --------------------------------------------------------------------------- refinterp itself


class RefinterpBackend:
    """refinterp's own engine and profile as a back end (`refinterp:<engine>`,
    `refinterp:khronos`)."""

    def __init__(self, engine: str = "auto", profile: str = "spec") -> None:
        self.engine, self.profile = engine, profile
        self.name = f"refinterp:{engine if profile == 'spec' else profile}"

    def prepare(self, case: Case) -> "_RefinterpRunner":
        return _RefinterpRunner(self, case, api.load(case.model))


class _RefinterpRunner:
    def __init__(self, backend: RefinterpBackend, case: Case, program: Any) -> None:
        self.backend, self.case, self.program = backend, case, program

    def run(self, inputs: dict[str, Any]) -> dict[str, Any]:
        return api.evaluate(self.program, inputs=inputs, params=self.case.params or None,
                            engine=self.backend.engine, profile=self.backend.profile).outputs


BUILT_IN = {"refinterp:reference": ("reference", "spec"),
            "refinterp:compiled": ("compiled", "spec"), "refinterp:vector": ("vector", "spec"),
            "refinterp:auto": ("auto", "spec"), "refinterp:khronos": ("auto", "khronos")}
BUILT_IN_ALIASES = {"refinterp:scalar": "refinterp:compiled"}  # names of earlier releases


# --------------------------------------------------------------------------- any program


class CommandBackend:
    """A program run through the shell per case; see the module docstring."""

    def __init__(self, template: str, timeout: float = DEFAULT_TIMEOUT,
                 profile: str = "spec") -> None:
        self.template, self.timeout, self.profile = template, timeout, profile
        self.name = f"command: {template}"
        try:  # a wrong template is a usage error at the start, not a failure of every case
            template.format(**{name: "" for name in PLACEHOLDERS})
        except (KeyError, IndexError, ValueError) as error:
            raise BackendNameError(_template_problem(error)) from None

    def prepare(self, case: Case) -> "_CommandRunner":
        return _CommandRunner(self, case)


class _CommandRunner:
    def __init__(self, backend: CommandBackend, case: Case) -> None:
        self.backend, self.case = backend, case
        self.probes: Path | None = None  # set by the harness to collect intermediates

    def command(self, outputs: Path, probes: Path, views: Path | str = "") -> str:
        """The template with every placeholder replaced by a quoted path."""
        params = self.case.file("params")
        values = {"model": self.case.model, "dir": self.case.folder,
                  "inputs": self.case.folder / "inputs.npz",
                  "params": params if params else "", "outputs": outputs, "probes": probes,
                  "views": views}
        quoted = {k: shlex.quote(str(v)) if str(v) else "''" for k, v in values.items()}
        return self.backend.template.format(**quoted)

    def write_views(self, folder: Path) -> Path:
        """`{views}`: a JSON file (in the run's temporary folder) describing the layouts of
        the case's inputs, their buffers in the case's views.npz (docs/harness.md)."""
        path = folder / "views.json"
        document = views_document(self.case.manifest, self.case.layouts,
                                  (self.case.folder / VIEWS_FILE).resolve())
        path.write_text(json.dumps(document, sort_keys=True, indent=2) + "\n",
                        encoding="utf-8")
        return path

    def run(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Run the program on the case's files (`inputs` are those of the case)."""
        with tempfile.TemporaryDirectory(prefix="refinterp-check-") as temp:
            outputs = Path(temp) / "outputs.npz"
            probes = self.probes or Path(temp) / "probes"
            probes.mkdir(exist_ok=True)
            views = self.write_views(Path(temp))
            status, stderr = _shell(self.command(outputs, probes, views), self.backend.timeout)
            _judge_status(status, stderr)
            if not outputs.exists():
                raise BackendFailure("missing-output", "the back end exited 0 but wrote no "
                                                       "outputs file")
            try:
                return group_packs(read_arrays(outputs, "the back end's outputs",
                                               keep_dtype=True,
                                               max_input_size=self.case.max_input_size))
            except api.Error as error:
                raise BackendFailure("missing-output", error.message) from None


def _judge_status(status: int, stderr: str) -> None:
    """What a command's exit status says (docs/harness.md, "Any language: a command"): 0
    nothing more, 77 a skip (Unsupported), 1 with a message the back end's rejection
    (BackendError), 126 and 127 a command that could not be started, anything else (a
    signal too) a crash (BackendFailure)."""
    said = f"; stderr:\n{stderr.rstrip()}" if stderr.strip() else ""
    if status == 0:
        return
    if status == UNSUPPORTED_EXIT:
        raise Unsupported(stderr.strip() or "the back end exited 77 (unsupported)")
    if status == REJECTED_EXIT and stderr.strip():
        raise BackendError(f"exit status 1{said}")
    if status in NOT_STARTED:
        raise BackendFailure("crash", f"{NOT_STARTED[status]} (exit status {status}){said}",
                             started=False)
    text = processes.describe_status(status)
    if 128 < status <= 128 + 64:
        text += f" (the shell's way of saying: {processes.describe_status(128 - status)})"
    elif status == REJECTED_EXIT:
        text += " without a message on stderr (a rejection is exit status 1 with a message)"
    raise BackendFailure("crash", text + said)


def _template_problem(error: Exception) -> str:
    return (f"the --backend-cmd template is wrong: {error!r}; its placeholders are "
            f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)} (a literal brace is doubled: "
            f"{{{{ }}}})")


def _shell(command: str, timeout: float) -> tuple[int, str]:
    """Run `command` through the shell in a session of its own; (exit status, its stderr as
    printable, bounded text). Once the shell exits — or at the timeout, which raises
    BackendFailure("timeout") — its whole process group is killed and so is every orphan it
    left (`processes.sweep`); stderr is read while it runs, and after the exit only what is
    already in the pipe (a process that escaped and still holds it is not waited for)."""
    capture = processes.Capture()
    with processes.scope():
        process = subprocess.Popen(command, shell=True, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   start_new_session=True)
        processes.protect(process.pid)
        try:
            finished = _follow(process.pid, process.stderr.fileno(), capture, timeout)
        finally:
            processes.kill_group(process.pid)  # before reaping it: its pid is still reserved
            process.wait()
            processes.release(process.pid)
            processes.sweep()
            _read_for(process.stderr.fileno(), capture, DRAIN_SECONDS)
            process.stderr.close()
    if not finished:
        raise BackendFailure("timeout", f"no result within {timeout:g} s; everything the back "
                                        f"end started was killed")
    return process.returncode, capture.text()


def _follow(pid: int, fd: int, capture: processes.Capture, timeout: float) -> bool:
    """Read `fd` into `capture` until the child `pid` exits (True) or `timeout` s pass
    (False); the child is not reaped. Its exit is seen at once through a pidfd (Linux),
    within 20 ms without one."""
    os.set_blocking(fd, False)
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        exit_fd = _pidfd(pid)
        if exit_fd is not None:
            selector.register(exit_fd, selectors.EVENT_READ)
        try:
            while not processes.exited(pid):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                for key, _ in selector.select(left if exit_fd is not None else min(left, 0.02)):
                    if key.fd == fd and not capture.read_from(fd):
                        selector.unregister(fd)  # end of file: only the exit is awaited now
        finally:
            if exit_fd is not None:
                os.close(exit_fd)
    return True


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _read_for(fd: int, capture: processes.Capture, seconds: float) -> None:
    """Read `fd` (non-blocking) into `capture` until end of file or `seconds` pass."""
    deadline = time.monotonic() + seconds
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while capture.read_from(fd):
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                return


# --------------------------------------------------------------------------- in a worker process


class IsolatedBackend:
    """A Python back end run in a worker process (docs/harness.md, "Processes"): `prepare` and
    `run` are requests to the worker, each bounded by `timeout` (`check_case` sets it to the
    run's `Options.timeout`); a worker that does not answer in time is killed (the case's
    `timeout`), one that dies is the case's `crash` (with what it wrote to stdout and
    stderr); either way the next request starts a new worker. Its `name` and `profile` are
    the back end's own, read in the worker. One request at a time: one per thread."""

    def __init__(self, target: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.target, self.timeout = target, timeout
        self.name, self.profile = target, "spec"
        self.generation = 0  # worker processes started: a runner belongs to one
        self._worker: Worker | None = None
        self._start()

    def _start(self) -> None:
        """Start a worker and load the back end in it; BackendNameError if that fails."""
        worker = Worker(_serve_backend, self.target, capture=True)
        try:
            self.name, self.profile = worker.start(max(self.timeout, START_TIMEOUT))
        except WorkerFailed as error:
            if error.kind == BackendNameError.__name__:
                raise BackendNameError(error.message) from None
            raise BackendNameError(f"cannot load back end '{self.target}': {error.kind}: "
                                   f"{error.message}") from None
        except WorkerGone as gone:
            raise BackendNameError(f"cannot load back end '{self.target}': its worker "
                                   f"process ended: {gone.detail}{_said(gone.output)}") from None
        self._worker, self.generation = worker, self.generation + 1

    def close(self) -> None:
        """Stop the worker (the next request starts another)."""
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def call(self, request: tuple[Any, ...], phase: str) -> Any:
        """One request to the worker: its value, or Unsupported, BackendError (the back end
        raised), BackendFailure (timeout, crash)."""
        if self._worker is None or not self._worker.alive:
            self._worker = None
            try:
                self._start()
            except BackendNameError as error:
                raise BackendFailure("crash", str(error)) from None
        try:
            kind, value = self._worker.call(request, self.timeout)
        except WorkerGone as gone:
            self._worker = None
            if gone.timed_out:
                raise BackendFailure("timeout", f"no result within {self.timeout:g} s; the "
                                                f"back end's worker process was killed"
                                                f"{_said(gone.output)}") from None
            raise BackendFailure("crash", f"the back end's worker process ended during "
                                          f"{phase}: {gone.detail}{_said(gone.output)}") from None
        if kind == "unsupported":
            raise Unsupported(value)
        if kind == "error":
            raise BackendError(value)
        return value

    def prepare(self, case: Case) -> "_IsolatedRunner":
        fields = {f.name: getattr(case, f.name) for f in dataclasses.fields(case)}
        has_probes = self.call(("prepare", fields), "prepare")
        return _IsolatedRunner(self, self.generation, has_probes)


class _IsolatedRunner:
    """The runner the worker prepared, seen from the harness."""

    def __init__(self, backend: IsolatedBackend, generation: int, has_probes: bool) -> None:
        self.backend, self.generation = backend, generation
        if has_probes:
            self.probes = self._probes

    def run(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Run the prepared case. The worker gives the back end the case's own inputs
        (`case.layout_inputs`, strided views intact): the harness passes no others."""
        return self._call("run")

    def _probes(self) -> dict[str, Any]:
        return self._call("probes")

    def _call(self, phase: str) -> Any:
        if self.generation != self.backend.generation:
            raise BackendFailure("crash", "the back end's worker process was restarted since "
                                          "this case was prepared")
        return self.backend.call((phase,), phase)


def _said(output: str) -> str:
    return f"; it wrote:\n{output.rstrip()}" if output.strip() else ""


class _BackendServer:
    """In the worker: the back end itself, answering `IsolatedBackend`'s requests with
    ("ok", value), ("unsupported", reason) or ("error", text)."""

    def __init__(self, backend: Any) -> None:
        self.backend, self.case, self.runner = backend, None, None

    def __call__(self, request: tuple[Any, ...]) -> tuple[str, Any]:
        try:
            if request[0] == "prepare":
                self.case, self.runner = Case(**request[1]), None  # its fields, not its arrays
                self.runner = self.backend.prepare(self.case)
                return "ok", callable(getattr(self.runner, "probes", None))
            if request[0] == "run":
                return "ok", _arrays(self.runner.run(self.case.layout_inputs))
            return "ok", _arrays(dict(self.runner.probes()))
        except Unsupported as skip:
            return "unsupported", processes.printable(str(skip))
        except Exception as error:  # noqa: BLE001 - the back end's failure, judged by the harness
            return "error", describe_error(error)


def _arrays(outputs: Any) -> Any:
    """Outputs as NumPy arrays (a pack as a list), so that any array type crosses processes."""
    if not isinstance(outputs, dict):
        return outputs
    import numpy as np

    def convert(value: Any) -> Any:
        try:
            return np.asarray(value)
        except Exception:  # noqa: BLE001 - left as it is: the comparison judges it
            return value
    return {key: [convert(v) for v in value] if isinstance(value, (list, tuple))
            else convert(value) for key, value in outputs.items()}


def _serve_backend(target: str) -> tuple[_BackendServer, tuple[str, str]]:
    """The worker's set-up: load the back end; (server, (name, profile))."""
    backend = resolve(target)
    return _BackendServer(backend), (str(getattr(backend, "name", target)),
                                     str(getattr(backend, "profile", "spec")))


# By name and thread ident. Entries stay after `close_isolated` (a stopped worker restarts when
# asked again), so that every worker ever started is stopped by the next `close_isolated`; a
# stopped entry is a small object, one per back-end name and thread ident.
_ISOLATED: dict[tuple[str, int], IsolatedBackend] = {}


def make_backend(name: str, timeout: float = DEFAULT_TIMEOUT, in_process: bool = False) -> Any:
    """The back end called `name`: a built-in one, or with `in_process`, loaded into this
    process (`resolve`); any other in its worker process (`IsolatedBackend`, one per name
    and thread, kept until `close_isolated`; its requests bounded by `timeout`)."""
    if in_process or name.startswith("refinterp:"):
        return resolve(name)
    key = (name, threading.get_ident())
    if key not in _ISOLATED:
        _ISOLATED[key] = IsolatedBackend(name, timeout)
    _ISOLATED[key].timeout = timeout
    return _ISOLATED[key]


def close_isolated() -> None:
    """Stop the worker processes of the Python back ends (a later request starts another)."""
    for backend in list(_ISOLATED.values()):
        backend.close()


# --------------------------------------------------------------------------- by name


class BackendNameError(Exception):
    """A back-end name that names nothing, or a command template that is wrong (a usage
    error)."""


def resolve(name: str) -> Any:
    """The back end called `name`: built in, `module:attribute`, or an entry point of the
    group `refinterp.backends`."""
    name = BUILT_IN_ALIASES.get(name, name)
    if name in BUILT_IN:
        engine, profile = BUILT_IN[name]
        return RefinterpBackend(engine, profile)
    if name.startswith("refinterp:"):
        raise BackendNameError(f"no built-in back end '{name}'; the built-in ones are "
                               f"{', '.join(BUILT_IN)}")
    found, entries = None, []
    try:
        entries = list(metadata.entry_points(group="refinterp.backends"))
        found = next((e for e in entries if e.name == name), None)
    except Exception:  # a broken installed distribution must not hide the others
        found = None
    try:
        if found is not None:
            target = found.load()
        elif ":" in name:
            module, _, attribute = name.partition(":")
            if os.getcwd() not in sys.path:  # a module of the current folder, as `python -m`
                sys.path.insert(0, os.getcwd())
            target = importlib.import_module(module)
            for part in attribute.split("."):
                target = getattr(target, part)
        else:
            raise BackendNameError(f"no back end '{name}': name a built-in one "
                                   f"({', '.join(BUILT_IN)}), module:attribute, or an entry "
                                   f"point of the group refinterp.backends "
                                   f"({_entry_points(entries)})")
    except (ImportError, AttributeError) as error:
        raise BackendNameError(f"cannot load back end '{name}': {error}") from None
    backend = target() if isinstance(target, type) else target
    if not callable(getattr(backend, "prepare", None)):
        raise BackendNameError(f"back end '{name}' has no prepare(case) method")
    if not hasattr(backend, "name"):
        try:
            backend.name = name
        except AttributeError:
            pass
    return backend


def _entry_points(entries: list[Any]) -> str:
    """'installed: a, b; not installed: c (needs torch)' for the back ends of the entry-point
    group: one is installed when its entry point loads and the modules its optional
    `requires` attribute names are found (importlib.util.find_spec: nothing is imported)."""
    installed, missing = [], []
    for entry in sorted(entries, key=lambda e: e.name):
        try:
            needs = [m for m in getattr(entry.load(), "requires", ()) if not _findable(m)]
        except Exception as error:  # noqa: BLE001 - any failure to load: not installed
            missing.append(f"{entry.name} ({type(error).__name__}: {error})")
            continue
        if needs:
            missing.append(f"{entry.name} (needs {', '.join(needs)})")
        else:
            installed.append(entry.name)
    text = f"installed: {', '.join(installed) or 'none'}"
    return text + (f"; not installed: {', '.join(missing)}" if missing else "")


def _findable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
