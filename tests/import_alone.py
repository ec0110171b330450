"""Checking that modules import on their own, as ``python -c "import symgraph.X"`` does in a
fresh interpreter: one subprocess imports each module after clearing every ``symgraph``
module from ``sys.modules`` (third-party packages stay loaded, so it stays fast)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_SCRIPT = r"""
import importlib, sys
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "symgraph" or m.startswith("symgraph.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as err:
        failed.append(f"{name}: {type(err).__name__}: {err}")
print("\n".join(failed))
"""


def failing_alone(names: list[str]) -> list[str]:
    """``"module: error"`` for each of ``names`` that fails to import alone."""
    result = subprocess.run([sys.executable, "-c", _SCRIPT, *names], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return [line for line in result.stdout.splitlines() if line]
