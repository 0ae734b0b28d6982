"""The disk cache of parsed library modules (core.cache.DiskCache, syntax.serial,
language.modules; docs/performance.md "Start-up", docs/security.md "The parse cache"): a hit
gives the very tree a parse gives, spans and diagnostics included; anything doubtful — damaged,
foreign, of the wrong shape, not the tree of its text, in a folder others can write — is
ignored, the module parsed again and the entry replaced; no entry can run code."""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import io
import json
import os
import pickle
import shutil
import struct
import sys
import threading
from pathlib import Path

import pytest

from refinterp.core.files import read_source
from refinterp import api
from refinterp.cli import main
from refinterp.core import cache as cache_module
from refinterp.core.source import NO_SPAN, SourceFile, Span
from refinterp.language import modules
from refinterp.syntax import ast, serial
from refinterp.syntax.printer import format_module
from testsupport.paths import REPO_ROOT

ROOT = REPO_ROOT

LIBRARY = """operator twice {
    @input { x: real[s..]; }
    @output { y: real[s..]; }
    @lower { y[i..] = 2.0 * x[i..], i < s; }
}

operator broken {
    @input { x: real[s..]; }
    @output { y: real[s..]; }
    @compose { y = twice(x, x); }
}
"""

GRAPH = """import lib;
graph G {
    @input { x: real[2]; }
    @output { y: real[2]; }
    @compose { y = lib.%s(x); }
}
"""


@pytest.fixture
def stdlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stdlib folder holding `lib.sknd` and the bundled modules, with the cache in tmp_path/cache
    and no parse kept in the process."""
    monkeypatch.setenv(cache_module.CACHE_DIR_VARIABLE, str(tmp_path / "cache"))
    monkeypatch.delenv(cache_module.NO_CACHE_VARIABLE, raising=False)
    folder = tmp_path / "stdlib"
    shutil.copytree(modules.STDLIB_DIR, folder)
    (folder / "lib.sknd").write_text(LIBRARY)
    modules._PARSED.clear()
    yield folder
    modules._PARSED.clear()


def entries(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache").rglob("*.entry"))


def entry_of(tmp_path: Path, text: str) -> Path:
    """Where the entry of a module text lives (docs/performance.md "Start-up")."""
    folder = tmp_path / "cache" / f"parsed-{modules.parse_disk_cache().fingerprint[:20]}"
    return folder / (hashlib.sha256(text.encode()).hexdigest() + ".entry")


def entry_file(text: str, payload: bytes, parts: list[bytes] = ()) -> bytes:
    """An entry file as the format describes it, written from scratch (not by DiskCache)."""
    lines = [b"refinterp-cache 3\n", modules.parse_disk_cache().fingerprint.encode() + b"\n",
             hashlib.sha256(text.encode()).hexdigest().encode() + b"\n", b"%d\n" % len(parts)]
    lines += [hashlib.sha256(p).hexdigest().encode() + b" %d\n" % len(p)
              for p in (payload, *parts)]
    return b"".join([*lines, payload, *parts])


def load(folder: Path, module: str) -> modules.LoadedModule:
    """`module` of `folder` as an import loads it, parsed afresh in this process."""
    modules._PARSED.clear()
    graph = folder.parent / "graph.sknd"
    graph.write_text(f"import {module};\n")
    return modules.Loader(stdlib=folder).load(graph).main.imports[module]


def count_library_parses(monkeypatch: pytest.MonkeyPatch, folder: Path) -> list[str]:
    """The names of the modules of `folder` parsed from now on (the graph itself is not
    counted)."""
    parse = modules.parse_module
    parsed: list[str] = []

    def counted(source: SourceFile) -> object:
        if Path(source.path).parent == folder:
            parsed.append(Path(source.path).stem)
        return parse(source)

    monkeypatch.setattr(modules, "parse_module", counted)
    return parsed


def forbid_library_parses(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Make parsing a module of `folder` a test failure (the graph itself is parsed)."""
    parse = modules.parse_module

    def checked(source: SourceFile) -> object:
        if Path(source.path).parent == folder:
            pytest.fail(f"{source.path} parsed again")
        return parse(source)

    monkeypatch.setattr(modules, "parse_module", checked)


def spans(tree: object) -> list[tuple[str, int, int, int, int]]:
    """Every span in a tree, in order, with the identity of its source file checked."""
    found: list[tuple[str, int, int, int, int]] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, Span):
            found.append((node.path, node.line, node.col, node.end_line, node.end_col))
        elif dataclasses.is_dataclass(node) and not isinstance(node, SourceFile):
            stack.extend(getattr(node, f.name) for f in reversed(dataclasses.fields(node)))
        elif isinstance(node, (tuple, list)):
            stack.extend(reversed(node))
    return found


