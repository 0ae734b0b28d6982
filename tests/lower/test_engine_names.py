"""The @lower engines by name (refinterp.lower.engines): `reference` (the definition),
`compiled`, `vector` and `auto` are each selectable from the API and the command line and agree
on standard operators (expected values from independent NumPy here); `scalar` is still accepted
as `compiled`; the diagnostic code of a failing iteration is the one chosen where it is raised,
the same on every engine."""

from __future__ import annotations

import numpy as np
import pytest

from refinterp import api
from refinterp.cli import main
from refinterp.lower import engines

RNG = np.random.default_rng(41)
NAMES = ("reference", "compiled", "vector", "auto")


def test_the_engine_names() -> None:
    assert engines.ENGINE_NAMES == NAMES and engines.DEFAULT_ENGINE == "auto"
    assert engines.ENGINE_ALIASES == {"scalar": "compiled"}
    assert "scalar" not in engines.ENGINE_NAMES  # accepted, not listed
    with pytest.raises(ValueError, match="choose one of reference, compiled, vector, auto"):
        engines.make_engine("fast")


def _logged(name: str, inputs: dict, attributes: dict | None = None, engine: str = "auto"
            ) -> tuple[dict, list[str]]:
    said: list[str] = []
    run = api.evaluate(name, inputs=inputs, attributes=attributes or {}, engine=engine,
                       hooks=api.Hooks(log=lambda instance, how: said.append(how)))
    return run.outputs, said


STANDARD = [  # (operator, inputs, attributes, output, NumPy expectation)
    ("linalg.matmul", {"A": RNG.standard_normal((3, 4)), "B": RNG.standard_normal((4, 2))}, {},
     "Z", lambda A, B: A @ B),
    ("nn.relu", {"x": RNG.standard_normal((2, 5))}, {}, "y", lambda x: np.maximum(x, 0.0)),
    ("math.sum_reduce", {"input": RNG.standard_normal((3, 4))}, {"axes": [1]}, "output",
     lambda input: input.sum(axis=1, keepdims=True)),
    ("math.argmax", {"input": RNG.standard_normal((4, 6))}, {"axis": 1}, "output",
     lambda input: input.argmax(axis=1)[:, None]),
]


@pytest.mark.parametrize("name, inputs, attributes, output, expected", STANDARD,
                         ids=[case[0] for case in STANDARD])
def test_every_engine_by_name_agrees_with_numpy(name, inputs, attributes, output, expected):
    outputs = {}
    for engine in NAMES:
        values, said = _logged(name, inputs, attributes, engine)
        outputs[engine] = values[output]
        assert said, engine
        if engine == "auto":
            assert said[0].startswith("auto chose "), said
        else:  # the engine says its own name first (`eval --verbose`)
            assert said[0].split(";")[0].split(" ")[0] == engine, said
    want = expected(*inputs.values())
    for engine, got in outputs.items():
        assert got.shape == want.shape and got.dtype == outputs["reference"].dtype, engine
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=engine)
    # the compiled engine computes the reference's function bit for bit
    np.testing.assert_array_equal(outputs["compiled"], outputs["reference"])


def test_scalar_is_the_compiled_engine() -> None:
    x = RNG.standard_normal((2, 3))
    old, said_old = _logged("nn.relu", {"x": x}, engine="scalar")
    new, said_new = _logged("nn.relu", {"x": x}, engine="compiled")
    np.testing.assert_array_equal(old["y"], new["y"])
    assert said_old == said_new and said_new[0].startswith("compiled; ")


def test_an_unknown_engine_is_an_argument_error() -> None:
    with pytest.raises(api.Diagnostic, match="unknown engine 'fast'; choose one of reference, "
                                             "compiled, vector, auto"):
        api.evaluate("nn.relu", inputs={"x": np.ones(2)}, engine="fast")


@pytest.mark.parametrize("engine", [*NAMES, "scalar"])
def test_each_engine_runs_from_the_command_line(engine, tmp_path, capsys) -> None:
    out = tmp_path / "out.npz"
    assert main(["eval", "--op", "nn.relu", "--input", "x=[-1.5, 2.0, 3.0]",
                 "--engine", engine, "--verbose", "-o", str(out)]) == 0
    with np.load(out) as saved:
        np.testing.assert_array_equal(saved["y"], [0.0, 2.0, 3.0])
    said = capsys.readouterr().err
    ran = "auto chose " if engine == "auto" else engines.ENGINE_ALIASES.get(engine, engine)
    assert "engine: relu (" in said and f"): {ran}" in said, said


def test_the_command_line_lists_the_engine_names(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    text = capsys.readouterr().out
    assert "--engine {reference,compiled,vector,auto}" in text
    with pytest.raises(SystemExit) as misuse:
        main(["eval", "--engine", "fast"])
    assert misuse.value.code == 2


FAILING = [  # (formula, code, message)
    ("y[i] = x[i + 5], i < 3;", "E0501", "index [5] is out of range for 'x' of shape [3]"),
    ("y[i] = x[i] * 4611686018427387904 * 4, i < 3;", "E0502",
     "the int result 18446744073709551616 does not fit in int64"),
    ("y[i] = 1 / (x[i] - x[i]), i < 3;", "E0503", "integer division by zero (1 / 0)"),
    # a message quoting the user's text "out of range" is still no range error
    ('y[i] = x["out of range"], i < 3;', "E0503",
     'a tensor index must be an int; got "out of range"'),
]


@pytest.mark.parametrize("formula, code, message", FAILING, ids=[c[1] for c in FAILING])
def test_the_code_of_a_failing_iteration_is_the_same_on_every_engine(formula, code, message):
    program = api.load_source("operator f { @input { x: int[3]; } @output { y: int[3]; } "
                              f"@lower {{ {formula} }} }}")
    for engine in NAMES:
        with pytest.raises(api.Diagnostic) as caught:
            api.evaluate(program, inputs={"x": np.array([1, 2, 3])}, engine=engine)
        assert (caught.value.code, caught.value.message, caught.value.notes) == \
            (code, message, ["at i = 0"]), engine
