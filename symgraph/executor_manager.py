"""``mx.executor_manager``: MXNet's older data-parallel API (seed 002), on the one shared
:class:`~symgraph.module.executor_group.DataParallelExecutorGroup`.

>>> import symgraph as mx
>>> net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2,
...                                                  name='fc'), name='softmax')
>>> it = mx.io.NDArrayIter(mx.nd.ones((4, 3)), mx.nd.zeros((4,)), batch_size=4)
>>> names = net.list_arguments()
>>> manager = DataParallelExecutorManager(net, [mx.cpu(0), mx.cpu(1)], it, names,
...                                       ['fc_weight', 'fc_bias'], [])
>>> manager.slices, [a[0].shape for a in manager.param_arrays]
([slice(0, 2, None), slice(2, 4, None)], [(2, 3), (2,)])
"""
from __future__ import annotations

import logging

from . import ndarray as nd
from .base import mx_real_t
from .context import cpu
from .io import DataDesc
from .module.executor_group import DataParallelExecutorGroup as _Group
from .module.executor_group import _split_input_slice

__all__ = ["DataDesc", "DataParallelExecutorGroup", "DataParallelExecutorManager",
           "_split_input_slice", "cpu", "mx_real_t", "nd"]


def _workload(slices) -> list[int]:
    return [s.stop - s.start for s in slices]


class DataParallelExecutorGroup(_Group):
    """A group of executors on different devices (MXNet's ``executor_manager`` signature).

    Parameters
    ----------
    sym : Symbol
    arg_names : list of str
        ``sym.list_arguments()``.
    param_names : list of str
        The trainable parameters.
    ctx : list of Context
    slices : list of slice
        How the batch splits over ``ctx``.
    train_data : DataIter or DataBatch
        Anything with ``provide_data``/``provide_label``.
    shared_group : DataParallelExecutorGroup, optional
        Share parameters (and memory) with it.
    """

    def __init__(self, sym, arg_names, param_names, ctx, slices, train_data, shared_group=None):
        super().__init__(sym, ctx, _workload(slices), train_data.provide_data,
                         train_data.provide_label, param_names, for_training=True,
                         inputs_need_grad=False, shared_group=shared_group)

    def load_data_batch(self, data_batch) -> None:
        """Load data and labels into the executors' arrays."""
        self._load(data_batch)

    def forward(self, is_train: bool = False) -> None:  # MXNet's signature
        """Perform a forward pass on each executor."""
        for exe in self.execs:
            exe.forward(is_train=is_train)


class DataParallelExecutorManager:
    """Manage data-parallel executors for a symbol (optionally one group per bucket).

    Parameters
    ----------
    symbol : Symbol
    ctx : list of Context
    train_data : DataIter
    arg_names, param_names, aux_names : list of str
    work_load_list : list of float, optional
    logger : logging.Logger, optional
    sym_gen : callable, optional
        ``sym_gen(bucket_key) -> Symbol`` for bucketing.
    """

    def __init__(self, symbol, ctx, train_data, arg_names, param_names, aux_names,
                 work_load_list=None, logger=None, sym_gen=None):
        self.logger = logger or logging
        num_device = len(ctx)
        self.logger.info("Start training with %s", str(ctx))
        work_load_list = work_load_list or [1] * num_device
        if len(work_load_list) != num_device:
            raise ValueError("Invalid settings for work load.")
        self.slices = _split_input_slice(train_data.batch_size, work_load_list)
        self.arg_names, self.param_names, self.aux_names = arg_names, param_names, aux_names
        self.ctx = list(ctx)
        self.execgrp = DataParallelExecutorGroup(symbol, arg_names, param_names, self.ctx,
                                                 self.slices, train_data)
        self.symbol = symbol
        self.sym_gen = sym_gen
        self.curr_execgrp = self.execgrp
        self.execgrp_bucket = {train_data.default_bucket_key: self.execgrp} \
            if sym_gen is not None else None

    def install_monitor(self, monitor) -> None:
        """Install ``monitor`` on all executors."""
        if self.sym_gen is not None:
            raise NotImplementedError("Monitoring is not implemented for bucketing")
        self.execgrp.install_monitor(monitor)

    def set_params(self, arg_params, aux_params) -> None:
        """Set parameter and aux values on every executor."""
        self.execgrp.set_params(arg_params, aux_params)

    def copy_to(self, arg_params, aux_params) -> None:
        """Average the executors' parameters into ``arg_params``/``aux_params`` (in place)."""
        self.execgrp.get_params(arg_params, aux_params)

    @property
    def param_arrays(self):
        """Shared parameter arrays (per parameter, one per device)."""
        return self.execgrp.param_arrays

    @property
    def grad_arrays(self):
        """Shared gradient arrays."""
        return self.execgrp.grad_arrays

    @property
    def aux_arrays(self):
        """Shared aux states."""
        return self.execgrp.aux_arrays

    def load_data_batch(self, data_batch) -> None:
        """Load data and labels (switching to the batch's bucket when bucketing)."""
        if self.sym_gen is not None:
            key = data_batch.bucket_key
            if key not in self.execgrp_bucket:
                symbol = self.sym_gen(key)
                self.execgrp_bucket[key] = DataParallelExecutorGroup(
                    symbol, self.arg_names, self.param_names, self.ctx, self.slices,
                    data_batch, shared_group=self.execgrp)
            self.curr_execgrp = self.execgrp_bucket[key]
        self.curr_execgrp.load_data_batch(data_batch)

    def forward(self, is_train: bool = False) -> None:
        """Run forward on the current executor group."""
        self.curr_execgrp.forward(is_train=is_train)

    def backward(self) -> None:
        """Run backward on the current executor group."""
        self.curr_execgrp.backward()

    def update_metric(self, metric, labels, pre_sliced: bool = False) -> None:
        """Update ``metric`` with the current group's outputs."""
        self.curr_execgrp.update_metric(metric, labels, pre_sliced)
