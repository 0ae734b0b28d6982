"""The commands: each takes the parsed arguments and an Output, calls the API (refinterp.api),
reads and writes files through refinterp.io, renders the result, and returns the exit status."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

from refinterp.cli.arguments import (NOT_AN_OPTION, RANDOM_TYPES, check_number,
                                     max_input_size, parse_attribute, parse_size, parse_types)
from refinterp.cli.check import cmd_check
from refinterp.cli.golden import cmd_golden
from refinterp.cli.output import EXIT_DIAGNOSTIC, EXIT_OK, Output, UsageError
from refinterp.core.diagnostics import Diagnostic


def cmd_parse(args: argparse.Namespace, out: Output) -> int:
    """Load each file with its imports; print one summary line per file."""
    from refinterp import api

    status = EXIT_OK
    results = []
    for path in args.files:
        try:
            program = api.load(path, stdlib=args.stdlib, search_path=args.path)
        except Diagnostic as diag:
            if out.json_mode:
                results.append({"file": path, "error": diag.as_json()})
            else:
                out.error(diag)
            status = EXIT_DIAGNOSTIC
            continue
        for warning in program.warnings:
            out.diagnostic(warning)
        main = program.main
        operators = [d.name for d in main.tree.definitions if not d.is_graph]
        graphs = [d.name for d in main.tree.definitions if d.is_graph]
        if out.json_mode:
            results.append({"file": path, "imports": list(main.imports),
                            "operators": operators, "graphs": graphs})
        else:
            out.result(f"{path}: imports {', '.join(main.imports) or 'none'}; "
                       f"{_listing('operator', operators)}; {_listing('graph', graphs)}")
    if out.json_mode:
        out.data({"files": results})
    return status


def _listing(kind: str, names: list[str]) -> str:
    plural = kind if len(names) == 1 else kind + "s"
    return f"{len(names)} {plural}" + (f" ({', '.join(names)})" if names else "")


def cmd_fmt(args: argparse.Namespace, out: Output) -> int:
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


# ------------------------------------------------------------------------------- expr


def cmd_expr(args: argparse.Namespace, out: Output) -> int:
    """Evaluate one compile-time expression and print its value."""
    from refinterp.api import evaluate_expression
    from refinterp.language.values import format_literal, to_json

    values = dict(parse_attribute(text, args.profile) for text in args.attrib)
    value = evaluate_expression(args.expression.removeprefix(NOT_AN_OPTION), values,
                                args.profile)
    out.result(to_json(value) if args.json else format_literal(value))
    return EXIT_OK


# ------------------------------------------------------------------------------- ops, describe


def cmd_ops(args: argparse.Namespace, out: Output) -> int:
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
    signatures = [s for program in programs for s in program.operators()]
    if out.json_mode:
        out.data({"operators": [s.as_json() for s in signatures]})
        return EXIT_OK
    width = max((len(s.kind) for s in signatures), default=0)
    for s in signatures:
        out.result(f"{s.kind:<{width}}  {s.one_line()}")
    return EXIT_OK


def cmd_describe(args: argparse.Namespace, out: Output) -> int:
    """The full signature of one operator: `module.op`, or an operator of a file (--op)."""
    from refinterp import api

    if Path(args.target).exists():
        signature = api.load(args.target, stdlib=args.stdlib,
                             search_path=args.path).signature(args.op) if args.op else \
            _only(api.load(args.target, stdlib=args.stdlib, search_path=args.path))
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


def _only(program: Any) -> Any:
    definition, module = program.find(None)
    return program.signature(definition.name)


# ------------------------------------------------------------------------------- shapes


def _target(args: argparse.Namespace) -> tuple[Any, str | None]:
    """What `shapes` and `eval` run: a file's operator, or a standard operator `--op M.OP`."""
    from refinterp import api

    if args.file is None:
        if not args.op or "." not in args.op:
            raise UsageError("give a FILE, or a standard operator as --op MODULE.OP "
                             "(e.g. --op nn.relu)")
        return args.op, None
    return api.load(args.file, stdlib=args.stdlib, search_path=args.path), args.op


LIMIT_COUNTS = ("max_iterations", "max_depth", "max_pack_length", "max_lower_iterations",
                "max_work")
def _limits(args: argparse.Namespace) -> Any:
    """The limits of a run (`api.Limits`, docs/limits.md) from the limit options given; the
    others keep the API's defaults. A value the API refuses is command-line misuse."""
    from refinterp import api

    given = {name: getattr(args, name) for name in LIMIT_COUNTS
             if getattr(args, name, None) is not None}
    if getattr(args, "max_tensor_size", None) is not None:
        given["max_tensor_size"] = parse_size(args.max_tensor_size, "--max-tensor-size")
    check_number(getattr(args, "timeout", None), "--timeout", 0.001, 7 * 86400.0)
    try:
        return api.Limits(**given)
    except Diagnostic as error:
        raise UsageError(error.message) from None


