"""Probability metrics of ``mx.metric``: Perplexity, CrossEntropy, NegativeLogLikelihood.

>>> import numpy
>>> from symgraph.metric.probability import CrossEntropy
>>> m = CrossEntropy(); m.update([numpy.array([0])], [numpy.array([[0.25, 0.75]])])
>>> round(m.get()[1], 6)
1.386294
"""
from __future__ import annotations

import math

import numpy
import torch

from .base import (
    _Accumulating,
    _host,
    _host_view,
    _on_accelerator,
    alias,
    check_label_shapes,
    register,
)


@register
class Perplexity(_Accumulating):
    """exp of the mean negative log-probability of the labels (``ignore_label`` skipped).

    >>> m = Perplexity(ignore_label=None)
    >>> m.update([numpy.array([0, 1])], [numpy.array([[0.5, 0.5], [0.5, 0.5]])])
    >>> round(m.get()[1], 6)
    2.0
    """

    def __init__(self, ignore_label, axis: int = -1, name: str = "perplexity",
                 output_names=None, label_names=None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds) -> None:
        assert len(labels) == len(preds)
        loss, num = 0.0, 0
        for label, pred in zip(labels, preds):
            if _on_accelerator(pred):  # summed where the predictions are: no copy
                self._add(*self._device_terms(label, pred))
                continue
            label, pred = _host_view(label), _host_view(pred)  # read only: no copies
            assert label.size == pred.size / pred.shape[-1], \
                f"shape mismatch: {label.shape} vs. {pred.shape}"
            label = label.reshape((label.size,))
            pred = pred.reshape(_pick_shape(pred.shape, self.axis, label.size))
            # MXNet picks with mode 'clip': out-of-range labels take the nearest class
            index = numpy.clip(label.astype("int32").astype(numpy.int64), 0,
                               pred.shape[self.axis] - 1)
            pred = numpy.take_along_axis(pred, numpy.expand_dims(index, self.axis),
                                         axis=self.axis).reshape(-1)
            if self.ignore_label is not None:
                ignore = (label == self.ignore_label).astype(pred.dtype)
                num -= ignore.sum()
                pred = pred * (1 - ignore) + ignore
            loss -= numpy.log(numpy.maximum(pred.dtype.type(1e-10), pred)).sum()
            num += pred.size
        self._add(loss, num)

    def _device_terms(self, label, pred) -> tuple:
        """(negative log-probability sum, label count) of one batch as device tensors: the
        host path's arithmetic in torch."""
        label, pred = getattr(label, "_t", label), getattr(pred, "_t", pred)
        label = torch.as_tensor(label, device=pred.device).reshape(-1)
        if label.numel() != pred.numel() // pred.shape[-1]:
            raise AssertionError(f"shape mismatch: {tuple(label.shape)} vs. {tuple(pred.shape)}")
        pred = pred.reshape(_pick_shape(tuple(pred.shape), self.axis, label.numel()))
        index = label.to(torch.int32).to(torch.int64).clamp(0, pred.shape[self.axis] - 1)
        prob = torch.take_along_dim(pred, index.unsqueeze(self.axis),
                                    dim=self.axis).reshape(-1)
        num = label.numel()
        if self.ignore_label is not None:
            ignore = (label == self.ignore_label).to(prob.dtype)
            num = num - ignore.sum().to(torch.int64)
            prob = prob * (1 - ignore) + ignore
        return -torch.log(torch.clamp(prob, min=1e-10)).double().sum(), num

    def get(self):
        if self.num_inst == 0:
            return self.name, float("nan")
        return self.name, math.exp(self.sum_metric / self.num_inst)

    def get_global(self):
        if self.global_num_inst == 0:
            return self.name, float("nan")
        return self.name, math.exp(self.global_sum_metric / self.global_num_inst)


def _pick_shape(shape: tuple, axis: int, n: int) -> tuple:
    """Shape for ``pick`` along ``axis`` of an array whose other axes hold ``n`` labels."""
    if len(shape) == 2 or axis not in (-1, len(shape) - 1):
        return shape
    return (n, shape[-1])


class _LogProb(_Accumulating):
    """CrossEntropy / NegativeLogLikelihood: mean of -log(p[label] + eps)."""

    def __init__(self, eps, name, output_names, label_names):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _host(label).ravel(), _host(pred)
            n = pred.shape[0]
            assert label.shape[0] == n, (label.shape[0], n)
            prob = pred[numpy.arange(n, dtype=numpy.int64), numpy.int64(label)]
            self._add((-numpy.log(prob + self.eps)).sum(), n)


@register
@alias("ce")
class CrossEntropy(_LogProb):
    """Cross entropy of class probabilities against integer labels.

    >>> m = CrossEntropy(); m.update([numpy.array([1])], [numpy.array([[0.5, 0.5]])])
    >>> round(m.get()[1], 6)
    0.693147
    """

    def __init__(self, eps: float = 1e-12, name: str = "cross-entropy", output_names=None,
                 label_names=None):
        super().__init__(eps, name, output_names, label_names)


@register
@alias("nll_loss")
class NegativeLogLikelihood(_LogProb):
    """Negative log likelihood of the labels.

    >>> m = NegativeLogLikelihood(); m.update([numpy.array([0])], [numpy.array([[1.0, 0.0]])])
    >>> m.get()[0], abs(m.get()[1]) < 1e-9
    ('nll-loss', True)
    """

    def __init__(self, eps: float = 1e-12, name: str = "nll-loss", output_names=None,
                 label_names=None):
        super().__init__(eps, name, output_names, label_names)
