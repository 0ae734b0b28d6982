"""`refinterp golden build|verify|index|show`: golden fixtures on the command line
(docs/golden.md)."""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any

from refinterp.cli.options import MAX_JOBS, add, check_number, max_input_size, parse_regex
from refinterp.cli.output import EXIT_DIAGNOSTIC, EXIT_OK, Output
from refinterp.core.diagnostics import Diagnostic


def add_parser(commands: Any) -> None:
    """Register `golden` and its subcommands."""
    golden = commands.add_parser("golden", help="build, verify and show golden fixtures")
    actions = golden.add_subparsers(dest="golden_command", metavar="ACTION", required=True,
                                    help="build, verify, index, show or generate")
    build = actions.add_parser("build", help="compute the cases of case tables into a suite "
                                             "folder")
    add(build, "json")
    build.add_argument("tables", nargs="+", metavar="CASEFILE",
                       help="case tables (TOML, docs/golden.md)")
    build.add_argument("--path", action="append", default=[], metavar="DIR",
                       help="an extra folder to search for the modules the tables' files and "
                            "models import (after each table's own path)")
    build.add_argument("-o", "--output", required=True, metavar="DIR",
                       help="the suite folder (created if needed)")
    build.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                       help="worker processes (default 1); the bytes written do not depend on it")
    build.add_argument("-k", metavar="REGEX", dest="include",
                       help="only the cases whose id matches (searched)")
    build.add_argument("--exclude", metavar="REGEX", help="leave out the cases whose id matches")
    build.add_argument("--per-operator", type=int, metavar="N",
                       help="at most N cases per operator: error cases (up to 2) first, then "
                            "special values, then table order (the committed suite uses 7)")
    verify = actions.add_parser("verify", help="check every hash of a suite and recompute "
                                               "every case")
    add(verify, "json")
    verify.add_argument("suite", metavar="DIR", help="a suite folder, or one case folder")
    verify.add_argument("-k", metavar="REGEX", dest="include",
                        help="only the cases whose id matches (searched)")
    verify.add_argument("--hashes-only", action="store_true",
                        help="check the hashes without recomputing")
    add(verify, "max_input_size")
    index = actions.add_parser("index", help="write (or refresh) manifest.json of a folder of "
                                             "case folders, checking every case's hashes")
    add(index, "json")
    index.add_argument("suite", metavar="DIR", help="a folder of case folders (saved runs, "
                                                    "copied cases)")
    add(index, "max_input_size")
    show = actions.add_parser("show", help="print a case (manifest, model, every array) as "
                                           "text")
    add(show, "json")
    show.add_argument("case", metavar="CASE_DIR", help="a case folder (it holds case.json)")
    from refinterp.cli import golden_generate
    golden_generate.add_parser(actions)


def run(args: argparse.Namespace, out: Output) -> int:
    """Dispatch to build, verify, index, show or generate."""
    from refinterp.cli import golden_generate
    return {"build": _build, "verify": _verify, "index": _index, "show": _show,
            "generate": golden_generate.run}[args.golden_command](args, out)


def _build(args: argparse.Namespace, out: Output) -> int:
    from refinterp import golden

    check_number(args.jobs, "-j", 1, MAX_JOBS)
    include, exclude = parse_regex(args.include, "-k"), parse_regex(args.exclude, "--exclude")
    specs = golden.select(golden.read_tables(args.tables), include, exclude)
    if args.path:
        specs = with_search_path(specs, args.path)
    if args.per_operator is not None:
        check_number(args.per_operator, "--per-operator", 1, 10**6)
        specs = golden.per_operator(specs, args.per_operator)
    if not specs:
        raise Diagnostic("no case of the tables matches", code="E0901")
    started = time.perf_counter()
    written = golden.build_suite(specs, args.output, jobs=args.jobs)
    seconds = time.perf_counter() - started
    if out.json_mode:
        out.data({"suite": args.output, "cases": [{"id": i, "path": p, "sha256": h}
                                                  for i, p, h in written],
                  "seconds": round(seconds, 3),
                  "cases_per_second": round(len(written) / seconds, 1) if seconds else None})
        return EXIT_OK
    out.result(f"built {len(written)} case(s) from {len(specs)} table entr"
               f"{'y' if len(specs) == 1 else 'ies'} into {args.output} in {seconds:.1f} s"
               f"{_rate(len(written), seconds)}")
    return EXIT_OK


def with_search_path(specs: list[Any], folders: list[str]) -> list[Any]:
    """The specs with `folders` (`--path`, each an existing folder, made absolute) after
    their own search path."""
    from dataclasses import replace

    extra = []
    for folder in folders:
        if not Path(folder).is_dir():
            raise Diagnostic(f"--path: no folder '{folder}'", code="E0800")
        extra.append(str(Path(folder).resolve()))
    return [replace(spec, search_path=spec.search_path + tuple(extra)) for spec in specs]


def _rate(cases: int, seconds: float) -> str:
    """` (N cases/s)` for a summary line; nothing for an instant run."""
    return f" ({cases / seconds:.0f} cases/s)" if seconds > 0 and cases else ""


def _verify(args: argparse.Namespace, out: Output) -> int:
    from refinterp import golden

    include = parse_regex(args.include, "-k")
    if not Path(args.suite).is_dir():
        raise Diagnostic(f"no suite folder '{args.suite}'", code="E0800")
    started = time.perf_counter()
    reports = golden.verify_suite(args.suite, recompute_cases=not args.hashes_only,
                                  include=None if include is None else
                                  (lambda case_id: re.search(include, case_id) is not None),
                                  max_input_size=max_input_size(args))
    seconds = time.perf_counter() - started
    bad = [r for r in reports if r.problems]
    cases = [r for r in reports if r.id != golden.SUITE_REPORT]  # what is counted as checked
    if out.json_mode:
        out.data({"suite": args.suite, "checked": len(cases),
                  "failed": len([r for r in bad if r.id != golden.SUITE_REPORT]),
                  "cases": [{"id": r.id, "path": r.path, "problems": r.problems}
                            for r in bad], "seconds": round(seconds, 3),
                  "cases_per_second": round(len(cases) / seconds, 1) if seconds else None})
    else:
        for report in bad:
            for problem in report.problems:
                out.diagnostic(Diagnostic(f"{report.id} ({report.path}): {problem}",
                                          code="E1102"))
        sound = len([r for r in cases if not r.problems])
        out.result(f"verified {len(cases)} case(s) in {seconds:.1f} s"
                   f"{_rate(len(cases), seconds)}: "
                   f"{sound} sound, {len(cases) - sound} with problems")
    return EXIT_DIAGNOSTIC if bad else EXIT_OK


def _index(args: argparse.Namespace, out: Output) -> int:
    from refinterp import golden

    manifest = golden.index_suite(args.suite, max_input_size=max_input_size(args))
    path = Path(args.suite) / "manifest.json"
    if out.json_mode:
        out.data({"suite": args.suite, "manifest": str(path), "count": manifest["count"],
                  "cases": [{"id": c["id"], "path": c["path"]} for c in manifest["cases"]]})
    else:
        out.result(f"indexed {manifest['count']} case(s) in {path}")
    return EXIT_OK


def _show(args: argparse.Namespace, out: Output) -> int:
    from refinterp import golden

    folder = Path(args.case)
    if not (folder / "case.json").is_file():
        raise Diagnostic(f"'{folder}' is no case folder (it has no case.json)", code="E0800")
    text = golden.show_case(folder)
    if out.json_mode:
        out.data({"case": str(folder), "text": text})
    else:
        sys.stdout.write(text)
    return EXIT_OK
