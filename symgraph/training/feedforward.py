"""``mx.model.FeedForward``: MXNet's (deprecated) estimator-style model, kept for old scripts.

It trains through ``model._train_multi_device`` (so through the shared data-parallel
executor group) and predicts with one executor on the first context.

>>> import warnings, symgraph as mx
>>> with warnings.catch_warnings():
...     warnings.simplefilter('ignore', DeprecationWarning)
...     model = FeedForward(mx.sym.Variable('x') * 2, num_epoch=1)
>>> model.ctx, model.optimizer
([cpu(0)], 'sgd')
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import metric
from .. import optimizer as opt
from ..base import BindError
from ..callback import BatchEndParam
from ..context import Context, cpu
from ..executor import checked_source
from ..initializer import Uniform
from ..io import DataIter, NDArrayIter
from ..module.executor_group import _load_general
from ..ndarray import NDArray, zeros
from ..symbol import Symbol
from .fit_loop import _train_multi_device
from .model_io import load_checkpoint, save_checkpoint
from .model_kvstore import _create_kvstore


def _load_data(batch, targets, names) -> None:
    """Copy the batch's data arrays into the predictor's inputs (exact shapes and count)."""
    if len(batch.data) != len(targets):
        raise BindError(f"data batch has {len(batch.data)} data arrays for {len(targets)} "
                        f"data names {names}")
    _load_general(batch.data, targets, [-1] * len(targets), None, names)


class FeedForward:
    """A symbol with parameters, trained by ``fit`` and applied by ``predict``/``score``.

    Parameters
    ----------
    symbol : Symbol or callable
        The network, or ``sym_gen(bucket_key)`` for bucketing.
    ctx : Context or list of Context, optional
    num_epoch, epoch_size : int, optional
    optimizer : str or Optimizer
    initializer : Initializer
    numpy_batch_size : int
        Batch size when ``X`` is a numpy array.
    arg_params, aux_params : dict, optional
    allow_extra_params : bool
    begin_epoch : int
    **kwargs
        Optimizer arguments (``learning_rate``, ``momentum``, ...).
    """

    def __init__(self, symbol, ctx=None, num_epoch=None, epoch_size=None, optimizer="sgd",
                 initializer=None, numpy_batch_size=128, arg_params=None, aux_params=None,
                 allow_extra_params=False, begin_epoch=0, **kwargs):
        warnings.warn("mxnet.model.FeedForward has been deprecated. Please use "
                      "mxnet.mod.Module instead.", DeprecationWarning, stacklevel=2)
        self.symbol, self.sym_gen = (symbol, None) if isinstance(symbol, Symbol) else \
            (None, symbol)
        self.arg_params, self.aux_params = arg_params, aux_params
        self.allow_extra_params = allow_extra_params
        if self.symbol is not None:
            self._drop_extra_params()
        self.ctx = [cpu()] if ctx is None else ([ctx] if isinstance(ctx, Context) else list(ctx))
        self.num_epoch, self.epoch_size = num_epoch, epoch_size
        self.kwargs = kwargs.copy()
        self.optimizer = optimizer
        self.initializer = initializer if initializer is not None else Uniform(0.01)
        self.numpy_batch_size = numpy_batch_size
        self._pred_exec = None
        self.begin_epoch = begin_epoch

    def __getstate__(self) -> dict:
        """Pickle everything but the prediction executor (rebuilt on the next predict)."""
        state = self.__dict__.copy()
        state["_pred_exec"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def _drop_extra_params(self) -> None:
        if not self.allow_extra_params:
            return
        args, auxs = set(self.symbol.list_arguments()), set(self.symbol.list_auxiliary_states())
        if self.arg_params:
            self.arg_params = {k: v for k, v in self.arg_params.items() if k in args}
        if self.aux_params:
            self.aux_params = {k: v for k, v in self.aux_params.items() if k in auxs}

    def _init_params(self, inputs, overwrite=False):
        shapes = {d[0] if not hasattr(d, "name") else d.name:
                  d[1] if not hasattr(d, "shape") else d.shape for d in inputs}
        arg_shapes, _, aux_shapes = self.symbol.infer_shape(**shapes)
        if arg_shapes is None:
            raise ValueError("FeedForward: cannot infer parameter shapes from the inputs")
        arg_names = self.symbol.list_arguments()
        param_names = [n for n in arg_names if n not in shapes]
        aux_names = self.symbol.list_auxiliary_states()
        arg_params = {n: zeros(s) for n, s in zip(arg_names, arg_shapes) if n in param_names}
        aux_params = {n: zeros(s) for n, s in zip(aux_names, aux_shapes)}
        for mine, given in ((arg_params, self.arg_params), (aux_params, self.aux_params)):
            for k, v in mine.items():  # fresh arrays: self's change only if all succeed
                if given and k in given and not overwrite:
                    # exact shapes: MXNet would broadcast (1, n) into (m, n) here
                    v._t.copy_(checked_source(given[k], v._t, k, "FeedForward: parameter"))
                else:
                    self.initializer(k, v)
        self.arg_params, self.aux_params = arg_params, aux_params
        return arg_names, list(param_names), aux_names

    def _init_iter(self, X, y, is_train: bool):
        if isinstance(X, (np.ndarray, NDArray)):
            if y is None:
                if is_train:
                    raise ValueError("y must be specified when X is numpy.ndarray")
                y = np.zeros(X.shape[0])
            if not isinstance(y, (np.ndarray, NDArray)):
                raise TypeError("y must be ndarray when X is numpy.ndarray")
            if X.shape[0] != y.shape[0]:
                raise ValueError("The numbers of data points and labels not equal")
            y = y.reshape(-1) if y.ndim == 2 and y.shape[1] == 1 else y
            if y.ndim != 1:
                raise ValueError("Label must be 1D or 2D (with 2nd dimension being 1)")
            batch = min(X.shape[0], self.numpy_batch_size)
            if is_train:
                return NDArrayIter(X, y, batch, shuffle=True, last_batch_handle="roll_over")
            return NDArrayIter(X, y, batch, shuffle=False)
        if not isinstance(X, DataIter):
            raise TypeError("X must be DataIter, NDArray or numpy.ndarray")
        return X

    def _init_eval_iter(self, eval_data):
        """MXNet's rules: a (data, label) pair becomes a *training* iterator (shuffled)."""
        if eval_data is None:
            return None
        if isinstance(eval_data, (tuple, list)) and len(eval_data) == 2:
            X, y = eval_data
            if X is None:
                raise ValueError("Eval data is NONE")
            if y is None and isinstance(X, DataIter):
                return X
            X = np.array(X) if isinstance(X, list) else X
            y = np.array(y) if isinstance(y, list) else y
            # is_train=True as in MXNet 1.9.1: shuffled, so it draws from np.random like MXNet
            return self._init_iter(X, y, is_train=True)
        if not isinstance(eval_data, DataIter):
            raise TypeError("Eval data must be DataIter, or NDArray/numpy.ndarray/list pair "
                            "(i.e. tuple/list of length 2)")
        return eval_data

    def _init_predictor(self, input_shapes) -> None:
        shapes = {name: arr.shape for name, arr in self.arg_params.items()}
        shapes.update({d[0] if not hasattr(d, "name") else d.name:
                       d[1] if not hasattr(d, "shape") else d.shape for d in input_shapes})
        if self._pred_exec is not None:
            current = {n: a.shape for n, a in self._pred_exec.arg_dict.items()}
            if all(current.get(k) == tuple(v) for k, v in shapes.items()):
                return
        exe = self.symbol.simple_bind(self.ctx[0], grad_req="null", **shapes)
        exe.copy_params_from(self.arg_params, self.aux_params)
        self._pred_exec = exe

    def _batches(self, X, num_batch, reset):
        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        self._init_predictor(X.provide_data)
        names = [d[0] if not hasattr(d, "name") else d.name for d in X.provide_data]
        arrays = [self._pred_exec.arg_dict[n] for n in names]
        for i, batch in enumerate(X):
            if num_batch is not None and i == num_batch:
                break
            _load_data(batch, arrays, names)
            self._pred_exec.forward(is_train=False)
            yield batch

    def predict(self, X, num_batch=None, return_data=False, reset=True):
        """Outputs for ``X`` (numpy array, NDArray or DataIter), padding removed."""
        outputs, datas, labels = None, [], []
        for batch in self._batches(X, num_batch, reset):
            real = batch.data[0].shape[0] - (batch.pad or 0)
            outs = [o[0:real].asnumpy() for o in self._pred_exec.outputs]
            outputs = [[] for _ in outs] if outputs is None else outputs
            for store, out in zip(outputs, outs):
                store.append(out)
            if return_data:
                datas.append([d[0:real].asnumpy() for d in batch.data])
                labels.append([lab[0:real].asnumpy() for lab in batch.label or []])
        merged = [np.concatenate(x) for x in outputs or []]
        merged = merged[0] if len(merged) == 1 else merged
        if not return_data:
            return merged
        data = [np.concatenate(x) for x in zip(*datas)]
        label = [np.concatenate(x) for x in zip(*labels)]
        return merged, data[0] if len(data) == 1 else data, label[0] if len(label) == 1 \
            else label

    def score(self, X, eval_metric="acc", num_batch=None, batch_end_callback=None,
              reset=True):
        """The value of ``eval_metric`` over ``X``."""
        eval_metric = eval_metric if isinstance(eval_metric, metric.EvalMetric) else \
            metric.create(eval_metric)
        for i, batch in enumerate(self._batches(X, num_batch, reset)):
            eval_metric.update(batch.label, self._pred_exec.outputs)
            if batch_end_callback is not None:
                for cb in (batch_end_callback if isinstance(batch_end_callback, list)
                           else [batch_end_callback]):
                    cb(BatchEndParam(epoch=0, nbatch=i, eval_metric=eval_metric,
                                     locals=locals()))
        return eval_metric.get()[1]

    def fit(self, X, y=None, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", logger=None, work_load_list=None,
            monitor=None, eval_end_callback=None, eval_batch_end_callback=None) -> None:
        """Train with ``model._train_multi_device`` (MXNet's FeedForward.fit)."""
        data = self._init_iter(X, y, is_train=True)
        eval_data = self._init_eval_iter(eval_data)
        if self.sym_gen:
            self.symbol = self.sym_gen(data.default_bucket_key)
        self.kwargs["sym"] = self.symbol
        arg_names, param_names, aux_names = self._init_params(
            list(data.provide_data) + list(data.provide_label))
        eval_metric = eval_metric if isinstance(eval_metric, metric.EvalMetric) else \
            metric.create(eval_metric)
        kv, update_on_kvstore = _create_kvstore(kvstore, len(self.ctx), self.arg_params)
        n = len(self.ctx)
        self.kwargs["param_idx2name"] = dict(enumerate(param_names)) if update_on_kvstore \
            else {i * n + k: name for i, name in enumerate(param_names) for k in range(n)}
        optimizer = self.optimizer
        if isinstance(optimizer, str):
            batch_size = data.batch_size
            if kv and "dist" in kv.type and "_async" not in kv.type:
                batch_size *= kv.num_workers
            optimizer = opt.create(optimizer, rescale_grad=1.0 / batch_size, **self.kwargs)
        elif not optimizer.idx2name:
            optimizer.idx2name = dict(self.kwargs["param_idx2name"])
        _train_multi_device(self.symbol, self.ctx, arg_names, param_names, aux_names,
                            self.arg_params, self.aux_params, begin_epoch=self.begin_epoch,
                            end_epoch=self.num_epoch, epoch_size=self.epoch_size,
                            optimizer=optimizer, train_data=data, eval_data=eval_data,
                            eval_metric=eval_metric, epoch_end_callback=epoch_end_callback,
                            batch_end_callback=batch_end_callback, kvstore=kv,
                            update_on_kvstore=update_on_kvstore, logger=logger,
                            work_load_list=work_load_list, monitor=monitor,
                            eval_end_callback=eval_end_callback,
                            eval_batch_end_callback=eval_batch_end_callback,
                            sym_gen=self.sym_gen)

    def save(self, prefix: str, epoch=None, remove_amp_cast: bool = True) -> None:
        """Checkpoint to ``prefix-symbol.json`` and ``prefix-%04d.params``."""
        epoch = self.num_epoch if epoch is None else epoch
        save_checkpoint(prefix, epoch, self.symbol, self.arg_params, self.aux_params,
                        remove_amp_cast=remove_amp_cast)

    @staticmethod
    def load(prefix: str, epoch: int, ctx=None, **kwargs) -> FeedForward:
        """A FeedForward from a checkpoint (continuing at ``epoch``)."""
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        return FeedForward(symbol, ctx=ctx, arg_params=arg_params, aux_params=aux_params,
                           begin_epoch=epoch, **kwargs)

    @staticmethod
    def create(symbol, X, y=None, ctx=None, num_epoch=None, epoch_size=None,
               optimizer="sgd", initializer=None, eval_data=None, eval_metric="acc",
               epoch_end_callback=None, batch_end_callback=None, kvstore="local", logger=None,
               work_load_list=None, eval_end_callback=None, eval_batch_end_callback=None,
               **kwargs) -> FeedForward:
        """Construct and fit in one call."""
        model = FeedForward(symbol, ctx=ctx, num_epoch=num_epoch, epoch_size=epoch_size,
                            optimizer=optimizer, initializer=initializer, **kwargs)
        model.fit(X, y, eval_data=eval_data, eval_metric=eval_metric,
                  epoch_end_callback=epoch_end_callback, batch_end_callback=batch_end_callback,
                  kvstore=kvstore, logger=logger, work_load_list=work_load_list,
                  eval_end_callback=eval_end_callback,
                  eval_batch_end_callback=eval_batch_end_callback)
        return model
