"""Run traces (`refinterp eval --trace FILE`, refinterp/trace.py, docs/trace.md): byte-identical
across runs and processes, ids fixed by the run's structure, hashes and statistics as defined,
the first-fit buffer plan, packs, failing runs, and the ids the harness's probes name."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from refinterp import api
from refinterp.cli import main
from refinterp.harness import load_case
from refinterp.trace import Recorder, first_fit, run_traced, statistics

ROOT = Path(__file__).resolve().parent.parent
SMALL_CNN = ROOT / "golden" / "models" / "small_cnn"

# every planned tensor is 10 reals = 80 bytes -> 128 aligned; the bool m is 10 bytes -> 64
PLANNED = """import math;

graph G {
    @input { x: real[10]; }
    @output { y: real[10]; }
    @compose {
        a = math.exp(x);
        b = math.neg(a);
        c = math.add(a, b);
        m = math.lt(c, x);
        y = math.select(m, c, x);
    }
}
"""
X = np.array([-4.0, -2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, 6.0])  # sum 5: mean 0.5

PACK = """import layout;

graph P {
    @input { x: real[4]; }
    @output { ys: real[2]..(2); }
    @compose {
        ys = layout.split{axis = 0, count = 2}(x);
    }
}
"""

FAILING = """import math;
import linalg;

graph F {
    @input { x: real[2, 3]; }
    @output { y: real[2, 3]; }
    @compose {
        a = math.exp(x);
        b = linalg.matmul(a, a);
        y = math.add(b, a);
    }
}
"""


def sha(array: np.ndarray, code: str) -> str:
    """The documented content hash, computed here from the definition."""
    header = f"{code}[{','.join(str(e) for e in array.shape)}]\n".encode("ascii")
    return hashlib.sha256(header + np.ascontiguousarray(array).tobytes()).hexdigest()


def section(text: str, name: str) -> list[str]:
    """The lines of section `name` ("events", "tensors", "buffers"), from its count line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[0] == name)
    count = int(lines[start].split()[1])
    return lines[start + 1:start + 1 + count]


def fields(line: str) -> dict[str, str]:
    """`key=value` fields of a line (`from=` runs to the end of the line)."""
    head, _, origin = line.partition(" from=")
    found = dict(part.split("=", 1) for part in head.split() if "=" in part)
    if origin:
        found["from"] = origin
    return found


def tensor_lines(text: str) -> dict[str, str]:
    return {line.split()[0]: line for line in section(text, "tensors")}


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.sknd"
    path.write_text(text)
    return path


def traced(tmp_path: Path, target, name: str = "trace.txt", **options) -> tuple[object, str]:
    path = tmp_path / name
    run = run_traced(target, path, **options)
    return run, path.read_bytes().decode("utf-8")


def small_cnn(**options) -> dict:
    case = load_case(SMALL_CNN)
    return {"inputs": case.inputs, "params": case.params, **options}


# ------------------------------------------------------------------ determinism


@pytest.mark.parametrize("engine", ["scalar", "vector"])
def test_the_same_run_twice_gives_the_same_bytes(tmp_path: Path, engine: str) -> None:
    case = load_case(SMALL_CNN)
    _, first = traced(tmp_path, case.model, "a.txt", **small_cnn(engine=engine))
    _, second = traced(tmp_path, case.model, "b.txt", **small_cnn(engine=engine))
    assert first == second
    assert first.startswith(f"refinterp trace 1\nrun model.SmallCNN profile=spec "
                            f"engine={engine}\nstatus ok\n")


def test_two_processes_give_the_same_bytes_as_the_api(tmp_path: Path) -> None:
    case = load_case(SMALL_CNN)
    np.savez(tmp_path / "in.npz", **case.inputs)
    np.savez(tmp_path / "params.npz", **case.params)
    texts = []
    for name in ("one.txt", "two.txt"):
        command = [sys.executable, "-m", "refinterp", "eval", str(case.model), "--inputs",
                   str(tmp_path / "in.npz"), "--params", str(tmp_path / "params.npz"),
                   "--engine", "scalar", "--trace", str(tmp_path / name)]
        done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path,
                              timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                  filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))})
        assert done.returncode == 0, done.stderr
        texts.append((tmp_path / name).read_bytes())
    assert texts[0] == texts[1]
    _, in_process = traced(tmp_path, case.model, **small_cnn(engine="scalar"))
    assert texts[0] == in_process.encode("utf-8")


