"""Reports of a harness run: the summary by module and operator, coverage, the skips by
reason, the JSON report (`--json`), JUnit XML (`--junit`), and merging shard reports
(`--merge`). A `broken` case (the harness could not read, verify or judge it) is counted apart
in each: JUnit reports it as an error, not a failure."""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, TextIO
from xml.etree import ElementTree

from refinterp.core.diagnostics import GoldenDiagnostic
from refinterp.core.files import write_bytes, write_text
from refinterp.harness.suite_run import RAN, STATUSES, Result
from refinterp.io import read_json

FORMAT = "refinterp-check/1"


def summary(results: list[Result]) -> dict[str, Any]:
    """Counts by status, and by status per module and per operator (or model case)."""
    by_module: dict[str, Counter] = defaultdict(Counter)
    by_operator: dict[str, Counter] = defaultdict(Counter)
    for result in results:
        by_module[result.module][result.status] += 1
        by_operator[result.operator or result.id][result.status] += 1
    total = Counter(r.status for r in results)

    def counts(counter: Counter) -> dict[str, int]:
        return {status: counter.get(status, 0) for status in STATUSES}
    return {"total": len(results), **counts(total),
            "modules": {m: counts(c) for m, c in sorted(by_module.items())},
            "operators": {o: counts(c) for o, c in sorted(by_operator.items())}}


def coverage(results: list[Result]) -> dict[str, Any]:
    """Which operators the back end passes: `passed` (every case passed, none skipped or
    broken), `partial`, `failed` (no case passed), `skipped` (no case ran, one was skipped),
    `broken` (no case ran, every one broken); and per operator, each attribute value with the
    number of cases that passed and failed with it. A model case (no operator) counts as
    what it checks, by its case id, as in `summary`."""
    per_operator: dict[str, list[Result]] = defaultdict(list)
    for result in results:
        per_operator[result.operator or result.id].append(result)
    verdicts: dict[str, list[str]] = {"passed": [], "partial": [], "failed": [], "skipped": [],
                                      "broken": []}
    attributes: dict[str, dict[str, dict[str, int]]] = {}
    for operator, cases in sorted(per_operator.items()):
        ran = [r for r in cases if r.status in RAN]
        good = [r for r in ran if r.status in ("pass", "xpass")]
        nothing = "skipped" if any(r.status == "skip" for r in cases) else "broken"
        verdict = nothing if not ran else "failed" if not good else \
            "passed" if len(good) == len(cases) else "partial"  # a skipped case: partial
        verdicts[verdict].append(operator)
        values: dict[str, dict[str, int]] = defaultdict(lambda: {"pass": 0, "fail": 0})
        for result in ran:
            for name, value in sorted(result.attributes.items()):
                key = f"{name}={json.dumps(value, sort_keys=True)}"
                values[key]["pass" if result in good else "fail"] += 1
        if values:
            attributes[operator] = dict(values)
    return {**verdicts, "attributes": attributes}


def report_json(results: list[Result], backend: str, suite: str) -> dict[str, Any]:
    """The data of `--json REPORT.json` (docs/harness.md, "Reports")."""
    return {"format": FORMAT, "backend": backend, "suite": suite,
            "cases": [r.as_json() for r in results], "summary": summary(results),
            "coverage": coverage(results)}


STDOUT = "-"  # the report path that means standard output (`--json -`, `--junit -`)


def write_json(path: str | Path, results: list[Result], backend: str, suite: str) -> None:
    """The JSON report, replaced atomically (core.files; E0801 if it cannot be written), or
    written to stdout when `path` is `STDOUT`."""
    text = json.dumps(report_json(results, backend, suite), indent=1, sort_keys=True) + "\n"
    if str(path) == STDOUT:
        sys.stdout.write(text)
    else:
        write_text(path, text, "the JSON report")


