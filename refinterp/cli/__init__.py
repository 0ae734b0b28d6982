"""The `refinterp` command line: a thin layer over `refinterp.api`. Each command is a module
`cmd_NAME` holding its parser (`add_parser`) and its action (`run`); the options several
commands share and the parsing of option values are in `options`, the input arrays and output
summaries of a run (eval, einsum) in `arrays`, and where output goes in `output`. `main`
builds the parser from the command modules (`COMMANDS`, each imported only when needed).
No SkriptND semantics live here. May import: of refinterp, `api`, `io`,
`core.diagnostics`, `core.files` and `language.values`, and the front doors of `golden`,
`harness`, `trace` and `einsum` (tests/cli/test_cli_surface.py). Within it, imports point one
way: `__init__` -> `cmd_*` -> `arrays` -> `options` -> `output`.

Exit status: 0 success, 1 a diagnostic about the user's input (running out of memory
included, E1205) or a stdout or stderr that cannot be written, 2 command-line misuse, 3 an
internal error (a bug in refinterp: rerun with --debug for the traceback); 0 when the reader of
stdout went away (a broken pipe). docs/api.md "Exit status".
"""

from __future__ import annotations

import argparse
import atexit
import gc
import importlib
import os
import sys
from types import ModuleType
from typing import Sequence

from refinterp.cli.options import add_verbosity, check_paths
from refinterp.cli.output import (EXIT_DIAGNOSTIC, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, Output,
                                  StreamError, UsageError, guard_streams, progress_line,
                                  settle_streams)
from refinterp.core.diagnostics import Diagnostic, render

__all__ = ["main", "build_parser", "progress_line", "COMMANDS"]

# the commands, in the order `refinterp --help` lists them: command NAME is module cmd_NAME
COMMANDS = ("parse", "lint", "fmt", "expr", "ops", "describe", "shapes", "eval", "golden", "check",
            "report", "einsum", "completion")


def command_module(name: str) -> ModuleType:
    """The module of command `name`: `add_parser(commands)` registers its parser and
    `run(args, out)` runs it, returning the exit status."""
    return importlib.import_module(f"refinterp.cli.cmd_{name}")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of the command line; with `command`, only that command's parser is added,
    which is all `main` needs once the command is known (start-up time: only its module is
    imported; docs/performance.md "Start-up")."""
    parser = argparse.ArgumentParser(
        prog="refinterp",
        description="Reference interpreter and semantics oracle for SkriptND (NNEF 2.0).")
    parser.add_argument("--debug", action="store_true",
                        help="show Python tracebacks of internal errors")
    parser.add_argument("--version", action="version", version=f"refinterp {_version()}",
                        help="print the version and exit")
    add_verbosity(parser, top_level=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS if command is None else (command,):
        command_module(name).add_parser(commands)
    return parser


def _version() -> str:
    """refinterp's version (refinterp/__init__.py; the package metadata reads it from there,
    and importlib.metadata would cost ~10 ms of start-up on every command)."""
    from refinterp import __version__

    return __version__


def command_named(argv: list[str]) -> str | None:
    """The command of a command line when it is plain to see — the first argument, or the
    second after --debug — else None (then every command's parser is built: help, a
    misspelt command, options before the command)."""
    first = 1 if argv[:1] == ["--debug"] else 0
    name = argv[first] if len(argv) > first else None
    return name if name in COMMANDS else None


def preprocess(argv: list[str]) -> list[str]:
    """The command line as argparse is to read it: an `expr` expression that starts with '-'
    (`refinterp expr -inf`) is marked as no option (cmd_expr.expression_first)."""
    if "expr" not in argv:
        return argv
    return command_module("expr").expression_first(argv)


_SKIPPING_FINAL_COLLECTION: list[bool] = []


def _skip_final_collection() -> None:
    """Let the process end without Python's final garbage collection (docs/performance.md
    "Start-up"): a full pass over every object numpy, refinterp and the parsed modules made,
    a sixth of a one-op `eval`, which frees nothing the ending process would not. Registered
    with atexit, so it acts only when the process ends (an in-process caller of `main` keeps
    its collector meanwhile), after every exit handler and `finally` has run."""
    if not _SKIPPING_FINAL_COLLECTION:
        _SKIPPING_FINAL_COLLECTION.append(True)
        atexit.register(gc.disable)


def _import_api_uncollected() -> None:
    """Import `refinterp.api` (NumPy, the language, the engines: every command goes through
    it) with the collector paused, then freeze what the imports made (`gc.freeze`): objects
    that live as long as the process, which a collection during the imports, or any later
    one, would traverse for nothing (docs/performance.md "Start-up"). For a command-line
    process only: an in-process caller of `main` keeps its collector as it is."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        import refinterp.api  # noqa: F401 - imported here for the collector's sake
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `refinterp` console script. Without `argv` (the process's own
    command line) stdout and stderr are guarded: one that cannot be written ends the process
    with exit status 1 — a message on stderr for stdout, nothing for stderr itself — or 0
    when the reader of stdout went away (a broken pipe); never a traceback. An in-process
    caller (`argv` given) keeps its streams as they are."""
    _skip_final_collection()
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)  # compile-time ints are unbounded; print them whole
    if argv is not None:
        return _command(list(argv), process=False)
    if "_ARGCOMPLETE" in os.environ:  # a shell asking for completions: answered, then exit
        command_module("completion").complete(build_parser)
    guard_streams()
    try:
        try:
            status = _command(sys.argv[1:], process=True)
        finally:  # also before argparse's SystemExit (--help, --version, misuse)
            sys.stdout.flush()
        sys.stderr.flush()
        return status
    except StreamError as error:
        return _stream_failed(error)


def command_parser(parser: argparse.ArgumentParser,
                   args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command `args` ran — `refinterp golden build`'s for `golden
    build` — so that misuse found after parsing (UsageError) prints that command's usage, as
    argparse does for the misuse it finds itself."""
    current = parser
    while True:
        actions = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = getattr(args, actions[0].dest, None) if actions else None
        if chosen not in (actions[0].choices if actions else {}):
            return current
        current = actions[0].choices[chosen]


