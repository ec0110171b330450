"""Run MXNet 1.9.1's own example scripts, unchanged, on synthetic data: once on symgraph and
once on the real MXNet, and compare the accuracy (or output) each reaches.

Usage (from the repository root)::

    /work/venv/bin/python tools/mxnet_examples/run.py                # every example
    /work/venv/bin/python tools/mxnet_examples/run.py --only mnist_mlp custom_softmax

The scripts are exported with ``git archive`` from MXNet's repository at the 1.9.1 commit
(``--mxnet-git``) into a work folder (``--work``, under /tmp) and never edited. Each script
runs in its own copy of its folder, next to the synthetic files it would otherwise download
(:mod:`synth`), with ``OMP_NUM_THREADS=1``. symgraph runs through its ``mxnet`` import alias
(``symgraph/alias_path`` on ``PYTHONPATH``) under ``--python``; MXNet under ``--mxnet-python``
when that exists. ``shims/`` is first on both runs' path: it restores names newer Python and
NumPy removed (``time.clock``, ``np.int``, binary ``np.fromstring``) and stands in for numba,
memonger and requests (so nothing can reach the network). A symgraph run passes when it exits
0 and its metric is at most ``tol`` below MXNet's (arrays: within ``tol`` of MXNet's; traces:
a Chrome-trace file with events). Results go to ``--out`` (JSON) and ``--table`` (Markdown).
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from io import BytesIO
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import synth  # noqa: E402
from catalog import CI_SUBSET, EXAMPLES, Example  # noqa: E402

MXNET_COMMIT = "3f8f3be9987e259491ddc5a78aa9c6903e0b21e3"  # apache/mxnet tag 1.9.1
MXNET_GIT = Path("/work/.mirror/apache+mxnet/repo")
MXNET_PYTHON = Path("/work/mxvenv/bin/python")
EXPECTED = HERE / "expected.json"
DATA = {  # generator name -> writer of the files into a folder
    "mnist": lambda d: synth.write_mnist(d),
    "mnist_60k": lambda d: synth.write_mnist(d, n_train=60000),
    "mnist_gz": lambda d: synth.write_mnist(d, gz=True),
    "cifar": lambda d: synth.write_cifar_like(d),
    "imageiter_rec": lambda d: synth.write_rec(d / "test.rec", *synth.color_arrays(700, 5, 64)),
}
DATA_NOTE = {
    "mnist": "synthetic MNIST idx-ubyte, 6000 train / 1000 test",
    "mnist_60k": "synthetic MNIST idx-ubyte, 60000 train / 1000 test",
    "mnist_gz": "synthetic MNIST idx-ubyte(.gz), 6000 train / 1000 test",
    "cifar": "generated .rec/.idx of 32x32 JPEGs, 10 classes, 1000 train / 300 val",
    "imageiter_rec": "generated test.rec of 700 64x64 JPEGs",
}


def export(git_dir: Path, folders: tuple[str, ...], dest: Path) -> None:
    """``folders`` of MXNet's tree at :data:`MXNET_COMMIT`, byte for byte, under ``dest``."""
    blob = subprocess.run(["git", "-C", str(git_dir), "archive", "--format=tar", MXNET_COMMIT,
                           *folders], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(blob)) as tar:
        tar.extractall(dest, filter="data")


def prepare(ex: Example, git_dir: Path, work: Path) -> Path:
    """A fresh copy of the example's folders with its data in place; the script's folder."""
    if work.exists():
        shutil.rmtree(work)
    export(git_dir, ex.export, work)
    script_dir = work / ex.folder
    for gen, sub in ex.data:
        DATA[gen](script_dir / sub)
    return script_dir


