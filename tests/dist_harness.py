"""Start worker processes for the distributed tests, bounded in time, always cleaned up.

``run(scenario, n)`` starts ``n`` processes of ``tests.dist_workers`` with PyTorch's
launch environment on 127.0.0.1 (or MXNet's with ``dmlc=True``: a scheduler, a server and
the workers) and returns each rank's result dict, with the processes' exit codes.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(extra: dict) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1",
               SYMGRAPH_DIST_TIMEOUT=os.environ.get("SYMGRAPH_DIST_TIMEOUT", "30"))
    env.update(extra)
    return env


def start(cmd: list[str], n: int, dmlc: bool = False, env: dict | None = None) -> tuple:
    """Start ``cmd`` as ``n`` workers on 127.0.0.1: PyTorch's environment (``RANK``...), or
    with ``dmlc`` MXNet's (a scheduler, a server and the workers). ``(procs, roles)``."""
    port = free_port()
    procs, roles = [], []
    if dmlc:
        base = {"DMLC_PS_ROOT_URI": "127.0.0.1", "DMLC_PS_ROOT_PORT": str(port),
                "DMLC_NUM_WORKER": str(n), "DMLC_NUM_SERVER": "1", "DMLC_INTERFACE": "lo"}
        for role in ["scheduler", "server"] + ["worker"] * n:
            roles.append(role)
            procs.append(subprocess.Popen(cmd, cwd=ROOT, env=_env({**base, **(env or {}),
                                                                  "DMLC_ROLE": role})))
    else:
        for rank in range(n):
            roles.append("worker")
            procs.append(subprocess.Popen(cmd, cwd=ROOT, env=_env({
                **(env or {}), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                "WORLD_SIZE": str(n), "RANK": str(rank)})))
    return procs, roles


def wait(procs: list, timeout: float, done=None) -> tuple[list[int], bool]:
    """Wait for ``procs`` (at most ``timeout`` s, or until ``done()``), then kill what is
    left: ``(exit codes, timed_out)``."""
    deadline = time.time() + timeout
    try:
        while time.time() < deadline and any(p.poll() is None for p in procs):
            if done is not None and done():
                break
            time.sleep(0.1)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        codes = [p.wait() for p in procs]
    return codes, time.time() >= deadline


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
