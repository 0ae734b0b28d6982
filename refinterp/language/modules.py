"""Module loading: a file (or model folder) and everything it imports, transitively (spec §2.15).

`import a.b;` in file F is looked up, in this order, as
  1. F's folder:           a/b.sknd, then a/b.nnef
  2. each --path folder:   DIR/a/b.sknd, DIR/a/b.nnef
  3. the standard library: refinterp/stdlib/a/b.sknd, ... (or the --stdlib folder instead)
A model folder stands for its main.sknd (or main.nnef). Every module is parsed once, however often
it is imported; an import cycle or a missing module is a diagnostic that says where it looked.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import refinterp
from refinterp.core import source as source_module
from refinterp.core.cache import BoundedCache, DiskCache, Entry, Part
from refinterp.core import files
from refinterp.core.diagnostics import Diagnostic, ModuleDiagnostic
from refinterp.core.source import SourceFile, Span
from refinterp.language import checks
from refinterp.numeric import rules
from refinterp.syntax import ast, serial
from refinterp.syntax.parser import ParseResult, parse_module

EXTENSIONS = (".sknd", ".nnef")
STDLIB_DIR = Path(__file__).resolve().parent.parent / "stdlib"


@dataclass
class LoadedModule:
    """One parsed module: its qualified name, file, syntax tree and parser warnings."""

    name: str
    path: Path
    source: SourceFile
    tree: ast.Module
    warnings: tuple[Diagnostic, ...] = ()
    imports: dict[str, "LoadedModule"] = field(default_factory=dict)
    library: bool = False   # found in the standard library folder (trusted, not the user's)


@dataclass
class LoadedProgram:
    """The main module and all modules it imports, in load order (dependencies first)."""

    main: LoadedModule
    modules: list[LoadedModule]
    stdlib: Path = STDLIB_DIR

    @property
    def warnings(self) -> list[Diagnostic]:
        return [w for module in self.modules for w in module.warnings]


def resolve_main(path: str | Path) -> Path:
    """The file for a command-line argument: the file itself, or a model folder's main module."""
    path = Path(path)
    if _is_dir(path):
        for ext in EXTENSIONS:
            candidate = path / f"main{ext}"
            if _is_file(candidate):
                return candidate
        raise ModuleDiagnostic(
            f"model folder '{path}' has no main.sknd (or main.nnef)", code="E0200")
    if not _is_file(path) and not os.path.exists(path):  # a FIFO, a device: read_source refuses
        notes = []
        module = Path(*str(path).split("."))
        if not path.suffix and any(_is_file((STDLIB_DIR / module).with_suffix(e))
                                   for e in EXTENSIONS):
            notes.append(f"'{path}' is a standard module: run one of its operators with "
                         f"--op {path}.OP and no file (`refinterp ops {path}` lists them)")
        raise ModuleDiagnostic(f"no such file or folder: '{path}'", notes=notes)
    return path


def read_source(path: Path) -> SourceFile:
    """Read a source file; an unreadable file is a diagnostic, not a crash (a FIFO, a device
    or a file above `core.files.MAX_SOURCE_BYTES` too: E0800, unread)."""
    try:
        return files.read_source(path)
    except OSError as exc:
        raise ModuleDiagnostic(f"cannot read '{path}': {exc.strerror or exc}") from None


# the 256 most recently loaded files (the stdlib has 8 modules; a test session a few hundred)
_PARSED: BoundedCache[tuple[SourceFile, ParseResult]] = BoundedCache(256)

# Bump when the way parse results are stored changes without any file of the fingerprint
# changing.
PARSE_CACHE_FORMAT = 3


def _parse_fingerprint() -> str | None:
    """What a stored parse result depends on besides its text: the cache format, refinterp's
    version, Python's, and the text of every file that parses, defines or serialises the
    stored classes (`refinterp.syntax`, `refinterp.core.source`), so an edited parser never
    reads an entry an older one wrote, whatever the version number says. None if those files
    cannot be read."""
    digest = hashlib.sha256(f"{PARSE_CACHE_FORMAT} {refinterp.__version__} "
                            f"{sys.version_info[:2]}".encode())
    syntax_dir = Path(ast.__file__).parent
    files = [*sorted(syntax_dir.glob("*.py")), Path(source_module.__file__)]
    try:
        for path in files:
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    except OSError:
        return None
    return digest.hexdigest() if len(files) > 1 else None


