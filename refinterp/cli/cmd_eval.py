"""`refinterp eval`: run an operator or graph on input arrays; print a summary of its outputs
and write the outputs, the inputs and parameters used, the state after the run, a golden case
or a trace where asked."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Callable

from refinterp.cli.arrays import load_inputs, print_outputs, write_results
from refinterp.cli.options import (RUNNING, add, limits, max_input_size, run_target)
from refinterp.cli.output import Output, UsageError, progress_line
from refinterp.core.diagnostics import Diagnostic


def add_parser(commands: Any) -> None:
    """Register `eval`."""
    parser = commands.add_parser("eval", help="evaluate an operator or graph on input arrays")
    add(parser, *RUNNING, "inputs", "input", "random")
    parser.add_argument("--random-inputs", action="store_true",
                        help="random values for every input not given whose declared shape "
                             "is fixed")
    add(parser, "seed", "output", "save_inputs")
    parser.add_argument("--params", metavar="PARAMS.npz|DIR",
                        help="variable values by scoped name (main.G.conv1.filter) or by name "
                             "relative to the graph (conv1.filter); or a folder of .dat files; "
                             "an entry that is no variable is an error")
    parser.add_argument("--save-params", metavar="FILE.npz",
                        help="write every variable the run read, before @update (with "
                             "--save-inputs: what repeats the run)")
    parser.add_argument("--random-params", action="store_true",
                        help="random values for variables found nowhere else (see --seed)")
    parser.add_argument("--write-params", metavar="DIR|FILE.npz",
                        help="write every variable after the run: @update's new values, "
                             "the others as read (.dat files or an .npz; for --params)")
    parser.add_argument("--max-tensor-size", metavar="SIZE",
                        help="the most bytes one tensor may take, checked before it is made "
                             "(default 1G)")
    add(parser, "max_input_size")
    parser.add_argument("--max-lower-iterations", type=int, metavar="N",
                        help="the most iterations one @lower formula may run, checked before "
                             "it runs (default 1000000000)")
    add(parser, "engine")
    parser.add_argument("--max-memory", metavar="SIZE",
                        help="the most memory the vector engine's temporaries may take at "
                             "once (default 2G); larger iteration spaces run in chunks")
    parser.add_argument("--save-case", metavar="DIR",
                        help="freeze the run as a golden case folder (model, the modules it "
                             "imports, inputs, params, outputs, case.json; docs/golden.md); "
                             "missing parent folders are created")
    parser.add_argument("--case-class", default="reduction", metavar="CLASS",
                        choices=["exact", "arithmetic", "transcendental", "reduction"],
                        help="the tolerance class of a --save-case case (default reduction)")
    parser.add_argument("--nx-type", action="append", default=[], metavar="[NAME=]TYPE",
                        help="typed evaluation of an nx operator (docs/nx.md): the Nx type "
                             "(s8 s16 s32 s64 u8 u16 u32 f16 bf16 f32 f64) of input or output "
                             "NAME, or without NAME of every int / real tensor of the type's "
                             "kind; inputs enter and outputs leave wrapped / rounded to it")
    parser.add_argument("--trace", metavar="FILE",
                        help="write a deterministic text trace of the run: every invocation "
                             "in order, every tensor's id, type, sha256 and statistics, a "
                             "buffer plan (docs/trace.md); written also when the run fails")
    parser.add_argument("--buffer-plan", choices=["first-fit", "ocannl"], default=None,
                        help="the trace's buffer plan: first-fit (default) or ocannl (OCANNL's "
                             "phase-1 {pool_id; offset} per tensor node, as s-expressions)")
    parser.add_argument("--verbose", action="store_true",
                        help="print which engine ran each operator")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="every 5 s of a long run, name the operators running (default: "
                             "when stderr is a terminal)")


# the files eval writes: (destination, option, whether a folder is one)
WRITTEN = (("output", "-o", False), ("save_inputs", "--save-inputs", False),
           ("save_params", "--save-params", False), ("write_params", "--write-params", True),
           ("save_case", "--save-case", True), ("trace", "--trace", False))


def run(args: argparse.Namespace, out: Output) -> int:
    """Run an operator or graph on input arrays; print a summary of its outputs and write the
    outputs, the inputs used and the parameters used where asked."""
    from refinterp import api
    from refinterp import io

    if args.seed < 0:
        raise UsageError(f"--seed: a seed is a non-negative int; got {args.seed}")
    bounds = limits(args)
    for name, what, folder_ok in WRITTEN:
        if name == "save_case" and args.save_case:
            _check_case_folder(Path(args.save_case))
        elif getattr(args, name):
            io.check_writable(getattr(args, name), what, folder_ok=folder_ok)
    if args.buffer_plan and not args.trace:
        raise UsageError("--buffer-plan chooses the plan of a trace: give --trace FILE too")
    target, values = run_target(args)
    if args.save_case:
        _check_savable(args, target, values)

    def fixed() -> dict:
        return api.fixed_inputs(target, attributes=values, profile=args.profile, limits=bounds)

    inputs = load_inputs(args, fixed, bounds)
    types = _nx_types(args, target)
    params = io.read_params(args.params, max_tensor_size=bounds.max_tensor_size,
                            max_input_size=max_input_size(args)) if args.params else None
    hooks = api.Hooks(log=_engine_log(out) if args.verbose else None,
                      progress=progress_line if _show_progress(args) else None)
    evaluate = api.evaluate
    if args.trace:  # the same run, its trace written to the file (also when it fails)
        from functools import partial

        from refinterp.trace import run_traced
        evaluate = partial(run_traced, trace=args.trace,
                           buffer_plan=args.buffer_plan or "first-fit")
    run = evaluate(target, inputs=inputs, attributes=values, params=params,
                   random_params=args.random_params, seed=args.seed,
                   generics=tuple(args.generic), profile=args.profile, engine=args.engine,
                   limits=bounds, hooks=hooks, nx_types=types or None)
    outputs = io.flatten_packs(run.outputs)
    write_results(args, outputs, run)
    if args.save_params:
        io.write_arrays(args.save_params, run.params, "--save-params")
    if args.write_params:
        io.write_params(args.write_params, run.state, "--write-params")
    if args.save_case:
        _save_case(args, target, values, run)
    return print_outputs(out, outputs, {"operator": run.operator, "profile": run.profile,
                                        "engine": run.engine})


def _nx_types(args: argparse.Namespace, target: Any) -> dict[str, str]:
    """The --nx-type items as a dict (nx_types.parse_types); typed evaluation is of one nx
    operator, not frozen by --save-case."""
    if not args.nx_type:
        return {}
    if target.definition.is_graph or not target.name.startswith("nx."):
        raise UsageError(f"--nx-type: typed evaluation runs an nx operator (--op nx.add); "
                         f"'{target.name}' is not one")
    if args.save_case:
        raise UsageError("--nx-type: a typed run cannot be frozen by --save-case (a golden "
                         "table's `types` makes typed cases)")
    from refinterp.api import parse_nx_types
    return parse_nx_types(args.nx_type)


def _check_case_folder(folder: Path) -> None:
    """--save-case DIR, before the run: DIR is a folder or can be made in its nearest existing
    ancestor, a writable folder (the missing parents are created when the case is saved)."""
    from refinterp import io
    from refinterp.core.diagnostics import FileDiagnostic

    ancestor = folder
    while not os.path.lexists(ancestor) and ancestor.parent != ancestor:
        ancestor = ancestor.parent
    if ancestor == folder or folder.parent == ancestor:
        io.check_writable(folder, "--save-case", folder_ok=True)
    elif not ancestor.is_dir() or not os.access(ancestor, os.W_OK | os.X_OK):
        raise FileDiagnostic(f"cannot write --save-case '{folder}': '{ancestor}' is not a "
                             f"writable folder", code="E0801")


def _check_savable(args: argparse.Namespace, target: Any, values: dict[str, Any]) -> None:
    """--save-case, before the run: a graph's case runs its model.sknd on inputs (and params)
    alone, so a graph run with --attrib or --generic cannot be frozen (an operator's can: its
    case's model.sknd invokes it with them)."""
    if target.definition.is_graph and args.op is not None and \
            target.program.find(None)[0] is not target.definition:
        raise UsageError(f"--save-case: a model case runs its file's first graph, not "
                         f"'{target.definition.name}'; put that graph first, or in a file "
                         f"of its own")
    if target.definition.is_graph and (values or args.generic):
        given = ", ".join([f"--attrib {name}" for name in values] +
                          [f"--generic {g}" for g in args.generic])
        raise UsageError(f"--save-case: graph '{target.definition.name}' runs here with "
                         f"{given}, but a model case runs its graph with inputs and params "
                         f"alone; give the graph's attributes defaults, or freeze one of "
                         f"its operators (--op NAME)")


def _save_case(args: argparse.Namespace, target: Any, values: dict[str, Any],
               run: Any) -> None:
    """--save-case DIR: the run as a golden case folder whose model.sknd runs from the folder
    alone. A graph's run is a case of kind "model" (the graph's file, params and the modules
    it imports from outside the bundled library); an operator's (of a file, or --op
    MODULE.OP) is an operator case (id `<module>.<op>/<DIR's name>`) whose model.sknd
    invokes it with the run's --attrib values, --generic types and --profile, its modules
    copied beside it (docs/golden.md "Saved runs")."""
    import shlex

    from refinterp import golden

    folder = Path(args.save_case)
    command = "refinterp " + " ".join(shlex.quote(a) for a in args.argv)
    if target.definition.is_graph:
        golden.write_model_case(folder, target.program.path, run.inputs, run.params,
                                args.profile, args.case_class, folder.name, command,
                                search_path=tuple(args.path), stdlib=args.stdlib)
    else:
        golden.save_operator_case(folder, target, run.inputs, values, tuple(args.generic),
                                  args.profile, args.case_class, command)


def _engine_log(out: Output) -> Callable[[Any, str], None]:
    """--verbose: one note per operator run by @lower, naming the engine that ran it."""
    def log(instance: Any, engine: str) -> None:
        definition = instance.definition
        out.diagnostic(Diagnostic(f"engine: {definition.name} ({definition.span}): {engine}",
                                  severity="note"))
    return log


def _show_progress(args: argparse.Namespace) -> bool:
    return args.progress if args.progress is not None else sys.stderr.isatty()
