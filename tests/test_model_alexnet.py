"""An AlexNet-shaped graph at reduced sizes, end to end: a model folder with main.sknd, an
imported module of its own small operators, and @variable parameters stored as NNEF `.dat`
files (written here by an independent writer) — compared with the same network in NumPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from refinterp.cli import main
from testsupport.nnef_files import write_dat

OPS = """# Small operators for the test model (not the standard library).
operator conv {
    @attrib { stride: int = 1; padding: int = 0; }
    @input { input: real[b, c, h, w]; filter: real[k, c, fh, fw]; bias: real[k]; }
    @using {
        oh = (h + 2 * padding - fh) / stride + 1;
        ow = (w + 2 * padding - fw) / stride + 1;
    }
    @output { output: real[b, k, oh, ow]; }
    @lower {
        output[n, o, y, x] = bias[o], n < b, o < k, y < oh, x < ow;
        output[n, o, y, x] += input[n, i, |y * stride + dy - padding|,
                                    |x * stride + dx - padding|] * filter[o, i, dy, dx],
            n < b, o < k, y < oh, x < ow, i < c, dy < fh, dx < fw;
    }
}
operator relu {
    @input { x: real[s..]; }
    @output { y: real[s..]; }
    @lower { y[i..] = x[i..] > 0.0 ? x[i..] : 0.0, i < s; }
}
operator max_pool {
    @attrib { size: int; stride: int; }
    @input { input: real[b, c, h, w]; }
    @using { oh = (h - size) / stride + 1; ow = (w - size) / stride + 1; }
    @output { output: real[b, c, oh, ow]; }
    @lower {
        output[n, q, y, x] >= input[n, q, y * stride + dy, x * stride + dx],
            n < b, q < c, y < oh, x < ow, dy < size, dx < size;
    }
}
operator flatten {
    @input { x: real[b, c, h, w]; }
    @output { y: real[b, c * h * w]; }
    @lower { y[n, (q * h + i) * w + j] = x[n, q, i, j], n < b, q < c, i < h, j < w; }
}
operator linear {
    @input { input: real[b, c]; filter: real[n, c]; bias: real[n]; }
    @output { output: real[b, n]; }
    @lower {
        output[i, j] = bias[j], i < b, j < n;
        output[i, j] += input[i, k] * filter[j, k], i < b, j < n, k < c;
    }
}
operator softmax {
    @input { x: real[b, n]; }
    @output { y: real[b, n]; }
    @compose {
        m = max_row(x);
        e = exp_shifted(x, m);
        s = sum_row(e);
        y = divide(e, s);
    }
}
operator max_row {
    @input { x: real[b, n]; }
    @output { m: real[b]; }
    @lower { m[i] >= x[i, j], i < b, j < n; }
}
operator exp_shifted {
    @input { x: real[b, n]; m: real[b]; }
    @output { y: real[b, n]; }
    @lower { y[i, j] = exp(x[i, j] - m[i]), i < b, j < n; }
}
operator sum_row {
    @input { x: real[b, n]; }
    @output { s: real[b]; }
    @lower { s[i] += x[i, j], i < b, j < n; }
}
operator divide {
    @input { x: real[b, n]; s: real[b]; }
    @output { y: real[b, n]; }
    @lower { y[i, j] = x[i, j] / s[i], i < b, j < n; }
}
"""

MAIN = """import ops;

