#!/usr/bin/env python3
"""The work real runs do, in the units of the run budget (`--max-work`: operator invocations +
@compose loop steps + @lower iterations; docs/limits.md): every case of the committed golden
suites that has outputs (golden/, golden/nx, golden/ocannl), run as the harness runs it, and the
batch-1 AlexNet of tools/bench_vector.py. Prints the largest figures and the ratio of the
default budget to the largest; the default must stay at least 100 times the largest.

    python tools/measure_work.py [--top N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from refinterp import api  # noqa: E402
from refinterp.harness.suite import load_suite  # noqa: E402
from refinterp.run.limits import MAX_WORK  # noqa: E402

SUITES = ("golden", "golden/nx", "golden/ocannl")  # the module suites once built there:
# refinterp golden build golden/nx/cases/nx.toml -o golden/nx (docs/golden.md "Module suites")


def suite_work() -> list[tuple[int, str]]:
    """(work, case id) of every golden case that runs to outputs."""
    figures = []
    for suite in SUITES:
        if not (ROOT / suite / "manifest.json").exists():
            print(f"{suite}: not built, left out", file=sys.stderr)
            continue
        for case in load_suite(ROOT / suite):
            if case.error is not None or case.broken is not None:
                continue
            run = api.evaluate(case.model, inputs=case.inputs, params=case.params or None,
                               profile=case.profile)
            figures.append((run.work, f"{suite}:{case.id}"))
    return figures


def alexnet_work() -> int:
    """The work of the batch-1 AlexNet run of tools/bench_vector.py."""
    from bench_vector import ALEXNET, alexnet_case

    ours, _, _ = alexnet_case(np.random.default_rng(0), "auto")
    program = api.load_source(ALEXNET, path="<alexnet>")
    run = api.evaluate(program, op="AlexNet", inputs={"input": np.zeros((1, 3, 224, 224))},
                       params=ours.params)
    return run.work


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=5, help="how many of the largest to print")
    args = parser.parse_args()
    figures = sorted(suite_work(), reverse=True)
    print(f"golden cases run: {len(figures)}")
    for work, name in figures[:args.top]:
        print(f"  {work:>14,}  {name}")
    alexnet = alexnet_work()
    print(f"AlexNet batch 1 (tools/bench_vector.py): {alexnet:,}")
    largest = max(alexnet, figures[0][0] if figures else 0)
    print(f"default budget {MAX_WORK:,} = {MAX_WORK / largest:,.0f} x the largest")


if __name__ == "__main__":
    main()
