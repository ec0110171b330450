"""``BaseModule``: the generic fit/score/predict loops every module shares (MXNet 1.x).

>>> import symgraph as mx
>>> mod = mx.mod.Module(mx.sym.Variable('data') * 2, label_names=None)
>>> mod.bind(data_shapes=[('data', (2, 3))], for_training=False)
>>> mod.init_params()
>>> mod.predict(mx.nd.ones((2, 3))).asnumpy().tolist()
[[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]
"""
from __future__ import annotations

import logging
import time
import warnings

from .. import metric
from ..base import MXNetError, _as_list
from ..callback import BatchEndParam
from ..context import cpu
from ..initializer import Uniform
from ..io import NDArrayIter
from ..ndarray import NDArray
from ..ndarray import concat as nd_concat
from ..ndarray import load as nd_load
from ..ndarray import save as nd_save


def _metric(eval_metric):
    return eval_metric if isinstance(eval_metric, metric.EvalMetric) else \
        metric.create(eval_metric)


def _check_input_names(symbol, names, typename: str, throw: bool, args=None) -> None:
    """MXNet's check that every given name is an argument of ``symbol`` (``args``: its
    argument names, when already known): a ValueError, or a warning if not ``throw``."""
    args = symbol.list_arguments() if args is None else args
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(("_weight", "_bias", "_gamma", "_beta"))]
        msg = (f"\033[91mYou created Module with Module(..., {typename}_names={names}) but "
               f"input with name '{name}' is not found in symbol.list_arguments(). "
               "Did you mean one of:\n\t" + "\n\t".join(candidates) + "\033[0m")
        if throw:
            raise ValueError(msg)
        warnings.warn(msg, stacklevel=3)


