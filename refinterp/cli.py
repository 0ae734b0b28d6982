"""The `refinterp` command line: a thin layer over `refinterp.api` — argument parsing, file I/O
through `refinterp.io`, and rendering. No SkriptND semantics live here.

Exit status: 0 success, 1 a diagnostic about the user's input, 2 command-line misuse,
3 an internal error (a bug in refinterp: rerun with --debug for the traceback).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from refinterp.core.diagnostics import Diagnostic, render

EXIT_OK, EXIT_DIAGNOSTIC, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class UsageError(Exception):
    """Command-line misuse (exit 2): options that contradict each other or are missing."""


class Output:
    """Where the CLI writes: results to stdout, diagnostics to stderr (via rich when a tty);
    with --json, one JSON object on stdout holding the result or the error, and warnings."""

    def __init__(self, json_mode: bool = False) -> None:
        self._console = None
        self.json_mode = json_mode
        self.warnings: list[Diagnostic] = []

    def result(self, text: str) -> None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")

    def data(self, data: Any) -> None:
        """The result of a --json command (warnings added as "warnings" when there are any)."""
        if isinstance(data, dict) and self.warnings:
            data = {**data, "warnings": [w.as_json() for w in self.warnings]}
        self.result(json.dumps(data))

    def table(self, header: list[str], rows: list[list[str]]) -> None:
        """A small table: rich when stdout is a terminal, aligned plain text otherwise."""
        if sys.stdout.isatty():
            from rich.console import Console
            from rich.table import Table

            table = Table(*header)
            for row in rows:
                table.add_row(*row)
            Console().print(table)
            return
        widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)]
        for row in [header, *rows]:
            self.result("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())

    def diagnostic(self, diag: Diagnostic) -> None:
        """A warning or note (errors go through `error`)."""
        if self.json_mode:
            self.warnings.append(diag)
            return
        self._stderr(render(diag))

    def error(self, diag: Diagnostic) -> None:
        if self.json_mode:
            self.result(json.dumps({"error": diag.as_json(),
                                    "warnings": [w.as_json() for w in self.warnings]}))
            return
        self._stderr(render(diag))

    def _stderr(self, text: str) -> None:
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.text import Text

            if self._console is None:
                self._console = Console(stderr=True, highlight=False)
            styled = Text(text)
            styled.highlight_regex(r"\berror:", "bold red")
            styled.highlight_regex(r"\bwarning:", "bold yellow")
            styled.highlight_regex(r"\^+", "bold red")
            self._console.print(styled)
        else:
            sys.stderr.write(text + "\n")


# ------------------------------------------------------------------------------- parse, fmt


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
    """Print the canonical form of files, rewrite them (-i), or check them (--check)."""
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
    """fmt -i: a model folder stands for its main.sknd."""
    path = Path(name)
    if path.is_dir():
        path = next(p for p in (path / "main.sknd", path / "main.nnef") if p.is_file())
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise Diagnostic(f"cannot write '{path}': {exc.strerror or exc}", code="E0801") from None


# ------------------------------------------------------------------------------- expr


def parse_attribute(text: str, profile: str) -> tuple[str, Any]:
    """`NAME=VALUE` where VALUE is a SkriptND literal expression (`3`, `[1, 2]`, `'x'`)."""
    from refinterp.api import parse_value

    name, sep, value_text = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise Diagnostic(f"--attrib expects NAME=VALUE; got '{text}'", code="E0901")
    return name, parse_value(value_text, profile, f"<attrib {name}>")


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


_TYPE_RE = re.compile(
    r"^\s*(?P<dtype>[A-Za-z_]\w*)\s*\[(?P<shape>[\d\s,]*)\]\s*(?:\.\.\((?P<count>\d+)\))?\s*$")
RANDOM_TYPES = ("real", "int", "bool")


def parse_types(texts: list[str], option: str = "--input") -> dict[str, Any]:
    """Input types from `NAME=TYPE[EXTENTS]`, `NAME=TYPE[EXTENTS]..(N)` (a pack of N equal
    tensors) and `NAME.I=TYPE[EXTENTS]` (item I of a pack; items run from 0 without gaps)."""
    from refinterp.api import TensorType

    types: dict[str, Any] = {}
    items: dict[str, dict[int, Any]] = {}
    for text in texts:
        name, sep, spec = text.partition("=")
        match = _TYPE_RE.match(spec)
        if not sep or match is None:
            raise Diagnostic(f"{option} expects NAME=TYPE[EXTENTS] such as x=real[2,3] or "
                             f"xs=real[4]..(3); got '{text}'", code="E0901")
        shape = tuple(int(e) for e in match["shape"].replace(" ", "").split(",") if e)
        tensor = TensorType(match["dtype"], shape)
        base, dot, index = name.strip().partition(".")
        if dot:
            if not index.isdigit():
                raise Diagnostic(f"{option} {name}: the item index must be a number",
                                 code="E0901")
            items.setdefault(base, {})[int(index)] = tensor
        else:
            types[base] = (tensor,) * int(match["count"]) if match["count"] else tensor
    for base, by_index in items.items():
        if base in types or sorted(by_index) != list(range(len(by_index))):
            raise Diagnostic(f"{option} {base}: give a whole pack or items {base}.0, {base}.1, "
                             f"... without gaps", code="E0900")
        types[base] = tuple(by_index[i] for i in range(len(by_index)))
    return types


def _target(args: argparse.Namespace) -> tuple[Any, str | None]:
    """What `shapes` and `eval` run: a file's operator, or a standard operator `--op M.OP`."""
    from refinterp import api

    if args.file is None:
        if not args.op or "." not in args.op:
            raise UsageError("give a FILE, or a standard operator as --op MODULE.OP "
                             "(e.g. --op nn.relu)")
        return args.op, None
    return api.load(args.file, stdlib=args.stdlib, search_path=args.path), args.op


