"""The classic training loop of ``mx.model``: ``_train_multi_device``.

It keeps MXNet 1.9.1's 24-parameter signature (scripts and ``FeedForward.fit`` call it);
inside, the arguments become one :class:`_TrainConfig` and a :class:`_FitLoop` runs epochs,
batches, the epoch-end copy of the parameters and validation as small methods over it.
:mod:`symgraph.model` re-exports it.

>>> cfg = _TrainConfig(symbol=None, ctx=[], arg_names=[], param_names=[], aux_names=[],
...                    arg_params={}, aux_params={}, begin_epoch=0, end_epoch=2,
...                    epoch_size=None, optimizer='sgd', kvstore=None,
...                    update_on_kvstore=False, train_data=None)
>>> cfg.callbacks, cfg.logger.__name__
(_Callbacks(epoch_end=None, batch_end=None, eval_end=None, eval_batch_end=None), 'logging')
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from ..callback import BatchEndParam
from ..executor_manager import DataParallelExecutorManager
from ..optimizer import get_updater
from .model_kvstore import _initialize_kvstore, _update_params, _update_params_on_kvstore


def _multiple_callbacks(callbacks, *args, **kwargs) -> None:
    """Call one callback, or each of a list or tuple of them (None: nothing)."""
    if isinstance(callbacks, (list, tuple)):
        for cb in callbacks:
            cb(*args, **kwargs)
    elif callbacks:
        callbacks(*args, **kwargs)


# ------------------------------------------------------------------ the training loop

@dataclass(frozen=True)
class _Callbacks:
    """The four callback slots of the loop (each None, one callable or a list)."""

    epoch_end: Any = None
    batch_end: Any = None
    eval_end: Any = None
    eval_batch_end: Any = None


@dataclass
class _TrainConfig:
    """``_train_multi_device``'s arguments, built once (``callbacks`` groups the four)."""

    symbol: Any
    ctx: list
    arg_names: list
    param_names: list
    aux_names: list
    arg_params: dict
    aux_params: dict
    begin_epoch: int
    end_epoch: int
    epoch_size: int | None
    optimizer: Any
    kvstore: Any
    update_on_kvstore: bool
    train_data: Any
    eval_data: Any = None
    eval_metric: Any = None
    callbacks: _Callbacks = _Callbacks()
    logger: Any = logging
    work_load_list: list | None = None
    monitor: Any = None
    sym_gen: Any = None


def _train_multi_device(symbol, ctx, arg_names, param_names, aux_names, arg_params, aux_params,
                        begin_epoch, end_epoch, epoch_size, optimizer, kvstore,
                        update_on_kvstore, train_data, eval_data=None, eval_metric=None,
                        epoch_end_callback=None, batch_end_callback=None, logger=None,
                        work_load_list=None, monitor=None, eval_end_callback=None,
                        eval_batch_end_callback=None, sym_gen=None) -> None:
    """Train on one or several devices (MXNet 1.x's contract; updates params in place)."""
    callbacks = _Callbacks(epoch_end=epoch_end_callback, batch_end=batch_end_callback,
                           eval_end=eval_end_callback, eval_batch_end=eval_batch_end_callback)
    _FitLoop(_TrainConfig(
        symbol=symbol, ctx=ctx, arg_names=arg_names, param_names=param_names,
        aux_names=aux_names, arg_params=arg_params, aux_params=aux_params,
        begin_epoch=begin_epoch, end_epoch=end_epoch, epoch_size=epoch_size,
        optimizer=optimizer, kvstore=kvstore, update_on_kvstore=update_on_kvstore,
        train_data=train_data, eval_data=eval_data, eval_metric=eval_metric,
        callbacks=callbacks, logger=logger or logging, work_load_list=work_load_list,
        monitor=monitor, sym_gen=sym_gen)).run()


