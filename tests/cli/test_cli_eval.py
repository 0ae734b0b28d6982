"""`refinterp eval`: inputs from npz / npy / literals / random, outputs to npz."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from refinterp.cli import main

MATMUL = """operator matmul {
  @input { A: real[m,k]; B: real[k,n]; }
  @output { C: real[m,n]; }
  @lower { C[i,j] += A[i,l] * B[l,j], i < m, l < k, j < n; }
}
"""
ADD_ALL = """operator add_all {
  @input { xs: real[n]..(k); }
  @output { y: real[n]; ys: real[n]..(k); }
  @lower {
    y[i] += xs[j][i], j < k, i < n;
    ys[j][i] = xs[j][i] * 2.0, j < k, i < n;
  }
}
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "op.sknd"
    path.write_text(text)
    return str(path)


def test_npz_in_and_out_with_any_float_dtype(tmp_path: Path, capsys) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones((3, 2), dtype=np.float16)
    np.savez(tmp_path / "in.npz", A=a, B=b)
    out = tmp_path / "out.npz"
    assert main(["eval", write(tmp_path, MATMUL), "--inputs", str(tmp_path / "in.npz"),
                 "-o", str(out)]) == 0
    result = np.load(out)["C"]
    assert result.dtype == np.float64
    np.testing.assert_array_equal(result, a.astype(np.float64) @ b.astype(np.float64))
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].split() == ["output", "dtype", "shape", "min", "max", "mean"]
    assert printed[1].split()[:3] == ["C", "real", "[2,"]


def test_pack_inputs_and_outputs_use_dotted_keys(tmp_path: Path) -> None:
    xs = [np.arange(3.0), np.ones(3), np.full(3, 5.0)]
    np.savez(tmp_path / "in.npz", **{f"xs.{i}": x for i, x in enumerate(xs)})
    out = tmp_path / "out.npz"
    assert main(["eval", write(tmp_path, ADD_ALL), "--inputs", str(tmp_path / "in.npz"),
                 "-o", str(out)]) == 0
    result = np.load(out)
    np.testing.assert_array_equal(result["y"], sum(xs))
    for i, x in enumerate(xs):
        np.testing.assert_array_equal(result[f"ys.{i}"], 2 * x)


def test_literal_npy_and_random_inputs(tmp_path: Path) -> None:
    np.save(tmp_path / "b.npy", np.eye(2))
    out = tmp_path / "out.npz"
    assert main(["eval", write(tmp_path, MATMUL), "--random", "A=real[3,2]", "--seed", "4",
                 "--input", f"B={tmp_path / 'b.npy'}", "-o", str(out)]) == 0
    expected = np.random.default_rng(4).standard_normal((3, 2))
    np.testing.assert_array_equal(np.load(out)["C"], expected)


def test_wrong_inputs_are_diagnostics(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, MATMUL)
    assert main(["eval", path, "--random", "A=int[2,3]", "--random", "B=real[3,2]"]) == 1
    assert "input 'A' must be real; got int" in capsys.readouterr().err
    assert main(["eval", path, "--random", "A=real[2,3]", "--random", "B=real[4,2]"]) == 1
    assert "'k' is 3 from input 'A'" in capsys.readouterr().err
    assert main(["eval", path, "--random", "A=real[2,3]", "--random", "X=real[3,2]"]) == 1
    assert "has no input 'X'" in capsys.readouterr().err


LOOPS = """operator inc {
  @input { x: int[]; }
  @output { y: int[]; }
  @lower { y[] = x[] + 1; }
}
operator forever {
  @input { x: int[]; }
  @output { y: int[]; }
  @compose { y = with s = x while true do inc(s); }
}
operator recurse {
  @input { x: int[]; }
  @output { y: int[]; }
  @compose { y = recurse(x); }
}
"""