@functools.cache  # no arguments: one entry, the process's cache
def parse_disk_cache() -> DiskCache | None:
    """The disk cache of parsed library modules (docs/performance.md "Start-up"), made on
    first use (its fingerprint reads the syntax sources); None without a fingerprint."""
    fingerprint = _parse_fingerprint()
    return None if fingerprint is None else DiskCache("parsed", fingerprint)


# The kinds (syntax.serial) of an entry's payload — the module's span, its imports and, per
# definition, what loading and look-ups read — and of each part: a definition's blocks.
_INDEX = "tuple[Span, tuple[Import, ...], tuple[tuple[Span, str, bool, bool], ...]]"
_BLOCKS = "tuple[Block, ...]"


def _parse_stored(source: SourceFile) -> ParseResult:
    """Parse `source`, or read the result a previous process stored for the same text. Only
    results without warnings are stored (a warning is a Diagnostic, not a tree); the tree's
    spans point to `source` either way. A stored module keeps each definition's blocks apart,
    read when first used (`_from_stored`). An entry that cannot be read, or does not match
    the text, is replaced by the parse."""
    cache = parse_disk_cache()
    if cache is None or not cache.enabled:
        return parse_module(source)
    module = _from_stored(cache.load(source.text), source)
    return ParseResult(module, ()) if module is not None else _parse_and_store(source)


def _parse_and_store(source: SourceFile) -> ParseResult:
    """Parse `source` and, without warnings, store the result (replacing any entry)."""
    result = parse_module(source)
    cache = parse_disk_cache()
    if cache is not None and not result.warnings and cache.prepare():
        stored = _stored_form(result.module, source)
        if stored is not None:
            cache.store(source.text, *stored)
    return result


def _stored_form(module: ast.Module, source: SourceFile) -> tuple[bytes, list[bytes]] | None:
    """What the disk cache keeps of a parsed library module (None if it has no serial form):
    the payload `_INDEX` and, per definition, its blocks as a part of their own: a one-op
    graph uses one definition of math.sknd's 71, and reading the others cost more than all
    the rest of loading (docs/performance.md "Start-up")."""
    try:
        index = serial.dumps((module.span, module.imports, tuple(
            (d.span, d.name, d.is_graph, d.public) for d in module.definitions)), source)
        return index, [serial.dumps(d.blocks, source) for d in module.definitions]
    except serial.SerialError:
        return None


def _from_stored(entry: Entry | None, source: SourceFile) -> ast.Module | None:
    """The module an entry holds, its definitions reading their blocks when first asked
    (`ast.OperatorDef.pending`); None for anything that is not the stored form of `source`'s
    module (the module is then parsed): a payload of the wrong shape, a part per definition
    missing, or imports and definitions that are not where the text has them."""
    if entry is None:
        return None
    try:
        span, imports, definitions = serial.loads(entry.payload, _INDEX, source)
    except serial.SerialError:
        return None
    if len(definitions) != len(entry.parts) or not _anchored(imports, definitions, source):
        return None
    reparsed = _Reparse(source)
    return ast.Module(imports, tuple(
        ast.OperatorDef.pending(name, _PendingBlocks(part, reparsed, index, def_span),
                                is_graph=is_graph, public=public, span=def_span)
        for index, ((def_span, name, is_graph, public), part)
        in enumerate(zip(definitions, entry.parts))), span=span)


# ------------------------------------------------------------- stored trees anchored in the text
#
# A payload or part of the right shape must also be the tree of this text: each import spells
# its module where its span says, each definition starts with its header (`public`, `operator`
# or `graph`, its name) and each block with `@kind` where theirs say, and the text between
# them, in order, holds nothing but white space, comments and (between imports) `import`, `,`
# and `;` — so an entry holding another module's tree, an import or a definition added or
# left out, is not believed (docs/security.md "The parse cache").