def cmd_shapes(args: argparse.Namespace, out: Output) -> int:
    """Instantiate an operator, check its composition and print its output types and shapes."""
    from refinterp import api

    limits = _limits(args)
    target, op = _target(args)
    attributes = dict(parse_attribute(text, args.profile) for text in args.attrib)
    result = api.shapes(target, op=op, attributes=attributes,
                        inputs=parse_types(args.input, max_pack_length=limits.max_pack_length),
                        generics=tuple(args.generic), profile=args.profile, stdlib=args.stdlib,
                        max_iterations=limits.max_iterations, max_depth=limits.max_depth,
                        max_pack_length=limits.max_pack_length, max_work=limits.max_work,
                        timeout=args.timeout, quant=args.quant)
    entries = result.quantization
    if not result.checked:
        out.diagnostic(Diagnostic(f"the composition was checked only up to where {result.stopped}"
                                  f"; the outputs are the declared ones", severity="note"))
    if out.json_mode:
        data: dict = {"outputs": {n: _type_json(i) for n, i in result.outputs.items()}}
        if args.symbols:
            from refinterp.language.values import to_json_data
            data["symbols"] = {n: to_json_data(v) for n, v in result.symbols.items()
                               if not n.startswith("<")}
        if args.quant:
            data["quantization"] = [entry.as_json() for entry in entries]
        if not result.checked:
            data["checked"] = False
        out.data(data)
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
        from refinterp.language.values import format_literal

        out.result("quantization:" if entries else "quantization: none")
        for entry in entries:
            attributes_text = ", ".join(f"{k} = {format_literal(v)}"
                                        for k, v in entry.attributes.items())
            where = "" if entry.info is None else f", {api.describe_type(entry.info)}"
            out.result(f"  {entry.tensor} ({entry.kind}{where}): {entry.operator}"
                       f"{{{attributes_text}}}")
    return EXIT_OK


def _type_json(info: Any) -> Any:
    return [_type_json(i) for i in info] if isinstance(info, tuple) else info.as_json()


# ------------------------------------------------------------------------------- eval


def load_inputs(args: argparse.Namespace, fixed: Callable[[], dict],
                limits: Any) -> dict[str, Any]:
    """Input arrays from --inputs, --input NAME=PATH.npy|LITERAL and --random (each name from
    one place only), within the tensor size and pack length `limits`; `fixed()` gives the
    declared types of inputs with fixed shapes (for `--random NAME` and `--random-inputs`)."""
    import numpy as np

    from refinterp import api
    from refinterp import io

    arrays: dict[str, Any] = {}
    origin: dict[str, str] = {}
    input_size = max_input_size(args)

    def add(name: str, value: Any, source: str) -> None:
        if name in origin:
            raise UsageError(f"input '{name}' is given by {origin[name]} and by {source}")
        origin[name] = source
        arrays[name] = value

    if args.inputs:
        for key, array in io.read_arrays(args.inputs, "--inputs",
                                         max_tensor_size=limits.max_tensor_size,
                                         max_input_size=input_size).items():
            add(key, array, f"--inputs '{args.inputs}'")
    for text in args.input:
        name, sep, value = text.partition("=")
        if not sep or not name:
            raise Diagnostic(f"--input expects NAME=PATH.npy or NAME=LITERAL; got '{text}'",
                             code="E0901")
        if value.endswith(".npy"):
            add(name, io.read_array(value, f"--input {name}",
                                    max_tensor_size=limits.max_tensor_size,
                                    max_input_size=input_size), f"--input {name}")
        else:
            add(name, np.asarray(api.parse_value(value, args.profile, f"<input {name}>")),
                f"--input {name}")
    wanted: dict[str, Any] = {}
    declared = None
    for text in args.random:
        if "=" in text:
            wanted.update(parse_types([text], "--random", limits.max_pack_length))
            continue
        declared = fixed() if declared is None else declared
        if text not in declared:
            raise Diagnostic(f"--random {text}: the input has no fixed declared shape; write "
                             f"--random {text}=TYPE[EXTENTS]", code="E0901",
                             notes=["inputs with fixed shapes: " + (", ".join(declared)
                                                                     or "none")])
        wanted[text] = declared[text]
    if args.random_inputs:
        declared = fixed() if declared is None else declared
        given = set(arrays) | {k.partition(".")[0] for k in arrays}
        for name, info in declared.items():
            if name not in given and name not in wanted:
                wanted[name] = info
    for name, info in wanted.items():
        if getattr(info, "dtype", None) not in RANDOM_TYPES and not isinstance(info, tuple):
            raise Diagnostic(f"--random {name}: no random values of type '{info.dtype}'",
                             notes=["the types are real, int and bool"], code="E0901")
    for name, value in api.random_inputs(wanted, args.seed,
                                         max_tensor_size=limits.max_tensor_size,
                                         max_pack_length=limits.max_pack_length).items():
        for key, item in io.flatten_packs({name: value}).items():
            add(key, item, f"--random {name}")
    return io.group_packs(arrays)


