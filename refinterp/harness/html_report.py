"""The HTML report of a harness run (`check --html`, `report --html`; docs/harness.md, "The
HTML report"): one self-contained file — inline CSS, a few lines of inline script for the
filters, inline SVG pictures (`pictures`), nothing fetched — with the summary, the matrix of
operators × outcome, the coverage per attribute value, the skips by reason and, for every
failing case, its figures (`figures`), its explanation and the command that reproduces it.
Every text that comes from a case or a back end is escaped."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from refinterp.core.files import write_text
from refinterp.harness import pictures
from refinterp.harness.report import (REPORTED, coverage, coverage_line, skip_reasons,
                                      summary, totals_line)
from refinterp.harness.suite_run import STATUSES, Result

RERUN = "Re-run this case alone: "  # how suite_run states a case's reproducing command

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.2em;margin-top:1.6em}h3{font-size:1.05em;margin:.3em 0}
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ccc;padding:2px 8px}
th{background:#f0f0f0;cursor:default}td.n{text-align:right}
td.pass{background:#c8efc8}td.fail,td.broken,td.xpass{background:#f7c1c1}
td.skip{background:#e4e4e4}td.xfail{background:#f8e6b8}td.zero{color:#bbb;background:none}
section.case{border:1px solid #ddd;border-left:5px solid #c0392b;padding:.5em 1em;margin:1em 0}
pre{white-space:pre-wrap;background:#f7f7f7;padding:.5em;font-size:.85em}
code.reproduce{display:block;background:#222;color:#eee;padding:.5em;white-space:pre-wrap}
figure{display:inline-block;margin:.3em 1em .3em 0;vertical-align:top}
figcaption{font-size:.8em;color:#555;max-width:400px}
.filters{margin:.5em 0}.filters label{margin-right:1em}
.legend span{display:inline-block;width:1em;height:1em;vertical-align:middle}
"""

SCRIPT = """
function filterMatrix(){
  const text=document.getElementById('operator-filter').value.toLowerCase();
  const only=[...document.querySelectorAll('input.outcome:checked')].map(b=>b.value);
  for(const row of document.querySelectorAll('#matrix tbody tr')){
    const name=row.dataset.operator.toLowerCase();
    const has=only.length===0||only.some(s=>Number(row.dataset[s])>0);
    row.style.display=(name.includes(text)&&has)?'':'none';
  }
}
"""


def html_report(results: list[Result], backend: str, suite: str) -> str:
    """The report as one HTML document."""
    title = f"refinterp check: {backend} on {suite}"
    parts = [f"<h1>{escape(title)}</h1>",
             f"<p>{escape(totals_line(results))}<br>{escape(coverage_line(results))}</p>",
             _matrix(results), _attributes(results), _skips(results), _failures(results)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
            f"<title>{escape(title)}</title><style>{STYLE}</style>"
            f"<script>{SCRIPT}</script></head>\n<body>\n" + "\n".join(parts) +
            "\n</body></html>\n")


def write_html(path: str | Path, results: list[Result], backend: str, suite: str) -> None:
    """Write the HTML report, replaced atomically (core.files; E0801 if it cannot be)."""
    write_text(path, html_report(results, backend, suite), "the HTML report")


def _matrix(results: list[Result]) -> str:
    """Operators × outcome: counts, coloured by outcome, with a name filter and outcome
    check boxes (rows with at least one case of a checked outcome)."""
    boxes = "".join(f'<label><input type="checkbox" class="outcome" value="{s}" '
                    f'onchange="filterMatrix()"> '
                    f'{s}</label>' for s in STATUSES)
    rows = []
    for name, counts in summary(results)["operators"].items():
        data = " ".join(f'data-{s}="{counts[s]}"' for s in STATUSES)
        cells = "".join(f'<td class="n {s if counts[s] else "zero"}">{counts[s]}</td>'
                        for s in STATUSES)
        rows.append(f'<tr data-operator="{escape(name)}" {data}><td>{escape(name)}</td>'
                    f'{cells}</tr>')
    header = "".join(f"<th>{s}</th>" for s in STATUSES)
    return (f'<h2 id="matrix-title">Operators × outcome</h2><div class="filters">'
            f'<label>operator <input id="operator-filter" oninput="filterMatrix()" '
            f'placeholder="filter"></label> only rows with: {boxes}</div>'
            f'<table id="matrix"><thead><tr><th>operator</th>{header}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>'
            '<script>filterMatrix()</script>')


def _attributes(results: list[Result]) -> str:
    """Per operator, each attribute value with the cases that passed and failed with it."""
    rows = []
    for operator, values in coverage(results)["attributes"].items():
        for value, counts in values.items():
            rows.append(f"<tr><td>{escape(operator)}</td><td>{escape(value)}</td>"
                        f'<td class="n {"pass" if counts["pass"] else "zero"}">{counts["pass"]}'
                        f'</td><td class="n {"fail" if counts["fail"] else "zero"}">'
                        f'{counts["fail"]}</td></tr>')
    if not rows:
        return "<h2>Coverage by attribute</h2><p>No case with attributes ran.</p>"
    return ("<h2>Coverage by attribute</h2><details><summary>"
            f"{len(rows)} attribute value(s)</summary><table><thead><tr><th>operator</th>"
            "<th>attribute</th><th>passed</th><th>failed</th></tr></thead><tbody>"
            f"{''.join(rows)}</tbody></table></details>")


