"""What the commands share of the command line's grammar: the options several commands take
(defined once, in `OPTIONS`, added by name with `add`), the parsing of option values
(attributes, input types, sizes, regular expressions, numbers in a range) and the limits of a
run built from the limit options (`limits`). An option value that cannot be used is
command-line misuse (`UsageError`, exit 2) or, for a value in the SkriptND language, a
diagnostic (E0901)."""

from __future__ import annotations

import argparse
import re
from typing import Any

from refinterp.cli.output import UsageError
from refinterp.core.diagnostics import Diagnostic

# ------------------------------------------------------------------------------- shared options

# the options of more than one command, by destination: (flags, add_argument settings)
OPTIONS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "json": (("--json",), dict(
        action="store_true",
        help="print the result, warnings and any error as one JSON object on stdout")),
    "stdlib": (("--stdlib",), dict(
        metavar="DIR", help="a folder of standard modules replacing the bundled ones (e.g. the "
                            "Khronos stdlib)")),
    "path": (("--path",), dict(
        action="append", default=[], metavar="DIR",
        help="an extra folder to search for imported modules")),
    "profile": (("--profile",), dict(
        choices=["spec", "khronos"], default="spec",
        help="numeric rules where the spec and Khronos differ (docs/semantics.md); default: "
             "spec")),
    # what to instantiate or run (shapes, eval)
    "file": (("file",), dict(
        metavar="FILE|DIR", nargs="?",
        help="a .sknd file or a model folder (main.sknd); omit it to run a standard operator "
             "named by --op MODULE.OP")),
    "op": (("--op",), dict(
        metavar="NAME",
        help="the operator or graph (default: the first graph, else the only operator); "
             "MODULE.OP for an imported or standard one")),
    "attrib": (("--attrib",), dict(
        action="append", default=[], metavar="NAME=VALUE",
        help="an attribute value, a SkriptND literal: 3, [1, 2], true, 'text' (quote "
             "strings)")),
    "generic": (("--generic",), dict(
        action="append", default=[], metavar="TYPE",
        help="explicit generic type arguments in @dtype order, as op<TYPE>")),
    # the limits of a run (docs/limits.md): None keeps the API's default, named in the help
    "max_iterations": (("--max-iterations",), dict(
        type=int, metavar="N", help="the most iterations a @compose loop may run (default "
                                    "10000)")),
    "max_depth": (("--max-depth",), dict(
        type=int, metavar="N",
        help="the deepest nesting of operator invocations (default 256, at most 10000)")),
    "max_pack_length": (("--max-pack-length",), dict(
        type=int, metavar="N", help="the most tensors in one pack (default 100000)")),
    "max_work": (("--max-work",), dict(
        type=int, metavar="N",
        help="the most work one run may do, counted before it is done: operator invocations "
             "+ @compose loop steps + @lower iterations (default 100000000000)")),
    "timeout": (("--timeout",), dict(
        type=float, metavar="SECONDS",
        help="end the run with an error after this many seconds (default: none)")),
    # the input arrays of a run and where its results go (eval, einsum)
    "inputs": (("--inputs",), dict(
        metavar="IN.npz", help="input arrays by name (a pack xs as xs.0, xs.1, ...)")),
    "input": (("--input",), dict(
        action="append", default=[], metavar="NAME=PATH.npy|LITERAL",
        help="one input: an .npy file or a SkriptND literal such as [1.0, 2.0]")),
    "random": (("--random",), dict(
        action="append", default=[], metavar="NAME[=TYPE[EXTENTS]]",
        help="a random input: x=real[2,3], xs=real[4]..(3), or just x for an input whose "
             "declared shape is fixed")),
    "seed": (("--seed",), dict(
        type=int, default=0,
        help="the seed of --random, --random-inputs and --random-params (default 0)")),
    "output": (("-o", "--output"), dict(
        metavar="OUT.npz", help="write the outputs (packs as ys.0, ys.1, ...)")),
    "save_inputs": (("--save-inputs",), dict(
        metavar="FILE.npz",
        help="write the inputs used, random ones included (for --inputs)")),
    "max_input_size": (("--max-input-size",), dict(
        metavar="SIZE",
        help="the most bytes one array file may hold (an .npy file, an .npz archive's members "
             "uncompressed, a folder of .dat files), checked before it is read (default 4G)")),
    # refinterp.lower.engines.ENGINE_NAMES, and 'scalar' (accepted for 'compiled', not
    # listed); not imported from there: --help imports no engine
    "engine": (("--engine",), dict(
        choices=["reference", "compiled", "vector", "auto", "scalar"], default="auto",
        metavar="{reference,compiled,vector,auto}",
        help="how @lower formulas run: reference (element by element, the definition), "
             "compiled (generated code, the reference where it cannot), vector (NumPy, "
             "falling back to compiled per formula where it cannot be exact) or auto (per "
             "operator, compiled or vector, whichever a cost model expects faster; the "
             "default)")),
}

# the option groups of the commands that load programs, and of those that run one
LOADING = ("json", "stdlib", "path")
INVOCATION = ("file", "op", "attrib", "generic")
LIMITS = ("max_iterations", "max_depth", "max_pack_length", "max_work", "timeout")
RUNNING = (*LOADING, "profile", *INVOCATION, *LIMITS)  # shapes and eval