def cmd_shapes(args: argparse.Namespace, out: Output) -> int:
    """Instantiate an operator, check its composition and print its output types and shapes."""
    from refinterp import api

    target, op = _target(args)
    attributes = dict(parse_attribute(text, args.profile) for text in args.attrib)
    result = api.shapes(target, op=op, attributes=attributes, inputs=parse_types(args.input),
                        generics=tuple(args.generic), profile=args.profile, stdlib=args.stdlib,
                        quant=args.quant)
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


def load_inputs(args: argparse.Namespace, fixed: Callable[[], dict]) -> dict[str, Any]:
    """Input arrays from --inputs, --input NAME=PATH.npy|LITERAL and --random (each name from
    one place only); `fixed()` gives the declared types of inputs with fixed shapes (for
    `--random NAME` and `--random-inputs`)."""
    import numpy as np

    from refinterp import api
    from refinterp import io

    arrays: dict[str, Any] = {}
    origin: dict[str, str] = {}

    def add(name: str, value: Any, source: str) -> None:
        if name in origin:
            raise UsageError(f"input '{name}' is given by {origin[name]} and by {source}")
        origin[name] = source
        arrays[name] = value

    if args.inputs:
        for key, array in io.read_arrays(args.inputs, "--inputs").items():
            add(key, array, f"--inputs '{args.inputs}'")
    for text in args.input:
        name, sep, value = text.partition("=")
        if not sep or not name:
            raise Diagnostic(f"--input expects NAME=PATH.npy or NAME=LITERAL; got '{text}'",
                             code="E0901")
        if value.endswith(".npy"):
            add(name, io.read_array(value, f"--input {name}"), f"--input {name}")
        else:
            add(name, np.asarray(api.parse_value(value, args.profile, f"<input {name}>")),
                f"--input {name}")
    wanted: dict[str, Any] = {}
    declared = None
    for text in args.random:
        if "=" in text:
            wanted.update(parse_types([text], "--random"))
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
    for name, value in api.random_inputs(wanted, args.seed).items():
        for key, item in io.flatten_packs({name: value}).items():
            add(key, item, f"--random {name}")
    return io.group_packs(arrays)


