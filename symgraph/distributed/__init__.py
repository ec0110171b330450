"""Distributed training: the rendezvous store, the process group and the launcher.

Workers find each other the way PyTorch jobs do: ``MASTER_ADDR``/``MASTER_PORT``,
``WORLD_SIZE`` and ``RANK``, as set by ``torchrun`` or ``python -m symgraph.launch``. MXNet's
launch contract works too: with ``DMLC_ROLE=worker``, ``DMLC_PS_ROOT_URI``/``DMLC_PS_ROOT_PORT``
and ``DMLC_NUM_WORKER``, workers meet at a TCP store hosted by the ``DMLC_ROLE=scheduler``
process and take ranks in order of arrival; scheduler and server processes never run the
training script's body (:func:`serve_role`, called when symgraph is imported, as MXNet's
server module is) and exit once every worker is done.

- :mod:`~symgraph.distributed.rendezvous`: where workers meet (:func:`host_store`, bound to
  one address) and the signed values they write to the store.
- :mod:`~symgraph.distributed.group`: the process group, heartbeats, checked collectives
  (:func:`agree`, :class:`WorkerLost`) and :func:`one_writer`.
- :mod:`~symgraph.distributed.launch`: ``python -m symgraph.launch`` (kept at that path).

>>> from symgraph import distributed
>>> distributed.fingerprint("barrier", []) == distributed.fingerprint("barrier", [])
True
"""
from .group import (
    CollectiveMismatch,
    WorkerLost,
    agree,
    all_gather,
    all_reduce,
    barrier,
    broadcast,
    fingerprint,
    num_workers,
    one_writer,
    rank,
    serve_role,
)
from .rendezvous import StoreValueError, host_store

__all__ = ["CollectiveMismatch", "StoreValueError", "WorkerLost", "agree", "all_gather",
           "all_reduce", "barrier", "broadcast", "fingerprint", "host_store", "num_workers",
           "one_writer", "rank", "serve_role"]
