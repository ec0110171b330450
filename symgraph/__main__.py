"""``python -m symgraph run [--shadow] (script.py | -m module) [args...]``.

Runs an unchanged MXNet script (``import mxnet as mx``) on symgraph: the ``mxnet`` import
alias (:mod:`symgraph.alias`) is installed for the script and, through ``PYTHONPATH``, for
every Python process it starts (multiprocessing workers, subprocesses). If a real MXNet is
installed the command refuses to shadow it unless ``--shadow`` is given.
"""
from __future__ import annotations

import os
import runpy
import sys

from . import alias, config

USAGE = """usage: python -m symgraph run [--shadow] script.py [args...]
       python -m symgraph run [--shadow] -m module [args...]

Run unchanged MXNet 1.x code on symgraph: 'import mxnet' resolves to symgraph.
  --shadow   run even though a real MXNet is installed (it is hidden for this run)
  -m MODULE  run a library module as a script, like python -m"""


def _parse(argv: list[str]) -> tuple[bool, str | None, list[str]]:
    """(shadow, module or None, the script's or module's argv); options stop at the target,
    so everything after it reaches the script unchanged."""
    if not argv or argv[0] != "run":
        raise SystemExit(USAGE)
    rest, shadow = argv[1:], False
    while rest and rest[0] == "--shadow":
        shadow, rest = True, rest[1:]
    if rest[:1] == ["-m"]:
        if len(rest) < 2:
            raise SystemExit(USAGE)
        return shadow, rest[1], rest[1:]
    if not rest or rest[0].startswith("-"):
        raise SystemExit(USAGE)
    return shadow, None, rest


def _export_bootstrap() -> None:
    """Child processes find the ``mxnet`` bootstrap package first on their path."""
    config.prepend_env_path("PYTHONPATH", alias.BOOTSTRAP_DIR)
    sys.path.insert(0, alias.BOOTSTRAP_DIR)


def run(argv: list[str]) -> int:
    """Entry point of ``python -m symgraph``; returns the exit status."""
    shadow, module, script_argv = _parse(argv)
    real = alias.real_mxnet_location()
    if real is not None and not shadow:
        print(f"symgraph: a real MXNet is installed at {real}; refusing to shadow it. Use a "
              "virtualenv without it, or pass --shadow to hide it for this run.",
              file=sys.stderr)
        return 2
    if real is not None:
        print(f"symgraph: hiding the MXNet installed at {real} for this run", file=sys.stderr)
    _export_bootstrap()
    alias.install()
    sys.argv = script_argv
    if module == "pytest":  # keeps the alias ahead of pytest's import hook
        sys.argv[1:1] = ["-p", "symgraph.alias"]
    if module is not None:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(script_argv[0])))
        runpy.run_path(script_argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
