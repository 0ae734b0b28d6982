#!/usr/bin/env python3
"""Build the model-zoo corpus of tools/bench_models.py outside the repository.

    python tools/model_zoo.py --work DIR [--models a,b] [--seed N] [--no-convert]

The corpus is the nine light models of the `onnx` wheel (`onnx/backend/test/data/light/*.onnx`:
the model-zoo architectures with every weight a ConstantOfShape node). Per model, in
DIR/models/NAME/:

- `model.onnx`: every ConstantOfShape weight replaced by a seeded random initializer of a sane
  scale (`randomize`): He-style N(0, 2 / fan_in) for conv and gemm weights, small biases,
  batch-norm scales and variances in [0.5, 1.5] (positive), means and shifts N(0, 0.1); then
  the last layer before the Softmax scaled so the logits have standard deviation 2
  (`calibrate_logits`: otherwise the Softmax of a deep random net is one-hot and hides any
  disagreement);
- `input.npy`: a seeded N(0, 1) float32 input; `expected.npy`: ONNX Runtime's float32 output;
- `sknd/`: the model converted to SkriptND (main.sknd and its .dat weights) by the Khronos
  converter of NNEF-Tools v2.0 (`nnef_tools.convert --input-format onnx --output-format sknd`).

The converter needs the `skriptnd` extension of NNEF-Tools' `skriptnd-pyproject`, built here
with `pip install --no-build-isolation` into DIR/khronos/venv (a venv that also sees this
interpreter's packages through a .pth file); the sources are taken from the NNEF-Tools mirror
(`--nnef-tools GIT_DIR`, branch v2.0) or an extracted copy (`--nnef-tools-src DIR`). The
extension crashes at interpreter exit, so every conversion runs in a child process that ends
with `os._exit`. Without the converter (or with `--no-convert`) the rest of the corpus is still
built, and bench_models.py times ONNX Runtime and the reference evaluator alone.

Idempotent: a step whose output exists is skipped (delete the file to redo it). Nothing here is
ever written inside the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import io
from pathlib import Path

import numpy as np

MIRROR = Path("/work/.mirror/KhronosGroup+NNEF-Tools/repo")
BRANCH = "v2.0"
INPUT_SEED = 1
WEIGHT_SEED = 0

# short name -> (file stem in onnx/backend/test/data/light, name in the table)
MODELS: dict[str, tuple[str, str]] = {
    "alexnet": ("light_bvlc_alexnet", "AlexNet"),
    "densenet121": ("light_densenet121", "DenseNet-121"),
    "inception_v1": ("light_inception_v1", "Inception v1"),
    "inception_v2": ("light_inception_v2", "Inception v2"),
    "resnet50": ("light_resnet50", "ResNet-50"),
    "shufflenet": ("light_shufflenet", "ShuffleNet"),
    "squeezenet": ("light_squeezenet", "SqueezeNet"),
    "vgg19": ("light_vgg19", "VGG-19"),
    "zfnet512": ("light_zfnet512", "ZFNet-512"),
}

# the child that converts one model: the skriptnd extension crashes at interpreter exit, so
# the child leaves by os._exit with the converter's status
CONVERT_CHILD = """
import os, runpy, sys, traceback
sys.argv = ["nnef_tools.convert"] + sys.argv[1:]
code = 0
try:
    runpy.run_module("nnef_tools.convert", run_name="__main__")
except SystemExit as done:
    code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
