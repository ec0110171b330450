"""Importing the fixture generator scripts (``tests/fixtures/<dir>/<name>.py``): they hold the
scenario code that MXNet 1.9.1 ran to write the fixtures, which the tests run again under
symgraph."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

FIXTURES = Path(__file__).parent / "fixtures"


def load(relative: str, root: Path = FIXTURES) -> ModuleType:
    """The script ``<root>/<relative>`` (``tests/fixtures`` by default) as a module
    (imported once per process)."""
    path = root / relative
    name = f"fixture_{root.name}_" + relative.replace("/", "_").removesuffix(".py")
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
