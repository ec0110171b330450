"""Run MXNet 1.9.1's own Python unit tests against symgraph and tabulate the results.

Usage (from the repository root, in a virtualenv with symgraph and the harness's test
dependencies: ``pip install -e ".[test]" scipy``)::

    git clone --depth 1 --branch 1.9.1 https://github.com/apache/mxnet /tmp/mxnet
    python tools/mxnet_tests/run.py --mxnet-src /tmp/mxnet

Each test file runs in its own pytest process under ``python -m symgraph run`` (so
``import mxnet`` is symgraph), in a scratch folder holding synthetic MNIST, CIFAR-10 and
test-image files (``datasets.py``; nothing downloads), with a fixed ``MXNET_MODULE_SEED``
so MXNet's ``setup_module``/``with_seed`` seeding is reproducible. Every failure gets a
category from its exception (see :func:`categorize`). Results go to ``--out`` (JSON with
date and commits) and ``--table`` (a Markdown page). MXNet's files are read from
``--mxnet-src``, never copied here.
"""
from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import datasets  # the harness's own folder

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MXNET_COMMIT = "3f8f3be9987e259491ddc5a78aa9c6903e0b21e3"  # apache/mxnet tag 1.9.1
MODULE_SEED = "1234"

UNITTEST_FILES = [
    "test_symbol.py", "test_executor.py", "test_infer_shape.py", "test_infer_type.py",
    "test_attr.py", "test_module.py", "test_model_parallel.py", "test_multi_device_exec.py",
    "test_kvstore.py", "test_kvstore_custom.py", "test_optimizer.py", "test_rnn.py",
    "test_metric.py", "test_init.py", "test_gluon_trainer.py", "test_ndarray.py",
    "test_autograd.py", "test_random.py", "test_loss.py", "test_gluon.py", "test_gluon_rnn.py",
]
TRAIN_FILES = ["test_autograd.py", "test_bucketing.py", "test_conv.py", "test_dtype.py",
               "test_mlp.py", "test_resnet_aug.py", "test_sparse_fm.py"]

# tests that fail against MXNet 1.9.1 itself in its own environment (numpy 1.23): recorded
# by ``--baseline``, listed but left out of the share
FAILS_ON_MXNET = "fails on MXNet 1.9.1 too"
BASELINE = HERE / "baseline.json"
CATEGORIES = ("missing name", "missing op", "numeric mismatch", "error-type mismatch",
              "out of scope", "behaviour mismatch", "error in symgraph", "timeout or crash",
              FAILS_ON_MXNET)

_NUMERIC_WORDS = ("almost equal", "not close", "mismatch", "arrays are not", "allclose",
                  "not equal", "error:", "max error", "rtol", "atol")


def categorize(rec: dict) -> str:
    """A failure's category, from its exception type, message and origin."""
    exc, mro = rec.get("exc_type", ""), rec.get("exc_mro", [])
    msg = rec.get("message", "")
    low = msg.lower()
    if "OpNotFoundError" in mro:
        return "missing op"
    if "UnsupportedError" in mro:
        return "out of scope"
    if exc == "collection":
        if "UnsupportedError" in msg:
            return "out of scope"
        if "has no attribute" in msg or "cannot import name" in msg or "No module named" in msg:
            return "missing name"
        return "error in symgraph"
    if "Timeout" in exc or "crash" in exc:
        return "timeout or crash"
    if "AttributeError" in mro and ("has no attribute" in msg or "object has no" in msg):
        return "missing name"
    if {"ImportError", "ModuleNotFoundError"} & set(mro) or "NameError" in mro:
        return "missing name"
    if "TypeError" in mro and ("unexpected keyword" in msg or "positional argument" in msg):
        return "missing name"
    if "did not raise" in low or "DID NOT RAISE" in msg:
        return "error-type mismatch"
    if "AssertionError" in mro:
        return "numeric mismatch" if any(w in low for w in _NUMERIC_WORDS) else \
            "behaviour mismatch"
    return "error in symgraph"