class _FitLoop:
    """One run of the loop over a :class:`_TrainConfig`: binds the executor manager, sets
    up the store and updater, then epochs of batches, the epoch end, validation."""

    def __init__(self, cfg: _TrainConfig):
        self.cfg = cfg
        self.manager = DataParallelExecutorManager(
            symbol=cfg.symbol, sym_gen=cfg.sym_gen, ctx=cfg.ctx, train_data=cfg.train_data,
            param_names=cfg.param_names, arg_names=cfg.arg_names, aux_names=cfg.aux_names,
            work_load_list=cfg.work_load_list, logger=cfg.logger)
        if cfg.monitor:
            self.manager.install_monitor(cfg.monitor)
        self.manager.set_params(cfg.arg_params, cfg.aux_params)
        self.updater = None if cfg.update_on_kvstore else get_updater(cfg.optimizer)
        if cfg.kvstore:
            _initialize_kvstore(cfg.kvstore, self.manager.param_arrays, cfg.arg_params,
                                self.manager.param_names, cfg.update_on_kvstore)
        if cfg.update_on_kvstore:
            cfg.kvstore.set_optimizer(cfg.optimizer)

    def run(self) -> None:
        """Every epoch from ``begin_epoch`` to ``end_epoch``."""
        self.cfg.train_data.reset()
        for epoch in range(self.cfg.begin_epoch, self.cfg.end_epoch):
            self.epoch(epoch)

    def epoch(self, epoch: int) -> None:
        """Train one epoch, then the epoch end and (with ``eval_data``) validation."""
        cfg = self.cfg
        tic = time.time()
        cfg.eval_metric.reset()
        self.train_batches(epoch)
        cfg.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
        self.epoch_end(epoch)
        if cfg.eval_data:
            self.validate(epoch)

    def train_batches(self, epoch: int) -> None:
        """One epoch's batches: a whole pass of ``train_data``, or ``epoch_size`` batches
        (resetting the iterator whenever it runs out)."""
        cfg = self.cfg
        nbatch = 0
        while True:
            do_reset = True
            for data_batch in cfg.train_data:
                self.batch(data_batch)
                nbatch += 1
                if cfg.callbacks.batch_end is not None:
                    _multiple_callbacks(cfg.callbacks.batch_end, BatchEndParam(
                        epoch=epoch, nbatch=nbatch, eval_metric=cfg.eval_metric,
                        locals=locals()))
                if cfg.epoch_size is not None and nbatch >= cfg.epoch_size:
                    do_reset = False
                    break
            if do_reset:
                cfg.logger.info("Epoch[%d] Resetting Data Iterator", epoch)
                cfg.train_data.reset()
            if cfg.epoch_size is None or nbatch >= cfg.epoch_size:
                break

    def batch(self, data_batch) -> None:
        """One step: forward, backward, update, metric."""
        m, monitor = self.manager, self.cfg.monitor
        m.load_data_batch(data_batch)
        if monitor is not None:
            monitor.tic()
        m.forward(is_train=True)
        m.backward()
        self.update()
        if monitor is not None:
            monitor.toc_print()
        m.update_metric(self.cfg.eval_metric, data_batch.label)

    def update(self) -> None:
        """Apply the gradients: on the store, or through it and the local updater."""
        m, cfg = self.manager, self.cfg
        if cfg.update_on_kvstore:
            _update_params_on_kvstore(m.param_arrays, m.grad_arrays, cfg.kvstore,
                                      m.param_names)
        else:
            _update_params(m.param_arrays, m.grad_arrays, self.updater, len(cfg.ctx),
                           cfg.kvstore, m.param_names)

    def epoch_end(self, epoch: int) -> None:
        """Copy the parameters out (when a callback will read them, and after the last
        epoch), then call the epoch-end callbacks."""
        cfg = self.cfg
        if cfg.callbacks.epoch_end or epoch + 1 == cfg.end_epoch:
            self.manager.copy_to(cfg.arg_params, cfg.aux_params)
        _multiple_callbacks(cfg.callbacks.epoch_end, epoch, cfg.symbol, cfg.arg_params,
                            cfg.aux_params)

    def validate(self, epoch: int) -> None:
        """Score ``eval_data`` into ``eval_metric`` (with the eval callbacks)."""
        cfg, manager = self.cfg, self.manager
        cfg.eval_metric.reset()
        cfg.eval_data.reset()
        total = 0
        for i, eval_batch in enumerate(cfg.eval_data):
            manager.load_data_batch(eval_batch)
            manager.forward(is_train=False)
            manager.update_metric(cfg.eval_metric, eval_batch.label)
            if cfg.callbacks.eval_batch_end is not None:
                _multiple_callbacks(cfg.callbacks.eval_batch_end, BatchEndParam(
                    epoch=epoch, nbatch=i, eval_metric=cfg.eval_metric, locals=locals()))
            total += 1
        if cfg.callbacks.eval_end is not None:
            _multiple_callbacks(cfg.callbacks.eval_end, BatchEndParam(
                epoch=epoch, nbatch=total, eval_metric=cfg.eval_metric, locals=locals()))
        cfg.eval_data.reset()
