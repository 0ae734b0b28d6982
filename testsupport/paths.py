"""Where the tests find the repository's own files (the golden suites, the spec corpus, the
package's sources), wherever a test module lives below tests/."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
