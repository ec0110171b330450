"""``python -m symgraph.launch``: start N local worker processes of a training script.

The launcher lives in :mod:`symgraph.distributed.launch`; this module keeps its command
line and its names at the path users and MXNet-style scripts know.

>>> from symgraph import launch
>>> launch.torchrun_args(['-n', '2', 'train.py'])[1]
'--nproc-per-node=2'
"""
from .distributed.launch import free_port, job_env, main, start_local, torchrun_args, wait

__all__ = ["free_port", "job_env", "main", "start_local", "torchrun_args", "wait"]

if __name__ == "__main__":
    main()