graph AlexNet {
    @attrib { batch: int = 1; classes: int = 5; }
    @input { input: real[batch, 3, 12, 12]; }
    @output { output: real[batch, classes]; }
    @variable {
        kernel1: real[4, 3, 3, 3];
        bias1: real[4];
        kernel2: real[6, 4, 3, 3];
        bias2: real[6];
        kernel3: real[10, 54];
        bias3: real[10];
        kernel4: real[classes, 10];
        bias4: real[classes];
    }
    @compose {
        conv1 = ops.conv{padding = 1}(input, kernel1, bias1);
        relu1 = ops.relu(conv1);
        pool1 = ops.max_pool{size = 2, stride = 2}(relu1);
        conv2 = ops.conv{padding = 1, stride = 1}(pool1, kernel2, bias2);
        relu2 = ops.relu(conv2);
        pool2 = ops.max_pool{size = 2, stride = 2}(relu2);
        flat = ops.flatten(pool2);
        fc1 = ops.linear(flat, kernel3, bias3);
        relu3 = ops.relu(fc1);
        fc2 = ops.linear(relu3, kernel4, bias4);
        output = ops.softmax(fc2);
    }
}
"""

SHAPES = {"kernel1": (4, 3, 3, 3), "bias1": (4,), "kernel2": (6, 4, 3, 3), "bias2": (6,),
          "kernel3": (10, 54), "bias3": (10,), "kernel4": (5, 10), "bias4": (5,)}


def np_conv(x, k, b, padding):
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    n, c, h, w = x.shape
    o, _, fh, fw = k.shape
    out = np.zeros((n, o, h - fh + 1, w - fw + 1))
    for dy in range(fh):
        for dx in range(fw):
            patch = x[:, :, dy:dy + out.shape[2], dx:dx + out.shape[3]]
            out += np.einsum("nchw,oc->nohw", patch, k[:, :, dy, dx])
    return out + b[None, :, None, None]


def np_pool(x):
    n, c, h, w = x.shape
    return x[:, :, :h // 2 * 2, :w // 2 * 2].reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def reference(x, p):
    relu = lambda v: np.maximum(v, 0.0)  # noqa: E731
    y = np_pool(relu(np_conv(x, p["kernel1"], p["bias1"], 1)))
    y = np_pool(relu(np_conv(y, p["kernel2"], p["bias2"], 1)))
    y = y.reshape(y.shape[0], -1)
    y = relu(y @ p["kernel3"].T + p["bias3"])
    y = y @ p["kernel4"].T + p["bias4"]
    e = np.exp(y - y.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture
def model_dir(tmp_path: Path) -> tuple[Path, dict]:
    folder = tmp_path / "alexnet"
    folder.mkdir()
    (folder / "main.sknd").write_text(MAIN)
    (folder / "ops.sknd").write_text(OPS)
    rng = np.random.default_rng(11)
    params = {}
    for name, shape in SHAPES.items():
        value = (rng.standard_normal(shape) * 0.5).astype(np.float32)  # stored as 32-bit
        write_dat(folder / f"main.AlexNet.{name}.dat", value)
        params[name] = value.astype(np.float64)
    return folder, params


def test_alexnet_shaped_graph_runs_end_to_end(model_dir, tmp_path: Path, capsys) -> None:
    folder, params = model_dir
    x = np.random.default_rng(12).standard_normal((1, 3, 12, 12))
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out.npz"
    assert main(["eval", str(folder), "--input", f"input={tmp_path / 'x.npy'}", "-o",
                 str(out)]) == 0
    with np.load(out) as data:
        result = data["output"]
    assert result.shape == (1, 5)
    np.testing.assert_allclose(result, reference(x, params), rtol=1e-12, atol=1e-14)
    assert abs(result.sum() - 1.0) < 1e-12


def test_alexnet_missing_variable_file(model_dir, tmp_path: Path, capsys) -> None:
    folder, _ = model_dir
    (folder / "main.AlexNet.kernel3.dat").unlink()
    assert main(["eval", str(folder), "--random", "input=real[1,3,12,12]"]) == 1
    err = capsys.readouterr().err
    assert "no value for variable 'main.AlexNet.kernel3' (real[10, 54])" in err
    assert "main.sknd:" in err  # located at the declaration


def test_alexnet_shapes_without_inputs(model_dir, capsys) -> None:
    folder, _ = model_dir
    assert main(["shapes", str(folder), "--attrib", "batch=2"]) == 0
    assert capsys.readouterr().out.strip() == "output: real[2, 5]"
