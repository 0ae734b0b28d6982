"""Module loading (spec §2.15): search order, nested modules, model folders, cycles, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from refinterp.core.diagnostics import ModuleDiagnostic
from refinterp.language.modules import STDLIB_DIR, Loader


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_import_resolves_next_to_the_importing_file(tmp_path: Path) -> None:
    write(tmp_path / "A.sknd", "operator op1 { }\n")
    main = write(tmp_path / "B.sknd", "import A;\noperator op2 { }\n")
    program = Loader().load(main)
    assert [m.name for m in program.modules] == ["A", "B"]
    assert program.main.imports["A"].tree.definitions[0].name == "op1"


def test_nested_module_by_subfolder_and_nnef_extension(tmp_path: Path) -> None:
    write(tmp_path / "custom" / "ops.nnef", "operator f { }\n")
    main = write(tmp_path / "main.sknd", "import custom.ops;\ngraph G { }\n")
    program = Loader().load(main)
    assert program.main.imports["custom.ops"].path.name == "ops.nnef"


def test_sknd_is_preferred_over_nnef(tmp_path: Path) -> None:
    write(tmp_path / "m.nnef", "operator nnef_version { }\n")
    write(tmp_path / "m.sknd", "operator sknd_version { }\n")
    main = write(tmp_path / "x.sknd", "import m;\n")
    assert Loader().load(main).main.imports["m"].path.suffix == ".sknd"


def test_search_path_comes_after_the_local_folder(tmp_path: Path) -> None:
    write(tmp_path / "lib" / "m.sknd", "operator from_lib { }\n")
    write(tmp_path / "app" / "m.sknd", "operator local { }\n")
    main = write(tmp_path / "app" / "x.sknd", "import m;\n")
    program = Loader([tmp_path / "lib"]).load(main)
    assert program.main.imports["m"].tree.definitions[0].name == "local"
    (tmp_path / "app" / "m.sknd").unlink()
    program = Loader([tmp_path / "lib"]).load(main)
    assert program.main.imports["m"].tree.definitions[0].name == "from_lib"


def test_bundled_stdlib_is_searched_last(tmp_path: Path) -> None:
    modules = sorted(p.stem for p in STDLIB_DIR.glob("*.sknd"))
    if not modules:
        pytest.skip("no bundled stdlib modules yet")
    main = write(tmp_path / "x.sknd", f"import {modules[0]};\n")
    assert Loader().load(main).main.imports[modules[0]].path.parent == STDLIB_DIR


def test_model_folder_means_its_main_module(tmp_path: Path) -> None:
    write(tmp_path / "model" / "main.sknd", "graph G { }\n")
    assert Loader().load(tmp_path / "model").main.tree.definitions[0].name == "G"


def test_each_module_is_loaded_once(tmp_path: Path) -> None:
    write(tmp_path / "c.sknd", "operator c { }\n")
    write(tmp_path / "a.sknd", "import c;\n")
    write(tmp_path / "b.sknd", "import c;\n")
    main = write(tmp_path / "main.sknd", "import a, b;\n")
    program = Loader().load(main)
    assert [m.name for m in program.modules] == ["c", "a", "b", "main"]
    assert program.main.imports["a"].imports["c"] is program.main.imports["b"].imports["c"]


def test_missing_module_says_where_it_looked(tmp_path: Path) -> None:
    main = write(tmp_path / "x.sknd", "operator f { }\nimport nowhere;\n")
    with pytest.raises(ModuleDiagnostic) as info:
        Loader([tmp_path / "extra"]).load(main)
    diag = info.value
    assert "module 'nowhere' not found" in diag.message
    assert (diag.span.line, diag.span.col) == (2, 8)
    assert str(tmp_path / "extra") in diag.notes[0] and str(STDLIB_DIR) in diag.notes[0]


def test_import_cycle_is_reported_at_the_closing_import(tmp_path: Path) -> None:
    write(tmp_path / "a.sknd", "import b;\n")
    write(tmp_path / "b.sknd", "\nimport a;\n")
    with pytest.raises(ModuleDiagnostic) as info:
        Loader().load(tmp_path / "a.sknd")
    assert "import cycle: a.sknd -> b.sknd -> a.sknd" in info.value.message
    assert info.value.span.path.endswith("b.sknd") and info.value.span.line == 2


def test_imported_module_must_not_define_graphs(tmp_path: Path) -> None:
    write(tmp_path / "m.sknd", "graph G { }\n")
    main = write(tmp_path / "main.sknd", "import m;\n")
    with pytest.raises(ModuleDiagnostic) as info:
        Loader().load(main)
    assert "defines graph 'G'" in info.value.message


def test_syntax_error_in_an_imported_module_names_that_file(tmp_path: Path) -> None:
    write(tmp_path / "m.sknd", "operator f {\n  @bad { }\n}\n")
    main = write(tmp_path / "main.sknd", "import m;\n")
    with pytest.raises(Exception) as info:
        Loader().load(main)
    assert info.value.span.path.endswith("m.sknd") and info.value.span.line == 2


def test_missing_file_and_empty_model_folder(tmp_path: Path) -> None:
    with pytest.raises(ModuleDiagnostic):
        Loader().load(tmp_path / "absent.sknd")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModuleDiagnostic) as info:
        Loader().load(tmp_path / "empty")
    assert "main.sknd" in info.value.message


def test_byte_order_mark_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "bom.sknd"
    path.write_bytes("\ufeffoperator f { }\n".encode("utf-8"))
    assert Loader().load(path).main.tree.definitions[0].name == "f"
