"""`auto`'s engine choice (refinterp.lower.engines.choose): a cost model from what is known
before running, said under `--verbose`; and parameters of the right dtype reach the engines
without a copy. Only decisions are asserted here, never times (benchmarks: tools/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from refinterp import api
from refinterp.api import run_operator
from refinterp.lower import engines


def choices(name: str, inputs: dict, attributes: dict | None = None,
            file: Path | None = None) -> list[tuple[str, engines.Choice, dict]]:
    """(operator, auto's choice, outputs) per @lower instance the operator runs."""
    found: list[tuple[str, engines.Choice, dict]] = []
    auto = engines.make_engine("auto")

    def capture(instance: Any, arrays: dict, profile: Any) -> dict:
        outputs = auto(instance, arrays, profile)
        found.append((instance.definition.name, engines.choose(instance, arrays), outputs))
        return outputs

    run_operator(name, inputs, attributes or {}, file=file, engine=capture)
    return found


def test_a_tiny_operator_runs_where_it_is_estimated_cheaper() -> None:
    [(_, choice, outputs)] = choices("math.add", {"x": np.ones((2, 3)), "y": np.ones((2, 3))})
    cheaper = "compiled" if choice.compiled_us < choice.vector_us else "vector"
    assert choice.engine == cheaper and "estimated" in choice.reason
    np.testing.assert_array_equal(outputs["z"], np.full((2, 3), 2.0))


def test_a_4096_element_relu_is_vectorised() -> None:
    x = np.random.default_rng(0).standard_normal((1, 4096))
    [(_, choice, outputs)] = choices("nn.relu", {"x": x})
    assert choice.engine == "vector" and choice.vector_us < choice.compiled_us
    np.testing.assert_array_equal(outputs["y"], np.maximum(x, 0.0))


def test_many_sequential_steps_run_on_the_compiled_engine() -> None:
    """argmax along a long axis: the vector engine would run 4096 steps of 64 cells."""
    x = np.random.default_rng(1).standard_normal((64, 4096))
    [(_, choice, outputs)] = choices("math.argmax", {"input": x}, {"axis": 1})
    assert choice.engine == "compiled" and choice.compiled_us < choice.vector_us
    np.testing.assert_array_equal(outputs["output"][:, 0], x.argmax(axis=1))
    [(_, short, _)] = choices("math.argmax", {"input": x.T.copy()}, {"axis": 1})
    assert short.engine == "vector"  # 64 steps of 4096 cells


def test_a_formula_the_vector_engine_refuses_runs_on_the_compiled_engine(tmp_path: Path
                                                                         ) -> None:
    text = ("operator nz {\n    @input { x: real[n]; }\n    @output { y: int[k|n]; }\n"
            "    @lower {\n        y[k] = i, i < n | x[i] != 0.0;\n    }\n}\n")
    path = tmp_path / "nz.sknd"
    path.write_text(text)
    [(_, choice, outputs)] = choices("nz", {"x": np.array([0.0, 2.0, 0.0, 3.0])}, file=path)
    assert choice.engine == "compiled"
    assert choice.reason == ("the vector engine refuses the formula at line 5: it counts the "
                             "dynamic extent 'k'")
    np.testing.assert_array_equal(outputs["y"], [1, 3])


def test_verbose_says_the_choice_and_its_reason(tmp_path: Path, capsys) -> None:
    from refinterp.cli import main

    path = tmp_path / "relu.sknd"
    path.write_text("import nn;\ngraph G {\n    @input { x: real[1, 4096]; }\n"
                    "    @output { y: real[1, 4096]; }\n    @compose { y = nn.relu(x); }\n}\n")
    assert main(["eval", str(path), "--random", "x", "--verbose"]) == 0
    err = capsys.readouterr().err
    assert "engine: relu (" in err and "auto chose vector (estimated " in err, err
    assert " vector, " in err and " compiled): vector" in err, err


def test_params_of_the_right_dtype_reach_the_engine_uncopied(tmp_path: Path) -> None:
    path = tmp_path / "main.sknd"
    path.write_text("import math;\ngraph G {\n    @input { x: real[4]; }\n"
                    "    @output { y: real[4]; }\n"
                    "    @variable { w: real[4]; n: int[2]; }\n"
                    "    @compose { y = math.add(x, w); }\n}\n")
    w, n = np.arange(4.0), np.arange(2, dtype=np.int64)
    seen: list[dict] = []
    auto = engines.make_engine("auto")

    def capture(instance: Any, arrays: dict, profile: Any) -> dict:
        seen.append(arrays)
        return auto(instance, arrays, profile)

    run = api.evaluate(api.load(path), inputs={"x": np.ones(4)}, params={"w": w, "n": n},
                      engine=capture)
    assert any(value is w for arrays in seen for value in arrays.values())
    assert run.params["main.G.w"] is w and run.params["main.G.n"] is n
    np.testing.assert_array_equal(run.outputs["y"], w + 1.0)


def test_the_choice_never_depends_on_earlier_runs(tmp_path: Path) -> None:
    """An instance invoked again and again gets the same engine every time, and a program's
    runs in one process give the same bits (the engines differ in reordered sums' last bits,
    so an engine chosen by the history of runs would not)."""
    steps = "\n".join(f"        t{k + 1} = twice(t{k});" for k in range(8))
    path = tmp_path / "chain.sknd"
    path.write_text("operator twice {\n    @input { x: real[n]; }\n    @output { y: real[n]; }\n"
                    "    @lower { y[i] = 2.0 * x[i], i < n; }\n}\n\n"
                    "graph G {\n    @input { x: real[16]; }\n    @output { y: real[16]; }\n"
                    f"    @compose {{\n        t0 = x;\n{steps}\n        y = t8;\n    }}\n}}\n")
    seen: list[str] = []
    engine = engines.make_engine("auto", log=lambda instance, how: seen.append(how.split()[2]))
    program = api.load(path)
    x = np.arange(16.0)
    runs = [api.evaluate(program, inputs={"x": x}, engine=engine).outputs["y"]
            for _ in range(3)]
    assert len(set(seen)) == 1 and len(seen) == 24
    np.testing.assert_array_equal(runs[0], x * 2.0 ** 8)
    assert all(np.array_equal(run, runs[0]) for run in runs)
    # explicitly compiling the instance's code first changes nothing either
    api.evaluate(program, inputs={"x": x}, engine="compiled")
    api.evaluate(program, inputs={"x": x}, engine=engine)
    assert len(set(seen)) == 1
