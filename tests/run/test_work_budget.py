"""One work budget per run, a wall-clock timeout, and memory errors (docs/limits.md "The work of
a run", "Out of memory"): a run that asks for endless work ends in E1203 (the budget) or E1204
(the timeout), a MemoryError in E1205 — each a diagnostic with exit status 1, never a run that
does not end or an internal error.

The work a run does is counted here by hand from the programs (an invocation and a loop step
count STEP = 10^4 units each, a formula its iterations); the defaults are written out from
docs/limits.md."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
import pytest

import refinterp.api as ri
from refinterp.cli import main

PROGRAM = """import math;

operator nested {
    @attrib { n: int; m: int; }
    @input { x: real[]; }
    @output { y: real[]; }
    @compose {
        y = with a = x do..(n) {
            b = with c = a do..(m) math.add(c, c);
            yield b;
        };
    }
}

operator twice {
    @attrib { n: int; }
    @input { x: real[]; }
    @output { y: real[]; }
    @compose {
        y = n == 0 ? math.neg(x) : math.add(twice{n = n - 1}(x), twice{n = n - 1}(x));
    }
}

operator huge {
    @attrib { n: int; }
    @input { x: real[]; }
    @output { y: real[]; }
    @lower { y[] += x[] * 0.5, i < n; }
}

operator looped {
    @attrib { n: int; }
    @input { x: real[]; }
    @output { y: real[]; }
    @compose {
        y = with a = x do..(10000) huge{n = n}(a);
    }
}

