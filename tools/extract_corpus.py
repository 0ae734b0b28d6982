#!/usr/bin/env python3
"""Extract the fenced code blocks of the NNEF 2.0 / SkriptND spec text.

Usage: python tools/extract_corpus.py SPEC.txt SCRATCH_DIR

The spec is a lossy PDF-to-text extraction in which code blocks are fenced
by lines consisting of three back-ticks.  Every block is written verbatim
(no repairs) to SCRATCH_DIR, named after the most recent section heading
(a line like ``2.10.1. Control flow``) that precedes it:

    <section digits joined by _>_<slug of title>_<NN>.sknd

where NN counts the blocks within that section from 01.  An index file,
SCRATCH_DIR/index.tsv, lists file name, spec line of the opening fence,
section number and title.  The output is raw material: the spec corpus in
spec_tests/corpus/ is made from it by hand (merging page-split blocks,
repairing damage; see spec_tests/corpus/REPAIRS.md).  Never point
SCRATCH_DIR at the corpus itself.
"""
import re
import sys
from collections import Counter
from pathlib import Path

# "2.10.1. Control flow" -- a section number, a dot, a title starting with a
# capital letter, and no tab (the table of contents has tab + page number).
HEADING = re.compile(r"^(\d+(?:\.\d+)*)\.\s+([A-Z][^\t]*?)\s*$")
FENCE = "```"


def slug(title):
    return re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")


def extract(lines):
    """Yield (opening fence line number, section, title, block text)."""
    section, title = "0", "preamble"
    block, start = None, 0
    for num, line in enumerate(lines, 1):
        if line.strip() == FENCE:
            if block is None:
                block, start = [], num
            else:
                yield start, section, title, "".join(block)
                block = None
        elif block is not None:
            block.append(line)
        else:
            m = HEADING.match(line)
            if m:
                section, title = m.group(1), m.group(2)
    if block is not None:
        sys.exit(f"unterminated code block opened at line {start}")


def main(spec, outdir):
    lines = Path(spec).read_text(encoding="utf-8").splitlines(keepends=True)
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    counts, index = Counter(), []
    for start, section, title, text in extract(lines):
        counts[section] += 1
        name = f"{section.replace('.', '_')}_{slug(title)}_{counts[section]:02d}.sknd"
        (out / name).write_text(text, encoding="utf-8")
        index.append(f"{name}\t{start}\t{section}\t{title}\n")
    (out / "index.tsv").write_text("".join(index), encoding="utf-8")
    print(f"{len(index)} blocks written to {out}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