def environment(framework: str, extra: dict | None = None, more: list | None = None) -> dict:
    """The child's environment: shims first, symgraph's alias for symgraph, then ``more``
    paths; one thread."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MXNET_HOME")}
    paths = [str(HERE / "shims")]
    if framework == "symgraph":
        paths += [str(ROOT / "symgraph" / "alias_path"), str(ROOT)]
    paths += [str(p) for p in more or ()]
    env.update(PYTHONPATH=os.pathsep.join(paths), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONHASHSEED="0", MPLBACKEND="Agg", **(extra or {}))
    return env


def run_script(ex: Example, python: str, framework: str, script_dir: Path) -> dict:
    """Run the script in its folder; exit code, seconds, output tail and the metric."""
    root = Path(str(script_dir)[:-len(ex.folder)])
    env = environment(framework, ex.mxnet_env if framework == "mxnet" else None,
                      [root / p for p in ex.pythonpath])
    script = ex.script.rsplit("/", 1)[1]
    start = time.monotonic()
    try:
        proc = subprocess.run([python, script, *ex.args], cwd=script_dir, env=env,
                              capture_output=True, text=True, timeout=ex.timeout)
        rc, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as err:
        rc, out = 124, _text(err.stdout) + _text(err.stderr) + f"\ntimeout after {ex.timeout}s"
    seconds = round(time.monotonic() - start, 1)
    run = {"rc": rc, "seconds": seconds, "metric": read_metric(ex, out, script_dir),
           "tail": "\n".join(out.strip().splitlines()[-15:])}
    if ex.metric == "trace" and run["metric"]:
        run["trace_text"] = trace_names(script_dir / ex.pattern)
    return run


def trace_names(path: Path) -> str:
    """The distinct event names of a Chrome trace, one per line (for the node-name check)."""
    doc = json.loads(path.read_text())
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    return "\n".join(sorted({str(e.get("name", "")) for e in events if isinstance(e, dict)}))


def _text(raw) -> str:
    return raw.decode(errors="replace") if isinstance(raw, bytes) else (raw or "")


def read_metric(ex: Example, output: str, script_dir: Path):
    """The run's result: last regex match (float), every printed number, or trace events."""
    if ex.metric == "regex":
        found = re.findall(ex.pattern, output, flags=re.MULTILINE)
        return float(found[-1]) if found else None
    if ex.metric == "arrays":
        return [float(x) for x in re.findall(r"-?\d+\.\d*(?:e[-+]?\d+)?", output)] or None
    if ex.metric == "sqr":
        return square_error(output)
    if ex.metric == "graphviz":
        return graph_source(script_dir / ex.pattern)
    return trace_events(script_dir / ex.pattern)


def square_error(output: str) -> float | None:
    """custom_sparse_sqr.py prints x, y = x*x and dx = 2*x*1 (random x) for a dense and a csr
    input: the largest error of y and dx against numpy math on the printed x."""
    nums = [float(x) for x in re.findall(r"-?\d+\.\d*(?:e[-+]?\d+)?", output)]
    if len(nums) != 240:
        return None
    blocks = np.array(nums).reshape(2, 3, 40)
    x, y, dx = blocks[:, 0], blocks[:, 1], blocks[:, 2]
    # printed with 8 significant digits: compare relative to the value
    return float(max((abs(y - x * x) / (1 + x * x)).max(), (abs(dx - 2 * x) / (1 + x)).max()))


def graph_source(path: Path) -> dict | None:
    """A Graphviz source file's edge count and SHA-1 (plot_network's output, compared whole)."""
    try:
        text = path.read_bytes()
    except OSError:
        return None
    return {"edges": text.count(b"->"), "sha1": hashlib.sha1(text).hexdigest()}


def trace_events(path: Path) -> int | None:
    """How many events a Chrome-trace JSON file holds; None when missing or unreadable."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    return len(events) if isinstance(events, list) else None


def verdict(ex: Example, sg: dict, mx: dict | None) -> tuple[str, str]:
    """(status, why): ``pass``, ``fail``, or ``no reference`` when MXNet's own run failed."""
    if ex.metric == "graphviz":
        return graph_verdict(sg, mx)
    if ex.gpus and sg["rc"] != 0 and "DeviceError" in sg["tail"] and \
            (mx is None or "USE_CUDA" in mx["tail"]):
        return "needs GPU", (f"hard-codes {ex.gpus} GPU(s); symgraph (CPU torch) raises "
                             "DeviceError, MXNet's CPU build fails the same way")
    if sg["rc"] != 0 or sg["metric"] is None:
        why = f"symgraph exit {sg['rc']}: {_last_line(sg['tail'])}"
        if mx is not None and mx["rc"] != 0:
            return "fails on MXNet too", f"{why}; MXNet: {_last_line(mx['tail'])}"
        return "fail", why
    if ex.metric == "trace":
        missing = [n for n in ex.trace_names if n not in sg.get("trace_text", "")]
        if missing:
            return "fail", f"{sg['metric']} trace events, none naming {missing}"
        named = f", naming {', '.join(ex.trace_names)}" if ex.trace_names else ""
        return "pass", f"{sg['metric']} trace events{named}"
    if mx is None or mx["rc"] != 0 or mx["metric"] is None:
        return "no reference", "MXNet's run failed or was not made" if mx else "no MXNet run"
    if ex.metric == "sqr":
        return ("pass" if sg["metric"] <= ex.tol else "fail"), \
            f"max rel. error of x*x and 2x: {sg['metric']:.2g} (MXNet {mx['metric']:.2g})"
    if ex.metric == "arrays":
        if len(sg["metric"]) != len(mx["metric"]):
            return "fail", "printed a different number of values"
        diff = max(abs(a - b) for a, b in zip(sg["metric"], mx["metric"]))
        return ("pass" if diff <= ex.tol else "fail"), f"max |diff| {diff:.2g} (tol {ex.tol})"
    gap = mx["metric"] - sg["metric"]
    return ("pass" if gap <= ex.tol else "fail"), f"{gap:+.4f} below MXNet (tol {ex.tol})"


