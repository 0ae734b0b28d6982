"""`refinterp report`: the text and HTML reports of a saved harness run — the JSON report of
`check --json`, or several shards' reports merged (docs/harness.md, "Reports")."""

from __future__ import annotations

import argparse
from typing import Any

from refinterp.cli.options import add_verbosity
from refinterp.cli.output import EXIT_DIAGNOSTIC, EXIT_OK, Output, UsageError


def add_parser(commands: Any) -> None:
    """Register `report`."""
    report = commands.add_parser(
        "report", help="the text and HTML reports of saved `check --json` runs",
        epilog="exit status: 0 every case passed (or failed as expected); 1 a case failed, is "
               "broken or passed unexpectedly, or a report cannot be read; 2 misuse")
    report.add_argument("reports", nargs="+", metavar="RUN.json",
                        help="the JSON report of a run (several: shards merged into one run)")
    report.add_argument("--html", metavar="REPORT.html", help="write the HTML report")
    report.add_argument("--allow-xpass", action="store_true",
                        help="an unexpected pass does not fail the exit status")
    add_verbosity(report)


def run(args: argparse.Namespace, out: Output) -> int:
    """Print the run's text report; write its HTML report if asked."""
    from refinterp import harness
    from refinterp.io import check_writable

    if args.html == harness.STDOUT:
        raise UsageError("--html takes a file name: the HTML report is a file to open, not "
                         "a stream")
    if args.html:
        check_writable(args.html, "--html")
    results, backend, suite = harness.load_results(args.reports)
    harness.print_report(results, out.stream, getattr(args, "verbosity", 0))
    if args.html:
        harness.write_html(args.html, results, backend, suite)
    return EXIT_DIAGNOSTIC if harness.failed(results, args.allow_xpass) else EXIT_OK
