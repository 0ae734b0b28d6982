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
    parser.add_argument("--tensors", action="store_true",
                        help="also print the type of every tensor the composition binds")
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
    if args.tensors:
        out.result("tensors:")
        for name, info in result.tensors.items():
            out.result(f"  {name}: {api.describe_type(info)}")
    _print_symbolic(out, result)
    if args.quant:
        _print_quantization(out, result.quantization)
    return EXIT_OK


def _print_symbolic(out: Output, result: Any) -> None:
    """Checked without values: the symbols with their bounds, and the checks left to a run
    (docs/semantics.md "Shapes without values")."""
    symbols = result.extent_symbols()
    if symbols:
        out.result("symbols: " + ", ".join(
            f"{s.name} in {s.low}..{'' if s.high is None else s.high}" for s in symbols))
    if result.runtime_checks:
        out.result("checked at run time (the symbols' bounds do not decide them):")
        for what, why, span in result.runtime_checks:
            where = f"{span.path}:{span.line}" if span is not None else ""
            out.result(f"  {what}    # {why}; {where}")


def _as_json(args: argparse.Namespace, result: Any) -> dict:
    """The --json object of a `shapes` result."""
    data: dict = {"outputs": {n: _type_json(i) for n, i in result.outputs.items()}}
    symbols = result.extent_symbols()
    if symbols:
        data["extent_symbols"] = {s.name: {"low": s.low, "high": s.high} for s in symbols}
    if result.runtime_checks:  # (like "checked", only where there is something to say)
        data["runtime_checks"] = [
            {"check": what, "because": why,
             "at": None if span is None else f"{span.path}:{span.line}:{span.col}"}
            for what, why, span in result.runtime_checks]
    if args.tensors:
        data["tensors"] = {n: _type_json(i) for n, i in result.tensors.items()}
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
