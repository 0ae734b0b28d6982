"""`refinterp parse FILE...`: load files with their imports and summarise each in one line."""

from __future__ import annotations

import argparse
from typing import Any

from refinterp.cli.options import LOADING, add
from refinterp.cli.output import EXIT_DIAGNOSTIC, EXIT_OK, Output
from refinterp.core.diagnostics import Diagnostic


def add_parser(commands: Any) -> None:
    """Register `parse`."""
    parser = commands.add_parser("parse", help="parse files (and their imports) and summarise "
                                                "them")
    add(parser, *LOADING)
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="a .sknd file or a model folder with main.sknd")


def run(args: argparse.Namespace, out: Output) -> int:
    """Load each file with its imports; print one summary line per file."""
    from refinterp import api

    status = EXIT_OK
    results = []
    for path in args.files:
        try:
            program = api.load(path, stdlib=args.stdlib, search_path=args.path)
        except Diagnostic as diag:
            if out.json_mode:
                results.append({"file": path, "error": diag.as_json()})
            else:
                out.error(diag)
            status = EXIT_DIAGNOSTIC
            continue
        for warning in program.warnings:
            out.diagnostic(warning)
        main = program.main
        operators = [d.name for d in main.tree.definitions if not d.is_graph]
        graphs = [d.name for d in main.tree.definitions if d.is_graph]
        if out.json_mode:
            results.append({"file": path, "imports": list(main.imports),
                            "operators": operators, "graphs": graphs})
        else:
            out.result(f"{path}: imports {', '.join(main.imports) or 'none'}; "
                       f"{_listing('operator', operators)}; {_listing('graph', graphs)}")
    if out.json_mode:
        out.data({"files": results})
    return status


def _listing(kind: str, names: list[str]) -> str:
    plural = kind if len(names) == 1 else kind + "s"
    return f"{len(names)} {plural}" + (f" ({', '.join(names)})" if names else "")
