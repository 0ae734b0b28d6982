#!/usr/bin/env python3
"""Model-zoo benchmark: the light ONNX model-zoo architectures converted to SkriptND by the
Khronos converter, run by refinterp and by its peers in the same run.

    python tools/bench_models.py --work DIR [--models a,b] [--repeat N] [--json [OUT]]
                                 [--stdlib DIR] [--top N] [--before REF]

DIR is a corpus built by tools/model_zoo.py (the randomized ONNX model, its input, ONNX
Runtime's output and the converted SkriptND folder per model). Per model:

- agreement: max|refinterp - ORT| / max|ORT| over the output (bench_peers.relative_error),
  refinterp computing in float64 with `--profile khronos` and the Khronos stdlib (`--stdlib`,
  default /tmp/khr/skriptnd-pyproject/skriptnd/stdlib), ORT in float32; above 1e-4 is a failure;
- times, interleaved in rounds so a load on the machine hits every peer alike, best of
  `--repeat` (default 3) after one warm-up round: refinterp in process (`api.evaluate` on the
  loaded program, the .dat weights read by the run as any run reads them), ONNX Runtime float32
  with one thread; the ONNX reference evaluator (`onnx.reference.ReferenceEvaluator`) once per
  round from the first, without warm-up, as `--reference-repeat` says (default 1: once); and
  refinterp cold: `refinterp eval DIR --profile khronos --stdlib S --input NAME=input.npy -o
  OUT.npz` as a child process (interpreter start, load, params, run, write);
- where refinterp's time goes: one more run with the `trace` hook (docs/api.md "Observing a
  run"), the time of each invocation minus its callees', summed by operator; the `--top` (3)
  largest shares are printed. The hook's own cost is in the total, so this run is not timed.
  The time to read the model's .dat files once (`numeric.tensorfile.read_tensor`, no cache)
  is printed beside it: the part of the graph's own time that is the weights.

With `--before REF` (a git revision of this repository), REF is extracted (`git archive REF |
tar -x`) into a temporary folder, removed at the end, and each round also times that older
refinterp: a child process of this interpreter with `PYTHONPATH=<that folder>` runs
tools/bench_before.py (load once, one warm-up run, one timed run; its JSON on stdout), so the
older refinterp is timed in process like the current one. Its output of the first round is
checked against ORT as the current one's; the table gains its error, its time and the speed-up
(before time / current time: above 1, the current refinterp is faster); a model it refuses
shows its diagnostic in its columns.

A model refinterp refuses (a diagnostic) is listed with the diagnostic's code and message.
Prints a Markdown table (ms, ratios; the Targets of docs/performance.md "Model zoo": refinterp
at least 2x faster than the reference evaluator and within 10x of ORT) and, with `--json`, the
numbers (to OUT, or stdout without it). Exit status 1 when a model is refused or disagrees,
never for a missed speed target (times are never asserted).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS.parent))
sys.path.insert(0, str(TOOLS))

from bench_peers import relative_error  # noqa: E402
from model_zoo import MODELS, ort_session  # noqa: E402

KHRONOS_STDLIB = Path("/tmp/khr/skriptnd-pyproject/skriptnd/stdlib")
TOLERANCE = 1e-4        # refinterp (float64) vs ONNX Runtime (float32), relative
TARGET_REFERENCE = 2.0  # reference evaluator time / refinterp time, at least
TARGET_ORT = 10.0       # refinterp time / ORT time, at most


@dataclass
class Result:
    """One model's numbers (seconds; None when not measured)."""
    name: str
    title: str
    error: float | None = None          # relative error vs ORT
    refinterp: float | None = None      # in process
    cold: float | None = None           # `refinterp eval` child process
    ort: float | None = None
    reference: float | None = None
    refused: str | None = None          # the diagnostic, when refinterp refused the model
    note: str | None = None             # why a column is empty (not converted, ...)
    weights_read: float | None = None   # reading every .dat file once (uncached)
    operators: list[tuple[str, float]] = field(default_factory=list)  # (operator, share)
    before: float | None = None         # the --before revision's refinterp, in process
    before_error: float | None = None   # its relative error vs ORT
    before_refused: str | None = None   # its diagnostic (or its driver's failure)

    @property
    def vs_reference(self) -> float | None:
        """Reference evaluator time / refinterp time (above 1: refinterp faster)."""
        return _ratio(self.reference, self.refinterp)

    @property
    def vs_ort(self) -> float | None:
        """refinterp time / ORT time (how many times slower than ORT)."""
        return _ratio(self.refinterp, self.ort)

    @property
    def speedup(self) -> float | None:
        """The --before revision's time / the current time (above 1: faster now)."""
        return _ratio(self.before, self.refinterp)


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