def _offsets(span: Span, source: SourceFile) -> tuple[int, int]:
    """The character offsets [start, end) of a span of `source` (ValueError for another's)."""
    if span.source is not source:
        raise ValueError("a span of another file")
    starts = source.line_starts
    return starts[span.line - 1] + span.col - 1, starts[span.end_line - 1] + span.end_col - 1


def _is_name(word: str) -> bool:
    """Whether `word` is a name as the lexer reads one ([A-Za-z_][A-Za-z0-9_]*)."""
    return word.isascii() and word.isidentifier()


def _gap(text: str, start: int, end: int, words: frozenset[str] = frozenset(),
         last: bool = False) -> bool:
    """Whether text[start:end] holds nothing but white space, comments and `words`: what may
    lie between two stored items. A comment runs to the end of its line, so the gap's last
    line (which the next item continues) may hold none, unless the gap ends the file
    (`last`)."""
    if start > end:
        return False
    lines = text[start:end].split("\n")
    for number, line in enumerate(lines):
        code, comment, _ = line.partition("#")
        if comment and number == len(lines) - 1 and not last:
            return False
        if words:
            code = code.replace(",", " , ").replace(";", " ; ")
        if not all(word in words for word in code.split()):
            return False
    return True


_BETWEEN_IMPORTS = frozenset({"import", ",", ";"})


def _header(text: str, start: int, end: int) -> tuple[bool, bool, str, int] | None:
    """The definition header at `start`: `[public] operator|graph name {` as (public,
    is_graph, name, the offset after `{`); None if there is none."""
    brace = text.find("{", start, end)
    words = text[start:brace].split() if brace >= 0 else []
    public = words[:1] == ["public"]
    if public:
        words = words[1:]
    if len(words) != 2 or words[0] not in ("operator", "graph") or not _is_name(words[1]):
        return None
    return public, words[0] == "graph", words[1], brace + 1


def _anchored(imports: tuple[ast.Import, ...], definitions: tuple, source: SourceFile
              ) -> bool:
    """Whether the stored imports and definitions (span, name, is_graph, public) are those of
    `source`'s text (see above)."""
    text = source.text
    try:
        imported = []
        for imp in imports:
            start, end = _offsets(imp.span, source)
            if not imp.module or not all(map(_is_name, imp.module)) or \
                    "".join(text[start:end].split()) != ".".join(imp.module):
                return False
            imported.append((start, end))
        defined = []
        for span, name, is_graph, public in definitions:
            start, end = _offsets(span, source)
            if _header(text, start, end)[:3] != (public, is_graph, name) or \
                    text[end - 1:end] != "}":
                return False
            defined.append((start, end))
    except (ValueError, IndexError, TypeError):  # TypeError: no header
        return False
    if imported != sorted(imported) or defined != sorted(defined):  # each in text order
        return False
    items = sorted(imported + defined)
    edges = [0, *(offset for item in items for offset in item), len(text)]
    return all(_gap(text, edges[i], edges[i + 1], _BETWEEN_IMPORTS, i == len(edges) - 2)
               for i in range(0, len(edges), 2))


def _blocks_anchored(blocks: tuple[ast.Block, ...], definition: Span,
                     source: SourceFile) -> bool:
    """Whether stored blocks are those of the definition at `definition` in the text: each
    `@kind` where its span says, in order, with nothing but white space and comments between
    them and the definition's header and closing brace."""
    text = source.text
    try:
        start, end = _offsets(definition, source)
        position = _header(text, start, end)[3]
        for block in blocks:
            block_start, block_end = _offsets(block.span, source)
            if block.kind not in ast.BLOCK_NAMES or block_end > end or \
                    not text.startswith("@" + block.kind, block_start) or \
                    not _gap(text, position, block_start):
                return False
            position = block_end
        return text[end - 1:end] == "}" and _gap(text, position, end - 1)
    except (ValueError, IndexError, TypeError):  # TypeError: no header
        return False