def test_max_iterations_and_max_depth_are_diagnostics(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, LOOPS)
    assert main(["eval", path, "--op", "forever", "--input", "x=0", "--max-iterations",
                 "50"]) == 1
    assert "the loop ran 50 iterations (--max-iterations)" in capsys.readouterr().err
    assert main(["eval", path, "--op", "recurse", "--input", "x=0", "--max-depth", "20"]) == 1
    err = capsys.readouterr().err
    assert "operator calls nest deeper than 20" in err and "the same frame 20 more times" in err
    assert main(["eval", path, "--op", "recurse", "--input", "x=0"]) == 1  # default 256
    assert "nest deeper than 256" in capsys.readouterr().err
    assert main(["eval", path, "--op", "forever", "--input", "x=0", "--max-iterations",
                 "0"]) == 2  # an unusable option value is command-line misuse


DYNAMIC = """import math;
graph G {
  @input { x: real[s|10]; y: real[s|10]; }
  @output { z: real[~|10]; }
  @compose { z = math.add(x, y); }
}
"""


def test_dynamic_input_extents_are_checked_at_run_time(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, DYNAMIC)
    out = tmp_path / "o.npz"
    assert main(["eval", path, "--input", "x=[1.0, 2.0]", "--input", "y=[3.0, 4.0]", "-o",
                 str(out)]) == 0
    with np.load(out) as data:
        assert data["z"].tolist() == [4.0, 6.0]  # the output gets its actual extent
    assert main(["eval", path, "--random", "x=real[11]", "--random", "y=real[11]"]) == 1
    assert "is 11, above its bound 10" in capsys.readouterr().err
    assert main(["eval", path, "--random", "x=real[3]", "--random", "y=real[4]"]) == 1
    assert "'s' is 3 from input 'x' (dimension 0) but 4 from input 'y'" in \
        capsys.readouterr().err


def test_stdlib_option_replaces_the_bundled_modules(tmp_path: Path, capsys) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "math.sknd").write_text("""operator add {
  @input { x: real[n]; y: real[n]; }
  @output { z: real[n]; }
  @lower { z[i] = x[i] - y[i], i < n; }
}
""")
    path = write(tmp_path, DYNAMIC)
    out = tmp_path / "o.npz"
    assert main(["eval", path, "--stdlib", str(lib), "--input", "x=[1.0, 2.0]", "--input",
                 "y=[3.0, 5.0]", "-o", str(out)]) == 0
    with np.load(out) as data:
        assert data["z"].tolist() == [-2.0, -3.0]
    assert main(["parse", path, "--stdlib", str(tmp_path / "nope")]) == 1
    assert "is not a folder" in capsys.readouterr().err


def test_engines_agree_and_verbose_names_them(tmp_path: Path, capsys) -> None:
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((20, 30)), rng.standard_normal((30, 10))
    np.savez(tmp_path / "in.npz", A=a, B=b)
    results = {}
    for engine in ("scalar", "vector", "auto"):
        out = tmp_path / f"{engine}.npz"
        assert main(["eval", write(tmp_path, MATMUL), "--inputs", str(tmp_path / "in.npz"),
                     "--engine", engine, "--verbose", "-o", str(out)]) == 0
        results[engine] = np.load(out)["C"]
        err = capsys.readouterr().err
        # 6000 iterations: auto vectorises; the scalar engine names each formula's path
        expected = "compiled; formula at line 4: generated code" if engine == "scalar" \
            else "vector"
        assert "engine: matmul (" in err and err.rstrip().endswith(expected), err
    for engine in ("vector", "auto"):
        np.testing.assert_allclose(results[engine], a @ b, rtol=1e-12)
    np.testing.assert_allclose(results["scalar"], a @ b, rtol=1e-12)


def test_max_memory_chunks_and_bad_sizes(tmp_path: Path, capsys) -> None:
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((8, 9)), rng.standard_normal((9, 7))
    np.savez(tmp_path / "in.npz", A=a, B=b)
    out = tmp_path / "out.npz"
    assert main(["eval", write(tmp_path, MATMUL), "--inputs", str(tmp_path / "in.npz"),
                 "--engine", "vector", "--max-memory", "1K", "-o", str(out)]) == 0
    np.testing.assert_allclose(np.load(out)["C"], a @ b, rtol=1e-12)
    for bad in ("lots", "0", "-5M"):
        assert main(["eval", write(tmp_path, MATMUL), "--inputs", str(tmp_path / "in.npz"),
                     f"--max-memory={bad}"]) == 2  # command-line misuse
        assert "--max-memory" in capsys.readouterr().err
