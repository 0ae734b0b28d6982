#!/usr/bin/env python3
"""Fuzz every front door of the `refinterp` command line and classify what each case does.

Usage: python3 tools/fuzz.py --cases N [--seed S] [-j N] [--timeout SECONDS] [--memory GB]
                             [--family NAME]... [--keep DIR] [--only INDEX]... [--subprocess]

Program text (corpus and stdlib files with flipped bytes, truncated, tokens deleted,
duplicated or swapped, chains of up to 30,000 terms, huge literals and extents, int(inf),
deep nesting, absent optional inputs composed), expressions for `refinterp expr`, damaged
`.npz`, `.npy` and `.dat` files, odd command-line values, damaged golden case folders, case
tables with odd values and damaged `check` reports, run through parse, fmt, expr, ops,
describe, shapes, eval, golden show/verify/build and check --merge. Families: program, expr,
options, data, golden, table, merge.

Each case is run by `refinterp.cli.main` in a child process (forked from this warm process, or a
fresh interpreter with --subprocess), in its own folder, with a time limit (the child dumps its
stack just before the limit) and an address-space limit, and classified:

    ok            exit 0 (or `check`'s 4: no case ran, docs/harness.md)
    diagnostic    exit 1 (a diagnostic about a program has a file:line:col position; one about
                  a damaged file names the file)
    usage         exit 2
    internal      exit 3, an exception escaping main, or the child killed by a signal
    hang          still running at the time limit
    unpositioned  exit 1, but a program's diagnostic has no position or a damaged file's
                  diagnostic does not name the file
    fmt-unsound   `fmt` exited 0 but dropped a comment, or printed text that fmt changes again

A case is made from (seed, index) alone (and --family, which changes the draw): `--only INDEX`
repeats one (printing its output in full), and outcomes do not depend on -j. The folders of
the shown examples are kept under --keep (default: <tmp>/refinterp-fuzz), and each example is
printed as the command that reproduces it there. The last line is

    internal errors: A, hangs: B, unpositioned file diagnostics: C (N cases)

and the exit status is 1 if A + B > 0.
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
import io
import json
import os
import random
import re
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import warnings
import zipfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # forked children and -j: no BLAS thread pools

CLASSES = ("ok", "diagnostic", "usage", "internal", "hang", "unpositioned", "fmt-unsound")
FAILING = ("internal", "hang", "unpositioned", "fmt-unsound")
FAMILIES = {"program": 30, "expr": 15, "options": 20, "data": 17, "golden": 10, "table": 6,
            "merge": 8}
WORK_MARK = ".refinterp-fuzz"
LONG_ARGUMENT = 200  # longer arguments are written to argN.txt and shown as "$(cat argN.txt)"
GRACE = 1.5          # seconds between the child's stack dump and the kill


# ============================================================================ cases and outcomes


@dataclass
class Case:
    """One run of the command line: its arguments, the files of its folder, and what a
    diagnostic about it must show."""

    index: int
    family: str
    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    expects: str = "none"            # "program": positioned; "file": names a subject; "none"
    subjects: tuple[str, ...] = ()   # the damaged files (paths relative to the case folder)
    oracle: str | None = None        # "fmt": check the printed canonical form
    note: str = ""                   # how the case was made

    def command(self, folder: Path | None = None) -> str:
        """The shell command that reproduces the case (in its folder, when kept)."""
        words = []
        for position, word in enumerate(self.argv):
            if len(word) > LONG_ARGUMENT:
                words.append(f'"$(cat arg{position}.txt)"')
            else:
                words.append(shlex.quote(word))
        line = "refinterp " + " ".join(words)
        return f"cd {shlex.quote(str(folder))} && {line}" if folder is not None else line

    def all_files(self) -> dict[str, bytes]:
        """The case's files plus one file per long argument (for the reproduction)."""
        files = dict(self.files)
        for position, word in enumerate(self.argv):
            if len(word) > LONG_ARGUMENT:
                files[f"arg{position}.txt"] = word.encode("utf-8", "surrogateescape")
        return files


@dataclass
class Outcome:
    """What a case did: its class, a signature grouping failures of one cause, the exit status
    (negative: killed by that signal), the time taken and the start of its complaint."""

    case: Case
    klass: str
    signature: str = ""
    status: int | None = None
    seconds: float = 0.0
    detail: str = ""
    folder: Path | None = None


# ============================================================================ material


@dataclass
class Material:
    """What cases are made from: program texts, stdlib modules, golden case folders, the model
    used for data files."""

    programs: list[tuple[str, str]]
    stdlib: dict[str, str]
    golden: list[tuple[dict[str, Any], dict[str, bytes]]]  # (manifest entry, files)
    model: dict[str, bytes]
    suite: dict[str, Any]  # the golden manifest's fields other than its cases


GOLDEN_CASES = ("math.add/broadcast", "nn.relu", "algo.nonmax_suppress/boxes_not_4_wide",
                "layout.concat", "models/running_mean", "models/control_flow_positive")
MODEL_CASE = "models/running_mean"  # x: real[2, 5]; variables mean: real[5], count: int[]


def load_material() -> Material:
    corpus = sorted((ROOT / "spec_tests" / "corpus").glob("*.sknd"))
    stdlib_files = sorted((ROOT / "refinterp" / "stdlib").glob("*.sknd"))
    stdlib = {p.stem: p.read_text(encoding="utf-8") for p in stdlib_files}
    programs = [(p.name, p.read_text(encoding="utf-8")) for p in corpus]
    programs += [(f"{name}.sknd", text) for name, text in stdlib.items()]
    golden_root = ROOT / "golden"
    manifest = json.loads((golden_root / "manifest.json").read_text(encoding="utf-8"))
    golden = []
    for prefix in GOLDEN_CASES:
        entry = next((e for e in manifest["cases"]
                      if e["path"] == prefix or e["path"].startswith(prefix + "/")), None)
        if entry is not None:
            folder = golden_root / entry["path"]
            golden.append((entry, {p.name: p.read_bytes() for p in sorted(folder.iterdir())
                                   if p.is_file()}))
    model = dict(next(files for entry, files in golden if entry["path"] == MODEL_CASE))
    suite = {k: v for k, v in manifest.items() if k not in ("cases", "count", "operators")}
    return Material(programs, stdlib, golden, model, suite)


# ============================================================================ text mutations


TOKEN_RE = re.compile(
    r"""\s+|\#[^\n]*|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|\d+(?:\.(?!\.)\d*)?(?:[eE][+-]?\d+)?
      |[A-Za-z_]\w*|`\w+`|@\w+|\.\.\.|<\?=|>\?=|\.\.|<\?|>\?|<<|>>|<=|>=|<>|<-|->|==|!=|=>
      |\+=|\*=|&=|\|=|:=|&&|\|\||\?\?|\*\*|.""", re.VERBOSE | re.DOTALL)
COMMENT_RE = re.compile(r""""(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|(\#[^\n]*)""")
HUGE_EXTENTS = ("99999999999999999999", str(2 ** 63), str(2 ** 64), "4294967296",
                "100000, 100000", "1000000000", "-1", "0", "1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1",
                "10 ** 100000", "int(inf)", "int(-inf)", ", ".join(["1"] * 100))


def split_tokens(text: str) -> list[str]:
    return TOKEN_RE.findall(text)


def comments(text: str) -> list[str]:
    """The comments of SkriptND text (a '#' inside a string literal starts none)."""
    return [m.group(1).rstrip() for m in COMMENT_RE.finditer(text) if m.group(1)]


def chain(rng: random.Random, terms: int = 600) -> str:
    """A long chain such as `1 + 1 + ... + 1` (flat), `1 ** 1 ** ...` (flat too: `**` groups
    to the left) or `a ?? b ?? ...` (right-associative: nested)."""
    operand, operator = rng.choice([("1", "+"), ("1", "-"), ("1", "*"), ("true", "&&"),
                                    ("false", "||"), ("1.5", "+"), ("1", "<<"), ("1", "??"),
                                    ("1", "**"), ("(false ? 1)", "??")])
    return f" {operator} ".join([operand] * terms)


