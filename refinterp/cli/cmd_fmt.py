"""`refinterp fmt FILE...`: print files in canonical form, rewrite them (-i) or check them
(--check)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from refinterp.cli.options import add
from refinterp.cli.output import EXIT_DIAGNOSTIC, EXIT_OK, Output


def add_parser(commands: Any) -> None:
    """Register `fmt`."""
    parser = commands.add_parser("fmt", help="print files in canonical form (or rewrite or "
                                             "check them)")
    add(parser, "json")
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="a .sknd file or a model folder with main.sknd")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("-i", "--in-place", action="store_true",
                      help="rewrite the files instead of printing them")
    mode.add_argument("--check", action="store_true",
                      help="print nothing; exit 1 and name each file that is not in canonical "
                           "form")


def run(args: argparse.Namespace, out: Output) -> int:
    """Print the canonical form of files, rewrite them (-i), or check them (--check).

    The canonical form keeps every comment and is checked before `format_file` returns it
    (`syntax.printer.format_module`): it reads back as the same syntax tree with the same
    comments, or a diagnostic stops fmt before it writes anything for that file."""
    from refinterp.api import format_file

    changed: list[str] = []
    for name in args.files:
        text, original, warnings = format_file(name)
        for warning in warnings:
            out.diagnostic(warning)
        if args.check:
            if text != original:
                changed.append(name)
                if not out.json_mode:
                    sys.stderr.write(f"would reformat {name}\n")
        elif args.in_place:
            if text != original:
                _rewrite(name, text)
                changed.append(name)
        elif not out.json_mode:
            out.result(text.rstrip("\n"))
    if out.json_mode:
        out.data({"files": list(args.files),
                  "reformatted" if args.in_place else "not_canonical": changed})
    return EXIT_DIAGNOSTIC if args.check and changed else EXIT_OK


def _rewrite(name: str, text: str) -> None:
    """fmt -i: a model folder stands for its main.sknd. The file is replaced atomically
    (core.files.write_text): if writing fails, the original stays whole (E0801)."""
    from refinterp.core.files import write_text

    path = Path(name)
    if path.is_dir():
        path = next(p for p in (path / "main.sknd", path / "main.nnef") if p.is_file())
    write_text(path, text, "the formatted file")
