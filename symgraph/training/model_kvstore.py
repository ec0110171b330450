"""The kvstore plumbing of ``mx.model``, shared by its training loop, ``Module`` and
``gluon.Trainer``: which store to use (``_create_kvstore``), initialising its keys, and the
two ways of applying gradients (``_update_params_on_kvstore``, ``_update_params``).

:mod:`symgraph.model` re-exports these under MXNet's names.

>>> kv, update_on_kvstore = _create_kvstore('local', 1, {})  # one device: no store
>>> kv, update_on_kvstore
(None, False)
"""
from __future__ import annotations

import numpy as np

from .. import config
from .. import kvstore as kvs
from ..kvstore import each_key


def _create_sparse_kvstore(kvstore):
    """MXNet's store for row_sparse weights: a ``KVStore`` (or a name), always updating on it."""
    if isinstance(kvstore, kvs.KVStore):
        kv = kvstore
    elif isinstance(kvstore, str):
        kv = kvs.create(kvstore)
    else:
        raise TypeError(f"Cannot create '{kvstore}' KVStore with row_sparse parameters. "
                        "The type must be KVStore or str.")
    if not kv.is_capable(kvs.KVStoreBase.OPTIMIZER):
        raise AssertionError("KVStore with sparse weight requires optimizer support. "
                             "However, type(kv) does not support optimizer. "
                             "Please consider other kvstore backends (e.g. dist_device) "
                             "instead.")
    return kv, True


def _create_kvstore(kvstore, num_device: int, arg_params: dict):
    """MXNet's rules: no store for one device unless distributed; huge params update locally;
    ``MXNET_UPDATE_ON_KVSTORE`` (an integer) and the store's optimizer capability decide."""
    update_on_kvstore = config.env("MXNET_UPDATE_ON_KVSTORE")
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, kvs.KVStoreBase):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None  # no need for a store on one device
        else:
            kv = kvs.create(kvstore)
            if kvstore == "local" and arg_params:
                max_size = max(int(np.prod(p.shape)) for p in arg_params.values())
                if max_size > 1024 * 1024 * 16:
                    update_on_kvstore = False
    else:
        raise TypeError("kvstore must be KVStore, str or None")
    if kv is None:
        update_on_kvstore = False
    else:
        update_on_kvstore &= kv.is_capable(kvs.KVStoreBase.OPTIMIZER)
    return kv, update_on_kvstore


def _initialize_kvstore(kvstore, param_arrays, arg_params, param_names,
                        update_on_kvstore) -> None:
    """``init`` every parameter's key; with updates on the store (or a distributed store,
    so every replica starts from rank 0's values) ``broadcast`` it into the device copies."""
    names = [param_names[i] for i in range(len(param_arrays))]
    values = [arg_params[name] for name in names]
    prios = [-i for i in range(len(names))]
    if update_on_kvstore or "dist" in kvstore.type:
        each_key(kvstore, "broadcast", names, prios, value=values, out=param_arrays)
    else:
        each_key(kvstore, "init", names, value=values)


def _live(grad_arrays) -> list[int]:
    """Indices of the parameters that have gradients."""
    return [i for i, grads in enumerate(grad_arrays) if grads[0] is not None]


def _update_params_on_kvstore(param_arrays, grad_arrays, kvstore, param_names) -> None:
    """Push every gradient and pull the updated weights (one store call on our stores)."""
    live = _live(grad_arrays)
    each_key(kvstore, "pushpull", [param_names[i] for i in live], [-i for i in live],
             value=[grad_arrays[i] for i in live], out=[param_arrays[i] for i in live])


def _update_params(param_arrays, grad_arrays, updater, num_device: int, kvstore=None,
                   param_names=None) -> None:
    """Sum gradients through the store (if any), then update on every device."""
    live = _live(grad_arrays)
    if kvstore:
        each_key(kvstore, "pushpull", [param_names[i] for i in live], [-i for i in live],
                 value=[grad_arrays[i] for i in live], out=None)
    if not live:
        return
    for k in range(num_device):  # one (aggregated) updater call per device, as MXNet 1.9
        # index * num_device + k: one optimizer state per device copy, as MXNet
        updater([index * num_device + k for index in live],
                [grad_arrays[index][k] for index in live],
                [param_arrays[index][k] for index in live])
