"""`refinterp einsum`: an einsum spec (NumPy or OCANNL notation), an OCANNL `%cd` one-liner or
a `%cd` block (assignments separated by `;`, `t.grad` nodes: refinterp/einsum/ocannl_cd.py) as
SkriptND operators (refinterp/einsum/__init__.py), printed (`--emit`) or run on input arrays
with the input and output options of `eval` (docs/ocannl.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from refinterp.cli.arrays import load_inputs, print_outputs, write_results
from refinterp.cli.options import add, attributes, limits
from refinterp.cli.output import EXIT_OK, Output, UsageError


def add_parser(commands: Any) -> None:
    """Register `einsum`, with the options it shares with `eval` (cli.options)."""
    parser = commands.add_parser(
        "einsum", help="translate an einsum spec or OCANNL assignment to SkriptND; print or run it")
    add(parser, "json")
    parser.add_argument("spec", metavar="SPEC",
                        help="an einsum spec: NumPy 'ij,jk->ik', OCANNL 'b|i->o => o|b->i' or "
                             "'ij;jk=>ik', a ~logic shorthand '.', '@', 'T'; or a one-liner "
                             "'c =:+ a * b ~logic:\"ij;jk=>ik\"'")
    parser.add_argument("--accum", default="=:+", metavar="ASSIGN",
                        help="the OCANNL accumulation: =: =+ =:+ =- =:* =:@^ =:^^ ... "
                             "(default =:+)")
    parser.add_argument("--operation", metavar="OP",
                        help="the primitive operation by name or infix spelling (relu, *, "
                             "-?/, where, ...); default: * for two operands, id for one")
    parser.add_argument("--names", metavar="A,B,...",
                        help="the operands' names (default a, b, c, ...)")
    parser.add_argument("--result", metavar="NAME", help="the result's name (default out)")
    parser.add_argument("--emit", action="store_true",
                        help="print the SkriptND operator instead of running it")
    parser.add_argument("--dtype", choices=["real", "int", "bool"], default="real",
                        help="the element type of the operator --emit prints (a run takes "
                             "the arrays' type, as NumPy promotes them); default real")
    add(parser, "profile", "attrib", "max_work", "inputs", "input", "random", "seed", "output",
        "save_inputs", "max_input_size", "engine")
    parser.set_defaults(random_inputs=False)


def run(args: argparse.Namespace, out: Output) -> int:
    """Build the operator; print it (--emit) or run it and summarise or write its outputs."""
    from refinterp import api, io
    from refinterp import einsum as front

    given_inputs = args.inputs or args.input or args.random
    if args.emit and (given_inputs or args.output or args.save_inputs):
        raise UsageError("--emit prints the operator; it takes no inputs or output files")
    if not args.emit and not given_inputs:
        raise UsageError("give inputs (--inputs, --input, --random) or --emit")
    if args.seed < 0:
        raise UsageError(f"--seed: a seed is a non-negative int; got {args.seed}")
    from refinterp.einsum import ocannl_cd

    if ocannl_cd.is_block(args.spec):
        return _run_block(args, out)
    names = [n.strip() for n in args.names.split(",")] if args.names else None
    einsum = front.build(args.spec, names=names, result=args.result, accumulation=args.accum,
                         operation=args.operation)
    if args.emit:
        einsum = _typed(einsum, args.dtype)
        if out.json_mode:
            out.data({"operator": einsum.to_sknd()})
        else:
            sys.stdout.write(einsum.to_sknd())
        return EXIT_OK
    for path, what in ((args.output, "-o"), (args.save_inputs, "--save-inputs")):
        if path:
            io.check_writable(path, what, folder_ok=False)
    bounds = limits(args)
    values = attributes(args)
    program = api.load_source(einsum.to_sknd(), path="<einsum>")

    def fixed() -> dict:
        return api.fixed_inputs(program, op=einsum.operator, attributes=values,
                                profile=args.profile)

    inputs = load_inputs(args, fixed, bounds)
    run = front.evaluate(einsum, inputs, values, profile=args.profile, engine=args.engine,
                         seed=args.seed, limits=bounds)
    outputs = io.flatten_packs(run.outputs)
    write_results(args, outputs, run)
    return print_outputs(out, outputs, {"operator": run.operator})


def _typed(einsum: Any, dtype: str) -> Any:
    """The einsum over elements of `dtype` (checked: E0901 when an operation has no such form)."""
    from dataclasses import replace

    typed = replace(einsum, dtype=dtype)
    typed.to_sknd()
    return typed


def _run_block(args: argparse.Namespace, out: Output) -> int:
    """A `%cd` block: its operators (--emit), or its run on the inputs: every tensor it
    writes, by name (`t.grad` as `t_grad`)."""
    from refinterp import io
    from refinterp.einsum import ocannl_cd

    if args.names or args.result or args.accum != "=:+" or args.operation:
        raise UsageError("a %cd block names its tensors and operations itself: --names, "
                         "--result, --accum and --operation apply to a single spec")
    assignments = ocannl_cd.parse_block(args.spec)
    if args.emit:
        from dataclasses import replace

        text = "\n".join(_typed(replace(a.einsum, operator=f"s{k}"), args.dtype).to_sknd()
                         for k, a in enumerate(assignments, start=1))
        if out.json_mode:
            out.data({"operators": text})
        else:
            sys.stdout.write(text)
        return EXIT_OK
    for path, what in ((args.output, "-o"), (args.save_inputs, "--save-inputs")):
        if path:
            io.check_writable(path, what, folder_ok=False)
    bounds = limits(args)
    inputs = load_inputs(args, dict, bounds)
    results = ocannl_cd.run_block(args.spec, inputs, attributes=attributes(args) or None,
                                  profile=args.profile, engine=args.engine, seed=args.seed,
                                  limits=bounds)
    written = {k: v for k, v in results.items() if k not in inputs or v is not inputs[k]}
    if args.output:
        io.write_arrays(args.output, written, "-o")
    if args.save_inputs:
        io.write_arrays(args.save_inputs, inputs, "--save-inputs")
    return print_outputs(out, written, {"operator": "%cd block"})
