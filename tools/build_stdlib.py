#!/usr/bin/env python3
"""Build the standard library modules refinterp/stdlib/<module>.sknd from the spec corpus.

Usage: python tools/build_stdlib.py [--check]

Chapter 4 of the NNEF 2.0 draft assigns each section's operators to a module
("The following operators are defined in the layout module." etc.), see
SECTION_MODULES below.  This script concatenates the repaired chapter-4 corpus
files (spec_tests/corpus/4_*.sknd, in section order) of each module into one
module file, with a header saying it is generated, a comment line naming the
corpus file before each operator, and an `import` statement for every other
standard module the operators refer to by qualified name (e.g. `math.add`).

Left out: wrapped fragments (operators named example_*), and an operator whose
name is already defined earlier in the same module (reported on stderr).
With --check nothing is written; the exit status is 1 if a module file is
missing or differs from what would be generated.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "spec_tests" / "corpus"
STDLIB = ROOT / "refinterp" / "stdlib"

# Chapter 4: section number prefix -> module ("defined in the <module> module").
SECTION_MODULES = {
    "4_1": "layout",  # 4.1 Data Layout Operators
    "4_2": "math",    # 4.2 Basic Math Operators
    "4_3": "linalg",  # 4.3 Linear Algebra Operators
    "4_4": "nn",      # 4.4 Neural Network Operators
    "4_5": "image",   # 4.5 Image Processing Operators
    "4_6": "quant",   # 4.6 Quantization Operators
    "4_7": "algo",    # 4.7 Algorithmic operators
}
OPERATOR = re.compile(r"^\s*(?:public\s+)?operator\s+(\w+)", re.M)
QUALIFIED = re.compile(r"\b(%s)\.\w" % "|".join(SECTION_MODULES.values()))


def code_only(text):
    """The text without comments and string literals (for finding references)."""
    return re.sub(r"#[^\n]*|\"[^\"\n]*\"|'[^'\n]*'", " ", text)


def section_key(path):
    """Sort key: the numeric section digits, then the block index."""
    return [int(p) for p in re.findall(r"\d+", path.stem)]


def build():
    """Return ({module: text}, [warnings])."""
    modules, warnings = {}, []
    for module in SECTION_MODULES.values():
        modules[module] = {"parts": [], "names": set(), "imports": set()}
    for path in sorted(CORPUS.glob("4_*.sknd"), key=section_key):
        module = SECTION_MODULES[path.name[:3]]
        text = path.read_text(encoding="utf-8").strip() + "\n"
        names = OPERATOR.findall(text)
        if not names or any(n.startswith("example_") for n in names):
            warnings.append(f"{path.name}: not a standard operator, left out")
            continue
        entry = modules[module]
        dup = [n for n in names if n in entry["names"]]
        if dup:
            warnings.append(f"{path.name}: {module}.{dup[0]} already defined, left out")
            continue
        entry["names"].update(names)
        entry["imports"].update(QUALIFIED.findall(code_only(text)))
        entry["parts"].append(f"# {path.relative_to(ROOT).as_posix()}\n{text}")
    out = {}
    for module, entry in modules.items():
        imports = sorted(entry["imports"] - {module})
        header = (f"# The SkriptND standard module '{module}' (NNEF 2.0 draft, chapter 4).\n"
                  "# Generated from the spec corpus by tools/build_stdlib.py -- do not edit;\n"
                  "# repair spec_tests/corpus/ and re-run the script instead.\n\n")
        head = "".join(f"import {m};\n" for m in imports) + ("\n" if imports else "")
        out[module] = header + head + "\n".join(entry["parts"])
    return out, warnings


def main(argv):
    check = argv == ["--check"]
    if argv and not check:
        sys.exit(__doc__)
    modules, warnings = build()
    for w in warnings:
        print("warning:", w, file=sys.stderr)
    stale = []
    for module, text in modules.items():
        path = STDLIB / f"{module}.sknd"
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        sys.exit(f"out of date: {', '.join(stale)} (run tools/build_stdlib.py)")
    if not check:
        print(f"wrote {len(modules)} modules to {STDLIB.relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
