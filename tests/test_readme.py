"""README.md's examples run: every `$ refinterp ...` command that shows its output prints that
output (a line `...` stands for any lines; files shown with `$ cat NAME` are created first), and
the Python block runs. Commands on the illustrative `my_model/` folder are not run."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from refinterp.cli import main
from testsupport.sessions import blocks as readme_blocks
from testsupport.sessions import matches
from testsupport.sessions import sessions as readme_sessions

README = Path(__file__).resolve().parent.parent / "README.md"


def blocks(language: str = "") -> list[str]:
    return readme_blocks(README, language)


def sessions() -> list[tuple[str, list[str]]]:
    """(command, expected output lines) for every `$ ` line of the plain code blocks."""
    return readme_sessions(README)


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