class _Reparse:
    """The module parsed again, once, for a definition whose stored blocks cannot be read; the
    parse replaces the entry."""

    def __init__(self, source: SourceFile) -> None:
        self.source = source
        self.module: ast.Module | None = None

    def definitions(self) -> tuple[ast.OperatorDef, ...]:
        if self.module is None:
            self.module = _parse_and_store(self.source).module
        return self.module.definitions


class _PendingBlocks:
    """The blocks of a stored definition: read from the entry's part when first asked for, or,
    if that part cannot be read (damaged, of the wrong shape, not anchored in the text), taken
    from the module parsed again — the same blocks either way. The same tuple whichever thread
    asks, however often."""

    __slots__ = ("part", "reparsed", "index", "span", "blocks")

    def __init__(self, part: Part, reparsed: _Reparse, index: int, span: Span) -> None:
        self.part, self.reparsed, self.index, self.span = part, reparsed, index, span
        self.blocks: tuple[ast.Block, ...] | None = None

    def __call__(self) -> tuple[ast.Block, ...]:
        if self.blocks is None:
            with _READING_BLOCKS:
                if self.blocks is None:
                    self.blocks = self._read()
        return self.blocks

    def _read(self) -> tuple[ast.Block, ...]:
        source = self.reparsed.source
        try:
            blocks = serial.loads(self.part.read(), _BLOCKS, source)
            if _blocks_anchored(blocks, self.span, source):
                return blocks
        except ValueError:  # DamagedEntry, SerialError
            pass
        definitions = self.reparsed.definitions()
        if self.index >= len(definitions) or definitions[self.index].span != self.span:
            raise RuntimeError(f"the parse cache entry of {source.path} does not match its "
                               f"text")  # cannot be: the definitions are anchored in it
        return definitions[self.index].blocks


_READING_BLOCKS = threading.RLock()


def _parsed(path: Path, library: bool = False) -> tuple[SourceFile, ParseResult]:
    """A file's source and parse result, parsed once per process while its text is unchanged:
    syntax trees are immutable, so loaders share them. The key keeps the path as written, which
    diagnostics print. A library module's parse is also kept on disk between processes."""
    source = read_source(path)
    key = (str(path), path.resolve())
    cached = _PARSED.get(key)
    if cached is not None and cached[0].text == source.text:
        return cached
    result = _parse_stored(source) if library else parse_module(source)
    _PARSED.put(key, (source, result))
    return source, result