def _stream_failed(error: StreamError) -> int:
    """The exit status when stdout or stderr could not be written: 0 for a broken pipe on
    stdout (the reader has what it wanted), else 1, with a message on stderr when it is
    stdout that failed."""
    settle_streams()
    if error.stream.name == "stdout" and error.broken_pipe:
        return EXIT_OK
    if error.stream.name == "stdout":
        try:
            sys.stderr.write(render(Diagnostic(f"{error}; the output is incomplete",
                                               code="E0801")) + "\n")
            sys.stderr.flush()
        except StreamError:
            settle_streams()
    return EXIT_DIAGNOSTIC


def _command(arguments: list[str], process: bool) -> int:
    """Parse and run one command line; its exit status. A failing stdout or stderr
    (StreamError) is left to `main`."""
    parser = build_parser(command_named(arguments))
    args, unknown = parser.parse_known_args(preprocess(arguments))
    if unknown:  # said with the usage of the command misused (argparse: the top level's)
        top_level = arguments[:arguments.index(args.command)]  # before the command's name
        misused = parser if unknown[0] in top_level else command_parser(parser, args)
        misused.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.argv = arguments  # as given (eval --save-case records the command)
    out = Output(json_mode=getattr(args, "json", False) is True)  # check: --json FILE
    run = command_module(args.command).run
    try:
        check_paths(args)
        if process:
            _import_api_uncollected()
        return run(args, out)
    except StreamError:
        raise
    except Diagnostic as diag:
        out.error(diag)
        return EXIT_DIAGNOSTIC
    except UsageError as exc:
        misused = command_parser(parser, args)
        misused.print_usage(sys.stderr)
        sys.stderr.write(f"{misused.prog}: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except MemoryError:  # where the run could not say more (refinterp.api names the operator)
        from refinterp.api import out_of_memory

        out.error(out_of_memory(f"running 'refinterp {args.command}'"))
        return EXIT_DIAGNOSTIC
    except Exception as exc:  # a bug: never show a traceback unless asked
        if args.debug:
            raise
        sys.stderr.write(f"refinterp: internal error: {type(exc).__name__}: {exc}\n"
                         "  this is a bug in refinterp; rerun with --debug for details\n")
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