def graph_verdict(sg: dict, mx: dict | None) -> tuple[str, str]:
    """plot_network + render: symgraph must exit 0 (it writes the source when Graphviz's dot
    is missing; MXNet's run stops there with ExecutableNotFound after writing the same file)
    and its source must equal MXNet's byte for byte."""
    if sg["rc"] != 0 or sg["metric"] is None:
        return "fail", f"symgraph exit {sg['rc']}: {_last_line(sg['tail'])}"
    if mx is None or mx["metric"] is None:
        return "no reference", "MXNet wrote no graph source"
    same = sg["metric"]["sha1"] == mx["metric"]["sha1"]
    note = "MXNet exits 1: no dot binary" if "ExecutableNotFound" in mx["tail"] else ""
    return ("pass" if same else "fail"), \
        f"graph source {'identical to' if same else 'differs from'} MXNet's " \
        f"({sg['metric']['edges']} edges); {note}"


def run_example(name: str, opts: argparse.Namespace) -> dict:
    """Both runs of one example, each in a fresh copy; its row of the results."""
    ex = EXAMPLES[name]
    row = {"name": name, "script": ex.script, "args": list(ex.args), "parts": ex.parts,
           "data": "; ".join(DATA_NOTE[g] for g, _ in ex.data) or "none (script makes its own)"}
    runs = [("symgraph", opts.python)]
    if opts.mxnet_python and Path(opts.mxnet_python).exists():
        runs.append(("mxnet", opts.mxnet_python))
    for framework, python in runs:
        script_dir = prepare(ex, opts.mxnet_git, opts.work / framework / name)
        row[framework] = run_script(ex, python, framework, script_dir)
        print(f"  {name} [{framework}] rc={row[framework]['rc']} "
              f"metric={_short(row[framework]['metric'])} {row[framework]['seconds']}s",
              flush=True)
    row["status"], row["why"] = verdict(ex, row["symgraph"], row.get("mxnet"))
    for framework, _ in runs:
        row[framework].pop("trace_text", None)  # only for the verdict's node-name check
    return row


def _last_line(tail: str) -> str:
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    return (lines[-1] if lines else "no output")[:160].replace("|", "/")


def _short(metric) -> str:
    if isinstance(metric, dict):
        return f"{metric['edges']} edges, sha1 {metric['sha1'][:8]}"
    return f"{len(metric)} numbers" if isinstance(metric, list) else str(metric)


def write_table(rows: list[dict], path: Path, stamp: dict) -> None:
    """docs/mxnet_examples.md: one row per run plus the error tails of the failures."""
    head = ("# MXNet 1.9.1 example scripts on symgraph\n\n"
            "Written by `tools/mxnet_examples/run.py` "
            f"({stamp['date']}, symgraph {stamp['symgraph_commit'][:10]}, MXNet "
            f"{MXNET_COMMIT[:10]}). Each script is exported unchanged from MXNet's git tree "
            "and run twice on the same synthetic files with the same arguments: on symgraph "
            "(through the `mxnet` alias) and on MXNet 1.9.1 (CPU build). Accuracy: symgraph "
            "passes when it exits 0 and ends at most `tol` below MXNet. See the runner's "
            "docstring for the shims both runs share.\n\n"
            f"Of {len(rows)} examples: {_counts(rows)}. Timings are one core each "
            "(`OMP_NUM_THREADS=1`) on a shared 2-core machine: indicative only.\n\n"
            "| example | script + arguments | data | symgraph | MXNet 1.9.1 | time sg / mx (s) "
            "| status |\n|---|---|---|---|---|---|---|\n")
    lines = [head]
    for r in rows:
        sg, mx = r["symgraph"], r.get("mxnet") or {}
        command = " ".join([r["script"], *r["args"]])
        lines.append(f"| {r['name']} | `{command}` | {r['data']} | "
                     f"{_cell(sg)} | {_cell(mx)} | {sg['seconds']} / {mx.get('seconds', '-')} "
                     f"| **{r['status']}**: {r['why']} |\n")
    notes = [f"- **{r['name']}**: {EXAMPLES[r['name']].note}\n" for r in rows
             if EXAMPLES[r["name"]].note]
    if notes:
        lines += ["\n## Notes\n\n", *notes]
    for r in rows:
        for fw in ("symgraph", "mxnet"):
            run = r.get(fw)
            if run and (run["rc"] != 0 or run["metric"] is None):
                lines.append(f"\n### {r['name']} on {fw} (exit {run['rc']})\n\n```\n"
                             f"{run['tail']}\n```\n")
    path.write_text("".join(lines))


