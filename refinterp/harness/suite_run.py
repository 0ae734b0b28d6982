"""Running a back end on a golden suite: selecting cases, running each (with a timeout),
comparing, explaining, and applying expectations (docs/harness.md). Each case is verified
before it runs and the back end gets its own copy of it (`trust`); a case that cannot be read
or verified, or that the harness itself fails on, is `broken`. With `-j N` the cases run in
N worker processes (`worker.Worker`), each given one case at a time, so that a worker that
dies is that case's crash and is replaced (docs/harness.md, "Processes")."""

from __future__ import annotations

import re
import shlex
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Callable, Iterable

from refinterp.golden.layouts import split_id
from refinterp.core.diagnostics import ArgumentDiagnostic
from refinterp.harness import explain, figures, processes, trust
from refinterp.harness.backends import (DEFAULT_TIMEOUT, BackendError, BackendFailure,
                                        CommandBackend, IsolatedBackend, Unsupported,
                                        close_isolated, describe_error, make_backend)
from refinterp.harness.compare import Outcome, Override, compare
from refinterp.harness.expect import Expectation, find
from refinterp.harness.suite import Case, load_case, load_suite
from refinterp.io import MAX_INPUT_SIZE
from refinterp.harness.worker import Worker, WorkerGone

STATUSES = ("pass", "fail", "skip", "xfail", "xpass", "broken")
RAN = ("pass", "fail", "xfail", "xpass")  # the statuses of a case the back end ran
NOT_STARTED_STOP = 5  # a run whose first cases all fail to start a command stops there
START_SECONDS = 60.0  # at most, for a -j worker process to start
STOP_SECONDS = 2.0    # for an interrupted -j worker to clean up and end
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
    figures: list[dict[str, Any]] = field(default_factory=list)  # harness.figures (HTML report)
    started: bool = True  # False: a command back end could not be started (not reported)

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["seconds"] = round(self.seconds, 4)
        del data["started"]
        return data


@dataclass(frozen=True)
class BackendSpec:
    """How to make the back end, in any process: a name (`resolve`) or a command template."""

    name: str | None = None
    command: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    profile: str | None = None  # for a command back end (a named one says its own)
    in_process: bool = False  # a Python back end in the harness's process (--in-process)

    def make(self) -> Any:
        if self.command is not None:
            return CommandBackend(self.command, self.timeout, self.profile or "spec")
        return make_backend(self.name or "", self.timeout, self.in_process)

    def describe(self) -> str:
        return self.name if self.command is None else f"--backend-cmd {self.command!r}"

    def arguments(self) -> list[str]:
        """The `refinterp check` options that name this back end."""
        if self.command is None:
            words = ["--backend", self.name or ""]
            if (self.name or "").startswith("refinterp:"):
                return words  # built in: no process, no timeout
            if self.in_process:
                words.append("--in-process")
        else:
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
    max_input_size: int = MAX_INPUT_SIZE  # --max-input-size: bytes of one array file read
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


