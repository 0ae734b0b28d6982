"""The C example back end (examples/c_backend): run through `refinterp check` on the committed
golden suite, and its output files byte for byte against `refinterp.io.encode_npz`.

Skipped without a C compiler (`cc`)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from refinterp.cli import main
from refinterp.golden.tolerance import Bound, within
from refinterp.io import encode_npz
from testsupport.paths import REPO_ROOT

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")

ROOT = REPO_ROOT
EXAMPLE = ROOT / "examples" / "c_backend"
GOLDEN = ROOT / "golden"

BINARY = ["math.add", "math.sub", "math.mul", "math.div"]
UNARY = ["math.neg", "math.abs", "math.exp", "math.log", "math.sqrt", "math.sin", "math.cos",
         "math.tanh", "nn.relu"]
UNSUPPORTED = "math.pow"  # in the selection, not known to the back end
SELECTION = r"^(math\.(add|sub|mul|div|neg|abs|exp|log|sqrt|sin|cos|tanh|pow)|nn\.relu)/"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where run.sh builds minirt (MINIRT_CACHE), shared by the tests of this module."""
    return tmp_path_factory.mktemp("minirt-cache")


@pytest.fixture(scope="module")
def minirt(cache: Path) -> Path:
    """minirt.c compiled as run.sh compiles it."""
    program = cache / "minirt-direct"
    subprocess.run(["cc", "-O2", "-std=c99", "-o", str(program), str(EXAMPLE / "minirt.c"),
                    "-lm"], check=True)
    return program


def backend_command(cache: Path, *extra: str) -> str:
    run = shlex.quote(str(EXAMPLE / "run.sh"))
    return f"MINIRT_CACHE={shlex.quote(str(cache))} {run} {{dir}} {{inputs}} {{outputs}}" + \
        "".join(f" {word}" for word in extra)


def expected_verdict(manifest: dict) -> tuple[str, str | None]:
    """What the back end must give a case: ("pass", None) or ("skip", part of the reason)."""
    if "error" in manifest:
        return "pass", None  # rejected, as an invalid invocation must be
    if manifest["operator"] == UNSUPPORTED:
        return "skip", f"operator {UNSUPPORTED} is not supported"
    if manifest["attributes"]:
        return "skip", "attributes are not supported"
    inputs = manifest["inputs"]
    if any(spec["dtype"] != "real" for spec in inputs.values()):
        return "skip", "only real (<f8) inputs are supported"
    if len({tuple(spec["shape"]) for spec in inputs.values()}) > 1:
        return "skip", "broadcasting unsupported"
    return "pass", None


def selected_cases() -> dict[str, dict]:
    """The cases of the selection a spec-profile back end runs (no `@khronos` variants)."""
    suite = json.loads((GOLDEN / "manifest.json").read_text(encoding="utf-8"))
    return {case["id"]: json.loads((GOLDEN / case["path"] / "case.json").read_text("utf-8"))
            for case in suite["cases"] if re.search(SELECTION, case["id"])
            and "@" not in case["id"]}


def run_check(cache: Path, report: Path, *extra: str) -> tuple[int, dict[str, dict]]:
    status = main(["check", str(GOLDEN), "--backend-cmd", backend_command(cache, *extra),
                   "-k", SELECTION, "--json", str(report), "--no-progress"])
    data = json.loads(report.read_text(encoding="utf-8"))
    return status, {case["id"]: case for case in data["cases"]}


# --------------------------------------------------------------------------- through the harness