def test_ids_follow_the_structure_not_the_values(tmp_path: Path) -> None:
    case = load_case(SMALL_CNN)
    _, first = traced(tmp_path, case.model, "a.txt", **small_cnn(engine="scalar"))
    other = small_cnn(engine="scalar")
    other["inputs"] = {"image": case.inputs["image"] * 0.5 + 1.0}
    _, second = traced(tmp_path, case.model, "b.txt", **other)
    assert section(first, "events") == section(second, "events")
    assert section(first, "buffers") == section(second, "buffers")
    one, two = tensor_lines(first), tensor_lines(second)
    assert list(one) == list(two)
    assert one["T0"].split()[:3] == two["T0"].split()[:3]  # id, type, bytes
    assert fields(one["T0"])["sha256"] != fields(two["T0"])["sha256"]
    # the variables keep their values, so their lines are equal
    assert one["T1"] == two["T1"] and fields(one["T1"])["from"] == "in #1 filter"
    assert "1   call #1 nn.conv model.SmallCNN.conv1 input=T0 filter=T1 bias=T2" in first
    assert "3   bind conv1 T3" in first


# ------------------------------------------------------------------ content and plan


def test_hashes_statistics_and_the_plan_of_a_small_graph(tmp_path: Path) -> None:
    run, text = traced(tmp_path, write(tmp_path, "g", PLANNED), inputs={"x": X})
    assert section(text, "events") == [
        "0 call #0 g.G g.G x=T0",
        "1   call #1 math.exp g.G.a x=T0", "2   return #1 y=T1", "3   bind a T1",
        "4   call #2 math.neg g.G.b x=T1", "5   return #2 y=T2", "6   bind b T2",
        "7   call #3 math.add g.G.c x=T1 y=T2", "8   return #3 z=T3", "9   bind c T3",
        "10   call #4 math.lt g.G.m x=T3 y=T0", "11   return #4 z=T4", "12   bind m T4",
        "13   call #5 math.select g.G.y c=T4 x=T3 y=T0", "14   return #5 z=T5",
        "15   bind y T5",
        "16 return #0 y=T5"]
    tensors = {name: fields(line) for name, line in tensor_lines(text).items()}
    # expected contents, by NumPy: c = a + (-a) is +0.0 everywhere; m = 0 < x; y = m ? c : x
    c = np.zeros(10)
    m = X > 0
    y = np.where(m, 0.0, X)
    assert tensors["T0"]["sha256"] == sha(X, "<f8")
    assert tensors["T3"]["sha256"] == sha(c, "<f8")
    assert tensors["T4"]["sha256"] == sha(m, "|b1")
    assert tensors["T5"]["sha256"] == sha(y, "<f8")
    assert np.array_equal(run.outputs["y"], y)
    assert [tensors["T0"][k] for k in ("min", "max", "mean", "nan")] == \
        ["-4.0", "6.0", "0.5", "0"]
    assert [tensors["T4"][k] for k in ("min", "max", "mean")] == ["false", "true", "0.5"]
    assert [tensors["T5"][k] for k in ("min", "max", "mean")] == ["-4.0", "0.0", "-0.75"]
    assert tensors["T0"]["from"] == "input x" and tensors["T3"]["from"] == "out #3 z"
    # lifetimes: from the return that made a tensor to the return of its last reader
    assert [tensors[f"T{i}"]["live"] for i in range(6)] == \
        ["0..16", "2..8", "5..8", "8..14", "11..14", "14..16"]
    # first fit by hand: T1 at 0; T2 overlaps T1: 128; T3 overlaps both: 256; the bool T4 in
    # pool 2; T5 after T1 and T2 died, beside T3 (live to step 14): 0
    assert section(text, "buffers") == [
        "T1 pool=0 offset=0 size=128 live=2..8", "T2 pool=0 offset=128 size=128 live=5..8",
        "T3 pool=0 offset=256 size=128 live=8..14", "T4 pool=2 offset=0 size=64 live=11..14",
        "T5 pool=0 offset=0 size=128 live=14..16"]
    assert text.endswith("pool 0 tensors=4 peak=384 live=384\n"
                         "pool 2 tensors=1 peak=64 live=64\n"
                         "peak 448\n")