# --------------------------------------------------------------------------- table


def format_seconds(seconds: float | None) -> str:
    """`353 ms` below a second, `3.58 s` from one; `12.3 ms`, `0.41 ms` for small times;
    empty for None."""
    if seconds is None:
        return ""
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    milliseconds = seconds * 1e3
    if milliseconds >= 100:
        return f"{milliseconds:.0f} ms"
    if milliseconds >= 10:
        return f"{milliseconds:.1f} ms"
    return f"{milliseconds:.2f} ms"


def format_ratio(ratio: float | None) -> str:
    """`1.8×`, `0.5×` below 10, `13×`, `110×` from 10; empty for None."""
    if ratio is None:
        return ""
    return f"{ratio:.1f}×" if ratio < 10 else f"{ratio:.0f}×"


def format_error(error: float | None) -> str:
    return "" if error is None else f"{error:.1e}"


HEADER = ("model", "max rel. error vs ORT", "refinterp", "cold `refinterp eval`",
          "ONNX Runtime f32", "onnx.reference", "reference / refinterp", "refinterp / ORT",
          "cold / in process")
BEFORE_HEADER = ("before: max rel. error vs ORT", "before", "speed-up (before / after)")


def before_cells(r: Result) -> list[str]:
    """The --before columns of `r`: the older refinterp's error (or its diagnostic), its time
    and the speed-up (before time / current time)."""
    if r.before_refused:
        return [f"**refused**: {r.before_refused}", "", ""]
    error = format_error(r.before_error)
    if r.before_error is not None and not r.before_error <= TOLERANCE:
        error = f"**{error}**"
    return [error, format_seconds(r.before), format_ratio(r.speedup)]


def format_table(results: list[Result], before: bool = False) -> str:
    """The Markdown table of `results`: one row per model; a refused or unconverted model
    says why in place of its refinterp columns. Ratios that miss a target are in bold. With
    `before`, the --before revision's columns are appended."""
    header = HEADER + (BEFORE_HEADER if before else ())
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in results:
        vs_ref, vs_ort = format_ratio(r.vs_reference), format_ratio(r.vs_ort)
        if r.vs_reference is not None and r.vs_reference < TARGET_REFERENCE:
            vs_ref = f"**{vs_ref}**"
        if r.vs_ort is not None and r.vs_ort > TARGET_ORT:
            vs_ort = f"**{vs_ort}**"
        error = format_error(r.error)
        if r.error is not None and not r.error <= TOLERANCE:
            error = f"**{error}**"
        if r.refused or r.note:
            why = f"**refused**: {r.refused}" if r.refused else r.note
            cells = [r.title, why, "", "", format_seconds(r.ort), format_seconds(r.reference),
                     "", "", ""]
        else:
            cells = [r.title, error, format_seconds(r.refinterp), format_seconds(r.cold),
                     format_seconds(r.ort), format_seconds(r.reference), vs_ref, vs_ort,
                     format_ratio(_ratio(r.cold, r.refinterp))]
        if before:
            cells += before_cells(r)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_operators(results: list[Result]) -> str:
    """Per model, the operators refinterp spent most of its time in, with their shares."""
    lines = []
    for r in results:
        if r.operators:
            shares = ", ".join(f"{name} {share:.0%}" for name, share in r.operators)
            read = f"; reading its .dat files alone: {format_seconds(r.weights_read)}" \
                if r.weights_read is not None else ""
            lines.append(f"- {r.title}: {shares}{read}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- measuring


class OperatorClock:
    """A `trace` hook summing, per operator, the time of its invocations minus that of the
    invocations they make (its own time); the root graph's own time is the run's overhead
    outside every operator (loading the .dat weights included), listed as ROOT."""

    ROOT = "(graph itself: weights, binding)"

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}
        self._stack: list[list] = []  # [operator, start, time in callees]

    def __call__(self, event: str, operator: str, scoped: Any, tensors: Any) -> None:
        now = time.perf_counter()
        if event == "call":
            self._stack.append([operator if self._stack else self.ROOT, now, 0.0])
            return
        name, start, callees = self._stack.pop()
        spent = now - start
        self.totals[name] = self.totals.get(name, 0.0) + spent - callees
        if self._stack:
            self._stack[-1][2] += spent

    def top(self, count: int) -> list[tuple[str, float]]:
        """The `count` operators with the largest own time, with their share of the total."""
        total = sum(self.totals.values()) or 1.0
        ranked = sorted(self.totals.items(), key=lambda item: -item[1])[:count]
        return [(name, seconds / total) for name, seconds in ranked]


