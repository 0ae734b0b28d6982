"""The package's rings point one way (refinterp/__init__.py): a module imports from its own
ring and the rings below, never above; `syntax` and `numeric` (both ring 1) do not import each
other. Checked on every `import refinterp...` / `from refinterp... import` in refinterp/."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "refinterp"
RING = {"core": 0, "syntax": 1, "numeric": 1, "language": 2, "lower": 3, "run": 4}
TOP = 5  # api, io, signature, cli, __main__


def ring_of(module: str) -> tuple[int, str]:
    """The ring and the package of a dotted module name inside refinterp."""
    parts = module.split(".")
    package = parts[1] if len(parts) > 1 else ""
    return RING.get(package, TOP), package


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
            if target_ring > ring or (target_ring == ring and target_package != package
                                      and ring < TOP):
                wrong.append(f"{module} (ring {ring}) imports {target} (ring {target_ring})")
    assert not wrong, "\n".join(wrong)


def test_every_package_says_its_job_and_what_it_may_import() -> None:
    for package in RING:
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