def stress_expression(rng: random.Random) -> str:
    """An expression that stresses recursion, integer size or memory."""
    kind = rng.choice(["chain", "chain", "huge-int", "parens", "brackets", "unary", "select",
                       "power", "repeat", "range", "real", "infinity"])
    depth = rng.choice([100, 500, 1000, 3000])
    if kind == "chain":
        return chain(rng, rng.choice([600, 600, 2000, 10000, 30000]))
    if kind == "huge-int":
        return rng.choice("123456789") + "".join(rng.choice("0123456789")
                                                 for _ in range(rng.choice([20, 400, 5000])))
    if kind == "parens":
        return "(" * depth + "1" + ")" * depth
    if kind == "brackets":
        return "[" * depth + "1" + "]" * depth
    if kind == "unary":
        return rng.choice(["-", "!", "+ ", "- "]) * depth + "1"
    if kind == "select":
        return rng.choice(["true ? 1 : ", "false ? 1 : "]) * depth + "0"
    if kind == "infinity":  # int(inf) marks extremes only: no range, index or arithmetic
        return rng.choice(["[0:int(inf)]", "[int(-inf):3]", "[0:3:int(inf)]",
                           "[1, 2, 3][int(-inf)]", "[1, 2, 3][int(inf)]", "[1, 2][int(-inf):]",
                           "int(inf) + 1", "1 - int(-inf)", "2 ** int(inf)", "int(inf) % 2",
                           "[1 ..(int(inf))]", "[1, 2][[0, int(-inf)]]", "int(inf) >> 3",
                           "[1, 2, 3][int(-inf)] <- 4", "real(int(-inf))"])
    if kind == "power":
        return rng.choice(["2 ** 100000000", "10 ** 10 ** 10", "2 ** 63", "-2 ** 63 - 1",
                           "9223372036854775807 + 1", "1 / 0", "1 % 0", "0.0 / 0.0"])
    if kind == "repeat":
        return rng.choice(["[0..(1000000000)]", "[0..(100000000)]", "[1, 2]..(1000000000)",
                           "'x'..(1000000000)", "[0..(-1)]"])
    if kind == "range":
        return rng.choice(["[0:1000000000000]", "[0:100000000]", "[0:10:0]",
                           "[0:1000000000000:-1]"])
    return rng.choice(["1e308 * 10.0", "1e-320", "1e999", "inf - inf", "-inf", "pi ** 1000.0"])


def mutate_text(rng: random.Random, text: str, count: int) -> tuple[str, list[str]]:
    """Apply `count` random mutations to program text; returns the text and what was done."""
    notes = []
    for _ in range(count):
        kind = rng.choice(["flip", "truncate", "delete", "delete", "duplicate", "swap",
                           "stress", "stress", "extent", "comment"])
        notes.append(kind)
        if kind == "flip":
            data = bytearray(text.encode("utf-8", "surrogateescape"))
            for _ in range(rng.randint(1, 4)):
                if data:
                    data[rng.randrange(len(data))] = rng.choice(
                        [rng.randrange(256), 0, 0x7F, 0xFF, ord("{"), ord("#"), ord('"')])
            text = data.decode("utf-8", "surrogateescape")
        elif kind == "truncate":
            text = text[:rng.randrange(len(text) + 1)]
        elif kind == "comment":
            lines = text.split("\n")
            at = rng.randrange(len(lines) + 1)
            lines.insert(at, rng.choice(["# a comment", "    # indented comment {x}",
                                         "#", "# ünïcødé ✓"]))
            text = "\n".join(lines)
        else:
            text = _mutate_tokens(rng, text, kind)
    return text, notes


def _mutate_tokens(rng: random.Random, text: str, kind: str) -> str:
    tokens = split_tokens(text)
    solid = [i for i, t in enumerate(tokens) if not t.isspace()]
    if not solid:
        return text
    at = rng.choice(solid)
    if kind == "delete":
        del tokens[at]
    elif kind == "duplicate":
        tokens.insert(at, tokens[at] + " ")
    elif kind == "swap":
        other = rng.choice(solid)
        tokens[at], tokens[other] = tokens[other], tokens[at]
    elif kind == "stress":
        numbers = [i for i in solid if tokens[i][0].isdigit()] or solid
        tokens[rng.choice(numbers)] = stress_expression(rng)
    elif kind == "extent":
        shapes = [m for m in re.finditer(r"\b(?:real|int|bool)\s*\[([^\]\n]*)\]", text)]
        if shapes:
            m = rng.choice(shapes)
            return text[:m.start(1)] + rng.choice(HUGE_EXTENTS) + text[m.end(1):]
        tokens[at] = rng.choice(HUGE_EXTENTS)
    return "".join(tokens)


def definition_names(text: str) -> list[str]:
    return re.findall(r"\b(?:operator|graph)\s+([A-Za-z_]\w*)", text)


# ============================================================================ data mutations


def npy_bytes(array: Any) -> bytes:
    import numpy as np

    stream = io.BytesIO()
    np.save(stream, array, allow_pickle=True)
    return stream.getvalue()


def npz_bytes(members: dict[str, bytes], compress: bool = False) -> bytes:
    stream = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(stream, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data)
    return stream.getvalue()


def npz_members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def _npy_parts(data: bytes) -> tuple[bytes, str, bytes]:
    """(magic and version, header text, payload) of .npy bytes."""
    major = data[6]
    size_bytes = 2 if major == 1 else 4
    length = int.from_bytes(data[8:8 + size_bytes], "little")
    start = 8 + size_bytes
    return data[:8], data[start:start + length].decode("latin-1"), data[start + length:]


def _npy_join(prefix: bytes, header: str, payload: bytes) -> bytes:
    major = prefix[6]
    size_bytes = 2 if major == 1 else 4
    body = header.rstrip("\n").rstrip(" ")
    total = len(prefix) + size_bytes + len(body) + 1
    body += " " * (-total % 64) + "\n"
    if major == 1 and len(body) > 0xFFFF:
        prefix, size_bytes = prefix[:6] + b"\x02\x00", 4
    return prefix + len(body).to_bytes(size_bytes, "little") + body.encode("latin-1") + payload


HUGE_SHAPES = ("(1000000000000,)", "(4611686018427387904, 4611686018427387904)", "(-1,)",
               "(18446744073709551616,)", "(1000000, 1000000)", "(0,)", "(2, 5, 1000000000)",
               "()", "(2,)", "(5, 2)", "(2, 5)", "('a',)", "(2.5,)", "[2, 5]", "None",
               "(" + "1, " * 40 + ")")


def wrong_dtype_npy(rng: random.Random) -> tuple[bytes, str]:
    """A well-formed .npy file of a dtype refinterp does not take (or takes with care)."""
    import numpy as np

    choices: list[tuple[str, Callable[[], Any]]] = [
        ("complex", lambda: np.ones((2, 5), complex)),
        ("text", lambda: np.array([["a"] * 5] * 2)),
        ("bytes", lambda: np.array([[b"a"] * 5] * 2)),
        ("object", lambda: np.array([[None] * 5] * 2, dtype=object)),
        ("float16", lambda: np.ones((2, 5), np.float16)),
        ("float32-big-endian", lambda: np.ones((2, 5), ">f4")),
        ("uint64-huge", lambda: np.full((2, 5), 2 ** 64 - 1, np.uint64)),
        ("int8", lambda: np.ones((2, 5), np.int8)),
        ("bool", lambda: np.ones((2, 5), bool)),
        ("datetime", lambda: np.zeros((2, 5), "datetime64[s]")),
        ("structured", lambda: np.zeros((2, 5), [("a", "<f8"), ("b", "<i4")])),
        ("void", lambda: np.zeros((2, 5), "V3")),
        ("nan-inf", lambda: np.array([[np.nan, np.inf, -np.inf, 0.0, -0.0]] * 2)),
        ("fortran", lambda: np.asfortranarray(np.ones((2, 5)))),
        ("empty", lambda: np.ones((0, 5))),
        ("scalar", lambda: np.float64(1.0)),
        ("rank-9", lambda: np.ones((1,) * 9)),
    ]
    name, make = rng.choice(choices)
    return npy_bytes(make()), f"dtype {name}"


