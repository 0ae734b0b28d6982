"""The package's rings point one way (refinterp/__init__.py, docs/architecture.md "The tree"):
a module imports from its own package and the rings below, never from its ring's other packages
nor from above (`syntax` and `numeric`, both ring 1, do not import each other; nor do `golden`,
`trace` and `einsum`, ring 7). The top of the house is ordered too: the front doors over the
interpreter (io, signature), the API, what is built on the API (golden fixtures, traces, einsum),
the harness, the harness's back ends and the command line, and `python -m refinterp`.
Checked on every `import refinterp...` / `from refinterp... import` in refinterp/."""

from __future__ import annotations

import ast
from pathlib import Path

from testsupport.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "refinterp"
RING = {"core": 0, "syntax": 1, "numeric": 1, "language": 2, "lower": 3, "run": 4,
        "io": 5, "signature": 5, "api": 6, "golden": 7, "trace": 7, "einsum": 7,
        "harness": 8, "backends": 9, "cli": 9, "__main__": 10}
# refinterp/__init__.py, the package's face, holds the version and imports nothing of refinterp
# (test_the_face_imports_nothing), so every module may read it: it stands below ring 0
FACE = -1


def ring_of(module: str) -> tuple[int, str]:
    """The ring and the package of a dotted module name inside refinterp."""
    parts = module.split(".")
    package = parts[1] if len(parts) > 1 else ""
    if package in ("", "__init__") or not (PACKAGE / package).exists() and not (
            PACKAGE / f"{package}.py").exists():  # the face or a name defined in it
        return FACE, ""
    assert package in RING, f"refinterp.{package} has no ring: add it to RING and the docs"
    return RING[package], package


def imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "refinterp":
                found.extend(f"refinterp.{a.name}" for a in node.names)
            elif node.module.startswith("refinterp."):
                found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(a.name for a in node.names if a.name.startswith("refinterp."))
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.append("<relative>")
    return found


def test_imports_are_absolute_and_point_down() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        ring, package = ring_of(module)
        for target in imports(path):
            if target == "<relative>":
                wrong.append(f"{module}: relative import (write refinterp.x.y)")
                continue
            target_ring, target_package = ring_of(target)
            if target_ring > ring or (target_ring == ring and target_package != package):
                wrong.append(f"{module} (ring {ring}) imports {target} (ring {target_ring})")
    assert not wrong, "\n".join(wrong)


def test_the_face_imports_nothing() -> None:
    assert imports(PACKAGE / "__init__.py") == []


def test_every_package_says_its_job_and_what_it_may_import() -> None:
    for package in (name for name in RING if (PACKAGE / name).is_dir()):
        doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text()))
        assert doc and "May import" in doc, package


def test_the_layering_test_sees_a_violation(tmp_path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from refinterp.run.compose import Executor\n")
    assert imports(bad) == ["refinterp.run.compose"]
    assert ring_of("refinterp.run.compose")[0] > ring_of("refinterp.language.expr")[0]


def test_bounded_cache_keeps_the_most_recently_used() -> None:
    from refinterp.core.cache import BoundedCache

    cache: BoundedCache[int] = BoundedCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recent
    cache.put("c", 3)
    assert cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3
    assert len(cache) == 2
