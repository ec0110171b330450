"""Distributed stores on torch.distributed: ``dist_sync``, ``dist_device_sync``, ``dist_async``.

There is no server process: every worker keeps a replica of each key, and the collectives
of :mod:`symgraph.distributed` keep the replicas equal.

- ``init``: rank 0's values are broadcast (on MXNet only worker 0's init reaches the
  servers), so every worker starts from the same weights.
- ``push`` (sync; any type without ``_async``): each worker sums its device copies of a key
  (then 2-bit quantises that sum, with a residual per key, when compression is set) straight
  into flat buffers of at most ``config.dist_bucket_mb`` each, kept per push signature, and
  the buffers are all-reduced in place — a few collectives per ``push`` call, not one per
  key, and no concatenation or copy back. With an
  optimizer set, every worker applies the same update to its replica, from the same bytes,
  so replicas stay bit-identical; without one the stored value becomes the sum, so a pull
  after a push sees the sum over all workers of that step, as from MXNet's servers.
- ``push`` (``dist_async``): a worker applies its own pushes at once, waiting for nobody;
  every ``config.async_period`` pushes of a key the replicas are averaged over the workers
  (bounded staleness, not MXNet's server-side asynchrony; see docs/compat.md). Workers must
  push each key equally often.
- ``save_optimizer_states``/``load_optimizer_states`` work on any worker (each has the
  updater); symgraph's checkpoint writers write from rank 0 only.
- A pushed value whose shape differs from the stored one raises ``ShapeError`` naming the
  key and both shapes on that worker, before its collective; the other workers then fail
  with ``WorkerLost`` when it exits (or after the timeout), never hang. After a
  ``WorkerLost`` the process group is unusable and the store's values are undefined:
  restart the job from its last checkpoint.
- Before its data moves, every ``init``, sync ``push``/``pushpull``, ``dist_async``
  averaging and ``barrier`` checks (:func:`symgraph.distributed.agree`: one all-reduce of
  two integers; the digest of a push signature is computed once) that every worker is at
  the same call with the same keys, in the same order, with the same shapes and dtypes.
  When not, every worker raises ``CollectiveMismatch`` naming the rank and the key, e.g.
  ``kvstore push (collective #5): workers disagree: rank 1 has key 'b' at position 0
  where rank 0 has key 'a' ...``, and the replicas are left as they were.
"""
from __future__ import annotations

import math

import torch

from .. import config, distributed
from ..base import ShapeError
from .kvstore import KVStore, _pairs, _sum

__all__ = ["DistKVStore"]


def _buckets(specs: list[tuple]) -> list[list[int]]:
    """Indices of consecutive ``(nbytes, dtype, device)`` specs grouped by dtype and device,
    at most ``dist_bucket_mb`` per group (a larger item is a group of its own)."""
    limit = config.get().dist_bucket_mb * (1 << 20)
    groups: list[list[int]] = []
    size, last = 0, None
    for i, (nbytes, dtype, device) in enumerate(specs):
        if last is None or last != (dtype, device) or size + nbytes > limit:
            groups.append([i])
            size, last = nbytes, (dtype, device)
        else:
            groups[-1].append(i)
            size += nbytes
    return groups


def _spec(t: torch.Tensor) -> tuple:
    return t.numel() * t.element_size(), t.dtype, t.device


def _entry(key, shape, dtype: torch.dtype, device: torch.device) -> list:
    """What workers compare of one key of a collective (:func:`distributed.agree`)."""
    return [repr(key), list(shape), str(dtype).replace("torch.", ""), device.type]


def _bucketed(what: str, keys: list, tensors: list[torch.Tensor], collective) -> None:
    """Once the workers agree on ``keys`` and their tensors, run ``collective(flat)`` (in
    place) on flattened buckets of ``tensors``; results are written back into the tensors
    (for rare calls: init, async averaging)."""
    distributed.agree(what, [_entry(k, t.shape, t.dtype, t.device)
                             for k, t in zip(keys, tensors)])
    for group in _buckets([_spec(t) for t in tensors]):
        members = [tensors[i] for i in group]
        if len(members) == 1 and members[0].is_contiguous():
            collective(members[0])
            continue
        flat = torch.cat([t.reshape(-1) for t in members])
        collective(flat)
        for t, piece in zip(members, flat.split([t.numel() for t in members])):
            t.copy_(piece.view(t.shape))


class _FlatLayout:
    """Preallocated flat buffers for one push signature (keys, shapes, dtypes, devices):
    each key's merged value is a view into a bucket's buffer, so a push sums straight into
    the buffers and all-reduces them in place — no concatenation, no copy back."""

    def __init__(self, shapes: list[tuple], dtype_devices: list[tuple]):
        specs = [(math.prod(shape) * torch.empty((), dtype=dt).element_size(), dt, dev)
                 for shape, (dt, dev) in zip(shapes, dtype_devices)]
        self.buffers: list[torch.Tensor] = []
        self.views: list[torch.Tensor] = [None] * len(shapes)
        for group in _buckets(specs):
            _, dtype, device = specs[group[0]]
            sizes = [math.prod(shapes[i]) for i in group]
            flat = torch.empty(sum(sizes), dtype=dtype, device=device)
            self.buffers.append(flat)
            for i, piece in zip(group, flat.split(sizes)):
                self.views[i] = piece.view(shapes[i])
        self.entries: list = []  # what workers compare at each push (set by the store)
        self.digest = 0