def _count_tests(path: Path) -> int:
    """Module-level ``test_*`` functions (a floor when a file cannot even be collected)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sum(1 for node in tree.body if isinstance(node, ast.FunctionDef)
               and node.name.startswith("test_"))


def write_mnist(folder: Path, n_train: int = 60000, n_test: int = 10000, seed: int = 0) -> None:
    """Learnable synthetic MNIST in the idx ubyte format (MNIST's counts), under
    ``folder/data``."""
    import numpy as np
    rng = np.random.default_rng(seed)
    templates = rng.random((10, 28, 28)) < 0.25
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        labels = rng.integers(0, 10, n).astype(np.uint8)
        noise = rng.random((n, 28, 28)) < 0.08
        images = ((templates[labels] ^ noise) * rng.integers(150, 256, (n, 28, 28)))
        _idx_write(data / f"{prefix}-images-idx3-ubyte", images.astype(np.uint8), 0x803)
        _idx_write(data / f"{prefix}-labels-idx1-ubyte", labels, 0x801)


def _idx_write(path: Path, array, magic: int) -> None:
    header = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in array.shape)
    path.write_bytes(header + array.tobytes())


def _pytest_command(test: Path, extra: list[str], oracle: str | None = None) -> list[str]:
    """pytest on ``test`` under symgraph's alias, or under ``oracle`` (a Python with the real
    MXNet 1.9.1) for the baseline."""
    runner = [oracle, "-m"] if oracle else [sys.executable, "-m", "symgraph", "run",
                                            "--shadow", "-m"]
    return [*runner, "pytest", str(test), "-c", str(HERE / "pytest.ini"),
            "--rootdir", str(test.parent), "-p", "plugin", "-p", "no:cacheprovider", "-q",
            *extra]


def _environment(report: Path, oracle: str | None = None) -> dict:
    env = dict(os.environ)
    paths = [str(HERE), str(HERE / "shims")] + ([] if oracle else [str(ROOT)])
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(MXNET_HARNESS_REPORT=str(report), MXNET_MODULE_SEED=MODULE_SEED,
               MXNET_HOME=str(report.parent), PYTHONHASHSEED="0", OMP_NUM_THREADS="1")
    return env


@dataclass(frozen=True)
class RunOptions:
    """How each file runs: per-test timeout, a ``-k`` selection, and the Python (None:
    symgraph under the alias; a path: the real MXNet, for the baseline)."""

    timeout: int = 300
    keyword: str | None = None
    oracle: str | None = None


def run_file(test: Path, scratch: Path, opts: RunOptions) -> dict:
    """Collect, then run one test file in its own processes; its row of the table."""
    work = scratch / f"{test.parent.name}_{test.stem}"
    work.mkdir(parents=True, exist_ok=True)
    (work / "data").exists() or (work / "data").symlink_to(scratch / "data")
    report = work / "report.jsonl"
    report.unlink(missing_ok=True)
    env = _environment(report, opts.oracle)
    select = ["-k", opts.keyword] if opts.keyword else []
    listed = subprocess.run(_pytest_command(test, ["--collect-only", *select], opts.oracle),
                            cwd=work, env=env, capture_output=True, text=True, timeout=600)
    ids = [line for line in listed.stdout.splitlines() if "::" in line]
    report.unlink(missing_ok=True)
    if opts.keyword and not ids:
        return {"file": f"{test.parent.name}/{test.name}", "collected": 0, "passed": 0,
                "skipped": 0, "failed": 0, "failures": []}
    try:
        proc = subprocess.run(
            _pytest_command(test, [f"--timeout={opts.timeout}", *select], opts.oracle),
            cwd=work, env=env, capture_output=True, text=True, timeout=3600)
        tail = proc.stdout[-3000:] + proc.stderr[-2000:]
    except subprocess.TimeoutExpired:
        tail = "the file's pytest process ran past an hour"
    return _summarize(test, ids, report, tail)


def load_baseline() -> dict[str, set[str]]:
    """Tests that fail on MXNet 1.9.1 itself, by file (``baseline.json``; empty if absent)."""
    if not BASELINE.exists():
        return {}
    doc = json.loads(BASELINE.read_text(encoding="utf-8"))
    return {name: set(tests) for name, tests in doc["files"].items()}


def mark_baseline(row: dict, known_bad: set[str]) -> dict:
    """Re-categorise a file row's failures that MXNet 1.9.1 fails as well; they leave the
    share's denominator (``mxnet_fails``)."""
    for failure in row["failures"]:
        if failure["test"] in known_bad:
            failure["category"] = FAILS_ON_MXNET
    row["mxnet_fails"] = sum(1 for f in row["failures"] if f["category"] == FAILS_ON_MXNET)
    return row


