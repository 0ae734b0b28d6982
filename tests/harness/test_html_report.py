"""The HTML report (`check --html`, `report --html`; docs/harness.md "The HTML report"): one
self-contained, escaped file with the matrix, the error maps and the reproducing command; its
pictures (harness.pictures); and, when Debian's chromium is installed, the report opened in a
real headless browser."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from refinterp.cli import main
from refinterp.harness import pictures
from refinterp.harness.html_report import html_report
from refinterp.harness.suite_run import Result
from testsupport.paths import REPO_ROOT

HOSTILE = "<img src=x onerror=alert(1)>"
FIGURE = {"output": "y" + HOSTILE, "shape": [1, 2, 4, 4], "dtype": "float32",
          "worst": [0, 1, 2, 3], "worst_ratio": 7.5, "failing": 2,
          "slices": [{"index": [0, 1], "rows": 4, "columns": 4, "block": [1, 1],
                      "ratio": [[0.0, 0.5, 1.0, 2.0]] * 4, "worst": [2, 3]}],
          "ulp_histogram": [["≤1", 0], [">65536", 2]],
          "images": {"index": [0, 1], "expected": [[0.0, 1.0]] * 2, "got": [[0.0, 2.0]] * 2,
                     "difference": [[0.0, 1.0]] * 2}}
RERUN = "refinterp check golden --backend x -k '^nn\\.relu/a$'"


class Tags(HTMLParser):
    """The tags of a document, and every attribute that names a resource."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def document() -> str:
    results = [Result("nn.relu/a" + HOSTILE, "fail", "mismatch",
                      f"output differs {HOSTILE}\nRe-run this case alone: {RERUN}",
                      operator="nn.relu", module="nn", figures=[FIGURE, {"bad": 1}]),
               Result("nn.relu/b", "pass", operator="nn.relu", module="nn"),
               Result("nn.pool/c", "skip", None, "mode " + HOSTILE, operator="nn.pool",
                      module="nn")]
    return html_report(results, "back<end>", "suite")


def test_the_report_is_escaped_and_self_contained() -> None:
    text = document()
    parser = Tags()
    parser.feed(text)
    names = [tag for tag, _ in parser.tags]
    assert "img" not in names  # the hostile markup stayed text
    assert text.count("&lt;img src=x onerror=alert(1)&gt;") >= 4
    assert "back&lt;end&gt;" in text
    for tag, attrs in parser.tags:  # nothing fetched: no src, no link, no external href
        assert "src" not in attrs and tag != "link"
        assert not str(attrs.get("href", "")).startswith(("http", "//"))


def test_the_report_has_the_matrix_the_figures_and_the_command() -> None:
    text = document()
    rows = re.findall(r'<tr data-operator="([^"]*)"', text)
    assert rows == ["nn.pool", "nn.relu"]
    assert 'data-fail="1"' in text and 'data-skip="1"' in text
    assert text.count('class="heat-map"') == 1  # the malformed figure is left out
    assert 'class="worst"' in text and 'class="ulp-histogram"' in text
    assert text.count('class="image"') == 3  # expected, got, difference
    command = re.search(r'<code class="reproduce">(.*?)</code>', text).group(1)
    assert command == RERUN.replace("'", "&#x27;")
    assert "Re-run this case alone" not in text  # shown as the command, not in the text


def test_pictures_colour_by_the_allowed_error() -> None:
    svg = pictures.heat_map([[0.5, 1.0], [3.0, None]], [1, 0], "map <of> y")
    assert svg.count("<rect") == 5  # 4 cells and the worst frame
    assert "map &lt;of&gt; y" in svg and "<of>" not in svg
    green, red = pictures.ratio_colour(0.5), pictures.ratio_colour(1e6)
    assert int(green[3:5], 16) > int(green[1:3], 16)  # more green than red
    assert int(red[1:3], 16) > int(red[3:5], 16)
    assert pictures.ratio_colour(1e300) != red and pictures.ratio_colour(None) == "#999999"
    chart = pictures.bar_chart([["≤1", 3], [">1", 0]], "ulps")
    assert ">3</text>" in chart and ">0</text>" in chart


def test_check_and_report_write_the_html_of_a_failing_run(tmp_path, capsys) -> None:
    run, page, again = tmp_path / "run.json", tmp_path / "run.html", tmp_path / "again.html"
    status = main(["check", str(REPO_ROOT / "golden"), "--backend",
                   "testsupport.garbage_backends:Scaled", "-k", r"^nn\.relu/(leaky_alpha|large)$",
                   "--json", str(run), "--html", str(page)])
    out = capsys.readouterr().out
    assert status == 1 and "FAIL nn.relu/large" in out
    text = page.read_text()
    assert text.count('class="heat-map"') >= 2 and text.count('class="reproduce"') == 2
    assert main(["-q", "report", str(run), "--html", str(again)]) == 1
    quiet = capsys.readouterr().out
    assert quiet.splitlines()[0] == "FAIL nn.relu/large [mismatch]"
    assert "Greatest" not in quiet
    assert again.read_text() == text  # the saved run gives the same report


CHROMIUM = Path("/usr/bin/chromium")


@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is not installed "
                                                  "(Debian: apt-get install chromium)")
def test_a_headless_browser_shows_the_matrix_a_heat_map_and_the_command(tmp_path) -> None:
    page = tmp_path / "report.html"
    page.write_text(document())
    flags = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert '<table id="matrix">' in dom and 'class="heat-map"' in dom
    assert "<svg" in dom and 'class="reproduce"' in dom and "nn\\.relu" in dom
    assert 'style="display: none;"' not in dom  # the filter script ran and hid nothing
    shot = tmp_path / "report.png"
    subprocess.run([*flags, "--window-size=1000,1400", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=60, check=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 5000
    shutil.rmtree(tmp_path / "profile", ignore_errors=True)
