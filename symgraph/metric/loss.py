"""Loss metrics of ``mx.metric``: Loss and its legacy names Torch and Caffe.

>>> import numpy
>>> from symgraph.metric.loss import Loss
>>> m = Loss(); m.update(None, [numpy.array([1.0, 3.0])]); m.get()
('loss', 2.0)
"""
from __future__ import annotations

from .base import _Accumulating, _host, _is_array, register


@register
class Loss(_Accumulating):
    """Mean of the predictions themselves (for outputs that are losses); labels are ignored.

    >>> import numpy
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
