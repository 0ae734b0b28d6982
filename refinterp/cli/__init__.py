"""The `refinterp` command line: a thin layer over `refinterp.api` — argument parsing
(`arguments`), the commands (`commands`: file I/O through `refinterp.io`, rendering), and where
output goes (`output`). No SkriptND semantics live here: the package imports nothing of
refinterp but `api`, `io`, `core.diagnostics` and `language.values`.

Exit status: 0 success, 1 a diagnostic about the user's input, 2 command-line misuse,
3 an internal error (a bug in refinterp: rerun with --debug for the traceback).
"""

from __future__ import annotations

import atexit
import gc
import sys
from typing import Sequence

from refinterp.cli.arguments import build_parser, check_paths, command_named, expression_first
from refinterp.cli.commands import COMMANDS, progress_line
from refinterp.cli.output import (EXIT_DIAGNOSTIC, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, Output,
                                  UsageError)
from refinterp.core.diagnostics import Diagnostic

__all__ = ["main", "build_parser", "progress_line"]


_SKIPPING_FINAL_COLLECTION: list[bool] = []


def _skip_final_collection() -> None:
    """Let the process end without Python's final garbage collection (docs/architecture.md
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
    one, would traverse for nothing (docs/architecture.md "Start-up"). For a command-line
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
    """Entry point of the `refinterp` console script."""
    _skip_final_collection()
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)  # compile-time ints are unbounded; print them whole
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(command_named(arguments))
    args = parser.parse_args(expression_first(arguments))
    args.argv = arguments  # as given (eval --save-case records the command)
    out = Output(json_mode=getattr(args, "json", False) is True)  # check: --json FILE
    run = COMMANDS[args.command]
    try:
        check_paths(args)
        if argv is None:  # the process's own command line, not an in-process caller
            _import_api_uncollected()
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
