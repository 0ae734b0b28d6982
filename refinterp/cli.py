"""The `refinterp` command line.

Exit status: 0 success, 1 a diagnostic about the user's input, 2 command-line misuse,
3 an internal error (a bug in refinterp: rerun with --debug for the traceback).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Callable, Sequence

from .diagnostics import Diagnostic, render
from .modules import Loader, Program, read_source, resolve_main
from .source import SourceFile
from .syntax.parser import parse_module
from .syntax.printer import format_module

EXIT_OK, EXIT_DIAGNOSTIC, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class Output:
    """Where the CLI writes: results to stdout, diagnostics to stderr (via rich when a tty)."""

    def __init__(self) -> None:
        self._console = None

    def result(self, text: str) -> None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")

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
        text = render(diag)
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


def _summary(path: str, program: Program) -> str:
    tree = program.main.tree
    imports = ", ".join(program.main.imports) or "none"
    operators = [d.name for d in tree.definitions if not d.is_graph]
    graphs = [d.name for d in tree.definitions if d.is_graph]

    def listing(kind: str, names: list[str]) -> str:
        plural = kind if len(names) == 1 else kind + "s"
        return f"{len(names)} {plural}" + (f" ({', '.join(names)})" if names else "")

    return (f"{path}: imports {imports}; {listing('operator', operators)}; "
            f"{listing('graph', graphs)}")


def cmd_parse(args: argparse.Namespace, out: Output) -> int:
    """Load each file with its imports; print one summary line per file."""
    status = EXIT_OK
    for path in args.files:
        try:
            program = Loader(args.path, args.stdlib).load(path)
        except Diagnostic as diag:
            out.diagnostic(diag)
            status = EXIT_DIAGNOSTIC
            continue
        for warning in program.warnings:
            out.diagnostic(warning)
        out.result(_summary(path, program))
    return status


def cmd_fmt(args: argparse.Namespace, out: Output) -> int:
    """Print the canonical form of a file (or rewrite it in place)."""
    path = resolve_main(args.file)
    source = read_source(path)
    result = parse_module(source)
    for warning in result.warnings:
        out.diagnostic(warning)
    text = format_module(result.module)
    if args.in_place:
        Path(path).write_text(text, encoding="utf-8")
    else:
        out.result(text.rstrip("\n"))
    return EXIT_OK


def parse_attribute(text: str, profile: object) -> tuple[str, object]:
    """`NAME=VALUE` where VALUE is a SkriptND literal expression (`3`, `[1, 2]`, `'x'`)."""
    from .expr import Environment, evaluate
    from .syntax.parser import parse_expression

    name, sep, value_text = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise Diagnostic(f"--attrib expects NAME=VALUE; got '{text}'")
    source = SourceFile(f"<attrib {name}>", value_text)
    return name, evaluate(parse_expression(source), Environment(profile=profile))


def cmd_expr(args: argparse.Namespace, out: Output) -> int:
    """Evaluate one compile-time expression and print its value."""
    from . import semantics
    from .expr import Environment, evaluate
    from .syntax.parser import parse_expression
    from .values import format_literal, to_json

    profile = semantics.PROFILES[args.profile]
    env = Environment(profile=profile)
    for text in args.attrib:
        name, value = parse_attribute(text, profile)
        env.values[name] = value
    value = evaluate(parse_expression(SourceFile("<expr>", args.expression)), env)
    out.result(to_json(value) if args.json else format_literal(value))
    return EXIT_OK


_INPUT_RE = re.compile(
    r"^\s*(?P<dtype>[A-Za-z_]\w*)\s*\[(?P<shape>[\d\s,]*)\]\s*(?:\.\.\((?P<count>\d+)\))?\s*$")


def parse_inputs(texts: list[str]) -> dict:
    """Input tensors from `NAME=TYPE[EXTENTS]`, `NAME=TYPE[EXTENTS]..(N)` (a pack of N equal
    tensors) and `NAME.I=TYPE[EXTENTS]` (item I of a pack; items must run from 0 without gaps)."""
    from .instance import TensorInfo

    tensors: dict = {}
    items: dict[str, dict[int, TensorInfo]] = {}
    for text in texts:
        name, sep, spec = text.partition("=")
        match = _INPUT_RE.match(spec)
        if not sep or match is None:
            raise Diagnostic(f"--input expects NAME=TYPE[EXTENTS] such as x=real[2,3] or "
                             f"xs=real[4]..(3); got '{text}'")
        shape = tuple(int(e) for e in match["shape"].replace(" ", "").split(",") if e)
        tensor = TensorInfo(match["dtype"], shape)
        base, dot, index = name.strip().partition(".")
        if dot:
            if not index.isdigit():
                raise Diagnostic(f"--input {name}: the item index must be a number")
            items.setdefault(base, {})[int(index)] = tensor
        else:
            tensors[base] = (tensor,) * int(match["count"]) if match["count"] else tensor
    for base, by_index in items.items():
        if base in tensors or sorted(by_index) != list(range(len(by_index))):
            raise Diagnostic(f"--input {base}: give a whole pack or items {base}.0, {base}.1, "
                             f"... without gaps")
        tensors[base] = tuple(by_index[i] for i in range(len(by_index)))
    return tensors


def select_operator(program: Program, name: str | None):
    """`--op NAME`, or the first graph, or the only operator."""
    definitions = program.main.tree.definitions
    if name is not None:
        for definition in definitions:
            if definition.name == name:
                return definition
        raise Diagnostic(f"no operator or graph '{name}' in {program.main.path}",
                         notes=["candidates: " + ", ".join(d.name for d in definitions)])
    graphs = [d for d in definitions if d.is_graph]
    if graphs:
        return graphs[0]
    if len(definitions) == 1:
        return definitions[0]
    raise Diagnostic(f"{program.main.path} defines {len(definitions)} operators; choose one "
                     f"with --op", notes=["candidates: " + ", ".join(d.name for d in
                                                                      definitions)])


def cmd_shapes(args: argparse.Namespace, out: Output) -> int:
    """Instantiate an operator and print its output types and shapes."""
    import json

    from . import semantics
    from .instance import Invocation, instantiate
    from .values import to_json_data

    profile = semantics.PROFILES[args.profile]
    program = Loader(args.path, args.stdlib).load(args.file)
    definition = select_operator(program, args.op)
    invocation = Invocation(generics=tuple(args.generic), profile=profile)
    for text in args.attrib:
        name, value = parse_attribute(text, profile)
        invocation.attributes[name] = value
    invocation.inputs.update(parse_inputs(args.input))
    if definition.is_graph:
        for name, info in declared_graph_inputs(definition, invocation).items():
            invocation.inputs.setdefault(name, info)
    instance = instantiate(definition, invocation)
    entries = []
    if args.quant:
        from .quantize import quantization

        entries = quantization(instance, program.main, profile)

    def describe(info) -> object:
        if isinstance(info, tuple):
            return [describe(i) for i in info]
        return info.as_json()

    if args.json:
        data: dict = {"outputs": {n: describe(i) for n, i in instance.outputs.items()}}
        if args.symbols:
            data["symbols"] = {n: to_json_data(v) for n, v in instance.symbols.items()
                               if not n.startswith("<")}
        if args.quant:
            data["quantization"] = [entry.as_json() for entry in entries]
        out.result(json.dumps(data))
        return EXIT_OK
    for name, info in instance.outputs.items():
        infos = info if isinstance(info, tuple) else (info,)
        for index, item in enumerate(infos):
            label = name if not isinstance(info, tuple) else f"{name}[{index}]"
            if item.shape is None:
                out.result(f"{label}: {item.dtype} (shape derived from the composition)")
                continue
            extents = ", ".join("~" if e is None else str(e) for e in item.shape)
            out.result(f"{label}: {item.dtype}[{extents}]")
    if args.symbols:
        from .values import format_literal

        for name, value in instance.symbols.items():
            out.result(f"  {name} = {format_literal(value)}")
    if args.quant:
        from .values import format_literal

        out.result("quantization:" if entries else "quantization: none")
        for entry in entries:
            attributes = ", ".join(f"{k} = {format_literal(v)}"
                                   for k, v in entry.attributes.items())
            target = "" if entry.info is None else f", {_describe_info(entry.info)}"
            out.result(f"  {entry.tensor} ({entry.kind}{target}): {entry.operator}"
                       f"{{{attributes}}}")
    return EXIT_OK


def _describe_info(info) -> str:
    """`real[2, 3]`, a pack as `[real[2], real[3]]`."""
    if isinstance(info, tuple):
        return "[" + ", ".join(_describe_info(i) for i in info) + "]"
    return f"{info.dtype}[{', '.join('~' if e is None else str(e) for e in info.shape or ())}]"


def declared_graph_inputs(definition, invocation) -> dict:
    """The inputs of a graph whose declared shapes are fixed by literals and attributes (given
    or constant defaults), e.g. `real[batch, 3, 224, 224]`: `shapes` needs no --input for
    them."""
    from .expr import Environment, evaluate
    from .instance import TensorInfo
    from .syntax import ast

    values = dict(invocation.attributes)
    attributes = definition.block("attrib")
    for decl in attributes.entries if attributes else ():
        if decl.name not in values and decl.default is not None:
            try:
                values[decl.name] = evaluate(decl.default, Environment(dict(values)))
            except Diagnostic:
                pass
    env = Environment(values, profile=invocation.profile)
    found = {}
    inputs = definition.block("input")
    for decl in inputs.entries if inputs else ():
        spec = decl.type
        if spec.shape is None or spec.pack is not None or spec.optional or \
                spec.name not in ("real", "int", "bool"):
            continue
        shape: list[int] = []
        try:
            for extent in spec.shape:
                if extent.pack is not None or isinstance(extent.value, ast.Placeholder):
                    raise Diagnostic("not fixed")
                size = evaluate(extent.value, env)
                shape.extend(size if isinstance(size, tuple) else (size,))
        except Diagnostic:
            continue
        if all(isinstance(e, int) and not isinstance(e, bool) for e in shape):
            found[decl.name] = TensorInfo(spec.name, tuple(shape))
    return found


def _canonical(name: str, array):
    """An input array in refinterp's representation: real → float64, int → int64, bool."""
    from .arrays import canonical

    try:
        return canonical(array)
    except TypeError:
        raise Diagnostic(f"input '{name}' has dtype {array.dtype}, which is not a real, int or "
                         f"bool array") from None


