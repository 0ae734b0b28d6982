"""The scripts of tools/ loaded as modules, for their tests."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from testsupport.paths import REPO_ROOT

TOOLS = REPO_ROOT / "tools"


def load_tool(name: str) -> ModuleType:
    """tools/<name>.py as the module `name`."""
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module
