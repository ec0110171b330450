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
- row_sparse values (:mod:`symgraph.kvstore.rowsparse`): ``init`` broadcasts rank 0's
  rows; a sync ``push`` all-gathers each worker's rows (row counts first, then the indices
  and the values, padded to the longest worker's) and sums them in rank order, so the
  replicas stay bit-identical and nothing of the full shape is made; without an optimizer
  the summed rows replace those rows of the stored value (the others stay, as on MXNet's
  servers). ``row_sparse_pull`` serves the requested rows from the local replica; ``pull``
  of a row_sparse key, sparse ``pull`` outputs with ``ignore_sparse=False`` and gradient
  compression with row_sparse values are refused, as MXNet 1.9.1 refuses them.
  ``dist_async`` averages row_sparse replicas over the union of their rows.
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
from ..base import MXNetError, ShapeError
from ..sparse import formats
from . import rowsparse
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


def _entry(key, shape, dtype: torch.dtype, device: torch.device,
           stype: str = formats.DEFAULT) -> list:
    """What workers compare of one key of a collective (:func:`distributed.agree`); a
    sparse key's entry ends with its storage type."""
    entry = [repr(key), list(shape), str(dtype).replace("torch.", ""), device.type]
    return entry if stype == formats.DEFAULT else [*entry, stype]


def _value_entry(key, value) -> list:
    return _entry(key, value.shape, value.dtype, value.device, formats.stype_of(value))