def shape(tree: object) -> list[object]:
    """A tree as a flat list (class names, values, tuple lengths), walked without recursion:
    for trees too deep for `==`."""
    found: list[object] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if dataclasses.is_dataclass(node) and not isinstance(node, (Span, SourceFile)):
            found.append(type(node).__name__)
            stack.extend(getattr(node, f.name) for f in reversed(dataclasses.fields(node))
                         if f.name != "span")
        elif isinstance(node, tuple):
            found.append(len(node))
            stack.extend(reversed(node))
        else:
            found.append(node)
    return found


def parsed_without_cache(module: modules.LoadedModule) -> ast.Module:
    from refinterp.syntax.parser import parse_module
    return parse_module(SourceFile(module.source.path, module.source.text)).module


def eval_json(stdlib: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    """`refinterp eval ... --json` under `stdlib`, its JSON output (exit 0 required), with no
    module or program kept in the process from an earlier call."""
    modules._PARSED.clear()
    api._CACHE.clear()
    code = main(["eval", *args, "--stdlib", str(stdlib), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err + captured.out
    return json.loads(captured.out)


def add_outputs(stdlib: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    """math.add of [1, 2] and [10, 0.5]: [11, 2.5], by hand."""
    outputs = eval_json(stdlib, capsys, "--op", "math.add", "--input", "x=[1.0, 2.0]",
                        "--input", "y=[10.0, 0.5]")["outputs"]
    assert outputs == {"z": {"dtype": "real", "shape": [2], "min": 2.5, "max": 11.0,
                             "mean": 6.75}}
    return outputs


# ------------------------------------------------------------------------------- hits


def test_a_hit_gives_the_same_tree_spans_and_source(stdlib: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    first = load(stdlib, "math")
    stored = entries(tmp_path)
    assert len(stored) == 2  # math and the layout it imports
    forbid_library_parses(monkeypatch, stdlib)
    second = load(stdlib, "math")
    assert entries(tmp_path) == stored
    assert second.tree is not first.tree
    assert second.tree == first.tree
    assert format_module(second.tree) == format_module(first.tree)
    assert spans(second.tree) == spans(first.tree)
    # the spans point to the source object the loader read, not to a copy from the cache
    assert second.tree.span.source is second.source
    assert second.tree.definitions[-1].span.source is second.source


def test_a_hit_gives_the_same_diagnostics(stdlib: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    rendered = []
    for name in ("first.sknd", "second.sknd"):  # two files: api.load caches programs by path
        graph = tmp_path / name
        graph.write_text(GRAPH % "broken")
        modules._PARSED.clear()
        assert main(["eval", str(graph), "--random-inputs", "--stdlib", str(stdlib)]) == 1
        rendered.append(capsys.readouterr().err.replace(name, "GRAPH"))
        assert len(entries(tmp_path)) == 1
    assert "lib.sknd:" in rendered[0]
    assert rendered[0] == rendered[1]


def test_a_hit_evaluates_the_same(stdlib: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("first.sknd", "second.sknd"):
        graph = tmp_path / name
        graph.write_text(GRAPH % "twice")
        outputs = eval_json(stdlib, capsys, str(graph), "--input", "x=[1.0, 2.0]")["outputs"]
        assert outputs == {"y": {"dtype": "real", "shape": [2], "min": 2.0, "max": 4.0,
                                 "mean": 3.0}}  # 2 * [1, 2]
    assert len(entries(tmp_path)) == 1


def test_changed_source_is_parsed_again(stdlib: Path, tmp_path: Path) -> None:
    assert [d.name for d in load(stdlib, "lib").tree.definitions] == ["twice", "broken"]
    (stdlib / "lib.sknd").write_text(LIBRARY.replace("broken", "mended"))
    assert [d.name for d in load(stdlib, "lib").tree.definitions] == ["twice", "mended"]
    assert len(entries(tmp_path)) == 2


MODULE_FILES = sorted(glob.glob(str(modules.STDLIB_DIR / "*.sknd"))) + \
    sorted(glob.glob(str(ROOT / "spec_tests" / "corpus" / "*.sknd")))


@pytest.mark.parametrize("path", MODULE_FILES, ids=lambda p: Path(p).name)
def test_every_module_round_trips(path: str, tmp_path: Path) -> None:
    """parse → store → load gives an equal tree, with the same spans, for every bundled
    module and every file of the spec corpus (its definitions' blocks all read from the
    entry: none parsed again)."""
    source = read_source(path)
    tree = modules.parse_module(source).module
    cache = cache_module.DiskCache("parsed", "f" * 64, root=tmp_path)
    cache.store(source.text, *modules._stored_form(tree, source))
    again = SourceFile(path, source.text)
    loaded = modules._from_stored(cache.load(again.text), again)
    assert loaded is not None
    for definition in loaded.definitions:
        pending = definition.__dict__[ast._PENDING]
        definition.blocks  # noqa: B018 - read it
        assert pending.reparsed.module is None, f"{definition.name} parsed again"
    assert loaded == tree
    assert spans(loaded) == spans(tree)
    assert all(s.source is again for s in _all_spans(loaded) if s is not NO_SPAN)


def _all_spans(tree: object) -> list[Span]:
    found: list[Span] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, Span):
            found.append(node)
        elif dataclasses.is_dataclass(node):
            stack.extend(getattr(node, f.name) for f in dataclasses.fields(node))
        elif isinstance(node, tuple):
            stack.extend(node)
    return found


def test_a_deep_tree_is_stored_and_read_without_recursion(stdlib: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """Writing and reading are loops: a tree nested far deeper than the recursion limit is
    kept and read back, under the default limit or a raised one alike."""
    deep = "1" + " + 1" * 3000
    (stdlib / "lib.sknd").write_text(LIBRARY.replace("2.0 * x[i..]", f"x[i..] + real({deep})"))
    fresh = load(stdlib, "lib")
    assert len(entries(tmp_path)) == 1
    forbid_library_parses(monkeypatch, stdlib)
    limit = sys.getrecursionlimit()
    try:
        for recursion_limit in (1000, 100_000):
            sys.setrecursionlimit(recursion_limit)
            cached = load(stdlib, "lib")
            assert shape(cached.tree) == shape(fresh.tree)
            assert spans(cached.tree) == spans(fresh.tree)
    finally:
        sys.setrecursionlimit(limit)


# ------------------------------------------------------------------------------- no code runs


def _unicode(text: str) -> bytes:
    """pickle's BINUNICODE of `text`."""
    data = text.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def eval_pickle(marker: Path) -> bytes:
    """A pickle naming no module but `refinterp.syntax.ast` — all the old cache's unpickler
    checked — that still calls `eval`: `ast.__builtins__.get('eval')(code)`, the code
    creating `marker`."""
    code = f"__import__('pathlib').Path({str(marker)!r}).write_text('ran')"
    return (b"\x80\x04" + _unicode("refinterp.syntax.ast") + _unicode("__builtins__.get") +
            b"\x93" + _unicode("eval") + b"\x85R" + _unicode(code) + b"\x85R.")


class _OldUnpickler(pickle.Unpickler):
    """The check the old cache made: classes of these modules only."""

    def find_class(self, module: str, name: str) -> object:  # noqa: D102 - pickle's hook
        if module not in {"refinterp.syntax.ast", "refinterp.syntax.parser",
                          "refinterp.core.source"}:
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed")
        return super().find_class(module, name)


def test_the_old_eval_exploit_runs_no_code(stdlib: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The pickle that ran code through the old cache's checks, written where the old cache
    read it and as a well-formed entry of the new one (checksums right), runs nothing: the
    answer is right, no marker is made, and the entry is replaced by a good one."""
    proof = tmp_path / "proof"
    _OldUnpickler(io.BytesIO(eval_pickle(proof))).load()
    assert proof.read_text() == "ran"  # it was an exploit of the old format

    marker = tmp_path / "marker"
    text = (stdlib / "math.sknd").read_text()
    entry = entry_of(tmp_path, text)
    entry.parent.mkdir(mode=0o700, parents=True)
    old_header = b"refinterp-cache\n" + modules.parse_disk_cache().fingerprint.encode() + \
        b"\n" + entry.stem.encode() + b"\n"
    entry.with_suffix(".pickle").write_bytes(old_header + eval_pickle(marker))
    entry.write_bytes(entry_file(text, eval_pickle(marker)))
    parsed = count_library_parses(monkeypatch, stdlib)
    add_outputs(stdlib, capsys)
    assert sorted(parsed) == ["layout", "math"]
    add_outputs(stdlib, capsys)  # the second run reads the entries the first one wrote
    assert sorted(parsed) == ["layout", "math"]
    assert not marker.exists()
    source = SourceFile(str(stdlib / "math.sknd"), text)
    assert modules._from_stored(modules.parse_disk_cache().load(text), source) is not None


@pytest.mark.parametrize("program", [
    ["=__import__('os').system('touch MARKER')", "eval", 1, 1, 1, 1],
    ["=os", "__builtins__", 1, 1, 1, 1],
    ["=x", "=MARKER", "SourceFile", 1, 1, 1, 1],
    ["Node", 1, 1, 1, 1],
    ["=exec", "=MARKER", "(", 2],
], ids=["eval", "builtins", "SourceFile", "Node", "strings"])
def test_an_entry_naming_anything_else_runs_no_code(stdlib: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    program: list) -> None:
    """Plain data naming a builtin or any class off the allow-list, checksums right, is no
    entry: nothing is looked up or called, and the module is parsed again."""
    marker = tmp_path / "MARKER"
    payload = json.dumps(program).replace("MARKER", str(marker)).encode()
    text = (stdlib / "math.sknd").read_text()
    entry = entry_of(tmp_path, text)
    entry.parent.mkdir(mode=0o700, parents=True)
    entry.write_bytes(entry_file(text, payload, [payload] * 71))
    add_outputs(stdlib, capsys)
    assert not marker.exists()
    assert payload not in entry.read_bytes()  # replaced


# ------------------------------------------------------------------------------- doubtful entries


def damaged(data: bytes, damage: str) -> bytes:
    """An entry file `data` (of lib.sknd) damaged so."""
    header_end = len(data) - sum(int(line.split()[1]) for line in data.split(b"\n")[4:7])
    header, body = data[:header_end], data[header_end:]
    if damage == "garbage":
        return b"\x00not a cache entry"
    if damage == "empty":
        return b""
    if damage == "truncated":
        return data[: len(data) // 2]
    if damage == "one byte more":
        return data + b" "
    if damage == "flipped payload byte":
        return header + bytes([body[0] ^ 1]) + body[1:]
    if damage == "foreign version":
        return data.replace(modules.parse_disk_cache().fingerprint.encode(), b"0" * 64)
    if damage == "foreign key":
        return data.replace(hashlib.sha256(LIBRARY.encode()).hexdigest().encode(), b"f" * 64)
    if damage == "huge count":
        lines = data.split(b"\n")
        return b"\n".join([*lines[:3], b"99999999999", *lines[4:]])
    if damage == "old format":
        return b"refinterp-cache\n" + data.split(b"\n", 1)[1]
    raise AssertionError(damage)


@pytest.mark.parametrize("damage", [
    "garbage", "empty", "truncated", "one byte more", "flipped payload byte",
    "foreign version", "foreign key", "huge count", "old format"])
def test_doubtful_entries_are_ignored_and_replaced(stdlib: Path, tmp_path: Path,
                                                   damage: str) -> None:
    fresh = load(stdlib, "lib")
    [entry] = entries(tmp_path)
    data = entry.read_bytes()
    entry.write_bytes(damaged(data, damage))
    again = load(stdlib, "lib")
    assert again.tree == fresh.tree and spans(again.tree) == spans(fresh.tree)
    assert entry.read_bytes() == data  # parsed again, and the entry rewritten


def test_entries_that_are_no_regular_files_are_ignored(stdlib: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A FIFO is not opened for a blocking read (it would hang), a link is not followed, a
    file above the size limit is not read; each is replaced by a regular entry."""
    fresh = load(stdlib, "lib")
    [entry] = entries(tmp_path)
    data = entry.read_bytes()
    parsed = count_library_parses(monkeypatch, stdlib)
    entry.unlink()
    os.mkfifo(entry)
    assert load(stdlib, "lib").tree == fresh.tree and parsed == ["lib"]
    assert entry.is_file() and entry.read_bytes() == data
    elsewhere = tmp_path / "elsewhere"
    entry.rename(elsewhere)
    entry.symlink_to(elsewhere)
    assert load(stdlib, "lib").tree == fresh.tree and parsed == ["lib", "lib"]
    assert not entry.is_symlink() and entry.read_bytes() == data
    monkeypatch.setattr(cache_module, "MAX_ENTRY_BYTES", len(data) - 1)
    assert load(stdlib, "lib").tree == fresh.tree and parsed == ["lib", "lib", "lib"]
    monkeypatch.setattr(cache_module, "MAX_ENTRY_BYTES", len(data))
    assert load(stdlib, "lib").tree == fresh.tree and parsed == ["lib", "lib", "lib"]


def test_an_entry_of_another_module_is_not_believed(stdlib: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A well-formed entry with its checksums right but holding layout.sknd's tree under
    math.sknd's key is ignored (its definitions are not where math.sknd has them) and
    replaced; every run gives the right answer."""
    add_outputs(stdlib, capsys)
    math_text, layout_text = ((stdlib / f"{m}.sknd").read_text() for m in ("math", "layout"))
    math_entry, layout_entry = entry_of(tmp_path, math_text), entry_of(tmp_path, layout_text)
    good = math_entry.read_bytes()
    layout_data = layout_entry.read_bytes()
    layout_header = layout_data.split(b"\n", 3)[:3]
    math_entry.write_bytes(layout_data.replace(layout_header[2], math_entry.stem.encode(), 1))
    cache = modules.parse_disk_cache()
    assert cache.load(math_text) is not None  # well-formed: only its contents are wrong
    add_outputs(stdlib, capsys)
    assert math_entry.read_bytes() == good
    add_outputs(stdlib, capsys)


def test_a_self_import_is_not_believed(stdlib: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A well-formed entry of layout.sknd that adds `import layout` (once: every later run
    failed with "import cycle: layout.sknd -> layout.sknd") is ignored and replaced."""
    add_outputs(stdlib, capsys)
    text = (stdlib / "layout.sknd").read_text()
    source = SourceFile(str(stdlib / "layout.sknd"), text)
    tree = modules.parse_module(source).module
    index, parts = modules._stored_form(tree, source)
    span, imports, definitions = serial.loads(index, modules._INDEX, source)
    first = definitions[0][0]
    for anchor in (first, Span(source, 1, 1, 1, 7)):  # over a definition, at the top
        bad = (span, (*imports, ast.Import(("layout",), span=anchor)), definitions)
        modules.parse_disk_cache().store(text, serial.dumps(bad, source), parts)
        add_outputs(stdlib, capsys)
        assert modules._from_stored(modules.parse_disk_cache().load(text), source).imports \
            == tree.imports


def test_a_part_for_another_definition_is_not_believed(stdlib: Path, tmp_path: Path) -> None:
    """Definition parts swapped (each well-formed, checksums right): the blocks read are
    anchored in the text, so each definition gets its own — from a parse — and the entry is
    replaced."""
    load(stdlib, "lib")
    source = SourceFile(str(stdlib / "lib.sknd"), LIBRARY)
    fresh = modules.parse_module(source).module
    index, parts = modules._stored_form(fresh, source)
    modules.parse_disk_cache().store(LIBRARY, index, parts[::-1])
    cached = load(stdlib, "lib")
    assert cached.tree == fresh and spans(cached.tree) == spans(fresh)
    assert modules.parse_disk_cache().load(LIBRARY).parts[0].read() == parts[0]  # replaced


@pytest.mark.parametrize("part", [
    b"garbage", b"", b'["=not blocks"]', b'["=x","Name",1,1,1,1,"(",1]',
    b'["=@","=input","(",0,"Block",1,1,1,1,"(",1]',  # a Block of a wrong field type
    b'[' + b'[' * 100_000 + b']' * 100_001,  # nesting the JSON reader never sees
], ids=["garbage", "empty", "a string", "names", "wrong field", "deep"])
def test_a_part_that_cannot_be_read_is_parsed_again(stdlib: Path, tmp_path: Path,
                                                    part: bytes) -> None:
    """A part of the wrong shape (checksum right) is found when its blocks are asked for:
    they come from a parse then, and the entry is replaced."""
    load(stdlib, "lib")
    source = SourceFile(str(stdlib / "lib.sknd"), LIBRARY)
    fresh = modules.parse_module(source).module
    index, parts = modules._stored_form(fresh, source)
    modules.parse_disk_cache().store(LIBRARY, index, [parts[0], part])
    cached = load(stdlib, "lib")
    assert [d.name for d in cached.tree.definitions if "blocks" not in vars(d)] == \
        ["twice", "broken"]
    assert cached.tree == fresh and spans(cached.tree) == spans(fresh)
    assert cached.tree.definitions[1].blocks[0].span.source is cached.source
    assert modules.parse_disk_cache().load(LIBRARY).parts[1].read() == parts[1]  # replaced


def test_a_damaged_part_is_parsed_again(stdlib: Path, tmp_path: Path) -> None:
    fresh = load(stdlib, "lib")
    [entry] = entries(tmp_path)
    data = entry.read_bytes()
    entry.write_bytes(data[:-3] + bytes([data[-3] ^ 1]) + data[-2:])  # the last part's
    cached = load(stdlib, "lib")
    with pytest.raises(cache_module.DamagedEntry):
        cache_module.DiskCache("parsed", modules.parse_disk_cache().fingerprint).load(
            LIBRARY).parts[1].read()
    assert cached.tree == fresh.tree
    assert entry.read_bytes() == data


def test_the_stored_form_is_checked(stdlib: Path, tmp_path: Path) -> None:
    """An index of the wrong shape, or not anchored in the text, reads as no entry."""
    source = SourceFile("lib.sknd", LIBRARY)
    tree = modules.parse_module(source).module
    index, parts = modules._stored_form(tree, source)
    cache = cache_module.DiskCache("parsed", "f" * 64, root=tmp_path)

    def read(index: object) -> ast.Module | None:
        data = index if isinstance(index, bytes) else serial.dumps(index, source)
        count = len(index[2]) if type(index) is tuple and len(index) == 3 and \
            type(index[2]) is tuple else len(parts)
        cache.store(LIBRARY, data, [parts[0]] * count)  # as many parts as definitions
        return modules._from_stored(cache.load(LIBRARY), source)

    assert read(index) == tree
    span, imports, definitions = serial.loads(index, modules._INDEX, source)
    (twice, *_), (broken, *_) = definitions
    for bad in (None, tree, (span, imports), (span, (1,), definitions),
                (None, (), definitions), (span, imports, ((twice, "twice", False),)),
                (span, imports, ((twice, "twice", True, False), definitions[1])),  # graph?
                (span, imports, ((twice, "twice", False, True), definitions[1])),  # public?
                (span, imports, ((twice, "thrice", False, False), definitions[1])),
                (span, imports, ((broken, "twice", False, False), definitions[1])),
                (span, imports, (definitions[1], definitions[0])),  # out of order
                (span, imports, definitions[:1]),  # one left out
                (span, imports, (*definitions, definitions[1])),  # one twice
                (span, (ast.Import(("lib",), span=twice),), definitions),
                b"not json"):
        assert read(bad) is None, bad
    cache.store(LIBRARY, index, parts[:1])
    assert modules._from_stored(cache.load(LIBRARY), source) is None  # a part missing


# ------------------------------------------------------------------------------- ownership


def test_folders_and_entries_are_private(stdlib: Path, tmp_path: Path) -> None:
    load(stdlib, "lib")
    [entry] = entries(tmp_path)
    assert entry.stat().st_mode & 0o777 == 0o600
    assert entry.parent.stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "cache").stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("folder, mode", [("root", 0o777), ("root", 0o720), ("kind", 0o707),
                                          ("kind", 0o770)])
def test_a_folder_others_can_write_is_not_used(stdlib: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch, folder: str,
                                               mode: int) -> None:
    """An entry in a folder writable by group or others may be anyone's: it is not read, and
    nothing is written there."""
    load(stdlib, "lib")
    [entry] = entries(tmp_path)
    target = tmp_path / "cache" if folder == "root" else entry.parent
    target.chmod(mode)
    parsed = count_library_parses(monkeypatch, stdlib)
    assert [d.name for d in load(stdlib, "lib").tree.definitions] == ["twice", "broken"]
    assert parsed == ["lib"]  # the entry was not read
    (stdlib / "lib.sknd").write_text(LIBRARY + "\n")
    load(stdlib, "lib")
    assert entries(tmp_path) == [entry]  # nor any written
    target.chmod(0o700)  # private again: used again
    load(stdlib, "lib")
    load(stdlib, "lib")
    assert parsed == ["lib", "lib", "lib"] and len(entries(tmp_path)) == 2


def test_a_folder_of_another_user_is_not_used(stdlib: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    load(stdlib, "lib")
    parsed = count_library_parses(monkeypatch, stdlib)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(tmp_path).st_uid + 1)
    load(stdlib, "lib")
    (stdlib / "lib.sknd").write_text(LIBRARY + "\n")
    load(stdlib, "lib")
    assert parsed == ["lib", "lib"] and len(entries(tmp_path)) == 1


def test_an_unwritable_cache_still_serves(stdlib: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = load(stdlib, "lib")

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError("read-only")

    monkeypatch.setattr(cache_module.tempfile, "mkstemp", refuse)
    forbid_library_parses(monkeypatch, stdlib)
    assert load(stdlib, "lib").tree == fresh.tree  # read from the entry written before
    monkeypatch.undo()
    (stdlib / "lib.sknd").write_text(LIBRARY + "\n")
    monkeypatch.setattr(cache_module.tempfile, "mkstemp", refuse)
    assert load(stdlib, "lib").tree == fresh.tree  # a miss: parsed, nothing written
    assert len(entries(tmp_path)) == 1
    assert not list((tmp_path / "cache").rglob("*.tmp"))


def test_a_cache_folder_that_cannot_exist_is_no_cache(stdlib: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv(cache_module.CACHE_DIR_VARIABLE, str(blocker / "cache"))
    assert [d.name for d in load(stdlib, "lib").tree.definitions] == ["twice", "broken"]
    assert [d.name for d in load(stdlib, "lib").tree.definitions] == ["twice", "broken"]


def test_switched_off_and_user_modules_write_nothing(stdlib: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache_module.NO_CACHE_VARIABLE, "1")
    load(stdlib, "lib")
    assert not (tmp_path / "cache").exists()
    monkeypatch.setenv(cache_module.NO_CACHE_VARIABLE, "0")  # '0' means: not switched off
    user = tmp_path / "user"
    user.mkdir()
    (user / "mine.sknd").write_text(LIBRARY)
    (user / "main.sknd").write_text("import mine;\n")
    modules._PARSED.clear()
    modules.Loader(stdlib=stdlib).load(user / "main.sknd")
    assert entries(tmp_path) == []  # only library modules are kept on disk


def test_cache_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(cache_module.NO_CACHE_VARIABLE, raising=False)
    monkeypatch.setenv(cache_module.CACHE_DIR_VARIABLE, str(tmp_path / "here"))
    assert cache_module.cache_root() == tmp_path / "here"
    monkeypatch.delenv(cache_module.CACHE_DIR_VARIABLE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_module.cache_root() == tmp_path / "xdg" / "refinterp"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # not absolute: ignored, as XDG says
    assert cache_module.cache_root() == Path.home() / ".cache" / "refinterp"
    monkeypatch.setenv(cache_module.NO_CACHE_VARIABLE, "yes")
    assert cache_module.cache_root() is None


@pytest.mark.parametrize("edited", ["parser.py", "serial.py", "ast.py", "source.py"])
def test_the_fingerprint_covers_the_parser_and_the_format(edited: str) -> None:
    """An edited parser, syntax tree or serial form must never read an entry an older one
    wrote."""
    fingerprint = modules._parse_fingerprint()
    assert fingerprint == modules.parse_disk_cache().fingerprint
    assert len(fingerprint) == 64
    original = Path.read_bytes

    def edit(path: Path) -> bytes:
        data = original(path)
        return data + b"#" if path.name == edited else data

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Path, "read_bytes", edit)
        assert modules._parse_fingerprint() != fingerprint


# ------------------------------------------------------------------ definitions read when used


def pending(module: modules.LoadedModule) -> list[str]:
    """The definitions of a module whose blocks have not been read yet."""
    return [d.name for d in module.tree.definitions if "blocks" not in vars(d)]


def test_a_hit_reads_a_definitions_blocks_when_first_used(stdlib: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    fresh = parsed_without_cache(load(stdlib, "math"))
    forbid_library_parses(monkeypatch, stdlib)
    cached = load(stdlib, "math")
    names = [d.name for d in fresh.definitions]
    assert [d.name for d in cached.tree.definitions] == names
    assert pending(cached) == names  # loading, imports and the graph check read no blocks
    assert [d.is_graph for d in cached.tree.definitions] == [d.is_graph for d in fresh.definitions]
    assert [d.public for d in cached.tree.definitions] == [d.public for d in fresh.definitions]
    definition, module = modules.find_operator(("add",), cached)
    assert module is cached and pending(cached) == names  # a look-up by name reads none
    blocks = definition.blocks
    assert definition.blocks is blocks  # read once
    assert pending(cached) == [n for n in names if n != "add"]
    [expected] = [d for d in fresh.definitions if d.name == "add"]
    assert definition == expected and spans(definition) == spans(expected)
    assert list(vars(definition)) == list(vars(expected))  # the same fields, in field order
    assert list(vars(blocks[0])) == list(vars(expected.blocks[0]))
    assert definition.span.source is cached.source
    assert blocks[0].span.source is cached.source
    assert cached.tree == fresh  # comparing reads every definition
    assert pending(cached) == []
    assert spans(cached.tree) == spans(fresh)
    assert format_module(cached.tree) == format_module(fresh)


def test_a_pending_definition_copies_and_pickles_whole(stdlib: Path) -> None:
    import copy

    fresh = parsed_without_cache(load(stdlib, "lib"))
    for copied in (lambda d: pickle.loads(pickle.dumps(d)), copy.deepcopy, copy.copy):
        cached = load(stdlib, "lib")
        assert pending(cached) == ["twice", "broken"]
        twice = copied(cached.tree.definitions[0])
        assert "blocks" in vars(twice) and twice == fresh.definitions[0]
        assert list(vars(twice)) == list(vars(fresh.definitions[0]))
    definition = load(stdlib, "lib").tree.definitions[1]
    with pytest.raises(AttributeError, match="^'OperatorDef' object has no attribute 'nope'$"):
        definition.nope  # noqa: B018
    assert not hasattr(definition, "nope") and hasattr(definition, "blocks")


def test_threads_read_pending_blocks_once(stdlib: Path) -> None:
    """Threads asking for the same pending definitions all get the very same blocks."""
    load(stdlib, "math")
    cached = load(stdlib, "math")
    assert pending(cached)
    seen: list[list[int]] = []
    start = threading.Barrier(8)

    def read() -> None:
        start.wait()
        seen.append([id(d.blocks) for d in cached.tree.definitions])

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 8 and all(ids == seen[0] for ids in seen)
    assert seen[0] == [id(d.blocks) for d in cached.tree.definitions]


# ------------------------------------------------------------------------------- syntax.serial


def test_the_allow_list_is_every_node_class() -> None:
    """Exactly the node classes of syntax.ast, each with a kind for every field."""
    expected = {name for name, cls in vars(ast).items() if isinstance(cls, type) and
                issubclass(cls, ast.Node) and cls is not ast.Node}
    assert set(serial.NODE_CLASSES) == expected and len(expected) > 50
    for tag in serial.NODE_CLASSES:
        cls, names, types, _ = serial._schema(tag)
        assert names == tuple(f.name for f in dataclasses.fields(cls))
        assert len(types) == len(names) - 1 and all(types)


SOURCE = SourceFile("x.sknd", "operator x { }\nline two\n")


def node(text: str) -> object:
    return serial.loads(text.encode(), "Expr", SOURCE)


@pytest.mark.parametrize("program", [
    '["=a","Name",1,1,1,2]',                     # accepted: the control
])
def test_a_good_program_reads(program: str) -> None:
    assert node(program) == ast.Name("a") and node(program).span == SOURCE.span(0, 1)


@pytest.mark.parametrize("program", [
    '', 'null', '"=a"', '{}', '[{"a":1}]', '[[1]]', '["=a","Name",1,1,1,2]]', '["=a",[]]',
    '["=a","Name",1,1,1]',                        # a span cut short
    '["=a","Name",0,1,1,2]', '["=a","Name",1,0,1,2]', '["=a","Name",1,1,4,2]',  # off the file
    '["=a","Name",2,1,1,2]', '["=a","Name",1.0,1,1,2]', '["=a","Name",true,1,1,2]',
    '["=a","Name","=1",1,1,2]', '["=a","Name",null,1,1,2]',
    '["Name",1,1,1,2]',                           # a field missing
    '["=a","=b","Name",1,1,1,2]',                 # a value left over
    '[1,"Name",1,1,1,2]', '[null,"Name",1,1,1,2]', '["=a","(",1,"Name",1,1,1,2]',  # types
    '["=a","Name",1,1,1,2,"=a","Name",1,1,1,2,"=+","Binary",1,1,1,2]',  # fields in order
    '["=+","=a","Name",1,1,1,2,"=b","Binary",1,1,1,2]',                 # a str as an Expr
    '["=a","Name",1,1,1,2,"(",1,"Call",1,1,1,2]', '["(",-1]', '["(",5]', '["(",1.5]',
    '["=a","name",1,1,1,2]', '["=a","Span",1,1,1,2]', '["=a","Import",1,1,1,2]',
    '["=a","Block",1,1,1,2]', '["=a","Expr",1,1,1,2]', '["=a","__class__",1,1,1,2]',
    '[1e999999]', '[NaN]', '["=a","Name",1,1,1,2' + ',1' * 3 + ']',
    '[' + '1' * 5000 + ']',                       # an int beyond Python's digit limit
    '\xff[1]', '[' + '[' * 100_000 + ']' * 100_001, '["=\\u005b"' + ']' * 100_000,
])
def test_a_bad_program_is_a_serial_error(program: str) -> None:
    with pytest.raises(serial.SerialError):
        serial.loads(program.encode("latin-1"), "Expr", SOURCE)  # '\xff': no UTF-8


def test_strings_of_every_kind_round_trip() -> None:
    parts = ("[{x}]", '"\\', "é ∀ 😀", "\ud800", "", "=", "(", "Span", "\n\t\x00")
    tree = ast.StringLiteral(tuple(p for part in parts for p in (part, ast.Name(part))),
                             span=SOURCE.span(0, 3))
    data = serial.dumps(tree, SOURCE)
    assert data.count(b"[") == 1 and b"{" not in data and data.isascii()
    again = serial.loads(data, "Expr", SOURCE)
    assert again == tree and again.parts == tree.parts and again.span == tree.span


def test_numbers_round_trip_exactly() -> None:
    values = [0.1, -0.0, 1e308, 5e-324, float("inf"), 2.0 ** 80]
    tree = tuple(ast.RealLiteral(v) for v in values) + (ast.IntLiteral(10 ** 40),
                                                        ast.BoolLiteral(True))
    again = serial.loads(serial.dumps(tree, SOURCE), "tuple[Expr, ...]", SOURCE)
    assert [type(n.value) for n in again] == [float] * 6 + [int, bool]
    assert [repr(n.value) for n in again] == [repr(n.value) for n in tree]
    assert again[-1].span is NO_SPAN


@pytest.mark.parametrize("value", [
    [ast.Name("a")], ast.Name(["a"]), {"a": 1}, SOURCE, b"bytes", object(),
    ast.Name("a", span=SourceFile("other", "a").span(0, 1)),  # a span of another file
    ast.Name("a", span=Span(SOURCE, 9, 1, 9, 2)),                # outside the file
])
def test_values_without_a_serial_form_are_refused(value: object) -> None:
    with pytest.raises(serial.SerialError):
        serial.dumps(value, SOURCE)


def test_the_root_kind_is_checked() -> None:
    data = serial.dumps((ast.Name("a"),), SOURCE)
    assert serial.loads(data, "tuple[Expr, ...]", SOURCE) == (ast.Name("a"),)
    for kind in ("tuple[Block, ...]", "Expr", "tuple[str, ...]", "tuple[Expr, Expr]"):
        with pytest.raises(serial.SerialError):
            serial.loads(data, kind, SOURCE)


def test_a_very_deep_tree_round_trips_without_recursion() -> None:
    tree: object = ast.Name("x")
    for _ in range(50_000):
        tree = ast.Unary("-", tree)
    again = serial.loads(serial.dumps(tree, SOURCE), "Expr", SOURCE)
    depth = 0
    while isinstance(again, ast.Unary):
        again, depth = again.operand, depth + 1
    assert depth == 50_000 and again == ast.Name("x")
