"""The built-in single-machine ``KVStore`` ('local', 'device' and MXNet's aliases).

Internal interface (what the distributed stores override; callers never see it):

- ``_reduce_all([(key, values)]) -> [value]``: ``_reduce`` of every key of one push;
- ``_reduce(key, values) -> value``: sum the device copies of one pushed key (after 2-bit
  compression when set) onto the merge device: dense tensors, or row_sparse values
  (:mod:`symgraph.kvstore.rowsparse`) whose sum is the union of their rows;
- ``_apply(key, merged)``: run the updater on the stored weight, or store ``merged``;
- ``_broadcast(key, outs)``: copy the stored value into every output array.

``push`` is ``_reduce_all`` then ``_apply``; ``pull`` is ``_broadcast``. A distributed store
(:mod:`symgraph.kvstore.dist`) all-reduces the merged values across workers in
``_reduce_all`` and reports its own ``rank``, ``num_workers`` and ``barrier``.
"""
from __future__ import annotations

import torch

from ..base import MXNetError, ShapeError
from ..context import context_of
from ..fileio import atomic_write
from ..ndarray import NDArray
from ..ndarray.sparse_array import assign, value_of, wrap
from ..sparse import formats
from ..sparse.dispatch import densify
from .base import KVStoreBase
from .compression import TwoBitCompression
from .rowsparse import merge, pulled_rows
from .rowsparse import sum_dense as _sum

__all__ = ["KVStore", "each_key"]


def _pairs(keys, values, what: str = "value") -> list[tuple]:
    """``(key, [arrays])`` pairs from MXNet's key/value argument forms."""
    if isinstance(keys, (list, tuple)):
        if not isinstance(values, (list, tuple)) or len(keys) != len(values):
            raise MXNetError(f"{len(keys)} keys need a list of {len(keys)} {what}s")
        pairs = [p for k, v in zip(keys, values) for p in _pairs(k, v, what)]
        if len({isinstance(k, str) for k, _ in pairs}) > 1:
            raise MXNetError("inconsistent types of keys detected.")
        return pairs
    if not isinstance(keys, (int, str)) or isinstance(keys, bool):
        raise MXNetError(f"unexpected type for keys: {type(keys)}")
    arrays = [values] if isinstance(values, NDArray) else list(values)
    for arr in arrays:
        if not isinstance(arr, NDArray):
            raise MXNetError(f"{what} for key {keys} must be NDArrays, got {type(arr).__name__}")
    return [(keys, arrays)]


def each_key(kv, method: str, keys: list, priorities: list | None = None, **arrays) -> None:
    """``kv.<method>(keys, **arrays)`` for several keys (``arrays``: one list entry per key).

    symgraph's own stores take all keys in one call, so a distributed store runs a few
    flattened collectives for them; any other ``KVStoreBase`` gets one call per key, with
    the key's priority, as MXNet 1.9's training loops make them.

    >>> import symgraph as mx
    >>> kv = mx.kv.create()
    >>> each_key(kv, 'init', ['a', 'b'], value=[mx.nd.ones((1,)), mx.nd.zeros((1,))])
    >>> sorted(kv._store)
    ['a', 'b']
    """
    if not keys:
        return
    call = getattr(kv, method)
    if isinstance(kv, KVStore):
        call(list(keys), **{n: None if a is None else list(a) for n, a in arrays.items()})
        return
    for i, key in enumerate(keys):
        extra = {} if priorities is None else {"priority": priorities[i]}
        call(key, **{n: None if a is None else a[i] for n, a in arrays.items()}, **extra)