def _skips(results: list[Result]) -> str:
    reasons = skip_reasons(results, width=400)
    if not reasons:
        return ""
    rows = "".join(f'<tr><td class="n">{count}</td><td>{escape(reason)}</td></tr>'
                   for count, reason in reasons)
    return (f"<h2>Skips by reason</h2><table><thead><tr><th>cases</th><th>reason</th></tr>"
            f"</thead><tbody>{rows}</tbody></table>")


def _failures(results: list[Result]) -> str:
    shown = [r for r in results if r.status in REPORTED]
    if not shown:
        return "<h2>Failures</h2><p>None.</p>"
    return f"<h2>Failures ({len(shown)})</h2>" + "\n".join(_case(r) for r in shown)


def reproduce_command(result: Result) -> str | None:
    """The command that re-runs the case alone, as its explanation states it."""
    for line in result.explanation.splitlines():
        if line.startswith(RERUN):
            return line[len(RERUN):]
    return None


def _case(result: Result) -> str:
    """One failing case: title, figures, explanation, reproducing command."""
    title = f"{result.status.upper()} {result.id}" + \
        (f" [{result.reason}]" if result.reason else "") + \
        (f" (phase {result.phase})" if result.phase else "")
    text = "\n".join(line for line in result.explanation.splitlines()
                     if not line.startswith(RERUN))
    if result.status == "xpass":
        text = f"expected to fail ({result.expected}) but passed"
    command = reproduce_command(result)
    body = [f"<h3>{escape(title)}</h3>",
            *(_figure(figure) for figure in result.figures if isinstance(figure, dict)),
            f"<pre>{escape(text)}</pre>"]
    if command:
        body.append(f'<p>Reproduce:</p><code class="reproduce">{escape(command)}</code>')
    return f'<section class="case" id="{escape(result.id)}">' + "".join(body) + "</section>"


def _figure(figure: dict[str, Any]) -> str:
    """The pictures and figures of one mismatched output (a malformed figure: left out)."""
    try:
        return _draw(figure)
    except (KeyError, TypeError, ValueError, IndexError):
        return ""


def _draw(figure: dict[str, Any]) -> str:
    output, shape = str(figure["output"]), [int(n) for n in figure["shape"]]
    worst = [int(i) for i in figure["worst"]]
    ratio = figure.get("worst_ratio")
    parts = [f"<p>Output <b>{escape(output)}</b> ({escape(str(figure.get('dtype', '')))}"
             f"{escape(str(shape))}): {int(figure.get('failing', 0))} failing element(s); "
             f"worst at {escape(str(tuple(worst)))}, error {_ratio(ratio)} the allowed.</p>"]
    maps = []
    for plane in figure["slices"]:
        index = [int(i) for i in plane["index"]]
        block = [int(n) for n in plane["block"]]
        where = f"[{', '.join(map(str, index))}, :, :]" if index else "all"
        pooled = "" if block == [1, 1] else \
            f"; one cell is the worst of {block[0]}×{block[1]} elements"
        label = f"error map of '{output}' {where}"
        svg = pictures.heat_map(plane["ratio"], plane.get("worst"), label)
        maps.append(f'<figure class="heat-map">{svg}<figcaption>{escape(label)} '
                    f'({int(plane["rows"])}×{int(plane["columns"])}{pooled})</figcaption>'
                    f'</figure>')
    parts.append("".join(maps) + _legend())
    if figure.get("ulp_histogram"):
        label = f"ULP distances of the failing elements of '{output}'"
        parts.append(f'<figure class="ulp-histogram">'
                     f'{pictures.bar_chart(figure["ulp_histogram"], label)}'
                     f'<figcaption>{escape(label)}</figcaption></figure>')
    images = figure.get("images")
    if isinstance(images, dict):
        index = ", ".join(str(int(i)) for i in images["index"])
        drawn = [("expected", pictures.value_image), ("got", pictures.value_image),
                 ("difference", pictures.difference_image)]
        parts.append("".join(
            f'<figure class="image">{draw(images[name], f"{name} [{index}, :, :]")}'
            f'<figcaption>{name} [{escape(index)}, :, :]'
            f'{" (got − expected: red above, blue below)" if name == "difference" else ""}'
            f'</figcaption></figure>' for name, draw in drawn))
    return '<div class="output">' + "".join(parts) + "</div>"


def _legend() -> str:
    stops = [(0.0, "0"), (1.0, "1: the allowed error"), (10.0, "just above 1"),
             (1e6, "the map's greatest ratio"), (pictures.NON_FINITE, "a non-finite mismatch")]
    return ('<p class="legend">error / allowed (log scale above 1): ' +
            " ".join(f'<span style="background:{pictures.ratio_colour(v, 6.0)}"></span> {t}'
                     for v, t in stops) + "; the worst element framed in blue</p>")


def _ratio(value: Any) -> str:
    if value is None or float(value) >= pictures.NON_FINITE:
        return "a non-finite mismatch:"
    return f"{float(value):.4g} ×"
