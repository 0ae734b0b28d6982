"""Bounded reads: every file refinterp reads is a regular file read within a cap, an `.npz`
archive is checked from its central directory before anything is inflated, and every output is
written atomically without replacing a device, a FIFO or following a dangling symbolic link
(refinterp/core/files.py, refinterp/io.py; docs/limits.md, docs/security.md "Files refinterp
reads").

The file doors are driven through `python -m refinterp` in a subprocess with a timeout and an
address-space limit, so that a regression (a read that blocks on a FIFO, or reads /dev/zero
until memory runs out) fails the test instead of hanging it or exhausting the machine."""

from __future__ import annotations

import io as python_io
import json
import os
import resource
import stat
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from refinterp import io
from refinterp.cli import main
from refinterp.core import files
from refinterp.core.diagnostics import Diagnostic
from refinterp.core.files import read_chunks

MODEL = """import nn;
graph G {
    @input { x: real[2]; }
    @output { y: real[2]; }
    @compose { y = nn.relu(x); }
}
"""

VARIABLE = """graph G {
    @input { x: real[2]; }
    @variable { w: real[2]; }
    @output { y: real[2]; }
    @compose { y = mul(x, w); }
}
operator mul {
    @input { a: real[n]; b: real[n]; }
    @output { c: real[n]; }
    @lower { c[i] = a[i] * b[i], i < n; }
}
"""

MEMORY_LIMIT = 2 * 2**30  # address space of a subprocess: far less than reading /dev/zero takes
TIMEOUT = 60  # seconds: a door that blocks fails here instead of hanging the suite


