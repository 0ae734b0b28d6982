"""Shell sessions written in Markdown: the `$ command` lines of a document's code blocks with the
output shown under each (a line `...` stands for any number of lines, `...` within a line for any text). README.md's examples and
the walk-through of docs/golden.md run through these helpers."""

from __future__ import annotations

import re
from pathlib import Path


def blocks(path: Path, language: str = "") -> list[str]:
    """The bodies of the code blocks of `path` opened with ```<language>."""
    return re.findall(rf"^```{language}\n(.*?)^```", path.read_text(), re.MULTILINE | re.DOTALL)


def block_sessions(block: str) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) for every `$ ` line of one block; a command continued
    with a trailing backslash is joined."""
    found = []
    lines = block.splitlines()
    index = 0
    while index < len(lines):
        if not lines[index].startswith("$ "):
            index += 1
            continue
        command = lines[index][2:]
        while command.endswith("\\"):
            index += 1
            command = command[:-1] + lines[index].strip()
        index += 1
        output = []
        while index < len(lines) and not lines[index].startswith("$ "):
            output.append(lines[index])
            index += 1
        found.append((command, output))
    return found


def sessions(path: Path, language: str = "") -> list[tuple[str, list[str]]]:
    """The sessions of every plain code block of `path`, in order."""
    return [session for block in blocks(path, language) for session in block_sessions(block)]


def matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line; a line `...` matches any number of lines, and `...` inside a line any
    text there (a time, a rate)."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[k:]) for k in range(len(actual) + 1))
    return bool(actual) and line_matches(expected[0], actual[0]) and \
        matches(expected[1:], actual[1:])


def line_matches(expected: str, actual: str) -> bool:
    """One line, trailing blanks ignored; `...` in `expected` stands for any text."""
    pattern = ".*".join(re.escape(part) for part in expected.rstrip().split("..."))
    return re.fullmatch(pattern, actual.rstrip()) is not None