def load_eval_inputs(args: argparse.Namespace, profile) -> dict:
    """Input arrays from --inputs IN.npz, --input NAME=PATH.npy|LITERAL and --random."""
    import numpy as np

    arrays: dict = {}
    if args.inputs:
        try:
            with np.load(args.inputs) as archive:
                for key in archive.files:
                    arrays[key] = _canonical(key, archive[key])
        except (OSError, ValueError) as exc:
            raise Diagnostic(f"cannot read inputs '{args.inputs}': {exc}") from None
    for text in args.input:
        name, sep, value = text.partition("=")
        if not sep:
            raise Diagnostic(f"--input expects NAME=PATH.npy or NAME=LITERAL; got '{text}'")
        if value.endswith(".npy"):
            try:
                arrays[name] = _canonical(name, np.load(value))
            except (OSError, ValueError) as exc:
                raise Diagnostic(f"cannot read '{value}': {exc}") from None
        else:
            _, literal = parse_attribute(f"{name}={value}", profile)
            arrays[name] = _canonical(name, np.array(literal))
    rng = np.random.default_rng(args.seed)
    for text in args.random:
        for name, tensor in parse_inputs([text]).items():
            for key, info in (((f"{name}.{i}", t) for i, t in enumerate(tensor))
                              if isinstance(tensor, tuple) else ((name, tensor),)):
                if info.dtype == "real":
                    arrays[key] = rng.standard_normal(info.shape)
                elif info.dtype == "int":
                    arrays[key] = rng.integers(0, 10, info.shape, dtype=np.int64)
                elif info.dtype == "bool":
                    arrays[key] = rng.random(info.shape) < 0.5
                else:
                    raise Diagnostic(f"--random {name}: no random {info.dtype} values")
    return _group_packs(arrays)


