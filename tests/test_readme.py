"""README.md's examples run: every `$ refinterp ...` command that shows its output prints that
output (a line `...` stands for any lines; files shown with `$ cat NAME` are created first), and
the Python block runs. Commands on the illustrative `my_model/` folder are not run."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from refinterp.cli import main

README = Path(__file__).resolve().parent.parent / "README.md"


def blocks(language: str = "") -> list[str]:
    text = README.read_text()
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


def sessions() -> list[tuple[str, list[str]]]:
    """(command, expected output lines) for every `$ ` line of the plain code blocks."""
    found = []
    for block in blocks():
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


def matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line; a line `...` matches any number of lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[k:]) for k in range(len(actual) + 1))
    return bool(actual) and actual[0].rstrip() == expected[0].rstrip() and \
        matches(expected[1:], actual[1:])


RUNNABLE = [(c, o) for c, o in sessions() if c.startswith("refinterp ") and o
            and "my_model" not in c]


def test_readme_has_runnable_examples() -> None:
    assert len(RUNNABLE) >= 8


@pytest.mark.parametrize("command, expected", RUNNABLE, ids=[c for c, _ in RUNNABLE])
def test_readme_command(command: str, expected: list[str], tmp_path, monkeypatch,
                        capsys) -> None:
    monkeypatch.chdir(tmp_path)
    for cat, content in sessions():
        if cat.startswith("cat "):
            (tmp_path / cat[4:].strip()).write_text("\n".join(content) + "\n")
    words = [w for w in shlex.split(command, comments=True)][1:]
    words = [w.replace("spec_tests/", str(README.parent / "spec_tests") + "/") for w in words]
    status = main(words)
    captured = capsys.readouterr()
    actual = (captured.out + captured.err).rstrip("\n").splitlines()
    assert matches(expected, actual), "\n".join(actual)
    assert status == (1 if "error:" in "\n".join(expected) else 0)


def test_readme_python_block(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    for block in blocks("python"):
        exec(compile(block, "README.md", "exec"), {})
