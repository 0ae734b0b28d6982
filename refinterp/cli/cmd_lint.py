"""`refinterp lint FILE|DIR...`: the static checks of every definition, without instantiating
anything (docs/semantics.md "Static rules")."""

from __future__ import annotations

import argparse
from typing import Any

from refinterp.cli.options import add
from refinterp.cli.output import EXIT_DIAGNOSTIC, EXIT_OK, Output
from refinterp.core.diagnostics import Diagnostic


def add_parser(commands: Any) -> None:
    """Register `lint`."""
    parser = commands.add_parser("lint", help="check every definition against the spec's "
                                               "static rules")
    add(parser, "json", "profile")
    parser.add_argument("files", nargs="+", metavar="FILE|DIR",
                        help="a .sknd file, a model folder, or a folder of modules")


def run(args: argparse.Namespace, out: Output) -> int:
    """Print every finding (errors and warnings); exit 1 when there is an error."""
    from refinterp import api

    findings: list[Diagnostic] = []
    for path in args.files:
        try:
            findings.extend(api.lint(path, profile=args.profile))
        except Diagnostic as diag:
            findings.append(diag)
    errors = sum(1 for diag in findings if diag.severity == "error")
    if out.json_mode:
        out.data({"errors": errors,
                   "warnings": sum(1 for d in findings if d.severity == "warning"),
                   "diagnostics": [diag.as_json() for diag in findings]})
    else:
        for diag in findings:
            out.diagnostic(diag)
    return EXIT_DIAGNOSTIC if errors else EXIT_OK
