"""docs/golden.md's walk-through runs: the ```session blocks of its section "Your own operator as
a conformance suite" are one shell session, run in order in one folder — `$ cat NAME` lines
create the file shown under them, `$ refinterp ...` lines run and print what is shown under them
(a line `...` stands for any lines; a command shown without output only has to succeed; one
that shows an error or a failing case must exit 1)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from refinterp.cli import main
from testsupport.paths import REPO_ROOT
from testsupport.sessions import blocks, block_sessions, matches

GOLDEN_DOC = REPO_ROOT / "docs" / "golden.md"


def walkthrough() -> list[tuple[str, list[str]]]:
    return [s for block in blocks(GOLDEN_DOC, "session") for s in block_sessions(block)]


def test_the_walkthrough_is_there() -> None:
    commands = [command.split()[:3] for command, _ in walkthrough()]
    for expected in (["refinterp", "eval"], ["refinterp", "golden", "generate"],
                     ["refinterp", "golden", "verify"], ["refinterp", "check"],
                     ["refinterp", "golden", "index"]):
        assert any(c[:len(expected)] == expected for c in commands), expected


def test_the_walkthrough_runs(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    # the session's back ends run as `python3 ...`: this interpreter, which has NumPy
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep
                       + os.environ.get("PATH", ""))
    for command, expected in walkthrough():
        if command.startswith("cat "):
            (tmp_path / command[4:].strip()).write_text("\n".join(expected) + "\n")
            continue
        words = shlex.split(command, comments=True)
        assert words[0] == "refinterp", command
        status = main(words[1:])
        captured = capsys.readouterr()
        actual = (captured.out + captured.err).rstrip("\n").splitlines()
        if expected:
            assert matches(expected, actual), f"$ {command}\n" + "\n".join(actual)
        failing = any("error:" in line or line.startswith("FAIL ") for line in expected)
        assert status == (1 if failing else 0), \
            f"$ {command} exited {status}\n" + "\n".join(actual)
