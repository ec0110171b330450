"""The process group of distributed training (torch.distributed), joined once per process.

The group is made from the rendezvous store (:mod:`symgraph.distributed.rendezvous`).
Collectives use gloo on CPU tensors and, where CUDA and NCCL are available, NCCL on CUDA
tensors (one process group with both).

Faults: a daemon thread on every rank writes ``beat/<rank>`` = "<time> <collectives
started>" to the store twice a second (a collective itself costs no store round trip). A
collective that fails — a peer closed its connection, or nothing arrived within
``config.dist_timeout`` seconds — raises :class:`WorkerLost` naming the ranks that did not
reach it or stopped beating. Before its data moves, every collective checks with
:func:`agree` (one all-reduce of two integers) that all workers are at the same kind of
collective with the same keys, order, shapes and dtypes, and raises
:class:`CollectiveMismatch` on every rank, naming the rank and key, when they are not.
"""
from __future__ import annotations

import atexit
import datetime
import functools
import hashlib
import json
import sys
import threading
import time

import torch

from .. import config
from ..base import MXNetError
from .rendezvous import (
    BEAT_S,
    _dist,
    _dmlc_rendezvous,
    _env_int,
    _env_rendezvous,
    _last_beat,
    _signed,
    _timeout,
    _wait_for_workers,
    _warn_if_unsigned,
    host_store,
)

_MAX_DESCRIPTION = 64 << 20  # bytes a peer may announce for the description of its collective
_STATE: dict = {}


class WorkerLost(MXNetError):
    """A collective failed because other workers died or stopped answering."""


class CollectiveMismatch(MXNetError):
    """Workers reached different collectives, or one collective with different keys, key
    order, shapes or dtypes."""


def _join() -> dict:
    """Rendezvous and make the process group (once per process)."""
    if _STATE:
        return _STATE
    dist = _dist()
    _warn_if_unsigned()
    if config.env("DMLC_ROLE"):
        store, rank, size = _dmlc_rendezvous()
    else:
        store, rank, size = _env_rendezvous()
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


def _beat(store, rank: int) -> None:
    key = f"beat/{rank}"
    while not _STATE.get("done"):
        try:
            store.set(key, _signed(key, f"{time.time()!r} {_STATE['seq']}"))
        except Exception:  # the store host is gone: collectives will say so
            return
        time.sleep(BEAT_S)


def _leave() -> None:
    """At exit: stop beating, count this worker done (the scheduler waits for all) and take
    the process group down before the interpreter does (its threads must not outlive it)."""
    _STATE["done"] = True
    _STATE["beat"].join(timeout=2 * BEAT_S)
    key = f"done/{_STATE['rank']}"
    try:
        _STATE["store"].set(key, _signed(key, "done"))
    except Exception:  # nobody is left to tell
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
    time.sleep(2 * BEAT_S)  # let every live peer publish its latest count
    now = time.time()
    for r in range(state["size"]):
        if r == state["rank"]:
            continue
        try:
            beat, reached = _last_beat(store, r)
        except Exception:  # the store itself is unreachable
            return [r for r in range(state["size"]) if r != state["rank"]]
        if reached < seq or now - beat > 6 * BEAT_S:
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
    """Sum ``tensor`` over all workers, in place (every worker gets the same bytes). Call
    :func:`agree` first: gloo pairs collectives by position and never checks them."""
    _collective(what, lambda: _dist().all_reduce(tensor))


def all_gather(tensor: torch.Tensor, what: str = "all_gather") -> list[torch.Tensor]:
    """Every worker's ``tensor`` (same shape and dtype on all workers), in rank order
    (after :func:`agree`)."""
    out = [torch.empty_like(tensor) for _ in range(_join()["size"])]
    _collective(what, lambda: _dist().all_gather(out, tensor.contiguous()))
    return out


def broadcast(tensor: torch.Tensor, src: int = 0, what: str = "broadcast") -> None:
    """Overwrite ``tensor`` with rank ``src``'s, in place (after :func:`agree`)."""
    _collective(what, lambda: _dist().broadcast(tensor, src))


def barrier() -> None:
    """Wait until every worker arrives (the agreement of :func:`agree` alone: two integers
    all-reduced on the CPU, whatever the backends)."""
    agree("barrier", [])


def fingerprint(what: str, entries: list) -> int:
    """A 62-bit digest of a collective's kind ``what`` and its JSON-able ``entries`` (what
    :func:`agree` compares; callers cache it per signature).

    >>> fingerprint("kvstore push", [["'w'", [2, 3], "float32", "cpu"]]) > 0
    True
    """
    text = json.dumps([what, entries])
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 2


