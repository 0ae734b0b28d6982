"""`refinterp ops [MODULE|FILE]`: list operators with their kind and signature."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from refinterp.cli.options import LOADING, add
from refinterp.cli.output import EXIT_OK, Output


def add_parser(commands: Any) -> None:
    """Register `ops`."""
    parser = commands.add_parser("ops", help="list operators with their kind and signature")
    add(parser, *LOADING)
    parser.add_argument("module", metavar="MODULE|FILE", nargs="?",
                        help="a standard module (nn, math, ...) or a file; default: every "
                             "standard module")
    parser.add_argument("--private", action="store_true",
                        help="list the private operators too (names starting with '_', "
                             "helpers invoked only from their own module)")


def run(args: argparse.Namespace, out: Output) -> int:
    """List the operators of a module (a standard module's name or a file), or of every
    standard module."""
    from refinterp import api

    if args.module is None:
        programs = [api.load_module(m, stdlib=args.stdlib)
                    for m in api.stdlib_modules(args.stdlib)]
    elif Path(args.module).exists():
        programs = [api.load(args.module, stdlib=args.stdlib, search_path=args.path)]
    else:
        programs = [api.load_module(args.module, stdlib=args.stdlib)]
    signatures = [s for program in programs for s in program.operators()
                  if args.private or not s.name.startswith("_")]
    if out.json_mode:
        out.data({"operators": [s.as_json() for s in signatures]})
        return EXIT_OK
    width = max((len(s.kind) for s in signatures), default=0)
    for s in signatures:
        out.result(f"{s.kind:<{width}}  {s.one_line()}")
    return EXIT_OK
