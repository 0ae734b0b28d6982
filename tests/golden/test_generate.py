"""`refinterp golden generate`: suites derived from an operator's signature (docs/golden.md,
"Generated suites")."""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import numpy as np

import refinterp.api as api
from refinterp.cli import main
from refinterp.golden import read_table
from refinterp.golden.generate import generate, resolve_operator, run_spec
from refinterp.golden.tolerance import tolerance_class
from refinterp.signature import stdlib_modules

CONV1D = """\
operator conv1d {
    @attrib {
        k: int = 3;
        mode: str = "VALID";
    }
    @input {
        x: real[b, n];
        w: real[k];
    }
    @output {
        y: real[b, n - k + 1];
    }
    @assert {
        k > 0: "'k' must be positive", k;
        n >= k: "the input must hold at least k values", n, k;
        mode == 'VALID' || mode == 'FULL': "'mode' must be VALID or FULL";
    }
    @lower {
        y[c, i] += x[c, i + j] * w[j],
            c < b, i < n - k + 1, j < k;
    }
}
"""



def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _user_file(tmp_path: Path) -> Path:
    path = tmp_path / "conv1d.sknd"
    path.write_text(CONV1D)
    return path


def test_same_command_same_bytes(tmp_path: Path, capsys) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for suite in (one, two):
        assert main(["golden", "generate", "math.sum_reduce", "-o", str(suite),
                     "--max-cases", "8"]) == 0
    assert "generated" in capsys.readouterr().out
    assert _files(one) == _files(two)
    manifest = json.loads((one / "manifest.json").read_text())
    assert manifest["count"] >= 10   # 8 valid cases, 2 error cases (one per @assert)
    assert main(["golden", "verify", str(one)]) == 0
    # the generated table rebuilds the same cases: read back, they are the same specs
    read = {s.id: s for s in read_table(one / "generated.toml")}
    built = json.loads((one / "math.sum_reduce" / "rank0" / "case.json").read_text())
    assert read["math.sum_reduce/rank0"].inputs["input"].as_json() == \
        built["inputs"]["input"]["spec"]
    again = tmp_path / "again"
    assert main(["golden", "build", str(one / "generated.toml"), "-o", str(again)]) == 0
    for name, data in _files(one).items():
        if name.endswith(".npz"):  # the arrays are the same; case.json names another table
            assert _files(again)[name] == data


def test_a_seed_changes_the_values_only(tmp_path: Path) -> None:
    operator = resolve_operator("math.exp")
    plain, seeded = generate(operator), generate(operator, seed=7)
    assert [s.id for s in plain.specs] == [s.id for s in seeded.specs]
    first = plain.specs[0].arrays()["x"]
    assert not np.array_equal(first, seeded.specs[0].arrays()["x"])


def test_a_user_operator_gets_valid_special_and_error_cases(tmp_path: Path) -> None:
    path = _user_file(tmp_path)
    generated = generate(resolve_operator(str(path)))
    assert generated.operator.qualified == "conv1d.conv1d" and generated.klass == "reduction"
    valid = [s for s in generated.specs if s.error is None]
    names = {s.name for s in valid}
    assert {"typical", "empty", "special", "k_1", "mode_full"} <= names
    special = next(s for s in valid if s.name == "special").arrays()["x"]
    assert np.isnan(special).any() and np.isinf(special).any()
    assert (np.signbit(special) & (special == 0)).any()          # -0.0
    assert (special == np.float32(2.0) ** -149).any()            # the smallest subnormal
    errors = {s.name: s for s in generated.specs if s.error is not None}
    assert sorted(errors) == ["assert1", "assert2", "assert3"] and not generated.unviolated
    lines = CONV1D.splitlines()
    for index, text in enumerate(("k > 0", "n >= k", "mode == 'VALID'")):
        spec = errors[f"assert{index + 1}"]
        error = run_spec(generated.operator, spec)
        assert error is not None and error.code == "E0307" == spec.error["code"]
        assert lines[error.span.line - 1].strip().startswith(text)   # at that assert
        assert error.span.path == str(path)
    assert errors["assert1"].attributes == {"k": 0}
    assert errors["assert3"].attributes == {"mode": "UNKNOWN"}


