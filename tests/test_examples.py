"""The examples of ``examples/``: every quick run examples/README.md documents runs as
written on a CPU (from a scratch directory, the scripts addressed in the checkout) and
reports what it promises."""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "examples" / "README.md"
# what each run must print (the examples' own checks of their result)
EXPECT = {
    "symgraph.examples.train_mlp": r"reloaded model gives the same predictions: True",
    "examples/image_classifier.py": r"validation accuracy 0\.\d+",
    "examples/gluon_classifier.py": r"validation accuracy 0\.[5-9]",
    "examples/distributed.py": r"worker 0 of 2: accuracy on all the data",
    "examples/export_model.py": r"onnx: max abs difference from the executor \d",
}


def _quick_runs() -> list[str]:
    text = README.read_text(encoding="utf-8").split("Quick runs", 1)[1]
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    return [line.strip() for line in block.splitlines() if line.strip()]


def test_every_example_has_a_quick_run():
    runs = " ".join(_quick_runs())
    scripts = [f"examples/{p.name}" for p in (ROOT / "examples").glob("*.py")]
    assert scripts and all(s in runs for s in scripts)
    assert set(EXPECT) == {next(w for w in shlex.split(line) if w in EXPECT)
                           for line in _quick_runs()}


@pytest.mark.parametrize("line", _quick_runs(), ids=lambda line: line.split()[-1]
                         if line.split()[-1].endswith(".py") else line.split()[2])
def test_each_quick_run_works_as_documented(line, tmp_path):
    argv = shlex.split(line)
    assert argv[0] == "python"
    argv = [sys.executable] + [str(ROOT / a) if a.startswith("examples/") else a
                               for a in argv[1:]]
    out = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-3000:])
    key = next(w for w in shlex.split(line) if w in EXPECT)
    assert re.search(EXPECT[key], out.stdout), out.stdout[-2000:]
