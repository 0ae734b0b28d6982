#!/usr/bin/env python3
"""The long run of the vector/compiled equality suite: many random formulas from
tests/vector_strategies.py on both engines, under both profiles and with chunking, plus a
summary of how often the vector engine ran, fell back, or both engines reported a diagnostic.

    python tools/vector_equality.py [--examples N] [--seed S] [--show-fallbacks]

Exit status 1 on the first disagreement (printed with the operator text).
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, settings, seed as hypothesis_seed  # noqa: E402

from tests.test_vector_engine import run_both  # noqa: E402
from tests.vector_strategies import formulas  # noqa: E402
from refinterp.lower import engines  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show-fallbacks", action="store_true",
                        help="print the reasons of the fallbacks to the compiled engine with "
                             "their counts")
    args = parser.parse_args()
    outcomes: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()

    @hypothesis_seed(args.seed)
    @settings(max_examples=args.examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(formulas(), st_profile())
    def check(example, profile_and_memory):
        profile, memory = profile_and_memory
        scalar, vector, used = run_both(example, profile, memory)
        if isinstance(scalar, str) or isinstance(vector, str):
            assert scalar == vector, f"{example.text}\nscalar: {scalar}\nvector: {vector}"
            outcomes["both engines: the same diagnostic"] += 1
            return
        for name in scalar:
            found = engines.difference(scalar[name], vector[name], name)
            assert found is None, f"{example.text}\ninputs: {example.inputs}\n{found}"
        how = used[0] if used else "?"
        if how == "vector":
            outcomes["vectorised"] += 1
        else:
            outcomes["fell back for some formula"] += 1
            for part in how.split("; ")[1:]:
                reasons[part.split("compiled (", 1)[-1].rstrip(")")] += 1

    try:
        check()
    except AssertionError as error:
        print(f"DISAGREEMENT\n{error}")
        return 1
    total = sum(outcomes.values())
    print(f"{total} random operators, engines agree on all")
    for outcome, count in outcomes.most_common():
        print(f"  {count:6}  {outcome}")
    if args.show_fallbacks:
        print("fallback reasons:")
        for reason, count in reasons.most_common():
            print(f"  {count:6}  {reason}")
    return 0


def st_profile():
    from hypothesis import strategies as st
    return st.tuples(st.sampled_from(["spec", "khronos"]),
                     st.sampled_from([None, None, 300]))


if __name__ == "__main__":
    sys.exit(main())
