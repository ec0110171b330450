"""``KVStoreBase`` (MXNet 1.9's abstract store and its class registry) and ``create``."""
from __future__ import annotations

import warnings

from ..base import MXNetError

__all__ = ["KVStoreBase", "TestStore", "create"]


class KVStoreBase:
    """An abstract key-value store interface for data parallel training.

    Subclasses registered with :meth:`register` are built by ``mx.kv.create`` from their
    lowercase class name; ``mx.kv.create`` falls back to the built-in
    :class:`~symgraph.kvstore.KVStore` for every other name.

    Examples
    --------
    >>> import symgraph as mx
    >>> @mx.kv.KVStoreBase.register
    ... class EchoStore(mx.kv.KVStoreBase):
    ...     @property
    ...     def type(self):
    ...         return 'echo'
    >>> mx.kv.create('EchoStore').type
    'echo'
    >>> mx.kv.KVStoreBase().rank
    Traceback (most recent call last):
    ...
    NotImplementedError
    """

    OPTIMIZER = "optimizer"
    kv_registry: dict[str, type] = {}

    def broadcast(self, key, value, out, priority: int = 0) -> None:
        """Broadcast ``value`` (of rank 0) to every array of ``out``."""
        raise NotImplementedError()

    def pushpull(self, key, value, out=None, priority: int = 0) -> None:
        """Sum ``value`` into the store and pull the result into ``out`` (``value`` if None)."""
        raise NotImplementedError()

    def set_optimizer(self, optimizer) -> None:
        """Register an optimizer: pushed gradients then update the stored weights."""
        raise NotImplementedError()

    def is_capable(self, capability: str) -> bool:
        """Whether the store supports ``capability`` (e.g. :attr:`OPTIMIZER`)."""
        raise NotImplementedError()

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Save the updater's states to ``fname``."""
        raise NotImplementedError()

    def load_optimizer_states(self, fname: str) -> None:
        """Load the updater's states from ``fname``."""
        raise NotImplementedError()

    @property
    def type(self) -> str:
        """The type of this store, a string."""
        raise NotImplementedError()

    @property
    def rank(self) -> int:
        """The rank of this worker, in ``[0, num_workers)``."""
        raise NotImplementedError()

    @property
    def num_workers(self) -> int:
        """The number of workers."""
        raise NotImplementedError()

    @staticmethod
    def register(klass: type) -> type:
        """Register a store class so that ``mx.kv.create(name)`` builds it (name: lowercase).

        Registering a name twice warns and replaces the earlier class, as MXNet does.

        >>> import symgraph as mx
        >>> @mx.kv.KVStoreBase.register
        ... class MyKVStore(mx.kv.KVStoreBase):
        ...     pass
        >>> type(mx.kv.create('MyKVStore')).__name__
        'MyKVStore'
        """
        if not isinstance(klass, type):
            raise TypeError(f"KVStoreBase.register expects a class, got {type(klass).__name__}")
        name = klass.__name__.lower()
        old = KVStoreBase.kv_registry.get(name)
        if old is not None:
            warnings.warn(f"WARNING: New kvstore {klass.__module__}.{klass.__name__} is "
                          f"overriding existing kvstore {old.__module__}.{old.__name__}",
                          stacklevel=2)
        KVStoreBase.kv_registry[name] = klass
        return klass


@KVStoreBase.register
class TestStore(KVStoreBase):
    """MXNet's store for testing custom stores (``mx.kv.create('teststore')``): sums pushed
    values on the first value's context; no optimizer, rank 0 of 1 worker.

    >>> import symgraph as mx
    >>> kv = mx.kv.create('teststore')
    >>> outs = [mx.nd.zeros((2,)), mx.nd.zeros((2,))]
    >>> kv.pushpull('w', [mx.nd.ones((2,)), mx.nd.ones((2,)) * 2], out=outs)
    >>> outs[1].asnumpy()
    array([3., 3.], dtype=float32)
    >>> type(kv).is_capable('optimizer')
    False
    """

    def broadcast(self, key, value, out, priority: int = 0) -> None:
        for o in out if isinstance(out, list) else [out]:
            o[:] = value

    def pushpull(self, key, value, out=None, priority: int = 0) -> None:
        from ..ndarray import NDArray
        if isinstance(value, NDArray):
            total, targets = value, [] if out is None else out
        else:
            ctx = value[0].context
            total = value[0].as_in_context(ctx).copy()
            for v in value[1:]:
                total += v.as_in_context(ctx)
            targets = value if out is None else out
        for o in targets if isinstance(targets, list) else [targets]:
            o[:] = total

    @staticmethod
    def is_capable(capability: str) -> bool:
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError(f"Unknown capability: {capability}")

    @property
    def type(self) -> str:
        return "teststore"

    @property
    def rank(self) -> int:
        return 0

    @property
    def num_workers(self) -> int:
        return 1


def create(name: str = "local") -> KVStoreBase:
    """Create a key-value store: a registered class by lowercase name, else a built-in store.

    Built-in types (MXNet 1.9.1 accepts any name without ``dist``/``nccl``/``horovod`` and
    reports it lowercased as ``type``): ``'local'`` (and ``'local_update_cpu'``,
    ``'local_allreduce_cpu'``) keep the store's copy on the CPU; names containing ``'device'``
    (``'device'``, ``'local_allreduce_device'``) keep it on the first device and allow
    gradient compression. Names containing ``'dist'`` make a
    :class:`~symgraph.kvstore.dist.DistKVStore` on torch.distributed (``'dist_sync'``,
    ``'dist_device_sync'``, ``'dist_async'``).

    Parameters
    ----------
    name : str, default 'local'
        The type of KVStore.

    Returns
    -------
    KVStoreBase
        The created store.

    Examples
    --------
    >>> import symgraph as mx
    >>> kv = mx.kv.create('Device')
    >>> kv.type, kv.rank, kv.num_workers
    ('device', 0, 1)
    >>> mx.kv.create(3)
    Traceback (most recent call last):
    ...
    TypeError: name must be a string
    """
    if not isinstance(name, str):
        raise TypeError("name must be a string")
    name = name.lower()
    if name in KVStoreBase.kv_registry:
        return KVStoreBase.kv_registry[name]()
    if "dist" in name:
        from .dist import DistKVStore
        return DistKVStore(name)
    if any(word in name for word in ("nccl", "horovod")):
        raise MXNetError(f"kvstore type {name!r} is not supported by symgraph: use 'device' "
                         "on one machine or 'dist_device_sync' across machines")
    from .kvstore import KVStore
    return KVStore(name)
