"""``mx.model``: checkpoints, the classic training loop and ``FeedForward``.

``save_checkpoint``/``load_checkpoint`` write and read MXNet 1.x's ``prefix-symbol.json`` and
``prefix-%04d.params`` (``arg:``/``aux:`` keys), atomically. ``_train_multi_device`` keeps
MXNet's contract (seed 000) on the shared data-parallel executor group.
"""
from __future__ import annotations

import logging
import time
from collections import namedtuple

import numpy as np

from . import checkpoint, config, io, metric
from . import kvstore as kvs
from . import ndarray as nd
from . import optimizer as opt
from . import symbol as sym
from .base import MXNetError, mx_real_t
from .context import Context, cpu
from .distributed import one_writer
from .executor_manager import DataParallelExecutorManager
from .initializer import Uniform
from .io import DataDesc
from .kvstore import each_key
from .ndarray import load as nd_load
from .optimizer import get_updater
from .symbol import load as sym_load

# MXNet's names in this module (scripts import them from here)
__all__ = ["BatchEndParam", "Context", "DataDesc", "DataParallelExecutorManager", "FeedForward",
           "LogValidationMetricsCallback", "SKLEARN_INSTALLED", "Uniform", "cpu",
           "get_updater", "io", "kvs", "load_checkpoint", "load_params", "metric",
           "mx_real_t", "nd", "opt", "save_checkpoint", "sym"]
# MXNet's FeedForward subclasses sklearn's BaseEstimator when sklearn is installed;
# symgraph's never does
SKLEARN_INSTALLED = False

BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])


# ------------------------------------------------------------------ checkpoints

@one_writer
def save_checkpoint(prefix: str, epoch: int, symbol, arg_params: dict, aux_params: dict,
                    remove_amp_cast: bool = True) -> None:
    """Write ``prefix-symbol.json`` and ``prefix-%04d.params`` (each atomically; in a
    distributed job only rank 0 writes).

    >>> import tempfile, os, symgraph as mx
    >>> d = tempfile.mkdtemp(); net = mx.sym.Variable('x') * 2
    >>> save_checkpoint(os.path.join(d, 'net'), 3, net, {'w': mx.nd.ones((2,))}, {})
    >>> sorted(os.listdir(d))
    ['net-0003.params', 'net-symbol.json']
    """
    checkpoint.save(prefix, epoch, symbol, _checkpoint_dict(arg_params, aux_params),
                    remove_amp_cast=remove_amp_cast)
    logging.info('Saved checkpoint to "%s"', checkpoint.params_path(prefix, epoch))


def _checkpoint_dict(arg_params: dict, aux_params: dict) -> dict:
    """The ``arg:``/``aux:`` keyed CPU copies a ``.params`` checkpoint holds."""
    save_dict = {f"arg:{k}": v.as_in_context(cpu()) for k, v in arg_params.items()}
    save_dict.update({f"aux:{k}": v.as_in_context(cpu()) for k, v in aux_params.items()})
    return save_dict


class MissingParamError(MXNetError):
    """Values for some parameters are missing (a checkpoint without them, an ``arg_params``
    dict without ``allow_missing``); MXNet raises RuntimeError here."""


class LoadedParams(dict):
    """A dict of parameter values read from a file; ``source`` names the file, so errors
    about its entries (a missing parameter, a wrong shape) can say where they came from."""

    def __init__(self, source: str):
        super().__init__()
        self.source = source


def load_params(prefix: str, epoch: int) -> tuple[dict, dict]:
    """``(arg_params, aux_params)`` from ``prefix-%04d.params`` (:class:`LoadedParams`)."""
    fname = f"{prefix}-{epoch:04d}.params"
    save_dict = nd_load(fname)
    if not isinstance(save_dict, dict):
        raise MXNetError(f"Invalid param file {fname}: it holds an unnamed list of arrays")
    arg_params, aux_params = LoadedParams(fname), LoadedParams(fname)
    for key, value in save_dict.items():
        kind, _, name = key.partition(":")
        if kind == "arg":
            arg_params[name] = value
        elif kind == "aux":
            aux_params[name] = value
        else:
            raise MXNetError(f"Invalid param file {fname}: key {key!r} is not arg:/aux:")
    return arg_params, aux_params


def load_checkpoint(prefix: str, epoch: int):
    """``(symbol, arg_params, aux_params)`` saved by :func:`save_checkpoint` (or MXNet)."""
    symbol = sym_load(f"{prefix}-symbol.json")
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params


# ------------------------------------------------------------------ kvstore plumbing

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
    update_on_kvstore = bool(int(config.env_flag("MXNET_UPDATE_ON_KVSTORE", "1")))
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


def _multiple_callbacks(callbacks, *args, **kwargs) -> None:
    if isinstance(callbacks, (list, tuple)):
        for cb in callbacks:
            cb(*args, **kwargs)
    elif callbacks:
        callbacks(*args, **kwargs)


