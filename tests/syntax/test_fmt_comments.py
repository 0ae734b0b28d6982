"""`refinterp fmt` keeps every comment and the file's dialect spellings, never writes what it
cannot read back, and formats its own output to itself (docs/grammar.md, "fmt").

The properties, over the corpus, the standard library and generated expressions, each with
comments inserted at random places: `parse(fmt(f)) == parse(f)` (spans aside),
`fmt(fmt(f)) == fmt(f)`, and every comment's text survives, in order."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refinterp.cli import main
from refinterp.core.diagnostics import Diagnostic
from refinterp.core.source import SourceFile
from refinterp.syntax import ast, parse_module
from refinterp.syntax.lexer import Token, tokenize
from refinterp.syntax import printer
from refinterp.syntax.printer import format_expr, format_module, same_tree, verify_canonical

from testsupport.paths import REPO_ROOT
from testsupport.strategies import expressions

ROOT = REPO_ROOT
CORPUS = sorted((ROOT / "spec_tests" / "corpus").glob("*.sknd"))
STDLIB = sorted((ROOT / "refinterp" / "stdlib").glob("*.sknd"))

KHRONOS = """\
import nn, math;
operator op {
    @input {
        x: real[n];
        o: dynamic optional int;
    }
    @output {
        y: real[n];
    }
    @lower {
        with a = x[i] <? 1e-5, b = 1.: y[i] = a >? b * 2.5E+3,
            i < n;
        with c = 2: d = 3, y[i] >?= (x[j] <? ..) + `sqrt`(sqrt(d)),
            i < n, j < n;
    }
}
"""


def fmt(text: str) -> str:
    """What `refinterp fmt` prints for `text` (after its self-check)."""
    source = SourceFile("<file>", text)
    printed = format_module(parse_module(source).module)
    verify_canonical(source, printed)
    return printed


def comments(text: str) -> list[str]:
    found: list[Token] = []
    tokenize(SourceFile("<comments>", text), comments=found)
    return [comment.text for comment in found]


def tree(text: str) -> ast.Module:
    return parse_module(SourceFile("<tree>", text)).module


def check_fmt(text: str) -> str:
    """The three properties for one file; its canonical text."""
    printed = fmt(text)
    assert same_tree(tree(printed), tree(text)), printed
    assert fmt(printed) == printed
    assert comments(printed) == comments(text), printed
    return printed


@st.composite
def with_comments(draw: st.DrawFn, text: str) -> str:
    """`text` with up to six comments between its tokens, each alone on its line or after
    code, with random text."""
    tokens = tokenize(SourceFile("<t>", text))
    inserts = []
    for number in range(draw(st.integers(0, 6))):
        gap = draw(st.integers(0, len(tokens) - 1))
        body = draw(st.text(st.characters(codec="utf-8", exclude_categories=["Cc", "Cs", "Zl",
                                                                            "Zp"]),
                            max_size=12))
        if gap > 0 and draw(st.booleans()):
            inserts.append((tokens[gap - 1].end, number, f"  # {number}{body}\n"))
        else:
            blank = "\n" if draw(st.booleans()) else ""
            inserts.append((tokens[gap].start, number, f"\n# {number}{body}\n{blank}"))
    out, end = [], 0
    for position, _, comment in sorted(inserts):
        out.append(text[end:position] + comment)
        end = position
    return "".join(out) + text[end:]


# ----------------------------------------------------------------------------- whole files


@pytest.mark.parametrize("path", CORPUS + STDLIB, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_corpus_and_stdlib_file_formats_faithfully(path: Path) -> None:
    check_fmt(path.read_text())


SMALL_FILES = [p.read_text() for p in CORPUS] + [KHRONOS]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_comments_anywhere_in_a_file_survive(data: st.DataObject) -> None:
    text = data.draw(st.sampled_from(SMALL_FILES))
    check_fmt(data.draw(with_comments(text)))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(expressions.filter(lambda e: not isinstance(e, ast.Expand)), st.data())
def test_generated_expressions_with_comments(expr: ast.Expr, data: st.DataObject) -> None:
    text = format_expr(expr)
    module = (f"operator op {{\n    @using {{\n        a = {text};\n    }}\n"
              f"    @lower {{\n        with z = ({text}): y[i] <?= z <? {text},\n"
              f"            i < n;\n    }}\n}}\n")
    check_fmt(data.draw(with_comments(module)))


# ----------------------------------------------------------------------------- comments


def test_fmt_in_place_keeps_comments(tmp_path: Path, capsys) -> None:
    """Item 1: `fmt -i` deleted every comment, silently, exit 0."""
    path = tmp_path / "m.sknd"
    path.write_text("# header\n\noperator op {  # the operator\n  @input { x: real[n]; }\n"
                    "  @output {\n    # the result\n    y: real[n];  # same shape\n  }\n"
                    "  @lower { y[i] = x[i],  # copy\n i < n; }\n}\n# the end\n")
    assert main(["fmt", "-i", str(path)]) == 0
    assert path.read_text() == (
        "# header\n\noperator op {  # the operator\n    @input {\n        x: real[n];\n    }\n"
        "    @output {\n        # the result\n        y: real[n];  # same shape\n    }\n"
        "    @lower {\n        y[i] = x[i],  # copy\n            i < n;\n    }\n}\n"
        "# the end\n")
    assert main(["fmt", "--check", str(path)]) == 0


def test_a_comment_inside_a_joined_line_breaks_it() -> None:
    text = ("operator op {\n    @compose {\n        y = f{a=1,\n"
            "              # why b\n              b=2}(x);\n    }\n}\n")
    assert check_fmt(text) == ("operator op {\n    @compose {\n        y = f{a=1,\n"
                               "            # why b\n            b=2}(x);\n    }\n}\n")


def test_comments_in_an_empty_block_and_file() -> None:
    assert check_fmt("operator op {\n@dtype {\n# none yet\n}\n}\n") == \
        "operator op {\n    @dtype {\n        # none yet\n    }\n}\n"
    assert check_fmt("# only a comment\n") == "# only a comment\n"


def test_a_comment_fmt_cannot_place_is_refused(tmp_path: Path, capsys) -> None:
    """A comment must never be dropped: fmt refuses the file, with the comment's position."""
    path = tmp_path / "m.sknd"
    text = ("operator op {\n    @using {\n        a = " + "(" * 20 + "  # deep\n"
            "            x" + ")" * 20 + ";\n    }\n}\n")
    path.write_text(text)
    assert main(["fmt", "-i", str(path)]) == 1
    assert path.read_text() == text
    err = capsys.readouterr().err
    assert f"{path}:3:35: error: fmt cannot place this comment" in err
    assert "internal error" not in err