class KVStore(KVStoreBase):
    """A key-value store synchronising values over the devices of one machine.

    Build it with ``mx.kv.create(name)``. Keys are ints or strings (not both in one store).
    ``push`` sums the pushed copies; with an optimizer set (``set_optimizer``) the sum is the
    gradient applied to the stored weight, otherwise it replaces the stored value. ``pull``
    copies the stored value into each output, on the output's own context.

    Parameters
    ----------
    name : str, default 'local'
        The store type (lowercased); names containing ``'device'`` keep the store's copy on
        the first device instead of the CPU and allow gradient compression.

    Examples
    --------
    >>> import symgraph as mx
    >>> kv = mx.kv.create('local')
    >>> kv.init(3, mx.nd.ones((2, 3)))
    >>> kv.push(3, [mx.nd.ones((2, 3)) * 2, mx.nd.ones((2, 3)) * 3])
    >>> out = [mx.nd.zeros((2, 3)), mx.nd.zeros((2, 3))]
    >>> kv.pull(3, out=out)
    >>> out[1].asnumpy()
    array([[5., 5., 5.],
           [5., 5., 5.]], dtype=float32)
    >>> kv.init(3, mx.nd.ones((2, 3)))
    Traceback (most recent call last):
    ...
    symgraph.base.MXNetError: duplicate init of key 3. Please double check if you called \
kv.init or kv.broadcast with this key multiple times
    """

    def __init__(self, name: str = "local"):
        self._type = name.lower()
        self._store: dict = {}
        self._key_is_str: bool | None = None
        self._updater = None
        self._compression: TwoBitCompression | None = None

    # ------------------------------------------------------------------ properties
    @property
    def type(self) -> str:
        """The store type, e.g. ``'local'`` or ``'device'``."""
        return self._type

    @property
    def rank(self) -> int:
        """This worker's rank: always 0 on one machine."""
        return 0

    @property
    def num_workers(self) -> int:
        """Number of workers: always 1 on one machine."""
        return 1

    def is_capable(self, capability: str) -> bool:
        """Whether the store supports ``capability``; only ``'optimizer'`` is known.

        >>> import symgraph as mx
        >>> mx.kv.create().is_capable(mx.kv.KVStoreBase.OPTIMIZER)
        True
        >>> mx.kv.create().is_capable('sparse')
        Traceback (most recent call last):
        ...
        ValueError: Unknown capability: sparse
        """
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return True
        raise ValueError(f"Unknown capability: {capability}")

    # ------------------------------------------------------------------ keys
    def _check_key_type(self, key) -> None:
        is_str = isinstance(key, str)
        if self._key_is_str is None:
            self._key_is_str = is_str
        elif self._key_is_str != is_str:
            raise MXNetError("Mixed key types are not allowed: this store uses "
                             f"{'str' if self._key_is_str else 'int'} keys, got {key!r}")

    def _stored(self, key) -> torch.Tensor:
        self._check_key_type(key)
        if key not in self._store:
            if isinstance(key, str):
                raise MXNetError(f"key {key} doesn't exist. Did you init?")
            raise MXNetError(f"key {key} has not been inited")
        return self._store[key]

    def _home(self, tensor: torch.Tensor) -> torch.device:
        """Where the store keeps a key: the CPU ('local'), or the value's device ('device')."""
        return tensor.device if "device" in self._type else torch.device("cpu")

    # ------------------------------------------------------------------ public API
    def init(self, key, value) -> None:
        """Initialise one key or a list of keys; each key exactly once.

        Parameters
        ----------
        key : int, str, or list of int or str
            The keys.
        value : NDArray or list of NDArray
            The initial values (one per key).

        >>> import symgraph as mx
        >>> kv = mx.kv.create()
        >>> kv.init(['w', 'b'], [mx.nd.ones((2,)), mx.nd.zeros((1,))])
        >>> kv.init(5, mx.nd.ones((2,)))
        Traceback (most recent call last):
        ...
        symgraph.base.MXNetError: Mixed key types are not allowed: this store uses str keys, got 5
        """
        pairs, key_type, new = _pairs(key, value), self._key_is_str, {}
        try:
            for k, arrays in pairs:
                self._check_key_type(k)
                for arr in arrays:
                    if k in self._store or k in new:
                        raise MXNetError(f"duplicate init of key {k}. Please double check if "
                                         "you called kv.init or kv.broadcast with this key "
                                         "multiple times")
                    new[k] = arr
        except MXNetError:
            self._key_is_str = key_type  # all or nothing: a failed init changes no state
            raise
        for k, arr in new.items():
            value = value_of(arr)
            self._store[k] = formats.clone(formats.to_device(value, self._home(value)))

    def push(self, key, value, priority: int = 0) -> None:
        """Push values: copies of one key (a list, e.g. one per device) are summed.

        Parameters
        ----------
        key : int, str, or list of int or str
            The keys.
        value : NDArray, list of NDArray, or list of list of NDArray
            The values, one NDArray or a list of device copies per key.
        priority : int, optional
            Kept for MXNet compatibility; operations run in call order.

        >>> import symgraph as mx
        >>> kv = mx.kv.create()
        >>> kv.push(9, mx.nd.ones((2,)))
        Traceback (most recent call last):
        ...
        symgraph.base.MXNetError: key 9 has not been inited
        """
        pairs = _pairs(key, value)
        self._check_shapes("push", pairs)
        merged = self._reduce_all([(k, [value_of(a) for a in arrays]) for k, arrays in pairs])
        for (k, _), m in zip(pairs, merged):
            self._apply(k, m)

    def pull(self, key, out=None, priority: int = 0, ignore_sparse: bool = True) -> None:
        """Copy the stored values into ``out`` (one NDArray or a list per key).

        Outputs that are not dense are skipped when ``ignore_sparse`` (MXNet's default);
        otherwise they get the stored value in their own storage type. A row_sparse value
        pulled into a dense output is densified (use :meth:`row_sparse_pull` for rows).

        >>> import symgraph as mx
        >>> kv = mx.kv.create()
        >>> kv.pull('w', out=mx.nd.zeros((2,)))
        Traceback (most recent call last):
        ...
        symgraph.base.MXNetError: key w doesn't exist. Did you init?
        """
        if out is None:
            raise MXNetError("pull needs `out`: the NDArray(s) to copy the stored value into")
        pairs = self._check_shapes("pull", _pairs(key, out, "output"))
        if ignore_sparse:
            pairs = [(k, [a for a in arrays if not a._is_sparse]) for k, arrays in pairs]
        self._pull_pairs(pairs)

    def _check_shapes(self, verb: str, pairs: list[tuple]) -> list[tuple]:
        """``pairs`` after checking that every array has its key's stored shape (MXNet's
        ``copyto`` rule: no broadcasting); a ShapeError naming the key and both shapes
        otherwise, before anything is pushed or pulled."""
        for k, arrays in pairs:
            stored = self._stored(k).shape
            for arr in arrays:
                if tuple(arr.shape) == tuple(stored):
                    continue
                if verb == "push":
                    raise ShapeError(f"push of key {k}: the pushed shape {list(arr.shape)} "
                                     f"differs from the stored shape {list(stored)}")
                raise ShapeError(f"pull of key {k}: operands shape mismatch from.shape = "
                                 f"{list(stored)} to.shape={list(arr.shape)}")
        return pairs

    def _pull_pairs(self, pairs: list[tuple]) -> None:
        for k, arrays in pairs:
            self._broadcast(k, arrays)

    def pushpull(self, key, value, out=None, priority: int = 0) -> None:
        """``push(key, value)`` then ``pull(key, out)``; ``out=None`` pulls into ``value``.

        >>> import symgraph as mx
        >>> kv = mx.kv.create()
        >>> kv.init(0, mx.nd.zeros((2,)))
        >>> grads = [mx.nd.ones((2,)), mx.nd.ones((2,)) * 2]
        >>> kv.pushpull(0, grads)
        >>> grads[0].asnumpy()
        array([3., 3.], dtype=float32)
        """
        outs = self._check_shapes("pull", _pairs(key, value if out is None else out, "output"))
        self.push(key, value, priority)  # the outputs are checked first: all or nothing
        self._pull_pairs([(k, [a for a in arrays if not a._is_sparse]) for k, arrays in outs])

    def broadcast(self, key, value, out, priority: int = 0) -> None:
        """``init(key, value)`` then ``pull(key, out)`` (so each key is broadcast once).

        >>> import symgraph as mx
        >>> kv = mx.kv.create()
        >>> outs = [mx.nd.zeros((2,)), mx.nd.zeros((2,))]
        >>> kv.broadcast('w', mx.nd.ones((2,)) * 7, out=outs)
        >>> outs[1].asnumpy()
        array([7., 7.], dtype=float32)
        """
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority: int = 0, row_ids=None) -> None:
        """Pull only the rows ``row_ids`` of row_sparse keys into row_sparse outputs.

        Each output gets exactly the requested rows of the stored value (zeros where the
        store has none; no rows when the stored value has none), as a row_sparse array.
        ``row_ids`` is one NDArray per output (any shape and order, duplicates allowed),
        or a single NDArray for a list of outputs of one key: the first output is pulled
        and copied into the others.

        Parameters
        ----------
        key : int, str, or list of int or str
            The keys (stored as row_sparse).
        out : RowSparseNDArray, or list (of lists) of RowSparseNDArray
            The outputs.
        priority : int, optional
            Kept for MXNet compatibility.
        row_ids : NDArray or list of NDArray
            The rows to pull, one array per output.

        Examples
        --------
        >>> import symgraph as mx
        >>> kv = mx.kv.create()
        >>> kv.init('e', mx.nd.ones((4, 2)).tostype('row_sparse'))
        >>> out = mx.nd.sparse.zeros('row_sparse', (4, 2))
        >>> kv.row_sparse_pull('e', out=out, row_ids=mx.nd.array([3, 1, 3]))
        >>> out.indices.asnumpy().tolist()
        [1, 3]
        """
        assert out is not None
        assert row_ids is not None
        if isinstance(row_ids, NDArray):
            row_ids = [row_ids]
        assert isinstance(row_ids, list), "row_ids should be NDArray or list of NDArray"
        single = len(row_ids) == 1 and isinstance(out, list)
        pairs = _pairs(key, [out[0]] if single else out, "output")
        ids = [i for _, arrays in _pairs(key, row_ids, "row_ids") for i in arrays]
        assert len(ids) == sum(len(a) for _, a in pairs), \
            "the number of row_ids doesn't match the number of values"
        for _, arrays in pairs:
            for arr in arrays:
                if arr.stype != formats.ROW_SPARSE:
                    raise MXNetError("Expected row_sparse storage type for row_sparse_pull "
                                     f"values, but detected storage type {arr.stype}")
        self._check_shapes("pull", pairs)
        pos = 0
        for k, arrays in pairs:
            for arr in arrays:
                self._pull_rows(k, arr, value_of(ids[pos]))
                pos += 1
        if single:
            for other in out[1:]:
                out[0].copyto(other)

    def _pull_rows(self, key, out: NDArray, row_ids: torch.Tensor) -> None:
        """Write the rows ``row_ids`` of ``key``'s stored value into ``out``."""
        rows = pulled_rows(key, self._store[key], row_ids)
        assign(out, formats.clone(formats.to_device(rows, value_of(out).device)))

    def set_gradient_compression(self, compression_params: dict) -> None:
        """Compress pushed gradients: ``{'type': '2bit', 'threshold': t}`` (default 0.5).

        Each pushed copy is quantised to ``+t``, ``-t`` or 0 and what was not sent is kept as
        a residual per key and device, added to that copy at the next push. Only stores
        whose type contains ``'device'`` accept it, as in MXNet.

        >>> import symgraph as mx
        >>> kv = mx.kv.create('device')
        >>> kv.set_gradient_compression({'type': '2bit', 'threshold': 0.5})
        >>> kv.init(0, mx.nd.zeros((3,)))
        >>> for _ in range(2):
        ...     kv.push(0, mx.nd.array([0.3, -0.6, 0.1]))
        ...     print(kv._store[0].tolist())
        [0.0, -0.5, 0.0]
        [0.5, -0.5, 0.0]
        >>> mx.kv.create('local').set_gradient_compression({'type': '2bit'})
        Traceback (most recent call last):
        ...
        symgraph.base.MXNetError: Gradient compression is not supported for this type of kvstore
        """
        if "device" not in self._type and "dist" not in self._type:
            raise MXNetError("Gradient compression is not supported for this type of kvstore")
        self._compression = TwoBitCompression.from_params(compression_params)

    # ------------------------------------------------------------------ optimizer
    def set_optimizer(self, optimizer) -> None:
        """Update on the store: pushed gradients go through ``get_updater(optimizer)``.

        >>> import symgraph as mx
        >>> kv = mx.kv.create()
        >>> kv.set_optimizer(mx.optimizer.create('sgd', learning_rate=0.1))  # doctest: +SKIP
        """
        from ..optimizer import get_updater
        self._set_updater(get_updater(optimizer))

    def _set_updater(self, updater) -> None:
        """Set ``updater(key, merged_grad, stored_weight)``, called by every push.

        >>> import symgraph as mx
        >>> kv = mx.kv.create()
        >>> kv.init(3, mx.nd.ones((2,)))
        >>> def update(key, grad, weight):
        ...     weight[:] += grad * 2
        >>> kv._set_updater(update)
        >>> kv.push(3, mx.nd.ones((2,)))
        >>> out = mx.nd.zeros((2,)); kv.pull(3, out=out); out.asnumpy()
        array([3., 3.], dtype=float32)
        """
        self._updater = updater

    set_updater = _set_updater

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Write the updater's states (its own byte format) to ``fname`` atomically."""
        atomic_write(fname, self._need_updater("save").get_states(dump_optimizer))

    def load_optimizer_states(self, fname: str) -> None:
        """Read states written by :meth:`save_optimizer_states` into the updater; with
        symgraph's ``Updater`` each state is checked against the stored weight of its key
        first, and on error the updater is left as it was."""
        from ..optimizer import Updater
        updater = self._need_updater("load")
        with open(fname, "rb") as fin:
            blob = fin.read()
        if isinstance(updater, Updater):
            weights = {key: wrap(value) for key, value in self._store.items()}
            updater.set_states(blob, weights=weights, source=fname)
        else:
            updater.set_states(blob)

    def _need_updater(self, verb: str):
        if self._updater is None:
            raise MXNetError(f"Cannot {verb} optimizer states: this kvstore has no optimizer "
                             "(call set_optimizer first)")
        return self._updater

    def barrier(self) -> None:
        """Synchronise workers: a no-op on one machine."""

    _barrier = barrier

    # ------------------------------------------------------------------ internal interface
    def _reduce_all(self, pushed: list[tuple]) -> list:
        """:meth:`_reduce` of every ``(key, values)`` pushed in one call."""
        return [self._reduce(k, values) for k, values in pushed]

    def _reduce(self, key, values: list):
        """Sum the pushed copies of ``key`` onto the merge device (a new value): row_sparse
        copies give a row_sparse sum (the union of their rows), dense ones a dense sum.
        2-bit compression quantises each copy densely, as MXNet's device store does."""
        device = self._home(values[0])
        if self._compression is not None:
            where = f"kvstore push of key {key} with gradient compression"
            values = [self._compression.quantize(key, i, densify(v, where))
                      for i, v in enumerate(values)]
        if all(isinstance(v, torch.Tensor) for v in values):
            return _sum(values, device)
        return merge(key, values, device)

    def _apply(self, key, merged) -> None:
        """Update the stored weight with ``merged`` (updater) or store ``merged`` (in its
        own storage type, as MXNet's local store does)."""
        if self._updater is None:
            stored = self._store[key]
            # MXNet copies into the stored array: the key keeps its dtype
            self._store[key] = merged if merged.dtype == stored.dtype else \
                formats.astype(merged, stored.dtype)
            return
        weight = self._store[key]
        if merged.device != weight.device and merged.device.type != "cpu":
            # MXNet moves the weight to the GPU
            weight = self._store[key] = formats.to_device(weight, merged.device)
        self._update(key, merged, weight)

    def _update(self, key, merged, weight) -> None:
        """Run the updater on ``key``'s stored ``weight`` (a sparse weight's new value is
        read back: updaters replace a sparse array's value rather than write into it)."""
        weight_arr = wrap(weight, context_of(weight.device))
        self._updater(key, wrap(merged, context_of(merged.device)), weight_arr)
        if weight_arr._is_sparse:
            self._store[key] = weight_arr._value

    def _broadcast(self, key, outs: list[NDArray]) -> None:
        """Copy the stored value of ``key`` into each output on its own device, in the
        output's storage type (shapes checked by pull)."""
        value = self._store[key]
        for out in outs:
            if not out._is_sparse and isinstance(value, torch.Tensor):
                out._t.copy_(value)
            else:
                moved = formats.to_device(value, value_of(out).device)
                assign(out, formats.clone(moved) if out._is_sparse else moved)