# ------------------------------------------------------------------ the training loop

def _train_multi_device(symbol, ctx, arg_names, param_names, aux_names, arg_params, aux_params,
                        begin_epoch, end_epoch, epoch_size, optimizer, kvstore,
                        update_on_kvstore, train_data, eval_data=None, eval_metric=None,
                        epoch_end_callback=None, batch_end_callback=None, logger=None,
                        work_load_list=None, monitor=None, eval_end_callback=None,
                        eval_batch_end_callback=None, sym_gen=None) -> None:
    """Train on one or several devices (MXNet 1.x's contract; updates params in place)."""
    logger = logger or logging
    manager = DataParallelExecutorManager(symbol=symbol, sym_gen=sym_gen, ctx=ctx,
                                          train_data=train_data, param_names=param_names,
                                          arg_names=arg_names, aux_names=aux_names,
                                          work_load_list=work_load_list, logger=logger)
    if monitor:
        manager.install_monitor(monitor)
    manager.set_params(arg_params, aux_params)
    updater = None
    if not update_on_kvstore:
        updater = get_updater(optimizer)
    if kvstore:
        _initialize_kvstore(kvstore, manager.param_arrays, arg_params, manager.param_names,
                            update_on_kvstore)
    if update_on_kvstore:
        kvstore.set_optimizer(optimizer)
    step = _Step(manager, kvstore, update_on_kvstore, updater, len(ctx), monitor)
    train_data.reset()
    for epoch in range(begin_epoch, end_epoch):
        tic = time.time()
        eval_metric.reset()
        _run_epoch(step, train_data, eval_metric, epoch, epoch_size, batch_end_callback, logger)
        logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
        if epoch_end_callback or epoch + 1 == end_epoch:
            manager.copy_to(arg_params, aux_params)
        _multiple_callbacks(epoch_end_callback, epoch, symbol, arg_params, aux_params)
        if eval_data:
            _evaluate(manager, eval_data, eval_metric, epoch, eval_batch_end_callback,
                      eval_end_callback)


class _Step:
    """One training step on a batch: forward, backward, update, metric."""

    def __init__(self, manager, kvstore, update_on_kvstore, updater, num_device, monitor):
        self.manager, self.kvstore = manager, kvstore
        self.update_on_kvstore, self.updater = update_on_kvstore, updater
        self.num_device, self.monitor = num_device, monitor

    def __call__(self, data_batch, eval_metric) -> None:
        m = self.manager
        m.load_data_batch(data_batch)
        if self.monitor is not None:
            self.monitor.tic()
        m.forward(is_train=True)
        m.backward()
        if self.update_on_kvstore:
            _update_params_on_kvstore(m.param_arrays, m.grad_arrays, self.kvstore,
                                      m.param_names)
        else:
            _update_params(m.param_arrays, m.grad_arrays, self.updater, self.num_device,
                           self.kvstore, m.param_names)
        if self.monitor is not None:
            self.monitor.toc_print()
        m.update_metric(eval_metric, data_batch.label)


def _run_epoch(step: _Step, train_data, eval_metric, epoch, epoch_size, batch_end_callback,
               logger) -> None:
    nbatch = 0
    while True:
        do_reset = True
        for data_batch in train_data:
            step(data_batch, eval_metric)
            nbatch += 1
            if batch_end_callback is not None:
                _multiple_callbacks(batch_end_callback, BatchEndParam(
                    epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals()))
            if epoch_size is not None and nbatch >= epoch_size:
                do_reset = False
                break
        if do_reset:
            logger.info("Epoch[%d] Resetting Data Iterator", epoch)
            train_data.reset()
        if epoch_size is None or nbatch >= epoch_size:
            break


def _evaluate(manager, eval_data, eval_metric, epoch, eval_batch_end_callback,
              eval_end_callback) -> None:
    eval_metric.reset()
    eval_data.reset()
    total = 0
    for i, eval_batch in enumerate(eval_data):
        manager.load_data_batch(eval_batch)
        manager.forward(is_train=False)
        manager.update_metric(eval_metric, eval_batch.label)
        if eval_batch_end_callback is not None:
            _multiple_callbacks(eval_batch_end_callback, BatchEndParam(
                epoch=epoch, nbatch=i, eval_metric=eval_metric, locals=locals()))
        total += 1
    if eval_end_callback is not None:
        _multiple_callbacks(eval_end_callback, BatchEndParam(
            epoch=epoch, nbatch=total, eval_metric=eval_metric, locals=locals()))
    eval_data.reset()


# below the definitions they need: feedforward uses the training loop, and callback imports
# save_checkpoint back from here
from .callback import LogValidationMetricsCallback  # noqa: E402
from .feedforward import FeedForward  # noqa: E402
