"""Running a back end on a golden suite: selecting cases, running each (with a timeout),
comparing, explaining, and applying expectations (docs/harness.md)."""

from __future__ import annotations

import re
import shlex
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable

import refinterp.api as api
from refinterp.golden.layouts import split_id
from refinterp.harness import explain
from refinterp.harness.backends import (DEFAULT_TIMEOUT, BackendFailure, CommandBackend,
                                        Unsupported, resolve)
from refinterp.harness.compare import Outcome, Override, compare
from refinterp.harness.expect import Expectation, find
from refinterp.harness.suite import Case, load_case, load_suite

STATUSES = ("pass", "fail", "skip", "xfail", "xpass")
REASONS = ("mismatch", "shape", "dtype", "missing-output", "crash", "timeout",
           "accepted-invalid")


@dataclass
class Result:
    """What checking one case gave (the `cases` entries of the JSON report)."""

    id: str
    status: str
    reason: str | None = None
    explanation: str = ""
    seconds: float = 0.0
    phase: str = ""
    operator: str | None = None
    module: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)
    expected: str | None = None  # the expectation's reason, for xfail / xpass / expected skip

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["seconds"] = round(self.seconds, 4)
        return data


@dataclass(frozen=True)
class BackendSpec:
    """How to make the back end, in any process: a name (`resolve`) or a command template."""

    name: str | None = None
    command: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    profile: str | None = None  # for a command back end (a named one says its own)

    def make(self) -> Any:
        if self.command is not None:
            return CommandBackend(self.command, self.timeout, self.profile or "spec")
        return resolve(self.name or "")

    def describe(self) -> str:
        return self.name if self.command is None else f"--backend-cmd {self.command!r}"

    def arguments(self) -> list[str]:
        """The `refinterp check` options that name this back end."""
        if self.command is None:
            return ["--backend", self.name or ""]
        words = ["--backend-cmd", self.command]
        if self.profile:
            words += ["--profile", self.profile]
        if self.timeout != DEFAULT_TIMEOUT:
            words += ["--timeout", f"{self.timeout:g}"]
        return words


@dataclass(frozen=True)
class Options:
    """How cases are compared and explained."""

    policy: str = "kind"
    override: Override = Override()
    timeout: float = DEFAULT_TIMEOUT
    explain: bool = True
    probe_dir: str | None = None  # --probe DIR: intermediates of failing cases
    rerun: str = ""  # the command that re-runs a case: rerun + " -k '^<id>$'"


# --------------------------------------------------------------------------- selecting


def applicable(cases: list[Case], profile: str) -> list[Case]:
    """The cases a back end following `profile` runs: a case `X@P` replaces `X` for a back end
    of profile P; variants of other profiles are left out; a layout variant `X@view-<kind>`
    goes with `X`."""
    ids = {c.id for c in cases}
    chosen = []
    for case in cases:
        # a layout variant `Y@view-<kind>` is run exactly when `Y` is
        core = split_id(case.id)[0]
        base, _, variant = core.partition("@")
        if variant:
            if variant == profile:
                chosen.append(case)
        elif f"{core}@{profile}" not in ids:
            chosen.append(case)
    return chosen


def select(cases: list[Case], include: str | None = None, exclude: str | None = None,
           shard: tuple[int, int] | None = None) -> list[Case]:
    """Filter by id (regular expressions, searched), then take shard I of N (1-based) of the
    sorted ids: every N-th case, so that shards are deterministic and balanced."""
    chosen = [c for c in sorted(cases, key=lambda c: c.id)
              if (include is None or re.search(include, c.id))
              and (exclude is None or not re.search(exclude, c.id))]
    if shard is not None:
        index, count = shard
        chosen = [c for k, c in enumerate(chosen) if k % count == index - 1]
    return chosen


# --------------------------------------------------------------------------- one case


def _failure(error: BaseException) -> str:
    if isinstance(error, api.Error):
        return f"{error.code}: {error.message}"
    return f"{type(error).__name__}: {error}"


def _timed(function: Callable[[], Any], timeout: float | None) -> Any:
    """Call `function`; a Python back end that has not returned within `timeout` fails the
    case (its thread is left behind: in-process code cannot be stopped)."""
    if timeout is None:
        return function()
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(function)
    try:
        return future.result(timeout=timeout)
    except FutureTimeout:
        raise BackendFailure("timeout", f"no result within {timeout:g} s") from None
    finally:
        pool.shutdown(wait=False)


