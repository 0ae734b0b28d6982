"""docs/api.md is executable: every ```python block runs, in order, in one namespace (the
examples verify themselves with `assert`), and the page lists every diagnostic code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from refinterp.core.diagnostics import CODES

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "api.md"


def python_blocks(text: str) -> list[tuple[int, str]]:
    """The ```python blocks of a Markdown text: (line of the block's first code line, code)."""
    blocks = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        if lines[index].strip() == "```python":
            start = index + 1
            end = start
            while lines[end].strip() != "```":
                end += 1
            blocks.append((start + 1, "\n".join(lines[start:end]) + "\n"))
            index = end
        index += 1
    return blocks


BLOCKS = python_blocks(DOC.read_text(encoding="utf-8"))

# The blocks share one namespace: a test runs every block before its own that has not run yet,
# so that `-k block-7` works alone and a whole run executes each block once.
_STATE: dict = {"namespace": {"__name__": "docs_api"}, "done": 0, "failed": None}


def _run_through(index: int) -> None:
    while _STATE["done"] <= index:
        number = _STATE["done"]
        if _STATE["failed"] is not None:
            pytest.fail(f"an earlier block failed: block-{_STATE['failed'] + 1}")
        line, code = BLOCKS[number]
        compiled = compile(code, f"{DOC}:block-{number + 1} (line {line})", "exec")
        try:
            exec(compiled, _STATE["namespace"])
        except BaseException:
            _STATE["failed"] = number
            raise
        _STATE["done"] = number + 1


def test_the_page_has_python_blocks() -> None:
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("index", range(len(BLOCKS)),
                         ids=[f"block-{i + 1}" for i in range(len(BLOCKS))])
def test_block_runs(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    if _STATE["failed"] is not None and _STATE["failed"] < index:
        pytest.fail(f"an earlier block failed: block-{_STATE['failed'] + 1}")
    _run_through(index)


def test_every_diagnostic_code_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = {m.group(1) for m in re.finditer(r"^\| ([EWN]\d{4}) \|", text, re.MULTILINE)}
    missing = sorted(set(CODES) - table)
    assert not missing, f"codes missing from the table of docs/api.md: {missing}"
    unknown = sorted(table - set(CODES))
    assert not unknown, f"docs/api.md lists codes that diagnostics.CODES does not: {unknown}"


CODE_LITERAL = re.compile(
    r"""(?:\bcode\s*=|\bdefault_code\s*(?::\s*[\w\[\]]+\s*)?=)\s*["']([A-Z]\d{4})["']""")
ANY_CODE_LITERAL = re.compile(r"""["']([EWN]\d{4})["']""")


def test_every_code_in_the_source_is_in_the_codes_table() -> None:
    sources = sorted((ROOT / "refinterp").rglob("*.py"))
    assert sources
    found: dict[str, list[str]] = {}
    for path in sources:
        text = path.read_text(encoding="utf-8")
        for pattern in (CODE_LITERAL, ANY_CODE_LITERAL):
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.setdefault(match.group(1), []).append(f"{path.relative_to(ROOT)}:{line}")
    assert "E0301" in found and "E0100" in found  # the scan sees the source
    unknown = {code: places for code, places in found.items() if code not in CODES}
    assert not unknown, f"codes used in the source but missing from diagnostics.CODES: {unknown}"


def test_the_code_regex_finds_both_spellings() -> None:
    sample = 'raise X("m", code="E0123")\n    default_code = "E0456"\n'
    assert [m.group(1) for m in CODE_LITERAL.finditer(sample)] == ["E0123", "E0456"]


def test_the_command_line_section_is_left_to_the_cli() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "\n## Command line\n" in text
    assert "<!-- CLI section: maintained with refinterp/cli/ -->" in text
