"""Session set-up shared by spec_tests/ and tests/: refinterp's disk cache of parsed library
modules (docs/performance.md "Start-up") goes to a folder of the system's temporary
directory, never to the user's home. A REFINTERP_CACHE_DIR already set is kept."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_USER = getattr(os, "getuid", lambda: 0)()
os.environ.setdefault("REFINTERP_CACHE_DIR",
                      str(Path(tempfile.gettempdir()) / f"refinterp-test-cache-{_USER}"))
