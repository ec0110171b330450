"""Start worker processes for the distributed tests, bounded in time, always cleaned up.

``run(scenario, n)`` starts ``n`` processes of ``tests.dist_workers`` with PyTorch's
launch environment on 127.0.0.1 (or MXNet's with ``dmlc=True``: a scheduler, a server and
the workers) and returns each rank's result dict, with the processes' exit codes.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from symgraph import launch

ROOT = Path(__file__).resolve().parent.parent


def _env(extra: dict) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1",
               SYMGRAPH_DIST_TIMEOUT=os.environ.get("SYMGRAPH_DIST_TIMEOUT", "30"))
    env.update(extra)
    return env


def start(cmd: list[str], n: int, dmlc: bool = False, env: dict | None = None,
          port: int = 0) -> tuple:
    """:func:`symgraph.launch.start_local` from the repository root with the tests'
    environment (on ``port``, 0: a free one): ``(processes, roles)``."""
    return launch.start_local(cmd, n, dmlc=dmlc, env=_env(env or {}), port=port,
                              cwd=str(ROOT))


wait = launch.wait


def run(scenario: str, n: int, tmp: Path, timeout: float = 90.0, dmlc: bool = False,
        env: dict | None = None, keep_going: float | None = None) -> dict:
    """Results by rank (``{'ranks': {r: dict}, 'codes': [...], 'roles': [...]}``).

    ``keep_going``: seconds to wait once every rank that will write has written (for
    scenarios in which a worker hangs on purpose); the rest are then killed."""
    out = str(tmp / scenario)
    procs, roles = start([sys.executable, "-m", "tests.dist_workers", scenario, out], n,
                         dmlc, env)

    def written() -> bool:
        if keep_going is None or len(list(tmp.glob(f"{scenario}.[0-9]"))) < n - 1:
            return False
        time.sleep(keep_going)
        return True
    codes, timed_out = wait(procs, timeout, written)
    ranks = {}
    for path in tmp.glob(f"{scenario}.[0-9]"):
        ranks[int(path.suffix[1:])] = json.loads(path.read_text())
    return {"ranks": ranks, "codes": codes, "roles": roles, "timed_out": timed_out}