def test_a_user_operator_suite_verifies(tmp_path: Path) -> None:
    path = _user_file(tmp_path)
    suite = tmp_path / "suite"
    assert main(["golden", "generate", str(path), "-o", str(suite)]) == 0
    assert main(["golden", "verify", str(suite)]) == 0
    case = json.loads((suite / "conv1d.conv1d" / "assert2" / "case.json").read_text())
    assert case["error"]["code"] == "E0307"
    assert (suite / "conv1d.conv1d" / "typical" / "conv1d.sknd").read_text() == CONV1D
    again = tmp_path / "again"   # the generated table names the file: it rebuilds the suite
    assert main(["golden", "build", str(suite / "generated.toml"), "-o", str(again)]) == 0
    for name, data in _files(suite).items():
        if name.endswith((".npz", ".sknd")):
            assert _files(again)[name] == data, name


def test_values_agree_with_numpy(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    assert main(["golden", "generate", "math.add", "-o", str(suite)]) == 0
    assert main(["golden", "generate", "math.sum_reduce", "-o", str(suite)]) == 0
    for name in ("broadcast", "broadcast_ones", "uniform", "rank0", "empty"):
        inputs = np.load(suite / "math.add" / name / "inputs.npz")
        outputs = np.load(suite / "math.add" / name / "outputs.npz")
        np.testing.assert_array_equal(outputs["z"], inputs["x"] + inputs["y"])
    for folder in sorted((suite / "math.sum_reduce").iterdir()):
        case = json.loads((folder / "case.json").read_text())
        if "error" in case or case["generics"] != ["real"] or "@" in folder.name:
            continue
        x = np.load(folder / "inputs.npz")["input"]
        axes = case["attributes"].get("axes", list(range(x.ndim)))
        expected = np.sum(x, axis=tuple(axes), keepdims=not case["attributes"].get("squeeze"))
        got = np.load(folder / "outputs.npz")["output"]
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_the_tolerance_class_follows_the_kind() -> None:
    expected = {"math.add": "arithmetic", "math.exp": "transcendental", "math.rsqr":
                "transcendental", "math.pow": "transcendental", "math.max": "exact",
                "layout.transpose": "exact", "math.sum_reduce": "reduction",
                "nn.softmax": "reduction"}
    for name, klass in expected.items():
        assert tolerance_class(resolve_operator(name).target.definition) == klass, name


def test_mistakes_are_diagnostics(tmp_path: Path, capsys) -> None:
    suite = str(tmp_path / "suite")
    assert main(["golden", "generate", "math.add", "--attrib", "nope=1", "-o", suite]) == 1
    assert main(["golden", "generate", "math.nope", "-o", suite]) == 1
    assert main(["golden", "generate", "math.add", "--op", "add", "-o", suite]) == 1
    assert main(["golden", "generate", "math.add", "--max-cases", "0", "-o", suite]) == 2
    assert "Traceback" not in capsys.readouterr().err


def _stdlib_operators() -> list[str]:
    return [s.qualified for m in stdlib_modules() for s in api.operators(m)
            if not s.name.startswith("_") and s.kind != "graph"]


def _kinds(generated) -> dict[str, bool]:
    """Which kinds of case a generated suite has (docs/golden.md, "Generated suites")."""
    valid = [s for s in generated.specs if s.error is None]

    def shapes(spec):
        for item in spec.inputs.values():
            yield from (i.shape for i in (item if isinstance(item, list) else [item]))
    reals = any(i.dtype == "real" for v in valid for item in v.inputs.values()
                for i in (item if isinstance(item, list) else [item]))
    return {"rank0": any(len(s) == 0 for v in valid for s in shapes(v)),
            "empty": any(0 in s for v in valid for s in shapes(v)),
            "special": not reals or any(v.name == "special" for v in valid),
            "errors": not generated.unviolated}


def test_every_stdlib_operator(capsys) -> None:
    started = time.perf_counter()
    counts = {"rank0": 0, "empty": 0, "special": 0, "errors": 0, "all": 0}
    operators = _stdlib_operators()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy on special values
        for name in operators:
            generated = generate(resolve_operator(name), max_cases=12)
            assert not generated.internal, generated.internal  # no refinterp bug met
            kinds = _kinds(generated)
            for kind, present in kinds.items():
                counts[kind] += present
            counts["all"] += all(kinds.values())
    seconds = time.perf_counter() - started
    with capsys.disabled():
        print(f"\n{len(operators)} operators in {seconds:.1f} s: {counts}")
    assert len(operators) >= 148
    assert counts["all"] >= 120
