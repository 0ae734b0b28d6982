"""`refinterp check`: run a back end on a golden suite and explain every mismatch
(docs/harness.md)."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from refinterp.cli.options import (MAX_JOBS, MAX_TIMEOUT, add, add_verbosity, check_number,
                                   max_input_size, parse_regex)
from refinterp.cli.output import EXIT_DIAGNOSTIC, EXIT_OK, Output, UsageError
from refinterp.core.diagnostics import Diagnostic

EXIT_NOTHING_RAN = 4  # no case ran: every one skipped, or none selected (docs/harness.md)
EPILOG = ("exit status: 0 every case that ran passed (or failed as expected); 1 a case failed, "
          "is broken (the suite's or the harness's own problem) or passed unexpectedly, or "
          "the back end cannot be run at all; 2 misuse of the command line; 4 no case ran "
          "(every case skipped, or none selected) unless --allow-skip; 130, 143 interrupted "
          "(SIGINT, SIGTERM)")


def add_parser(commands: Any) -> None:
    """Register `check` (it has its own --json FILE, unlike the other commands)."""
    check = commands.add_parser(
        "check", help="run a back end on a golden suite and explain every mismatch",
        epilog=EPILOG)
    check.add_argument("suite", nargs="?", metavar="SUITE",
                       help="a golden suite folder (or one case folder)")
    which = check.add_mutually_exclusive_group()
    which.add_argument("--backend", metavar="NAME",
                       help="refinterp:reference, refinterp:compiled, refinterp:vector, "
                            "refinterp:auto, refinterp:khronos, module:attribute, or an "
                            "entry point of the group refinterp.backends")
    which.add_argument("--backend-cmd", metavar="COMMAND",
                       help="a shell command run per case with {model} {dir} {inputs} {params} "
                            "{outputs} {probes} {views}; exit 0 = outputs written, "
                            "77 = unsupported")
    which.add_argument("--merge", nargs="+", metavar="REPORT.json",
                       help="combine the JSON reports of shards into one report")
    check.add_argument("--profile", choices=["spec", "khronos"], default=None,
                       help="the semantics profile a --backend-cmd back end follows (default "
                            "spec): it runs that profile's variants of the cases")
    check.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                       help="per case (default 60); a case that takes longer fails")
    check.add_argument("--in-process", action="store_true",
                       help="run a Python --backend in this process, not in a worker process "
                            "(for debugging: a hang, an exit or a crash of the back end then "
                            "stops the run)")
    check.add_argument("-k", dest="include", metavar="REGEX",
                       help="only the cases whose id matches (searched)")
    check.add_argument("--exclude", metavar="REGEX", help="leave out the cases whose id matches")
    check.add_argument("--expect", metavar="FILE",
                       help="expected failures and skips (TOML or JSON, docs/harness.md)")
    check.add_argument("--update-expect", metavar="FILE",
                       help="write the failures and skips of this run as an expectations file")
    check.add_argument("--allow-xpass", action="store_true",
                       help="an unexpected pass does not fail the run")
    check.add_argument("--allow-skip", action="store_true",
                       help="a run in which no case ran (every case skipped, or none "
                            f"selected) exits 0, not {EXIT_NOTHING_RAN}")
    check.add_argument("--rtol", type=float, help="override every case's relative tolerance")
    check.add_argument("--atol", type=float, help="override every case's absolute tolerance")
    check.add_argument("--ulp", type=int, help="override every case's ULP window")
    check.add_argument("--dtype", choices=["exact", "kind", "values"], default="kind",
                       help="dtype policy: exact (float64/int64/bool), kind (the default: a "
                            "float32 result passes on values), values (any dtype)")
    add(check, "max_input_size")
    check.add_argument("--json", metavar="REPORT.json",
                       help="write the JSON report ('-': to stdout, the rest of the output "
                            "then goes to stderr)")
    check.add_argument("--junit", metavar="REPORT.xml",
                       help="write a JUnit XML report ('-': to stdout, as --json -)")
    check.add_argument("--html", metavar="REPORT.html",
                       help="write the HTML report: one self-contained file (the matrix of "
                            "operators × outcome, each failure's error maps and reproducing "
                            "command)")
    add_verbosity(check)
    check.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                       help="worker processes (default 1)")
    check.add_argument("--shard", metavar="I/N",
                       help="run only shard I of N (1-based; every N-th case by id)")
    check.add_argument("--dask", metavar="ADDRESS",
                       help="run the cases on the Dask distributed scheduler at ADDRESS")
    check.add_argument("--probe", metavar="DIR",
                       help="for a failing case, write refinterp's intermediate tensors to DIR "
                            "and name the first where the back end's own ({probes}) diverge")
    check.add_argument("--shrink", action="store_true",
                       help="for a failing operator case, search smaller shapes and simpler "
                            "values and print the smallest case that still fails with its "
                            "case")
    check.add_argument("--keep", action="store_true",
                       help="with --shrink: keep the smallest case's folder (in the temporary "
                            "folder) and name it; without --keep it is removed")
    check.add_argument("--no-explain", action="store_true",
                       help="skip the explanations (other profiles, higher precision)")
    check.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help="a progress bar (default: when stderr is a terminal)")


def _shard(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    found = re.fullmatch(r"(\d+)/(\d+)", text)
    if not found or not 1 <= int(found.group(1)) <= int(found.group(2)):
        raise UsageError(f"--shard takes I/N with 1 <= I <= N, e.g. 1/4; got {text!r}")
    return int(found.group(1)), int(found.group(2))


def run(args: argparse.Namespace, out: Output) -> int:
    """Check a back end, or merge shard reports."""
    from refinterp import harness
    from refinterp.io import check_writable

    _reserve_stdout(args, out)
    if args.html == harness.STDOUT:
        raise UsageError("--html takes a file name: the HTML report is a file to open, not "
                         "a stream ('-' is for --json and --junit)")
    for path, what in ((args.json, "--json"), (args.junit, "--junit"), (args.html, "--html"),
                       (args.update_expect, "--update-expect")):
        if path and path != harness.STDOUT:  # refused before the run, not after it
            check_writable(path, what)
    if args.merge:
        results, backend, suite = harness.load_results(args.merge)
        return _finish(args, out, results, backend, suite)
    if args.suite is None or (args.backend is None and args.backend_cmd is None):
        raise UsageError("check needs SUITE and --backend NAME or --backend-cmd COMMAND "
                         "(or --merge REPORT.json...)")
    check_number(args.jobs, "-j", 1, MAX_JOBS)
    check_number(args.timeout, "--timeout", 0.001, MAX_TIMEOUT)
    for option in ("rtol", "atol"):
        check_number(getattr(args, option), f"--{option}", 0.0, 1e300)
    check_number(args.ulp, "--ulp", 0, 2**62)
    if args.profile is not None and args.backend_cmd is None:
        raise UsageError("--profile is for --backend-cmd (a named back end says its own)")
    if args.keep and not args.shrink:
        raise UsageError("--keep is for --shrink (it keeps the smallest failing case's folder)")
    if args.in_process and args.backend_cmd is not None:
        raise UsageError("--in-process is for a Python --backend (a command always runs in "
                         "processes of its own)")
    spec = harness.BackendSpec(name=args.backend, command=args.backend_cmd,
                               timeout=args.timeout, profile=args.profile,
                               in_process=args.in_process)
    from refinterp.harness import processes

    # while checking: the back ends' processes end with the run, and SIGINT / SIGTERM stop
    # them before the finished cases are reported (docs/harness.md, "Processes")
    with processes.scope(), processes.interruptible():
        try:
            return _check(args, out, spec)
        except processes.Interrupted as stop:  # while reporting, after the run
            return stop.status


def _reserve_stdout(args: argparse.Namespace, out: Output) -> None:
    """`--json -` or `--junit -`: that report is written to stdout, and everything else the
    run prints goes to stderr. Only one report can have stdout."""
    from refinterp import harness

    to_stdout = [option for option, path in (("--json", args.json), ("--junit", args.junit))
                 if path == harness.STDOUT]
    if len(to_stdout) > 1:
        raise UsageError("--json - and --junit -: only one report can be written to stdout")
    if to_stdout:
        out.reserve_stdout()


def _check(args: argparse.Namespace, out: Output, spec: Any) -> int:
    """Run the suite (and --shrink) on the back end; print and write what it gave."""
    from refinterp import harness
    from refinterp.harness import processes

    finished: list[Any] = []
    name = spec.describe()
    expectations = []
    progress, done = _progress_bar(args)

    def record(result: Any) -> None:
        finished.append(result)
        if progress is not None:
            progress(result)
    try:
        try:
            backend = spec.make()
        except harness.BackendNameError as error:
            raise UsageError(str(error)) from None
        name = getattr(backend, "name", name)
        if args.expect:
            expectations = harness.read_expectations(args.expect)
        import shlex

        rerun = "refinterp check " + " ".join(shlex.quote(a) for a in _rerun_words(args, spec))
        options = harness.Options(policy=args.dtype,
                                  override=harness.Override(args.rtol, args.atol, args.ulp),
                                  timeout=args.timeout, explain=not args.no_explain,
                                  probe_dir=args.probe, rerun=rerun,
                                  max_input_size=max_input_size(args))
        results = harness.run_suite(args.suite, spec, options,
                                    include=parse_regex(args.include, "-k"),
                                    exclude=parse_regex(args.exclude, "--exclude"),
                                    shard=_shard(args.shard), jobs=args.jobs,
                                    dask_address=args.dask, expectations=expectations,
                                    progress=record)
        done()
        shrunk = harness.shrink_failures(args.suite, spec, options, results, args.keep) \
            if args.shrink else {}
    except processes.Interrupted as stop:
        done()
        return _interrupted(args, out, stop, finished, expectations, name)
    finally:
        done()
    if expectations:
        for entry in harness.unused(expectations, [r.id for r in results]):
            out.diagnostic(Diagnostic(f"--expect: the entry '{entry.pattern}' matches no case "
                                      f"of this run", severity="warning"))
    for result in results:  # printed (and reported) with its case
        if result.id in shrunk:
            result.explanation = result.explanation.rstrip("\n") + "\n" + shrunk[result.id]
    if args.update_expect:
        count = harness.write_expectations(args.update_expect, results)
        out.result(f"wrote {count} expectation(s) to {args.update_expect}")
    return _finish(args, out, results, name, args.suite)


def _interrupted(args: argparse.Namespace, out: Output, stop: Any, finished: list[Any],
                 expectations: list[Any], backend: str) -> int:
    """SIGINT / SIGTERM: the back ends' processes are stopped by now; report the cases that
    finished (no report files: they would look complete) and exit 128 + the signal."""
    from refinterp.harness import suite_run

    results = sorted(finished, key=lambda r: r.id)
    suite_run.apply_expectations(results, expectations)
    _finish(args, out, results, backend, args.suite, write=False)
    out.diagnostic(Diagnostic(f"interrupted ({stop}): {len(results)} case(s) finished and are "
                              f"reported above; every process of the back end was stopped; "
                              f"no report file was written", severity="warning"))
    return stop.status


def _rerun_words(args: argparse.Namespace, spec: Any) -> list[str]:
    """The options that repeat this run's back end and comparison for one case."""
    words = [args.suite, *spec.arguments()]
    if args.dtype != "kind":
        words += ["--dtype", args.dtype]
    for option in ("rtol", "atol", "ulp", "max_input_size"):
        if getattr(args, option) is not None:
            words += [f"--{option.replace('_', '-')}", str(getattr(args, option))]
    return words


