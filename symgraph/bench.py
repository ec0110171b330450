"""``python -m symgraph.bench``: the benchmarks of ``benchmarks/``, from any directory.

    python -m symgraph.bench                      # the suites, one line each
    python -m symgraph.bench mlp --steps 100      # one suite, with its own options
    python -m symgraph.bench kernels --triton     # on a CPU: references, and the interpreter
    python -m symgraph.bench mlp --results DIR    # where the JSON and the plot go

Each run writes ``<results>/<suite>_<cpu|gpu>.json`` (device, date and commit included; the
suite's ``--json`` overrides the path) and a PNG plot beside it: the suite's own (the kernel
suite draws achieved rates against the device's measured ceilings) or the bar chart of
every ratio against a peer in the JSON (``benchmarks/report.py``). ``<results>`` is
``symgraph-bench`` in the working directory unless given (``--results`` may come anywhere
on the line). The suites live in the source
checkout (``pip install -e .`` from a clone, with ``.[bench]`` for matplotlib); each
suite's options are its ``--help``.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import json
import os
import sys
from pathlib import Path

DEFAULT_OUT = "symgraph-bench"


class BenchmarksMissing(RuntimeError):
    """The benchmark suites are not next to this symgraph (an install from a wheel)."""


def benchmarks_dir() -> Path:
    """The ``benchmarks`` folder of the source checkout this symgraph was imported from."""
    here = Path(__file__).resolve().parent.parent / "benchmarks"
    if not (here / "__init__.py").exists():
        raise BenchmarksMissing(
            f"no benchmarks folder at {here}: the suites ship with the source checkout; "
            "clone the repository and `pip install -e .[bench]` there")
    return here


def suites() -> dict[str, str]:
    """Suite name -> the first line of its docstring (read without importing it)."""
    found = {}
    for path in sorted(benchmarks_dir().glob("bench_*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        found[path.stem[len("bench_"):]] = doc.splitlines()[0] if doc else ""
    return found


def load(suite: str):
    """The suite's module (``benchmarks.bench_<suite>``), importable from any directory."""
    root = str(benchmarks_dir().parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    return importlib.import_module(f"benchmarks.bench_{suite}")


def run(suite: str, argv: list[str], out: str) -> tuple[str, str | None]:
    """Run ``suite`` with its options ``argv``; returns (JSON path, PNG path or None)."""
    import torch
    on_gpu = torch.cuda.is_available() and ("--gpu" in argv or suite == "kernels")
    device = "gpu" if on_gpu else "cpu"
    json_path = _option(argv, "--json")
    if json_path is None:
        os.makedirs(out, exist_ok=True)
        json_path = os.path.join(out, f"{suite}_{device}.json")
        argv = [*argv, "--json", json_path]
    module = load(suite)
    with _argv([f"python -m symgraph.bench {suite}", *argv]):
        code = module.main()
    if code not in (None, 0):
        raise SystemExit(code)
    png = json_path.rsplit(".", 1)[0] + ".png"
    if not os.path.exists(json_path):
        return json_path, None
    if not os.path.exists(png) or os.path.getmtime(png) < os.path.getmtime(json_path):
        from benchmarks.report import plot_ratios
        with open(json_path, encoding="utf-8") as f:
            result = json.load(f)
        if not plot_ratios(result, png, suite):
            return json_path, None
    return json_path, png


def _option(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


@contextlib.contextmanager
def _argv(argv: list[str]):
    saved = sys.argv
    sys.argv = argv
    try:
        yield
    finally:
        sys.argv = saved


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m symgraph.bench", description=__doc__.splitlines()[0],
        epilog="Options after the suite's name are the suite's own (see its --help).")
    parser.add_argument("--results", default=DEFAULT_OUT,
                        help="folder for the JSON results and plots (default: %(default)s)")
    parser.add_argument("suite", nargs="?", help="the suite to run; none: list them")
    parser.add_argument("options", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    argv = list(sys.argv[1:] if argv is None else argv)
    results = _option(argv, "--results")
    if results is not None:  # ours wherever it stands, not the suite's
        at = next(i for i, a in enumerate(argv) if a.startswith("--results"))
        del argv[at:at + (1 if "=" in argv[at] else 2)]
    args = parser.parse_args(argv)
    args.results = results or args.results
    try:
        names = suites()
        if args.suite is None:
            width = max(map(len, names))
            for name, doc in names.items():
                print(f"{name:<{width}}  {doc}")
            return
        if args.suite not in names:
            parser.error(f"no suite {args.suite!r}; the suites are {', '.join(names)}")
        json_path, png = run(args.suite, args.options, args.results)
    except BenchmarksMissing as err:
        sys.exit(f"error: {err}")
    print(f"results: {json_path}" + (f"; plot: {png}" if png else ""))


if __name__ == "__main__":
    main()
