"""The command line in a hostile environment (docs/api.md "Exit status"): a stdout that is
closed, full (/dev/full) or whose reader went away, a stderr that cannot be written, an
ASCII-only encoding with non-ASCII paths — never a traceback. A stdout that cannot be written
is exit 1 with a message on stderr; a broken pipe on stdout is exit 0, silently; a stderr that
cannot be written is exit 1, quietly. Each test runs `python -m refinterp` in a process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

RELU = ["eval", "--op", "nn.relu", "--input", "x=[-1.0, 2.0]"]
MISSING = ["parse", "/nonexistent/model.sknd"]
SOURCE = "operator relu {\n    @input { x: real[]; }\n}\n"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux streams")


def refinterp(*args: str, **options: Any) -> subprocess.CompletedProcess:
    """`python -m refinterp ARGS` with stdout and stderr captured unless given."""
    options.setdefault("stdout", subprocess.PIPE)
    options.setdefault("stderr", subprocess.PIPE)
    return subprocess.run([sys.executable, "-m", "refinterp", *args], timeout=60, **options)


def closing(fd: int) -> Any:
    """A preexec_fn closing descriptor `fd` in the child (`>&-`, `2>&-`)."""
    return lambda: os.close(fd)


def no_traceback(done: subprocess.CompletedProcess) -> None:
    assert b"Traceback" not in done.stderr and b"internal error" not in done.stderr, done.stderr


def test_closed_stdout_is_exit_1_with_a_message() -> None:
    done = refinterp(*RELU, preexec_fn=closing(1))
    assert done.returncode == 1
    assert b"error: cannot write to stdout: it is closed; the output is incomplete [E0801]" \
        in done.stderr
    no_traceback(done)


def test_closed_stdout_with_json_is_exit_1_with_a_message() -> None:
    done = refinterp(*RELU, "--json", preexec_fn=closing(1))
    assert done.returncode == 1 and b"cannot write to stdout" in done.stderr
    no_traceback(done)


def test_closed_stdout_gives_its_number_to_no_file(tmp_path) -> None:
    """With descriptor 1 closed, the file `-o` writes must not become stdout: it holds the
    arrays only."""
    out = tmp_path / "out.npz"
    done = refinterp(*RELU, "-o", str(out), preexec_fn=closing(1))
    assert done.returncode == 1
    import numpy as np

    with np.load(out) as arrays:
        assert list(arrays["y"]) == [0.0, 2.0]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_full_stdout_is_exit_1_with_a_message() -> None:
    with open("/dev/full", "wb") as full:
        done = refinterp(*RELU, stdout=full)
    assert done.returncode == 1
    assert b"cannot write to stdout: No space left on device" in done.stderr
    no_traceback(done)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_help_to_a_full_stdout_is_exit_1() -> None:
    with open("/dev/full", "wb") as full:
        done = refinterp("--help", stdout=full)
    assert done.returncode == 1 and b"No space left on device" in done.stderr
    no_traceback(done)


def test_broken_pipe_on_stdout_is_exit_0_silently() -> None:
    """The reader is gone before anything is written: every write fails with EPIPE."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = refinterp("ops", stdout=write)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (0, b"")


def test_head_of_a_long_output_is_exit_0_silently() -> None:
    command = f"{sys.executable} -m refinterp ops | head -c1; exit ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", command], capture_output=True, timeout=60)
    assert (done.returncode, len(done.stdout), done.stderr) == (0, 1, b"")


@pytest.mark.parametrize("stderr", ["closed", "full"])
def test_unusable_stderr_is_exit_1_quietly(stderr) -> None:
    if stderr == "closed":
        done = refinterp(*MISSING, preexec_fn=closing(2), stderr=None)
    else:
        if not Path("/dev/full").exists():
            pytest.skip("no /dev/full")
        with open("/dev/full", "wb") as full:
            done = refinterp(*MISSING, stderr=full)
    assert (done.returncode, done.stdout) == (1, b"")


def test_both_streams_closed_is_exit_1_quietly() -> None:
    def close_both() -> None:
        os.close(1)
        os.close(2)

    done = refinterp(*RELU, preexec_fn=close_both, stdout=None, stderr=None)
    assert done.returncode == 1


@pytest.mark.parametrize("encoding", ["ascii", "ascii:strict"])
def test_ascii_streams_escape_non_ascii_paths(tmp_path, encoding) -> None:
    folder = tmp_path / "modèle"
    folder.mkdir()
    (folder / "main.sknd").write_text(SOURCE)
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    done = refinterp("parse", str(folder / "main.sknd"), env=env)
    assert done.returncode == 0, done.stderr
    assert b"mod\\xe8le" in done.stdout and b"1 operator (relu)" in done.stdout
    missing = refinterp("parse", str(folder / "dépôt.sknd"), env=env)
    assert missing.returncode == 1
    assert b"d\\xe9p\\xf4t.sknd" in missing.stderr and b"[E0200]" in missing.stderr
    no_traceback(missing)


def test_a_file_name_that_is_no_utf8_is_printed_escaped(tmp_path) -> None:
    name = os.fsencode(tmp_path) + b"/\xff.sknd"
    with open(name, "w") as file:
        file.write(SOURCE)
    done = subprocess.run([sys.executable.encode(), b"-m", b"refinterp", b"parse", name],
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert b"\\udcff.sknd: imports none" in done.stdout
