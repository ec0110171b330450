"""Evaluation metrics (MXNet 1.9.1's ``mx.metric``).

Every metric keeps *local* statistics (cleared by ``reset_local``, e.g. by a
``Speedometer`` every few batches) and *global* ones (cleared only by ``reset``).
Inputs are lists of NDArrays (numpy arrays work too); the arithmetic is numpy on the host,
as in MXNet, so values match MXNet's bit for bit where MXNet used numpy.

>>> import symgraph as mx
>>> acc = mx.metric.create('acc')
>>> acc.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.7, 0.3], [0.2, 0.8], [0.9, 0.1]])])
>>> acc.get()
('accuracy', 0.6666666666666666)
"""
from __future__ import annotations

import json
import math
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy
import torch

from . import (
    ndarray,  # noqa: F401 - MXNet's name in this module
    registry,  # noqa: F401 - MXNet's metric module carries it
)
from .base import numeric_types, string_types  # noqa: F401 - MXNet's names in this module

_REGISTRY: dict[str, type] = {}
_NUMERIC = (float, int, numpy.generic)


def _host(x) -> numpy.ndarray:
    """An NDArray, torch tensor or array-like as a numpy array."""
    if hasattr(x, "asnumpy"):
        return x.asnumpy()
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return numpy.asarray(x)


def _host_view(x) -> numpy.ndarray:
    """Like :func:`_host`, but a CPU array's own memory (no copy): read it, never write it."""
    t = getattr(x, "_t", x)
    if hasattr(t, "is_cpu") and t.is_cpu and t.dtype != torch.bfloat16:
        return t.detach().numpy() if t.requires_grad else t.numpy()
    return _host(x)


def _on_accelerator(x) -> bool:
    t = getattr(x, "_t", x)
    return isinstance(t, torch.Tensor) and not t.is_cpu


def _is_array(x) -> bool:
    return hasattr(x, "asnumpy") or isinstance(x, numpy.ndarray) or hasattr(x, "detach")


def _scalar(x):
    return x.item() if isinstance(x, numpy.generic) else x


def check_label_shapes(labels, preds, wrap: bool = False, shape: bool = False):
    """Check that labels and predictions agree in number (or in shape with ``shape=True``).

    >>> check_label_shapes([1, 2], [3])
    Traceback (most recent call last):
    ...
    ValueError: Shape of labels 2 does not match shape of predictions 1
    """
    if not shape:
        label_shape, pred_shape = len(labels), len(preds)
    else:
        label_shape, pred_shape = labels.shape, preds.shape
    if label_shape != pred_shape:
        raise ValueError(f"Shape of labels {label_shape} does not match shape of "
                         f"predictions {pred_shape}")
    if wrap:
        labels = [labels] if _is_array(labels) else labels
        preds = [preds] if _is_array(preds) else preds
    return labels, preds


class EvalMetric:
    """Base class of all evaluation metrics.

    Parameters
    ----------
    name : str
        Name of the metric.
    output_names, label_names : list of str, optional
        Which outputs/labels ``update_dict`` passes on (all by default).

    >>> m = MAE()
    >>> m.update([numpy.array([1.0, 2.0])], [numpy.array([1.5, 2.0])])
    >>> m.get(), m.get_name_value()
    (('mae', 0.25), [('mae', 0.25)])
    """

    def __init__(self, name: str, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self) -> str:
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self) -> dict:
        """The constructor arguments, so that ``create(**config)`` rebuilds the metric."""
        config = self._kwargs.copy()
        config.update({"metric": self.__class__.__name__, "name": self.name,
                       "output_names": self.output_names, "label_names": self.label_names})
        return config

    def update_dict(self, label: dict, pred: dict) -> None:
        """Update from dicts of name -> array, keeping ``output_names``/``label_names``."""
        if self.output_names is not None:
            pred = [pred[name] for name in self.output_names]
        else:
            pred = list(pred.values())
        if self.label_names is not None:
            label = [label[name] for name in self.label_names]
        else:
            label = list(label.values())
        self.update(label, pred)

    def update(self, labels, preds) -> None:
        """Accumulate statistics for a batch: ``labels`` and ``preds`` are lists of arrays."""
        raise NotImplementedError()

    def reset(self) -> None:
        """Clear local and global statistics."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self) -> None:
        """Clear local statistics only."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self):
        """``(name, value)`` over the local statistics (nan before any update)."""
        if self.num_inst == 0:
            return self.name, float("nan")
        return self.name, self.sum_metric / self.num_inst

    def get_global(self):
        """``(name, value)`` over everything since the last ``reset``."""
        if self._has_global_stats:
            if self.global_num_inst == 0:
                return self.name, float("nan")
            return self.name, self.global_sum_metric / self.global_num_inst
        return self.get()

    def get_name_value(self) -> list:
        """``get()`` as a list of ``(name, value)`` pairs."""
        return _pairs(*self.get())

    def get_global_name_value(self) -> list:
        """``get_global()`` as a list of ``(name, value)`` pairs."""
        if self._has_global_stats:
            return _pairs(*self.get_global())
        return self.get_name_value()


