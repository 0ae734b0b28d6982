"""`refinterp describe MODULE.OP|FILE`: print an operator's full signature."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from refinterp.cli.options import LOADING, add
from refinterp.cli.output import EXIT_OK, Output, UsageError


def add_parser(commands: Any) -> None:
    """Register `describe`."""
    parser = commands.add_parser("describe", help="print an operator's full signature")
    add(parser, *LOADING)
    parser.add_argument("target", metavar="MODULE.OP|FILE",
                        help="a standard operator such as nn.conv, or a file (with --op)")
    parser.add_argument("--op", metavar="NAME", help="the operator of FILE to describe")


def run(args: argparse.Namespace, out: Output) -> int:
    """The full signature of one operator: `module.op`, or an operator of a file (--op,
    default the file's first graph, else its only operator)."""
    from refinterp import api

    if Path(args.target).exists():
        program = api.load(args.target, stdlib=args.stdlib, search_path=args.path)
        signature = program.signature(args.op)
    else:
        if args.op:
            raise UsageError(f"'{args.target}' is no file; name a standard operator as "
                             f"MODULE.OP without --op")
        signature = api.signature(args.target, stdlib=args.stdlib)
    if out.json_mode:
        out.data(signature.as_json())
    else:
        out.result(signature.describe())
    return EXIT_OK