def refinterp(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`python -m refinterp ARGS` in a fresh process, its memory and time bounded."""
    def bound_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    environment = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "refinterp", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=TIMEOUT,
                          preexec_fn=bound_memory, env=environment)


def run(capsys, *args: str) -> tuple[int, str]:
    """The CLI in this process: (exit status, stderr)."""
    status = main(list(args))
    return status, capsys.readouterr().err


def diagnostic_of(function, *args, **keywords) -> Diagnostic:
    with pytest.raises(Diagnostic) as info:
        function(*args, **keywords)
    return info.value


# ---------------------------------------------------------------------------------------------
# a FIFO, /dev/zero or /dev/urandom at every file door


def make_node(path: Path, kind: str) -> None:
    """A FIFO at `path`, or a symbolic link to a device that never ends."""
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(f"/dev/{kind}")


@pytest.fixture(scope="module")
def case(tmp_path_factory) -> Path:
    """A golden case folder (eval --save-case), copied by the tests that change it."""
    folder = tmp_path_factory.mktemp("case")
    (folder / "m.sknd").write_text(MODEL)
    assert main(["eval", str(folder / "m.sknd"), "--input", "x=[1.0, -2.0]",
                 "--save-case", str(folder / "case")]) == 0
    return folder / "case"


def _copy_case(case: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "case"
    folder.mkdir()
    for file in case.iterdir():
        (folder / file.name).write_bytes(file.read_bytes())
    return folder


def _door(name: str, tmp_path: Path, case: Path, kind: str) -> list[str]:
    """Put a node of `kind` at the file door `name`; the command line that reads it."""
    node = tmp_path / "node"
    if name == "inputs":
        make_node(node, kind)
        return ["eval", "--op", "nn.relu", "--inputs", str(node)]
    if name == "input":
        make_node(tmp_path / "x.npy", kind)
        return ["eval", "--op", "nn.relu", "--input", "x=x.npy"]
    if name == "params archive":
        make_node(tmp_path / "p.npz", kind)
        return ["eval", "--op", "nn.relu", "--input", "x=[1.0]", "--params", "p.npz"]
    if name == "params folder":
        (tmp_path / "params").mkdir()
        make_node(tmp_path / "params" / "w.dat", kind)
        return ["eval", "--op", "nn.relu", "--input", "x=[1.0]", "--params", "params"]
    if name == "model":
        make_node(tmp_path / "m.sknd", kind)
        return ["eval", "m.sknd", "--input", "x=[1.0, 2.0]"]
    if name in ("case.json", "files entry"):
        folder = _copy_case(case, tmp_path)
        make_node(folder / ("case.json" if name == "case.json" else "model.sknd"), kind)
        return ["golden", "verify", str(folder)]
    if name == "manifest.json":
        (tmp_path / "suite").mkdir()
        make_node(tmp_path / "suite" / "manifest.json", kind)
        return ["golden", "verify", "suite"]
    if name == "merge":
        make_node(tmp_path / "report.json", kind)
        return ["check", "--merge", "report.json"]
    assert name == "expect"
    make_node(tmp_path / "expect.toml", kind)
    return ["check", str(case), "--backend", "refinterp:scalar", "--expect", "expect.toml"]


DOORS = ("inputs", "input", "params archive", "params folder", "model", "case.json",
         "manifest.json", "files entry", "merge", "expect")


@pytest.mark.parametrize("kind", ["fifo", "zero", "urandom"])
@pytest.mark.parametrize("door", DOORS)
def test_a_file_door_refuses_what_is_no_regular_file(door: str, kind: str, tmp_path: Path,
                                                     case: Path) -> None:
    """A FIFO is refused without blocking, a link to a device without reading it: E0800,
    exit 1, quickly and in little memory."""
    if kind != "fifo" and not Path(f"/dev/{kind}").exists():
        pytest.skip(f"no /dev/{kind}")
    started = time.monotonic()
    result = refinterp(*_door(door, tmp_path, case, kind), cwd=tmp_path)
    assert time.monotonic() - started < 10  # about 0.2 s: the start of a process
    assert result.returncode == 1, result.stderr
    assert "[E0800]" in result.stderr
    assert ("FIFO" if kind == "fifo" else "a device") in result.stderr
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------------------------------------
# archives: limits from the central directory, members checked against it


def _local(name: bytes, method: int, crc: int, packed: int, size: int) -> bytes:
    return struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0x21, crc, packed, size,
                       len(name), 0) + name


def _central(name: bytes, method: int, crc: int, packed: int, size: int, offset: int) -> bytes:
    return struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, method, 0, 0x21, crc, packed,
                       size, len(name), 0, 0, 0, 0, 0, offset) + name


def _end(count: int, directory: bytes, offset: int) -> bytes:
    return struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, len(directory), offset, 0)


def _zip(members: list[tuple[bytes, bytes, int, int]],
         entries: list[tuple[bytes, int, int]] | None = None) -> bytes:
    """The bytes of a zip archive written by hand: local (name, data, method, declared size)
    members one after another; the central directory lists `entries` (name, member index,
    declared size; by default each member under its own name)."""
    body, offsets, packed = b"", [], []
    for name, data, method, size in members:
        offsets.append(len(body))
        packed.append((method, zlib.crc32(data) if method == 0 else 0, len(data)))
        body += _local(name, method, packed[-1][1], len(data), size) + data
    if entries is None:
        entries = [(name, k, size) for k, (name, _, _, size) in enumerate(members)]
    directory = b"".join(_central(name, packed[k][0], packed[k][1], packed[k][2], size,
                                  offsets[k]) for name, k, size in entries)
    return body + directory + _end(len(entries), directory, len(body))


def _npy(array: np.ndarray) -> bytes:
    buffer = python_io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _zero_deflate(mebibytes: int, prefix: bytes = b"") -> bytes:
    """A raw deflate stream of `prefix` then `mebibytes` MiB of zeros, built from one
    compressed MiB repeated (full flushes make each block independent): a few KiB of file,
    never the MiBs themselves in memory."""
    head = zlib.compressobj(9, zlib.DEFLATED, -15)
    start = head.compress(prefix) + head.flush(zlib.Z_FULL_FLUSH)
    block = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = block.compress(bytes(2**20)) + block.flush(zlib.Z_FULL_FLUSH)
    end = zlib.compressobj(9, zlib.DEFLATED, -15).flush()
    return start + zeros * mebibytes + end


def _npy_header(count: int) -> bytes:
    buffer = python_io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (count,)})
    return buffer.getvalue()


def test_a_deflate_bomb_is_refused_before_anything_is_inflated(tmp_path: Path) -> None:
    """16 deflated members declaring 300 MiB each (4.7 GiB, a 5 MB file): refused from the
    central directory, in a process that could not even hold one GiB more."""
    mebibytes = 300
    header = _npy_header(mebibytes * 2**20 // 8)
    data = _zero_deflate(mebibytes, header)
    size = len(header) + mebibytes * 2**20
    bomb = _zip([(f"a{k}.npy".encode(), data, 8, size) for k in range(16)])
    (tmp_path / "bomb.npz").write_bytes(bomb)
    result = refinterp("eval", "--op", "nn.relu", "--inputs", "bomb.npz", cwd=tmp_path)
    assert result.returncode == 1 and "[E0800]" in result.stderr, result.stderr
    assert "16 member(s)" in result.stderr and "above the input size limit" in result.stderr
    assert "--max-input-size" in result.stderr


def test_the_input_size_limit_counts_uncompressed_bytes(tmp_path: Path) -> None:
    path = tmp_path / "a.npz"
    np.savez_compressed(path, x=np.zeros(1000))  # 8 kB of data, a few hundred bytes of file
    assert io.read_arrays(path, "--inputs", max_input_size=9000)["x"].shape == (1000,)
    diag = diagnostic_of(io.read_arrays, path, "--inputs", max_input_size=8000)
    assert diag.code == "E0800" and "input size limit of 8000 bytes" in diag.message


def test_a_member_that_inflates_past_its_declared_size_is_refused(tmp_path: Path) -> None:
    """A member declaring 1 KiB that inflates to 64 MiB: read as far as declared, then
    refused, never inflated further."""
    array = np.zeros(100)
    data = _npy(array)
    stream = _zero_deflate(64, data)
    path = tmp_path / "a.npz"
    path.write_bytes(_zip([(b"a.npy", stream, 8, len(data))]))
    diag = diagnostic_of(io.read_arrays, path, "--inputs")
    assert diag.code == "E0800" and "member 'a.npy'" in diag.message
    assert "inflates past the" in diag.message


def test_deflated_members_are_read_as_numpy_writes_them(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    arrays = {"a": rng.standard_normal((300, 500)), "b": np.arange(7), "c": np.zeros(0)}
    path = tmp_path / "a.npz"
    np.savez_compressed(path, **arrays)
    read = io.read_arrays(path, "--inputs")
    assert list(read) == ["a", "b", "c"]
    for key, value in arrays.items():
        np.testing.assert_array_equal(read[key], value)


def test_members_sharing_bytes_are_refused(tmp_path: Path) -> None:
    """A member whose local header and data lie inside another member's data."""
    inner = _npy(np.arange(3.0))
    nested = _local(b"b.npy", 0, zlib.crc32(inner), len(inner), len(inner)) + inner
    outer = nested + b"pad"
    body = _local(b"a.npy", 0, zlib.crc32(outer), len(outer), len(outer)) + outer
    directory = _central(b"a.npy", 0, zlib.crc32(outer), len(outer), len(outer), 0) + \
        _central(b"b.npy", 0, zlib.crc32(inner), len(inner), len(inner), 30 + len(b"a.npy"))
    path = tmp_path / "a.npz"
    path.write_bytes(body + directory + _end(2, directory, len(body)))
    diag = diagnostic_of(io.read_arrays, path, "--inputs")
    assert diag.code == "E0800" and "members 'a.npy' and 'b.npy' overlap" in diag.message


def test_entries_pointing_at_another_members_header_are_refused(tmp_path: Path) -> None:
    """64 directory entries naming one stored member: the local header's name differs."""
    data = _npy(np.zeros(1000))
    path = tmp_path / "a.npz"
    path.write_bytes(_zip([(b"a0.npy", data, 0, len(data))],
                          [(f"a{k}.npy".encode(), 0, len(data)) for k in range(64)]))
    diag = diagnostic_of(io.read_arrays, path, "--inputs")
    assert diag.code == "E0800" and "member 'a1.npy' is named 'a0.npy' in its local header" \
        in diag.message


def test_too_many_members_are_refused_before_zipfile_reads_them(tmp_path: Path,
                                                                monkeypatch) -> None:
    path = tmp_path / "a.npz"
    np.savez(path, **{f"x{k}": np.zeros(1) for k in range(4)})
    monkeypatch.setattr(io, "MAX_ARCHIVE_MEMBERS", 3)
    monkeypatch.setattr(zipfile, "ZipFile", None)  # never reached
    diag = diagnostic_of(io.read_arrays, path, "--inputs")
    assert diag.code == "E0800" and "more than the 3 an .npz may hold" in diag.message


def test_a_zip64_directory_is_found_and_counted(tmp_path: Path, monkeypatch) -> None:
    """An archive whose end record is zip64 (as one of more than 65,535 members has)."""
    path = tmp_path / "a.npz"
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 2)  # zip64 end records from 3 members
    np.savez(path, **{f"x{k}": np.full(2, k) for k in range(3)})
    assert path.read_bytes().find(b"PK\x06\x06") > 0
    assert [a.tolist() for a in io.read_arrays(path, "--inputs").values()] == \
        [[0, 0], [1, 1], [2, 2]]
    monkeypatch.setattr(io, "MAX_ARCHIVE_MEMBERS", 2)
    monkeypatch.setattr(zipfile, "ZipFile", None)  # refused from the raw records
    assert "more than the 2" in diagnostic_of(io.read_arrays, path, "--inputs").message