def agree(what: str, entries: list, digest: int | None = None) -> None:
    """Check that every worker is at the same collective ``what`` with the same ``entries``
    (e.g. ``[key, shape, dtype, device]`` per key, in order) before its data moves.

    Costs one all-reduce of two integers (``digest``: :func:`fingerprint`). Only when the
    workers disagree do they exchange their entries; then every worker raises
    :class:`CollectiveMismatch` naming the first rank and key that differ from rank 0's, so
    none hangs and no data collective pairs with one of another kind or layout.
    """
    digest = fingerprint(what, entries) if digest is None else digest
    header = torch.tensor([digest, -digest], dtype=torch.int64)
    dist = _dist()
    _collective(what, lambda: dist.all_reduce(header, op=dist.ReduceOp.MAX))
    if header.tolist() == [digest, -digest]:  # max == min == ours on every rank
        return
    seq = _STATE["seq"]
    seen = _gather_json({"op": what, "entries": entries}, what)
    raise CollectiveMismatch(f"{what} (collective #{seq}): workers disagree: "
                             f"{_disagreement(seen)}")


def _gather_json(obj, what: str) -> list:
    """Every rank's JSON-able ``obj``, on every rank (two all-gathers; no pickle)."""
    dist, size = _dist(), _STATE["size"]
    data = json.dumps(obj).encode()
    lengths = [torch.zeros(1, dtype=torch.int64) for _ in range(size)]
    _collective(what, lambda: dist.all_gather(lengths, torch.tensor([len(data)])))
    sizes = [int(n) for n in lengths]
    for r, n in enumerate(sizes):
        if not 0 < n <= _MAX_DESCRIPTION:
            raise CollectiveMismatch(f"{what}: workers disagree, and rank {r} announced a "
                                     f"{n}-byte description of its collective")
    mine = torch.zeros(max(sizes), dtype=torch.uint8)
    mine[:len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    texts = [torch.empty_like(mine) for _ in range(size)]
    _collective(what, lambda: dist.all_gather(texts, mine))
    seen = []
    for r, (text, n) in enumerate(zip(texts, sizes)):
        try:
            got = json.loads(text[:n].numpy().tobytes())
        except ValueError:
            got = None
        if not (isinstance(got, dict) and isinstance(got.get("op"), str)
                and isinstance(got.get("entries"), list)):
            raise CollectiveMismatch(f"{what}: workers disagree, and rank {r} sent an "
                                     "unreadable description of its collective")
        seen.append(got)
    return seen


def _disagreement(seen: list[dict]) -> str:
    """The first rank whose collective differs from rank 0's, and how."""
    base = seen[0]
    for r, other in enumerate(seen[1:], 1):
        if other != base:
            return f"rank {r} {_difference(base, other)}"
    return "the digests differ but the descriptions agree"  # two versions of symgraph


def _difference(base: dict, other: dict) -> str:
    if other["op"] != base["op"]:
        return (f"is in {other['op']}{_keys_of(other)} where rank 0 is in "
                f"{base['op']}{_keys_of(base)}")
    ours, theirs = base["entries"], other["entries"]
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a[:1] != b[:1]:
            return (f"has key {_item(b, 0)} at position {i} where rank 0 has key "
                    f"{_item(a, 0)} (every worker must push the same keys in the same order)")
        if a != b:
            return (f"has key {_item(b, 0)} with {_layout_of(b)} where rank 0 has "
                    f"{_layout_of(a)}")
    n = min(len(ours), len(theirs))
    extra = (ours if len(ours) > n else theirs)[n]
    return (f"has {len(theirs)} key(s) where rank 0 has {len(ours)} (the first key not on "
            f"both is {_item(extra, 0)})")


def _item(entry, i: int) -> str:
    return str(entry[i]) if isinstance(entry, list) and len(entry) > i else "?"


def _layout_of(entry) -> str:
    shape = _item(entry, 1)
    if isinstance(entry, list) and len(entry) > 1 and isinstance(entry[1], list):
        shape = str(tuple(entry[1]))
    return f"shape {shape}, dtype {_item(entry, 2)} on {_item(entry, 3)}"


def _keys_of(desc: dict) -> str:
    keys = [_item(e, 0) for e in desc["entries"][:6]]
    more = ", ..." if len(desc["entries"]) > 6 else ""
    return f" of key(s) {', '.join(keys)}{more}" if keys else ""


def serve_role() -> None:
    """Under MXNet's launch contract, a scheduler or server process: host the rendezvous
    store (scheduler), wait until every worker is done, and exit without returning (the
    script's body never runs). Workers and plain processes return at once."""
    role = config.env("DMLC_ROLE")
    if role not in ("scheduler", "server"):
        return
    dist = _dist()
    _warn_if_unsigned()
    size = _env_int("DMLC_NUM_WORKER")
    host, port = config.env("DMLC_PS_ROOT_URI"), _env_int("DMLC_PS_ROOT_PORT")
    if role == "scheduler":
        store = host_store(host, port)
    else:
        store = dist.TCPStore(host, port, is_master=False, timeout=_timeout())
    store.set_timeout(datetime.timedelta(seconds=2))  # a get of a just-deleted key: _read
    sys.exit(_wait_for_workers(dist.PrefixStore("symgraph", store), size))