def damage_npy(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Damage .npy bytes: truncation, flipped bytes, a rewritten header, a wrong dtype."""
    kind = rng.choice(["truncate", "flip-header", "flip-data", "shape", "shape", "descr",
                       "dtype", "dtype", "version", "magic"])
    if kind == "truncate":
        return data[:rng.randrange(len(data))], "truncated"
    if kind in ("flip-header", "flip-data"):
        damaged = bytearray(data)
        prefix, header, _ = _npy_parts(data)
        start = 10 + len(header) if kind == "flip-data" else 0
        end = len(damaged) if kind == "flip-data" else 10 + len(header)
        for _ in range(rng.randint(1, 3)):
            if start < end:
                damaged[rng.randrange(start, end)] = rng.randrange(256)
        return bytes(damaged), kind
    if kind == "dtype":
        return wrong_dtype_npy(rng)
    prefix, header, payload = _npy_parts(data)
    if kind == "shape":
        shape = rng.choice(HUGE_SHAPES)
        return _npy_join(prefix, re.sub(r"'shape': \([^)]*\)", f"'shape': {shape}", header),
                         payload), f"header shape {shape}"
    if kind == "descr":
        descr = rng.choice(["'<c16'", "'|O'", "'<U0'", "'|V0'", "'<f3'", "'xyz'", "1",
                            "[('a', '<f8')]", "'<M8[s]'", "'>i8'"])
        return _npy_join(prefix, re.sub(r"'descr': '[^']*'", f"'descr': {descr}", header),
                         payload), f"header descr {descr}"
    if kind == "version":
        major = rng.choice([2, 3, 9, 0])
        return prefix[:6] + bytes([major, 0]) + data[8:], f"version {major}"
    return b"\x93NUMPZ" + data[6:], "bad magic"


def damage_npz(rng: random.Random, members: dict[str, bytes]) -> tuple[bytes, str]:
    """Damage an .npz archive: one member, or the archive itself."""
    kind = rng.choice(["member", "member", "member", "truncate", "flip", "compressed-flip",
                       "not-npy", "duplicate", "empty", "missing", "extra", "folder",
                       "sizes"])
    members = dict(members)
    name = rng.choice(sorted(members))
    if kind == "member":
        members[name], note = damage_npy(rng, members[name])
        return npz_bytes(members), f"member {name}: {note}"
    if kind == "truncate":
        data = npz_bytes(members)
        return data[:rng.randrange(len(data))], "archive truncated"
    if kind in ("flip", "compressed-flip"):
        data = bytearray(npz_bytes(members, compress=kind == "compressed-flip"))
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data), kind
    if kind == "not-npy":
        members["notes.txt"] = b"hello"
    elif kind == "duplicate":
        stream = io.BytesIO(npz_bytes(members))
        with warnings.catch_warnings(), zipfile.ZipFile(stream, "a") as archive:
            warnings.simplefilter("ignore")  # "Duplicate name": the point of the case
            archive.writestr(name, members[name])
        return stream.getvalue(), f"member {name} twice"
    elif kind == "empty":
        members = {}
    elif kind == "missing":
        del members[name]
    elif kind == "extra":
        members["unknown.npy"] = npy_bytes(__import__("numpy").ones(3))
    elif kind == "folder":
        members["sub/"] = b""
    elif kind == "sizes":  # a central directory announcing a huge member
        data = bytearray(npz_bytes(members))
        at = data.rfind(b"PK\x01\x02")
        data[at + 24:at + 28] = struct.pack("<I", 0xFFFFFFF0)
        return bytes(data), "huge declared size"
    return npz_bytes(members), kind


def dat_bytes(values: Any, item_type: int = 0, bits: int = 64) -> bytes:
    """An NNEF .dat tensor file (numeric/tensorfile.py's layout) of float64 or int64 values."""
    import numpy as np

    array = np.asarray(values)
    payload = array.astype("<f8" if item_type == 0 else "<i8").tobytes()
    extents = list(array.shape) + [0] * (8 - array.ndim)
    header = (b"\x4e\xef\x01\x00" + struct.pack("<II", len(payload), array.ndim)
              + struct.pack("<8I", *extents) + struct.pack("<II", bits, item_type) + bytes(76))
    return header + payload


def damage_dat(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Damage a .dat file: truncation, flipped bytes, or one header field set to an odd
    value."""
    damaged = bytearray(data)
    kind = rng.choice(["truncate", "flip", "field", "field", "field"])
    if kind == "truncate":
        return data[:rng.randrange(len(data))], "truncated"
    if kind == "flip":
        for _ in range(rng.randint(1, 3)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        return bytes(damaged), "flipped"
    offset, name = rng.choice([(0, "magic"), (2, "version"), (4, "length"), (8, "rank"),
                               (12, "extent 0"), (16, "extent 1"), (44, "bits"),
                               (48, "item type"), (52, "reserved")])
    value = rng.choice([0, 1, 7, 9, 0xFFFF, 0xFFFFFFFF, 0x80000000, 2, 3, 5, 16, 33])
    damaged[offset:offset + 4] = struct.pack("<I", value)
    return bytes(damaged), f"{name} = {value:#x}"


def damage_json(rng: random.Random, value: Any) -> tuple[bytes, str]:
    """Damage JSON data: a structural edit somewhere in the tree, then maybe text damage."""
    value = json.loads(json.dumps(value))
    notes = []
    for _ in range(rng.randint(1, 2)):
        value, note = _edit_json(rng, value)
        notes.append(note)
    text = json.dumps(value, indent=1).replace(json.dumps(DEEP_JSON), "[" * 3000 + "]" * 3000)
    if rng.random() < 0.25:
        if rng.random() < 0.5:
            text = text[:rng.randrange(len(text))]
            notes.append("truncated")
        else:
            chars = list(text)
            chars[rng.randrange(len(chars))] = rng.choice(["{", "]", '"', "\x00", "é", "x"])
            text = "".join(chars)
            notes.append("flipped")
    return text.encode("utf-8"), ", ".join(notes)


DEEP_JSON = "<3000 nested lists>"  # replaced in the text: Python's json cannot write it
JSON_JUNK: tuple[Callable[[], Any], ...] = (
    lambda: None, lambda: True, lambda: -1, lambda: 0, lambda: 2 ** 70, lambda: 1e308,
    lambda: float("nan"), lambda: "", lambda: "x" * 5000, lambda: [], lambda: {},
    lambda: {"a": 1}, lambda: [1, "two", None], lambda: 10 ** 400,
    lambda: DEEP_JSON, lambda: "../../etc/passwd",
    lambda: [10 ** 12, 10 ** 12])


def _edit_json(rng: random.Random, root: Any) -> tuple[Any, str]:
    paths: list[tuple[Any, ...]] = []

    def walk(node: Any, path: tuple[Any, ...]) -> None:
        paths.append(path)
        if len(paths) > 4000:
            return
        if isinstance(node, dict):
            for key, item in node.items():
                walk(item, path + (key,))
        elif isinstance(node, list):
            for position, item in enumerate(node):
                walk(item, path + (position,))
    walk(root, ())
    path = rng.choice(paths)
    junk = rng.choice(JSON_JUNK)()
    if not path:
        return junk, "root replaced"
    parent = root
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if isinstance(parent, dict) and rng.random() < 0.35:
        del parent[key]
        return root, f"deleted {'/'.join(map(str, path))}"
    parent[key] = junk
    return root, f"set {'/'.join(map(str, path))}"


# ============================================================================ case generators


def random_name(rng: random.Random) -> str:
    return rng.choice(["x", "n", "xs", "stride", "axes", "padding", "undefined", "_", "T"])


def random_atom(rng: random.Random) -> str:
    return rng.choice([
        lambda: str(rng.randint(-5, 20)), lambda: str(rng.choice([0, 1, -1, 2 ** 31, 2 ** 63])),
        lambda: rng.choice(["1.5", "0.0", "-0.0", "1e308", "1e-320", "inf", "pi", "2.", "1e5"]),
        lambda: rng.choice(["true", "false", "null"]),
        lambda: rng.choice(["'a'", '"x{1 + 2}y"', "'\\q'", "'{'", "'}'", "''", '"a" "b"',
                            "'{[1, 2]}'", "'\\u0041'"]),
        lambda: random_name(rng),
        lambda: rng.choice(["[]", "[1, 2, 3]", "[1.0, 2.5]", "[true, false]", "[[1], [2, 3]]",
                            "[1:5]", "[5:1:-1]", "['a', 'b']"]),
    ])()


BINARY = ("+", "-", "*", "/", "%", "\\", "**", "<", "<=", ">", ">=", "==", "!=", "&&", "||",
          "^", "=>", "<<", ">>", "<?", ">?", "??", "in", "is")


def random_expression(rng: random.Random, depth: int = 4) -> str:
    """A random expression of the compile-time language (often ill-typed: that is the point)."""
    if depth <= 0 or rng.random() < 0.25:
        return random_atom(rng)
    sub = lambda: random_expression(rng, depth - 1)  # noqa: E731
    kind = rng.randrange(12)
    if kind < 4:
        return f"{sub()} {rng.choice(BINARY)} {sub()}"
    if kind == 4:
        return f"{rng.choice(['-', '!', '+', '?'])}{sub()}"
    if kind == 5:
        return f"{sub()} ? {sub()} : {sub()}"
    if kind == 6:
        return f"[{', '.join(sub() for _ in range(rng.randint(0, 3)))}]"
    if kind == 7:
        return f"{sub()}[{rng.choice([sub(), ':', '::-1', '1:', sub() + ':' + sub()])}]"
    if kind == 8:
        return f"{sub()}{rng.choice(['..', '..(3)', ' + ..', ' * ..', ' && ..', ' + ...'])}"
    if kind == 9:
        builtin = rng.choice(["sqrt", "exp", "log", "abs", "sign", "sin", "atan"])
        return rng.choice([f"`{builtin}`({sub()})", f"{builtin}({sub()})",
                           f"{rng.choice(['int', 'real', 'bool', 'str'])}({sub()})"])
    if kind == 10:
        return f"({sub()})"
    return f"{sub()}.{rng.choice(['shape', 'rank', 'size', 'length', 'x'])}"


def gen_expr(rng: random.Random, material: Material) -> Case:
    kind = rng.choice(["random", "random", "random", "stress", "stress", "mutated"])
    if kind == "random":
        text = random_expression(rng, rng.randint(1, 5))
    elif kind == "stress":
        text = stress_expression(rng)
        if rng.random() < 0.3:
            text = f"{random_expression(rng, 2)} + {text}"
    else:
        text, _ = mutate_text(rng, random_expression(rng, 4), rng.randint(1, 2))
    argv = ["expr"]
    for _ in range(rng.choice([0, 0, 1, 2])):
        value = stress_expression(rng) if rng.random() < 0.2 else random_expression(rng, 2)
        argv += ["--attrib", f"{random_name(rng)}={value}"]
    if rng.random() < 0.2:
        argv += ["--profile", "khronos"]
    if rng.random() < 0.2:
        argv.append("--json")
    argv.append(text)
    return Case(0, "expr", argv, note=kind)


PROGRAM_COMMANDS = (("parse", 25), ("fmt", 20), ("fmt-check", 5), ("shapes", 20),
                    ("eval", 20), ("ops", 5), ("describe", 5))

STRESS_PROGRAMS = (
    """operator f {
    @attrib {
        n: int = @E@;
    }
    @input {
        x: real[4];
    }
    @output {
        y: real[4];
    }
    @lower {
        y[i] = x[i] + real(n), i < 4;
    }
}
""",
    """import nn;

graph G {
    @input {
        x: real[@X@];
    }
    @output {
        y: real[@X@];
    }
    @compose {
        y = nn.relu(x);
    }
}
""",
    """import math;

graph G {
    @input {
        x: real[2, 3];
    }
    @output {
        y: real[2, 3];
    }
    @compose {
        y = math.add(x, @E@);
    }
}
""",
    """graph G {
    @input {
        x: real[2];
        o: optional real[2];
    }
    @output {
        y: @O@real[2];
    }
    @compose {
        y = @B@;
    }
}
""",
    """operator f {
    @input {
        x: real[4];
    }
    @output {
        y: real[4];
    }
    @lower {
        y[i] = @R@, i < 4;
    }
}
""",
    """operator f {
    @attrib {
        n: int = 3;
    }
    @assert {
        @E@: "the message {n}";
    }
    @input {
        x: real[n];
    }
    @output {
        y: real[n];
    }
    @lower {
        y[i] = x[i] * 2.0, i < n;
    }
}
""",
)


def weighted(rng: random.Random, table: Iterable[tuple[str, int]]) -> str:
    names, weights = zip(*table)
    return rng.choices(names, weights)[0]


def gen_program(rng: random.Random, material: Material) -> Case:
    """Program text: a mutated corpus or stdlib file, a stress template, or a damaged stdlib
    folder (--stdlib), through a command that reads it."""
    origin = rng.random()
    files: dict[str, bytes] = {}
    if origin < 0.12:
        return _gen_stdlib_folder(rng, material)
    if origin < 0.27:
        template = rng.choice(STRESS_PROGRAMS)
        text = template.replace("@E@", stress_expression(rng)).replace(
            "@X@", rng.choice(HUGE_EXTENTS)).replace(
            "@O@", rng.choice(["", "optional "])).replace(
            "@B@", rng.choice(["o", "{ yield o; }", "o ?? x", "{ yield o ?? x; }"])).replace(
            "@R@", " + ".join([rng.choice(["x[i]", "real(i)", "x[i] * 2.0"])] *
                              rng.choice([10, 5000, 20000])))
        note = "stress template"
        if rng.random() < 0.3:
            text, notes = mutate_text(rng, text, 1)
            note += " + " + "+".join(notes)
    else:
        name, text = rng.choice(material.programs)
        text, notes = mutate_text(rng, text, rng.choice([1, 1, 1, 2, 3]))
        note = f"{name}: {'+'.join(notes)}"
    encoded = text.encode("utf-8", "surrogateescape")
    if rng.random() < 0.15:
        files["model/main.sknd"], target, subject = encoded, "model", "model/main.sknd"
    else:
        files["prog.sknd"], target, subject = encoded, "prog.sknd", "prog.sknd"
    command = weighted(rng, PROGRAM_COMMANDS)
    argv = _program_argv(rng, command, target, definition_names(text))
    return Case(0, "program", argv, files, "program", (subject,),
                "fmt" if command == "fmt" and "--json" not in argv else None, note)


def _program_argv(rng: random.Random, command: str, target: str, names: list[str]) -> list[str]:
    op = ["--op", rng.choice(names)] if names and rng.random() < 0.4 else []
    if command == "fmt-check":
        argv = ["fmt", "--check", target]
    elif command in ("parse", "fmt", "ops"):
        argv = [command, target]
    elif command == "describe":
        argv = ["describe", target, *op]
    elif command == "shapes":
        argv = ["shapes", target, *op, *rng.choice([[], ["--symbols"], ["--quant"]])]
    else:
        argv = ["eval", target, *op, "--random-inputs", "--random-params",
                *rng.choice([[], ["--engine", "scalar"], ["--engine", "vector"]])]
    if rng.random() < 0.2:
        argv.append("--json")
    return argv


def _gen_stdlib_folder(rng: random.Random, material: Material) -> Case:
    """A --stdlib folder with one module damaged."""
    module = rng.choice(sorted(material.stdlib))
    text, notes = mutate_text(rng, material.stdlib[module], rng.choice([1, 1, 2]))
    files = {f"lib/{name}.sknd": (text if name == module else source).encode(
        "utf-8", "surrogateescape") for name, source in material.stdlib.items()}
    ops = definition_names(material.stdlib[module]) or ["x"]
    op = f"{module}.{rng.choice(ops)}"
    argv = rng.choice([
        ["ops", module, "--stdlib", "lib"], ["describe", op, "--stdlib", "lib"],
        ["shapes", "--op", op, "--stdlib", "lib"],
        ["eval", "--op", op, "--stdlib", "lib", "--random-inputs"],
        ["ops", "--stdlib", "lib"]])
    return Case(0, "program", argv, files, "program", (f"lib/{module}.sknd",),
                note=f"--stdlib with {module}: {'+'.join(notes)}")


GRAPH = b"""import math;

graph G {
    @input {
        x: real[2, 3];
        y: real[3];
    }
    @output {
        z: real[2, 3];
    }
    @compose {
        z = math.add(x, y);
    }
}
"""

OPTION_VALUES: dict[str, Callable[[random.Random], list[str]]] = {
    "seed": lambda r: ["--seed", r.choice(["-1", str(2 ** 64), str(2 ** 70), str(-2 ** 63),
                                           "abc", "1e3", "", "0x10"])],
    "max-depth": lambda r: ["--max-depth", r.choice(["0", "-1", "1000000000", str(10 ** 30),
                                                     "1", "x"])],
    "max-iterations": lambda r: ["--max-iterations", r.choice(["0", "-5", "1000000000",
                                                               str(10 ** 30), "1"])],
    "output": lambda r: [r.choice(["-o", "--save-inputs", "--save-params", "--write-params"]),
                         r.choice(["", "/", ".", "nodir/x.npz", "out.npy", "x.txt",
                                   "a" * 300 + ".npz", "/proc/x.npz", "out.npz", "-",
                                   "prog.sknd", "dir/"])],
    "random": lambda r: ["--random", r.choice([
        "x=real[100000,100000]", "x=real[4]..(100000000)", "x=real[99999999999999999999]",
        "x=int[0]", "x=bool[3]", "x=string[3]", "x=real[]", "x=real[-1]",
        "x=real[1,1,1,1,1,1,1,1,1,1,1,1]", "xs.0=real[2]", "x=real[2,3]..(0)", "=real[2]",
        "x", "nosuch", "x=real[2,3]", "y=real[3]", "x=real[1000000000]", "x=int[2,3]",
        "x.1=real[2,3]", "x=real[2,3]..(99999999999999999999)",
        "x=real[" + ",".join(["1"] * 100) + "]", "x=real[2,3]..(100001)"])],
    "input": lambda r: ["--input", r.choice([
        "x=[1.0, 2.0]", "x=" + chain(r), "x=[[1], [2, 3]]", "x=1e999", "x=" + "9" * 400,
        "x=missing.npy", "x='str'", "x=[]", "x=true", "x=null", "x=", "=1", "x",
        "x=[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]", "x=[0..(1000000000)]", "x=" + "[" * 2000,
        "y=[1.0, 2.0, 3.0]", "x=prog.sknd.npy"])],
    "attrib": lambda r: ["--attrib", r.choice([
        "stride=", "=3", "stride=[1,", "stride=" + chain(r), "stride=" + "9" * 500,
        "stride=" + "(" * 3000 + "1" + ")" * 3000, "a b=1", "stride=x", "stride=2",
        "padding=[1, 2]..(1000000000)", "axis=-1", "stride=[0:100000000]", "k=1e999",
        "stride='s'", "x=1", "stride=[2, 2]", "axes=[0, 1, 2, 3, 4, 5, 6, 7, 8]"])],
    "max-memory": lambda r: ["--max-memory", r.choice(["0", "-1", "1e400", "abc", "1P", "inf",
                                                       "nan", "", "1K", "9" * 400, "1", "8"])],
    "engine": lambda r: ["--engine", r.choice(["scalar", "vector", "auto", "gpu"])],
    "profile": lambda r: ["--profile", r.choice(["khronos", "spec", "other"])],
    "generic": lambda r: ["--generic", r.choice(["real", "int", "foo", "", "real<real>",
                                                 "bool"])],
    "op": lambda r: ["--op", r.choice(["", "nn.", ".relu", "nn.relu.x", "nosuch.op",
                                       "nn.nosuch", "nn._lstm_step", "G", "math", "nn.conv"])],
    "stdlib": lambda r: ["--stdlib", r.choice(["nodir", "prog.sknd", "empty", "/"])],
    "path": lambda r: ["--path", r.choice(["nodir", "prog.sknd", "/", ""])],
    "save-case": lambda r: ["--save-case", r.choice(["", "case", "prog.sknd", "/proc/x"])],
    "flags": lambda r: r.choice([["--verbose"], ["--progress"], ["--no-progress"], ["--json"],
                                 ["--symbols"], ["--quant"], ["--random-params"],
                                 ["--case-class", "bogus"]]),
}
OPTION_TARGETS = (["--op", "nn.relu"], ["--op", "math.add"], ["--op", "nn.conv"],
                  ["--op", "layout.reshape"], ["prog.sknd"], ["prog.sknd"], [])


def gen_options(rng: random.Random, material: Material) -> Case:
    """Odd command-line values for eval and shapes (and a few other commands)."""
    command = rng.choice(["eval", "eval", "eval", "shapes", "shapes", "parse", "ops",
                          "describe"])
    files = {"prog.sknd": GRAPH, "empty/.keep": b"", "dir/.keep": b""}
    if command in ("eval", "shapes"):
        argv = [command, *rng.choice(OPTION_TARGETS)]
        if command == "shapes" and rng.random() < 0.5:
            argv += ["--input", "x=real[2,3]", "--input", "y=real[3]"]
        elif command == "eval" and rng.random() < 0.5:
            argv += ["--random-inputs"]
    else:
        argv = [command, rng.choice(["prog.sknd", "nosuch.sknd", "dir", "nn", "nn.relu",
                                     "-", "", "/"])]
    for _ in range(rng.randint(1, 4)):
        argv += OPTION_VALUES[rng.choice(sorted(OPTION_VALUES))](rng)
    return Case(0, "options", argv, files, note="options")


def gen_data(rng: random.Random, material: Material) -> Case:
    """A damaged .npz, .npy or .dat file given to eval."""
    import numpy as np

    model = material.model
    files = {"model.sknd": model["model.sknd"]}
    kind = rng.choice(["inputs", "inputs", "params", "npy", "npy", "dat", "dat-model",
                       "save-inputs"])
    if kind == "inputs":
        files["in.npz"], note = damage_npz(rng, npz_members(model["inputs.npz"]))
        argv = ["eval", "model.sknd", "--inputs", "in.npz", "--params", "params.npz"]
        files["params.npz"], subject = model["params.npz"], "in.npz"
    elif kind == "params":
        files["params.npz"], note = damage_npz(rng, npz_members(model["params.npz"]))
        files["in.npz"], subject = model["inputs.npz"], "params.npz"
        argv = ["eval", "model.sknd", "--inputs", "in.npz", "--params", "params.npz"]
    elif kind == "npy":
        x = npy_bytes(np.linspace(-1.0, 1.0, 10).reshape(2, 5))
        files["x.npy"], note = damage_npy(rng, x)
        argv, subject = ["eval", "model.sknd", "--input", "x=x.npy", "--params",
                         "params.npz"], "x.npy"
        files["params.npz"] = model["params.npz"]
        if rng.random() < 0.4:
            argv = ["eval", "--op", "math.add", "--input", "x=x.npy", "--input", "y=[1.0]"]
    elif kind in ("dat", "dat-model"):
        names = {"mean": dat_bytes(np.linspace(0.0, 1.0, 5)),
                 "count": dat_bytes(np.array(3), item_type=4, bits=64)}
        which = rng.choice(sorted(names))
        names[which], note = damage_dat(rng, names[which])
        files["in.npz"] = model["inputs.npz"]
        if kind == "dat":
            for name, data in names.items():
                files[f"vars/{name}.dat"] = data
            argv, subject = ["eval", "model.sknd", "--inputs", "in.npz", "--params", "vars"], \
                f"vars/{which}.dat"
        else:
            files["folder/main.sknd"] = files.pop("model.sknd")
            for name, data in names.items():
                files[f"folder/main.RunningMean.{name}.dat"] = data
            argv, subject = ["eval", "folder", "--inputs", "in.npz"], \
                f"folder/main.RunningMean.{which}.dat"
        note = f"{which}.dat: {note}"
    else:  # a damaged file where an output would go: it must be overwritten or refused
        files["in.npz"], files["params.npz"] = model["inputs.npz"], model["params.npz"]
        files["out.npz"], note = damage_npz(rng, npz_members(model["inputs.npz"]))
        argv, subject = ["eval", "model.sknd", "--inputs", "out.npz", "--params", "params.npz",
                         "--save-inputs", "out.npz"], "out.npz"
    if rng.random() < 0.15:
        argv.append("--json")
    return Case(0, "data", argv, files, "file", (subject,), note=note)


def gen_golden(rng: random.Random, material: Material) -> Case:
    """A golden case folder (or a one-case suite) with one file damaged, shown or verified."""
    entry, case_files = rng.choice(material.golden)
    case_id = entry["id"]
    files = {f"case/{name}": data for name, data in case_files.items()}
    victim = rng.choice(sorted(case_files) + ["case.json", "case.json"])
    data = case_files[victim]
    if victim.endswith(".json"):
        damaged, note = damage_json(rng, json.loads(data))
    elif victim.endswith(".npz"):
        damaged, note = damage_npz(rng, npz_members(data))
    else:
        text, notes = mutate_text(rng, data.decode("utf-8"), rng.randint(1, 2))
        damaged, note = text.encode("utf-8", "surrogateescape"), "+".join(notes)
    subject = f"case/{victim}"
    subjects: tuple[str, ...] = (subject, "case")  # verify's problems name the case folder
    if rng.random() < 0.1:
        del files[subject]
        note = "deleted"
    else:
        files[subject] = damaged
    argv = rng.choice([["golden", "show", "case"], ["golden", "verify", "case"],
                       ["golden", "verify", "case", "--hashes-only"], ["golden", "verify", "."],
                       ["golden", "show", "case", "--json"]])
    if argv[2] == ".":  # a suite: a manifest naming the case (with case.json's true hash)
        case_json = files.get("case/case.json", b"")
        manifest = {**material.suite, "count": 1, "operators": {entry.get("operator"): 1},
                    "cases": [{**entry, "path": "case",
                               "sha256": hashlib.sha256(case_json).hexdigest()}]}
        files["manifest.json"] = json.dumps(manifest, indent=2).encode()
        if rng.random() < 0.4:
            files["manifest.json"], manifest_note = damage_json(rng, manifest)
            note, subjects = f"{note}; manifest.json: {manifest_note}", \
                subjects + ("manifest.json",)
    return Case(0, "golden", argv, files, "file", subjects, note=f"{case_id}: {victim}: {note}")


TABLE_ODD_VALUES = {  # TOML values for a case table's fields: right, wrong type, out of range
    "seed": ["7", "-1", "1e400", "1.5", '"abc"', "true", "18446744073709551616", "[1]"],
    "range": ["[0, 3]", "[0.5, 0.7]", "[3, 1]", "[1e400, 2]", "[0, 100000000000000000000]",
              '"x"', "[1, 2, 3]", "[-9.2e18, 9.2e18]", "[nan, 1]"],
    "values": ["[1, 2]", '["a", 2]', "[1e400, 2]", "[100000000000000000000000, 2]", '"x"',
               "[[1], 2]", "[1, 2, 3]", "[]", '["nan", "-inf"]', "[true, 2]"],
    "type": ['"real[2]"', '"int[2]"', '"bool[2]"', "3", '"string[2]"', '"real[-1]"',
             '"real[2"', '"real[100000000000]"', '"real[99999999999999999999]"',
             '"real[' + ",".join(["1"] * 70) + ']"', '"real[0, 100000000000000000000000]"'],
    "generator": ['"uniform"', '"special"', '"bool"', '"gauss"', "3"],
}
TABLE_ENTRY_LINES = ('attributes = 3', 'generics = 3', 'generics = ["real", 3]', 'inputs = 3',
                     'domain = "abc"', 'domain = [1e400, 1]', 'layouts = ["x"]', 'layouts = 3',
                     'profile = "zzz"', 'error = 3', 'error = { code = 3 }', 'class = "x"',
                     'class = 3', 'reason = 3', 'model = 3', 'attributes = { x = 1e400 }')
TABLE_TOP = ('case = 3', 'family = [3]', 'classes = 3', 'module = 3', 'module = "../x"',
             'module = "nosuch"', 'extra = 1')
TABLE_FAMILIES = ('ops = "neg"', 'ops = ["neg", 3]', 'dtypes = 3', 'dtypes = { x = "quux" }',
                  'attributes = 3', 'inputs = [3]', 'inputs = 3', 'kind = "nosuch"',
                  'layouts = true')


def gen_table(rng: random.Random, material: Material) -> Case:
    """A case table with odd values (wrong types, beyond the limits, out of int64's range),
    built by `golden build`: every problem a positioned table error (E1100), never a
    traceback."""
    spec = {"type": rng.choice(TABLE_ODD_VALUES["type"])}
    for key in rng.sample(["seed", "range", "values", "generator"], rng.randint(0, 2)):
        spec[key] = rng.choice(TABLE_ODD_VALUES[key])
    value = ", ".join(f"{key} = {text}" for key, text in spec.items())
    case = ['op = "neg"', 'name = "c"', f"inputs = {{ x = {{ {value} }} }}"]
    if rng.random() < 0.3:
        case.append(rng.choice(TABLE_ENTRY_LINES))
    lines = ['module = "math"']
    if rng.random() < 0.15:
        lines.append(rng.choice(TABLE_TOP))
    lines += ["[classes]", 'neg = "exact"', 'add = "arithmetic"']
    if rng.random() < 0.2:
        lines += ["[[family]]", 'ops = ["add"]', 'kind = "elementwise"', 'inputs = ["x", "y"]',
                  rng.choice(TABLE_FAMILIES)]
    lines += ["[[case]]", *case]
    argv = ["golden", "build", "t.toml", "-o", "out"]
    if rng.random() < 0.1:
        argv += ["-k", rng.choice(["neg", "(", "[", "*", "c$"])]
    files = {"t.toml": ("\n".join(lines) + "\n").encode()}
    note = "; ".join(line for line in lines if "=" in line and line not in (
        'module = "math"', 'neg = "exact"', 'add = "arithmetic"', 'op = "neg"', 'name = "c"'))
    return Case(0, "table", argv, files, "program", ("t.toml",), note=note[:200])


def base_report(suite: str = "golden") -> dict[str, Any]:
    """A small `check --json` report made by the harness itself (fixed content)."""
    from refinterp.harness.report import report_json
    from refinterp.harness.suite_run import Result

    results = [Result("math.add/broadcast", "pass", seconds=0.01, operator="math.add",
                      module="math", attributes={"x": 1}),
               Result("nn.relu/basic", "fail", "mismatch", "z differs", 0.02, "run", "nn.relu",
                      "nn"),
               Result("models/running_mean", "skip", None, "", 0.0, "", None, "models")]
    return report_json(results, "refinterp:scalar", suite)


def gen_merge(rng: random.Random, material: Material) -> Case:
    """check --merge with damaged reports."""
    report = base_report()
    files = {"good.json": json.dumps(report).encode()}
    files["r.json"], note = damage_json(rng, report)
    reports = rng.choice([["r.json"], ["good.json", "r.json"], ["r.json", "good.json"]])
    argv = ["check", "--merge", *reports, *rng.choice([[], ["--json", "out.json"],
                                                       ["--junit", "out.xml"],
                                                       ["--allow-xpass"]])]
    return Case(0, "merge", argv, files, "file", ("r.json",), note=note)


GENERATORS: dict[str, Callable[[random.Random, Material], Case]] = {
    "program": gen_program, "expr": gen_expr, "options": gen_options, "data": gen_data,
    "golden": gen_golden, "table": gen_table, "merge": gen_merge}


def make_case(seed: int, index: int, material: Material,
              families: dict[str, int] = FAMILIES) -> Case:
    """Case `index` of campaign `seed`: a function of the two numbers only."""
    rng = random.Random(f"refinterp-fuzz:{seed}:{index}")
    family = weighted(rng, families.items())
    case = GENERATORS[family](rng, material)
    case.index = index
    return case


# ============================================================================ the child


ESCAPED = "FUZZ: an exception escaped refinterp.cli.main"
INTERNAL = "FUZZ: internal error (exit 3 without --debug)"


def run_child(argv: list[str], timeout: float, memory: int, oracle: str | None) -> int:
    """Run one case in this (child) process, in the current folder: stdout and stderr to
    stdout.txt and stderr.txt, the stack dumped to stderr at the time limit, the address
    space limited to `memory` bytes more than now. Returns the exit status.

    `--debug` makes main re-raise internal errors; they are printed with their traceback and
    exit 3, as main would. An exception main would not have caught is marked as escaped."""
    import faulthandler
    import traceback

    out = os.open("stdout.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open("stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.dup2(null, 0)
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stdin = open(0, closefd=False)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from refinterp.cli import main

    _limit_memory(memory)
    faulthandler.enable(file=sys.stderr)
    faulthandler.dump_traceback_later(timeout, exit=False, file=sys.stderr)
    try:
        status = main(["--debug", *argv])
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    except BaseException as exc:  # noqa: BLE001 - every escape is a finding
        sys.stdout.flush()
        sys.stderr.write((INTERNAL if _inside_command(exc) else ESCAPED) + "\n")
        traceback.print_exception(exc, file=sys.stderr)
        status = 3
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed stream (BrokenPipe handling)
            pass
    if status == 0 and oracle == "fmt":
        try:
            _fmt_oracle(argv)
        except Exception as exc:  # noqa: BLE001 - the oracle's own failure is a complaint
            Path("oracle.txt").write_text(f"oracle failed: {type(exc).__name__}: {exc}\n")
    faulthandler.cancel_dump_traceback_later()
    return status if isinstance(status, int) else 3


def _limit_memory(memory: int) -> None:
    if memory <= 0:
        return
    try:
        import resource

        with open("/proc/self/status", encoding="ascii") as status:
            size = next(int(line.split()[1]) * 1024 for line in status
                        if line.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (size + memory, size + memory))
    except (ImportError, OSError, StopIteration, ValueError):
        pass


def _inside_command(exc: BaseException) -> bool:
    """Whether main's `except Exception` would have caught it (raised inside the command)."""
    if not isinstance(exc, Exception):
        return False
    tb, names = exc.__traceback__, []
    while tb is not None:
        names.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return "main" in names and names.index("main") + 1 < len(names) and \
        names[names.index("main") + 1].startswith("cmd_")


def _fmt_oracle(argv: list[str]) -> None:
    """After `fmt FILE` exited 0: every comment must survive, and the output must be canonical
    (fmt of it prints it unchanged). Complaints go to oracle.txt."""
    from refinterp.api import format_file
    from refinterp.core.files import read_source

    target = Path(argv[-1])
    target = target / "main.sknd" if target.is_dir() else target
    original = read_source(target).text
    printed = Path("stdout.txt").read_text(encoding="utf-8", errors="replace")
    complaints = []
    lost = [c for c in comments(original) if c not in printed]
    if lost:
        complaints.append(f"comment lost: {lost[0]!r} ({len(lost)} of "
                          f"{len(comments(original))} lost)")
    Path("formatted.sknd").write_text(printed, encoding="utf-8")
    try:
        again = format_file("formatted.sknd")[0]
        if again != printed and again.rstrip("\n") != printed.rstrip("\n"):
            complaints.append("not idempotent: fmt changes its own output")
    except Exception as exc:  # noqa: BLE001 - a Diagnostic or a crash, both findings
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        complaints.append(f"output does not format again: {type(exc).__name__}: {first}")
    if complaints:
        Path("oracle.txt").write_text("\n".join(complaints) + "\n", encoding="utf-8")


# ============================================================================ running


class Child:
    """A running case: a forked child or a subprocess, in its own process group."""

    def __init__(self, case: Case, folder: Path, timeout: float, memory: int,
                 fresh_interpreter: bool) -> None:
        self.case, self.folder, self.started = case, folder, time.monotonic()
        self.deadline = self.started + timeout + GRACE
        self.killed = False
        if fresh_interpreter:
            self.process = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "--child", str(timeout),
                 str(memory), case.oracle or "-", "--", *case.argv],
                cwd=folder, start_new_session=True, stdin=subprocess.DEVNULL)
            self.pid = self.process.pid
            return
        self.process = None
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never return into the caller
            status = 99
            try:
                os.setpgid(0, 0)
                os.chdir(folder)
                status = run_child(case.argv, timeout, memory, case.oracle)
            except BaseException:  # noqa: BLE001
                pass
            os._exit(status & 0xFF)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass  # the child did it first, or already ended
        self.pid = pid

    def poll(self) -> int | None:
        """The exit status (negative: the signal that ended it), or None while running."""
        if self.process is not None:
            return self.process.poll()
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        return None if pid == 0 else os.waitstatus_to_exitcode(status)

    def kill(self) -> int:
        self.killed = True
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass
        if self.process is not None:
            return self.process.wait()
        return os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])