class Loader:
    """Loads modules with a search path; shares parsed modules between imports."""

    def __init__(self, search_path: list[str | Path] | None = None,
                 stdlib: str | Path | None = None) -> None:
        self.search_path = [Path(p) for p in (search_path or [])]
        self.stdlib = Path(stdlib) if stdlib is not None else STDLIB_DIR
        if not _is_dir(self.stdlib):
            raise ModuleDiagnostic(f"--stdlib '{self.stdlib}' is not a folder")
        self._by_path: dict[Path, LoadedModule] = {}

    def load(self, path: str | Path) -> LoadedProgram:
        """Load a main file or model folder with all its imports."""
        main_path = resolve_main(path)
        order: list[LoadedModule] = []
        main = self._load_file(main_path, "main" if main_path.stem == "main" else
                               main_path.stem, [], order)
        _refuse(checks.check_main(main.tree, is_model=_is_dir(Path(path))))
        return LoadedProgram(main, order, self.stdlib)

    def load_source(self, text: str, path: str | Path = "<source>.sknd") -> LoadedProgram:
        """Load SkriptND source text as the main module; its imports are looked up as if the
        text were the file `path` (relative to its folder, then the search path, then the
        standard library)."""
        path = Path(path)
        source = SourceFile(str(path), text)
        order: list[LoadedModule] = []
        main = self._load_parsed(path, source, "main" if path.stem == "main" else path.stem,
                                 [], order)
        return LoadedProgram(main, order, self.stdlib)

    def candidates(self, importer: Path, module: tuple[str, ...]) -> list[Path]:
        """Every file that `import a.b` in `importer` may refer to, in lookup order."""
        relative = Path(*module)
        folders = [importer.parent, *self.search_path, self.stdlib]
        return [folder / relative.with_suffix(ext) for folder in folders for ext in EXTENSIONS]

    def _load_file(self, path: Path, name: str, stack: list[Path],
                   order: list[LoadedModule]) -> LoadedModule:
        key = path.resolve()
        cached = self._by_path.get(key)
        if cached is not None:
            return cached
        source, result = _parsed(path, library=key.is_relative_to(self.stdlib.resolve()))
        return self._load_parsed(path, source, name, stack, order, result)

    def _load_parsed(self, path: Path, source: SourceFile, name: str, stack: list[Path],
                     order: list[LoadedModule], result: ParseResult | None = None
                     ) -> LoadedModule:
        key = path.resolve()
        result = result if result is not None else parse_module(source)
        loaded = LoadedModule(name, path, source, result.module, result.warnings,
                              library=key.is_relative_to(self.stdlib.resolve()))
        if not loaded.library:  # the bundled library is linted by its tests, not per load
            # the loader knows no profile: the binding order under the more permissive one
            # (instantiation checks it again under the profile of the run)
            _refuse(checks.check_module(result.module, rules.KHRONOS))
        stack = [*stack, key]
        for imp in result.module.imports:
            loaded.imports[".".join(imp.module)] = self._load_import(loaded, imp, stack, order)
        self._by_path[key] = loaded
        order.append(loaded)
        return loaded

    def _load_import(self, importer: LoadedModule, imp: ast.Import, stack: list[Path],
                     order: list[LoadedModule]) -> LoadedModule:
        candidates = self.candidates(importer.path, imp.module)
        found = next((c for c in candidates if _is_file(c)), None)
        qualified = ".".join(imp.module)
        if found is None:
            folders = dict.fromkeys(str(c.parent) for c in candidates)
            raise ModuleDiagnostic(
                f"module '{qualified}' not found", imp.span,
                ["looked for " + " / ".join(f"{Path(*imp.module)}{e}" for e in EXTENSIONS)
                 + " in: " + ", ".join(folders)])
        key = found.resolve()
        if key in stack:
            cycle = [p.name for p in stack[stack.index(key):]] + [found.name]
            raise ModuleDiagnostic(
                f"import cycle: {' -> '.join(cycle)}", imp.span,
                ["modules must not import each other circularly"], code="E0201")
        module = self._load_file(found, qualified, stack, order)
        graphs = [d for d in module.tree.definitions if d.is_graph]
        if graphs:
            raise ModuleDiagnostic(
                f"imported module '{qualified}' defines graph '{graphs[0].name}'",
                graphs[0].span,
                ["only the main module may define graphs (spec §2.15)",
                 f"imported from {imp.span}"], code="E0202")
        return module


def _refuse(found: list[Diagnostic]) -> None:
    """Raise the first error of the static checks (language.checks) among `found`."""
    wrong = checks.errors(found)
    if wrong:
        raise wrong[0]


def stdlib_module_files(stdlib: str | Path | None = None) -> dict[str, Path]:
    """THE modules of a stdlib folder (the bundled one by default): qualified name → file, by
    name. Only the folder's own files (`nn.sknd` is `nn`) and those of its direct subfolders
    (`a/b.sknd` is `a.b`: one level of packages) are listed, so that a listing reads at most
    two levels of folders whatever folder is given (`--stdlib /`); an import still finds a
    module at any depth by its path. `.sknd` wins over `.nnef` for the same name, as in the
    import search; a folder that cannot be read is skipped."""
    root = Path(stdlib) if stdlib is not None else STDLIB_DIR
    found: dict[str, Path] = {}
    top = _entries(root)
    folders = [(root, top), *((sub, _entries(sub)) for sub in top if _is_dir(sub))]
    for ext in EXTENSIONS:
        for folder, paths in folders:
            for path in paths:
                if path.suffix == ext and _is_file(path):
                    found.setdefault(".".join(path.relative_to(root).with_suffix("").parts),
                                     path)
    return dict(sorted(found.items()))


