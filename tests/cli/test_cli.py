"""The command line: exit codes, summaries, diagnostics on stderr, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from refinterp.cli import main

MATMUL = """operator matmul {
    @input {
        A: real[m,k];
        B: real[k,n];
    }
    @output {
        C: real[m,n];
    }
    @lower {
        C[i,j] += A[i,l] * B[l,j],
            i < m, j < n, l < k;
    }
}
"""


def test_parse_summary(tmp_path: Path, capsys) -> None:
    path = tmp_path / "matmul.sknd"
    path.write_text(MATMUL)
    assert main(["parse", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: imports none; 1 operator (matmul); 0 graphs\n"


def test_parse_reports_every_bad_file_and_exits_1(tmp_path: Path, capsys) -> None:
    good = tmp_path / "good.sknd"
    good.write_text(MATMUL)
    bad = tmp_path / "bad.sknd"
    bad.write_text("operator a {\n        @inptu {\n}\n")
    assert main(["parse", str(bad), str(good)]) == 1
    captured = capsys.readouterr()
    assert f"{bad}:2:9: error: unknown block '@inptu'" in captured.err
    assert "        ^^^^^^" in captured.err
    assert "good.sknd: imports none" in captured.out


def test_fmt_prints_canonical_text(tmp_path: Path, capsys) -> None:
    path = tmp_path / "m.sknd"
    path.write_text(MATMUL.replace("    ", "  "))
    assert main(["fmt", str(path)]) == 0
    out = capsys.readouterr().out
    assert "C[i, j] += A[i, l] * B[l, j],\n            i < m, j < n, l < k;" in out
    assert main(["fmt", "-i", str(path)]) == 0
    assert path.read_text() == out


def test_usage_error_exits_2() -> None:
    result = subprocess.run([sys.executable, "-m", "refinterp", "parse"], capture_output=True,
                            text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_console_script_reports_diagnostic_without_traceback(tmp_path: Path) -> None:
    path = tmp_path / "x.sknd"
    path.write_text('operator a { @assert { x: "unterminated; } }\n')
    result = subprocess.run([sys.executable, "-m", "refinterp", "fmt", str(path)],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert "unterminated string literal" in result.stderr and "Traceback" not in result.stderr
