"""The disk cache of parsed library modules (core.cache.DiskCache, language.modules;
docs/architecture.md "Start-up"): a hit gives the very tree a parse gives, spans and
diagnostics included; anything doubtful is ignored and the module parsed again."""

from __future__ import annotations

import dataclasses
import io
import pickle
import shutil
import sys
from pathlib import Path

import pytest

from refinterp.cli import main
from refinterp.core import cache as cache_module
from refinterp.core.source import SourceFile, Span
from refinterp.language import modules
from refinterp.syntax import ast
from refinterp.syntax.printer import format_module

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
    limit = sys.getrecursionlimit()  # a run raises it; above 4000 nothing would be written
    sys.setrecursionlimit(1000)
    yield folder
    sys.setrecursionlimit(limit)
    modules._PARSED.clear()


def entries(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache").rglob("*.pickle"))


def load(folder: Path, module: str) -> modules.LoadedModule:
    """`module` of `folder` as an import loads it, parsed afresh in this process."""
    modules._PARSED.clear()
    graph = folder.parent / "graph.sknd"
    graph.write_text(f"import {module};\n")
    return modules.Loader(stdlib=folder).load(graph).main.imports[module]


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


def parsed_without_cache(module: modules.LoadedModule) -> ast.Module:
    from refinterp.syntax.parser import parse_module
    return parse_module(SourceFile(module.source.path, module.source.text)).module


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
    outputs = []
    for name in ("first.sknd", "second.sknd"):
        graph = tmp_path / name
        graph.write_text(GRAPH % "twice")
        modules._PARSED.clear()
        assert main(["eval", str(graph), "--random-inputs", "--seed", "3",
                     "--stdlib", str(stdlib)]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]


def test_changed_source_is_parsed_again(stdlib: Path, tmp_path: Path) -> None:
    assert [d.name for d in load(stdlib, "lib").tree.definitions] == ["twice", "broken"]
    (stdlib / "lib.sknd").write_text(LIBRARY.replace("broken", "mended"))
    assert [d.name for d in load(stdlib, "lib").tree.definitions] == ["twice", "mended"]
    assert len(entries(tmp_path)) == 2


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign version", "foreign key",
                                    "forbidden class"])
def test_doubtful_entries_are_ignored(stdlib: Path, tmp_path: Path, damage: str) -> None:
    fresh = load(stdlib, "lib")
    [entry] = entries(tmp_path)
    data = entry.read_bytes()
    header_end = data.index(b"\n", data.index(b"\n", len(b"refinterp-cache\n")) + 1) + 1
    header, body = data[:header_end], data[header_end:]
    other = pickle.dumps(modules.parse_module(SourceFile("x", "operator other { }\n")))
    if damage == "garbage":
        entry.write_bytes(b"\x00not a cache entry")
    elif damage == "truncated":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "foreign version":  # another refinterp: a valid tree, but not ours to read
        entry.write_bytes(header.replace(modules.parse_disk_cache().fingerprint.encode(),
                                         b"0" * 64) + other)
    elif damage == "foreign key":  # an entry for another text under this name
        entry.write_bytes(header.replace(entry.stem.encode(), b"f" * 64) + other)
    else:  # a pickle naming anything but the tree's classes must not even be looked up
        stream = io.BytesIO()
        pickle.Pickler(stream).dump(print)
        entry.write_bytes(header + stream.getvalue())
    again = load(stdlib, "lib")
    assert again.tree == fresh.tree and spans(again.tree) == spans(fresh.tree)
    assert entry.read_bytes() == data  # parsed again, and the entry rewritten


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


def test_nothing_is_written_under_a_raised_recursion_limit(stdlib: Path,
                                                            tmp_path: Path) -> None:
    """The C pickler recurses once per level of the tree: under a recursion limit raised
    beyond what the C stack surely holds, nothing is pickled (a parse is still a parse)."""
    sys.setrecursionlimit(100_000)
    assert [d.name for d in load(stdlib, "lib").tree.definitions] == ["twice", "broken"]
    assert entries(tmp_path) == []


def test_a_tree_too_deep_to_pickle_is_not_stored(stdlib: Path, tmp_path: Path) -> None:
    deep = "1" + " + 1" * 3000
    (stdlib / "lib.sknd").write_text(LIBRARY.replace("2.0 * x[i..]", f"x[i..] + real({deep})"))
    assert load(stdlib, "lib").tree.definitions[0].name == "twice"
    assert entries(tmp_path) == []


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


def test_the_fingerprint_covers_the_parser() -> None:
    """An edited parser or syntax tree must never read an entry an older one wrote."""
    fingerprint = modules._parse_fingerprint()
    assert fingerprint == modules.parse_disk_cache().fingerprint
    assert len(fingerprint) == 64
    original = Path.read_bytes

    def edited(path: Path) -> bytes:
        data = original(path)
        return data + b"#" if path.name == "parser.py" else data

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Path, "read_bytes", edited)
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
    import threading

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


def test_a_part_that_cannot_be_read_is_parsed_again(stdlib: Path, tmp_path: Path) -> None:
    """A damaged definition inside an entry that reads (here: a part naming a class no entry
    may name) is found only when its blocks are asked for: they come from a parse then."""
    fresh = parsed_without_cache(load(stdlib, "lib"))
    [entry] = entries(tmp_path)
    source = SourceFile(str(stdlib / "lib.sknd"), (stdlib / "lib.sknd").read_text())
    marker, span, imports, definitions = modules._stored_form(fresh)
    damaged = list(definitions)
    damaged[1] = (*definitions[1][:4], cache_module.Deferred(print))
    entry.unlink()
    modules.parse_disk_cache().store(source.text, (marker, span, imports, tuple(damaged)),
                                     {"source": source})
    assert entries(tmp_path) == [entry]
    cached = load(stdlib, "lib")
    assert pending(cached) == ["twice", "broken"]
    assert cached.tree == fresh and spans(cached.tree) == spans(fresh)
    assert cached.tree.definitions[1].blocks[0].span.source is cached.source


def test_the_stored_form_is_checked(stdlib: Path) -> None:
    """Anything but the stored form of a module reads as no entry (the module is parsed)."""
    source = SourceFile("lib.sknd", LIBRARY)
    tree = modules.parse_module(source).module
    good = modules._stored_form(tree)
    assert modules._from_stored(good, source) == tree
    marker, span, imports, definitions = good
    for bad in (None, tree, (marker, span, imports), ("other", span, imports, definitions),
                (marker, None, imports, definitions), (marker, span, [1], definitions),
                (marker, span, imports, ((None, *definitions[0][1:]),)),
                (marker, span, imports, ((*definitions[0][:4], tree),))):
        assert modules._from_stored(bad, source) is None