def _pairs(name, value) -> list:
    name = name if isinstance(name, list) else [name]
    value = value if isinstance(value, list) else [value]
    return list(zip(name, value))


def register(klass: type, name: str | None = None) -> type:
    """Register a metric class under its lower-cased name (MXNet's ``mx.metric.register``)."""
    assert issubclass(klass, EvalMetric), "Can only register subclass of EvalMetric"
    name = (klass.__name__ if name is None else name).lower()
    if name in _REGISTRY:
        warnings.warn(f"New metric {klass.__module__}.{klass.__name__} registered with name "
                      f"{name} is overriding existing metric", UserWarning, stacklevel=2)
    _REGISTRY[name] = klass
    return klass


def alias(*aliases: str) -> Callable[[type], type]:
    """Register a metric class under extra names."""
    def reg(klass: type) -> type:
        for name in aliases:
            register(klass, name)
        return klass
    return reg


def _create(*args, **kwargs) -> EvalMetric:
    name, args = (args[0], args[1:]) if args else (kwargs.pop("metric"), ())
    if isinstance(name, EvalMetric):
        assert not args and not kwargs, \
            "metric is already an instance. Additional arguments are invalid"
        return name
    if isinstance(name, dict):
        return _create(**name)
    assert isinstance(name, str), "metric must be of string type"
    if name.startswith("["):
        assert not args and not kwargs
        name, kwargs = json.loads(name)
        return _create(name, **kwargs)
    if name.startswith("{"):
        assert not args and not kwargs
        return _create(json.loads(name))
    name = name.lower()
    assert name in _REGISTRY, \
        f"{name} is not registered. Please register with metric.register first"
    return _REGISTRY[name](*args, **kwargs)


def create(metric, *args, **kwargs) -> EvalMetric:
    """Create a metric from a name, an instance, a callable ``feval(label, pred)`` or a list.

    >>> create(['acc', 'mse']).get()
    (['accuracy', 'mse'], [nan, nan])
    >>> create('top_k_acc', top_k=5).name
    'top_k_accuracy_5'
    """
    if callable(metric) and not isinstance(metric, EvalMetric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    return _create(metric, *args, **kwargs)


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get`` returns lists of names and values.

    >>> m = CompositeEvalMetric(['mae', 'rmse'])
    >>> m.update([numpy.array([0.0, 0.0])], [numpy.array([3.0, 4.0])])
    >>> m.get()
    (['mae', 'rmse'], [3.5, 3.5355339059327378])
    """

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.metrics = [create(i) for i in (metrics or [])]

    def add(self, metric) -> None:
        """Append a metric (anything ``create`` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index: int):
        """The child metric at ``index`` (MXNet returns, not raises, the ValueError)."""
        try:
            return self.metrics[index]
        except IndexError:
            return ValueError(f"Metric index {index} is out of range 0 and {len(self.metrics)}")

    def update_dict(self, labels: dict, preds: dict) -> None:
        if self.label_names is not None:
            labels = OrderedDict([i for i in labels.items() if i[0] in self.label_names])
        if self.output_names is not None:
            preds = OrderedDict([i for i in preds.items() if i[0] in self.output_names])
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds) -> None:
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self) -> None:
        for metric in getattr(self, "metrics", []):
            metric.reset()

    def reset_local(self) -> None:
        for metric in self.metrics:
            metric.reset_local()

    def _collect(self, getter: str):
        names, values = [], []
        for metric in self.metrics:
            name, value = getattr(metric, getter)()
            names.extend([name] if isinstance(name, str) else name)
            values.extend([value] if isinstance(value, _NUMERIC) else value)
        return names, values

    def get(self):
        return self._collect("get")

    def get_global(self):
        return self._collect("get_global")

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"metrics": [i.get_config() for i in self.metrics]})
        return config