def timed(function: Callable[[], Any]) -> tuple[float, Any]:
    """(seconds, result) of one call."""
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def refinterp_command() -> list[str]:
    """The `refinterp` command of this interpreter's environment."""
    script = Path(sys.executable).parent / "refinterp"
    return [str(script)] if script.exists() else [sys.executable, "-m", "refinterp"]


class Model:
    """One corpus model ready to run by every peer."""

    def __init__(self, folder: Path, stdlib: Path) -> None:
        self.folder = folder
        self.info = json.loads((folder / "info.json").read_text())
        self.input = np.load(folder / "input.npy")
        self.expected = np.load(folder / "expected.npy")
        self.sknd = folder / "sknd"
        self.stdlib = stdlib
        self.program = None

    @property
    def converted(self) -> bool:
        return (self.sknd / "main.sknd").exists()

    def load(self) -> None:
        """Load the SkriptND program (outside the timed region) and name its input/output."""
        from refinterp import api

        self.program = api.load(self.sknd, stdlib=self.stdlib)
        signature = self.program.signature()
        self.input_name = signature.inputs[0].name
        self.output_name = signature.outputs[0].name

    def run_refinterp(self, hooks: Any = None) -> np.ndarray:
        from refinterp import api

        run = api.evaluate(self.program, inputs={self.input_name: self.input.astype(np.float64)},
                           profile="khronos", hooks=hooks or api.Hooks())
        return run.outputs[self.output_name]

    def run_cold(self, scratch: Path) -> None:
        """`refinterp eval` of the model folder as a child process."""
        command = refinterp_command() + [
            "eval", str(self.sknd), "--profile", "khronos", "--stdlib", str(self.stdlib),
            "--input", f"{self.input_name}={self.folder / 'input.npy'}",
            "-o", str(scratch / "out.npz")]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"refinterp eval failed: {done.stderr.strip()[-300:]}")


def extract_revision(revision: str, folder: Path) -> None:
    """Write the tree of `revision` of this repository into `folder` (`git archive | tar -x`);
    a ValueError when git does not know the revision."""
    repository = TOOLS.parent
    known = subprocess.run(["git", "-C", str(repository), "rev-parse", "--verify", "--quiet",
                            f"{revision}^{{commit}}"], capture_output=True, text=True)
    if known.returncode != 0:
        raise ValueError(f"no revision {revision!r} in {repository}")
    archive = subprocess.Popen(["git", "-C", str(repository), "archive", revision],
                               stdout=subprocess.PIPE)
    untar = subprocess.run(["tar", "-x", "-C", str(folder)], stdin=archive.stdout)
    archive.stdout.close()
    if archive.wait() != 0 or untar.returncode != 0:
        raise ValueError(f"could not extract {revision!r} of {repository}")