def _entries(folder: Path) -> list[Path]:
    """The entries of a folder, sorted; none if it cannot be read."""
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def _is_file(path: Path) -> bool:
    """`path.is_file()`, False where the file system refuses to say (a folder without
    permission, /proc)."""
    try:
        return path.is_file()
    except OSError:
        return False


def _is_dir(path: Path) -> bool:
    """`path.is_dir()`, False where the file system refuses to say."""
    try:
        return path.is_dir()
    except OSError:
        return False


_DEFINITION_NAME = r"^\s*(?:operator|graph)\s+([A-Za-z_]\w*)"


def stdlib_operator_names(stdlib: Path = STDLIB_DIR) -> dict[str, list[str]]:
    """The names of the operators of every standard module, by module: hints for an unknown
    or misspelt operator. Reads the module texts without parsing them."""
    import re

    pattern = re.compile(_DEFINITION_NAME, re.MULTILINE)
    names = {}
    for module, path in stdlib_module_files(stdlib).items():
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        names[module] = pattern.findall(text)
    return names


def stdlib_operators_named(name: str, stdlib: Path = STDLIB_DIR) -> list[str]:
    """Qualified names (`nn.relu`) of the standard-library operators called `name`: a hint for
    an unqualified or misspelt invocation."""
    return [f"{module}.{name}" for module, names in stdlib_operator_names(stdlib).items()
            if name in names]


def is_private(name: str) -> bool:
    """A name starting with `_` is private to its module (`nn._lstm_step`): it is invoked only
    from there, and never suggested or listed to a user."""
    return name.startswith("_")


def find_operator(callee: tuple[str, ...], module: LoadedModule
                  ) -> tuple[ast.OperatorDef, LoadedModule] | None:
    """THE operator lookup (spec §2.15): `op` in `module`, or `a.b.op` in the module imported
    as `a.b` — or in `module` itself when that is its own name (math.sknd's `lp_reduce` invokes
    `math.abs`, as in spec §4.2.6 and the Khronos stdlib). None when there is none;
    `unknown_operator_notes` then says why."""
    *path, name = callee
    target = module if not path else module.imports.get(".".join(path))
    if target is None and ".".join(path) == module.name:
        target = module
    if target is not None:
        for definition in target.tree.definitions:
            if definition.name == name:
                return definition, target
    return None


def unknown_operator_notes(callee: tuple[str, ...], module: LoadedModule,
                           stdlib: Path = STDLIB_DIR) -> list[str]:
    """The notes of an unknown operator: an import that is missing; for an unqualified name,
    the operators of that very name in the imported and standard modules and the import they
    need (`relu` → `nn.relu`, `import nn;`); else the closest names (did you mean) in the
    module searched, the module itself, the modules it imports and every standard module
    (`math.sofmax` → `nn.softmax`). Private names (`_lstm_step`) are suggested only for a
    private name, from the module itself."""
    *path, name = callee
    searched = module if not path or ".".join(path) == module.name else \
        module.imports.get(".".join(path))
    if searched is None:
        notes = [f"no module '{'.'.join(path)}' is imported here"]
        if ".".join(callee) in stdlib_operators_named(name, stdlib):
            notes.append(f"add 'import {'.'.join(path)};'")
        return notes
    if not path:
        exact = _exact_elsewhere(name, module, stdlib)
        if exact:
            return exact
    hint = _closest_operators(name, _offers(path, searched, module, stdlib))
    return [hint] if hint else []


def _exact_elsewhere(name: str, module: LoadedModule, stdlib: Path) -> list[str]:
    """The note for an unqualified `name` that an imported or a standard module defines."""
    found = [f"{m.name}.{name}" for m in module.imports.values()
             if any(d.name == name for d in m.tree.definitions)]
    if found:
        return ["did you mean " + " or ".join(found) + "? (operators of an imported module are "
                "invoked by their qualified name)"]
    found = stdlib_operators_named(name, stdlib)
    if found:
        modules = sorted({f.rpartition(".")[0] for f in found})
        return ["did you mean " + " or ".join(found) + "? (add "
                + " or ".join(f"'import {m};'" for m in modules) + ")"]
    return []