def test_every_supported_case_passes_and_the_rest_are_skips(cache: Path, tmp_path: Path) -> None:
    status, results = run_check(cache, tmp_path / "report.json")
    cases = selected_cases()
    assert set(results) == set(cases)
    wrong = []
    for case_id, manifest in sorted(cases.items()):
        want, reason = expected_verdict(manifest)
        got = results[case_id]
        if got["status"] != want or (reason and reason not in got["explanation"]):
            wrong.append(f"{case_id}: {got['status']} ({got['explanation']}), expected {want}"
                         + (f" ({reason})" if reason else ""))
    assert not wrong, "\n".join(wrong)
    assert status == 0

    # what the selection covers: special values of every operator, error cases, skips
    for operator in BINARY + UNARY:
        assert results[f"{operator}/special"]["status"] == "pass"
    edges = [i for i in ("math.div/real_by_zero", "math.exp/overflow_underflow",
                         "math.log/domain_edges", "math.sqrt/domain_edges",
                         "math.neg/signed_zeros", "math.sin/large_arguments",
                         "math.tanh/saturation") if i in results]  # those the suite holds
    assert len(edges) >= 3
    for case_id in edges:
        assert results[case_id]["status"] == "pass", case_id
    errors = [i for i, m in cases.items() if "error" in m]
    assert len(errors) >= 10
    assert all("rejected" in results[i]["explanation"] for i in errors)
    skips = [i for i, r in results.items() if r["status"] == "skip"]
    assert {i.split("/")[0] for i in skips} >= {UNSUPPORTED, "math.add", "nn.relu"}


def test_an_error_case_is_rejected_with_exit_1(tmp_path: Path, cache: Path) -> None:
    folder = GOLDEN / "math.add" / "incompatible_shapes"
    done = subprocess.run([str(EXAMPLE / "run.sh"), str(folder), str(folder / "inputs.npz"),
                           str(tmp_path / "out.npz")], capture_output=True, text=True,
                          env={**os.environ, "MINIRT_CACHE": str(cache)})
    assert done.returncode == 1
    assert "rejected" in done.stderr and "E0307" in done.stderr
    assert not (tmp_path / "out.npz").exists()


def test_float32_results_pass_under_the_float32_tolerances(minirt: Path, tmp_path: Path) -> None:
    """--float32 writes `<f4` outputs, within every case's float32 tolerance (checked here
    directly, as the harness does for a Python back end returning float32 arrays)."""
    checked = 0
    for case_id, manifest in sorted(selected_cases().items()):
        if expected_verdict(manifest) != ("pass", None) or "error" in manifest:
            continue
        folder = GOLDEN / case_id
        out = tmp_path / "out.npz"
        subprocess.run([str(minirt), "--float32", manifest["operator"],
                        str(folder / "inputs.npz"), str(out)], check=True)
        with np.load(out) as got, np.load(folder / "outputs.npz") as want:
            assert list(got) == list(want)
            for key in want:
                assert got[key].dtype == np.float32
                bound = Bound.from_json(manifest["outputs"][key]["tolerance"]["float32"])
                ok = within(got[key], want[key], bound)
                assert ok.all(), f"{case_id} {key}: {got[key][~ok]} vs {want[key][~ok]}"
        checked += 1
    assert checked >= 50


def test_float32_through_the_harness(cache: Path, tmp_path: Path) -> None:
    status, results = run_check(cache, tmp_path / "report.json", "--float32")
    assert [i for i, r in results.items() if r["status"] == "fail"] == []
    assert status == 0


# --------------------------------------------------------------------------- the bytes


def run_minirt(minirt: Path, operator: str, arrays: dict[str, np.ndarray], tmp_path: Path,
               *flags: str) -> subprocess.CompletedProcess:
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    inputs.write_bytes(encode_npz(arrays))
    outputs.unlink(missing_ok=True)
    return subprocess.run([str(minirt), *flags, operator, str(inputs), str(outputs)],
                          capture_output=True, text=True)


