"""Start N local worker processes of a training script: ``python -m symgraph.launch``.

    python -m symgraph.launch -n 2 [--launcher local] [--dmlc [-s S]] script.py [args...]

By default a thin layer over ``torch.distributed.run`` (torchrun): each worker gets
``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``/``MASTER_PORT`` and the rest of PyTorch's
environment, and a ``mx.kv.create('dist_sync')`` in the script joins them. When a worker
fails, the others are stopped and the launcher exits non-zero. MXNet's ``tools/launch.py``
options ``-s`` and ``--launcher local`` are accepted; other launchers are refused (use
torchrun's own multi-node options).

``--dmlc`` starts the processes the way MXNet's ``tools/launch.py --launcher local`` does:
a scheduler, ``-s`` servers (default 1) and N workers, all running the script with
``DMLC_ROLE``, ``DMLC_PS_ROOT_URI``/``PORT``, ``DMLC_NUM_WORKER`` and ``DMLC_NUM_SERVER``
set (symgraph's scheduler and servers exit once the workers are done; MXNet 1.9.1's own
processes run under it too). :func:`start_local` and :func:`wait` are the same starter for
Python callers (tests, benchmarks).

Every job gets a new secret (``config.JOB_SECRET_ENV`` in the workers' environment, with which
they sign what they write to the rendezvous store), and every store listens on 127.0.0.1
only: torchrun's two (the agent's rendezvous store and the workers' store it shares) through
the ``symgraph-c10d`` rendezvous backend, rank 0's or the scheduler's through
:func:`symgraph.distributed.host_store`. Workers' gloo connections use the loopback
interface too (``GLOO_SOCKET_IFNAME``, unless set).
"""
from __future__ import annotations

import argparse
import secrets
import socket
import subprocess
import sys
import time

from .. import config

_RDZV = "symgraph-c10d"  # torchrun's c10d rendezvous, with its stores bound to the endpoint


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m symgraph.launch",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--num-workers", type=int, required=True,
                        help="number of worker processes")
    parser.add_argument("-s", "--num-servers", type=int, default=None,
                        help="servers under --dmlc (default 1); torchrun needs none")
    parser.add_argument("--launcher", default="local", choices=["local"],
                        help="only 'local' (this machine); torchrun covers several machines")
    parser.add_argument("--dmlc", action="store_true",
                        help="MXNet's launch environment (scheduler, servers, workers)")
    parser.add_argument("--master-port", type=int, default=0,
                        help="rendezvous port on 127.0.0.1 (0: a free one)")
    parser.add_argument("script", help="the training script")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    return parser


def _parse(argv: list[str]) -> argparse.Namespace:
    ns = _parser().parse_args(argv)
    if ns.num_workers < 1:
        raise SystemExit("symgraph.launch: -n must be at least 1")
    return ns


def torchrun_args(argv: list[str]) -> list[str]:
    """torchrun's command line for ours.

    >>> torchrun_args(['-n', '2', 'train.py', '--lr', '0.1'])[1:4]
    ['--nproc-per-node=2', '--rdzv-backend=symgraph-c10d', '--rdzv-endpoint=127.0.0.1:0']
    >>> torchrun_args(['-n', '2', 'train.py', '--lr', '0.1'])[-3:]
    ['train.py', '--lr', '0.1']
    """
    ns = _parse(argv)
    return ["--nnodes=1", f"--nproc-per-node={ns.num_workers}", f"--rdzv-backend={_RDZV}",
            f"--rdzv-endpoint=127.0.0.1:{ns.master_port}", "--local-addr=127.0.0.1",
            "--max-restarts=0", ns.script, *ns.args]


def _loopback_rendezvous(params):
    """torchrun's c10d rendezvous handler, with the agent's store and the workers' store it
    shares (``TORCHELASTIC_USE_AGENT_STORE``) listening on the endpoint's address only —
    torch's own listen on every interface."""
    from torch.distributed.elastic.rendezvous.c10d_rendezvous_backend import (
        C10dRendezvousBackend,
    )
    from torch.distributed.elastic.rendezvous.dynamic_rendezvous import create_handler
    from torch.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint

    from .rendezvous import host_store

    class Backend(C10dRendezvousBackend):
        name = _RDZV  # torch checks that the handler reports the backend asked for

    host, port = parse_rendezvous_endpoint(params.endpoint, default_port=0)
    store = host_store(host, port)
    handler = create_handler(store, Backend(store, params.run_id), params)
    # the one place torch makes the workers' store; ours binds (the node's address is
    # --local-addr, 127.0.0.1)
    handler._create_tcp_store_server = host_store
    return handler


