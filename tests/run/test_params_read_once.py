"""Parameters are read once per process while their files are unchanged (docs/limits.md,
"Parameters read once"): a second run of the same model does not read its `.dat` files again
(model folder and `--params` folder alike); a file changed or replaced between runs is read
again; a bad file fails every time; the values kept are read-only and bounded in bytes."""

from __future__ import annotations

import os

import numpy as np
import pytest

import refinterp.api as ri
import refinterp.run.params as params
from refinterp.core.diagnostics import Diagnostic
from refinterp.io import read_params
from testsupport.nnef_files import write_dat

MODEL = """
graph G {
    @input { x: real[3]; }
    @output { y: real[3]; }
    @variable { w: real[3]; }
    @compose { y = math.mul(x, w); }
}
"""


@pytest.fixture(autouse=True)
def fresh_cache():
    params.clear_tensor_cache()
    yield
    params.clear_tensor_cache()


@pytest.fixture
def reads(monkeypatch):
    """The paths read from disk, in order."""
    seen: list[str] = []
    real = params.read_tensor

    def counting(path, *args, **kwargs):
        seen.append(os.path.basename(path))
        return real(path, *args, **kwargs)
    monkeypatch.setattr(params, "read_tensor", counting)
    return seen


@pytest.fixture
def model(tmp_path):
    (tmp_path / "main.sknd").write_text("import math;\n" + MODEL)
    write_dat(tmp_path / "w.dat", np.array([1.0, 2.0, 3.0]))
    return tmp_path


def run(model) -> np.ndarray:
    return ri.evaluate(model / "main.sknd", inputs={"x": np.ones(3)}).outputs["y"]


def test_a_second_run_does_not_read_the_model_folder_again(model, reads):
    assert run(model).tolist() == [1.0, 2.0, 3.0]
    assert run(model).tolist() == [1.0, 2.0, 3.0]
    assert reads == ["w.dat"]


def test_a_file_replaced_between_runs_is_read_again(model, reads):
    assert run(model).tolist() == [1.0, 2.0, 3.0]
    write_dat(model / "w.dat", np.array([4.0, 5.0, 6.0]))  # a new file, same size
    assert run(model).tolist() == [4.0, 5.0, 6.0]
    assert reads == ["w.dat", "w.dat"]


def test_a_file_rewritten_in_place_is_read_again(model, reads, tmp_path_factory):
    assert run(model).tolist() == [1.0, 2.0, 3.0]
    other = tmp_path_factory.mktemp("other") / "w.dat"
    write_dat(other, np.array([1.0, 2.0, 9.0]))
    data = other.read_bytes()
    stamp = os.stat(model / "w.dat").st_mtime_ns
    with open(model / "w.dat", "r+b") as file:  # same inode, same size
        file.write(data)
    os.utime(model / "w.dat", ns=(stamp + 10**9, stamp + 10**9))
    assert run(model).tolist() == [1.0, 2.0, 9.0]
    assert len(reads) == 2


def test_a_params_folder_is_read_once(model, reads):
    (model / "weights").mkdir()
    write_dat(model / "weights" / "a.dat", np.arange(4.0))
    first = read_params(model / "weights")
    second = read_params(model / "weights")
    assert second["a"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert second["a"] is first["a"]
    assert reads == ["a.dat"]


def test_kept_values_are_read_only(model):
    value = params.read_tensor_cached(model / "w.dat")
    with pytest.raises(ValueError):
        value[0] = 7.0


def test_a_bad_file_fails_every_time(model, reads):
    (model / "w.dat").write_bytes(b"not a tensor file")
    for _ in range(2):
        with pytest.raises(Diagnostic):
            run(model)
    assert reads == ["w.dat", "w.dat"]


def test_the_tensor_size_limit_applies_to_a_kept_file(model):
    run(model)
    with pytest.raises(Diagnostic) as caught:
        ri.evaluate(model / "main.sknd", inputs={"x": np.ones(3)},
                    limits=ri.Limits(max_tensor_size=16))
    assert caught.value.code == "E1200"


def test_the_cache_is_bounded_in_bytes(tmp_path, monkeypatch, reads):
    monkeypatch.setattr(params, "MAX_CACHED_TENSOR_BYTES", 100)  # 12 float64 items
    for name in "abc":
        write_dat(tmp_path / f"{name}.dat", np.zeros(5))  # 40 bytes each
    for name in "abc":
        params.read_tensor_cached(tmp_path / f"{name}.dat")
    params.read_tensor_cached(tmp_path / "c.dat")  # kept
    params.read_tensor_cached(tmp_path / "a.dat")  # the least recently used: gone
    assert reads == ["a.dat", "b.dat", "c.dat", "a.dat"]
    write_dat(tmp_path / "big.dat", np.zeros(20))  # 160 bytes: never kept
    params.read_tensor_cached(tmp_path / "big.dat")
    params.read_tensor_cached(tmp_path / "big.dat")
    assert reads[-2:] == ["big.dat", "big.dat"]