class _Accumulating(EvalMetric):
    """Shared bookkeeping: add ``value`` over ``count`` instances to local and global sums."""

    def _add(self, value, count) -> None:
        # host scalars as Python numbers: numpy 1.x's float64 accumulation, plain reprs
        value, count = _scalar(value), _scalar(count)
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count


@register
@alias("acc")
class Accuracy(_Accumulating):
    """Classification accuracy; predictions of another shape are argmax-ed over ``axis``.

    >>> m = Accuracy()
    >>> m.update([numpy.array([0, 1])], [numpy.array([[0.3, 0.7], [0.0, 1.0]])])
    >>> m.get()
    ('accuracy', 0.5)
    """

    def __init__(self, axis: int = 1, name: str = "accuracy", output_names=None,
                 label_names=None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred_label in zip(labels, preds):
            if _on_accelerator(pred_label):  # count where the outputs are; copy one number
                self._add(*_accuracy_counts_torch(pred_label, label, self.axis))
                continue
            pred_label, label = _host_view(pred_label), _host_view(label)
            if pred_label.shape != label.shape:
                pred_label = pred_label.argmax(axis=self.axis)
            pred_label = pred_label.astype(numpy.int32).ravel()
            label = label.astype(numpy.int32).ravel()
            check_label_shapes(label, pred_label)
            self._add(numpy.count_nonzero(pred_label == label), len(pred_label))


def _accuracy_counts_torch(pred, label, axis: int) -> tuple[int, int]:
    """Accuracy's ``(correct, total)`` computed by torch on ``pred``'s device.

    Same steps as the numpy path (argmax when the shapes differ, truncation to int32).
    """
    pred = getattr(pred, "_t", pred)
    label_t = getattr(label, "_t", label)
    if not isinstance(label_t, torch.Tensor):
        label_t = torch.from_numpy(numpy.ascontiguousarray(_host(label)))
    label = label_t.to(pred.device)
    if pred.shape != label.shape:
        pred = pred.argmax(dim=axis)
    pred = pred.to(torch.int32).reshape(-1)
    label = label.to(torch.int32).reshape(-1)
    check_label_shapes(label, pred)
    return int((pred == label).sum().item()), pred.numel()


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(_Accumulating):
    """Whether the label is among the ``top_k`` highest predictions.

    >>> m = TopKAccuracy(top_k=2)
    >>> m.update([numpy.array([2, 0])], [numpy.array([[0.1, 0.5, 0.4], [0.2, 0.3, 0.5]])])
    >>> m.get()
    ('top_k_accuracy_2', 0.5)
    """

    def __init__(self, top_k: int = 1, name: str = "top_k_accuracy", output_names=None,
                 label_names=None):
        super().__init__(name, top_k=top_k, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.top_k = top_k
        assert self.top_k > 1, "Please use Accuracy if top_k is no more than 1"
        self.name += f"_{self.top_k}"

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred_label in zip(labels, preds):
            assert len(pred_label.shape) <= 2, "Predictions should be no more than 2 dims"
            pred_label = numpy.argpartition(_host(pred_label).astype("float32"), -self.top_k)
            label = _host(label).astype("int32")
            check_label_shapes(label, pred_label)
            num_samples = pred_label.shape[0]
            if pred_label.ndim == 1:
                # MXNet 1.9.1 leaves the global sum untouched on this path
                self.sum_metric += _scalar((pred_label.flat == label.flat).sum())
            else:
                num_classes = pred_label.shape[1]
                for j in range(min(num_classes, self.top_k)):
                    num_correct = _scalar(
                        (pred_label[:, num_classes - 1 - j].flat == label.flat).sum())
                    self.sum_metric += num_correct
                    self.global_sum_metric += num_correct
            self.num_inst += num_samples
            self.global_num_inst += num_samples


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


class _Regression(_Accumulating):
    """MAE/MSE/RMSE: one value per (label, pred) pair, averaged over pairs."""

    def __init__(self, name, output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    @staticmethod
    def _value(diff: numpy.ndarray):
        raise NotImplementedError()

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _host(label), _host(pred)
            if len(label.shape) == 1:
                label = label.reshape(label.shape[0], 1)
            if len(pred.shape) == 1:
                pred = pred.reshape(pred.shape[0], 1)
            self._add(self._value(label - pred), 1)


@register
class MAE(_Regression):
    """Mean absolute error.

    >>> m = MAE(); m.update([numpy.array([1.0])], [numpy.array([3.0])]); m.get()
    ('mae', 2.0)
    """

    def __init__(self, name: str = "mae", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _value(diff):
        return numpy.abs(diff).mean()


@register
class MSE(_Regression):
    """Mean squared error.

    >>> m = MSE(); m.update([numpy.array([1.0])], [numpy.array([3.0])]); m.get()
    ('mse', 4.0)
    """

    def __init__(self, name: str = "mse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _value(diff):
        return (diff ** 2.0).mean()


@register
class RMSE(_Regression):
    """Root mean squared error (per update, then averaged over updates).

    >>> m = RMSE(); m.update([numpy.array([1.0])], [numpy.array([3.0])]); m.get()
    ('rmse', 2.0)
    """

    def __init__(self, name: str = "rmse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _value(diff):
        return numpy.sqrt((diff ** 2.0).mean())


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


@register
class Loss(_Accumulating):
    """Mean of the predictions themselves (for outputs that are losses); labels are ignored.

    >>> m = Loss(); m.update(None, [numpy.array([1.0, 2.0, 6.0])]); m.get()
    ('loss', 3.0)
    """

    def __init__(self, name: str = "loss", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _, preds) -> None:
        if _is_array(preds):
            preds = [preds]
        for pred in preds:
            pred = _host(pred)
            self._add(pred.sum(dtype=pred.dtype).item(), pred.size)


@register
class Torch(Loss):
    """``Loss`` under MXNet's legacy name 'torch'."""

    def __init__(self, name: str = "torch", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """``Loss`` under MXNet's legacy name 'caffe'."""

    def __init__(self, name: str = "caffe", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class CustomMetric(_Accumulating):
    """A metric from ``feval(label, pred) -> value`` or ``-> (sum, count)`` on numpy arrays.

    >>> def err(label, pred):
    ...     return float(abs(label - pred).sum()), label.size
    >>> m = CustomMetric(err); m.update([numpy.array([1.0, 2.0])], [numpy.array([2.0, 2.0])])
    >>> m.get()
    ('err', 0.5)
    >>> CustomMetric(lambda l, p: 0.0).name
    'custom(<lambda>)'
    """

    def __init__(self, feval: Callable, name: str | None = None,
                 allow_extra_outputs: bool = False, output_names=None, label_names=None):
        if name is None:
            name = feval.__name__
            if name.find("<") != -1:
                name = f"custom({name})"
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds) -> None:
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels):
            reval: Any = self._feval(_host(label), _host(pred))
            if isinstance(reval, tuple):
                self._add(*reval)
            else:
                self._add(reval, 1)

    def get_config(self) -> dict:
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval: Callable, name: str | None = None,
       allow_extra_outputs: bool = False) -> CustomMetric:
    """A ``CustomMetric`` from a numpy function ``numpy_feval(label, pred)``.

    >>> m = np(lambda label, pred: float((label == pred).mean()), name='same')
    >>> m.update([numpy.array([1, 2])], [numpy.array([1, 3])]); m.get()
    ('same', 0.5)
    """
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)


# registered on import; defined in their own module to keep this file short
from .metric_classification import F1, MCC, PCC, PearsonCorrelation  # noqa: E402,F401
