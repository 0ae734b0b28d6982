"""The command line's grammar: the argparse parser of every command and option, and the
parsing of option values (attributes, input types, memory sizes, an expression that starts with
'-'). An option value that cannot be used is command-line misuse (`UsageError`, exit 2)."""

from __future__ import annotations

import argparse
import re
from typing import Any

from refinterp.cli.output import UsageError
from refinterp.core.diagnostics import Diagnostic


def parse_attribute(text: str, profile: str) -> tuple[str, Any]:
    """`NAME=VALUE` where VALUE is a SkriptND literal expression (`3`, `[1, 2]`, `'x'`)."""
    from refinterp.api import parse_value

    name, sep, value_text = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise Diagnostic(f"--attrib expects NAME=VALUE; got '{text}'", code="E0901")
    return name, parse_value(value_text, profile, f"<attrib {name}>")


_TYPE_RE = re.compile(
    r"^\s*(?P<dtype>[A-Za-z_]\w*)\s*\[(?P<shape>[\d\s,]*)\]\s*(?:\.\.\((?P<count>\d+)\))?\s*$")
RANDOM_TYPES = ("real", "int", "bool")


def parse_types(texts: list[str], option: str = "--input",
                max_pack_length: int | None = None) -> dict[str, Any]:
    """Input types from `NAME=TYPE[EXTENTS]`, `NAME=TYPE[EXTENTS]..(N)` (a pack of N equal
    tensors, N within `max_pack_length`, default the API's) and `NAME.I=TYPE[EXTENTS]` (item I
    of a pack; items run from 0 without gaps)."""
    from refinterp.api import MAX_PACK_LENGTH, TensorType, check_pack_length

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
            if match["count"]:
                count = int(match["count"])
                check_pack_length(count, max_pack_length or MAX_PACK_LENGTH, f"{option} {base}")
                types[base] = (tensor,) * count
            else:
                types[base] = tensor
    for base, by_index in items.items():
        if base in types or sorted(by_index) != list(range(len(by_index))):
            raise Diagnostic(f"{option} {base}: give a whole pack or items {base}.0, {base}.1, "
                             f"... without gaps", code="E0900")
        types[base] = tuple(by_index[i] for i in range(len(by_index)))
    return types