except BaseException:
    traceback.print_exc()
    code = 1
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
"""


def light_folder() -> Path:
    """The folder of the light models in the installed `onnx` wheel."""
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


# --------------------------------------------------------------------------- weights


def _consumers(graph) -> dict[str, list[tuple[str, int, object]]]:
    """For each tensor name, the (op_type, input index, node) that read it."""
    found: dict[str, list] = {}
    for node in graph.node:
        for index, name in enumerate(node.input):
            found.setdefault(name, []).append((node.op_type, index, node))
    return found


def _follow(graph, name: str, consumers: dict) -> list[tuple[str, int, object]]:
    """The consumers of `name`, looking through Unsqueeze/Reshape (DenseNet and Inception v2
    unsqueeze their batch-norm vectors before a Mul or an Add)."""
    found = []
    for op_type, index, node in consumers.get(name, []):
        if op_type in ("Unsqueeze", "Reshape", "Identity") and index == 0:
            found.extend(_follow(graph, node.output[0], consumers))
        else:
            found.append((op_type, index, node))
    return found


def _attribute(node, name: str, default: int) -> int:
    for attribute in node.attribute:
        if attribute.name == name:
            return attribute.i
    return default


def weight_values(shape: tuple[int, ...], uses: list[tuple[str, int, object]],
                  rng: np.random.Generator) -> np.ndarray:
    """Random float32 values of a sane scale for a weight of `shape` read by `uses`
    ((op_type, input index, node) triples): He-style N(0, 2 / fan_in) for a Conv filter
    (fan_in = input channels x kernel volume) and a Gemm matrix (fan_in = its reduced
    extent); uniform [0.5, 1.5] for batch-norm scales and variances (variances must be
    positive) and for a Mul factor; N(0, 0.1) for batch-norm means and shifts and an Add term;
    N(0, 0.05) for biases and anything else."""
    op_type, index, node = uses[0] if uses else ("", -1, None)
    if op_type == "Conv" and index == 1:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
    if op_type == "Gemm" and index == 1:
        # a filter reshaped to the matrix (Inception v1) counts as its flattened form
        fan_in = int(np.prod(shape[1:])) if _attribute(node, "transB", 0) else shape[0]
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
    if op_type == "MatMul" and index == 1 and len(shape) == 2:
        return (rng.standard_normal(shape) * np.sqrt(2.0 / shape[0])).astype(np.float32)
    if (op_type == "BatchNormalization" and index in (1, 4)) or op_type == "Mul":
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    if (op_type == "BatchNormalization" and index in (2, 3)) or op_type in ("Add", "Sum"):
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)
    return (rng.standard_normal(shape) * 0.05).astype(np.float32)


def randomize(model, seed: int = WEIGHT_SEED):
    """A copy of ONNX `model` whose ConstantOfShape nodes (the weights of the light models,
    their shape an initializer) are replaced by random initializers (`weight_values`), drawn
    in node order from a generator seeded by `seed`. The shape initializers no longer used are
    dropped, and the graph inputs become the true inputs only (initializers are not listed as
    inputs; IR version at least 4 allows that)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    initial = {tensor.name: numpy_helper.to_array(tensor) for tensor in graph.initializer}
    consumers = _consumers(graph)
    rng = np.random.default_rng(seed)
    kept_nodes, weights = [], []
    for node in graph.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in initial:
            kept_nodes.append(node)
            continue
        shape = tuple(int(d) for d in initial[node.input[0]].reshape(-1))
        name = node.output[0]
        weights.append(numpy_helper.from_array(
            weight_values(shape, _follow(graph, name, consumers), rng), name))
    del graph.node[:]
    graph.node.extend(kept_nodes)
    used = {name for node in graph.node for name in node.input} | \
           {output.name for output in graph.output}
    kept = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept + weights)
    constant = {tensor.name for tensor in graph.initializer}
    inputs = [value for value in graph.input if value.name not in constant and value.name in used]
    del graph.input[:]
    graph.input.extend(inputs)
    model.ir_version = max(model.ir_version, 4)
    return model


def seeded_input(model, seed: int = INPUT_SEED) -> tuple[str, np.ndarray]:
    """The name of `model`'s only true input and a seeded N(0, 1) float32 value for it."""
    (value,) = list(model.graph.input)
    shape = tuple(d.dim_value or 1 for d in value.type.tensor_type.shape.dim)
    return value.name, np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


LOGIT_STD = 2.0  # the standard deviation of the logits after `calibrate_logits`
# operators between the last Conv/Gemm and the Softmax that commute with a positive scale
HOMOGENEOUS = ("Relu", "GlobalAveragePool", "AveragePool", "MaxPool", "Reshape", "Flatten",
               "Dropout", "Identity", "Squeeze")


