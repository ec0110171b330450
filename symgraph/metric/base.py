"""The metric base: ``EvalMetric``, ``CompositeEvalMetric``, ``CustomMetric``, the registry.

Every metric keeps *local* statistics (cleared by ``reset_local``, e.g. by a
``Speedometer`` every few batches) and *global* ones (cleared only by ``reset``).
Inputs are lists of NDArrays (numpy arrays work too); the arithmetic is numpy on the host,
as in MXNet, so values match MXNet's bit for bit where MXNet used numpy.

>>> from symgraph.metric.base import create
>>> create('mae').get()
('mae', nan)
"""
from __future__ import annotations

import json
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy
import torch

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

    >>> from symgraph.metric import MAE
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


def _flushed(name: str) -> property:
    """A statistic of :class:`_Accumulating`: reading or setting it first folds in what
    accumulated on the device."""
    def get(self):
        self._flush()
        return self.__dict__[name]

    def put(self, value) -> None:
        self._flush()
        self.__dict__[name] = value
    return property(get, put)


class _Accumulating(EvalMetric):
    """Shared bookkeeping: add ``value`` over ``count`` instances to local and global sums.

    Values computed on an accelerator (device tensors) are summed there, in float64, and
    read back once when a statistic is read (``get``, a callback), not once per batch."""

    sum_metric = _flushed("_sum_metric")
    num_inst = _flushed("_num_inst")
    global_sum_metric = _flushed("_global_sum_metric")
    global_num_inst = _flushed("_global_num_inst")

    def _add(self, value, count) -> None:
        if isinstance(value, torch.Tensor) or isinstance(count, torch.Tensor):
            pending = self.__dict__.get("_pending")
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                value = value.double()  # integer counts stay integers
            self.__dict__["_pending"] = (value, count) if pending is None else (
                pending[0] + value, pending[1] + count)
            return
        # host scalars as Python numbers: numpy 1.x's float64 accumulation, plain reprs
        self._fold(_scalar(value), _scalar(count))

    def _fold(self, value, count) -> None:
        """Add to the local and global sums (what is pending on the device stays there)."""
        for name, add in (("_sum_metric", value), ("_global_sum_metric", value),
                          ("_num_inst", count), ("_global_num_inst", count)):
            self.__dict__[name] = self.__dict__.get(name, 0) + add

    def _flush(self) -> None:
        pending = self.__dict__.pop("_pending", None)
        if pending is not None:
            self._fold(*(t.item() if isinstance(t, torch.Tensor) else t for t in pending))


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
