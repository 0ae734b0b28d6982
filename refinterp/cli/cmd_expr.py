"""`refinterp expr EXPR`: evaluate a compile-time expression and print its value."""

from __future__ import annotations

import argparse
from typing import Any

from refinterp.cli.options import add, attributes
from refinterp.cli.output import EXIT_OK, Output

NOT_AN_OPTION = "\x00"  # argv strings cannot hold NUL: a safe mark for "this is no option"


def add_parser(commands: Any) -> None:
    """Register `expr`."""
    parser = commands.add_parser("expr", help="evaluate a compile-time expression")
    add(parser, "json", "profile")
    parser.add_argument("expression", metavar="EXPR",
                        help="the expression (one starting with '-', such as -inf, needs no "
                             "'--')")
    parser.add_argument("--attrib", action="append", default=[], metavar="NAME=VALUE",
                        help="a symbol and its value, a SkriptND literal expression")


def run(args: argparse.Namespace, out: Output) -> int:
    """Evaluate one compile-time expression and print its value."""
    from refinterp.api import evaluate_expression
    from refinterp.language.values import format_literal, to_json

    value = evaluate_expression(args.expression.removeprefix(NOT_AN_OPTION), attributes(args),
                                args.profile)
    out.result(to_json(value) if args.json else format_literal(value))
    return EXIT_OK


def expression_first(argv: list[str]) -> list[str]:
    """`refinterp expr -inf`: an expression that starts with '-' is not an option. The first
    argument of `expr` that starts with '-' and is no option of expr is marked (and the mark
    removed again by `run`), so options may still follow it."""
    if "expr" not in argv or "--" in argv:
        return argv
    takes_value = {"--attrib", "--profile"}
    flags = {"--json", "-h", "--help"}
    index = argv.index("expr") + 1
    while index < len(argv):
        token = argv[index]
        if token in takes_value:
            index += 2
            continue
        if token in flags or any(token.startswith(f"{o}=") for o in takes_value):
            index += 1
            continue
        if token.startswith("-") and len(token) > 1:
            return argv[:index] + [NOT_AN_OPTION + token] + argv[index + 1:]
        return argv  # the expression does not start with '-'
    return argv
