"""`refinterp einsum`: an einsum spec (NumPy or OCANNL notation), an OCANNL `%cd` one-liner or
a `%cd` block (assignments separated by `;`, `t.grad` nodes: refinterp/einsum/ocannl_cd.py) as
SkriptND operators (refinterp/einsum/__init__.py), printed (`--emit`) or run on input arrays
with the input and output options of `eval`; with `--expr`, an OCANNL `%op` tensor expression
(refinterp/einsum/ocannl_op.py) run on input arrays (docs/ocannl.md)."""

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
    parser.add_argument("--expr", action="store_true",
                        help="SPEC is a %%op tensor expression, e.g. 'relu(\"w\" * x + \"b\" 8)': "
                             "params' shapes are inferred; an inline-declared param given "
                             "as an input takes that value, others are drawn from --seed")
    parser.add_argument("--kinds", action="append", default=[], metavar="NAME=B,I",
                        help="--expr: an input's batch and input axis counts (the rest are "
                             "output axes; default 0,0)")
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=N",
                        help="--expr: a dimension named in an inline declaration (\"b\" hid_dim)")
    parser.add_argument("--const", action="append", default=[], metavar="NAME=VALUE",
                        help="a float named by !.NAME, !..NAME or **. NAME (--expr, %%cd blocks)")
    parser.add_argument("--slots", metavar="lhs=T,rhs1=T1,...",
                        help="%%cd block: the tensors of the slot fillers t/g/v, t1/g1/v1, ...")
    parser.add_argument("--projections", metavar="SPEC",
                        help="%%cd block: the ~projections in scope ('.' or an einsum spec "
                             "'ij;jk=>ik'), for assignments without ~logic")
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

    if args.expr:
        return _run_expression(args, out)
    if args.kinds or args.dim:
        raise UsageError("--kinds and --dim apply to a %op expression (--expr)")
    if ocannl_cd.is_block(args.spec):
        return _run_block(args, out)
    if args.const or args.slots or args.projections:
        raise UsageError("--const, --slots and --projections apply to a %cd block or --expr")
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
    scope = {"slots": _pairs(args.slots.split(",") if args.slots else [], "--slots", str),
             "projections": args.projections, "constants": _pairs(args.const, "--const", float)}
    assignments = ocannl_cd.parse_block(args.spec, **scope)
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
    results = ocannl_cd.run_block(args.spec, inputs, **scope,
                                  attributes=attributes(args) or None,
                                  profile=args.profile, engine=args.engine, seed=args.seed,
                                  limits=bounds)
    written = {k: v for k, v in results.items() if k not in inputs or v is not inputs[k]}
    if args.output:
        io.write_arrays(args.output, written, "-o")
    if args.save_inputs:
        io.write_arrays(args.save_inputs, inputs, "--save-inputs")
    return print_outputs(out, written, {"operator": "%cd block"})


def _pairs(items: list[str], option: str, kind: Any) -> dict:
    """NAME=VALUE items of an option as a dict (a malformed one is misuse)."""
    found = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            found[name.strip()] = kind(value.strip())
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise UsageError(f"{option} expects NAME=VALUE; got '{item}'")
    return found


def _run_expression(args: argparse.Namespace, out: Output) -> int:
    """A `%op` expression run on the inputs: its value `out` and the params it used."""
    from refinterp import io
    from refinterp.einsum import ocannl_op

    if args.emit or args.names or args.result or args.accum != "=:+" or args.operation \
            or args.slots or args.projections:
        raise UsageError("--expr runs a %op expression: --emit, --names, --result, --accum, "
                         "--operation, --slots and --projections do not apply")
    for path, what in ((args.output, "-o"), (args.save_inputs, "--save-inputs")):
        if path:
            io.check_writable(path, what, folder_ok=False)
    kinds = {}
    for name, value in _pairs(args.kinds, "--kinds", str).items():
        counts = value.split(",")
        if len(counts) != 2 or not all(c.strip().isdigit() for c in counts):
            raise UsageError(f"--kinds expects NAME=B,I (two counts); got '{name}={value}'")
        kinds[name] = (int(counts[0]), int(counts[1]))
    dims = _pairs(args.dim, "--dim", int)
    constants = _pairs(args.const, "--const", float)
    arrays = load_inputs(args, dict, limits(args))
    _, declared = ocannl_op.parse(args.spec, set(), dims, constants)
    inline = {n for n, d in declared.items() if d.kind == "param" and f'"{n}"' in args.spec}
    run = ocannl_op.evaluate(args.spec, {k: v for k, v in arrays.items() if k not in inline},
                             kinds=kinds, params={k: v for k, v in arrays.items() if k in inline},
                             dims=dims, constants=constants, seed=args.seed,
                             profile=args.profile, engine=args.engine)
    results = {"out": run.value, **run.params}
    if args.output:
        io.write_arrays(args.output, results, "-o")
    if args.save_inputs:
        io.write_arrays(args.save_inputs, arrays, "--save-inputs")
    return print_outputs(out, results, {"operator": "%op expression"})