class DistKVStore(KVStore):
    """A store whose keys are kept equal on every worker process (see the module docstring).

    Made by ``mx.kv.create('dist_sync')`` (also ``'dist'``, ``'dist_device_sync'``,
    ``'dist_sync_device'``, ``'dist_async'``) in a process started by
    ``python -m symgraph.launch``, ``torchrun`` or MXNet's launch environment; creating it
    joins the process group.
    """

    def __init__(self, name: str = "dist_sync"):
        super().__init__(name)
        self._async = "_async" in self._type
        self._pushes: dict = {}  # dist_async: pushes of each key since it was averaged
        self._layouts: dict = {}  # push signature -> _FlatLayout
        distributed.rank()  # join now: a bad launch fails where the store is made

    @property
    def rank(self) -> int:
        """This worker's rank in ``[0, num_workers)``."""
        return distributed.rank()

    @property
    def num_workers(self) -> int:
        """Number of worker processes."""
        return distributed.num_workers()

    def barrier(self) -> None:
        """Wait until every worker arrives."""
        distributed.barrier()

    _barrier = barrier

    def init(self, key, value) -> None:
        """Initialise keys with rank 0's values (every worker must call it alike; when the
        workers' keys, shapes or dtypes differ, none of the keys is initialised)."""
        super().init(key, value)
        keys = list(dict.fromkeys(k for k, _ in _pairs(key, value)))
        try:
            _bucketed("kvstore init", keys, [self._store[k] for k in keys],
                      lambda flat: distributed.broadcast(flat, 0, "kvstore init"))
        except distributed.CollectiveMismatch:
            for k in keys:  # all were new: the base class refuses a second init
                del self._store[k]
            raise

    def push(self, key, value, priority: int = 0) -> None:
        super().push(key, value, priority)
        if self._async:
            self._average_due([k for k, _ in _pairs(key, value)])

    # ------------------------------------------------------------------ internal interface
    def _reduce_all(self, pushed: list[tuple]) -> list[torch.Tensor]:
        """Sync: each key's sum, a view into the push signature's flat buffers. Without an
        optimizer that view becomes the stored value; the buffer is only written again by
        a push of the same keys, which replaces all of their stored values anyway."""
        if self._async:
            return [self._local(k, tensors) for k, tensors in pushed]
        layout = self._layout(pushed)
        distributed.agree("kvstore push", layout.entries, layout.digest)
        for (key, tensors), view in zip(pushed, layout.views):
            if self._compression is None:
                _sum(tensors, view.device, out=view)
            else:
                view.copy_(self._local(key, tensors))
        for flat in layout.buffers:
            distributed.all_reduce(flat, "kvstore push")
        return layout.views

    def _layout(self, pushed: list[tuple]) -> _FlatLayout:
        """The flat buffers of this push signature (made at its first push)."""
        signature = tuple((k, tuple(ts[0].shape), ts[0].dtype, self._home(ts[0]))
                          for k, ts in pushed)
        layout = self._layouts.get(signature)
        if layout is None:
            for key, shape, _, _ in signature:
                stored = tuple(self._store[key].shape)
                if shape != stored:
                    raise ShapeError(f"push of key {key}: the pushed shape {list(shape)} "
                                     f"differs from the stored shape {list(stored)}")
            if len(self._layouts) >= 8:  # a few signatures are in use at any time
                self._layouts.clear()
            layout = self._layouts[signature] = _FlatLayout(
                [sig[1] for sig in signature], [sig[2:] for sig in signature])
            layout.entries = [_entry(*sig) for sig in signature]
            layout.digest = distributed.fingerprint("kvstore push", layout.entries)
        return layout

    def _local(self, key, tensors: list[torch.Tensor]) -> torch.Tensor:
        """This worker's contribution: its copies summed, then quantised if compressing."""
        merged = _sum(tensors, self._home(tensors[0]))
        if self._compression is not None:
            merged = self._compression.quantize(key, 0, merged)
        return merged

    def _average_due(self, keys: list) -> None:
        """dist_async: average the replicas of keys pushed ``async_period`` times."""
        period, due = config.get().async_period, []
        for k in dict.fromkeys(keys):
            self._pushes[k] = self._pushes.get(k, 0) + 1
            if self._pushes[k] % period == 0:
                due.append(k)
        if due:
            size = self.num_workers

            def average(flat: torch.Tensor) -> None:
                distributed.all_reduce(flat, "kvstore average")
                flat.div_(size)
            _bucketed("kvstore average", due, [self._store[k] for k in due], average)