def last_linear(model):
    """The Conv or Gemm node whose output, through positively homogeneous operators only,
    is the input of the Softmax that makes the graph's output, and that Softmax's input name;
    None when there is no such pair (DenseNet ends without a Softmax)."""
    producers = {output: node for node in model.graph.node for output in node.output}
    softmax = producers.get(model.graph.output[0].name)
    if softmax is None or softmax.op_type != "Softmax":
        return None
    node = producers.get(softmax.input[0])
    while node is not None and node.op_type in HOMOGENEOUS:
        node = producers.get(node.input[0])
    if node is None or node.op_type not in ("Conv", "Gemm"):
        return None
    return node, softmax.input[0]


def calibrate_logits(model, input_name: str, value: np.ndarray, scratch: Path):
    """Scale the weights and bias of `last_linear`'s layer so that the logits of `value`
    have standard deviation LOGIT_STD: random deep nets (residual sums, batch norms with
    made-up statistics) reach logits of 1e5, whose Softmax is one-hot and would hide any
    disagreement. A positive scale of the last linear layer scales the logits exactly (the
    operators after it are positively homogeneous), so nothing else changes."""
    import onnx
    from onnx import numpy_helper

    found = last_linear(model)
    if found is None:
        return model
    node, logits = found
    probe = onnx.ModelProto.FromString(model.SerializeToString())
    probe.graph.output.append(onnx.helper.make_tensor_value_info(logits, onnx.TensorProto.FLOAT,
                                                                 None))
    onnx.save(probe, str(scratch))
    try:
        (values,) = ort_session(scratch).run([logits], {input_name: value})
    finally:
        scratch.unlink()
    spread = float(np.std(values))
    if not np.isfinite(spread) or spread == 0.0:
        return model
    scale = LOGIT_STD / spread
    producers = {output: n for n in model.graph.node for output in n.output}
    targets = set()
    for name in node.input[1:3]:
        while name in producers and producers[name].op_type in ("Reshape", "Unsqueeze"):
            name = producers[name].input[0]  # a weight reshaped before use (Inception v1)
        targets.add(name)
    for tensor in model.graph.initializer:
        if tensor.name in targets:
            scaled = (numpy_helper.to_array(tensor) * scale).astype(np.float32)
            tensor.CopyFrom(numpy_helper.from_array(scaled, tensor.name))
    return model


def ort_session(path: Path):
    """An ONNX Runtime session on `path`: CPU, one thread (the benchmark's peer)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


# --------------------------------------------------------------------------- converter


def extract_sources(work: Path, mirror: Path | None, src: Path | None) -> Path:
    """The folder holding `skriptnd-pyproject` and `nnef_tools-pyproject`: `src` as given,
    else DIR/khronos/src extracted from the mirror's v2.0 branch (once)."""
    if src is not None:
        return src
    target = work / "khronos" / "src"
    if (target / "nnef_tools-pyproject" / "nnef_tools" / "convert.py").exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", f"--git-dir={mirror or MIRROR}", "archive", BRANCH, "skriptnd-pyproject",
         "nnef_tools-pyproject"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target)
    return target


def converter_python(work: Path, src: Path, log) -> Path:
    """The Python of DIR/khronos/venv with the `skriptnd` extension built (once): a venv on
    this interpreter's base, seeing this interpreter's packages (numpy, onnx, setuptools)
    through a .pth file, plus wheel, six, future and psutil from the package index."""
    venv = work / "khronos" / "venv"
    python = venv / "bin" / "python"
    # os._exit: the extension crashes at interpreter exit
    probe = [str(python), "-c", "import os, _skriptnd, skriptnd, six, onnx; os._exit(0)"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, stdout=log,
                       stderr=log)
    site = next((venv / "lib").glob("python3*/site-packages"))
    here = [p for p in sys.path if p.endswith("site-packages")]
    (site / "refinterp_zoo.pth").write_text("\n".join(here) + "\n")
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run(pip + ["wheel", "six", "future", "psutil", "pybind11"], check=True,
                   stdout=log, stderr=log)
    subprocess.run(pip + ["--no-build-isolation", "--no-deps", str(src / "skriptnd-pyproject")],
                   check=True, stdout=log, stderr=log)
    subprocess.run(probe, check=True, stdout=log, stderr=log)
    return python