def cmd_eval(args: argparse.Namespace, out: Output) -> int:
    """Run an operator or graph on input arrays; print a summary of its outputs and write the
    outputs, the inputs used and the parameters used where asked."""
    from refinterp import api
    from refinterp import io

    if args.seed < 0:
        raise UsageError(f"--seed: a seed is a non-negative int; got {args.seed}")
    limits = _limits(args)
    max_memory = parse_size(args.max_memory, "--max-memory") if args.max_memory is not None \
        else api.DEFAULT_MAX_MEMORY
    for path, what, folder_ok in ((args.output, "-o", False),
                                  (args.save_inputs, "--save-inputs", False),
                                  (args.save_params, "--save-params", False),
                                  (args.write_params, "--write-params", True),
                                  (args.save_case, "--save-case", True),
                                  (args.trace, "--trace", False)):
        if path:
            io.check_writable(path, what, folder_ok=folder_ok)
    target, op = _target(args)
    attributes = dict(parse_attribute(text, args.profile) for text in args.attrib)

    def fixed() -> dict:
        return api.fixed_inputs(target, op=op, attributes=attributes, profile=args.profile,
                                stdlib=args.stdlib, max_tensor_size=limits.max_tensor_size)

    inputs = load_inputs(args, fixed, limits)
    params = io.read_params(args.params, max_tensor_size=limits.max_tensor_size,
                            max_input_size=max_input_size(args)) if args.params else None
    evaluate = api.evaluate
    if args.trace:  # the same run, its trace written to the file (also when it fails)
        from functools import partial

        from refinterp.trace import run_traced
        evaluate = partial(run_traced, trace=args.trace)
    run = evaluate(target, op=op, inputs=inputs, attributes=attributes, params=params,
                   random_params=args.random_params, seed=args.seed,
                   generics=tuple(args.generic), profile=args.profile, engine=args.engine,
                   max_memory=max_memory, **vars(limits), timeout=args.timeout,
                   stdlib=args.stdlib,
                   log=_engine_log(out) if args.verbose else None,
                   progress=progress_line if _show_progress(args) else None)
    outputs = io.flatten_packs(run.outputs)
    if args.output:
        io.write_arrays(args.output, outputs, "-o")
    if args.save_inputs:
        io.write_arrays(args.save_inputs, io.flatten_packs(run.inputs), "--save-inputs")
    if args.save_params:
        io.write_arrays(args.save_params, run.params, "--save-params")
    if args.write_params:
        io.write_params(args.write_params, run.state, "--write-params")
    if args.save_case:
        _save_case(args, target, op, run)
    return print_outputs(out, outputs, {"operator": run.operator, "profile": run.profile,
                                        "engine": run.engine})


def print_outputs(out: Output, outputs: dict[str, Any], about: dict[str, Any]) -> int:
    """A run's outputs: name, dtype, shape, min, max, mean of each (with --json, an object of
    `about` and the summaries)."""
    from refinterp import api

    if out.json_mode:
        out.data({**about, "outputs": {name: api.summary(a) for name, a in outputs.items()}})
        return EXIT_OK
    out.table(["output", "dtype", "shape", "min", "max", "mean"],
              [[name, s["dtype"], str(s["shape"]), *(_number(s[k]) for k in
                                                     ("min", "max", "mean"))]
               for name, s in ((n, api.summary(a)) for n, a in outputs.items())])
    return EXIT_OK


def _save_case(args: argparse.Namespace, target: Any, op: str | None, run: Any) -> None:
    """--save-case DIR: the run as a golden case of kind "model" (a standard operator run by
    --op MODULE.OP has no model file: it is written as an operator case's graph)."""
    from refinterp import api, golden

    if args.file is None or op is not None:
        raise UsageError("--save-case needs a model FILE|DIR and its default graph "
                         "(to freeze a standard operator, write a case table)")
    program = api.load(args.file, stdlib=args.stdlib)
    folder = Path(args.save_case)
    command = "refinterp " + " ".join(_quoted(a) for a in args.argv)
    golden.write_model_case(folder, program.path, run.inputs, run.params, args.profile,
                            args.case_class, folder.name, command)


def _quoted(text: str) -> str:
    import shlex
    return shlex.quote(text)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def _engine_log(out: Output) -> Callable[[Any, str], None]:
    """--verbose: one note per operator run by @lower, naming the engine that ran it."""
    def log(instance: Any, engine: str) -> None:
        definition = instance.definition
        out.diagnostic(Diagnostic(f"engine: {definition.name} ({definition.span}): {engine}",
                                  severity="note"))
    return log


def _show_progress(args: argparse.Namespace) -> bool:
    return args.progress if args.progress is not None else sys.stderr.isatty()


def progress_line(running: list[str], seconds: float) -> None:
    """A line on stderr while a long run lasts: which operators are running, for how long."""
    sys.stderr.write(f"refinterp: still running {' > '.join(running)} ({seconds:.0f} s)\n")
    sys.stderr.flush()


COMMANDS: dict[str, Callable[[argparse.Namespace, Output], int]] = {
    "parse": cmd_parse, "fmt": cmd_fmt, "expr": cmd_expr, "ops": cmd_ops,
    "describe": cmd_describe, "shapes": cmd_shapes, "eval": cmd_eval, "golden": cmd_golden,
    "check": cmd_check}