def warm_up() -> None:
    """Import what the commands import and load the standard library once, so that forked
    children start warm."""
    import numpy  # noqa: F401

    import refinterp.api as api
    import refinterp.cli  # noqa: F401
    import refinterp.golden  # noqa: F401
    import refinterp.harness  # noqa: F401

    for module in api.stdlib_modules():
        api.load_module(module)


def write_case(case: Case, folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, data in case.all_files().items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def run_cases(cases: list[Case], work: Path, *, jobs: int = 1, timeout: float = 10.0,
              memory: int = 3 << 30, fresh_interpreter: bool = False, keep: int = 3,
              on_outcome: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Run every case (at most `jobs` at once) and classify it. The folders of the `keep`
    lowest-numbered cases of each class and of each failure signature are kept under `work`;
    the others are deleted."""
    fresh_interpreter = fresh_interpreter or not hasattr(os, "fork")
    pending = list(reversed(cases))
    running: list[Child] = []
    outcomes: list[Outcome] = []
    keeper = _Keeper(keep)
    while pending or running:
        while pending and len(running) < jobs:
            case = pending.pop()
            folder = work / f"{case.index:06d}"
            write_case(case, folder)
            running.append(Child(case, folder, timeout, memory, fresh_interpreter))
        time.sleep(0.002)
        for child in list(running):
            status = child.poll()
            if status is None and time.monotonic() > child.deadline:
                status = child.kill()
            if status is None:
                continue
            running.remove(child)
            outcome = judge(child.case, child.folder, status, child.killed,
                            time.monotonic() - child.started)
            outcomes.append(outcome)
            keeper.offer(outcome)
            if on_outcome is not None:
                on_outcome(outcome)
    outcomes.sort(key=lambda o: o.case.index)
    return outcomes


class _Keeper:
    """Keeps the folders of the lowest-numbered cases per class and per failure signature
    (deterministic whatever the order cases finish in); deletes the rest."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.heaps: dict[str, list[tuple[int, str]]] = defaultdict(list)
        self.owners: Counter = Counter()

    def offer(self, outcome: Outcome) -> None:
        keys = [outcome.klass] + ([f"{outcome.klass}:{outcome.signature}"]
                                  if outcome.klass in FAILING else [])
        entry = (-outcome.case.index, str(outcome.folder))
        for key in keys:  # first claim the folder everywhere, then drop the surplus
            heapq.heappush(self.heaps[key], entry)
            self.owners[entry[1]] += 1
        for key in keys:
            if len(self.heaps[key]) > self.keep:
                self._release(heapq.heappop(self.heaps[key])[1])

    def _release(self, folder: str) -> None:
        self.owners[folder] -= 1
        if self.owners[folder] <= 0:
            shutil.rmtree(folder, ignore_errors=True)


# ============================================================================ judging


POSITION_RE = re.compile(r"^\S[^\n]*?:\d+:\d+: error: ", re.MULTILINE)
ERROR_LINE_RE = re.compile(r"^(?:(?P<place>\S[^\n]*?): )?error: (?P<message>.*?)"
                           r"(?: \[(?P<code>[EWN]\d{4})\])?$", re.MULTILINE)
FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in | in )(?P<func>\S+)',
                      re.MULTILINE)