class BaseModule:
    """The interface of a module: bind, init params/optimizer, forward/backward/update, fit.

    Subclasses implement the abstract methods; ``fit``, ``score``, ``predict`` and
    ``iter_predict`` are written once here, in terms of them.
    """

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # ------------------------------------------------------------ high level
    def forward_backward(self, data_batch) -> None:
        """Forward in training mode, then backward."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        """Run ``eval_data`` through the module and return ``eval_metric``'s name/values."""
        assert self.binded and self.params_initialized
        if reset:
            eval_data.reset()
        eval_metric = _metric(eval_metric)
        eval_metric.reset()
        actual = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            self.update_metric(eval_metric, eval_batch.label)
            if batch_end_callback is not None:
                for cb in _as_list(batch_end_callback):
                    cb(BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                     locals=locals()))
            actual += 1  # MXNet hands score_end_callback the batch count, not the last index
        if score_end_callback:
            for cb in _as_list(score_end_callback):
                cb(BatchEndParam(epoch=epoch, nbatch=actual, eval_metric=eval_metric,
                                 locals=locals()))
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yield ``(outputs, nbatch, batch)`` with padding removed."""
        assert self.binded and self.params_initialized
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            outputs = [out[0:out.shape[0] - pad] for out in self.get_outputs()]
            yield outputs, nbatch, eval_batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        """Outputs over ``eval_data`` (merged over batches by default)."""
        if isinstance(eval_data, NDArray):
            eval_data = NDArrayIter(eval_data, batch_size=eval_data.shape[0])
        outputs = [[o.copy() for o in outs] for outs, _, _ in
                   self.iter_predict(eval_data, num_batch, reset, sparse_row_id_fn)]
        if not outputs or not merge_batches:
            return outputs
        merged = [nd_concat(*[b[i] for b in outputs], dim=0) for i in range(len(outputs[0]))]
        if len(merged) == 1 and not always_output_list:
            return merged[0]
        return merged

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=None, arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None) -> None:
        """Train: bind, init params and optimizer, then epochs of forward/backward/update."""
        if num_epoch is None:
            raise ValueError("please specify number of epochs")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer if initializer is not None else Uniform(0.01),
                         arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        validation_metric = validation_metric if validation_metric is not None else eval_metric
        eval_metric = _metric(eval_metric)
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            names_values = self._fit_epoch(train_data, eval_metric, epoch, batch_end_callback,
                                           monitor, sparse_row_id_fn)
            for name, val in names_values:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            arg_params_, aux_params_ = self.get_params()
            self.set_params(arg_params_, aux_params_)
            for cb in _as_list(epoch_end_callback or []):
                cb(epoch, self.symbol, arg_params_, aux_params_)
            if eval_data:
                res = self.score(eval_data, validation_metric,
                                 score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            train_data.reset()

    def _fit_epoch(self, train_data, eval_metric, epoch, batch_end_callback, monitor,
                   sparse_row_id_fn):
        data_iter = iter(train_data)
        next_batch = next(data_iter)
        nbatch, end_of_batch, names_values = 0, False, []
        while not end_of_batch:
            data_batch = next_batch
            if monitor is not None:
                monitor.tic()
            self.forward_backward(data_batch)
            self.update()
            self.update_metric(eval_metric, data_batch.label)
            try:
                next_batch = next(data_iter)
                self.prepare(next_batch, sparse_row_id_fn=sparse_row_id_fn)
            except StopIteration:
                end_of_batch = True
            if monitor is not None:
                monitor.toc_print()
            if end_of_batch:
                names_values = eval_metric.get_global_name_value() \
                    if hasattr(eval_metric, "get_global_name_value") else \
                    eval_metric.get_name_value()
            for cb in _as_list(batch_end_callback or []):
                cb(BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                 locals=locals()))
            nbatch += 1
        return names_values

    # ------------------------------------------------------------ parameters (shared)
    def save_params(self, fname: str) -> None:
        """Save parameters as ``arg:``/``aux:`` entries of a ``.params`` file (atomic)."""
        arg_params, aux_params = self.get_params()
        save_dict = {f"arg:{k}": v.as_in_context(_cpu()) for k, v in arg_params.items()}
        save_dict.update({f"aux:{k}": v.as_in_context(_cpu()) for k, v in aux_params.items()})
        nd_save(fname, save_dict)

    def load_params(self, fname: str) -> None:
        """Load parameters written by :meth:`save_params` (or MXNet)."""
        arg_params, aux_params = {}, {}
        for key, value in nd_load(fname).items():
            kind, _, name = key.partition(":")
            if kind not in ("arg", "aux"):
                raise MXNetError(f"Invalid param file {fname}: key {key!r}")
            (arg_params if kind == "arg" else aux_params)[name] = value
        self.set_params(arg_params, aux_params)

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False) -> None:
        """Set parameter values (MXNet's rule: through ``init_params`` unless missing ones are
        allowed; ignored with a warning when already initialised and not ``force_init``)."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init,
                             allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "set_params call ignored.", stacklevel=2)
            return
        self._assign_params(arg_params, aux_params, force_init, allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def _assign_params(self, arg_params, aux_params, force_init: bool, allow_extra: bool):
        """Copy the given values into the bound arrays (``set_params`` with allow_missing);
        by default through ``init_params`` without an initializer, as MXNet's BaseModule."""
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=True, force_init=force_init, allow_extra=allow_extra)

    def prepare(self, data_batch, sparse_row_id_fn=None) -> None:
        """Prepare for a batch (a :class:`Module` pulls row_sparse parameters here)."""
        if sparse_row_id_fn is not None:
            warnings.warn(UserWarning("sparse_row_id_fn is not invoked for BaseModule."),
                          stacklevel=2)

    @property
    def symbol(self):
        """The module's symbol."""
        return self._symbol

    # ------------------------------------------------------------ the interface (abstract)
    @property
    def data_names(self):
        """Names of the data inputs."""
        raise NotImplementedError()

    @property
    def output_names(self):
        """Names of the outputs."""
        raise NotImplementedError()

    @property
    def data_shapes(self):
        """``DataDesc`` of each data input (bound modules)."""
        raise NotImplementedError()

    @property
    def label_shapes(self):
        """``DataDesc`` of each label input, or None without labels."""
        raise NotImplementedError()

    @property
    def output_shapes(self):
        """``(name, shape)`` of each output (bound modules)."""
        raise NotImplementedError()

    def get_params(self):
        """``(arg_params, aux_params)``: dicts of name -> NDArray."""
        raise NotImplementedError()

    def init_params(self, initializer=None, arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False) -> None:
        """Initialise the parameters and aux states."""
        raise NotImplementedError()

    def _check_init_params(self, arg_params, aux_params, allow_missing: bool) -> None:
        """Raise what ``init_params`` with these values would raise, changing nothing (a
        container checks every module before initialising any); nothing to check here."""

    def get_states(self, merge_multi_context=True):
        """State arrays; a module without states has none (MXNet: only the unmerged form)."""
        assert self.binded and self.params_initialized
        assert not merge_multi_context
        return []

    def set_states(self, states=None, value=None) -> None:
        """Set state arrays; a module without states accepts neither."""
        assert self.binded and self.params_initialized
        assert not states and not value

    def install_monitor(self, mon) -> None:
        """Install a :class:`~symgraph.monitor.Monitor` on the executors."""
        raise NotImplementedError()

    def forward(self, data_batch, is_train=None) -> None:
        """Forward a batch (``is_train`` None: as bound)."""
        raise NotImplementedError()

    def backward(self, out_grads=None) -> None:
        """Backward from the last forward (``out_grads`` for non-loss heads)."""
        raise NotImplementedError()

    def get_outputs(self, merge_multi_context=True):
        """Outputs of the last forward."""
        raise NotImplementedError()

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the data inputs from the last backward."""
        raise NotImplementedError()

    def update(self) -> None:
        """Apply the optimizer to the last gradients."""
        raise NotImplementedError()

    def update_metric(self, eval_metric, labels, pre_sliced=False) -> None:
        """Accumulate ``eval_metric`` over the last outputs and ``labels``."""
        raise NotImplementedError()

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write") -> None:
        """Allocate executors for these input shapes."""
        raise NotImplementedError()

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False) -> None:
        """Create the optimizer (and KVStore)."""
        raise NotImplementedError()


def _cpu():
    return cpu()
