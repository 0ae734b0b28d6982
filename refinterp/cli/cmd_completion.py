"""`refinterp completion SHELL`: the shell code that completes refinterp's commands and
options in bash, zsh or fish, made by argcomplete (the optional extra `completion`;
docs/harness.md "Command-line conveniences"). The completion itself is answered by `main`,
which hands the whole parser to argcomplete when the shell asks (`complete`)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from refinterp.cli.output import EXIT_OK, Output
from refinterp.core.diagnostics import ArgumentDiagnostic

SHELLS = ("bash", "zsh", "fish")
INSTALL_HINT = "argcomplete is not installed: pip install 'refinterp[completion]'"


def add_parser(commands: Any) -> None:
    """Register `completion`."""
    completion = commands.add_parser(
        "completion", help="print the shell code that completes refinterp's commands",
        epilog="bash: eval \"$(refinterp completion bash)\" in ~/.bashrc; zsh: the same in "
               "~/.zshrc; fish: refinterp completion fish | source in config.fish")
    completion.add_argument("shell", choices=SHELLS, help="the shell")


def run(args: argparse.Namespace, out: Output) -> int:
    """Print the completion code of `args.shell`."""
    try:
        import argcomplete
    except ImportError:
        raise ArgumentDiagnostic(INSTALL_HINT, code="E0901") from None
    out.result(argcomplete.shellcode(["refinterp"], shell=args.shell))
    return EXIT_OK


def complete(parser_of: Any) -> None:
    """When the shell asks for completions (argcomplete's environment variable is set), answer
    with the parser `parser_of()` builds and end the process; otherwise do nothing."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    try:
        import argcomplete
    except ImportError:
        return
    argcomplete.autocomplete(parser_of())
