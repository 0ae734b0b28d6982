"""Programs and inputs that once ended in an internal error (a traceback, exit 3) end in a
positioned diagnostic: a 100,000-term flat chain and a 10,000-deep `**` chain inside `@compose`
(a RecursionError reading the names they use), and an input of rank 100 (NumPy's ValueError)."""

from __future__ import annotations

from pathlib import Path

import pytest

from refinterp.cli import main

GRAPH = """graph G {{
 @input {{ x: real[2]; }}
 @output {{ y: real[2]; }}
 @compose {{ y = {value}; }}
}}
"""


@pytest.mark.parametrize("value", [" + ".join(["x"] * 100_000), "x" + " ** x" * 10_000])
@pytest.mark.parametrize("command", ["eval", "shapes"])
def test_long_chains_in_compose_are_diagnostics(tmp_path: Path, capsys, value: str,
                                                command: str) -> None:
    path = tmp_path / "g.sknd"
    path.write_text(GRAPH.format(value=value))
    extra = ["--input", "x=[1.0, 2.0]"] if command == "eval" else []
    assert main([command, str(path), *extra]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:4:17: error: tensor arithmetic must be written as operator "
                          f"invocations [E0600]")


def test_an_input_of_rank_100_is_a_diagnostic(capsys) -> None:
    shape = ",".join(["1"] * 100)
    assert main(["eval", "--op", "math.neg", "--random", f"x=real[{shape}]"]) == 1
    err = capsys.readouterr().err
    assert "input 'x' has rank 100; refinterp holds tensors of rank at most 64" in err
    assert "[E1200]" in err and "internal error" not in err


TABLE = """module = "math"
[classes]
neg = "exact"
[[case]]
op = "neg"
name = "c"
inputs = {{ x = {spec} }}
"""


@pytest.mark.parametrize("spec, message", [
    ('"real[100000000000]"', "above the tensor size limit"),
    ('{ type = "int[2]", range = [0, 100000000000000000000] }', "within int64's range"),
    ('{ type = "real[2]", range = [1e400, 2] }', "two finite numbers"),
    ('{ type = "real[2]", range = 3 }', "two finite numbers")])
def test_case_tables_beyond_the_limits_are_table_errors(tmp_path: Path, capsys, spec: str,
                                                        message: str) -> None:
    """Was a MemoryError ("out of memory", unpositioned) or an OverflowError."""
    table = tmp_path / "t.toml"
    table.write_text(TABLE.format(spec=spec))
    assert main(["golden", "build", str(table), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{table}:4:1: error: case #1 (neg/c): input 'x'")
    assert message in err and "[E1100]" in err


def test_a_golden_view_beyond_int64_is_a_problem_of_the_case(tmp_path: Path, capsys) -> None:
    """Was an OverflowError (internal error) in `golden verify` and `check`."""
    from testsupport.module_suites import module_suite
    from testsupport.small_suites import copy_suite, rewrite_case

    case_id = "nx.reshape/rank3_to_rank2@view-flipped"
    suite = copy_suite(module_suite("nx"), [case_id], tmp_path / "suite")
    rewrite_case(suite, case_id, lambda data: data["inputs"]["t"]["view"].update(offset=2**70))
    assert main(["golden", "verify", str(suite)]) == 1
    assert "within int64's range" in capsys.readouterr().err
    assert main(["check", str(suite), "--backend", "refinterp:auto"]) == 1
    assert "1 broken" in capsys.readouterr().out


OPTIONAL_CHAINS = """operator f {{
 @input {{ x: real[n]; o: optional real[n]; }}
 @output {{ y: real[n]; }}
 {body}
}}
"""


@pytest.mark.parametrize("body, code", [
    ("@compose { y = if x.shape[0] > 1 then { yield " + " + ".join(["o"] * 5_000)
     + "; } else { yield x; }; }", "E1307"),
    ("@lower { y[i] = " + " + ".join(["x[i]"] * 5_000) + " + o[i], i < n; }", "E1305"),
])
def test_long_chains_in_the_static_checks_are_diagnostics(tmp_path: Path, capsys, body: str,
                                                          code: str) -> None:
    """The optional-expression rules walk a chain of 5,000 terms without recursion."""
    path = tmp_path / "f.sknd"
    path.write_text(OPTIONAL_CHAINS.format(body=body))
    assert main(["lint", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"[{code}]" in err and "internal error" not in err