def judge(case: Case, folder: Path, status: int, killed: bool, seconds: float) -> Outcome:
    """Classify a finished case from its exit status and its output files."""
    stdout = _read(folder / "stdout.txt")
    stderr = _read(folder / "stderr.txt")
    outcome = Outcome(case, "ok", status=status, seconds=seconds, folder=folder)
    if killed:
        outcome.klass, outcome.signature = "hang", _hang_signature(stderr)
        outcome.detail = f"over the time limit ({seconds:.1f} s)"
    elif status < 0:
        name = signal.Signals(-status).name if -status in signal.Signals._value2member_map_ \
            else str(-status)
        outcome.klass, outcome.signature = "internal", f"killed by {name}"
        frame = _innermost_frame(stderr)
        outcome.signature += f" @ {frame}" if frame else ""
        outcome.detail = _first_lines(stderr)
    elif status == 0:
        oracle = _read(folder / "oracle.txt")
        if oracle:
            outcome.klass = "fmt-unsound"
            outcome.signature = re.sub(r"'.*'|\(.*\)", "…", oracle.splitlines()[0])
            outcome.detail = oracle.strip()
    elif status == 1:
        outcome.klass = "diagnostic"
        complaint = _unpositioned(case, stdout, stderr)
        if complaint:
            outcome.klass, outcome.signature = "unpositioned", complaint
        outcome.detail = _first_lines(stderr or stdout)
    elif status == 2:
        outcome.klass, outcome.detail = "usage", _first_lines(stderr)
    elif status == 4 and case.argv[0] == "check":  # no case ran: a documented outcome
        outcome.detail = _first_lines(stderr)
    else:
        outcome.klass = "internal"
        outcome.signature = _internal_signature(stderr, status)
        outcome.detail = _first_lines(stderr[stderr.rfind("Traceback"):] if "Traceback" in
                                      stderr else stderr, 1) + " … " + \
            _exception_line(stderr)
    return outcome


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _first_lines(text: str, count: int = 2) -> str:
    return "\n".join(line[:160] for line in text.strip().splitlines()[:count])


