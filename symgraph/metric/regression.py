"""Regression metrics of ``mx.metric``: MAE, MSE, RMSE, PearsonCorrelation.

>>> import numpy
>>> from symgraph.metric.regression import RMSE
>>> m = RMSE(); m.update([numpy.array([1.0, 1.0])], [numpy.array([4.0, 5.0])]); m.get()
('rmse', 3.5355339059327378)
"""
from __future__ import annotations

import numpy

from .base import _Accumulating, _host, alias, check_label_shapes, register


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


@register
@alias("pearsonr")
class PearsonCorrelation(_Accumulating):
    """Pearson correlation of predictions and labels.

    'macro' averages the per-update correlation; 'micro' correlates everything seen
    (with MXNet 1.9.1's streaming formulas; its ``get_global`` then reads the unused
    global sums, as MXNet's does).

    >>> m = PearsonCorrelation()
    >>> m.update([numpy.array([1.0, 2.0, 3.0])], [numpy.array([2.0, 4.0, 6.5])])
    >>> round(m.get()[1], 4)
    0.9979
    """

    def __init__(self, name: str = "pearsonr", output_names=None, label_names=None,
                 average: str = "macro"):
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        if self.average == "micro":
            self.reset_micro()

    def reset_micro(self) -> None:
        """Clear the streaming sums of 'micro' averaging."""
        self._sse_p = self._mean_p = self._sse_l = self._mean_l = 0
        self._pred_nums = self._label_nums = self._conv = 0

    def reset(self) -> None:
        super().reset()
        if self.average == "micro":
            self.reset_micro()

    @staticmethod
    def update_variance(new_values, *aggregate):
        """Welford's update of ``(count, mean, M2)`` with a batch of values."""
        count, mean, m_2 = aggregate
        count += len(new_values)
        delta = new_values - mean
        mean += numpy.sum(delta / count)
        delta_2 = new_values - mean
        m_2 += numpy.sum(delta * delta_2)
        return count, mean, m_2

    def update_cov(self, label, pred) -> None:
        """Accumulate the co-moment (against the running means, as MXNet)."""
        self._conv = self._conv + numpy.sum((label - self._mean_l) * (pred - self._mean_p))

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            check_label_shapes(label, pred, False, True)
            label = _host(label).ravel().astype(numpy.float64)
            pred = _host(pred).ravel().astype(numpy.float64)
            if self.average == "macro":
                self._add(numpy.corrcoef(pred, label)[0, 1], 1)
                continue
            self.global_num_inst += 1
            self.num_inst += 1
            self._label_nums, self._mean_l, self._sse_l = self.update_variance(
                label, self._label_nums, self._mean_l, self._sse_l)
            self.update_cov(label, pred)
            self._pred_nums, self._mean_p, self._sse_p = self.update_variance(
                pred, self._pred_nums, self._mean_p, self._sse_p)

    def get(self):
        if self.num_inst == 0:
            return self.name, float("nan")
        if self.average == "macro":
            return self.name, self.sum_metric / self.num_inst
        n = self._label_nums
        return self.name, float(self._conv / ((n - 1) * numpy.sqrt(self._sse_p / (n - 1))
                                              * numpy.sqrt(self._sse_l / (n - 1))))