def _flat_run(tensors: list[torch.Tensor], collective) -> None:
    """Run ``collective(flat)`` (in place) on flattened buckets of ``tensors``; results are
    written back into the tensors (for rare calls: init, async averaging)."""
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
        pairs = _pairs(key, value)
        for k, arrays in pairs:
            self._check_sparse_value(k, [a.stype for a in arrays], "init")
        super().init(key, value)
        keys = list(dict.fromkeys(k for k, _ in pairs))
        try:
            distributed.agree("kvstore init", [_value_entry(k, self._store[k]) for k in keys])
        except distributed.CollectiveMismatch:
            for k in keys:  # all were new: the base class refuses a second init
                del self._store[k]
            raise

        def from_root(t: torch.Tensor) -> None:
            distributed.broadcast(t, 0, "kvstore init")
        _flat_run([self._store[k] for k in keys if not self._is_rsp(k)], from_root)
        rsp = [k for k in keys if self._is_rsp(k)]
        if rsp:
            values = rowsparse.broadcast_all([self._store[k] for k in rsp], from_root,
                                             self.rank == 0)
            self._store.update(zip(rsp, values))

    def _is_rsp(self, key) -> bool:
        return rowsparse.is_rsp(self._store[key])

    def _check_sparse_value(self, key, stypes: list[str], verb: str) -> None:
        """Refuse what MXNet's distributed stores refuse of sparse values."""
        if formats.CSR_STYPE in stypes:
            raise MXNetError(f"{verb} of key {key}: csr values are not supported by "
                             "distributed kvstores (only default and row_sparse)")
        if formats.ROW_SPARSE in stypes and self._compression is not None:
            raise MXNetError(f"{verb} of key {key}: Gradient compression for row sparse "
                             "storage type is not supported")

    def pull(self, key, out=None, priority: int = 0, ignore_sparse: bool = True) -> None:
        """Copy the stored dense values into ``out``; row_sparse keys are pulled with
        :meth:`row_sparse_pull` only (as on MXNet's distributed stores)."""
        if out is not None and not ignore_sparse:
            for k, arrays in _pairs(key, out, "output"):
                if any(a._is_sparse for a in arrays):
                    raise MXNetError(f"pull of key {k} into a {arrays[0].stype} array: pull "
                                     "with sparse outputs is not supported by distributed "
                                     "kvstores; use row_sparse_pull")
        super().pull(key, out, priority, ignore_sparse)

    def _broadcast(self, key, outs: list) -> None:
        if outs and self._is_rsp(key):
            raise MXNetError(f"pull of row_sparse key {key} is not supported by distributed "
                             "kvstores: use row_sparse_pull with the rows needed")
        super()._broadcast(key, outs)

    def set_gradient_compression(self, compression_params: dict) -> None:
        """As :meth:`KVStore.set_gradient_compression`; refused once a key is row_sparse."""
        rsp = [k for k in self._store if self._is_rsp(k)]
        if rsp:
            raise MXNetError(f"gradient compression of key {rsp[0]}: Gradient compression "
                             "for row sparse storage type is not supported")
        super().set_gradient_compression(compression_params)

    def push(self, key, value, priority: int = 0) -> None:
        for k, arrays in _pairs(key, value):
            self._check_sparse_value(k, [a.stype for a in arrays], "push")
        super().push(key, value, priority)
        if self._async:
            self._average_due([k for k, _ in _pairs(key, value)])

    # ------------------------------------------------------------------ internal interface
    def _reduce_all(self, pushed: list[tuple]) -> list:
        """Sync: dense keys first (:meth:`_reduce_dense`), then row_sparse ones
        (:meth:`_reduce_rows`), each in one agreement and a few collectives."""
        if self._async:
            return [self._local(k, values) for k, values in pushed]
        dense, rsp = [], []
        for i, (key, values) in enumerate(pushed):
            if all(isinstance(v, torch.Tensor) for v in values):
                dense.append((i, key, values))
                continue
            local = rowsparse.merge(key, values, self._home(values[0]))
            (rsp if rowsparse.is_rsp(local) else dense).append((i, key, [local]))
        merged: list = [None] * len(pushed)
        if dense:
            views = self._reduce_dense([(k, v) for _, k, v in dense])
            for (i, _, _), view in zip(dense, views):
                merged[i] = view
        if rsp:
            for (i, _, _), total in zip(rsp, self._reduce_rows([(k, v[0]) for _, k, v in rsp])):
                merged[i] = total
        return merged

    def _reduce_rows(self, items: list[tuple]) -> list[formats.RowSparse]:
        """Each row_sparse key's sum over the workers: every worker's rows are all-gathered
        (row counts first) and summed in rank order, so every replica gets the same bytes;
        no array of the full shape is made."""
        distributed.agree("kvstore push", [_value_entry(k, v) for k, v in items])
        per_key = rowsparse.gather_all(
            [v for _, v in items], lambda t: distributed.all_gather(t, "kvstore push"),
            self.num_workers)
        return [formats.add_rows(values) for values in per_key]

    def _reduce_dense(self, pushed: list[tuple]) -> list[torch.Tensor]:
        """Each dense key's sum, a view into the push signature's flat buffers. Without an
        optimizer that view becomes the stored value; the buffer is only written again by
        a push of the same keys, which replaces all of their stored values anyway."""
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

    def _local(self, key, values: list):
        """This worker's contribution: its copies summed, then quantised if compressing
        (row_sparse values are refused with compression)."""
        if all(isinstance(v, torch.Tensor) for v in values):
            merged = _sum(values, self._home(values[0]))
        else:
            merged = rowsparse.merge(key, values, self._home(values[0]))
        if self._compression is not None:
            merged = self._compression.quantize(key, 0, merged)
        return merged

    def _apply(self, key, merged) -> None:
        """As :meth:`KVStore._apply`, except that without an optimizer a row_sparse sum
        replaces only its own rows of the stored value (MXNet's servers keep the others)."""
        if self._updater is None and rowsparse.is_rsp(merged):
            self._store[key] = rowsparse.overwrite_rows(self._store[key], merged)
            return
        super()._apply(key, merged)

    def _average_due(self, keys: list) -> None:
        """dist_async: average the replicas of keys pushed ``async_period`` times."""
        period, due = config.get().async_period, []
        for k in dict.fromkeys(keys):
            self._pushes[k] = self._pushes.get(k, 0) + 1
            if self._pushes[k] % period == 0:
                due.append(k)
        if not due:
            return
        size = self.num_workers
        distributed.agree("kvstore average", [_value_entry(k, self._store[k]) for k in due])

        def average(flat: torch.Tensor) -> None:
            distributed.all_reduce(flat, "kvstore average")
            flat.div_(size)
        _flat_run([self._store[k] for k in due if not self._is_rsp(k)], average)
        rsp = [k for k in due if self._is_rsp(k)]
        if rsp:
            per_key = rowsparse.gather_all(
                [self._store[k] for k in rsp],
                lambda t: distributed.all_gather(t, "kvstore average"), size)
            for k, values in zip(rsp, per_key):
                total = formats.add_rows(values)
                self._store[k] = total._replace(data=total.data / size)
