"""Key-value stores for data parallel training: ``mx.kv.create``, ``KVStoreBase``, ``KVStore``.

>>> import symgraph as mx
>>> kv = mx.kv.create('local')
>>> kv.init('w', mx.nd.zeros((2,)))
>>> kv.pushpull('w', [mx.nd.ones((2,)), mx.nd.ones((2,))], out=mx.nd.zeros((2,)))

See :mod:`symgraph.kvstore.kvstore` for the internal reduce/apply/broadcast interface that
a distributed store overrides.
"""
from __future__ import annotations

from . import base, kvstore, kvstore_server
from .base import KVStoreBase, TestStore, create
from .kvstore import KVStore, each_key
from .kvstore_server import KVStoreServer

__all__ = ["KVStore", "KVStoreBase", "KVStoreServer", "TestStore", "base", "create", "each_key",
           "kvstore", "kvstore_server"]