def test_a_central_directory_above_its_limit_is_refused(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "a.npz"
    np.savez(path, x=np.zeros(1), y=np.zeros(1))
    monkeypatch.setattr(io, "MAX_DIRECTORY_SIZE", 50)
    diag = diagnostic_of(io.read_arrays, path, "--inputs")
    assert diag.code == "E0800" and "central directory takes" in diag.message


@pytest.mark.parametrize("method, flags, words", [
    (zipfile.ZIP_BZIP2, 0, "zip method 12"), (zipfile.ZIP_STORED, 0x1, "is encrypted")])
def test_members_refinterp_does_not_read(tmp_path: Path, method: int, flags: int,
                                         words: str) -> None:
    path = tmp_path / "a.npz"
    with zipfile.ZipFile(path, "w") as archive:
        info = zipfile.ZipInfo("a.npy")
        info.compress_type = method
        archive.writestr(info, _npy(np.zeros(3)))
    if flags:  # the encryption bit, in the local header and the directory entry
        data = bytearray(path.read_bytes())
        data[6] |= flags
        at = data.rfind(b"PK\x01\x02")
        data[at + 8] |= flags
        path.write_bytes(bytes(data))
    diag = diagnostic_of(io.read_arrays, path, "--inputs")
    assert diag.code == "E0800" and words in diag.message


def test_a_dat_folder_is_within_the_input_size_and_file_count(tmp_path: Path,
                                                               monkeypatch) -> None:
    folder = tmp_path / "params"
    io.write_params(folder, {"a": np.zeros(10), "b": np.zeros(10)}, "--write-params")
    assert set(io.read_params(folder)) == {"a", "b"}
    diag = diagnostic_of(io.read_params, folder, max_input_size=300)  # 2 x (128 + 80) bytes
    assert diag.code == "E0800" and "its 2 .dat files hold" in diag.message
    monkeypatch.setattr(io, "MAX_ARCHIVE_MEMBERS", 1)
    assert "2 .dat files, more than the 1" in diagnostic_of(io.read_params, folder).message


# ---------------------------------------------------------------------------------------------
# .npy headers


def _raw_npy(header: str, data: bytes = b"", version: bytes = b"\x01\x00") -> bytes:
    text = header.encode("latin1")
    text += b" " * (-(10 + len(text) + 1) % 64) + b"\n"
    return b"\x93NUMPY" + version + len(text).to_bytes(2, "little") + text + data


HEADER = "{'descr': '<f8', 'fortran_order': False, 'shape': %s, }"


@pytest.mark.parametrize("shape, words", [
    ("(" + "1, " * 65 + ")", "rank 65, above NumPy's 64 dimensions"),
    ("(True, 2)", "extent True"),
    ("(2, False)", "extent False"),
    ("(-1,)", "extent -1"),
    ("(0, 10**30)".replace("10**30", str(10**30)), "extent 1000000000000000000000000000000"),
    (f"(0, {2**62}, {2**62})", "more bytes than any array can hold"),
])
def test_an_npy_header_no_array_can_have(tmp_path: Path, shape: str, words: str) -> None:
    data = _raw_npy(HEADER % shape, bytes(16))
    path = tmp_path / "x.npy"
    path.write_bytes(data)
    diag = diagnostic_of(io.read_arrays, path, "--inputs", max_tensor_size=2**62)
    assert diag.code == "E0800" and words in diag.message
    archive = tmp_path / "a.npz"
    archive.write_bytes(_zip([(b"x.npy", data, 0, len(data))]))
    diag = diagnostic_of(io.read_arrays, archive, "--inputs")
    assert diag.code == "E0800" and "member 'x.npy'" in diag.message and words in diag.message


def test_an_npy_header_length_is_bounded_before_it_is_read(tmp_path: Path) -> None:
    """A version 2 header announcing 2 GiB: refused from its length field."""
    path = tmp_path / "x.npy"
    path.write_bytes(b"\x93NUMPY\x02\x00" + (2**31).to_bytes(4, "little") + b"{" * 100)
    diag = diagnostic_of(io.read_arrays, path, "--inputs")
    assert diag.code == "E0800" and "2147483648 bytes, more than the 10000" in diag.message


def test_an_npy_file_above_the_input_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "x.npy"
    np.save(path, np.zeros(100))
    diag = diagnostic_of(io.read_array, path, "--input x", max_input_size=500)
    assert diag.code == "E0800" and "above the input size limit of 500 bytes" in diag.message


# ---------------------------------------------------------------------------------------------
# text files and capped reads


def test_a_source_file_above_its_limit_is_refused(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "m.sknd"
    path.write_text(MODEL)
    monkeypatch.setattr(files, "MAX_SOURCE_BYTES", 20)
    diag = diagnostic_of(files.read_source, path)
    assert diag.code == "E0800" and "larger than 20 bytes" in diag.message


def test_read_chunks_stops_at_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    assert b"".join(read_chunks(path, "a file", 10, chunk=3)) == b"x" * 10
    with pytest.raises(Diagnostic) as info:
        list(read_chunks(path, "a file", 9, chunk=3))
    assert info.value.code == "E0800" and "larger than 9 bytes" in info.value.message


def test_golden_verify_limits_the_files_it_hashes(tmp_path: Path, case: Path, capsys) -> None:
    folder = _copy_case(case, tmp_path)
    status, err = run(capsys, "golden", "verify", str(folder), "--max-input-size", "100")
    assert status == 1 and "larger than 100 bytes" in err and "[E0800]" in err
    status, _ = run(capsys, "golden", "verify", str(folder), "--max-input-size", "1M")
    assert status == 0


def test_check_reads_case_arrays_within_its_limit(tmp_path: Path, case: Path, capsys) -> None:
    status, out = main(["check", str(case), "--backend", "refinterp:scalar",
                        "--max-input-size", "100"]), capsys.readouterr().out
    assert status == 1 and "larger than 100 bytes" in out  # hashed first: a broken case
    assert "--max-input-size 100" in out  # the re-run command keeps the limit


def test_max_input_size_is_checked_as_a_size(tmp_path: Path, capsys) -> None:
    np.save(tmp_path / "x.npy", np.zeros(2))
    status, err = run(capsys, "eval", "--op", "nn.relu", "--input", f"x={tmp_path / 'x.npy'}",
                      "--max-input-size", "lots")
    assert status == 2 and "--max-input-size expects a size" in err


# ---------------------------------------------------------------------------------------------
# outputs: never a device, a FIFO or through a dangling link; atomic


OUTPUTS = ("-o", "--save-inputs", "--write-params")


def _eval_writing(option: str, target: Path, tmp_path: Path) -> list[str]:
    model = tmp_path / "v.sknd"
    model.write_text(VARIABLE)
    return ["eval", str(model), "--input", "x=[1.0, 2.0]", "--random-params", option,
            str(target)]


@pytest.mark.parametrize("option", OUTPUTS)
def test_an_output_that_is_a_fifo_is_refused_and_kept(option: str, tmp_path: Path,
                                                      capsys) -> None:
    node = tmp_path / "out.npz"
    os.mkfifo(node)
    status, err = run(capsys, *_eval_writing(option, node, tmp_path))
    assert status == 1 and "[E0801]" in err and "FIFO" in err
    assert stat.S_ISFIFO(os.lstat(node).st_mode)


@pytest.mark.parametrize("option", OUTPUTS)
def test_an_output_through_a_dangling_link_is_refused(option: str, tmp_path: Path,
                                                       capsys) -> None:
    link = tmp_path / "out.npz"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link.symlink_to(elsewhere / "x.npz")
    status, err = run(capsys, *_eval_writing(option, link, tmp_path))
    assert status == 1 and "[E0801]" in err and "symbolic link to nothing" in err
    assert link.is_symlink() and not list(elsewhere.iterdir())


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or
                    not Path("/dev/full").exists(), reason="replacing /dev/full needs root")
@pytest.mark.parametrize("option", OUTPUTS)
def test_dev_full_as_an_output_is_refused_and_kept(option: str, tmp_path: Path,
                                                   capsys) -> None:
    before = os.lstat("/dev/full")
    try:
        status, err = run(capsys, *_eval_writing(option, Path("/dev/full"), tmp_path))
        after = os.lstat("/dev/full")
    finally:  # a regression must not leave the machine without its /dev/full
        _restore_device("/dev/full", before)
    assert status == 1 and "[E0801]" in err and "a device" in err
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert after.st_ino == before.st_ino


def _restore_device(path: str, before: os.stat_result) -> None:
    """Put the device node `path` back as it was, if something replaced it."""
    now = os.lstat(path) if os.path.lexists(path) else None
    if now is not None and stat.S_ISCHR(now.st_mode) and now.st_rdev == before.st_rdev:
        return
    if now is not None:
        os.unlink(path)
    os.mknod(path, stat.S_IFCHR | stat.S_IMODE(before.st_mode), before.st_rdev)
    os.chmod(path, stat.S_IMODE(before.st_mode))  # as it was, whatever the umask


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_a_failing_write_params_leaves_every_old_dat_file_whole(failing: str, tmp_path: Path,
                                                                 capsys, monkeypatch) -> None:
    folder = tmp_path / "params"
    folder.mkdir()
    old = {"main.G.w": b"old w", "other": b"old other"}
    for name, data in old.items():
        (folder / f"{name}.dat").write_bytes(data)
    command = _eval_writing("--write-params", folder, tmp_path)
    command[1] = str(tmp_path / "main.sknd")
    Path(command[1]).write_text(VARIABLE)

    def full(*args, **keywords):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, full)
    status, err = run(capsys, *command)
    assert status == 1 and "[E0801]" in err and "No space left on device" in err
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == \
        {f"{name}.dat": data for name, data in old.items()}


def test_write_params_replaces_dat_files_whole(tmp_path: Path) -> None:
    folder = tmp_path / "params"
    io.write_params(folder, {"w": np.arange(3.0)}, "--write-params")
    io.write_params(folder, {"w": np.arange(5.0)}, "--write-params")
    assert sorted(p.name for p in folder.iterdir()) == ["w.dat"]
    np.testing.assert_array_equal(io.read_params(folder)["w"], np.arange(5.0))


def test_a_manifest_path_holding_nul_is_a_diagnostic(tmp_path: Path, case: Path,
                                                     capsys) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    manifest = {"format": "refinterp-golden-suite/1",
                "cases": [{"id": "a", "path": "a\0b", "sha256": "0" * 64}]}
    (suite / "manifest.json").write_text(json.dumps(manifest))
    for command in (["golden", "verify", str(suite)],
                    ["check", str(suite), "--backend", "refinterp:scalar"]):
        status = main(command)
        captured = capsys.readouterr()
        assert status == 1 and "internal error" not in captured.err + captured.out
