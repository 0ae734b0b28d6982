"""Where the command line writes: results to stdout, diagnostics to stderr (rich on a terminal),
or, with --json, one JSON object on stdout.

The command line's own process writes through `GuardedStream`s (`guard_streams`): a stdout or
stderr that is closed, full (/dev/full) or whose reader went away (a broken pipe) raises
`StreamError` instead of an OSError or AttributeError, and text the stream's encoding cannot
hold (PYTHONIOENCODING=ascii, a non-ASCII path) is written with backslash escapes
(docs/api.md "Exit status")."""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, TextIO

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
        self._stdout_reserved = False

    def reserve_stdout(self) -> None:
        """stdout carries a report of its own (`check --json -`): from now on the readable
        results and tables go to stderr, so that stdout holds nothing but that report."""
        self._stdout_reserved = True

    @property
    def stream(self) -> Any:
        """Where readable results go: stdout, or stderr once stdout is reserved."""
        return sys.stderr if self._stdout_reserved else sys.stdout

    def result(self, text: str) -> None:
        self.stream.write(text if text.endswith("\n") else text + "\n")

    def data(self, data: Any) -> None:
        """The result of a --json command (warnings added as "warnings" when there are any)."""
        if isinstance(data, dict) and self.warnings:
            data = {**data, "warnings": [w.as_json() for w in self.warnings]}
        import json  # only with --json (start-up time)

        self.result(json.dumps(data))

    def table(self, header: list[str], rows: list[list[str]]) -> None:
        """A small table: rich when stdout is a terminal, aligned plain text otherwise."""
        if self.stream.isatty():
            from rich.console import Console
            from rich.table import Table

            table = Table(*header)
            for row in rows:
                table.add_row(*row)
            Console(stderr=self._stdout_reserved).print(table)
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
            import json

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
            # soft_wrap: the terminal wraps a long line itself, rich does not break it (a
            # path or a command stays whole, and copying it gives the line as written)
            self._console.print(styled, soft_wrap=True)
        else:
            sys.stderr.write(text + "\n")


class StreamError(Exception):
    """Writing to stdout or stderr failed: the stream is closed (`error` None), its device
    full, or its reader gone (a broken pipe)."""

    def __init__(self, stream: "GuardedStream", error: OSError | None) -> None:
        self.stream, self.error = stream, error
        reason = error.strerror if error is not None and error.strerror else "it is closed"
        super().__init__(f"cannot write to {stream.name}: {reason}")

    @property
    def broken_pipe(self) -> bool:
        """The reader went away (`refinterp ... | head -c1`)."""
        return isinstance(self.error, BrokenPipeError)


class GuardedStream:
    """sys.stdout or sys.stderr of the command line's process: a write or flush that fails
    raises StreamError (and marks the stream `failed`); a stream closed when the process
    started (`stream` None) fails at its first write and is never a terminal. Everything else
    is the stream's own."""

    def __init__(self, stream: TextIO | None, name: str, fd: int) -> None:
        self.stream, self.name, self.fd = stream, name, fd
        self.failed = False

    def write(self, text: str) -> int:
        if self.stream is None:
            raise self._fail(None)
        try:
            return self.stream.write(text)
        except OSError as error:
            raise self._fail(error) from None

    def flush(self) -> None:
        if self.stream is None:
            return
        try:
            self.stream.flush()
        except OSError as error:
            raise self._fail(error) from None

    def isatty(self) -> bool:
        return self.stream is not None and self.stream.isatty()

    def fileno(self) -> int:
        if self.stream is None:
            raise OSError(errno.EBADF, f"{self.name} is closed")
        return self.stream.fileno()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)

    def _fail(self, error: OSError | None) -> StreamError:
        self.failed = True
        return StreamError(self, error)


def guard_streams() -> None:
    """Make the process's stdout and stderr `GuardedStream`s, writing what their encoding
    cannot hold as backslash escapes. A descriptor 1 or 2 closed at start (`>&-`) is held
    open on /dev/null, so that no file refinterp opens takes its number (and is written to as
    stdout); the stream still counts as closed."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        stream = getattr(sys, name)
        if isinstance(stream, GuardedStream):
            continue
        if stream is None:
            _hold_on_null(fd)
        elif hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
        setattr(sys, name, GuardedStream(stream, name, fd))


def settle_streams() -> None:
    """After a stream failed: point its descriptor at /dev/null, so that what is still
    buffered for it is dropped quietly when the process ends (rather than failing again, with
    a message and exit status 120)."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, GuardedStream) and stream.failed and stream.stream is not None:
            _hold_on_null(stream.fd, replace=True)


def _hold_on_null(fd: int, replace: bool = False) -> None:
    """Open /dev/null on descriptor `fd` if it is closed (or, with `replace`, in any case)."""
    if not replace:
        try:
            os.fstat(fd)
            return
        except OSError:
            pass
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    if null != fd:
        os.dup2(null, fd)
        os.close(null)


def progress_line(running: list[str], seconds: float) -> None:
    """A line on stderr while a long run lasts: which operators are running, for how long
    (`eval --progress`)."""
    sys.stderr.write(f"refinterp: still running {' > '.join(running)} ({seconds:.0f} s)\n")
    sys.stderr.flush()