def write_junit(path: str | Path, results: list[Result], backend: str) -> None:
    """JUnit XML: one testsuite per module, one testcase per case (classname: the operator);
    the file is replaced atomically (core.files; E0801 if it cannot be written), or the XML
    written to stdout when `path` is `STDOUT`."""
    root = ElementTree.Element("testsuites", name=f"refinterp check: {backend}")
    per_module: dict[str, list[Result]] = defaultdict(list)
    for result in results:
        per_module[result.module].append(result)
    for module, cases in sorted(per_module.items()):
        counts = Counter(r.status for r in cases)
        suite = ElementTree.SubElement(
            root, "testsuite", name=module, tests=str(len(cases)),
            failures=str(counts["fail"] + counts["xpass"]),
            skipped=str(counts["skip"] + counts["xfail"]), errors=str(counts["broken"]),
            time=f"{sum(r.seconds for r in cases):.3f}")
        for result in cases:
            case = ElementTree.SubElement(suite, "testcase", name=result.id,
                                          classname=result.operator or module,
                                          time=f"{result.seconds:.3f}")
            if result.status == "fail":
                failure = ElementTree.SubElement(case, "failure",
                                                 message=result.reason or "fail",
                                                 type=result.reason or "fail")
                failure.text = result.explanation
            elif result.status == "broken":  # the harness's or the suite's, not the back end's
                error = ElementTree.SubElement(case, "error", message="broken case",
                                               type="broken")
                error.text = result.explanation
            elif result.status == "xpass":
                failure = ElementTree.SubElement(case, "failure", message="unexpected pass",
                                                 type="xpass")
                failure.text = f"expected to fail: {result.expected}"
            elif result.status in ("skip", "xfail"):
                skipped = ElementTree.SubElement(
                    case, "skipped", message=("expected failure: " + (result.expected or ""))
                    if result.status == "xfail" else result.explanation)
                skipped.text = result.explanation
    ElementTree.indent(root)
    data = ElementTree.tostring(root, encoding="utf-8", xml_declaration=True)
    if str(path) == STDOUT:
        sys.stdout.write(data.decode("utf-8") + "\n")
    else:
        write_bytes(path, data, "the JUnit report")


def load_results(paths: list[str | Path]) -> tuple[list[Result], str, str]:
    """The cases of several JSON reports (shards) as one run; a case in two reports keeps the
    last. Returns (results sorted by id, back end, suite)."""
    merged: dict[str, Result] = {}
    backend = suite = ""
    for path in paths:
        data = read_json(path, "the report")
        if not isinstance(data, dict) or data.get("format") != FORMAT or \
                not isinstance(data.get("cases"), list):
            raise GoldenDiagnostic(f"'{path}' is no refinterp check report (a JSON object of "
                                   f"format {FORMAT} with a list 'cases')", code="E0800")
        backend = str(data.get("backend", backend))
        suite = str(data.get("suite", suite))
        for k, case in enumerate(data["cases"]):
            merged_case = _result(case)
            if merged_case is None:
                raise GoldenDiagnostic(f"'{path}': cases[{k}] is no case result (an object "
                                       f"with a string id and a status of "
                                       f"{', '.join(STATUSES)})", code="E0800")
            merged[merged_case.id] = merged_case
    return sorted(merged.values(), key=lambda r: r.id), backend, suite


_TYPES = {"id": str, "status": str, "reason": (str, type(None)), "explanation": str,
          "seconds": (int, float), "phase": str, "operator": (str, type(None)), "module": str,
          "attributes": dict, "expected": (str, type(None)), "figures": list}


def _result(data: Any) -> Result | None:
    """A report's case entry as a Result, or None if a field has the wrong type."""
    if not isinstance(data, dict) or data.get("status") not in STATUSES or \
            not isinstance(data.get("id"), str):
        return None
    fields = {k: data[k] for k in Result.__dataclass_fields__ if k in data}
    if any(not isinstance(v, _TYPES[k]) or isinstance(v, bool) and k == "seconds"
           for k, v in fields.items()):
        return None
    return Result(**fields)


def skip_reasons(results: list[Result], width: int = 120) -> list[tuple[int, str]]:
    """The skips grouped by reason, most frequent first (like `pytest -rs`): (count, reason),
    each reason its first line with blanks collapsed, cut at `width` characters."""
    counts: Counter = Counter()
    for result in results:
        if result.status == "skip":
            line = " ".join((result.explanation.splitlines() or ["unsupported"])[0].split())
            counts[line if len(line) <= width else line[:width - 1] + "…"] += 1
    return sorted(((count, reason) for reason, count in counts.items()),
                  key=lambda item: (-item[0], item[1]))


REPORTED = ("fail", "xpass", "broken")  # the statuses the text report shows case by case
NOTE_LENGTH = 120  # an explanation line this long, shown under several cases, becomes a note
SHOWN_OPERATORS = 12  # failing operators named in the short summary


def failure_texts(results: list[Result]) -> tuple[list[str], list[str]]:
    """The text of each failed, broken or unexpectedly passed case (title, then its
    explanation indented), and the notes: an explanation line of NOTE_LENGTH characters or
    more that several of those cases share (another profile's paragraph) is printed once,
    among the notes, and each case refers to it as `(note N, below)`."""
    shown = [r for r in results if r.status in REPORTED]
    seen: Counter = Counter()
    for result in shown:
        seen.update({line.strip() for line in _body(result).splitlines()
                     if len(line.strip()) >= NOTE_LENGTH})
    notes = [line for line, count in seen.items() if count > 1]
    number = {line: k + 1 for k, line in enumerate(notes)}
    texts = []
    for result in shown:
        title = f"{result.status.upper()} {result.id}" + \
            (f" [{result.reason}]" if result.reason else "") + \
            (f" (phase {result.phase})" if result.phase else "")
        lines = [f"(note {number[line.strip()]}, below)" if line.strip() in number else line
                 for line in _body(result).splitlines()]
        texts.append(title + "\n" + "\n".join("  " + line for line in lines))
    return texts, [f"note {k + 1}: {line}" for k, line in enumerate(notes)]


