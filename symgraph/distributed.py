"""The process group of distributed training (torch.distributed), joined once per process.

Workers find each other the way PyTorch jobs do: ``MASTER_ADDR``/``MASTER_PORT``,
``WORLD_SIZE`` and ``RANK``, as set by ``torchrun`` or ``python -m symgraph.launch``. MXNet's
launch contract works too: with ``DMLC_ROLE=worker``, ``DMLC_PS_ROOT_URI``/``DMLC_PS_ROOT_PORT``
and ``DMLC_NUM_WORKER``, workers meet at a TCP store hosted by the ``DMLC_ROLE=scheduler``
process and take ranks in order of arrival; scheduler and server processes never run the
training script's body (:func:`serve_role`, called when symgraph is imported, as MXNet's
server module is) and exit once every worker is done. Collectives use gloo on CPU tensors
and, where CUDA and NCCL are available, NCCL on CUDA tensors (one process group with both).

Faults: a daemon thread on every rank writes ``beat/<rank>`` = "<time> <collectives
started>" to the store twice a second (a collective itself costs no store round trip). A
collective that fails — a peer closed its connection, or nothing arrived within
``config.dist_timeout`` seconds — raises :class:`WorkerLost` naming the ranks that did not
reach it or stopped beating.
"""
from __future__ import annotations

import atexit
import datetime
import functools
import sys
import threading
import time

import torch

from . import config
from .base import MXNetError

__all__ = ["WorkerLost", "all_reduce", "barrier", "broadcast", "num_workers", "one_writer",
           "rank"]

_BEAT_S = 0.5  # heartbeat period; a rank silent for 6 periods counts as lost
_STATE: dict = {}


class WorkerLost(MXNetError):
    """A collective failed because other workers died or stopped answering."""


def _dist():
    import torch.distributed as dist
    return dist


def _timeout() -> datetime.timedelta:
    return datetime.timedelta(seconds=config.get().dist_timeout)


def _env_int(name: str) -> int:
    value = config.env_flag(name)
    if not value:
        raise MXNetError(f"distributed kvstore: environment variable {name} is not set (launch "
                         "workers with `python -m symgraph.launch -n N script.py` or torchrun)")
    return int(value)


def _join() -> dict:
    """Rendezvous and make the process group (once per process)."""
    if _STATE:
        return _STATE
    dist = _dist()
    if config.env_flag("DMLC_ROLE"):
        store, rank, size = _dmlc_rendezvous()
    else:
        size, rank = _env_int("WORLD_SIZE"), _env_int("RANK")
        store, rank, size = next(dist.rendezvous("env://", rank, size, timeout=_timeout()))
    if not dist.is_initialized():
        dist.init_process_group(_backend(), store=dist.PrefixStore("pg", store), rank=rank,
                                world_size=size, timeout=_timeout())
    ours = dist.PrefixStore("symgraph", store)
    beat = threading.Thread(target=_beat, args=(ours, rank), daemon=True,
                            name="symgraph-heartbeat")
    _STATE.update(store=ours, rank=rank, size=size, seq=0, done=False, beat=beat)
    beat.start()
    atexit.register(_leave)
    return _STATE


def _backend() -> str:
    """gloo for CPU tensors; with CUDA, NCCL for CUDA tensors beside it (a ``dist_sync``
    store merges on the CPU even when the contexts are GPUs)."""
    dist = _dist()
    if torch.cuda.is_available() and dist.is_nccl_available():
        return "cpu:gloo,cuda:nccl"
    return "gloo"


def _dmlc_rendezvous() -> tuple:
    """A worker under MXNet's launch contract: a rank from the scheduler's store."""
    dist = _dist()
    role = config.env_flag("DMLC_ROLE")
    if role != "worker":
        raise MXNetError(f"DMLC_ROLE={role}: only workers create a distributed kvstore")
    size = _env_int("DMLC_NUM_WORKER")
    store = dist.TCPStore(config.env_flag("DMLC_PS_ROOT_URI", "127.0.0.1"),
                          _env_int("DMLC_PS_ROOT_PORT"), is_master=False, timeout=_timeout())
    rank = store.add("dmlc/rank", 1) - 1
    if rank >= size:
        raise MXNetError(f"DMLC_NUM_WORKER={size} but worker number {rank + 1} arrived")
    return store, rank, size


def _beat(store, rank: int) -> None:
    while not _STATE.get("done"):
        try:
            store.set(f"beat/{rank}", f"{time.time()!r} {_STATE['seq']}")
        except Exception:  # noqa: BLE001 - the store host is gone: collectives will say so
            return
        time.sleep(_BEAT_S)