def job_env(base: dict) -> dict:
    """``base`` with a new job secret, and gloo on the loopback interface unless chosen.

    >>> first, second = job_env({}), job_env({})
    >>> len(first['SYMGRAPH_JOB_SECRET']), first != second
    (64, True)
    """
    env = {**base, config.JOB_SECRET_ENV: secrets.token_hex(32)}
    loopback = {"linux": "lo", "darwin": "lo0"}.get(sys.platform)
    if loopback and "GLOO_SOCKET_IFNAME" not in env:
        env["GLOO_SOCKET_IFNAME"] = loopback
    return env


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_local(cmd: list[str], n: int, dmlc: bool = False, env: dict | None = None,
                num_servers: int = 1, port: int = 0, cwd: str | None = None) -> tuple:
    """Start ``cmd`` as ``n`` workers on 127.0.0.1 with PyTorch's environment (``RANK``,
    ``WORLD_SIZE``, ``MASTER_ADDR``/``PORT``), or with ``dmlc`` MXNet's (a scheduler,
    ``num_servers`` servers and the workers). Returns ``(processes, roles)``."""
    port = port or free_port()
    base = job_env(config.environ() if env is None else env)
    procs, roles = [], []
    if dmlc:
        common = {"DMLC_PS_ROOT_URI": "127.0.0.1", "DMLC_PS_ROOT_PORT": str(port),
                  "DMLC_NUM_WORKER": str(n), "DMLC_NUM_SERVER": str(num_servers),
                  "DMLC_INTERFACE": "lo"}
        for role in ["scheduler"] + ["server"] * num_servers + ["worker"] * n:
            roles.append(role)
            procs.append(subprocess.Popen(cmd, cwd=cwd, env={**base, **common,
                                                             "DMLC_ROLE": role}))
        return procs, roles
    for rank in range(n):
        roles.append("worker")
        procs.append(subprocess.Popen(cmd, cwd=cwd, env={
            **base, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
            "WORLD_SIZE": str(n), "RANK": str(rank), "LOCAL_RANK": str(rank)}))
    return procs, roles


def wait(procs: list, timeout: float | None = None, done=None) -> tuple[list[int], bool]:
    """Wait for ``procs`` (at most ``timeout`` s, or until ``done()`` is true), then kill
    what is left. Returns ``(exit codes, timed_out)``."""
    deadline = None if timeout is None else time.time() + timeout
    try:
        while any(p.poll() is None for p in procs):
            if deadline is not None and time.time() >= deadline:
                break
            if done is not None and done():
                break
            time.sleep(0.1)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        codes = [p.wait() for p in procs]
    return codes, deadline is not None and time.time() >= deadline


def main(argv: list[str] | None = None) -> None:
    """Run torchrun (or the DMLC-style local launcher) with our arguments; exits with the
    workers' status."""
    argv = sys.argv[1:] if argv is None else argv
    ns = _parse(argv)
    if ns.dmlc:
        procs, _ = start_local([sys.executable, ns.script, *ns.args], ns.num_workers, dmlc=True,
                               num_servers=ns.num_servers or 1, port=ns.master_port)
        codes, _ = wait(procs)
        sys.exit(next((c for c in codes if c), 0))
    from torch.distributed import run
    from torch.distributed.elastic.rendezvous import rendezvous_handler_registry

    env = job_env(config.environ())
    for name in (config.JOB_SECRET_ENV, "GLOO_SOCKET_IFNAME"):  # the workers inherit them
        if name in env:
            config.setenv(name, env[name])
    rendezvous_handler_registry.register(_RDZV, _loopback_rendezvous)
    run.main(torchrun_args(argv))


if __name__ == "__main__":
    main()