def cmd_eval(args: argparse.Namespace, out: Output) -> int:
    """Run an operator or graph on input arrays; print a summary of its outputs and write the
    outputs, the inputs used and the parameters used where asked."""
    from refinterp import api
    from refinterp import io

    for path, what, folder_ok in ((args.output, "-o", False),
                                  (args.save_inputs, "--save-inputs", False),
                                  (args.save_params, "--save-params", False),
                                  (args.write_params, "--write-params", True)):
        if path:
            io.check_writable(path, what, folder_ok=folder_ok)
    if args.max_iterations < 1 or args.max_depth < 1:
        raise Diagnostic("--max-iterations and --max-depth must be at least 1", code="E0901")
    max_memory = parse_size(args.max_memory)
    target, op = _target(args)
    attributes = dict(parse_attribute(text, args.profile) for text in args.attrib)

    def fixed() -> dict:
        return api.fixed_inputs(target, op=op, attributes=attributes, profile=args.profile,
                                stdlib=args.stdlib)

    inputs = load_inputs(args, fixed)
    params = io.read_params(args.params) if args.params else None
    run = api.evaluate(target, op=op, inputs=inputs, attributes=attributes, params=params,
                       random_params=args.random_params, seed=args.seed,
                       generics=tuple(args.generic), profile=args.profile, engine=args.engine,
                       max_memory=max_memory, max_iterations=args.max_iterations,
                       max_depth=args.max_depth, stdlib=args.stdlib,
                       log=_engine_log(out) if args.verbose else None,
                       progress=_progress if _show_progress(args) else None)
    outputs = io.flatten_packs(run.outputs)
    if args.output:
        io.write_arrays(args.output, outputs, "-o")
    if args.save_inputs:
        io.write_arrays(args.save_inputs, io.flatten_packs(run.inputs), "--save-inputs")
    if args.save_params:
        io.write_arrays(args.save_params, run.params, "--save-params")
    if args.write_params:
        io.write_params(args.write_params, run.state, "--write-params")
    if out.json_mode:
        out.data({"operator": run.operator, "profile": run.profile, "engine": run.engine,
                  "outputs": {name: api.summary(a) for name, a in outputs.items()}})
        return EXIT_OK
    out.table(["output", "dtype", "shape", "min", "max", "mean"],
              [[name, s["dtype"], str(s["shape"]), *(_number(s[k]) for k in
                                                     ("min", "max", "mean"))]
               for name, s in ((n, api.summary(a)) for n, a in outputs.items())])
    return EXIT_OK


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def parse_size(text: str) -> int:
    """A memory size: bytes, or a number with K, M, G or T (powers of 1024), e.g. '512M'."""
    units = {"K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}
    number, unit = text.strip().upper().rstrip("IB") or "0", 1
    if number[-1:] in units:
        number, unit = number[:-1], units[number[-1]]
    try:
        size = int(float(number) * unit)
    except (ValueError, OverflowError):
        raise Diagnostic(f"--max-memory expects a size such as 2G or 512M; got '{text}'",
                         code="E0901") from None
    if size < 1:
        raise Diagnostic(f"--max-memory must be positive; got '{text}'", code="E0901")
    return size


def _engine_log(out: Output) -> Callable[[Any, str], None]:
    """--verbose: one note per operator run by @lower, naming the engine that ran it."""
    def log(instance: Any, engine: str) -> None:
        definition = instance.definition
        out.diagnostic(Diagnostic(f"engine: {definition.name} ({definition.span}): {engine}",
                                  severity="note"))
    return log


def _show_progress(args: argparse.Namespace) -> bool:
    return args.progress if args.progress is not None else sys.stderr.isatty()


def _progress(running: list[str], seconds: float) -> None:
    """A line on stderr while a long run lasts: which operators are running, for how long."""
    sys.stderr.write(f"refinterp: still running {' > '.join(running)} ({seconds:.0f} s)\n")
    sys.stderr.flush()


# ------------------------------------------------------------------------------- parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("refinterp")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="refinterp",
        description="Reference interpreter and semantics oracle for SkriptND (NNEF 2.0).")
    parser.add_argument("--debug", action="store_true",
                        help="show Python tracebacks of internal errors")
    parser.add_argument("--version", action="version", version=f"refinterp {_version()}",
                        help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true",
                        help="print the result, warnings and any error as one JSON object on "
                             "stdout")
    stdlib = argparse.ArgumentParser(add_help=False)
    stdlib.add_argument("--stdlib", metavar="DIR",
                        help="a folder of standard modules replacing the bundled ones "
                             "(e.g. the Khronos stdlib)")
    search = argparse.ArgumentParser(add_help=False)
    search.add_argument("--path", action="append", default=[], metavar="DIR",
                        help="an extra folder to search for imported modules")
    profile = argparse.ArgumentParser(add_help=False)
    profile.add_argument("--profile", choices=["spec", "khronos"], default="spec",
                         help="numeric rules where the spec and Khronos differ "
                              "(docs/semantics.md); default: spec")
    invocation = argparse.ArgumentParser(add_help=False)
    invocation.add_argument("file", metavar="FILE|DIR", nargs="?",
                            help="a .sknd file or a model folder (main.sknd); omit it to run "
                                 "a standard operator named by --op MODULE.OP")
    invocation.add_argument("--op", metavar="NAME",
                            help="the operator or graph (default: the first graph, else the "
                                 "only operator); MODULE.OP for an imported or standard one")
    invocation.add_argument("--attrib", action="append", default=[], metavar="NAME=VALUE",
                            help="an attribute value, a SkriptND literal: 3, [1, 2], true, "
                                 "'text' (quote strings)")
    invocation.add_argument("--generic", action="append", default=[], metavar="TYPE",
                            help="explicit generic type arguments in @dtype order, as op<TYPE>")

    parse_cmd = commands.add_parser(
        "parse", parents=[common, stdlib, search],
        help="parse files (and their imports) and summarise them")
    parse_cmd.add_argument("files", nargs="+", metavar="FILE",
                           help="a .sknd file or a model folder with main.sknd")
    parse_cmd.set_defaults(run=cmd_parse)

    fmt_cmd = commands.add_parser("fmt", parents=[common],
                                  help="print files in canonical form (or rewrite or check them)")
    fmt_cmd.add_argument("files", nargs="+", metavar="FILE",
                         help="a .sknd file or a model folder with main.sknd")
    mode = fmt_cmd.add_mutually_exclusive_group()
    mode.add_argument("-i", "--in-place", action="store_true",
                      help="rewrite the files instead of printing them")
    mode.add_argument("--check", action="store_true",
                      help="print nothing; exit 1 and name each file that is not in canonical "
                           "form")
    fmt_cmd.set_defaults(run=cmd_fmt)

    expr_cmd = commands.add_parser("expr", parents=[common, profile],
                                   help="evaluate a compile-time expression")
    expr_cmd.add_argument("expression", metavar="EXPR",
                          help="the expression (one starting with '-', such as -inf, needs "
                               "no '--')")
    expr_cmd.add_argument("--attrib", action="append", default=[], metavar="NAME=VALUE",
                          help="a symbol and its value, a SkriptND literal expression")
    expr_cmd.set_defaults(run=cmd_expr)

    ops_cmd = commands.add_parser("ops", parents=[common, stdlib, search],
                                  help="list operators with their kind and signature")
    ops_cmd.add_argument("module", metavar="MODULE|FILE", nargs="?",
                         help="a standard module (nn, math, ...) or a file; default: every "
                              "standard module")
    ops_cmd.set_defaults(run=cmd_ops)

    describe_cmd = commands.add_parser("describe", parents=[common, stdlib, search],
                                       help="print an operator's full signature")
    describe_cmd.add_argument("target", metavar="MODULE.OP|FILE",
                              help="a standard operator such as nn.conv, or a file (with --op)")
    describe_cmd.add_argument("--op", metavar="NAME", help="the operator of FILE to describe")
    describe_cmd.set_defaults(run=cmd_describe)

    shapes_cmd = commands.add_parser(
        "shapes", parents=[common, stdlib, search, profile, invocation],
        help="instantiate an operator, check its composition, print its output shapes")
    shapes_cmd.add_argument("--input", action="append", default=[],
                            metavar="NAME=TYPE[EXTENTS]",
                            help="an input type: x=real[2,3], xs=real[4]..(3) or xs.0=real[4] "
                                 "(not needed where the declared shape is fixed)")
    shapes_cmd.add_argument("--symbols", action="store_true", help="also print bound symbols")
    shapes_cmd.add_argument("--quant", action="store_true",
                            help="also list the @quantize entries and the tensors they attach to")
    shapes_cmd.set_defaults(run=cmd_shapes)

    eval_cmd = commands.add_parser(
        "eval", parents=[common, stdlib, search, profile, invocation],
        help="evaluate an operator or graph on input arrays")
    eval_cmd.add_argument("--inputs", metavar="IN.npz",
                          help="input arrays by name (a pack xs as xs.0, xs.1, ...)")
    eval_cmd.add_argument("--input", action="append", default=[], metavar="NAME=PATH.npy|LITERAL",
                          help="one input: an .npy file or a SkriptND literal such as [1.0, 2.0]")
    eval_cmd.add_argument("--random", action="append", default=[],
                          metavar="NAME[=TYPE[EXTENTS]]",
                          help="a random input: x=real[2,3], xs=real[4]..(3), or just x for an "
                               "input whose declared shape is fixed")
    eval_cmd.add_argument("--random-inputs", action="store_true",
                          help="random values for every input not given whose declared shape "
                               "is fixed")
    eval_cmd.add_argument("--seed", type=int, default=0,
                          help="the seed of --random, --random-inputs and --random-params "
                               "(default 0)")
    eval_cmd.add_argument("-o", "--output", metavar="OUT.npz",
                          help="write the outputs (packs as ys.0, ys.1, ...)")
    eval_cmd.add_argument("--save-inputs", metavar="FILE.npz",
                          help="write the inputs used, random ones included (for --inputs)")
    eval_cmd.add_argument("--params", metavar="PARAMS.npz|DIR",
                          help="variable values by scoped name (main.G.conv1.filter) or by name "
                               "relative to the graph (conv1.filter); or a folder of .dat files; "
                               "an entry that is no variable is an error")
    eval_cmd.add_argument("--save-params", metavar="FILE.npz",
                          help="write every variable the run read, before @update (with "
                               "--save-inputs: what repeats the run)")
    eval_cmd.add_argument("--random-params", action="store_true",
                          help="random values for variables found nowhere else (see --seed)")
    eval_cmd.add_argument("--write-params", metavar="DIR|FILE.npz",
                          help="write every variable after the run: @update's new values, "
                               "the others as read (.dat files or an .npz; for --params)")
    eval_cmd.add_argument("--max-iterations", type=int, default=1_000_000, metavar="N",
                          help="the most iterations a loop may run (default 1000000)")
    eval_cmd.add_argument("--max-depth", type=int, default=256, metavar="N",
                          help="the deepest nesting of operator invocations (default 256)")
    eval_cmd.add_argument("--engine", choices=["scalar", "vector", "auto"], default="auto",
                          help="how @lower formulas run: scalar (element by element, the "
                               "definition), vector (NumPy, falling back to scalar per "
                               "formula where it cannot be exact) or auto (scalar for small "
                               "operators, vector otherwise; the default)")
    eval_cmd.add_argument("--max-memory", default="2G", metavar="SIZE",
                          help="the most memory the vector engine's temporaries may take at "
                               "once (default 2G); larger iteration spaces run in chunks")
    eval_cmd.add_argument("--verbose", action="store_true",
                          help="print which engine ran each operator")
    eval_cmd.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                          help="every 5 s of a long run, name the operators running (default: "
                               "when stderr is a terminal)")
    eval_cmd.set_defaults(run=cmd_eval)
    return parser


NOT_AN_OPTION = "\x00"  # argv strings cannot hold NUL: a safe mark for "this is no option"


def _expression_first(argv: list[str]) -> list[str]:
    """`refinterp expr -inf`: an expression that starts with '-' is not an option. The first
    argument of `expr` that starts with '-' and is no option of expr is marked (and the mark
    removed again by cmd_expr), so options may still follow it."""
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `refinterp` console script."""
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)  # compile-time ints are unbounded; print them whole
    parser = build_parser()
    args = parser.parse_args(_expression_first(list(sys.argv[1:] if argv is None else argv)))
    out = Output(json_mode=getattr(args, "json", False))
    run: Callable[[argparse.Namespace, Output], int] = args.run
    try:
        return run(args, out)
    except Diagnostic as diag:
        out.error(diag)
        return EXIT_DIAGNOSTIC
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        sys.stderr.write(f"refinterp: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `refinterp parse ... | head`: the reader went away
        sys.stderr.close()
        return EXIT_OK
    except Exception as exc:  # a bug: never show a traceback unless asked
        if args.debug:
            raise
        sys.stderr.write(f"refinterp: internal error: {type(exc).__name__}: {exc}\n"
                         "  this is a bug in refinterp; rerun with --debug for details\n")
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
