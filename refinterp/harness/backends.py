"""Back ends: what the harness runs a golden case on (docs/harness.md, "Plugging a back end in").

A back end is an object with `prepare(case) -> runner`, where `runner.run(inputs) -> outputs`
(arrays by name, a pack as a list); it raises `Unsupported` (from `prepare` or `run`) to skip a
case, and anything else to fail it. An optional attribute `profile` ("spec", the default, or
"khronos") says which semantics profile it follows (the harness then runs the cases of that
profile, docs/harness.md "Profiles"). Three kinds:

- `CommandBackend`: any program, in any language, run per case through the shell with the
  case's files (`{model} {dir} {inputs} {params} {outputs} {probes} {views}`); exit 0 = outputs
  written, 77 = unsupported (skip), anything else = failure; a timeout kills the whole process
  group;
- a Python object named `module:attribute` (an instance, or a class called without
  arguments; the module is imported with the current folder on the path, as `python -m`
  does), or registered under the entry-point group `refinterp.backends`;
- the built-in `refinterp:scalar`, `refinterp:vector`, `refinterp:auto` and
  `refinterp:khronos` (refinterp itself under the khronos profile).
"""

from __future__ import annotations

import importlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

import refinterp.api as api
from refinterp.golden.layouts import VIEWS_FILE, views_document
from refinterp.harness.suite import Case
from refinterp.io import group_packs, read_arrays

UNSUPPORTED_EXIT = 77
DEFAULT_TIMEOUT = 60.0
PLACEHOLDERS = ("model", "dir", "inputs", "params", "outputs", "probes", "views")


class Unsupported(Exception):
    """Raised by a back end for a case it does not support: the case is skipped."""


class BackendFailure(Exception):
    """A back end failed a case: `reason` is "crash", "timeout" or "missing-output"."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason, self.detail = reason, detail


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


BUILT_IN = {"refinterp:scalar": ("scalar", "spec"), "refinterp:vector": ("vector", "spec"),
            "refinterp:auto": ("auto", "spec"), "refinterp:khronos": ("auto", "khronos")}


# --------------------------------------------------------------------------- any program


class CommandBackend:
    """A program run through the shell per case; see the module docstring."""

    def __init__(self, template: str, timeout: float = DEFAULT_TIMEOUT,
                 profile: str = "spec") -> None:
        self.template, self.timeout, self.profile = template, timeout, profile
        self.name = f"command: {template}"

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
        try:
            return self.backend.template.format(**quoted)
        except (KeyError, IndexError, ValueError) as error:
            raise BackendFailure("crash", f"the command template is wrong: {error!r}; its "
                                          f"placeholders are "
                                          f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}")

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
            if status == UNSUPPORTED_EXIT:
                raise Unsupported(stderr.strip() or "the back end exited 77 (unsupported)")
            if status != 0:
                raise BackendFailure("crash", f"exit status {status}" +
                                     (f"; stderr:\n{stderr.rstrip()}" if stderr.strip() else ""))
            if not outputs.exists():
                raise BackendFailure("missing-output", "the back end exited 0 but wrote no "
                                                       "outputs file")
            try:
                return group_packs(read_arrays(outputs, "the back end's outputs",
                                               keep_dtype=True))
            except api.Error as error:
                raise BackendFailure("missing-output", error.message) from None


def _shell(command: str, timeout: float) -> tuple[int, str]:
    """Run `command` in its own process group; (exit status, stderr). A timeout kills the
    group and raises BackendFailure("timeout")."""
    process = subprocess.Popen(command, shell=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.communicate()
        raise BackendFailure("timeout", f"no result within {timeout:g} s; the process group "
                                        f"was killed") from None
    return process.returncode, stderr.decode("utf-8", errors="replace")


# --------------------------------------------------------------------------- by name


class BackendNameError(Exception):
    """A back-end name that names nothing (a usage error)."""


def resolve(name: str) -> Any:
    """The back end called `name`: built in, `module:attribute`, or an entry point of the
    group `refinterp.backends`."""
    if name in BUILT_IN:
        engine, profile = BUILT_IN[name]
        return RefinterpBackend(engine, profile)
    if name.startswith("refinterp:"):
        raise BackendNameError(f"no built-in back end '{name}'; the built-in ones are "
                               f"{', '.join(BUILT_IN)}")
    found, installed = None, []
    try:
        entries = metadata.entry_points(group="refinterp.backends")
        installed = sorted({e.name for e in entries})
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
                                   f"point of the group refinterp.backends (installed: "
                                   f"{', '.join(installed) or 'none'})")
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