operator fill {
    @attrib { n: int; }
    @input { x: real[]; }
    @output { y: real[n]; }
    @lower { y[i] = x[], i < n; }
}
"""

DEFAULT_MAX_WORK = 10 ** 11  # docs/limits.md
STEP = 10 ** 4  # the units of an invocation or a loop step (docs/limits.md)
X = {"x": np.array(1.0)}


# a bound on the time of a stopped run: far below what the unbounded runs here take (hours),
# far above what a stopped run takes on a loaded 2-core machine (well under a second idle)
UNBOUNDED_FLOOR = 30.0


@pytest.fixture(scope="module")
def program() -> ri.Program:
    return ri.load_source(PROGRAM, path="work.sknd")


def line_of(needle: str) -> int:
    return next(k for k, line in enumerate(PROGRAM.splitlines(), 1) if needle in line)


def stopped(program: ri.Program, op: str, attributes: dict, **limits) -> ri.Error:
    """The error a run ends with, after checking it ended: the unbounded runs of these tests
    take hours, so a generous bound (a loaded machine is slow) still tells the two apart."""
    start = time.monotonic()
    with pytest.raises(ri.Error) as raised:
        ri.evaluate(program, op=op, inputs=X, attributes=attributes,
                    limits=ri.Limits(**limits))
    assert time.monotonic() - start < UNBOUNDED_FLOOR
    return raised.value


# ------------------------------------------------------------------ counting


@pytest.mark.parametrize("n, m", [(1, 1), (3, 4), (2, 7)])
def test_nested_loops_count_steps_invocations_and_iterations(program, n, m) -> None:
    """The root invocation, then per outer step a step, and per inner step a step + one
    math.add invocation + its one-iteration formula."""
    run = ri.evaluate(program, op="nested", inputs=X, attributes={"n": n, "m": m})
    assert run.work == STEP + n * (STEP + m * (2 * STEP + 1))


@pytest.mark.parametrize("n", [0, 1, 4])
def test_doubly_recursive_operator_counts_every_invocation(program, n) -> None:
    """T(0) = twice + math.neg + its iteration = 2 STEP + 1; T(n) = twice + 2 T(n-1) +
    math.add + its iteration, so T(n) = (2 STEP + 1) (2^(n+1) - 1)."""
    run = ri.evaluate(program, op="twice", inputs=X, attributes={"n": n})
    assert run.work == (2 * STEP + 1) * (2 ** (n + 1) - 1)


def test_a_formula_counts_its_iterations(program) -> None:
    run = ri.evaluate(program, op="huge", inputs=X, attributes={"n": 1000})
    assert run.work == STEP + 1000
    assert run.outputs["y"] == 500.0


def test_the_default_stops_the_pathological_runs_by_their_counts() -> None:
    """The default (10^11) is what `evaluate` uses; two nested 10^4-step loops, the doubly
    recursive operator to depth 200 and 10^4 loop steps of a 10^9-iteration formula ask for
    far more (their counts, as above), so the default ends each after at most 10^7
    invocations or steps, or 10^11 iterations; a formula above it is refused before it
    runs."""
    assert ri.MAX_WORK == DEFAULT_MAX_WORK
    assert DEFAULT_MAX_WORK // STEP == 10 ** 7
    assert STEP + 10 ** 4 * (STEP + 10 ** 4 * (2 * STEP + 1)) > DEFAULT_MAX_WORK
    assert (2 * STEP + 1) * (2 ** 201 - 1) > DEFAULT_MAX_WORK
    assert STEP + 10 ** 4 * (STEP + STEP + 10 ** 9) > DEFAULT_MAX_WORK
    program = ri.load_source(PROGRAM, path="work.sknd")
    error = stopped(program, "huge", {"n": 2 * 10 ** 11}, max_lower_iterations=10 ** 12)
    assert error.code == "E1203" and f"budget of {DEFAULT_MAX_WORK}" in error.message


# ------------------------------------------------------------------ E1203


def test_nested_loops_stop_at_the_budget(program) -> None:
    error = stopped(program, "nested", {"n": 10000, "m": 10000}, max_work=3000 * STEP)
    assert error.code == "E1203"
    assert error.message == (f"the run exceeds its work budget of {3000 * STEP} (invocations + "
                             "loop steps + @lower iterations)")
    assert any("--max-work" in note and "max_work=" in note for note in error.notes)
    assert error.span.line == line_of("do..(m)")  # the inner loop, or its math.add


def test_doubly_recursive_operator_stops_at_the_budget_with_its_call_stack(program) -> None:
    error = stopped(program, "twice", {"n": 200}, max_work=3000 * STEP)
    assert error.code == "E1203"
    assert error.span.line == line_of("n == 0 ?")
    assert len(error.stack) >= 10 and all(f.operator in ("twice", "math.add", "math.neg")
                                          for f in error.stack)


def test_a_huge_formula_in_a_long_loop_stops_before_it_runs(program) -> None:
    """The formula's 10^9 iterations are charged before it runs: the first one the budget
    cannot pay for stops the run at once, at the formula, inside the loop's invocation."""
    error = stopped(program, "looped", {"n": 10 ** 9}, max_work=10 ** 9)
    assert error.code == "E1203"
    assert error.span.line == line_of("y[] += x[] * 0.5")
    assert [f.operator for f in error.stack] == ["huge"]
    spent = 3 * STEP  # the root, a loop step, the invocation of `huge`
    assert any(f"would take it to {spent + 10 ** 9} ({spent} spent before it)" in n
               for n in error.notes)


def test_shapes_follows_loops_within_the_budget(program) -> None:
    with pytest.raises(ri.Error) as raised:
        ri.shapes(program, op="nested", attributes={"n": 10000, "m": 10000},
                  limits=ri.Limits(max_work=500 * STEP))
    assert raised.value.code == "E1203"
    assert ri.shapes(program, op="nested", attributes={"n": 2, "m": 3},
                     limits=ri.Limits(max_work=500 * STEP)).checked


def test_command_line_max_work_on_eval_shapes_and_einsum(tmp_path, capsys) -> None:
    path = tmp_path / "work.sknd"
    path.write_text(PROGRAM)
    for args in (["eval", str(path), "--op", "nested", "--attrib", "n=10000", "--attrib",
                  "m=10000", "--random", "x=real[]", "--max-work", str(1000 * STEP)],
                 ["shapes", str(path), "--op", "nested", "--attrib", "n=10000", "--attrib",
                  "m=10000", "--max-work", str(1000 * STEP)],
                 ["einsum", "ij,jk->ik", "--random", "a=real[10,10]", "--random",
                  "b=real[10,10]", "--max-work", "100"]):
        status = main([*args, "--json"])
        error = json.loads(capsys.readouterr().out)["error"]
        assert (status, error["code"]) == (1, "E1203"), args
        assert any("--max-work" in note for note in error["notes"])