def convert(python: Path, src: Path, onnx_path: Path, out: Path, log) -> bool:
    """Convert `onnx_path` to the SkriptND folder `out` in a child process; whether it worked
    (the converter's messages go to `log`)."""
    env = dict(os.environ, PYTHONPATH=str(src / "nnef_tools-pyproject"))
    command = [str(python), "-c", CONVERT_CHILD, "--input-format", "onnx",
               "--output-format", "sknd", "--input-model", str(onnx_path),
               "--output-model", str(out)]
    done = subprocess.run(command, env=env, stdout=log, stderr=log, cwd=out.parent)
    return done.returncode == 0 and (out / "main.sknd").exists()


# --------------------------------------------------------------------------- corpus


def build_model(name: str, work: Path, seed: int) -> dict:
    """Write DIR/models/NAME/{model.onnx, input.npy, expected.npy, info.json} (each once) and
    return the info: the ONNX input and output names and the table's name."""
    import onnx

    folder = work / "models" / name
    folder.mkdir(parents=True, exist_ok=True)
    info_path = folder / "info.json"
    if info_path.exists() and (folder / "expected.npy").exists():
        return json.loads(info_path.read_text())
    stem, title = MODELS[name]
    model = randomize(onnx.load(str(light_folder() / f"{stem}.onnx")), seed)
    input_name, value = seeded_input(model)
    model = calibrate_logits(model, input_name, value, folder / "probe.onnx")
    onnx.save(model, str(folder / "model.onnx"))
    np.save(folder / "input.npy", value)
    session = ort_session(folder / "model.onnx")
    output_name = session.get_outputs()[0].name
    (expected,) = session.run([output_name], {input_name: value})
    np.save(folder / "expected.npy", expected)
    info = {"name": name, "title": title, "input": input_name, "output": output_name,
            "seed": seed}
    info_path.write_text(json.dumps(info, indent=1))
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, help="the corpus folder (outside the repo)")
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--seed", type=int, default=WEIGHT_SEED, help="the weights' seed")
    parser.add_argument("--nnef-tools", type=Path, default=None,
                        help=f"the NNEF-Tools git directory (default {MIRROR})")
    parser.add_argument("--nnef-tools-src", type=Path, default=None,
                        help="an extracted NNEF-Tools tree instead of the mirror")
    parser.add_argument("--no-convert", action="store_true", help="skip the conversion")
    args = parser.parse_args(argv)
    work = Path(args.work).resolve()
    repository = Path(__file__).resolve().parent.parent
    if work == repository or repository in work.parents:
        parser.error("--work must be outside the repository")
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {', '.join(MODELS)}")
    work.mkdir(parents=True, exist_ok=True)
    python = src = None
    with open(work / "khronos.log", "a") as log:
        if not args.no_convert:
            try:
                src = extract_sources(work, args.nnef_tools, args.nnef_tools_src)
                python = converter_python(work, src, log)
            except (subprocess.CalledProcessError, OSError, StopIteration) as error:
                print(f"converter unavailable ({error}); see {work / 'khronos.log'}")
        status = 0
        for name in names:
            info = build_model(name, work, args.seed)
            out = work / "models" / name / "sknd"
            if (out / "main.sknd").exists():
                state = "converted (reused)"
            elif python is None:
                state = "not converted"
            else:
                log.write(f"--- converting {name}\n")
                log.flush()
                converted = convert(python, src, work / "models" / name / "model.onnx", out, log)
                state = "converted" if converted else f"conversion FAILED (see {log.name})"
                status = status if converted else 1
            print(f"{info['title']:<14} input {info['input']!r} -> {state}")
    return status


if __name__ == "__main__":
    sys.exit(main())