def _last_beat(store, r: int) -> tuple[float, int]:
    """``(time, collectives started)`` of rank ``r``'s last heartbeat (0, 0 if none)."""
    if not store.check([f"beat/{r}"]):
        return 0.0, 0
    when, seq = store.get(f"beat/{r}").decode().split()
    return float(when), int(seq)


def _leave() -> None:
    """At exit: stop beating, count this worker done (the scheduler waits for all) and take
    the process group down before the interpreter does (its threads must not outlive it)."""
    _STATE["done"] = True
    _STATE["beat"].join(timeout=2 * _BEAT_S)
    try:
        _STATE["store"].add("done", 1)
    except Exception:  # noqa: BLE001 - nobody is left to tell
        pass
    dist = _dist()
    if dist.is_initialized():
        dist.destroy_process_group()


def rank() -> int:
    """This worker's rank in ``[0, num_workers)``."""
    return _join()["rank"]


def num_workers() -> int:
    """Number of worker processes."""
    return _join()["size"]


def one_writer(fn):
    """Decorate a checkpoint writer: in a distributed job (once this process joined the
    group) only rank 0 writes — the replicas are identical — and other ranks return None.

    >>> @one_writer
    ... def save(path):
    ...     return 'written'
    >>> save('x')  # not in a distributed job: every process writes
    'written'
    """
    @functools.wraps(fn)
    def writer(*args, **kwargs):
        if _STATE and _STATE["rank"] != 0:
            return None
        return fn(*args, **kwargs)
    return writer


def _lost(seq: int) -> list[int]:
    """Ranks that did not reach collective ``seq`` or stopped beating."""
    state = _STATE
    store, lost = state["store"], []
    time.sleep(2 * _BEAT_S)  # let every live peer publish its latest count
    now = time.time()
    for r in range(state["size"]):
        if r == state["rank"]:
            continue
        try:
            beat, reached = _last_beat(store, r)
        except Exception:  # noqa: BLE001 - the store itself is unreachable
            return [r for r in range(state["size"]) if r != state["rank"]]
        if reached < seq or now - beat > 6 * _BEAT_S:
            lost.append(r)
    return lost


def _collective(what: str, run) -> None:
    state = _join()
    state["seq"] += 1
    seq = state["seq"]
    try:
        run()
    except RuntimeError as err:
        lost = _lost(seq)
        who = f"lost rank(s) {lost}" if lost else "a worker was lost"
        raise WorkerLost(f"{what} (collective #{seq}) failed on rank {state['rank']}: {who} "
                         f"(timeout {config.get().dist_timeout:g} s): {err}") from err


def all_reduce(tensor: torch.Tensor, what: str = "all_reduce") -> None:
    """Sum ``tensor`` over all workers, in place (every worker gets the same bytes)."""
    _collective(what, lambda: _dist().all_reduce(tensor))


def broadcast(tensor: torch.Tensor, src: int = 0, what: str = "broadcast") -> None:
    """Overwrite ``tensor`` with rank ``src``'s, in place."""
    _collective(what, lambda: _dist().broadcast(tensor, src))


def barrier() -> None:
    """Wait until every worker arrives (a one-number all-reduce on the CPU: no GPU is
    involved, whatever the backends)."""
    _collective("barrier", lambda: _dist().all_reduce(torch.zeros(1)))


# ---------------------------------------------------------------- MXNet's other roles

def serve_role() -> None:
    """Under MXNet's launch contract, a scheduler or server process: host the rendezvous
    store (scheduler), wait until every worker is done, and exit without returning (the
    script's body never runs). Workers and plain processes return at once."""
    role = config.env_flag("DMLC_ROLE")
    if role not in ("scheduler", "server"):
        return
    dist = _dist()
    size = _env_int("DMLC_NUM_WORKER")
    store = dist.TCPStore(config.env_flag("DMLC_PS_ROOT_URI", "127.0.0.1"),
                          _env_int("DMLC_PS_ROOT_PORT"), is_master=role == "scheduler",
                          wait_for_workers=False, timeout=_timeout())
    ours = dist.PrefixStore("symgraph", store)
    sys.exit(_wait_for_workers(ours, size))


def _wait_for_workers(store, size: int) -> int:
    """Until every worker counted itself done (0), or none has beaten for the timeout (1)."""
    last = time.time()
    while store.add("done", 0) < size:
        newest = max(_last_beat(store, r)[0] for r in range(size))
        last = max(last, newest)
        if time.time() - last > config.get().dist_timeout:
            print(f"symgraph: no worker alive for {config.get().dist_timeout:g} s; "
                  f"{store.add('done', 0)} of {size} finished", file=sys.stderr)
            return 1
        time.sleep(0.2)
    time.sleep(0.5)  # let servers see the count before the scheduler's store goes away
    return 0
