"""Deliberately faulty back ends for the harness tests (tests/harness/test_harness.py): each is
refinterp itself with one defect, so that the harness must catch, classify and explain it.

As Python back ends they are named `testsupport.faulty_backends:<Class>`; as a command back end
this file runs as `python3 faulty_backends.py MODE DIR OUTPUTS`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import refinterp.api as api
from refinterp.harness import Unsupported, load_case
from refinterp.io import encode_npz, flatten_packs


class _Runner:
    def __init__(self, backend: "Faulty", case: Any) -> None:
        self.backend, self.case = backend, case
        self.program = api.load(case.model)

    def run(self, inputs: dict[str, Any]) -> dict[str, Any]:
        outputs = api.evaluate(self.program, inputs=inputs, params=self.case.params or None,
                               profile=self.backend.computes).outputs
        return self.backend.corrupt(flatten_packs(outputs))


class Faulty:
    """refinterp, then `corrupt` applied to its outputs."""

    profile = "spec"     # what the back end claims to follow
    computes = "spec"    # what it really computes

    def prepare(self, case: Any) -> _Runner:
        return _Runner(self, case)

    def corrupt(self, outputs: dict[str, Any]) -> dict[str, Any]:
        return outputs


def _first_real(outputs: dict[str, Any]) -> str | None:
    return next((k for k, v in outputs.items() if v.dtype.kind == "f" and v.size), None)


class WrongElement(Faulty):
    def corrupt(self, outputs):
        key = _first_real(outputs)
        if key is not None:
            outputs[key] = outputs[key].copy()
            outputs[key].flat[0] += 1.0
        return outputs


class Transposed(Faulty):
    def corrupt(self, outputs):
        return {k: np.swapaxes(v, -1, -2) if v.ndim >= 2 else v for k, v in outputs.items()}


class OneNaN(Faulty):
    def corrupt(self, outputs):
        key = _first_real(outputs)
        if key is not None:
            outputs[key] = outputs[key].copy()
            outputs[key].flat[0] = np.nan
        return outputs


class MissingOutput(Faulty):
    def corrupt(self, outputs):
        return dict(list(outputs.items())[1:])


class IntsForReals(Faulty):
    def corrupt(self, outputs):
        return {k: v.astype(np.int64) if v.dtype.kind == "f" else v for k, v in outputs.items()}


class Float32(Faulty):
    """Not faulty: a float32 back end (passes under the default dtype policy)."""

    def corrupt(self, outputs):
        return {k: v.astype(np.float32) if v.dtype.kind == "f" else v for k, v in outputs.items()}


class Crash(Faulty):
    def prepare(self, case):
        raise RuntimeError("segfault in the kernel library")


class Hang(Faulty):
    def corrupt(self, outputs):
        time.sleep(30)
        return outputs


class TruncatingDivision(Faulty):
    """Claims the spec profile, computes as the Khronos runtime (C integer division)."""

    computes = "khronos"


class AcceptsInvalid(Faulty):
    """Runs even what it should reject: zeros for an invalid case."""

    def prepare(self, case):
        if case.error is not None:
            return _Zeros()
        return super().prepare(case)


class _Zeros:
    def run(self, inputs):
        return {"z": np.zeros(1)}


class NoInts(Faulty):
    """Supports real inputs only."""

    def prepare(self, case):
        if any(np.asarray(v).dtype.kind != "f" for v in flatten_packs(case.inputs).values()):
            raise Unsupported("only real inputs are supported")
        return super().prepare(case)


def main(argv: list[str]) -> int:
    """Command back end: `faulty_backends.py MODE DIR OUTPUTS`; MODE is a class name above,
    `unsupported` (exit 77), `hang` (sleeps) or `nothing` (exit 0 without outputs)."""
    mode, folder, outputs = argv[1], Path(argv[2]), Path(argv[3])
    if mode == "unsupported":
        sys.stderr.write("this back end supports no case\n")
        return 77
    if mode == "hang":
        time.sleep(60)
        return 0
    if mode == "nothing":
        return 0
    case = load_case(folder)
    try:
        backend = globals()[mode]()
        produced = backend.prepare(case).run(case.inputs)
    except Exception as error:  # noqa: BLE001 - a back end reports and exits non-zero
        sys.stderr.write(f"{type(error).__name__}: {error}\n")
        return 1
    outputs.write_bytes(encode_npz(produced))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