def _counts(rows: list[dict]) -> str:
    tally: dict[str, int] = {}
    for r in rows:
        tally[r["status"]] = tally.get(r["status"], 0) + 1
    return ", ".join(f"{n} {status}" for status, n in tally.items())


def _cell(run: dict) -> str:
    if not run:
        return "-"
    metric = run["metric"]
    shown = _short(metric) if not isinstance(metric, float) else f"{metric:.4f}"
    return shown if run["rc"] == 0 else f"exit {run['rc']} ({shown})"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", nargs="*", choices=sorted(EXAMPLES), help="examples to run")
    p.add_argument("--work", type=Path, default=Path("/tmp/mxnet_examples"))
    p.add_argument("--mxnet-git", type=Path, default=MXNET_GIT)
    p.add_argument("--python", default=sys.executable, help="Python with symgraph's deps")
    p.add_argument("--mxnet-python", default=str(MXNET_PYTHON), help="'' to skip MXNet")
    p.add_argument("--out", type=Path, default=HERE / "results.json")
    p.add_argument("--table", type=Path, default=ROOT / "docs" / "mxnet_examples.md")
    p.add_argument("--render-only", action="store_true", help="rewrite --table from --out")
    p.add_argument("--write-expected", action="store_true",
                   help=f"record MXNet's metrics of the CI subset in {EXPECTED.name}")
    return p.parse_args(argv)


def main(argv=None) -> int:
    opts = parse_args(argv)
    if opts.render_only:  # the table again from --out, without running anything
        doc = json.loads(opts.out.read_text())
        write_table(doc["results"], opts.table, doc)
        return 0
    names = opts.only or list(EXAMPLES)
    rows = []
    for name in names:
        print(f"{name}: {EXAMPLES[name].script}", flush=True)
        rows.append(run_example(name, opts))
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    stamp = {"date": datetime.date.today().isoformat(), "symgraph_commit": commit,
             "mxnet_commit": MXNET_COMMIT}
    opts.out.write_text(json.dumps({**stamp, "results": rows}, indent=1) + "\n")
    write_table(rows, opts.table, stamp)
    if opts.write_expected:
        write_expected(rows, stamp)
    for r in rows:
        print(f"{r['status']:>12}  {r['name']}: {r['why']}")
    return 0 if all(r["status"] == "pass" for r in rows) else 1


def write_expected(rows: list[dict], stamp: dict) -> None:
    """expected.json: MXNet's metric for each CI-subset example, and how it was made."""
    doc = {"how": "MXNet 1.9.1 (/work/mxvenv, CPU) running the unchanged scripts on the "
                  "synth.py data with the arguments in catalog.py: "
                  "tools/mxnet_examples/run.py --only " + " ".join(CI_SUBSET) +
                  " --write-expected", **stamp, "mxnet": {}}
    if EXPECTED.exists():
        doc["mxnet"] = json.loads(EXPECTED.read_text()).get("mxnet", {})
    for r in rows:
        mx = r.get("mxnet") or {}
        # the SSD graph: MXNet exits 1 (no dot binary) after writing the source compared
        if r["name"] in CI_SUBSET and mx.get("metric") is not None and \
                (mx["rc"] == 0 or EXAMPLES[r["name"]].metric == "graphviz"):
            doc["mxnet"][r["name"]] = r["mxnet"]["metric"]
    text = json.dumps(doc, indent=1)
    # one line per printed array rather than one line per number
    text = re.sub(r"\[\s*([^\[\]{}]*?)\s*\]", lambda m: "[" + " ".join(m[1].split()) + "]",
                  text)
    EXPECTED.write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
