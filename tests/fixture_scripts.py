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


def assert_nested_close(got, want, where: str = "result", rel: float = 1e-6,
                        abs_tol: float = 1e-12) -> None:
    """Recorded JSON-like results (dicts, lists, numbers, strings) equal; floats to ``rel``
    and ``abs_tol`` (pytest's ``approx`` no longer compares nested containers)."""
    import pytest
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), (where, got, want)
        for key in want:
            assert_nested_close(got[key], want[key], f"{where}[{key!r}]", rel, abs_tol)
    elif isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), (where, got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert_nested_close(g, w, f"{where}[{i}]", rel, abs_tol)
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=rel, abs=abs_tol), (where, got, want)
    else:
        assert got == want, (where, got, want)
