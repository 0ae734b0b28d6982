"""refinterp/io.py: reading and writing the user's data files. Round trips, every kind of damaged
file (built here byte by byte) giving a diagnostic with a stable code, the write checks, and
hypothesis runs showing that random or mutated files give arrays or a Diagnostic, nothing else."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from refinterp.core.diagnostics import Diagnostic
from refinterp.io import (FileDiagnostic, check_writable, flatten_packs, group_packs,
                          read_array, read_arrays, read_params, write_arrays, write_params)
from refinterp.numeric.tensorfile import read_tensor, write_tensor

CANONICAL = {np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.bool_)}


def diagnostic_of(function, *args, **kwargs) -> Diagnostic:
    """The Diagnostic that `function(*args)` raises."""
    with pytest.raises(Diagnostic) as info:
        function(*args, **kwargs)
    return info.value


def npz_bytes(compressed: bool = False, **arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
    return buffer.getvalue()


def npy_bytes(array: np.ndarray, allow_pickle: bool = False) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=allow_pickle)
    return buffer.getvalue()


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def sample() -> dict[str, np.ndarray]:
    return {"a": np.arange(12, dtype=np.float64).reshape(3, 4) / 7,
            "b": np.array([1, -2, 3], dtype=np.int64)}


# --- round trips ------------------------------------------------------------------------------


def test_npz_round_trip_keeps_values_and_key_order(tmp_path: Path) -> None:
    arrays = {"z": np.array(1.5), "a": np.arange(6).reshape(2, 3), "m": np.array([True, False]),
              "file": np.zeros((0, 2))}   # `file` would clash with numpy.savez's argument
    path = tmp_path / "out.npz"
    write_arrays(path, arrays, "-o")
    back = read_arrays(path, "--inputs")
    assert list(back) == ["z", "a", "m", "file"]
    for key, value in arrays.items():
        assert back[key].dtype == value.dtype and back[key].shape == value.shape
        np.testing.assert_array_equal(back[key], value)
    with np.load(path) as archive:        # a plain numpy archive
        assert archive.files == ["z", "a", "m", "file"]


def test_npy_file_is_keyed_by_its_stem(tmp_path: Path) -> None:
    path = write(tmp_path / "weights.npy", npy_bytes(np.arange(4, dtype=np.float32)))
    back = read_arrays(path, "--inputs")
    assert list(back) == ["weights"]
    np.testing.assert_array_equal(back["weights"], [0.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(read_array(path, "--input x"), [0.0, 1.0, 2.0, 3.0])


def test_fortran_order_and_big_endian_arrays(tmp_path: Path) -> None:
    values = np.arange(6).reshape(2, 3)
    path = write(tmp_path / "f.npy", npy_bytes(np.asfortranarray(values)))
    np.testing.assert_array_equal(read_array(path, "x"), values)
    path = write(tmp_path / "b.npy", npy_bytes(values.astype(">f4")))
    back = read_array(path, "x")
    assert back.dtype == np.float64
    np.testing.assert_array_equal(back, values)


@pytest.mark.parametrize("dtype,expected", [
    (np.float16, np.float64), (np.float32, np.float64), (np.float64, np.float64),
    (np.int8, np.int64), (np.int16, np.int64), (np.int32, np.int64), (np.uint8, np.int64),
    (np.uint16, np.int64), (np.uint32, np.int64), (np.uint64, np.int64), (np.bool_, np.bool_),
])
def test_dtypes_are_canonicalised(tmp_path: Path, dtype, expected) -> None:
    values = np.array([0, 1, 1, 0, 1]).astype(dtype)
    path = write(tmp_path / "in.npz", npz_bytes(x=values))
    back = read_arrays(path, "--inputs")["x"]
    assert back.dtype == expected
    assert back.flags.writeable
    np.testing.assert_array_equal(back, values.astype(expected))


def test_uint64_beyond_int64_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "in.npz", npz_bytes(x=np.array([2**63], dtype=np.uint64)))
    diag = diagnostic_of(read_arrays, path, "--inputs")
    assert diag.code == "E0802" and "'x.npy'" in diag.message


def test_empty_archive_has_no_arrays(tmp_path: Path) -> None:
    path = write(tmp_path / "empty.npz", npz_bytes())
    assert read_arrays(path, "--inputs") == {}


def test_packs_flatten_and_group() -> None:
    a, b, c = np.zeros(1), np.ones(2), np.arange(3)
    values = {"x": a, "xs": [b, c], "y": c}
    flat = flatten_packs(values)
    assert list(flat) == ["x", "xs.0", "xs.1", "y"]
    grouped = group_packs(flat)
    assert list(grouped) == ["x", "xs", "y"]
    assert grouped["xs"][0] is b and grouped["xs"][1] is c


def test_packs_round_trip_through_a_file(tmp_path: Path) -> None:
    path = tmp_path / "packs.npz"
    write_arrays(path, flatten_packs({"xs": [np.zeros(2), np.ones(3)], "n": np.array(4)}), "-o")
    grouped = group_packs(read_arrays(path, "--inputs"))
    assert list(grouped) == ["xs", "n"]
    np.testing.assert_array_equal(grouped["xs"][1], np.ones(3))


def test_pack_items_out_of_order_are_sorted() -> None:
    grouped = group_packs({"xs.1": "b", "a": "z", "xs.0": "a"})
    assert grouped == {"xs": ["a", "b"], "a": "z"}


@pytest.mark.parametrize("arrays", [
    {"xs.0": 0, "xs.2": 2},            # a gap
    {"xs.1": 1},                        # no item 0
    {"xs": 0, "xs.0": 1},               # both forms
    {"xs.0": 1, "xs": 0},               # both forms, the other order
    {"xs.0": 0, "xs.01": 1},            # a leading zero
])
def test_invalid_packs_are_diagnostics(arrays: dict) -> None:
    diag = diagnostic_of(group_packs, arrays)
    assert isinstance(diag, FileDiagnostic)
    assert diag.code == "E0900" and "xs" in diag.message


def test_flatten_refuses_a_pack_item_given_twice() -> None:
    assert diagnostic_of(flatten_packs, {"xs": [0], "xs.0": 1}).code == "E0900"


def test_keys_that_are_not_pack_items_stay() -> None:
    assert group_packs({"a.b": 1, "v1.": 2, "c.x1": 3}) == {"a.b": 1, "v1.": 2, "c.x1": 3}


# --- damaged and wrong files -------------------------------------------------------------------


def assert_read_error(path: Path, code: str = "E0800", member: str | None = None,
                      text: str = "") -> Diagnostic:
    """read_arrays(path) raises a FileDiagnostic with `code` naming the file (and member)."""
    diag = diagnostic_of(read_arrays, path, "--inputs")
    assert isinstance(diag, FileDiagnostic)
    assert diag.code == code, diag.message
    assert f"--inputs '{path}'" in diag.message
    if member is not None:
        assert f"member '{member}'" in diag.message
    assert text in diag.message
    return diag


def test_missing_file(tmp_path: Path) -> None:
    assert_read_error(tmp_path / "nothing.npz", text="no such file")


def test_folder(tmp_path: Path) -> None:
    assert_read_error(tmp_path, text="folder")


def test_empty_file(tmp_path: Path) -> None:
    assert_read_error(write(tmp_path / "x.npz", b""), text="empty")


def test_text_file(tmp_path: Path) -> None:
    assert_read_error(write(tmp_path / "x.npz", b"a,b\n1,2\n"), text="not an .npz")


@pytest.mark.parametrize("keep", [2, 10, 40, 0.5, -22, -1])
def test_truncated_archive(tmp_path: Path, keep: float) -> None:
    data = npz_bytes(**sample())
    cut = int(len(data) * keep) if isinstance(keep, float) else keep
    assert_read_error(write(tmp_path / "x.npz", data[:cut]))


@pytest.mark.parametrize("keep", [8, 30, 128, -1])
def test_truncated_npy(tmp_path: Path, keep: int) -> None:
    data = npy_bytes(np.arange(10.0))
    assert_read_error(write(tmp_path / "x.npy", data[:keep]))


def flip(data: bytes, offset: int) -> bytes:
    return data[:offset] + bytes([data[offset] ^ 0x5A]) + data[offset + 1:]


def test_flipped_byte_in_member_data_fails_the_crc(tmp_path: Path) -> None:
    data = npz_bytes(a=np.arange(100.0), b=np.arange(3))
    start = data.index(b"\x93NUMPY")           # the data of member a.npy
    diag = assert_read_error(write(tmp_path / "x.npz", flip(data, start + 128 + 400)),
                             member="a.npy", text="damaged")
    assert "CRC" in diag.message


def test_flipped_byte_in_compressed_member(tmp_path: Path) -> None:
    data = npz_bytes(compressed=True, a=np.arange(1000.0))
    name = data.index(b"a.npy")
    for offset in (name + 40, name + 200, name + 400):   # inside the deflate stream
        assert_read_error(write(tmp_path / "x.npz", flip(data, offset)), member="a.npy")


def test_member_that_is_not_npy(tmp_path: Path) -> None:
    path = tmp_path / "x.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.npy", npy_bytes(np.zeros(2)))
        archive.writestr("notes.txt", "hello")
    assert_read_error(path, member="notes.txt", text="not an .npy array")


def test_npy_member_holding_text(tmp_path: Path) -> None:
    path = tmp_path / "x.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.npy", "just some text, not an array")
    assert_read_error(path, member="a.npy", text="not a valid .npy array")


def test_member_given_twice(tmp_path: Path) -> None:
    path = tmp_path / "x.npz"
    with pytest.warns(UserWarning):        # zipfile warns about the duplicate name
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("a.npy", npy_bytes(np.zeros(2)))
            archive.writestr("a.npy", npy_bytes(np.ones(2)))
    assert_read_error(path, member="a.npy", text="2 times")


HEADER = b"{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }"


@pytest.mark.parametrize("old,new", [
    (b"'descr'", b"'dexcr'"),           # wrong keys
    (b"(3,)", b"(3,("),                 # not a Python literal
    (b"'<f8'", b"'<q9'"),               # no dtype
    (b"(3,)", b"(-3)"),                 # shape not a tuple
    (b"(3,)", b"(-3,)"),                # negative extent
    (b"(3,)", b"(9,)"),                 # more data announced than present
    (b"(3,)", b"(2**70,)"),             # not a literal (an expression)
    (b"(3,)", b"(99999999999999999999,)"),   # more than any memory
    (b"False", b"'no' "),               # fortran_order not a bool
    (b"{'descr'", b"\"\"\"descr"),      # an unterminated string (tokenize errors)
])
def test_corrupted_npy_header(tmp_path: Path, old: bytes, new: bytes) -> None:
    data = npy_bytes(np.arange(3.0))
    assert HEADER in data and old in data
    damaged = data.replace(old, new, 1)
    assert_read_error(write(tmp_path / "x.npy", damaged))
    archive = tmp_path / "x.npz"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("a.npy", damaged)
    assert_read_error(archive, member="a.npy")


def test_bad_npy_version(tmp_path: Path) -> None:
    data = npy_bytes(np.arange(3.0))
    assert_read_error(write(tmp_path / "x.npy", data[:6] + b"\x09\x00" + data[8:]),
                      text="bad header")


@pytest.mark.parametrize("array,dtype_text", [
    (np.array([1, "a"], dtype=object), "object"),
    (np.array(["ab", "c"]), "<U2"),
    (np.array([b"ab"]), "|S2"),
    (np.array([1 + 2j]), "complex128"),
    (np.zeros(2, dtype=[("x", "<f8"), ("y", "<i4")]), "structured"),
    (np.array(["2024-01-01"], dtype="datetime64[D]"), "datetime64[D]"),
    (np.array([1], dtype="timedelta64[s]"), "timedelta64[s]"),
])
def test_unsupported_dtypes(tmp_path: Path, array: np.ndarray, dtype_text: str) -> None:
    data = npy_bytes(array, allow_pickle=True)
    assert_read_error(write(tmp_path / "x.npy", data), code="E0802", text=dtype_text)
    archive = tmp_path / "x.npz"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("ok.npy", npy_bytes(np.zeros(1)))
        zf.writestr("bad.npy", data)
    assert_read_error(archive, code="E0802", member="bad.npy", text=dtype_text)


def test_read_array_refuses_an_archive(tmp_path: Path) -> None:
    path = write(tmp_path / "x.npz", npz_bytes(a=np.zeros(1)))
    diag = diagnostic_of(read_array, path, "--input x")
    assert diag.code == "E0800" and "archive" in diag.message and str(path) in diag.message


def test_unreadable_file(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    path = write(tmp_path / "x.npz", npz_bytes(a=np.zeros(1)))
    path.chmod(0)
    try:
        assert_read_error(path, text="ermission")
    finally:
        path.chmod(0o644)


# --- parameters --------------------------------------------------------------------------------


def test_params_from_archive_and_folder(tmp_path: Path) -> None:
    arrays = {"conv1.filter": np.arange(6.0).reshape(2, 3), "steps": np.array(3),
              "mask": np.array([True, False, True])}
    write_params(tmp_path / "p.npz", arrays, "--write-params")
    write_params(tmp_path / "folder", arrays, "--write-params")
    for source in (tmp_path / "p.npz", tmp_path / "folder"):
        back = read_params(source)
        assert sorted(back) == sorted(arrays)
        for key, value in arrays.items():
            assert back[key].dtype == value.dtype
            np.testing.assert_array_equal(back[key], value)
    for key, value in arrays.items():
        np.testing.assert_array_equal(read_tensor(tmp_path / "folder" / f"{key}.dat"), value)


def test_params_empty_folder(tmp_path: Path) -> None:
    assert read_params(tmp_path) == {}


def test_params_folder_with_damaged_tensor(tmp_path: Path) -> None:
    write_tensor(tmp_path / "good.dat", np.zeros(2))
    (tmp_path / "bad.dat").write_bytes(b"\x4e\xef" + bytes(20))
    diag = diagnostic_of(read_params, tmp_path)
    assert isinstance(diag, FileDiagnostic)
    assert diag.code == "E0800" and "bad.dat" in diag.message


def test_params_refuse_a_single_npy(tmp_path: Path) -> None:
    path = write(tmp_path / "w.npy", npy_bytes(np.zeros(2)))
    diag = diagnostic_of(read_params, path)
    assert diag.code == "E0800" and "--params" in diag.message


def test_params_missing(tmp_path: Path) -> None:
    diag = diagnostic_of(read_params, tmp_path / "p.npz")
    assert diag.code == "E0800" and "p.npz" in diag.message


# --- writing -----------------------------------------------------------------------------------


def test_check_writable_accepts_a_fine_path(tmp_path: Path) -> None:
    assert check_writable(tmp_path / "out.npz", "-o") == tmp_path / "out.npz"
    existing = write(tmp_path / "old.npz", b"old")
    assert check_writable(existing, "-o") == existing
    assert check_writable(Path("relative-name.npz"), "-o") == Path("relative-name.npz")


def test_check_writable_missing_parent(tmp_path: Path) -> None:
    path = tmp_path / "x" / "out.npz"
    diag = diagnostic_of(check_writable, path, "-o")
    assert isinstance(diag, FileDiagnostic)
    assert diag.code == "E0801"
    assert diag.message == f"cannot write -o '{path}': folder '{tmp_path / 'x'}' does not exist"


def test_check_writable_parent_is_a_file(tmp_path: Path) -> None:
    parent = write(tmp_path / "x", b"")
    diag = diagnostic_of(check_writable, parent / "out.npz", "-o")
    assert diag.code == "E0801" and "not a folder" in diag.message


def test_check_writable_existing_folder(tmp_path: Path) -> None:
    diag = diagnostic_of(check_writable, tmp_path, "--save-inputs")
    assert diag.code == "E0801" and "folder" in diag.message and "--save-inputs" in diag.message


def test_check_writable_folders_for_write_params(tmp_path: Path) -> None:
    assert check_writable(tmp_path, "--write-params", folder_ok=True) == tmp_path
    assert check_writable(tmp_path / "new", "--write-params", folder_ok=True)
    diag = diagnostic_of(check_writable, tmp_path / "a" / "new", "--write-params",
                         folder_ok=True)
    assert diag.code == "E0801" and "does not exist" in diag.message
    file = write(tmp_path / "file", b"")
    diag = diagnostic_of(check_writable, file, "--write-params", folder_ok=True)
    assert diag.code == "E0801" and "not a folder" in diag.message
    (tmp_path / "dir.npz").mkdir()
    assert diagnostic_of(check_writable, tmp_path / "dir.npz", "--write-params",
                         folder_ok=True).code == "E0801"


def test_check_writable_read_only_folder(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root bypasses permissions")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        diag = diagnostic_of(check_writable, folder / "out.npz", "-o")
        assert diag.code == "E0801" and "not writable" in diag.message
        diag = diagnostic_of(write_arrays, folder / "out.npz", sample(), "-o")
        assert diag.code == "E0801"
        diag = diagnostic_of(check_writable, folder, "--write-params", folder_ok=True)
        assert diag.code == "E0801" and "not writable" in diag.message
    finally:
        folder.chmod(0o755)


def test_check_writable_without_permission(tmp_path: Path, monkeypatch) -> None:
    """The permission branches, also when the tests run as root (os.access answers for us)."""
    monkeypatch.setattr("refinterp.io.os.access", lambda *args: False)
    diag = diagnostic_of(check_writable, tmp_path / "out.npz", "-o")
    assert diag.message == f"cannot write -o '{tmp_path / 'out.npz'}': folder '{tmp_path}' is " \
                           f"not writable"
    existing = write(tmp_path / "old.npz", b"")
    assert "not writable" in diagnostic_of(check_writable, existing, "-o").message
    diag = diagnostic_of(check_writable, tmp_path, "--write-params", folder_ok=True)
    assert diag.code == "E0801" and "not writable" in diag.message


def test_write_arrays_keeps_the_name_and_leaves_no_temp_file(tmp_path: Path) -> None:
    write_arrays(tmp_path / "result.data", sample(), "-o")
    assert os.listdir(tmp_path) == ["result.data"]
    back = read_arrays(tmp_path / "result.data", "--inputs")
    np.testing.assert_array_equal(back["b"], sample()["b"])


def test_write_arrays_replaces_an_existing_file(tmp_path: Path) -> None:
    path = write(tmp_path / "out.npz", b"old contents")
    write_arrays(path, {"a": np.zeros(1)}, "-o")
    assert list(read_arrays(path, "--inputs")) == ["a"]
    assert os.listdir(tmp_path) == ["out.npz"]


def test_write_arrays_flattens_packs(tmp_path: Path) -> None:
    write_arrays(tmp_path / "o.npz", {"xs": [np.zeros(1), np.ones(1)]}, "-o")
    assert list(read_arrays(tmp_path / "o.npz", "--inputs")) == ["xs.0", "xs.1"]


def test_write_arrays_missing_folder(tmp_path: Path) -> None:
    diag = diagnostic_of(write_arrays, tmp_path / "no" / "o.npz", sample(), "-o")
    assert diag.code == "E0801" and "does not exist" in diag.message
    assert os.listdir(tmp_path) == []


def test_write_params_to_folder_writes_dat_files(tmp_path: Path) -> None:
    arrays = {"main.G.w": np.arange(4.0), "main.G.k": np.array([[1, 2]]),
              "main.G.b": np.array(True)}
    write_params(tmp_path / "params", arrays, "--write-params")
    assert sorted(os.listdir(tmp_path / "params")) == sorted(f"{k}.dat" for k in arrays)
    for key, value in arrays.items():
        back = read_tensor(tmp_path / "params" / f"{key}.dat")
        assert back.dtype == value.dtype
        np.testing.assert_array_equal(back, value)


def test_write_params_unsupported_dtype(tmp_path: Path) -> None:
    diag = diagnostic_of(write_params, tmp_path / "p", {"c": np.array([1j])}, "--write-params")
    assert diag.code == "E0801" and "c.dat" in diag.message


# --- random files: arrays or a Diagnostic, nothing else --------------------------------------


def read_or_diagnose(path: Path) -> None:
    try:
        arrays = read_arrays(path, "--inputs")
    except Diagnostic as diag:
        assert diag.code in ("E0800", "E0802")
        assert str(path) in diag.message
    else:
        assert all(a.dtype in CANONICAL for a in arrays.values())


FUZZ = settings(max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(data=st.binary(max_size=600), prefix=st.sampled_from([b"", b"PK\x03\x04", b"\x93NUMPY"]))
def test_random_bytes(tmp_path_factory, data: bytes, prefix: bytes) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "x.npz"
    read_or_diagnose(write(path, prefix + data))


VALID = [npz_bytes(a=np.arange(5.0), b=np.array([[1, 2]], dtype=np.int8)),
         npz_bytes(compressed=True, a=np.arange(40.0), m=np.array([True])),
         npy_bytes(np.arange(6, dtype=np.int32).reshape(2, 3))]

mutation = st.one_of(
    st.tuples(st.just("flip"), st.floats(0, 1, exclude_max=True), st.integers(1, 255)),
    st.tuples(st.just("cut"), st.floats(0, 1, exclude_max=True), st.just(0)),
    st.tuples(st.just("insert"), st.floats(0, 1), st.integers(0, 255)),
    st.tuples(st.just("delete"), st.floats(0, 1, exclude_max=True), st.just(0)),
)


def mutate(data: bytes, kind: str, where: float, value: int) -> bytes:
    at = int(where * len(data))
    if kind == "flip":
        return data[:at] + bytes([data[at] ^ value]) + data[at + 1:]
    if kind == "cut":
        return data[:at]
    if kind == "insert":
        return data[:at] + bytes([value]) + data[at:]
    return data[:at] + data[at + 1:]


@FUZZ
@given(which=st.integers(0, len(VALID) - 1), mutations=st.lists(mutation, min_size=1,
                                                                  max_size=4))
def test_mutated_valid_files(tmp_path_factory, which: int, mutations: list) -> None:
    data = VALID[which]
    for kind, where, value in mutations:
        if data:
            data = mutate(data, kind, where, value)
    path = tmp_path_factory.mktemp("fuzz") / ("x.npy" if which == 2 else "x.npz")
    read_or_diagnose(write(path, data))


def test_a_stored_member_is_read_from_the_file_itself(tmp_path: Path) -> None:
    """Uncompressed members are read straight into the array (io._StoredMember), across many
    1 MB chunks, with the local header's own name and extra-field lengths: the same values as
    np.load, and a flipped byte past the first chunk still fails the CRC-32."""
    import zipfile

    rng = np.random.default_rng(5)
    big = rng.standard_normal(300_000)  # 2.4 MB
    path = tmp_path / "big.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        member = io.BytesIO()
        np.save(member, big)
        info = zipfile.ZipInfo("big.npy")
        info.extra = b"\x99\x99\x04\x00abcd"  # an extra field the reader must skip
        archive.writestr(info, member.getvalue())
    np.testing.assert_array_equal(read_arrays(path, "an input file")["big"], big)
    data = bytearray(path.read_bytes())
    data[2_000_000] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(Diagnostic) as info_:
        read_arrays(path, "an input file")
    assert "CRC" in info_.value.message