def test_first_fit_reuses_the_lowest_gap_that_fits() -> None:
    # (index, pool, size, first, last)
    buffers = [(0, 0, 128, 0, 3), (1, 0, 64, 1, 5), (2, 0, 64, 4, 6), (3, 0, 192, 5, 7),
               (4, 0, 64, 7, 8), (5, 0, 0, 7, 7), (6, 1, 64, 0, 9)]
    placed = {p.index: (p.pool, p.offset) for p in first_fit(buffers)}
    # 2: buffer 0 is dead at step 4, so 2 goes below 1 (at 128); 3 does not fit below 1:
    # above it at 192; 4: only 3 is live; 5 takes no bytes; 6 has a pool of its own
    assert placed == {0: (0, 0), 1: (0, 128), 2: (0, 0), 3: (0, 192), 4: (0, 0), 5: (0, 0),
                      6: (1, 0)}


def test_statistics_are_defined_independently_of_numpy_summation() -> None:
    assert statistics(np.array([0.0, -0.0])) == "min=-0.0 max=0.0 mean=0.0 nan=0"
    assert statistics(np.array([-0.0])) == "min=-0.0 max=-0.0 mean=0.0 nan=0"
    assert statistics(np.array([np.nan, 1.0, 2.0])) == "min=1.0 max=2.0 mean=1.5 nan=1"
    assert statistics(np.array([np.nan])) == "min=- max=- mean=- nan=1"
    assert statistics(np.array([np.inf, -np.inf, 1.0])) == "min=-inf max=inf mean=nan nan=0"
    assert statistics(np.array([1e308, 1e308])) == "min=1e+308 max=1e+308 mean=1e+308 nan=0"
    # fsum is exact: a naive left-to-right sum would give 0.0 here, then mean 0.0
    assert statistics(np.array([1e16, 1.0, -1e16, 1.0])) == \
        "min=-1e+16 max=1e+16 mean=0.5 nan=0"
    assert statistics(np.array([2 ** 62, 2 ** 62, 1], dtype=np.int64)) == \
        f"min=1 max={2 ** 62} mean={float((2 ** 63 + 1) / 3)!r}"
    assert statistics(np.zeros((0, 3))) == "min=- max=- mean=- nan=0"
    assert statistics(np.array([True, False, False, False])) == "min=false max=true mean=0.25"


def test_a_freed_address_reused_by_a_new_tensor_gets_a_new_id() -> None:
    recorder = Recorder()
    recorder.invocation("call", "main.G", ("main", "G"), {})
    addresses = []
    for _ in range(5):  # each array dies before the next is made, at the same address
        recorder.invocation("call", "math.neg", None, {})
        array = np.zeros(3)
        addresses.append(id(array))
        recorder.invocation("return", "math.neg", None, {"y": array})
        del array
    recorder.invocation("return", "main.G", ("main", "G"), {})
    assert len(set(addresses)) < len(addresses)  # the case this test is about happened
    assert [t.index for t in recorder.tensors] == [0, 1, 2, 3, 4]
    assert "10   return #5 y=T4" in recorder.text()


# ------------------------------------------------------------------ packs, failures, the CLI


def test_a_pack_output_lists_its_items(tmp_path: Path) -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    _, text = traced(tmp_path, write(tmp_path, "p", PACK), inputs={"x": x})
    events = section(text, "events")
    assert events == ["0 call #0 p.P p.P x=T0", "1   call #1 layout.split p.P input=T0",
                      "2   return #1 outputs=[T1,T2]", "3   bind ys [T1,T2]",
                      "4 return #0 ys=[T1,T2]"]
    tensors = {name: fields(line) for name, line in tensor_lines(text).items()}
    assert tensors["T1"]["sha256"] == sha(x[:2], "<f8")
    assert tensors["T2"]["sha256"] == sha(x[2:], "<f8")
    assert tensors["T2"]["from"] == "out #1 outputs.1"
    recorder = Recorder()
    api.evaluate(write(tmp_path, "p", PACK), inputs={"x": x},
                 hooks=api.Hooks(observe=recorder.observe, trace=recorder.invocation))
    assert recorder.names() == {"ys.0": "T1", "ys.1": "T2"}