def _offers(path: list[str], searched: LoadedModule, module: LoadedModule,
            stdlib: Path) -> list[tuple[str, str, bool]]:
    """Every operator a did-you-mean may offer: (bare name, how the user would write it,
    whether it is in the module searched) — the module searched as the user qualified it, the
    module itself unqualified, imported and standard modules by their qualified names; the
    private names of the module itself only."""
    offers: list[tuple[str, str, bool]] = []
    seen: set[str] = set()

    def offer(qualifier: str, names: list[str], own: bool, private_ok: bool) -> None:
        for bare in names:
            written = f"{qualifier}.{bare}" if qualifier else bare
            if (private_ok or not is_private(bare)) and written not in seen:
                seen.add(written)
                offers.append((bare, written, own))
    offer(".".join(path), [d.name for d in searched.tree.definitions], True,
          searched is module)
    if searched is not module:
        offer("", [d.name for d in module.tree.definitions], False, True)
    for qualifier, imported in module.imports.items():
        offer(qualifier, [d.name for d in imported.tree.definitions], False, False)
    for qualifier, names in stdlib_operator_names(stdlib).items():
        if qualifier not in module.imports and qualifier != module.name:
            offer(qualifier, names, False, False)
    return offers


def _closest_operators(name: str, offers: list[tuple[str, str, bool]]) -> str | None:
    """`did you mean a or b?` for the (at most three) operators closest to `name`, closest
    first, as difflib.get_close_matches scores them (at least 0.6). A name of another module
    than the one searched is offered only when it is closer than every name there
    (`math.sofmax` → `nn.softmax`, but `nn.rleu` → `nn.relu`, not also `ocannl.relu`); a
    private name only for a private name."""
    import difflib  # only for a mistake (start-up time)

    def score(bare: str) -> float:
        return difflib.SequenceMatcher(None, bare, name).ratio()
    scored = [(score(bare), written, own) for bare, written, own in offers
              if is_private(name) or not is_private(bare)]
    scored = [entry for entry in scored if entry[0] >= 0.6]
    best_own = max((s for s, _, own in scored if own), default=0.0)
    chosen = sorted((entry for entry in scored if entry[2] or entry[0] > best_own),
                    key=lambda entry: (-entry[0], not entry[2]))[:3]
    return "did you mean " + " or ".join(w for _, w, _ in chosen) + "?" if chosen else None


# The bundled standard library, loaded once per process when a body-less operator needs it: at
# most one entry per bundled module (a name that is none is not kept).
_BUNDLED: dict[str, LoadedModule] = {}


def bundled_definition(module: str, name: str) -> tuple[ast.OperatorDef, LoadedModule] | None:
    """refinterp's own definition of operator `module.name` in the bundled standard library,
    if it has a body (@lower or @compose); else None. This is what runs a body-less
    declaration of another standard library (`--stdlib`, e.g. the Khronos `image.sknd`
    declares `_cubic_grid_sample` without a body) when no intrinsic carries its name
    (docs/semantics.md, "Body-less operators")."""
    if module not in _BUNDLED:
        path = stdlib_module_files().get(module)
        if path is None:
            return None
        _BUNDLED[module] = Loader().load(path).modules[-1]  # the module: loaded after its imports
    loaded = _BUNDLED[module]
    for definition in loaded.tree.definitions:
        if definition.name == name and (definition.block("lower") is not None or
                                        definition.block("compose") is not None):
            return definition, loaded
    return None


def interface_differences(declared: ast.OperatorDef, bundled: ast.OperatorDef) -> list[str]:
    """How the interface of `bundled` differs from `declared`: the names, in order, of the
    generic types, attributes, inputs and outputs (empty if they are the same)."""
    differences = []
    for block in ("dtype", "attrib", "input", "output"):
        names = [[d.name for d in (definition.block(block).entries
                                   if definition.block(block) else ())]
                 for definition in (declared, bundled)]
        if names[0] != names[1]:
            differences.append(f"@{block} declares {', '.join(names[0]) or 'nothing'} here and "
                               f"{', '.join(names[1]) or 'nothing'} in refinterp's module")
    return differences
