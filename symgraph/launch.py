"""Start N local worker processes of a training script: ``python -m symgraph.launch``.

    python -m symgraph.launch -n 2 [--launcher local] script.py [args...]

A thin layer over ``torch.distributed.run`` (torchrun): each worker gets ``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR``/``MASTER_PORT`` and the rest of PyTorch's environment, and a
``mx.kv.create('dist_sync')`` in the script joins them. When a worker fails, the others are
stopped and the launcher exits non-zero. MXNet's ``tools/launch.py`` options ``-s`` (servers:
none are needed) and ``--launcher local`` are accepted; other launchers are refused
(use torchrun's own multi-node options).
"""
from __future__ import annotations

import argparse
import sys


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m symgraph.launch",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--num-workers", type=int, required=True,
                        help="number of worker processes")
    parser.add_argument("-s", "--num-servers", type=int, default=None,
                        help="accepted for MXNet's launch.py; symgraph needs no servers")
    parser.add_argument("--launcher", default="local", choices=["local"],
                        help="only 'local' (this machine); torchrun covers several machines")
    parser.add_argument("--master-port", type=int, default=0,
                        help="rendezvous port on 127.0.0.1 (0: a free one)")
    parser.add_argument("script", help="the training script")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    return parser


def torchrun_args(argv: list[str]) -> list[str]:
    """torchrun's command line for ours.

    >>> torchrun_args(['-n', '2', 'train.py', '--lr', '0.1'])[:4]
    ['--nnodes=1', '--nproc-per-node=2', '--rdzv-backend=c10d', '--rdzv-endpoint=127.0.0.1:0']
    >>> torchrun_args(['-n', '2', 'train.py', '--lr', '0.1'])[-3:]
    ['train.py', '--lr', '0.1']
    """
    ns = _parser().parse_args(argv)
    if ns.num_workers < 1:
        raise SystemExit("symgraph.launch: -n must be at least 1")
    return ["--nnodes=1", f"--nproc-per-node={ns.num_workers}", "--rdzv-backend=c10d",
            f"--rdzv-endpoint=127.0.0.1:{ns.master_port}", "--max-restarts=0",
            ns.script, *ns.args]


def main(argv: list[str] | None = None) -> None:
    """Run torchrun with our arguments (exits with its status)."""
    from torch.distributed import run
    run.main(torchrun_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