SHAPES = [(), (1,), (7,), (3, 4), (0, 4), (4, 0), (2, 3, 4), (12345, 1),
          (1,) * 20, (1,) * 21, (1,) * 22,  # header padding 3, 0 (data at byte 128), 61
          (2,) * 10 + (1,) * 12, (3, 1, 4, 1, 5, 9, 2, 6)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_outputs_are_byte_identical_to_encode_npz(minirt: Path, tmp_path: Path,
                                                  shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(len(shape) * 1000 + sum(shape))
    x = rng.uniform(-4, 4, shape).astype(np.float32).astype(np.float64)
    y = rng.uniform(-4, 4, shape).astype(np.float32).astype(np.float64)
    if x.size:
        x.flat[0] = np.nan  # -NaN: both write it as the one quiet NaN
        x.flat[-1] = -0.0
    done = run_minirt(minirt, "math.neg", {"x": x}, tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.npz").read_bytes() == encode_npz({"y": -x})
    done = run_minirt(minirt, "math.mul", {"x": np.abs(x), "y": y}, tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.npz").read_bytes() == encode_npz({"z": np.abs(x) * y})


def test_golden_outputs_are_reproduced_byte_for_byte(minirt: Path, tmp_path: Path) -> None:
    """On this machine the C library gives the golden's values exactly, so minirt's files are
    the golden files (both write every NaN as the one quiet NaN), except for
    abs(-0.0) (the golden keeps -0.0: math.abs is `x < 0 ? -x : x`; C's fabs gives +0.0, one
    point for the tolerance). Every file minirt writes re-encodes to itself."""
    known = {"math.div/real_by_zero", "math.div/special", "math.abs/special"}
    differ = []
    for case_id, manifest in sorted(selected_cases().items()):
        if expected_verdict(manifest) != ("pass", None) or "error" in manifest:
            continue
        folder = GOLDEN / case_id
        out = tmp_path / "out.npz"
        subprocess.run([str(minirt), manifest["operator"], str(folder / "inputs.npz"),
                        str(out)], check=True)
        written = out.read_bytes()
        with np.load(out) as got:
            assert encode_npz(dict(got)) == written, case_id
        if written != (folder / "outputs.npz").read_bytes():
            differ.append(case_id)
    libm_last_place = {d for d in differ if d not in known
                       and re.match(r"math\.(exp|log|sin|cos|tanh)/", d)}
    assert set(differ) - libm_last_place <= known, differ


def test_reads_what_numpy_savez_writes(minirt: Path, tmp_path: Path) -> None:
    """numpy.savez writes ZIP64 extra fields and no sizes in its local headers: minirt takes
    the sizes from the central directory. Compressed archives are unsupported (77)."""
    x = np.arange(-3.0, 3.0).reshape(2, 3)
    np.savez(tmp_path / "plain.npz", x=x)
    np.savez_compressed(tmp_path / "packed.npz", x=x)
    out = tmp_path / "out.npz"
    subprocess.run([str(minirt), "math.abs", str(tmp_path / "plain.npz"), str(out)], check=True)
    assert out.read_bytes() == encode_npz({"y": np.abs(x)})
    done = subprocess.run([str(minirt), "math.abs", str(tmp_path / "packed.npz"), str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 77 and "compressed" in done.stderr


def test_float32_outputs_are_f4_npy(minirt: Path, tmp_path: Path) -> None:
    x = np.array([[0.5, 2.25, 3.0]])
    done = run_minirt(minirt, "math.sqrt", {"x": x}, tmp_path, "--float32")
    assert done.returncode == 0, done.stderr
    data = (tmp_path / "out.npz").read_bytes()
    assert b"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }" in data
    with np.load(tmp_path / "out.npz") as got:
        np.testing.assert_array_equal(got["y"], np.sqrt(x.astype(np.float32)))


@pytest.mark.parametrize("arrays, operator, message", [
    ({"x": np.array([1, 2])}, "math.neg", "int (<i8)"),
    ({"x": np.array([True])}, "math.neg", "bool (|b1)"),
    ({"x": np.zeros(3), "y": np.zeros(4)}, "math.add", "broadcasting unsupported"),
    ({"x": np.zeros(3)}, "math.pow", "not supported"),
])
def test_unsupported_inputs_exit_77(minirt: Path, tmp_path: Path, arrays: dict,
                                    operator: str, message: str) -> None:
    done = run_minirt(minirt, operator, arrays, tmp_path)
    assert done.returncode == 77 and message in done.stderr
    assert not (tmp_path / "out.npz").exists()


def test_a_damaged_member_fails_its_crc(minirt: Path, tmp_path: Path) -> None:
    data = bytearray(encode_npz({"x": np.ones(4)}))
    data[170] ^= 0x01  # a byte of the array's data (bytes 163-194)
    (tmp_path / "bad.npz").write_bytes(bytes(data))
    done = subprocess.run([str(minirt), "math.neg", str(tmp_path / "bad.npz"),
                           str(tmp_path / "out.npz")], capture_output=True, text=True)
    assert done.returncode == 2 and "CRC-32" in done.stderr