def check_case(backend: Any, case: Case, options: Options = Options()) -> Outcome:
    """Run one case on a back end and judge it (without expectations)."""
    in_process = not isinstance(backend, CommandBackend)
    timeout = options.timeout if in_process else None  # a command times itself out
    rejected = Outcome("pass", explanation="rejected, as it must be")
    for phase in ("prepare", "run"):
        try:
            if phase == "prepare":
                runner = _timed(lambda: backend.prepare(case), timeout)
            else:
                outputs = _timed(lambda: runner.run(case.layout_inputs), timeout)
        except Unsupported as skip:
            return Outcome("skip", None, str(skip) or "unsupported", phase)
        except BackendFailure as failure:
            if case.error is not None and failure.reason == "crash":
                return Outcome("pass", None, rejected.explanation, phase)
            if case.error is not None and failure.reason == "missing-output":
                break  # it exited 0: it accepted the invalid case
            return Outcome("fail", failure.reason, failure.detail, phase)
        except Exception as error:  # the back end's own error: a rejection or a crash
            if case.error is not None:
                return Outcome("pass", None, f"rejected, as it must be ({_failure(error)})",
                               phase)
            return Outcome("fail", "crash", _failure(error), phase)
    if case.error is not None:
        return Outcome("fail", "accepted-invalid",
                       f"the back end accepted an invalid case; a conforming implementation "
                       f"rejects it (refinterp: {case.error['code']}: "
                       f"{case.error['message']})", "run")
    outcome = compare(case, outputs, options.policy, options.override)
    if outcome.status == "fail" and options.explain:
        notes = explain.explain(case, outputs, outcome, options)
        if notes:
            outcome.explanation += "\n" + "\n".join(notes)
    return outcome


def run_one(spec: BackendSpec, folder: str, options: Options) -> Result:
    """Check one case folder (the unit of work of -j and Dask: everything is picklable)."""
    case = load_case(folder)
    started = time.perf_counter()
    try:
        backend = spec.make()
        outcome = check_case(backend, case, options)
        if options.probe_dir and outcome.status == "fail" and outcome.reason in (
                "mismatch", "shape", "dtype"):
            note = explain.first_divergence(backend, case, options)
            if note:
                outcome.explanation += "\n" + note
    except Exception as error:  # noqa: BLE001 - one case never stops the run
        outcome = Outcome("fail", "crash", f"the harness could not run the case: "
                                           f"{_failure(error)}", "prepare")
    if outcome.status == "fail" and options.rerun:
        outcome.explanation += f"\nRe-run this case alone: {options.rerun} " \
                               f"-k '^{re.escape(case.id)}$'"
    return Result(case.id, outcome.status, outcome.reason, outcome.explanation.strip(),
                  time.perf_counter() - started, outcome.phase, case.operator, case.module,
                  dict(case.attributes))


def _run_one_packed(args: tuple[BackendSpec, str, Options]) -> Result:
    return run_one(*args)


# --------------------------------------------------------------------------- the suite


def apply_expectations(results: list[Result], expectations: list[Expectation]) -> None:
    """Turn fail into xfail, pass into xpass where an expectation says so."""
    for result in results:
        if result.status == "fail":
            entry = find(expectations, result.id, "fail", result.phase)
            if entry is not None:
                result.status, result.expected = "xfail", entry.reason
        elif result.status == "pass":
            entry = find(expectations, result.id, "fail")
            if entry is not None:
                result.status, result.expected = "xpass", entry.reason
        elif result.status == "skip":
            entry = find(expectations, result.id, "skip")
            if entry is not None:
                result.expected = entry.reason


def run_suite(suite: str | Path, spec: BackendSpec, options: Options = Options(), *,
              include: str | None = None, exclude: str | None = None,
              shard: tuple[int, int] | None = None, jobs: int = 1,
              dask_address: str | None = None, expectations: Iterable[Expectation] = (),
              progress: Callable[[Result], None] | None = None) -> list[Result]:
    """Check every selected case of a suite on a back end; results sorted by case id."""
    backend = spec.make()
    if not options.rerun:
        options = replace(options, rerun="refinterp check " + " ".join(
            shlex.quote(w) for w in [str(suite), *spec.arguments()]))
    cases = select(applicable(load_suite(suite), getattr(backend, "profile", "spec")),
                   include, exclude, shard)
    work = [(spec, str(case.folder), options) for case in cases]
    results: list[Result] = []

    def collect(result: Result) -> None:
        results.append(result)
        if progress is not None:
            progress(result)

    if dask_address is not None:
        from refinterp.harness.distributed import run_on_dask
        for result in run_on_dask(dask_address, _run_one_packed, work):
            collect(result)
    elif jobs > 1 and len(work) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for result in pool.map(_run_one_packed, work, chunksize=1):
                collect(result)
    else:
        for item in work:
            collect(_run_one_packed(item))
    results.sort(key=lambda r: r.id)
    apply_expectations(results, list(expectations))
    return results


def failed(results: list[Result], allow_xpass: bool = False) -> bool:
    """Whether the run fails: a failure, or an unexpected pass (unless allowed)."""
    return any(r.status == "fail" or (r.status == "xpass" and not allow_xpass)
               for r in results)
