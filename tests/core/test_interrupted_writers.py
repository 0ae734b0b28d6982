"""The user's files survive an interrupted write (docs/security.md "Files refinterp writes"):
`fmt -i` and `eval --write-params DIR` killed with SIGKILL at random moments, or stopped by a
file-size limit (`ulimit -f`), leave each file with its old content or its new content, whole —
never a truncated one. (`golden build` under SIGKILL: tests/core/test_atomic_writes.py.)"""

from __future__ import annotations

import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from refinterp.io import read_params
from testsupport.paths import REPO_ROOT

ROOT = REPO_ROOT
REFINTERP = [sys.executable, "-m", "refinterp"]

MODEL = """graph G {
    @input { x: real[n|1000000]; }
    @variable { w: real[n]; v: real[n]; }
    @output { y: real[n]; }
    @compose { y = scale(x, w); }
    @update { w = scale(w, v); }
}
operator scale {
    @input { a: real[n]; b: real[n]; }
    @output { c: real[n]; }
    @lower { c[i] = a[i] * b[i], i < n; }
}
"""


def _source(tmp_path: Path) -> tuple[Path, bytes]:
    """A large source file that `fmt` changes (its indentation is not canonical)."""
    body = "".join(f"      # comment line {k:05d}: long enough to make writing take a while\n"
                   for k in range(20000))
    path = tmp_path / "m.sknd"
    path.write_text(f"operator  neg2 {{\n{body}   @input {{ x: real[n]; }}\n"
                    f"   @output {{ y: real[n]; }}\n   @lower {{ y[i] = -x[i], i < n; }}\n}}\n")
    return path, path.read_bytes()


@pytest.mark.parametrize("seed", range(4))
def test_fmt_in_place_killed_at_any_moment_leaves_old_or_new(tmp_path: Path, seed: int) -> None:
    path, original = _source(tmp_path)
    formatted = subprocess.run([*REFINTERP, "fmt", str(path)], capture_output=True,
                               cwd=ROOT, timeout=120, check=True).stdout
    assert formatted != original
    start = time.monotonic()
    subprocess.run([*REFINTERP, "fmt", "-i", str(path)], cwd=ROOT, timeout=120, check=True)
    duration = time.monotonic() - start
    path.write_bytes(original)
    delay = random.Random(seed).uniform(0.3, 1.0) * duration
    process = subprocess.Popen([*REFINTERP, "fmt", "-i", str(path)], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    assert path.read_bytes() in (original, formatted)


def _write_params_command(tmp_path: Path, folder: Path) -> list[str]:
    model = tmp_path / "model.sknd"
    model.write_text(MODEL)
    return [*REFINTERP, "eval", str(model), "--random", "x=real[200000]", "--random-params",
            "--seed", "1", "--write-params", str(folder)]


def _dat_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.dat"))}


def _old_params(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """A folder of .dat files a first run wrote (different values from the runs below)."""
    folder = tmp_path / "params"
    folder.mkdir()
    first = _write_params_command(tmp_path, folder)
    first[first.index("--seed") + 1] = "2"
    subprocess.run(first, cwd=ROOT, timeout=120, check=True, capture_output=True)
    old = _dat_bytes(folder)
    assert len(old) == 2, old  # w and v
    return folder, old


@pytest.mark.parametrize("seed", range(3))
def test_write_params_killed_at_any_moment_leaves_each_file_old_or_new(tmp_path: Path,
                                                                        seed: int) -> None:
    folder, old = _old_params(tmp_path)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    command = _write_params_command(tmp_path, fresh)
    start = time.monotonic()
    subprocess.run(command, cwd=ROOT, timeout=120, check=True, capture_output=True)
    duration = time.monotonic() - start
    new = _dat_bytes(fresh)
    assert set(new) == set(old) and all(new[k] != old[k] for k in new)
    process = subprocess.Popen(_write_params_command(tmp_path, folder), cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(random.Random(seed).uniform(0.5, 1.0) * duration)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    now = _dat_bytes(folder)
    assert set(now) == set(old)
    assert all(now[name] in (old[name], new[name]) for name in now)
    read_params(folder)  # every file still reads


def _file_size_limit() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))


def test_write_params_past_the_file_size_limit_keeps_every_old_file(tmp_path: Path) -> None:
    """Each .dat is 1.6 MB, past a 100 kB `ulimit -f`: the write fails with EFBIG (a
    diagnostic, exit 1) and the old files are whole (they were truncated before)."""
    folder, old = _old_params(tmp_path)
    done = subprocess.run(_write_params_command(tmp_path, folder), cwd=ROOT, timeout=120,
                          capture_output=True, text=True, preexec_fn=_file_size_limit)
    assert done.returncode == 1, done.stderr
    assert "[E0801]" in done.stderr and "Traceback" not in done.stderr
    assert _dat_bytes(folder) == old
    assert all(np.size(v) == 200000 for v in read_params(folder).values())