def _relative(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return Path(path).name


def _exception_line(stderr: str) -> str:
    """The `Type: message` line that ends the last traceback."""
    lines = [line for line in stderr.rstrip().splitlines() if line and not line[0].isspace()]
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b", line) or \
                re.match(r"^[A-Za-z_][\w.]*: ", line):
            return line[:200]
    return lines[-1][:200] if lines else ""


def _normalise(message: str) -> str:
    message = re.sub(r"'[^']*'?|\"[^\"]*\"?", "'…'", message)
    message = re.sub(r"\d+(\.\d+)?", "N", message)
    return message[:90]


def _refinterp_frames(stderr: str) -> list[re.Match]:
    return [m for m in FRAME_RE.finditer(stderr) if "/refinterp/" in m["file"]
            and "/tools/" not in m["file"]]


def _innermost_frame(stderr: str) -> str:
    frames = _refinterp_frames(stderr)
    if not frames:
        return ""
    m = frames[-1]
    return f"{_relative(m['file'])}:{m['func']}"


def _internal_signature(stderr: str, status: int) -> str:
    """Exception type, normalised message and the refinterp function that raised it (for a
    recursion: the function that recursed)."""
    if ESCAPED not in stderr and INTERNAL not in stderr:
        return f"exit {status}: {_normalise(_first_lines(stderr, 1))}"
    tail = stderr[stderr.rfind("Traceback"):]
    exception = _exception_line(tail)
    kind, _, message = exception.partition(":")
    place = _innermost_frame(tail)
    if kind.endswith("RecursionError"):  # the function that recursed: the commonest frame
        frames = Counter(f"{_relative(m['file'])}:{m['func']}" for m in _refinterp_frames(tail))
        if frames and frames.most_common(1)[0][1] > 1:  # else the recursion is in C (json)
            place = frames.most_common(1)[0][0]
    escaped = " (escaped main)" if ESCAPED in stderr else ""
    return f"{kind}{escaped}: {_normalise(message.strip())} @ {place or '?'}"


def _hang_signature(stderr: str) -> str:
    """Where the child was at the time limit: the innermost refinterp frame of the dump
    (faulthandler prints the most recent call first)."""
    dump = stderr[stderr.rfind("Timeout ("):] if "Timeout (" in stderr else stderr
    frames = list(FRAME_RE.finditer(dump))
    for m in frames:
        if "/refinterp/" in m["file"] and "/tools/" not in m["file"]:
            return f"in {_relative(m['file'])}:{m['func']}"
    return f"in {Path(frames[0]['file']).name}:{frames[0]['func']}" if frames else "no dump"


def _errors(case: Case, stdout: str, stderr: str) -> list[tuple[str, bool, str]]:
    """(code, positioned, text) of each error reported."""
    if "--json" in case.argv and case.argv[0] != "check":
        try:
            data = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else {}
        except ValueError:
            return [("", False, "stdout is no JSON")]
        errors = [data["error"]] if isinstance(data, dict) and "error" in data else []
        if isinstance(data, dict) and isinstance(data.get("files"), list):
            errors += [f["error"] for f in data["files"] if isinstance(f, dict) and "error" in f]
        return [(e.get("code", ""), bool(e.get("location")), json.dumps(e)) for e in errors]
    found = []
    lines = stderr.splitlines()
    for number, line in enumerate(lines):
        m = ERROR_LINE_RE.match(line)
        if m:
            context = "\n".join(lines[number:number + 8])
            found.append((m["code"] or "", bool(POSITION_RE.match(line)), context))
    return found


FILE_CODES = ("E0800", "E0801", "E0802", "E1100", "E1101", "E1102")
# about the command line, not a place in the program: --op names no operator, option values
COMMAND_LINE_CODES = ("E0203", "E0900", "E0901")
FILE_NAME_RE = re.compile(r"[\w.-]+\.(?:json|npz|npy|sknd|dat|toml|xml)\b")


def _unpositioned(case: Case, stdout: str, stderr: str) -> str:
    """Why an exit-1 diagnostic misses its position or its file's name ('' if it does not)."""
    if case.expects == "none":
        return ""
    if case.argv[:2] == ["fmt", "--check"] and "would reformat" in stderr:
        return ""
    for code, positioned, text in _errors(case, stdout, stderr):
        names_file = any(s in text or Path(s).name in text for s in case.subjects) or \
            FILE_NAME_RE.search(text) is not None
        if code in COMMAND_LINE_CODES:
            continue
        if case.expects == "file" or code in FILE_CODES:
            if code in FILE_CODES and not names_file and not positioned:
                return f"{code} does not name the file"
            continue
        if not positioned:
            return f"{code or 'error'} without file:line:col"
    return ""


# ============================================================================ the report


def summarise(outcomes: list[Outcome], out: Any = sys.stdout,
              examples: int = 3) -> tuple[int, int, int]:
    """Print counts by class and family, examples with their reproductions, and every distinct
    failure signature; returns (internal errors, hangs, unpositioned)."""
    by_class = Counter(o.klass for o in outcomes)
    families = Counter(o.case.family for o in outcomes)
    print("cases by family: " + ", ".join(f"{f} {families[f]}" for f in FAMILIES
                                            if families[f]), file=out)
    print("outcomes:", file=out)
    for klass in CLASSES:
        print(f"  {klass:<13} {by_class[klass]:>6}", file=out)
    for klass in ("ok", "diagnostic", "usage"):
        shown = [o for o in outcomes if o.klass == klass][:examples]
        if shown:
            print(f"examples of {klass}:", file=out)
            for outcome in shown:
                _print_example(outcome, out)
    for klass in FAILING:
        groups: dict[str, list[Outcome]] = defaultdict(list)
        for outcome in outcomes:
            if outcome.klass == klass:
                groups[outcome.signature].append(outcome)
        if not groups:
            continue
        print(f"distinct {klass} signatures ({len(groups)}):", file=out)
        for signature, members in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0])):
            families_of = Counter(o.case.family for o in members)
            print(f"  [{len(members)}×] {signature}  "
                  f"({', '.join(f'{f} {n}' for f, n in families_of.most_common())})", file=out)
            for outcome in members[:2]:
                _print_example(outcome, out, indent="      ")
    finished = sorted((o for o in outcomes if o.klass != "hang"), key=lambda o: -o.seconds)
    print("slowest cases that finished: " + ", ".join(
        f"#{o.case.index} {o.seconds:.1f} s" for o in finished[:5]), file=out)
    return by_class["internal"], by_class["hang"], by_class["unpositioned"]


