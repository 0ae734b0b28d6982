"""`refinterp expr`: literal and JSON output, attributes, profiles, diagnostics."""

from __future__ import annotations

import json

import pytest

from refinterp.cli import main


def run(capsys, *args: str) -> tuple[int, str, str]:
    status = main(["expr", *args])
    captured = capsys.readouterr()
    return status, captured.out.strip(), captured.err


@pytest.mark.parametrize("expression, literal, as_json", [
    ("1 + 2", "3", 3),
    ("real(7) / 2.0", "3.5", 3.5),
    ("[1, 2] * 2", "[2, 4]", [2, 4]),
    ("c ? 1", "null", None),
    ("'a' \"b\"", '"ab"', "ab"),
    ("-inf", "-inf", float("-inf")),
    ("x > 2", "true", True),
    ("int(inf)", "int(inf)", float("inf")),
    ("[]", "[]", []),
])
def test_literal_and_json_output(capsys, expression, literal, as_json) -> None:
    options = ["--attrib", "c=false", "--attrib", "x=3"]
    status, out, _ = run(capsys, *options, "--", expression)  # `--`: EXPR may start with '-'
    assert status == 0 and out == literal
    status, out, _ = run(capsys, *options, "--json", "--", expression)
    assert status == 0 and json.loads(out) == as_json


def test_json_spells_infinities_as_javascript_does(capsys) -> None:
    assert run(capsys, "[inf, -inf]", "--json")[1] == "[Infinity, -Infinity]"


def test_attribute_values_are_literal_expressions(capsys) -> None:
    status, out, _ = run(capsys, "a + ..", "--attrib", "a=[1, 2, 3]")
    assert (status, out) == (0, "6")
    assert run(capsys, "s", "--attrib", "s='x'")[1] == '"x"'


def test_profiles(capsys) -> None:
    assert run(capsys, "-7 / 2")[1] == "-4"
    assert run(capsys, "-7 / 2", "--profile", "khronos")[1] == "-3"


def test_errors_are_diagnostics(capsys) -> None:
    status, _, err = run(capsys, "1 + true")
    assert status == 1 and err.startswith("<expr>:1:1: error: '+' needs operands of one type")
    status, _, err = run(capsys, "x", "--attrib", "x=[1, 2.0]")
    assert status == 1 and "<attrib x>:1:1" in err
    status, _, err = run(capsys, "x", "--attrib", "nonsense")
    assert status == 1 and "NAME=VALUE" in err
    status, _, err = run(capsys, "1 +")
    assert status == 1 and "expected an expression" in err