def _body(result: Result) -> str:
    return f"expected to fail ({result.expected}) but passed" \
        if result.status == "xpass" else result.explanation


def totals_line(results: list[Result]) -> str:
    """'N case(s): … passed, … failed, …' — the run in one line."""
    data = summary(results)
    return (f"{data['total']} case(s): {data['pass']} passed, {data['fail']} failed, "
            f"{data['skip']} skipped, {data['xfail']} expected failure(s), "
            f"{data['xpass']} unexpected pass(es), {data['broken']} broken")


def coverage_line(results: list[Result]) -> str:
    """How many operators pass every case, some, none, or were skipped (or broken)."""
    cover = coverage(results)
    return (f"coverage: {len(cover['passed'])} operator(s) pass every case, "
            f"{len(cover['partial'])} some, {len(cover['failed'])} none, "
            f"{len(cover['skipped'])} skipped" +
            (f", {len(cover['broken'])} broken" if cover["broken"] else ""))


def failing_operators_line(results: list[Result]) -> str | None:
    """The operators (or model cases) with a failed or broken case, most failures first, as
    'name failed/cases'; the first SHOWN_OPERATORS of them. None if there are none."""
    rows = [(counts["fail"] + counts["broken"] + counts["xpass"], sum(counts.values()), name)
            for name, counts in summary(results)["operators"].items()]
    bad = sorted((row for row in rows if row[0]), key=lambda row: (-row[0], row[2]))
    if not bad:
        return None
    named = ", ".join(f"{name} {count}/{total}" for count, total, name in bad[:SHOWN_OPERATORS])
    more = f", and {len(bad) - SHOWN_OPERATORS} more" if len(bad) > SHOWN_OPERATORS else ""
    return f"failing: {named}{more} (--verbose: the table of every operator)"


def print_report(results: list[Result], out: TextIO | None = None,
                 verbosity: int = 0) -> None:
    """The text report of a run (docs/harness.md, "Reports"): each failure with its
    explanation, the shared notes once, then the failing operators (verbosity > 0, -v: the
    tables by module and operator), the totals, the coverage and the skips by reason;
    verbosity < 0 (-q): the failing cases' titles and the totals only."""
    out = out or sys.stdout
    if verbosity < 0:
        for result in results:
            if result.status in REPORTED:
                out.write(f"{result.status.upper()} {result.id}" +
                          (f" [{result.reason}]" if result.reason else "") + "\n")
        out.write(totals_line(results) + "\n")
        return
    texts, notes = failure_texts(results)
    for text in texts:
        out.write(text + "\n")
    if notes:
        out.write("notes (shared by several of the cases above):\n")
        for note in notes:
            out.write("  " + note + "\n")
    if verbosity > 0:
        data = summary(results)
        for level in ("modules", "operators"):
            _print_table(out, level[:-1], data[level])
    else:
        line = failing_operators_line(results)
        if line:
            out.write(line + "\n")
    out.write(totals_line(results) + "\n")
    out.write(coverage_line(results) + "\n")
    for count, reason in skip_reasons(results):
        out.write(f"{count} skipped: {reason}\n")


def print_summary(results: list[Result], out: TextIO | None = None) -> None:
    """The tables by module and by operator, then the totals (rich on a terminal)."""
    out = out or sys.stdout
    data = summary(results)
    for level in ("modules", "operators"):
        _print_table(out, level[:-1], data[level])
    out.write(totals_line(results) + "\n")


def _print_table(out: TextIO, what: str, counts_by_name: dict[str, dict[str, int]]) -> None:
    rows = []
    for name, counts in counts_by_name.items():
        rows.append([name, str(counts["pass"]), str(counts["fail"]), str(counts["skip"]),
                     str(counts["xfail"] + counts["xpass"]), str(counts["broken"])])
    header = [what, "passed", "failed", "skipped", "expected", "broken"]
    if out.isatty():
        from rich.console import Console
        from rich.table import Table

        table = Table(*header, title=f"refinterp check, by {what}")
        for row in rows:
            table.add_row(*row, style="red" if row[2] != "0" or row[5] != "0" else None)
        Console(file=out).print(table)
    else:
        widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
        for row in [header, *rows]:
            out.write("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() + "\n")
