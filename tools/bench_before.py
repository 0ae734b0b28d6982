#!/usr/bin/env python3
"""Child-process driver of `tools/bench_models.py --before REF`: times whichever `refinterp`
is first on the import path (bench_models starts it with `PYTHONPATH=<REF extracted>`).

    python tools/bench_before.py SKND STDLIB INPUT.npy RUNS [OUTPUT.npy]

Loads the SkriptND folder SKND once (stdlib STDLIB), runs it once as a warm-up on the input of
INPUT.npy (in float64, `profile="khronos"`; its output saved to OUTPUT.npy when given), then
RUNS timed runs, and prints one JSON object on stdout: `{"best": seconds, "module": path of the
imported refinterp}`, or `{"refused": "CODE: message"}` when refinterp refuses the model.
Imports nothing of this repository but that `refinterp`, so it runs any revision.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def measure(sknd: str, stdlib: str, input_path: str, runs: int,
            output_path: str | None = None) -> dict:
    """The JSON object the driver prints (see the module docstring)."""
    import refinterp
    from refinterp import api

    value = np.load(input_path).astype(np.float64)
    try:
        program = api.load(sknd, stdlib=stdlib)
        signature = program.signature()
        inputs = {signature.inputs[0].name: value}
        output_name = signature.outputs[0].name

        def run() -> np.ndarray:
            return api.evaluate(program, inputs=inputs, profile="khronos").outputs[output_name]

        output = run()  # warm-up
        best = float("inf")
        for _ in range(runs):
            start = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - start)
    except api.Error as error:
        return {"refused": f"{error.code}: {error.message}"}
    if output_path:
        np.save(output_path, np.asarray(output))
    return {"best": best, "module": refinterp.__file__}


def main(argv: list[str]) -> int:
    if len(argv) not in (4, 5):
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    print(json.dumps(measure(argv[0], argv[1], argv[2], int(argv[3]),
                             argv[4] if len(argv) == 5 else None)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