def _summarize(test: Path, ids: list[str], report: Path, tail: str) -> dict:
    records = [json.loads(line) for line in report.read_text().splitlines()] \
        if report.exists() else []
    outcome: dict[str, str] = {}
    failures: dict[str, dict] = {}
    for rec in records:
        name = rec["test"].split("::", 1)[-1]
        if rec["outcome"] == "failed":
            failures.setdefault(name, rec)
            outcome[name] = "failed"
        elif outcome.get(name) != "failed":
            outcome[name] = rec["outcome"]
    for nodeid in ids:  # tests the process never reported on (it crashed or hung)
        name = nodeid.split("::", 1)[-1]
        if name not in outcome:
            outcome[name] = "failed"
            failures[name] = {"exc_type": "crash", "exc_mro": [], "message": tail[-600:]}
    collected = max(len(ids), len(outcome))
    if "<collection>" in failures or test.name in failures or not ids:
        collected = max(collected, _count_tests(test))
    rows = [{"test": name, "category": categorize(rec), "exc_type": rec.get("exc_type", ""),
             "message": rec.get("message", "")[:300], "origin": rec.get("origin", "")}
            for name, rec in sorted(failures.items())]
    passed = sum(1 for v in outcome.values() if v == "passed")
    skipped = sum(1 for v in outcome.values() if v == "skipped")
    return {"file": f"{test.parent.name}/{test.name}", "collected": collected,
            "passed": passed, "skipped": skipped, "failed": collected - passed - skipped,
            "failures": rows}


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip()


def _versions() -> dict:
    import numpy
    import torch
    return {"python": sys.version.split()[0], "torch": torch.__version__,
            "numpy": numpy.__version__}


def write_table(result: dict, path: Path, json_name: str = "tools/mxnet_tests/results.json"
                ) -> None:
    """The Markdown page: totals, one row per file, failures by category."""
    files = result["files"]
    tot = {k: sum(f.get(k, 0) for f in files)
           for k in ("collected", "passed", "failed", "skipped", "mxnet_fails")}
    share = tot["passed"] / max(1, tot["collected"] - tot["skipped"] - tot["mxnet_fails"])
    lines = [
        "# MXNet 1.9.1's unit tests on symgraph", "",
        f"Run {result['date']} on symgraph {result['commit'][:10]} (MXNet tests at "
        f"{MXNET_COMMIT[:10]}, {result['versions']}) by `tools/mxnet_tests/run.py`; the JSON "
        f"is `{json_name}`.", "",
        f"**{tot['passed']} of {tot['collected']} collected tests pass "
        f"({tot['skipped']} skipped, {tot['mxnet_fails']} fail on MXNet 1.9.1 itself; "
        f"{100 * share:.1f}% of the rest).**", "",
        "A test that fails against the real MXNet 1.9.1 in its own environment (numpy "
        "1.23; `run.py --baseline`, `tools/mxnet_tests/baseline.json`) is listed as "
        f"\"{FAILS_ON_MXNET}\" and left out of the share.", "",
        "| file | collected | passed | failed | skipped | failures by category |",
        "| --- | ---: | ---: | ---: | ---: | --- |"]
    for f in files:
        cats: dict[str, int] = {}
        for row in f["failures"]:
            cats[row["category"]] = cats.get(row["category"], 0) + 1
        text = ", ".join(f"{k} {v}" for k, v in sorted(cats.items()))
        lines.append(f"| {f['file']} | {f['collected']} | {f['passed']} | {f['failed']} | "
                     f"{f['skipped']} | {text} |")
    lines += ["", "## Failures", ""]
    for f in files:
        for row in f["failures"]:
            msg = row["message"].replace("\n", " ").replace("|", "\\|")[:160]
            lines.append(f"- `{f['file']}::{row['test']}` — {row['category']}: "
                         f"`{row['exc_type'].rsplit('.', 1)[-1]}` {msg}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mxnet-src", required=True, type=Path,
                        help="a checkout of apache/mxnet at tag 1.9.1")
    parser.add_argument("--files", nargs="*",
                        help="unittest/NAME.py, train/NAME.py or python-pytest/onnx/NAME.py")
    parser.add_argument("--out", type=Path, default=HERE / "results.json")
    parser.add_argument("--table", type=Path, default=ROOT / "docs" / "mxnet_tests.md")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per test")
    parser.add_argument("--jobs", type=int, default=2, help="files run at once")
    parser.add_argument("-k", dest="keyword", help="only the tests this pytest -k expression "
                        "selects (a look at a few tests; the table is then partial)")
    parser.add_argument("--baseline", metavar="PYTHON",
                        help="run the files against the real MXNet 1.9.1 of this Python "
                        "(numpy < 1.24, pytest, pytest-timeout, scipy) and record the tests "
                        "that fail there in baseline.json")
    return parser