def run_before(model: Model, tree: Path, runs: int, output: Path | None = None) -> dict:
    """tools/bench_before.py on `model` in a child process importing the refinterp of `tree`
    (an extracted revision): its JSON answer; `{"refused": ...}` naming a failed child."""
    environment = dict(os.environ, PYTHONPATH=str(tree))
    command = [sys.executable, str(TOOLS / "bench_before.py"), str(model.sknd),
               str(model.stdlib), str(model.folder / "input.npy"), str(runs)]
    done = subprocess.run(command + ([str(output)] if output else []), capture_output=True,
                          text=True, env=environment, cwd=tree)
    if done.returncode != 0:
        return {"refused": f"the driver failed: {done.stderr.strip()[-300:]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(model: Model, repeat: int, reference_repeat: int, top: int,
            before: Path | None = None) -> Result:
    """Every number of `model` (see the module docstring), peers interleaved by round;
    `before`: the extracted tree of the --before revision, also timed."""
    import onnx.reference

    from refinterp import api

    info = model.info
    result = Result(info["name"], info["title"])
    session = ort_session(model.folder / "model.onnx")
    reference = onnx.reference.ReferenceEvaluator(str(model.folder / "model.onnx"))
    feeds = {info["input"]: model.input}
    ours_ok = model.converted
    if not ours_ok:
        result.note = "not converted (tools/model_zoo.py)"
    else:
        try:
            model.load()
            result.error = relative_error(model.run_refinterp(), model.expected)  # warm-up
        except api.Error as error:
            result.refused = f"{error.code}: {error.message}"
            ours_ok = False
    session.run(None, feeds)  # warm-up
    best: dict[str, float] = {}

    def keep(key: str, seconds: float) -> None:
        best[key] = min(best.get(key, float("inf")), seconds)

    with tempfile.TemporaryDirectory(prefix="bench_models_") as scratch:
        for round_ in range(repeat):
            if ours_ok:
                keep("refinterp", timed(model.run_refinterp)[0])
                keep("cold", timed(lambda: model.run_cold(Path(scratch)))[0])
            keep("ort", timed(lambda: session.run(None, feeds))[0])
            if before is not None and model.converted and not result.before_refused:
                measure_before(model, before, Path(scratch), result, round_ == 0)
                if result.before is not None:
                    keep("before", result.before)
            if round_ < reference_repeat:
                keep("reference", timed(lambda: reference.run(None, feeds))[0])
    result.refinterp, result.cold = best.get("refinterp"), best.get("cold")
    result.ort, result.reference = best.get("ort"), best.get("reference")
    result.before = best.get("before")
    if ours_ok:
        from refinterp.numeric.tensorfile import read_tensor

        result.weights_read = timed(lambda: [read_tensor(p)
                                             for p in sorted(model.sknd.glob("*.dat"))])[0]
    if ours_ok and top > 0:
        clock = OperatorClock()
        model.run_refinterp(api.Hooks(trace=clock))
        result.operators = clock.top(top)
    return result


def measure_before(model: Model, tree: Path, scratch: Path, result: Result,
                   check: bool) -> None:
    """One round of the --before revision on `model`: its time into `result.before`, its
    diagnostic into `result.before_refused`; with `check`, its error vs ORT too."""
    output = scratch / "before.npy" if check else None
    answer = run_before(model, tree, 1, output)
    if "refused" in answer:
        result.before_refused = answer["refused"]
        return
    result.before = answer["best"]
    if output is not None:
        result.before_error = relative_error(np.load(output), model.expected)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, help="the corpus of tools/model_zoo.py")
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds (best of)")
    parser.add_argument("--reference-repeat", type=int, default=1,
                        help="rounds that also time the reference evaluator")
    parser.add_argument("--stdlib", type=Path, default=KHRONOS_STDLIB,
                        help="the Khronos stdlib folder")
    parser.add_argument("--top", type=int, default=3, help="operators listed per model")
    parser.add_argument("--json", nargs="?", const="-", default=None, metavar="OUT",
                        help="also write the numbers as JSON (to stdout without OUT)")
    parser.add_argument("--before", metavar="REF",
                        help="also time this git revision's refinterp (e.g. fb9f896)")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.reference_repeat < 0:
        parser.error("--repeat must be at least 1 and --reference-repeat at least 0")
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {', '.join(MODELS)}")
    work = Path(args.work)
    missing = [n for n in names if not (work / "models" / n / "info.json").exists()]
    if missing:
        parser.error(f"not in the corpus: {missing}; build it with "
                     f"tools/model_zoo.py --work {work}")
    if not args.stdlib.is_dir():
        parser.error(f"no Khronos stdlib at {args.stdlib} (--stdlib)")
    with tempfile.TemporaryDirectory(prefix="bench_models_before_") as tree:
        if args.before:
            try:
                extract_revision(args.before, Path(tree))
            except ValueError as error:
                parser.error(f"--before: {error}")
        results = []
        for name in names:
            model = Model(work / "models" / name, args.stdlib)
            results.append(measure(model, args.repeat, args.reference_repeat, args.top,
                                   Path(tree) if args.before else None))
            print(f"measured {results[-1].title}", file=sys.stderr, flush=True)
    before = f"; before: {args.before}" if args.before else ""
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, best of {args.repeat} "
          f"(reference evaluator: {args.reference_repeat}), peers interleaved{before}")
    print(format_table(results, before=bool(args.before)))
    print("\nWhere refinterp's time goes (own time per operator, share of the run):")
    print(format_operators(results))
    if args.json:
        numbers = [dict(asdict(r), vs_reference=r.vs_reference, vs_ort=r.vs_ort,
                        speedup=r.speedup) for r in results]
        text = json.dumps(numbers, indent=1)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text)
    failed = [r.title for r in results
              if r.refused or (r.error is not None and not r.error <= TOLERANCE)]
    if failed:
        print(f"FAILED (refused, or disagree with ORT beyond {TOLERANCE}): {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
