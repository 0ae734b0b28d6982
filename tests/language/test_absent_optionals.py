"""An absent optional value reaching an output (§2.10: optional inputs may be omitted; an
output may be declared optional): `y = o;` with `o` omitted leaves an optional output absent,
and is a positioned diagnostic for an output that is not optional — never an internal error
(it was an AttributeError in the executor, in eval and shapes); `y = { yield o; };` is refused
when loaded ("The yielded results must not be optional expressions", E1307). And
`int(inf)` / `int(-inf)` as slice bounds clip like any bound out of range (§2.4)."""

from __future__ import annotations

from pathlib import Path

import pytest

import refinterp.api as ri
from refinterp.cli import main

PROGRAM = """graph G {{
    @input {{ x: real[2]; o: optional real[2]; }}
    @output {{ y: {output}real[2]; }}
    @compose {{ {body} }}
}}
"""
BODIES = ["y = o;"]


@pytest.mark.parametrize("output", ["", "optional "])
def test_a_block_yielding_an_absent_optional_is_refused(output: str) -> None:
    with pytest.raises(ri.Error) as info:
        ri.load_source(PROGRAM.format(output=output, body="y = { yield o; };"), path="g.sknd")
    assert info.value.code == "E1307" and info.value.span.line == 4


@pytest.mark.parametrize("body", BODIES)
def test_an_absent_optional_leaves_an_optional_output_absent(body: str) -> None:
    program = ri.load_source(PROGRAM.format(output="optional ", body=body), path="g.sknd")
    assert ri.evaluate(program, inputs={"x": [1.0, 2.0]}).outputs == {}
    given = ri.evaluate(program, inputs={"x": [1.0, 2.0], "o": [3.0, 4.0]}).outputs
    assert given["y"].tolist() == [3.0, 4.0]


@pytest.mark.parametrize("command", ["eval", "shapes"])
@pytest.mark.parametrize("body", BODIES)
def test_an_absent_optional_for_a_required_output_is_a_diagnostic(tmp_path: Path, capsys,
                                                                  body: str,
                                                                  command: str) -> None:
    path = tmp_path / "g.sknd"
    path.write_text(PROGRAM.format(output="", body=body))
    extra = ["--input", "x=[1.0, 2.0]"] if command == "eval" else []
    assert main([command, str(path), *extra]) == 1
    err = capsys.readouterr().err
    assert f"{path}:3:15: error: output 'y' is composed as null" in err
    assert "[E0600]" in err and "internal error" not in err


@pytest.mark.parametrize("expr, value", [
    ("[1, 2, 3][:int(inf)]", (1, 2, 3)), ("[1, 2, 3][int(-inf):2]", (1, 2)),
    ("[1, 2, 3][int(inf):]", ()), ("[1, 2, 3][::int(inf)]", (1,)),
    ("[1, 2, 3][::int(-inf)]", (3,))])
def test_infinite_slice_bounds_clip(expr: str, value: tuple) -> None:
    assert ri.evaluate_expression(expr) == value