def _timed(function: Callable[[], Any], timeout: float | None) -> Any:
    """Call `function` (an in-process back end, --in-process); one that has not returned
    within `timeout` fails the case. Its thread is left behind (in-process code cannot be
    stopped), a daemon thread, so that it does not keep the process from ending."""
    if timeout is None:
        return function()
    done: dict[str, Any] = {}

    def call() -> None:
        try:
            done["value"] = function()
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            done["error"] = error

    thread = threading.Thread(target=call, name="refinterp-backend", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise BackendFailure("timeout", f"no result within {timeout:g} s")
    if "error" in done:
        raise done["error"]
    return done["value"]


def check_case(backend: Any, case: Case, options: Options = Options(),
               given: Case | None = None) -> Outcome:
    """Run one case on a back end and judge it (without expectations). `given` is the case as
    the back end gets it (its own copy, `trust.backend_copy`; by default `case` itself);
    `case` is what the harness judges with. An exception of the harness's own (not the back
    end's) propagates: the caller reports the case `broken`."""
    given = given or case
    if isinstance(backend, IsolatedBackend):
        backend.timeout = options.timeout  # it bounds each request to its worker itself
    in_process = not isinstance(backend, (CommandBackend, IsolatedBackend))
    timeout = options.timeout if in_process else None  # a process is timed out by its owner
    inputs = given.layout_inputs if in_process else {}  # a process reads the case's own
    for phase in ("prepare", "run"):
        try:
            if phase == "prepare":
                runner = _timed(lambda: backend.prepare(given), timeout)
            else:
                outputs = _timed(lambda: runner.run(inputs), timeout)
        except Unsupported as skip:
            return Outcome("skip", None, processes.printable(str(skip)) or "unsupported", phase)
        except BackendFailure as failure:  # a crash, a timeout: never a rejection
            if case.error is not None and failure.reason == "missing-output":
                break  # it exited 0: it accepted the invalid case
            return Outcome("fail", failure.reason, failure.detail, phase,
                           started=failure.started)
        except Exception as error:  # the back end's own error: a rejection or a crash
            if not in_process and not isinstance(error, BackendError):
                raise  # the harness's own failure, around a back end in another process
            if case.error is not None:
                return Outcome("pass", None,
                               f"rejected, as it must be ({describe_error(error)})", phase)
            return Outcome("fail", "crash", describe_error(error), phase)
    if case.error is not None:
        return Outcome("fail", "accepted-invalid",
                       f"the back end accepted an invalid case; a conforming implementation "
                       f"rejects it (refinterp: {case.error['code']}: "
                       f"{case.error['message']})", "run")
    outcome = compare(case, outputs, options.policy, options.override)
    if outcome.reason == "mismatch":
        outcome.figures = figures.failure_figures(case, outputs, outcome.outputs,
                                                  options.override)
    if outcome.status == "fail" and options.explain:
        notes = explain.explain(case, outputs, outcome, options)
        if notes:
            outcome.explanation += "\n" + "\n".join(notes)
    return outcome


def run_one(spec: BackendSpec, case: Case | str, options: Options) -> Result:
    """Check one case (the unit of work of -j and Dask: everything is picklable): verify it,
    run the back end on its own copy, judge. A case folder given by name is loaded first."""
    if not isinstance(case, Case):
        case = load_case(case, options.max_input_size)
    began = time.perf_counter()
    try:
        trusted = trust.verified(case)
    except trust.BrokenCase as broken:
        return _result(case, _broken(str(broken)), began, options)
    try:
        with trust.backend_copy(trusted) as given, processes.scope():
            # whatever the back end starts ends with the case (the scope), before its copy
            outcome = _judge(spec, trusted, given, options)
    except trust.BrokenCase as broken:
        outcome = _broken(str(broken))
    except Exception as error:  # noqa: BLE001 - one case never stops the run
        outcome = _broken(f"the harness failed on the case: {describe_error(error)}", "")
    return _result(trusted, outcome, began, options)


def _judge(spec: BackendSpec, case: Case, given: Case, options: Options) -> Outcome:
    """Make the back end, run it on `given`, judge against `case`; with --probe, the first
    intermediate that diverges."""
    try:
        backend = spec.make()
    except Exception as error:  # noqa: BLE001 - the back end cannot be loaded here
        return Outcome("fail", "crash", f"the back end cannot be loaded: "
                                        f"{describe_error(error)}", "prepare")
    outcome = check_case(backend, case, options, given)
    if options.probe_dir and outcome.status == "fail" and outcome.reason in (
            "mismatch", "shape", "dtype"):
        try:
            note = explain.first_divergence(backend, case, options, given)
        except Exception as error:  # noqa: BLE001 - the verdict stands without its probes
            note = f"Probes: could not be compared: {describe_error(error)}"
        if note:
            outcome.explanation += "\n" + note
    return outcome


def _broken(reason: str, phase: str = "prepare") -> Outcome:
    """The outcome of a case the harness could not read, verify or prepare (phase prepare),
    or failed on itself (no phase: anywhere)."""
    return Outcome("broken", None, reason, phase)


def _result(case: Case, outcome: Outcome, began: float, options: Options) -> Result:
    """The Result of a case's outcome, with the command that re-runs a failed case alone."""
    if outcome.status in ("fail", "broken") and options.rerun:
        outcome.explanation += f"\nRe-run this case alone: {options.rerun} " \
                               f"-k '^{re.escape(case.id)}$'"
    return Result(case.id, outcome.status, outcome.reason, outcome.explanation.strip(),
                  time.perf_counter() - began, outcome.phase, case.operator, case.module,
                  dict(case.attributes), figures=outcome.figures, started=outcome.started)


def _run_one_packed(args: tuple[BackendSpec, Case, Options]) -> Result:
    return run_one(*args)


# --------------------------------------------------------------------------- -j N


def _serve_cases(argument: None) -> tuple[Callable[[Any], Result], None]:
    """A -j worker's set-up: it answers (spec, folder, options) with run_one's Result."""
    return _run_one_packed, None


def _crashed(item: tuple[BackendSpec, Case, Options], detail: str, seconds: float) -> Result:
    """The result of a case whose -j worker process died checking it."""
    case = item[1]
    explanation = f"the worker process checking the case ended: {detail}"
    return Result(case.id, "fail", "crash", explanation, seconds, "run", case.operator,
                  case.module, dict(case.attributes))


def _run_parallel(work: list[tuple[BackendSpec, Case, Options]], jobs: int,
                  collect: Callable[[Result], None]) -> None:
    """Check the cases in `jobs` worker processes, one case at a time each; a worker that
    dies is its case's crash and is replaced. Interrupted, the workers are asked to stop
    (each kills what it started), then killed."""
    queue = deque(work)
    busy: dict[Worker, tuple[tuple[BackendSpec, Case, Options], float, int]] = {}
    idle: list[Worker] = []
    workers = [Worker(_serve_cases) for _ in range(min(jobs, len(work)))]
    finished = False
    try:
        for worker in workers:
            worker.launch()
        for worker in workers:
            worker.ready(START_SECONDS)
            idle.append(worker)
        while queue or busy:
            while queue and idle:
                worker = idle.pop()
                item = queue.popleft()
                worker.send(item)
                busy[worker] = (item, time.perf_counter(), worker.process.pid)
            ready = wait([waitable for worker in busy for waitable in worker.waitables])
            for worker in [w for w in busy if any(x in ready for x in w.waitables)]:
                item, started, pid = busy.pop(worker)
                try:
                    collect(worker.receive(None))  # its answer, or its end, is there
                    idle.append(worker)
                except WorkerGone as gone:
                    trust.remove_copies(pid)  # the case's copy it could not remove
                    collect(_crashed(item, gone.detail, time.perf_counter() - started))
                    workers.remove(worker)
                    worker = Worker(_serve_cases)
                    workers.append(worker)
                    worker.start(START_SECONDS)
                    idle.append(worker)
        finished = True
    finally:
        _stop(workers, finished)


def _stop(workers: list[Worker], finished: bool) -> None:
    """End the -j workers: told to stop when the run is over; else (interrupted, or the
    harness failed) sent SIGTERM, so that each kills what it started, and killed after
    STOP_SECONDS; the case copies of those that did not remove them are removed."""
    if not finished:
        pids = [worker.process.pid for worker in workers if worker.process is not None]
        for worker in workers:
            worker.terminate()
        deadline = time.monotonic() + STOP_SECONDS
        for worker in workers:
            worker.wait_exit(max(0.0, deadline - time.monotonic()))
            worker.kill()
        for pid in pids:
            trust.remove_copies(pid)
    for worker in workers:
        worker.close()


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
    """Check every selected case of a suite on a back end; results sorted by case id. The
    Python back end's worker processes are stopped at the end, and whatever a back end
    started is killed (docs/harness.md, "Processes")."""
    with processes.scope():
        try:
            return _run_suite(suite, spec, options, include, exclude, shard, jobs,
                              dask_address, list(expectations), progress)
        finally:
            close_isolated()


def _run_suite(suite: str | Path, spec: BackendSpec, options: Options, include: str | None,
               exclude: str | None, shard: tuple[int, int] | None, jobs: int,
               dask_address: str | None, expectations: list[Expectation],
               progress: Callable[[Result], None] | None) -> list[Result]:
    backend = spec.make()
    if not options.rerun:
        options = replace(options, rerun="refinterp check " + " ".join(
            shlex.quote(w) for w in [str(suite), *spec.arguments()]))
    cases = select(applicable(load_suite(suite, options.max_input_size),
                              getattr(backend, "profile", "spec")),
                   include, exclude, shard)
    work = [(spec, case, options) for case in cases]
    results: list[Result] = []

    def collect(result: Result) -> None:
        results.append(result)
        if progress is not None:
            progress(result)
        _stop_if_not_started(spec, results, min(NOT_STARTED_STOP, len(work)))

    if dask_address is not None:
        from refinterp.harness.distributed import run_on_dask
        for result in run_on_dask(dask_address, _run_one_packed, work):
            collect(result)
    elif jobs > 1 and len(work) > 1:
        close_isolated()  # each -j worker starts its own
        _run_parallel(work, jobs, collect)
    else:
        for item in work:
            collect(_run_one_packed(item))
    results.sort(key=lambda r: r.id)
    apply_expectations(results, expectations)
    return results


def _stop_if_not_started(spec: BackendSpec, results: list[Result], first: int) -> None:
    """Stop the run (ArgumentDiagnostic, E0901) when each of its first `first` cases failed
    to start the back end's command (exit status 126 or 127): it cannot run at all."""
    if len(results) != first or not all(not r.started for r in results):
        return
    said = results[0].explanation.split("\nRe-run this case alone:")[0]
    raise ArgumentDiagnostic(
        f"the back end cannot be run: --backend-cmd {spec.command!r} could not be started "
        f"in any of the first {first} case(s), so the run stops here; the first: {said}",
        notes=["the command must name a program that exists and is executable (on the PATH, "
               "or by its path)"])


def ran(results: list[Result]) -> int:
    """How many cases the back end ran (not skipped, not broken)."""
    return sum(r.status in RAN for r in results)


def failed(results: list[Result], allow_xpass: bool = False) -> bool:
    """Whether the run fails: a failure, a broken case, or an unexpected pass (unless
    allowed)."""
    return any(r.status in ("fail", "broken") or (r.status == "xpass" and not allow_xpass)
               for r in results)
