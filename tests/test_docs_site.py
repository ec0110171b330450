"""The documentation site: it builds with MkDocs in strict mode (any warning fails), its
support matrix is generated from the code, and the Python blocks of the getting-started
page, the migration guide and the tutorials run as written."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["index.md", "migration.md", "tutorials/symbolic.md", "tutorials/bucketing.md"]


def _matrix():
    spec = importlib.util.spec_from_file_location(
        "support_matrix", ROOT / "tools" / "support_matrix" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_site_builds_without_a_warning(tmp_path):
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                          str(tmp_path / "site"), "--config-file", str(ROOT / "mkdocs.yml")],
                         capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert out.returncode == 0, out.stderr[-3000:]
    assert "WARNING" not in out.stderr, out.stderr[-3000:]
    support = (tmp_path / "site" / "support" / "index.html").read_text(encoding="utf-8")
    assert "<code>mxnet.rtc</code>" in support and "runtime CUDA compilation" in support
    assert "<!-- support-matrix -->" not in support
    reference = (tmp_path / "site" / "reference" / "symbol" / "index.html").read_text()
    assert "simple_bind" in reference  # the API reference comes from the docstrings
    assert not (tmp_path / "site" / "status").exists()  # the work log stays out


def test_the_support_matrix_comes_from_the_code():
    matrix = _matrix()
    modules = {r["name"]: r for r in matrix.module_rows()}
    assert modules["mxnet.symbol"]["status"] == "supported"
    assert modules["mxnet.contrib.ndarray"]["status"] == "supported"
    assert modules["mxnet.rtc"]["status"] == "not supported"
    assert "runtime CUDA compilation" in modules["mxnet.rtc"]["note"]
    ops = {r["name"]: r for r in matrix.operator_rows()}
    assert ops["FullyConnected"]["status"] == "supported"
    assert ops["RNN"]["status"] == "partial" and "projection_size" in ops["RNN"]["note"]
    quantized = [r for n, r in ops.items() if "quantize" in n]
    assert quantized and all(r["status"] == "not supported" for r in quantized)
    assert all(r["note"] for r in ops.values() if r["status"] != "supported")
    assert "reason missing" not in matrix.markdown()


def _python_blocks(page: str) -> str:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return "\n\n".join(re.findall(r"^ *```python\n(.*?)^ *```", text, re.S | re.M))


@pytest.mark.parametrize("page", PAGES)
def test_the_code_of_each_page_runs_as_written(page, tmp_path):
    code = _python_blocks(page)
    assert code.strip(), f"{page} has no Python block"
    script = tmp_path / "page.py"
    script.write_text(code, encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, (page, out.stdout[-2000:], out.stderr[-3000:])