# ----------------------------------------------------------------------------- spellings


def test_khronos_spellings_are_kept() -> None:
    """Item 2: fmt rewrote `<?` `>?` `<?=` `>?=`, `with … :` and numbers into the spec's
    spelling. It canonicalises imports, strings and the modifier order only."""
    printed = check_fmt(KHRONOS.replace("dynamic optional", "optional dynamic")
                        .replace("real[n];\n        o", "real[n];  # 'x'\n        o"))
    assert printed == KHRONOS.replace("import nn, math;", "import nn;\nimport math;\n") \
        .replace("real[n];\n        o", "real[n];  # 'x'\n        o")


def test_spec_spellings_stay_spec() -> None:
    text = ("operator op {\n    @lower {\n        a = x[i] << 1.5, y[i] >= a >> 2.0,\n"
            "            i < n;\n    }\n}\n")
    assert check_fmt(text) == text


# ----------------------------------------------------------------------------- read back


def test_fmt_output_of_deep_unary_chains_reads_back(tmp_path: Path, capsys) -> None:
    """Item 3: `!!!…x` printed as `!(!(…))` failed to parse ("nesting too deep")."""
    path = tmp_path / "m.sknd"
    path.write_text("operator op { @assert { " + "!" * 300 + "x; } }\n")
    assert main(["fmt", "-i", str(path)]) == 0
    assert "!" * 300 + "x;" in path.read_text()


@pytest.mark.parametrize("value", [
    " + ".join(["1"] * 700), " ** ".join(["2"] * 700), "x" + "[0]" * 700,
    "x" + "[1:]" * 700, " ?? ".join(["a"] * 300),
], ids=lambda value: value[:12])
def test_fmt_prints_long_flat_chains(value: str, tmp_path: Path) -> None:
    """Item 4: the printer hit RecursionError on 600+ terms."""
    path = tmp_path / "m.sknd"
    path.write_text(f"operator op {{ @using {{ a = {value}; }} }}\n")
    assert main(["fmt", "-i", str(path)]) == 0
    assert check_fmt(path.read_text()) == path.read_text()


def test_the_self_check_refuses_a_wrong_canonical_form(tmp_path: Path, capsys,
                                                        monkeypatch) -> None:
    """fmt checks that its output reads back as the same tree with the same comments: a
    printer bug is a diagnostic in the file, exit 1, the file untouched."""
    path = tmp_path / "m.sknd"
    text = "operator op {\n    @using {\n        a = 1;  # one\n        b = 2;\n    }\n}\n"
    path.write_text(text)
    broken = {"reads back differently here": lambda printed: printed.replace("b = 2", "b = 3"),
              "does not parse": lambda printed: printed.replace("b = 2", "b = "),
              "this comment would be lost": lambda printed: printed.replace("  # one", "")}
    dress = printer._Original.dress
    for message, bug in broken.items():
        monkeypatch.setattr(printer._Original, "dress",
                            lambda self, printed, bug=bug: bug(dress(self, printed)))
        assert main(["fmt", "-i", str(path)]) == 1
        err = capsys.readouterr().err
        assert message in err and "internal error" not in err, err
        assert f"{path}:" in err
        assert path.read_text() == text


def test_verify_canonical_points_at_the_first_difference() -> None:
    source = SourceFile("m.sknd", "operator op {\n    @using {\n        a = 1;\n        b = 2;\n"
                                  "    }\n}\n")
    verify_canonical(source, source.text)
    with pytest.raises(Diagnostic) as caught:
        verify_canonical(source, source.text.replace("b = 2", "b = 3"))
    assert (caught.value.span.line, caught.value.span.col) == (4, 9)