def _group_packs(arrays: dict) -> dict:
    """Keys `xs.0`, `xs.1`, ... become the pack `xs` (a list of arrays)."""
    grouped: dict = {}
    items: dict[str, dict[int, object]] = {}
    for key, array in arrays.items():
        base, dot, index = key.rpartition(".")
        if dot and index.isdigit():
            items.setdefault(base, {})[int(index)] = array
        else:
            grouped[key] = array
    for base, by_index in items.items():
        if sorted(by_index) != list(range(len(by_index))) or base in grouped:
            raise Diagnostic(f"input pack '{base}' needs items {base}.0, {base}.1, ... "
                             f"without gaps")
        grouped[base] = [by_index[i] for i in range(len(by_index))]
    return grouped


def cmd_eval(args: argparse.Namespace, out: Output) -> int:
    """Evaluate an operator or graph on input arrays (@lower by the chosen engine, @compose by
    running its invocations)."""
    import numpy as np

    from . import semantics
    from .compose import Executor, kind_of, tensor_info
    from .instance import Invocation
    from .lower.engines import make_engine
    from .params import ParameterStore, load_params

    profile = semantics.PROFILES[args.profile]
    program = Loader(args.path, args.stdlib).load(args.file)
    definition = select_operator(program, args.op)
    params = ParameterStore(
        graph=f"{program.main.name}.{definition.name}",
        arrays=load_params(args.params) if args.params else {},
        folder=program.main.path.parent, random=args.random_params, seed=args.seed)
    arrays = load_eval_inputs(args, profile)
    invocation = Invocation(generics=tuple(args.generic), profile=profile)
    for text in args.attrib:
        name, value = parse_attribute(text, profile)
        invocation.attributes[name] = value

    invocation.inputs = {name: tensor_info(array) for name, array in arrays.items()}
    if args.max_iterations < 1 or args.max_depth < 1:
        raise Diagnostic("--max-iterations and --max-depth must be at least 1")
    engine = make_engine(args.engine, parse_size(args.max_memory),
                         log=_engine_log(out) if args.verbose else None)
    executor = Executor(program, profile, max_depth=args.max_depth,
                        max_iterations=args.max_iterations, params=params, engine=engine)
    outputs = executor.run(definition, program.main, invocation, arrays)
    for name in params.unused():
        out.diagnostic(Diagnostic(f"--params entry '{name}' is not a variable of "
                                  f"'{definition.name}'", severity="warning"))
    if args.write_params:
        params.write(args.write_params)
    flat: dict[str, object] = {}
    for name, value in outputs.items():
        if isinstance(value, list):
            flat.update({f"{name}.{i}": a for i, a in enumerate(value)})
        else:
            flat[name] = value
    out.table(["output", "dtype", "shape", "min", "max", "mean"],
              [[name, kind_of(a), str(list(a.shape)), *_stats(a)] for name, a in
               flat.items()])
    if args.output:
        np.savez(args.output, **flat)
    return EXIT_OK