def _print_example(outcome: Outcome, out: Any, indent: str = "  ") -> None:
    case = outcome.case
    folder = outcome.folder if outcome.folder is not None and outcome.folder.exists() else None
    print(f"{indent}#{case.index} {case.family} ({case.note[:80]}), exit {outcome.status}, "
          f"{outcome.seconds:.2f} s", file=out)
    print(f"{indent}  $ {case.command(folder)[:600]}", file=out)
    for line in outcome.detail.splitlines()[:2]:
        print(f"{indent}  | {line[:150]}", file=out)


# ============================================================================ command line


def prepare_work(path: Path) -> Path:
    """The folder for case folders: created, or emptied if an earlier run made it."""
    if path.exists() and any(path.iterdir()):
        if not (path / WORK_MARK).exists():
            raise SystemExit(f"fuzz: {path} is not empty and no earlier fuzz folder; "
                             f"choose another --keep")
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
    (path / WORK_MARK).write_text("cases of tools/fuzz.py; deleted by its next run\n")
    return path


def campaign(cases: int, seed: int = 0, *, jobs: int = 1, timeout: float = 10.0,
             memory: int = 3 << 30, work: Path | None = None, fresh_interpreter: bool = False,
             families: dict[str, int] | None = None, only: list[int] | None = None,
             progress: bool = False) -> list[Outcome]:
    """Generate and run a campaign (the entry point for tests): outcomes by case index."""
    material = load_material()
    families = families or FAMILIES
    work = prepare_work(work or Path(tempfile.gettempdir()) / "refinterp-fuzz")
    indices = only if only else list(range(cases))
    generated = [make_case(seed, i, material, families) for i in indices]
    if not fresh_interpreter:
        warm_up()
    done = [0]
    started = time.monotonic()

    def report(outcome: Outcome) -> None:
        done[0] += 1
        if progress and (done[0] % 100 == 0 or done[0] == len(generated)):
            sys.stderr.write(f"fuzz: {done[0]}/{len(generated)} cases "
                             f"({time.monotonic() - started:.0f} s)\n")
    return run_cases(generated, work, jobs=jobs, timeout=timeout, memory=memory,
                     fresh_interpreter=fresh_interpreter, on_outcome=report)


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["--child"]:  # a case in a fresh interpreter (--subprocess)
        timeout, memory, oracle = float(arguments[1]), int(arguments[2]), arguments[3]
        return run_child(arguments[5:], timeout, memory, None if oracle == "-" else oracle)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200, help="how many cases (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="the campaign (default 0)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="cases at once (default 1)")
    parser.add_argument("--timeout", type=float, default=10.0,
                        help="seconds per case before it counts as a hang (default 10)")
    parser.add_argument("--memory", type=float, default=3.0,
                        help="GiB of address space a case may add (default 3; 0: no limit)")
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES),
                        help="only these families (repeatable)")
    parser.add_argument("--keep", type=Path, default=Path(tempfile.gettempdir()) /
                        "refinterp-fuzz", help="where the example case folders are kept")
    parser.add_argument("--only", type=int, action="append", metavar="INDEX",
                        help="run only case INDEX (repeatable) and print its output in full")
    parser.add_argument("--subprocess", action="store_true",
                        help="run each case in a fresh interpreter instead of a fork")
    parser.add_argument("--examples", type=int, default=3, help="examples per class")
    args = parser.parse_args(arguments)
    if args.jobs < 1 or args.cases < 0 or args.timeout <= 0:
        parser.error("-j must be at least 1, --cases not negative, --timeout positive")
    families = {f: FAMILIES[f] for f in args.family} if args.family else None
    print(f"refinterp fuzz: {len(args.only) if args.only else args.cases} cases, seed "
          f"{args.seed}, -j {args.jobs}, time limit {args.timeout:g} s, memory limit "
          f"{args.memory:g} GiB, {'subprocess' if args.subprocess else 'fork'}; case folders "
          f"in {args.keep}", flush=True)
    started = time.monotonic()
    outcomes = campaign(args.cases, args.seed, jobs=args.jobs, timeout=args.timeout,
                        memory=int(args.memory * (1 << 30)), work=args.keep,
                        fresh_interpreter=args.subprocess, families=families, only=args.only,
                        progress=True)
    if args.only:
        for outcome in outcomes:
            _print_full(outcome)
    internal, hangs, unpositioned = summarise(outcomes, examples=args.examples)
    print(f"time: {time.monotonic() - started:.0f} s")
    print(f"internal errors: {internal}, hangs: {hangs}, unpositioned file diagnostics: "
          f"{unpositioned} ({len(outcomes)} cases)")
    return 1 if internal + hangs else 0


def _print_full(outcome: Outcome) -> None:
    case = outcome.case
    print(f"=== case {case.index}: {case.family}, {case.note}")
    print(f"$ {case.command(outcome.folder)}")
    print(f"class {outcome.klass} {outcome.signature}, exit {outcome.status}, "
          f"{outcome.seconds:.2f} s")
    if outcome.folder is not None:
        for name in ("stdout.txt", "stderr.txt", "oracle.txt"):
            text = _read(outcome.folder / name).rstrip()
            if len(text) > 4000:  # a traceback's end says the most
                text = f"{text[:1000]}\n[... {len(text) - 4000} characters ...]\n{text[-3000:]}"
            if text:
                print(f"--- {name}\n{text}")


if __name__ == "__main__":
    sys.exit(main())
