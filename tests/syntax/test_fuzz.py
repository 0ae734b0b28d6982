"""2,000 mutated corpus files give only refinterp diagnostics, never a crash."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings

from refinterp.core.diagnostics import Diagnostic, render
from refinterp.core.source import SourceFile
from refinterp.syntax import parse_module
from refinterp.syntax.printer import format_module
from testsupport.paths import REPO_ROOT

from testsupport.mutations import mutated

CORPUS = REPO_ROOT / "spec_tests" / "corpus"
TEXTS = [p.read_text() for p in sorted(CORPUS.glob("*.sknd"))] or ["operator f { }"]


@settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated(TEXTS))
def test_mutated_corpus_gives_diagnostics_or_round_trips(text: str) -> None:
    try:
        tree = parse_module(SourceFile("mutant.sknd", text)).module
    except Diagnostic as diag:
        rendered = render(diag)
        assert rendered.startswith("mutant.sknd:"), rendered
        return
    # A variant that still parses must survive the printer round trip too.
    printed = format_module(tree)
    assert parse_module(SourceFile("printed", printed)).module == tree
