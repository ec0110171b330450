"""``python -m symgraph.bench``: every benchmark runs as docs/benchmarks.md says, from any
directory, on a CPU, and writes its JSON (device, date, commit) and a plot. Timings are
never asserted."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"


def _quick_runs() -> list[str]:
    """The command lines of the doc's "Quick runs" block."""
    text = DOC.read_text(encoding="utf-8").split("## Quick runs", 1)[1]
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    return [line.strip() for line in block.splitlines() if line.strip()]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH="")  # nothing but the install finds symgraph
    return subprocess.run([sys.executable, "-m", "symgraph.bench", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_the_listing_names_every_suite(tmp_path):
    out = _run([], tmp_path)
    assert out.returncode == 0, out.stderr
    names = [line.split()[0] for line in out.stdout.splitlines()]
    files = sorted(p.stem[len("bench_"):] for p in (ROOT / "benchmarks").glob("bench_*.py"))
    assert sorted(names) == files


def test_the_doc_has_a_quick_run_for_every_suite():
    suites = {shlex.split(line)[3] for line in _quick_runs()}
    files = {p.stem[len("bench_"):] for p in (ROOT / "benchmarks").glob("bench_*.py")}
    assert suites == files


@pytest.mark.parametrize("line", _quick_runs(), ids=lambda line: line.split()[3])
def test_each_documented_run_writes_json_and_a_plot(line, tmp_path):
    argv = shlex.split(line)
    assert argv[:3] == ["python", "-m", "symgraph.bench"]
    suite = argv[3]
    out = _run([*argv[3:], "--results", str(tmp_path / "results")], tmp_path)
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-3000:])
    result = json.loads((tmp_path / "results" / f"{suite}_cpu.json").read_text())
    assert {"device", "date", "commit"} <= set(result)
    assert re.fullmatch(r"[0-9a-f]{7,}", result["commit"]), result["commit"]
    png = tmp_path / "results" / f"{suite}_cpu.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if suite == "kernels":  # the interpreted kernels were checked against their references
        assert all(row["check"]["ok"] for row in result["rows"]), result["rows"]


def test_an_unknown_suite_is_an_error_naming_the_suites(tmp_path):
    out = _run(["nope"], tmp_path)
    assert out.returncode == 2 and "no suite 'nope'; the suites are" in out.stderr
