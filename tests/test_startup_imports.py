"""Start-up (docs/performance.md "Start-up"): what a cold command imports and builds. No
timings are asserted (tools/bench_startup.py measures them); these tests keep the choices
that made start-up fast from being undone unnoticed, and check that each changes nothing a
user sees: a command's parser built alone is the one built with all the others, and a
command-line process that freezes its start-up objects computes what an in-process call does."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from refinterp.cli import COMMANDS, build_parser, command_named, main, preprocess

ROOT = Path(__file__).resolve().parent.parent


def run_python(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env, check=False, cwd=ROOT)


def test_a_run_imports_no_signatures_printer_or_json() -> None:
    """`refinterp.api` and `refinterp.io` leave what only listings, formatting, JSON and
    did-you-mean hints need to the first use."""
    later = ["refinterp.signature", "refinterp.syntax.printer", "json", "difflib", "shlex"]
    done = run_python("import sys, refinterp.api, refinterp.io, refinterp.cli\n"
                      f"print([m for m in {later!r} if m in sys.modules])")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_names_imported_on_first_use_are_the_same_objects() -> None:
    from refinterp import api, signature

    assert api.stdlib_modules is signature.stdlib_modules
    assert api.OperatorSignature is signature.OperatorSignature
    assert "stdlib_modules" in api.__all__
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        api.nope  # noqa: B018


def _subparser(parser: object, command: str) -> object:
    return parser._subparsers._group_actions[0].choices[command]  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_parser_built_alone_is_the_same(command: str) -> None:
    full, alone = build_parser(), build_parser(command)
    assert alone.format_usage() == full.format_usage()
    assert _subparser(alone, command).format_help() == _subparser(full, command).format_help()
    assert _subparser(alone, command).format_usage() == \
        _subparser(full, command).format_usage()


@pytest.mark.parametrize("argv", [
    ["eval", "--op", "math.add", "--random", "x=real[2]", "--random", "y=real[2]", "--json"],
    ["--debug", "shapes", "--op", "nn.relu", "--input", "x=real[2]"],
    ["expr", "-7 / 2", "--profile", "khronos"],
    ["fmt", "--check", "a.sknd"],
    ["ops", "nn", "--json"],
    ["golden", "verify", "golden"],
    ["einsum", "ij,jk->ik", "--emit"],
])
def test_arguments_parse_alike_with_one_command_or_all(argv: list[str]) -> None:
    name = command_named(argv)
    assert name is not None
    assert vars(build_parser(name).parse_args(preprocess(argv))) == \
        vars(build_parser().parse_args(preprocess(argv)))


def test_which_command_lines_build_one_parser() -> None:
    assert command_named(["eval", "x.sknd"]) == "eval"
    assert command_named(["--debug", "einsum", "ij->ji"]) == "einsum"
    for argv in ([], ["--help"], ["--version"], ["evl", "x"], ["--debug"], ["--debug", "-h"],
                 ["x.sknd", "eval"], ["--json", "eval"]):
        assert command_named(argv) is None  # every parser: help, versions, misspellings


def test_misuse_reads_the_same_with_one_parser(capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import refinterp.cli as cli

    for argv in (["eval", "--engine", "fast"], ["eval", "--nope"], ["evl"], ["--help"],
                 ["eval", "--help"], ["expr"]):
        with pytest.raises(SystemExit) as one:
            main(argv)
        seen = capsys.readouterr()
        with monkeypatch.context() as patch:  # every command's parser, as for a misspelling
            patch.setattr(cli, "command_named", lambda argv: None)
            with pytest.raises(SystemExit) as everything:
                main(argv)
        assert one.value.code == everything.value.code
        assert capsys.readouterr() == seen


def test_a_command_line_process_freezes_its_start_up_objects(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`main()` of a process (argv None) imports the API with the collector paused and freezes
    what it made; the results are those of an in-process call, which leaves the collector
    alone."""
    argv = ["eval", "--op", "math.add", "--random", "x=real[2,3]", "--random", "y=real[2,3]",
            "--seed", "5"]
    frozen, enabled = gc.get_freeze_count(), gc.isenabled()
    assert main(argv) == 0
    assert (gc.get_freeze_count(), gc.isenabled()) == (frozen, enabled)
    expected = capsys.readouterr().out
    done = run_python("import gc, sys\nfrom refinterp.cli import main\nsys.argv[0] = 'refinterp'\n"
                      "status = main()\nprint(status, gc.get_freeze_count() > 0, gc.isenabled(),"
                      " file=sys.stderr)", *argv)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
    assert done.stderr.split() == ["0", "True", "True"]


def test_node_inits_are_the_code_their_own_source_compiles_to() -> None:
    """syntax/ast.py compiles one __init__ per shape of node class and renames it for each
    class: the result must be, class by class, the code the class's own source gives (compiled
    as ast.py compiles it: postponed annotations) — all but the columns in its table of
    positions, which differ with the lengths of the names (the source is a string no
    traceback shows; the lines are the same)."""
    import __future__
    import dataclasses
    import inspect

    from refinterp.syntax import ast

    classes = [c for c in vars(ast).values() if isinstance(c, type) and
               issubclass(c, ast.Node) and c is not ast.Node]
    assert len(classes) > 40 and len(ast._INIT_CODE) < len(classes)
    for cls in classes:
        fields = dataclasses.fields(cls)
        namespace: dict = {}
        exec(compile(ast._init_source(fields, ast._parameters(fields)), "<string>", "exec",
                     __future__.annotations.compiler_flag, dont_inherit=True), {}, namespace)
        values = [object.__setattr__, *(f.default for f in fields)]
        expected = namespace["make"](*values)
        init = cls.__init__
        assert init.__code__.replace(co_linetable=expected.__code__.co_linetable) == \
            expected.__code__, cls.__name__
        assert [line for _, _, line in init.__code__.co_lines()] == \
            [line for _, _, line in expected.__code__.co_lines()]
        assert init.__code__.co_qualname == expected.__code__.co_qualname
        assert init.__defaults__ == expected.__defaults__, cls.__name__
        assert init.__kwdefaults__ == expected.__kwdefaults__, cls.__name__
        assert [c.cell_contents for c in init.__closure__] == [object.__setattr__]
        assert inspect.signature(cls) == inspect.signature(cls.__init__).replace(
            parameters=list(inspect.signature(cls.__init__).parameters.values())[1:])
