"""Back ends for tests/harness/test_harness_verdicts.py: ones that try to fool the harness (writing
into the case they were given), ones that answer in narrow dtypes (float16, bfloat16), and
one that dies on error cases. Each is refinterp itself (`faulty_backends.Faulty`) plus its
twist.

As Python back ends they are named `testsupport.verdict_backends:<Class>`; as a command back
end this file runs as `python3 verdict_backends.py MODE DIR OUTPUTS` (MODE: `float16`,
`garbage16`, `zeros`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

if __name__ == "__main__":  # run as a script: the project's folder holds testsupport
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from refinterp.io import encode_npz, flatten_packs, read_arrays  # noqa: E402
from testsupport.faulty_backends import Faulty  # noqa: E402


def narrow(outputs: dict[str, Any], dtype: Any, garbage: bool = False) -> dict[str, Any]:
    """The real outputs in `dtype` (rounded to nearest), or with `garbage` far from right."""
    result = {}
    for key, value in outputs.items():
        value = np.asarray(value)
        if value.dtype.kind == "f":
            value = (value * 1.01 + 0.5) if garbage else value
            value = value.astype(dtype)
        result[key] = value
    return result


class Float16(Faulty):
    """Correct values, returned as float16."""

    def corrupt(self, outputs):
        return narrow(outputs, np.float16)


class BFloat16(Faulty):
    """Correct values, returned as bfloat16 (ml_dtypes)."""

    garbage = False

    def corrupt(self, outputs):
        import ml_dtypes
        return narrow(outputs, ml_dtypes.bfloat16, self.garbage)


class BFloat16Garbage(BFloat16):
    garbage = True


class Overwriter(Faulty):
    """Writes zeros over the golden outputs of the case folder it is given, and returns
    zeros: a harness that reads its goldens from there would pass it."""

    def corrupt(self, outputs):
        return {k: np.zeros_like(v) for k, v in outputs.items()}

    def prepare(self, case):
        zeros = self.corrupt(flatten_packs(read_arrays(case.folder / "outputs.npz", "golden")))
        (case.folder / "outputs.npz").write_bytes(encode_npz(zeros))
        return super().prepare(case)


class DiesOnErrors(Faulty):
    """Its process ends (exit status 3) on every error case: a crash, not a rejection."""

    def prepare(self, case):
        if case.error is not None:
            os._exit(3)
        return super().prepare(case)


def main(argv: list[str]) -> int:
    """Command back end: MODE DIR OUTPUTS; the golden outputs of DIR (its own copy) are the
    answer, as float16 (`float16`), as wrong float16 (`garbage16`), or as zeros written both
    to OUTPUTS and over DIR/outputs.npz (`zeros`)."""
    mode, folder, outputs = argv[1], Path(argv[2]), Path(argv[3])
    golden = flatten_packs(read_arrays(folder / "outputs.npz", "golden"))
    if mode == "zeros":
        answer = {k: np.zeros_like(v) for k, v in golden.items()}
        (folder / "outputs.npz").write_bytes(encode_npz(answer))
    else:
        answer = narrow(golden, np.float16, garbage=mode == "garbage16")
    with open(outputs, "wb") as stream:  # np.savez keeps float16 (encode_npz writes float64)
        np.savez(stream, **answer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