def parse_size(text: str) -> int:
    """A memory size: bytes, or a number with K, M, G or T (powers of 1024), e.g. '512M'."""
    units = {"K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}
    number, unit = text.strip().upper().rstrip("IB") or "0", 1
    if number[-1:] in units:
        number, unit = number[:-1], units[number[-1]]
    try:
        size = int(float(number) * unit)
    except ValueError:
        raise Diagnostic(f"--max-memory expects a size such as 2G or 512M; got '{text}'") \
            from None
    if size < 1:
        raise Diagnostic(f"--max-memory must be positive; got '{text}'")
    return size


def _engine_log(out: Output):
    """--verbose: one note per operator run by @lower, naming the engine that ran it."""
    def log(instance, engine: str) -> None:
        definition = instance.definition
        out.diagnostic(Diagnostic(f"engine: {definition.name} ({definition.span}): {engine}",
                                  severity="note"))
    return log


def _stats(array) -> list[str]:
    if array.size == 0:
        return ["-", "-", "-"]
    values = array.astype(float)
    return [f"{values.min():.6g}", f"{values.max():.6g}", f"{values.mean():.6g}"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="refinterp",
        description="Reference interpreter and semantics oracle for SkriptND (NNEF 2.0).")
    parser.add_argument("--debug", action="store_true",
                        help="show Python tracebacks of internal errors")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--stdlib", metavar="DIR",
                        help="a folder of standard modules replacing the bundled ones "
                             "(e.g. the Khronos stdlib)")

    parse_cmd = commands.add_parser(
        "parse", parents=[common], help="parse files (and their imports) and summarise them")
    parse_cmd.add_argument("files", nargs="+", metavar="FILE",
                           help="a .sknd file or a model folder with main.sknd")
    parse_cmd.add_argument("--path", action="append", default=[], metavar="DIR",
                           help="an extra folder to search for imported modules")
    parse_cmd.set_defaults(run=cmd_parse)

    fmt_cmd = commands.add_parser("fmt", parents=[common], help="print a file in canonical form")
    fmt_cmd.add_argument("file", metavar="FILE")
    fmt_cmd.add_argument("-i", "--in-place", action="store_true",
                         help="rewrite the file instead of printing it")
    fmt_cmd.set_defaults(run=cmd_fmt)

    expr_cmd = commands.add_parser("expr", parents=[common], help="evaluate a compile-time expression")
    expr_cmd.add_argument("expression", metavar="EXPR",
                          help="the expression (write `--` before one that starts with '-')")
    expr_cmd.add_argument("--attrib", action="append", default=[], metavar="NAME=VALUE",
                          help="a symbol and its value, a SkriptND literal expression")
    expr_cmd.add_argument("--profile", choices=["spec", "khronos"], default="spec",
                          help="numeric rules (docs/semantics.md); default: spec")
    expr_cmd.add_argument("--json", action="store_true", help="print the value as JSON")
    expr_cmd.set_defaults(run=cmd_expr)

    shapes_cmd = commands.add_parser(
        "shapes", parents=[common], help="instantiate an operator: check it and print its output shapes")
    shapes_cmd.add_argument("file", metavar="FILE")
    shapes_cmd.add_argument("--op", metavar="NAME", help="the operator or graph to instantiate")
    shapes_cmd.add_argument("--attrib", action="append", default=[], metavar="NAME=VALUE")
    shapes_cmd.add_argument("--input", action="append", default=[], metavar="NAME=TYPE[EXTENTS]",
                            help="e.g. x=real[2,3], xs=real[4]..(3), xs.0=real[4]")
    shapes_cmd.add_argument("--generic", action="append", default=[], metavar="TYPE",
                            help="explicit generic type arguments in @dtype order, as op<TYPE>")
    shapes_cmd.add_argument("--path", action="append", default=[], metavar="DIR")
    shapes_cmd.add_argument("--profile", choices=["spec", "khronos"], default="spec")
    shapes_cmd.add_argument("--json", action="store_true")
    shapes_cmd.add_argument("--symbols", action="store_true", help="also print bound symbols")
    shapes_cmd.add_argument("--quant", action="store_true",
                            help="also list the @quantize entries and the tensors they attach to")
    shapes_cmd.set_defaults(run=cmd_shapes)

    eval_cmd = commands.add_parser("eval", parents=[common], help="evaluate an operator on input arrays")
    eval_cmd.add_argument("file", metavar="FILE|DIR")
    eval_cmd.add_argument("--op", metavar="NAME")
    eval_cmd.add_argument("--attrib", action="append", default=[], metavar="NAME=VALUE")
    eval_cmd.add_argument("--inputs", metavar="IN.npz",
                          help="input arrays by name (a pack xs as xs.0, xs.1, ...)")
    eval_cmd.add_argument("--input", action="append", default=[], metavar="NAME=PATH.npy|LITERAL")
    eval_cmd.add_argument("--random", action="append", default=[], metavar="NAME=TYPE[EXTENTS]",
                          help="a random input, e.g. x=real[2,3] or xs=real[4]..(3)")
    eval_cmd.add_argument("--seed", type=int, default=0)
    eval_cmd.add_argument("--generic", action="append", default=[], metavar="TYPE")
    eval_cmd.add_argument("-o", "--output", metavar="OUT.npz")
    eval_cmd.add_argument("--path", action="append", default=[], metavar="DIR")
    eval_cmd.add_argument("--profile", choices=["spec", "khronos"], default="spec")
    eval_cmd.add_argument("--params", metavar="PARAMS.npz|DIR",
                          help="variable values by scoped name (main.G.conv1.filter) or by name "
                               "relative to the graph (conv1.filter); or a folder of .dat files")
    eval_cmd.add_argument("--random-params", action="store_true",
                          help="random values for variables found nowhere else (see --seed)")
    eval_cmd.add_argument("--write-params", metavar="DIR|FILE.npz",
                          help="save the variables @update assigned (.dat files or an .npz)")
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
    eval_cmd.set_defaults(run=cmd_eval)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `refinterp` console script."""
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)  # compile-time ints are unbounded; print them whole
    parser = build_parser()
    args = parser.parse_args(argv)
    out = Output()
    run: Callable[[argparse.Namespace, Output], int] = args.run
    try:
        return run(args, out)
    except Diagnostic as diag:
        out.diagnostic(diag)
        return EXIT_DIAGNOSTIC
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
