"""`refinterp shapes`: instantiate an operator, check its composition and print its output
types and shapes (with --symbols its bound symbols, with --quant its @quantize entries)."""

from __future__ import annotations

import argparse
from typing import Any

from refinterp.cli.options import RUNNING, add, limits, parse_types, run_target
from refinterp.cli.output import EXIT_OK, Output
from refinterp.core.diagnostics import Diagnostic


def add_parser(commands: Any) -> None:
    """Register `shapes`."""
    parser = commands.add_parser(
        "shapes", help="instantiate an operator, check its composition, print its output shapes")
    add(parser, *RUNNING)
    parser.add_argument("--input", action="append", default=[], metavar="NAME=TYPE[EXTENTS]",
                        help="an input type: x=real[2,3], xs=real[4]..(3) or xs.0=real[4] "
                             "(not needed where the declared shape is fixed)")
    parser.add_argument("--symbols", action="store_true", help="also print bound symbols")
    parser.add_argument("--quant", action="store_true",
                        help="also list the @quantize entries and the tensors they attach to")


def run(args: argparse.Namespace, out: Output) -> int:
    """Instantiate an operator, check its composition and print its output types and shapes."""
    from refinterp import api

    bounds = limits(args)
    target, values = run_target(args)
    result = api.shapes(target, attributes=values,
                        inputs=parse_types(args.input, max_pack_length=bounds.max_pack_length),
                        generics=tuple(args.generic), profile=args.profile, limits=bounds,
                        quant=args.quant)
    if not result.checked:
        out.diagnostic(Diagnostic(f"the composition was checked only up to where {result.stopped}"
                                  f"; the outputs are the declared ones", severity="note"))
    if out.json_mode:
        out.data(_as_json(args, result))
        return EXIT_OK
    for name, info in result.outputs.items():
        infos = info if isinstance(info, tuple) else (info,)
        for index, item in enumerate(infos):
            label = name if not isinstance(info, tuple) else f"{name}[{index}]"
            if item.shape is None:
                out.result(f"{label}: {item.dtype} (shape derived from the composition)")
                continue
            out.result(f"{label}: {api.describe_type(item)}")
    if args.symbols:
        from refinterp.language.values import format_literal

        for name, value in result.symbols.items():
            out.result(f"  {name} = {format_literal(value)}")
    if args.quant:
        _print_quantization(out, result.quantization)
    return EXIT_OK


def _as_json(args: argparse.Namespace, result: Any) -> dict:
    """The --json object of a `shapes` result."""
    data: dict = {"outputs": {n: _type_json(i) for n, i in result.outputs.items()}}
    if args.symbols:
        from refinterp.language.values import to_json_data
        data["symbols"] = {n: to_json_data(v) for n, v in result.symbols.items()
                           if not n.startswith("<")}
    if args.quant:
        data["quantization"] = [entry.as_json() for entry in result.quantization]
    if not result.checked:
        data["checked"] = False
    return data


def _print_quantization(out: Output, entries: list[Any]) -> None:
    """--quant: each @quantize entry with the tensor it attaches to."""
    from refinterp import api
    from refinterp.language.values import format_literal

    out.result("quantization:" if entries else "quantization: none")
    for entry in entries:
        attributes_text = ", ".join(f"{k} = {format_literal(v)}"
                                    for k, v in entry.attributes.items())
        where = "" if entry.info is None else f", {api.describe_type(entry.info)}"
        out.result(f"  {entry.tensor} ({entry.kind}{where}): {entry.operator}"
                   f"{{{attributes_text}}}")


def _type_json(info: Any) -> Any:
    return [_type_json(i) for i in info] if isinstance(info, tuple) else info.as_json()