def test_a_failing_run_writes_what_it_reached(tmp_path: Path, capsys) -> None:
    model = write(tmp_path, "f", FAILING)
    x = np.arange(6.0).reshape(2, 3) / 8
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "trace.txt"
    assert main(["eval", str(model), "--input", f"x={tmp_path / 'x.npy'}",
                 "--trace", str(out)]) == 1
    assert "E0307" in capsys.readouterr().err
    text = out.read_text()
    assert text.splitlines()[2].startswith("status error E0307: last dimension of A must "
                                           "match")
    assert section(text, "events") == [
        "0 call #0 f.F f.F x=T0", "1   call #1 math.exp f.F.a x=T0", "2   return #1 y=T1",
        "3   bind a T1", "4   call #2 linalg.matmul f.F.b A=T1 B=T1", "5   fail #2",
        "6 fail #0"]
    tensors = {name: fields(line) for name, line in tensor_lines(text).items()}
    assert tensors["T0"]["sha256"] == sha(x, "<f8")
    assert tensors["T1"]["live"] == "2..5"  # held by the invocation that failed
    assert section(text, "buffers") == ["T1 pool=0 offset=0 size=64 live=2..5"]
    with pytest.raises(api.Error):  # the API raises the error after writing the trace
        run_traced(model, tmp_path / "api.txt", inputs={"x": x})
    assert (tmp_path / "api.txt").read_text() == text


def test_trace_needs_a_writable_file_before_the_run(tmp_path: Path, capsys) -> None:
    model = write(tmp_path, "p", PACK)
    missing = tmp_path / "no" / "trace.txt"
    assert main(["eval", str(model), "--input", "x=[1.0, 2.0, 3.0, 4.0]",
                 "--trace", str(missing)]) != 0
    assert "--trace" in capsys.readouterr().err and not missing.exists()


# ------------------------------------------------------------------ OCANNL's buffer plan


def test_ocannl_buffer_plan_is_phase_one_per_tensor_node(tmp_path: Path, capsys) -> None:
    """`--buffer-plan ocannl`: one pool per tensor node from pool 1 (pool 0 is the merge
    buffer's) in id order, offset 0, as ppx_sexp_conv spells `ctx_buffers`; the same bytes run
    after run and in another process, and the events and tensors of the first-fit trace."""
    model = write(tmp_path, "g", PLANNED)
    np.save(tmp_path / "x.npy", X)
    texts = []
    for name in ("a.txt", "b.txt"):
        assert main(["eval", str(model), "--input", f"x={tmp_path / 'x.npy'}", "--trace",
                     str(tmp_path / name), "--buffer-plan", "ocannl"]) == 0
        texts.append((tmp_path / name).read_bytes())
    assert texts[0] == texts[1]
    text = texts[0].decode()
    lines = text.splitlines()
    start = lines.index("buffers 6 ocannl phase-1 merge_buffer_pool=0")
    expected = [f"(T{k} ((pool_id {k + 1}) (offset 0)))" for k in range(6)]
    expected = ["(" + expected[0]] + [" " + e for e in expected[1:-1]] + [" " + expected[-1] + ")"]
    assert lines[start + 1:] == expected
    _, first_fit_text = traced(tmp_path, model, "c.txt", inputs={"x": X})
    assert text.split("buffers ")[0] == first_fit_text.split("buffers ")[0]
    _, api_text = traced(tmp_path, model, "d.txt", inputs={"x": X}, buffer_plan="ocannl")
    assert api_text == text
    assert main(["eval", str(model), "--input", "x=[1.0]", "--buffer-plan", "ocannl"]) == 2
    assert "--trace" in capsys.readouterr().err
