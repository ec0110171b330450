"""Modules written in Python: ``PythonModule`` (most methods do nothing) and
``PythonLossModule`` (its outputs are its inputs; backward calls a gradient function).

Chained after a symbolic module in a :class:`~symgraph.module.SequentialModule`, a
``PythonLossModule`` computes the loss gradient in Python:

>>> import numpy as np
>>> import symgraph as mx
>>> loss = PythonLossModule(grad_func=lambda scores, labels: scores - labels)
>>> loss.bind(data_shapes=[('data', (2, 3))], label_shapes=[('softmax_label', (2, 3))])
>>> loss.output_shapes
[('pyloss_output', (2, 3))]
>>> batch = mx.io.DataBatch(data=[mx.nd.ones((2, 3))], label=[mx.nd.zeros((2, 3))])
>>> loss.forward(batch, is_train=True)
>>> loss.backward()
>>> loss.get_input_grads()[0].asnumpy().tolist()
[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
"""
from __future__ import annotations

import logging

from .. import ndarray as nd
from .base_module import BaseModule

__all__ = ["PythonLossModule", "PythonModule"]


class PythonModule(BaseModule):
    """A module whose parameter, optimizer and metric methods do nothing by default.

    Subclasses implement ``forward``, ``backward``, ``get_outputs``, ``get_input_grads`` and
    ``_compute_output_shapes``; a subclass with parameters overrides ``get_params``,
    ``init_params``, ``update`` and ``init_optimizer`` too.

    Parameters
    ----------
    data_names : list of str
    label_names : list of str or None
        None for a module that takes no labels.
    output_names : list of str
    logger : logging.Logger
    """

    def __init__(self, data_names, label_names, output_names, logger=logging):
        super().__init__(logger=logger)
        self._data_names = list(data_names) if isinstance(data_names, tuple) else data_names
        self._label_names = list(label_names) if isinstance(label_names, tuple) \
            else label_names
        self._output_names = output_names
        self._data_shapes = None
        self._label_shapes = None
        self._output_shapes = None

    @property
    def data_names(self):
        return self._data_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        return self._data_shapes

    @property
    def label_shapes(self):
        return self._label_shapes

    @property
    def output_shapes(self):
        return self._output_shapes

    def get_params(self):
        """No parameters: ``({}, {})``."""
        return {}, {}

    def init_params(self, initializer=None, arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False) -> None:
        """Nothing to initialise."""

    def update(self) -> None:
        """Nothing to update."""

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False) -> None:
        """No optimizer needed."""

    def update_metric(self, eval_metric, labels, pre_sliced=False) -> None:
        """Score the outputs against ``labels`` (nothing when bound without labels)."""
        if self._label_shapes is None:
            return
        if pre_sliced:
            raise RuntimeError("PythonModule does not support presliced labels")
        eval_metric.update(labels, self.get_outputs())

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write") -> None:
        """Record the input shapes and compute the output shapes (``grad_req`` 'write')."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        assert grad_req == "write", "Python module only support write gradient"
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        assert [x[0] for x in data_shapes] == self._data_names, \
            f"data_shapes {data_shapes} do not match data_names {self._data_names}"
        if label_shapes is not None:
            assert self._label_names is not None, "this module takes no labels"
            assert [x[0] for x in label_shapes] == self._label_names, \
                f"label_shapes {label_shapes} do not match label_names {self._label_names}"
        self._data_shapes, self._label_shapes = data_shapes, label_shapes
        self._output_shapes = self._compute_output_shapes()
        # as MXNet 1.9.1, ``binded`` stays False: a container (SequentialModule) tracks it

    def _compute_output_shapes(self):
        """``[(name, shape)]`` of the outputs, from ``_data_shapes``/``_label_shapes``."""
        raise NotImplementedError()


class PythonLossModule(PythonModule):
    """A loss written in Python: the output is the input scores; ``backward`` computes the
    gradient of the scores with ``grad_func(scores, labels)``.

    Parameters
    ----------
    name : str
        The output is named ``name + '_output'``.
    data_names, label_names : one name each
    logger : logging.Logger
    grad_func : callable, optional
        ``grad_func(scores, labels) -> gradient`` (NDArray or numpy array); without it,
        subclass and override ``_backward_impl``.
    """

    def __init__(self, name="pyloss", data_names=("data",), label_names=("softmax_label",),
                 logger=logging, grad_func=None):
        super().__init__(data_names, label_names, [name + "_output"], logger=logger)
        self._name = name
        assert len(data_names) == 1 and len(label_names) == 1, "one data and one label input"
        assert grad_func is None or callable(grad_func), "grad_func must be callable"
        self._scores = self._labels = self._scores_grad = None
        self._grad_func = grad_func

    def _compute_output_shapes(self):
        return [(self._name + "_output", self._data_shapes[0][1])]

    def forward(self, data_batch, is_train=None) -> None:
        """Keep the scores (and, training, the labels) for ``backward``."""
        self._scores = data_batch.data[0]
        if is_train is None:
            is_train = self.for_training
        if is_train:
            self._labels = data_batch.label[0]

    def get_outputs(self, merge_multi_context=True):
        """The scores given to the last ``forward``."""
        assert merge_multi_context is True
        return [self._scores]

    def backward(self, out_grads=None) -> None:
        """Compute the gradient of the scores (a loss takes no ``out_grads``)."""
        assert out_grads is None, "For a loss module, out_grads should be None"
        assert self.for_training
        self._backward_impl()

    def _backward_impl(self) -> None:
        """``_scores_grad = grad_func(_scores, _labels)``; override to compute it otherwise."""
        if self._grad_func is None:
            raise NotImplementedError()
        grad = self._grad_func(self._scores, self._labels)
        self._scores_grad = grad if isinstance(grad, nd.NDArray) else nd.array(grad)

    def get_input_grads(self, merge_multi_context=True):
        """The gradient of the scores from the last ``backward``."""
        assert merge_multi_context is True
        return [self._scores_grad]

    def install_monitor(self, mon) -> None:
        raise NotImplementedError()
