"""The layout of refinterp/lower/ (docs/architecture.md "The tree"): the definition
(`reference`) imports no accelerator; what every engine shares (`plan`, `common`) imports no
engine; the compiled engine does not import the vector engine; only `engines` sees them all.
And one refusal: `Refused` is the only exception that means "this engine cannot run this
formula here"."""

from __future__ import annotations

import ast
from pathlib import Path

from refinterp.lower import common
from refinterp.numeric import array_rules
from testsupport.paths import REPO_ROOT

LOWER = REPO_ROOT / "refinterp" / "lower"

# module (relative to refinterp.lower) -> the parts of refinterp.lower it may import
ALLOWED = {
    "plan": set(),
    "common": {"plan"},
    "reference": {"plan", "common"},
    "bounds": {"plan", "common", "reference"},
    "compiled": {"plan", "common", "reference", "compiled"},
    "vector": {"plan", "common", "compiled", "vector"},
    "engines": {"plan", "common", "reference", "compiled", "vector"},
}


def lower_imports(path: Path) -> set[str]:
    """The first component under refinterp.lower of every refinterp.lower module imported."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
            [a.name for a in node.names] if isinstance(node, ast.Import) else []
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["refinterp", "lower"] and len(parts) > 2:
                found.add(parts[2])
            elif parts == ["refinterp", "lower"] and isinstance(node, ast.ImportFrom):
                found.update(a.name for a in node.names)
    return found


def test_each_part_of_lower_imports_only_what_lies_below_it() -> None:
    wrong = []
    for path in sorted(LOWER.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        relative = path.relative_to(LOWER)
        part = relative.parts[0].removesuffix(".py")
        assert part in ALLOWED, f"{relative}: a new part of refinterp.lower, place it here"
        extra = lower_imports(path) - ALLOWED[part]
        if extra:
            wrong.append(f"{relative} imports {sorted(extra)}")
    assert not wrong, "\n".join(wrong)


def test_the_one_refusal_is_defined_where_numeric_raises_it() -> None:
    assert common.Refused is array_rules.Refused
    assert common.Refused("why").reason == "why"


# the exceptions of refinterp.lower that are no refusal, and why each is not
NOT_REFUSALS = {
    "_Skip",         # reference.py: a guarded index skips the iteration (the definition)
    "_NotAnIndex",   # reference.py: an index that is no int, reported at the index
    "OutOfRange",    # compiled/engine.py: raised by generated code, becomes E0501
    "IntOverflow",   # compiled/engine.py: raised by generated code, becomes E0502
}


def test_no_other_exception_class_in_lower() -> None:
    defined = set()
    for path in LOWER.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(base, ast.Name) and base.id == "Exception" for base in node.bases):
                defined.add(node.name)
    assert defined == NOT_REFUSALS