def parse_size(text: str, option: str) -> int:
    """A size in bytes: a number, or a number with K, M, G or T (powers of 1024), e.g. '512M'."""
    units = {"K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}
    number, unit = text.strip().upper().rstrip("IB") or "0", 1
    if number[-1:] in units:
        number, unit = number[:-1], units[number[-1]]
    try:
        size = int(float(number) * unit)
    except (ValueError, OverflowError):
        raise UsageError(f"{option} expects a size such as 2G or 512M; got '{text}'") from None
    if size < 1:
        raise UsageError(f"{option} must be positive; got '{text}'")
    return size


def add_max_input_size(parser: argparse.ArgumentParser) -> None:
    """`--max-input-size SIZE`, an option of every command that reads array files (eval,
    einsum, check, golden verify; docs/limits.md)."""
    parser.add_argument("--max-input-size", metavar="SIZE",
                        help="the most bytes one array file may hold (an .npy file, an .npz "
                             "archive's members uncompressed, a folder of .dat files), checked "
                             "before it is read (default 4G)")


def max_input_size(args: argparse.Namespace) -> int:
    """The `--max-input-size` of a command line in bytes; refinterp.io's default when it is not
    given (or the command has no such option)."""
    if getattr(args, "max_input_size", None) is None:
        from refinterp.io import MAX_INPUT_SIZE  # numpy: only once arrays are read

        return MAX_INPUT_SIZE
    return parse_size(args.max_input_size, "--max-input-size")


def parse_regex(text: str | None, option: str) -> str | None:
    """A regular-expression option (-k, --exclude), checked; None stays None."""
    if text is not None:
        try:
            re.compile(text)
        except re.error as error:
            raise UsageError(f"{option}: not a regular expression: {error}") from None
    return text


MAX_JOBS = 256  # worker processes of -j

# every option or argument that names a file or folder (dest -> how the user spelled it)
PATH_OPTIONS = {"file": "FILE|DIR", "files": "FILE", "module": "MODULE|FILE",
                "target": "MODULE.OP|FILE", "stdlib": "--stdlib", "path": "--path",
                "inputs": "--inputs", "params": "--params", "output": "-o",
                "save_inputs": "--save-inputs", "save_params": "--save-params",
                "write_params": "--write-params", "save_case": "--save-case",
                "tables": "CASEFILE", "suite": "SUITE", "case": "CASE_DIR", "json": "--json",
                "junit": "--junit", "expect": "--expect", "update_expect": "--update-expect",
                "probe": "--probe", "merge": "--merge", "trace": "--trace"}


def check_paths(args: argparse.Namespace) -> None:
    """A file or folder given as the empty string is command-line misuse (it would silently
    mean the current folder, or nothing); checked for every command."""
    for name, option in PATH_OPTIONS.items():
        value = getattr(args, name, None)
        if value == "" or (isinstance(value, list) and "" in value):
            raise UsageError(f"{option}: the path is empty")


def check_number(value: float | None, option: str, low: float, high: float) -> None:
    """A numeric option within [low, high] (NaN and infinities are not), else misuse."""
    if value is not None and not low <= value <= high:  # NaN fails both comparisons
        raise UsageError(f"{option} must be between {low:g} and {high:g}; got {value!r}")


def _version() -> str:
    """refinterp's version (refinterp/__init__.py; the package metadata reads it from there,
    and importlib.metadata would cost ~10 ms of start-up on every command)."""
    from refinterp import __version__

    return __version__


COMMAND_NAMES = ("parse", "fmt", "expr", "ops", "describe", "shapes", "eval", "golden", "check",
                 "einsum")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of the command line; with `command`, only that command's parser is added
    (and what it reuses: einsum's options are eval's), which is all `main` needs once the
    command is known (start-up time; docs/architecture.md "Start-up")."""
    def wanted(*names: str) -> bool:
        return command is None or command in names

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
    # the limits of a run (docs/limits.md): None keeps the API's default, named in the help
    limits = argparse.ArgumentParser(add_help=False)
    limits.add_argument("--max-iterations", type=int, metavar="N",
                        help="the most iterations a @compose loop may run (default 10000)")
    limits.add_argument("--max-depth", type=int, metavar="N",
                        help="the deepest nesting of operator invocations (default 256, at "
                             "most 10000)")
    limits.add_argument("--max-pack-length", type=int, metavar="N",
                        help="the most tensors in one pack (default 100000)")
    limits.add_argument("--max-work", type=int, metavar="N",
                        help="the most work one run may do, counted before it is done: "
                             "operator invocations + @compose loop steps + @lower iterations "
                             "(default 100000000000)")
    limits.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="end the run with an error after this many seconds (default: "
                             "none)")

    if wanted("parse"):
        _add_parse(commands, common, stdlib, search)
    if wanted("fmt"):
        _add_fmt(commands, common)
    if wanted("expr"):
        _add_expr(commands, common, profile)
    if wanted("ops"):
        _add_ops(commands, common, stdlib, search)
    if wanted("describe"):
        _add_describe(commands, common, stdlib, search)
    if wanted("shapes"):
        _add_shapes(commands, common, stdlib, search, profile, invocation, limits)
    if wanted("eval", "einsum"):
        _add_eval(commands, common, stdlib, search, profile, invocation, limits)
    from refinterp.cli import check, golden  # they use this module's helpers
    from refinterp.cli import einsum

    if wanted("golden"):
        golden.add_parser(commands, common)
    if wanted("check"):
        check.add_parser(commands)
    if wanted("einsum"):
        einsum.add_parser(commands, common)
    return parser


def command_named(argv: list[str]) -> str | None:
    """The command of a command line when it is plain to see — the first argument, or the
    second after --debug — else None (then every command's parser is built: help, a
    misspelt command, options before the command)."""
    first = 1 if argv[:1] == ["--debug"] else 0
    name = argv[first] if len(argv) > first else None
    return name if name in COMMAND_NAMES else None


def _add_parse(commands: Any, common: argparse.ArgumentParser,
               stdlib: argparse.ArgumentParser, search: argparse.ArgumentParser) -> None:
    parse_cmd = commands.add_parser(
        "parse", parents=[common, stdlib, search],
        help="parse files (and their imports) and summarise them")
    parse_cmd.add_argument("files", nargs="+", metavar="FILE",
                           help="a .sknd file or a model folder with main.sknd")


def _add_fmt(commands: Any, common: argparse.ArgumentParser) -> None:

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


def _add_expr(commands: Any, common: argparse.ArgumentParser,
              profile: argparse.ArgumentParser) -> None:
    expr_cmd = commands.add_parser("expr", parents=[common, profile],
                                   help="evaluate a compile-time expression")
    expr_cmd.add_argument("expression", metavar="EXPR",
                          help="the expression (one starting with '-', such as -inf, needs "
                               "no '--')")
    expr_cmd.add_argument("--attrib", action="append", default=[], metavar="NAME=VALUE",
                          help="a symbol and its value, a SkriptND literal expression")


def _add_ops(commands: Any, common: argparse.ArgumentParser, stdlib: argparse.ArgumentParser,
             search: argparse.ArgumentParser) -> None:
    ops_cmd = commands.add_parser("ops", parents=[common, stdlib, search],
                                  help="list operators with their kind and signature")
    ops_cmd.add_argument("module", metavar="MODULE|FILE", nargs="?",
                         help="a standard module (nn, math, ...) or a file; default: every "
                              "standard module")


def _add_describe(commands: Any, common: argparse.ArgumentParser,
                  stdlib: argparse.ArgumentParser, search: argparse.ArgumentParser) -> None:
    describe_cmd = commands.add_parser("describe", parents=[common, stdlib, search],
                                       help="print an operator's full signature")
    describe_cmd.add_argument("target", metavar="MODULE.OP|FILE",
                              help="a standard operator such as nn.conv, or a file (with --op)")
    describe_cmd.add_argument("--op", metavar="NAME", help="the operator of FILE to describe")


def _add_shapes(commands: Any, *parents: argparse.ArgumentParser) -> None:
    shapes_cmd = commands.add_parser(
        "shapes", parents=list(parents),
        help="instantiate an operator, check its composition, print its output shapes")
    shapes_cmd.add_argument("--input", action="append", default=[],
                            metavar="NAME=TYPE[EXTENTS]",
                            help="an input type: x=real[2,3], xs=real[4]..(3) or xs.0=real[4] "
                                 "(not needed where the declared shape is fixed)")
    shapes_cmd.add_argument("--symbols", action="store_true", help="also print bound symbols")
    shapes_cmd.add_argument("--quant", action="store_true",
                            help="also list the @quantize entries and the tensors they attach to")


def _add_eval(commands: Any, *parents: argparse.ArgumentParser) -> None:
    eval_cmd = commands.add_parser(
        "eval", parents=list(parents),
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
    eval_cmd.add_argument("--max-tensor-size", metavar="SIZE",
                          help="the most bytes one tensor may take, checked before it is made "
                               "(default 1G)")
    add_max_input_size(eval_cmd)
    eval_cmd.add_argument("--max-lower-iterations", type=int, metavar="N",
                          help="the most iterations one @lower formula may run, checked before "
                               "it runs (default 1000000000)")
    eval_cmd.add_argument("--engine", choices=["scalar", "vector", "auto"], default="auto",
                          help="how @lower formulas run: scalar (element by element, the "
                               "definition), vector (NumPy, falling back to scalar per "
                               "formula where it cannot be exact) or auto (scalar for small "
                               "operators, vector otherwise; the default)")
    eval_cmd.add_argument("--max-memory", metavar="SIZE",
                          help="the most memory the vector engine's temporaries may take at "
                               "once (default 2G); larger iteration spaces run in chunks")
    eval_cmd.add_argument("--save-case", metavar="DIR",
                          help="freeze the run as a golden case folder (model, inputs, params, "
                               "outputs, case.json; docs/golden.md)")
    eval_cmd.add_argument("--case-class", default="reduction", metavar="CLASS",
                          choices=["exact", "arithmetic", "transcendental", "reduction"],
                          help="the tolerance class of a --save-case case (default reduction)")
    eval_cmd.add_argument("--trace", metavar="FILE",
                          help="write a deterministic text trace of the run: every invocation "
                               "in order, every tensor's id, type, sha256 and statistics, a "
                               "buffer plan (docs/trace.md); written also when the run fails")
    eval_cmd.add_argument("--verbose", action="store_true",
                          help="print which engine ran each operator")
    eval_cmd.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                          help="every 5 s of a long run, name the operators running (default: "
                               "when stderr is a terminal)")


NOT_AN_OPTION = "\x00"  # argv strings cannot hold NUL: a safe mark for "this is no option"


def expression_first(argv: list[str]) -> list[str]:
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