@pytest.mark.parametrize("option", [{"max_work": 0}, {"max_work": 1.5}, {"timeout": 0},
                                    {"timeout": -1.0}, {"timeout": float("nan")},
                                    {"timeout": "1"}, {"timeout": True}])
def test_invalid_budget_or_timeout_is_an_argument_error(option) -> None:
    with pytest.raises(ri.Error) as raised:
        ri.Limits(**option)
    assert raised.value.code == "E0901"


@pytest.mark.parametrize("args", [["--max-work", "0"], ["--timeout", "0"],
                                  ["--timeout", "nan"], ["--timeout", "inf"]])
def test_invalid_budget_or_timeout_option_is_misuse(capsys, args) -> None:
    assert main(["eval", "--op", "math.neg", "--random", "x=real[]", *args]) == 2
    assert args[0] in capsys.readouterr().err


# ------------------------------------------------------------------ E1204


def test_timeout_ends_an_endless_run(tmp_path, capsys) -> None:
    """`--timeout 1` on 10^8 invocations (about an hour) ends with E1204 after at least 1 s
    and long before the hour."""
    path = tmp_path / "work.sknd"
    path.write_text(PROGRAM)
    start = time.monotonic()
    status = main(["eval", str(path), "--op", "nested", "--attrib", "n=10000", "--attrib",
                   "m=10000", "--random", "x=real[]", "--timeout", "1", "--json"])
    elapsed = time.monotonic() - start
    error = json.loads(capsys.readouterr().out)["error"]
    assert (status, error["code"]) == (1, "E1204")
    assert error["message"] == "the run exceeds its time limit of 1 s"
    assert any("--timeout" in note for note in error["notes"])
    assert 1.0 <= elapsed < UNBOUNDED_FLOOR


def test_timeout_applies_to_shapes(program) -> None:
    start = time.monotonic()
    with pytest.raises(ri.Error) as raised:
        ri.shapes(program, op="nested", attributes={"n": 10000, "m": 10000},
                  limits=ri.Limits(timeout=0.3))
    assert raised.value.code == "E1204"
    assert time.monotonic() - start < UNBOUNDED_FLOOR


# ------------------------------------------------------------------ E1205


def test_memory_error_in_an_operator_names_it(program) -> None:
    """A MemoryError while an operator runs (here raised by the engine) is E1205 naming the
    operator and the bytes of its outputs."""
    def engine(instance, inputs, profile):
        raise MemoryError()

    with pytest.raises(ri.Error) as raised:
        ri.evaluate(program, op="fill", inputs=X, attributes={"n": 1000}, engine=engine)
    error = raised.value
    assert error.code == "E1205"
    assert error.message == "out of memory while running 'work.fill'"
    assert "its output 'y' takes 8000 bytes (7.81 KiB)" in error.notes
    assert any("--max-tensor-size" in n and "--max-memory" in n and "ulimit" in n
               for n in error.notes)


def test_memory_error_anywhere_in_a_command_is_a_diagnostic(monkeypatch, capsys) -> None:
    from refinterp.cli import cmd_parse

    def exhausted(args, out):
        raise MemoryError()

    monkeypatch.setattr(cmd_parse, "run", exhausted)
    assert main(["parse", "x.sknd"]) == 1
    err = capsys.readouterr().err
    assert "out of memory while running 'refinterp parse' [E1205]" in err
    assert "internal error" not in err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS as on Linux")
def test_real_memory_error_under_an_address_space_limit(tmp_path) -> None:
    """`eval` under a 600 MiB address space, of an operator whose output takes 800 MB (within
    the 1 GiB tensor limit): exit 1 with E1205 naming the operator, not an internal error."""
    path = tmp_path / "work.sknd"
    path.write_text(PROGRAM)
    limit = 600 * 2 ** 20

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    def fill(n: int) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "refinterp", "eval", str(path), "--op",
                               "fill", "--attrib", f"n={n}", "--random", "x=real[]"],
                              preexec_fn=limited, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})

    if fill(10).returncode != 0:
        pytest.skip("a small run needs more than 600 MiB of address space here")
    done = fill(10 ** 8)
    assert done.returncode == 1, done.stderr
    assert "out of memory while running 'work.fill' [E1205]" in done.stderr
    assert "800000000 bytes" in done.stderr and "Traceback" not in done.stderr
