"""Command-line conveniences: shell completion (argcomplete, the extra `completion`), the
global -q/-v, py.typed shipped, long diagnostics not broken by the terminal renderer."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tomllib

import pytest

import refinterp
from refinterp.cli import main
from refinterp.cli.output import Output
from refinterp.core.diagnostics import Diagnostic
from refinterp.harness.report import write_json
from refinterp.harness.suite_run import Result
from testsupport.paths import REPO_ROOT


def completions(tmp_path, line: str) -> list[str]:
    """What the shell gets for `line`, the cursor at its end."""
    answer = tmp_path / "answer.txt"
    env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n", "COMP_LINE": line,
           "COMP_POINT": str(len(line)), "_ARGCOMPLETE_STDOUT_FILENAME": str(answer)}
    subprocess.run([sys.executable, "-c", "from refinterp.cli import main; main()"], env=env,
                   capture_output=True, timeout=60, check=True)
    return answer.read_text().split()


def test_the_shell_completes_commands_and_options(tmp_path) -> None:
    pytest.importorskip("argcomplete", reason="argcomplete is not installed")
    assert completions(tmp_path, "refinterp chec") == ["check"]
    assert "--html" in completions(tmp_path, "refinterp check --ht")


@pytest.mark.parametrize("shell, marker", [("bash", "complete"), ("zsh", "#compdef refinterp"),
                                           ("fish", "complete")])
def test_completion_prints_each_shells_code(capsys, shell, marker) -> None:
    pytest.importorskip("argcomplete", reason="argcomplete is not installed")
    assert main(["completion", shell]) == 0
    out = capsys.readouterr().out
    assert marker in out and "refinterp" in out


def saved_run(tmp_path) -> str:
    path = tmp_path / "run.json"
    write_json(path, [Result("nn.relu/a", "fail", "mismatch", "why", operator="nn.relu",
                             module="nn"),
                      Result("nn.tanh/b", "pass", operator="nn.tanh", module="nn")], "b", "s")
    return str(path)


def test_verbose_and_quiet_before_or_after_the_command(tmp_path, capsys) -> None:
    run = saved_run(tmp_path)
    for argv in (["-v", "report", run], ["report", run, "--verbose"]):
        assert main(argv) == 1
        assert ["nn.tanh", "1", "0", "0", "0", "0"] in \
            [line.split() for line in capsys.readouterr().out.splitlines()]
    assert main(["report", run]) == 1
    assert "nn.tanh" not in capsys.readouterr().out
    assert main(["--quiet", "report", run]) == 1
    assert "why" not in capsys.readouterr().out
    with pytest.raises(SystemExit) as misuse:
        main(["report", run, "-q", "-v"])
    assert misuse.value.code == 2


def test_py_typed_is_shipped() -> None:
    package = os.path.dirname(refinterp.__file__)
    assert os.path.isfile(os.path.join(package, "py.typed"))
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["refinterp"]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_diagnostic_is_not_broken_on_a_terminal(monkeypatch) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("COLUMNS", "80")
    message = "cannot read " + "/a/very/long/path" * 20 + ".npz"
    Output().diagnostic(Diagnostic(message, severity="warning"))
    lines = terminal.getvalue().splitlines()
    assert any(message in line for line in lines), lines
