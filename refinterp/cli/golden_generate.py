"""`refinterp golden generate`: a conformance suite generated from an operator's signature
(docs/golden.md, "Generated suites")."""

from __future__ import annotations

import argparse
import shlex
import time
from pathlib import Path
from typing import Any

from refinterp.cli.options import add, attributes, check_number
from refinterp.cli.output import EXIT_OK, Output
from refinterp.core.diagnostics import Diagnostic

MAX_CASES = 40


def add_parser(actions: Any) -> None:
    """Register `golden generate`."""
    parser = actions.add_parser(
        "generate", help="generate a suite for any operator from its signature: valid, "
                         "special-value and per-assert error cases")
    add(parser, "json", "path", "profile", "attrib")
    parser.add_argument("target", metavar="MODULE.OP|FILE",
                        help="a standard operator (nn.conv) or a .sknd file defining it")
    parser.add_argument("--op", metavar="NAME",
                        help="the operator of FILE (default: its only operator)")
    parser.add_argument("-o", "--output", required=True, metavar="SUITE",
                        help="the suite folder (created if needed); it also gets the "
                             "generated table, generated.toml")
    parser.add_argument("--seed", type=int, default=0, metavar="N",
                        help="varies the drawn input values (default 0: seeds from the case "
                             "ids, as in tables)")
    parser.add_argument("--max-cases", type=int, default=MAX_CASES, metavar="N",
                        help=f"at most N valid cases (default {MAX_CASES}); error cases come "
                             f"on top, one per @assert")


def run(args: argparse.Namespace, out: Output) -> int:
    """Generate the cases, build them into the suite, write generated.toml."""
    from refinterp import golden

    check_number(args.max_cases, "--max-cases", 1, 10**4)
    check_number(args.seed, "--seed", 0, 2**32 - 1)
    started = time.perf_counter()
    generated, written, failed = golden.generate_suite(
        args.target, args.output, op=args.op, search_path=tuple(args.path),
        attributes=attributes(args), seed=args.seed, max_cases=args.max_cases,
        profile=args.profile, command=_command(args))
    operator = generated.operator
    seconds = time.perf_counter() - started
    if not generated.specs:
        raise Diagnostic(f"no case could be generated for {operator.qualified} (no valid "
                         f"candidate, no assert violated); {args.output}/generated.toml says "
                         f"what was tried", code="E1101")
    errors = sum(1 for spec in generated.specs if spec.error is not None)
    if out.json_mode:
        out.data({"suite": args.output, "operator": operator.qualified,
                  "class": generated.klass, "cases": [{"id": i, "path": p, "sha256": h}
                                                      for i, p, h in written],
                  "error_cases": errors, "unviolated_asserts": generated.unviolated,
                  "internal_errors": generated.internal, "left_out": failed,
                  "notes": generated.notes,
                  "seconds": round(seconds, 3)})
        return EXIT_OK
    out.result(f"generated {len(generated.specs)} case(s) for {operator.qualified} "
               f"({len(generated.specs) - errors} valid, {errors} error; class "
               f"{generated.klass}), {len(written)} folder(s) written into {args.output} in "
               f"{seconds:.1f} s")
    for text in generated.notes:
        out.result(f"  note: {text}")
    for text in generated.unviolated:
        out.result(f"  no error case: no candidate violates {text} alone")
    for text in generated.internal:
        out.result(f"  left out, refinterp failed internally: {text}")
    return EXIT_OK


def _command(args: argparse.Namespace) -> str:
    """The command line that generates the suite again, to run in the suite folder (recorded
    in generated.toml, so that it does not depend on where the suite is)."""
    target = args.target
    if target.endswith(".sknd") or Path(target).is_file():
        target = str(Path(target).resolve())
    words = ["refinterp", "golden", "generate", target]
    if args.op:
        words += ["--op", args.op]
    for text in args.attrib:
        words += ["--attrib", text]
    for folder in args.path:
        words += ["--path", folder]
    if args.seed:
        words += ["--seed", str(args.seed)]
    if args.max_cases != MAX_CASES:
        words += ["--max-cases", str(args.max_cases)]
    if args.profile != "spec":
        words += ["--profile", args.profile]
    return shlex.join(words + ["-o", "."])
