"""The arrays of a run on the command line, for the commands that run one (eval, einsum): its
inputs from the input options (files, literals, random values) and the summary of its
outputs."""

from __future__ import annotations

import argparse
from typing import Any, Callable

from refinterp.cli.options import RANDOM_TYPES, max_input_size, parse_types
from refinterp.cli.output import EXIT_OK, Output, UsageError
from refinterp.core.diagnostics import Diagnostic


def load_inputs(args: argparse.Namespace, fixed: Callable[[], dict],
                limits: Any) -> dict[str, Any]:
    """Input arrays from --inputs, --input NAME=PATH.npy|LITERAL and --random (each name from
    one place only), within the tensor size and pack length `limits`; `fixed()` gives the
    declared types of inputs with fixed shapes (for `--random NAME` and `--random-inputs`); a
    literal list of lists is a rank-≥2 array (`api.parse_array`)."""
    from refinterp import api
    from refinterp import io

    arrays: dict[str, Any] = {}
    origin: dict[str, str] = {}
    input_size = max_input_size(args)

    def add(name: str, value: Any, source: str) -> None:
        if name in origin:
            raise UsageError(f"input '{name}' is given by {origin[name]} and by {source}")
        origin[name] = source
        arrays[name] = value

    if args.inputs:
        for key, array in io.read_arrays(args.inputs, "--inputs",
                                         max_tensor_size=limits.max_tensor_size,
                                         max_input_size=input_size).items():
            add(key, array, f"--inputs '{args.inputs}'")
    for text in args.input:
        name, sep, value = text.partition("=")
        if not sep or not name:
            raise Diagnostic(f"--input expects NAME=PATH.npy or NAME=LITERAL; got '{text}'",
                             code="E0901")
        if value.endswith(".npy"):
            add(name, io.read_array(value, f"--input {name}",
                                    max_tensor_size=limits.max_tensor_size,
                                    max_input_size=input_size), f"--input {name}")
        else:
            add(name, api.parse_array(value, args.profile, f"<input {name}>"),
                f"--input {name}")
    wanted: dict[str, Any] = {}
    declared = None
    for text in args.random:
        if "=" in text:
            wanted.update(parse_types([text], "--random", limits.max_pack_length))
            continue
        declared = fixed() if declared is None else declared
        if text not in declared:
            raise Diagnostic(f"--random {text}: the input has no fixed declared shape; write "
                             f"--random {text}=TYPE[EXTENTS]", code="E0901",
                             notes=["inputs with fixed shapes: " + (", ".join(declared)
                                                                     or "none")])
        wanted[text] = declared[text]
    if args.random_inputs:
        declared = fixed() if declared is None else declared
        given = set(arrays) | {k.partition(".")[0] for k in arrays}
        for name, info in declared.items():
            if name not in given and name not in wanted:
                wanted[name] = info
    for name, info in wanted.items():
        if getattr(info, "dtype", None) not in RANDOM_TYPES and not isinstance(info, tuple):
            raise Diagnostic(f"--random {name}: no random values of type '{info.dtype}'",
                             notes=["the types are real, int and bool"], code="E0901")
    for name, value in api.random_inputs(wanted, args.seed, limits=limits).items():
        for key, item in io.flatten_packs({name: value}).items():
            add(key, item, f"--random {name}")
    return io.group_packs(arrays)


def write_results(args: argparse.Namespace, outputs: dict[str, Any], run: Any) -> None:
    """-o (the outputs, packs flattened) and --save-inputs (the inputs the run used)."""
    from refinterp import io

    if args.output:
        io.write_arrays(args.output, outputs, "-o")
    if args.save_inputs:
        io.write_arrays(args.save_inputs, io.flatten_packs(run.inputs), "--save-inputs")


def print_outputs(out: Output, outputs: dict[str, Any], about: dict[str, Any]) -> int:
    """A run's outputs: name, dtype, shape, min, max, mean of each, then the values of each
    output of at most `api.SMALL_ARRAY` elements (`api.values_text`); with --json, an object
    of `about` and the summaries (the values are in -o OUT.npz)."""
    from refinterp import api

    if out.json_mode:
        out.data({**about, "outputs": {name: api.summary(a) for name, a in outputs.items()}})
        return EXIT_OK
    out.table(["output", "dtype", "shape", "min", "max", "mean"],
              [[name, s["dtype"], str(s["shape"]), *(_number(s[k]) for k in
                                                     ("min", "max", "mean"))]
               for name, s in ((n, api.summary(a)) for n, a in outputs.items())])
    for name, array in outputs.items():
        text = api.values_text(array, prefix=f"{name} = ")
        if text is not None:
            out.result(text)
    return EXIT_OK


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"
