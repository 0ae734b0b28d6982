"""Where the command line writes: results to stdout, diagnostics to stderr (rich on a terminal),
or, with --json, one JSON object on stdout."""

from __future__ import annotations

import sys
from typing import Any

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
        import json  # only with --json (start-up time)

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
            self._console.print(styled)
        else:
            sys.stderr.write(text + "\n")