def add(parser: argparse.ArgumentParser, *names: str) -> None:
    """Add the shared options `names` (keys of OPTIONS) to `parser`, in that order."""
    for name in names:
        flags, settings = OPTIONS[name]
        parser.add_argument(*flags, **settings)


def add_verbosity(parser: argparse.ArgumentParser, top_level: bool = False) -> None:
    """-v/--verbose and -q/--quiet (destination `verbosity`: 1, -1; 0 without either), taken
    before the command (`refinterp -v check …`) and, by the commands that use them, after it.
    A command's copy has no default, so that it keeps a value given before the command."""
    default = 0 if top_level else argparse.SUPPRESS
    loudness = parser.add_mutually_exclusive_group()
    loudness.add_argument("-v", "--verbose", dest="verbosity", action="store_const", const=1,
                          default=default, help="say more (check, report: every operator's "
                                                "row)")
    loudness.add_argument("-q", "--quiet", dest="verbosity", action="store_const", const=-1,
                          default=default, help="say less (check, report: no explanations)")


# ------------------------------------------------------------------------------- values


def parse_attribute(text: str, profile: str) -> tuple[str, Any]:
    """`NAME=VALUE` where VALUE is a SkriptND literal expression (`3`, `[1, 2]`, `'x'`)."""
    from refinterp.api import parse_value

    name, sep, value_text = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise Diagnostic(f"--attrib expects NAME=VALUE; got '{text}'", code="E0901")
    return name, parse_value(value_text, profile, f"<attrib {name}>")


def attributes(args: argparse.Namespace) -> dict[str, Any]:
    """The `--attrib` values of a command line, by name."""
    return dict(parse_attribute(text, args.profile) for text in args.attrib)


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


def check_number(value: float | None, option: str, low: float, high: float) -> None:
    """A numeric option within [low, high] (NaN and infinities are not), else misuse."""
    if value is not None and not low <= value <= high:  # NaN fails both comparisons
        raise UsageError(f"{option} must be between {low:g} and {high:g}; got {value!r}")


MAX_JOBS = 256  # worker processes of -j
MAX_TIMEOUT = 7 * 86400.0  # the longest --timeout accepted, in seconds (a week)

# every option or argument that names a file or folder (dest -> how the user spelled it)
PATH_OPTIONS = {"file": "FILE|DIR", "files": "FILE", "module": "MODULE|FILE",
                "target": "MODULE.OP|FILE", "stdlib": "--stdlib", "path": "--path",
                "inputs": "--inputs", "params": "--params", "output": "-o",
                "save_inputs": "--save-inputs", "save_params": "--save-params",
                "write_params": "--write-params", "save_case": "--save-case",
                "tables": "CASEFILE", "suite": "SUITE", "case": "CASE_DIR", "json": "--json",
                "junit": "--junit", "expect": "--expect", "update_expect": "--update-expect",
                "probe": "--probe", "merge": "--merge", "trace": "--trace", "html": "--html",
                "reports": "RUN.json"}


def check_paths(args: argparse.Namespace) -> None:
    """A file or folder given as the empty string is command-line misuse (it would silently
    mean the current folder, or nothing); checked for every command."""
    for name, option in PATH_OPTIONS.items():
        value = getattr(args, name, None)
        if value == "" or (isinstance(value, list) and "" in value):
            raise UsageError(f"{option}: the path is empty")


# ------------------------------------------------------------------------------- runs

LIMIT_COUNTS = ("max_iterations", "max_depth", "max_pack_length", "max_lower_iterations",
                "max_work")
LIMIT_SIZES = {"max_tensor_size": "--max-tensor-size", "max_memory": "--max-memory"}


def limits(args: argparse.Namespace) -> Any:
    """The limits of a run (`api.Limits`, docs/limits.md) from the limit options of a command
    line (a command without one keeps the API's default). `api.Limits` checks the values; one
    it refuses is command-line misuse, as is a --timeout beyond a week."""
    from refinterp import api

    given = {name: getattr(args, name) for name in LIMIT_COUNTS
             if getattr(args, name, None) is not None}
    for name, option in LIMIT_SIZES.items():
        if getattr(args, name, None) is not None:
            given[name] = parse_size(getattr(args, name), option)
    timeout = getattr(args, "timeout", None)
    check_number(timeout, "--timeout", 0.001, MAX_TIMEOUT)
    try:
        return api.Limits(**given, timeout=timeout)
    except Diagnostic as error:
        raise UsageError(error.message) from None


def run_target(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """What `shapes` and `eval` run (an `api.Target`: an operator of FILE|DIR, by `--op` or
    its first graph, else its only operator; or a standard operator `--op MODULE.OP`) and the
    `--attrib` values, in the order mistakes are reported: FILE|DIR is loaded, the attributes
    are parsed, then the operator is found."""
    from refinterp import api

    if args.file is None:
        if not args.op or "." not in args.op:
            raise UsageError("give a FILE, or a standard operator as --op MODULE.OP "
                             "(e.g. --op nn.relu)")
        values = attributes(args)
        return api.resolve(args.op, stdlib=args.stdlib), values
    program = api.load(args.file, stdlib=args.stdlib, search_path=args.path)
    values = attributes(args)
    return api.resolve(program, args.op), values