def _test_path(tests: Path, name: str) -> Path:
    """``unittest/X.py`` and ``train/X.py`` under ``tests/python``; ``python-pytest/...``
    (the ONNX tests) under ``tests``."""
    return tests / name if name.startswith("python-pytest/") else tests / "python" / name


def run_files(args, names: list[str], oracle: str | None = None) -> list[dict]:
    """Every named file's row, ``args.jobs`` files at a time, in one scratch folder."""
    tests = args.mxnet_src / "tests"
    opts = RunOptions(args.timeout, args.keyword, oracle)
    scratch = Path(tempfile.mkdtemp(prefix="mxnet_tests_"))
    try:
        write_mnist(scratch)
        datasets.write_test_images(scratch)
        if any(name.endswith("test_io.py") for name in names):
            datasets.write_cifar10(scratch)  # 16 s: only for the test that reads it
            datasets.write_news20(scratch)
        with ThreadPoolExecutor(args.jobs) as pool:
            return list(pool.map(lambda n: run_file(_test_path(tests, n), scratch, opts),
                                  names))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def write_baseline(files: list[dict], oracle: str) -> None:
    """Record (merging with earlier runs) the tests each file fails on the real MXNet."""
    doc = json.loads(BASELINE.read_text(encoding="utf-8")) if BASELINE.exists() else \
        {"files": {}}
    version = subprocess.run([oracle, "-c", "import mxnet, numpy; print(mxnet.__version__, "
                              "numpy.__version__)"], capture_output=True, text=True)
    doc.update(date=datetime.date.today().isoformat(), mxnet_commit=MXNET_COMMIT,
               oracle=version.stdout.strip())
    for f in files:  # a test MXNet's process never reported on (it crashed) proves nothing
        doc["files"][f["file"]] = sorted(r["test"] for r in f["failures"]
                                         if r["exc_type"] != "crash")
    BASELINE.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    canonical = [f"unittest/{f}" for f in UNITTEST_FILES] + [f"train/{f}" for f in TRAIN_FILES]
    names = args.files or canonical
    if args.baseline:
        files = run_files(args, names, args.baseline)
        write_baseline(files, args.baseline)
        for f in files:
            print(f"{f['file']:32s} MXNet fails {len(f['failures'])}: "
                  f"{' '.join(r['test'] for r in f['failures'])}")
        return 0
    known_bad = load_baseline()
    files = [mark_baseline(f, known_bad.get(f["file"], set()))
             for f in run_files(args, names)]
    result = {"date": datetime.date.today().isoformat(), "commit": _commit(),
              "mxnet_commit": MXNET_COMMIT, "module_seed": MODULE_SEED,
              "versions": _versions(), "files": files}
    if args.files and args.out.exists():  # a partial run updates the rows it ran
        old = json.loads(args.out.read_text())
        ran = {f["file"] for f in files}
        result["files"] = [f for f in old["files"] if f["file"] not in ran] + files
        result["files"].sort(key=lambda f: canonical.index(f["file"])
                             if f["file"] in canonical else len(canonical))
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    out = args.out.resolve()
    write_table(result, args.table,
                str(out.relative_to(ROOT)) if out.is_relative_to(ROOT) else str(args.out))
    for f in files:
        print(f"{f['file']:32s} {f['passed']:5d}/{f['collected']:<5d} failed {f['failed']} "
              f"(MXNet fails {f['mxnet_fails']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