def _progress_bar(args: argparse.Namespace) -> tuple[Any, Any]:
    """A rich progress bar on stderr (when wanted): (per-result callback, finish)."""
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    if not show:
        return None, lambda: None
    from rich.progress import Progress

    bar = Progress(transient=True)
    bar.start()
    task = bar.add_task("checking", total=None)

    def advance(result: Any) -> None:
        bar.update(task, advance=1, description=f"checking {result.id}")
    return advance, bar.stop


def _finish(args: argparse.Namespace, out: Output, results: list[Any], backend: str,
            suite: str, write: bool = True) -> int:
    """Print the failures, summary and coverage; write the reports asked for (if `write`)."""
    from refinterp import harness

    harness.print_report(results, out.stream, getattr(args, "verbosity", 0))
    if write and args.json:
        harness.write_json(args.json, results, backend, str(suite))
    if write and args.junit:
        harness.write_junit(args.junit, results, backend)
    if write and args.html:
        harness.write_html(args.html, results, backend, str(suite))
    if harness.failed(results, args.allow_xpass):
        return EXIT_DIAGNOSTIC
    if write and not harness.ran(results) and not args.allow_skip:
        what = f"every one of the {len(results)} case(s) was skipped" if results else \
            "no case was selected"
        out.diagnostic(Diagnostic(f"no case ran: {what}; exit status {EXIT_NOTHING_RAN} "
                                  f"(--allow-skip accepts such a run)", severity="warning"))
        return EXIT_NOTHING_RAN
    return EXIT_OK
