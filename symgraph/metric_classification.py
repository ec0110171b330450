"""Classification and correlation metrics of ``mx.metric``: F1, MCC, PearsonCorrelation, PCC.

Split from :mod:`symgraph.metric` (which re-exports them) to keep files short.
"""
from __future__ import annotations

import math

import numpy

from .metric import (
    EvalMetric,
    _Accumulating,
    _host,
    alias,
    check_label_shapes,
    register,
)


class _BinaryClassificationMetrics:
    """Confusion counts of a binary classifier, local and global."""

    _FIELDS = ("true_positives", "false_negatives", "false_positives", "true_negatives")

    def __init__(self):
        self.reset_stats()

    def update_binary_stats(self, label, pred) -> None:
        pred = _host(pred)
        label = _host(label).astype("int32")
        pred_label = numpy.argmax(pred, axis=1)
        check_label_shapes(label, pred)
        if len(numpy.unique(label)) > 2:
            raise ValueError(f"{self.__class__.__name__} currently only supports binary "
                             "classification.")
        pred_true = pred_label == 1
        pred_false = 1 - pred_true
        label_true = label == 1
        label_false = 1 - label_true
        counts = ((pred_true * label_true).sum(), (pred_false * label_true).sum(),
                  (pred_true * label_false).sum(), (pred_false * label_false).sum())
        for field, n in zip(self._FIELDS, counts):
            setattr(self, field, getattr(self, field) + n)
            setattr(self, "global_" + field, getattr(self, "global_" + field) + n)

    def _counts(self, use_global: bool) -> tuple:
        pre = "global_" if use_global else ""
        return tuple(getattr(self, pre + f) for f in self._FIELDS)

    def fscore_of(self, use_global: bool = False) -> float:
        tp, fn, fp, _ = self._counts(use_global)
        precision = float(tp) / (tp + fp) if tp + fp > 0 else 0.0
        recall = float(tp) / (tp + fn) if tp + fn > 0 else 0.0
        if precision + recall > 0:
            return 2 * precision * recall / (precision + recall)
        return 0.0

    def matthewscc(self, use_global: bool = False) -> float:
        tp, fn, fp, tn = (float(c) for c in self._counts(use_global))
        if not tp + fn + fp + tn:
            return 0.0
        denom = 1.0
        for t in (tp + fp, tp + fn, tn + fp, tn + fn):
            if t != 0.0:
                denom *= t
        return (tp * tn - fp * fn) / math.sqrt(denom)

    def total(self, use_global: bool = False) -> int:
        return int(sum(self._counts(use_global)))

    def local_reset_stats(self) -> None:
        for field in self._FIELDS:
            setattr(self, field, 0)

    def reset_stats(self) -> None:
        for field in self._FIELDS:
            setattr(self, field, 0)
            setattr(self, "global_" + field, 0)


class _BinaryMetric(EvalMetric):
    """F1 and MCC: 'macro' averages per-update scores, 'micro' scores the pooled counts."""

    def __init__(self, name, output_names, label_names, average):
        self.average = average
        self._metrics = _BinaryClassificationMetrics()
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def _score(self, use_global: bool) -> float:
        raise NotImplementedError()

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self._metrics.update_binary_stats(label, pred)
        m = self._metrics
        if self.average == "macro":
            self.sum_metric += float(self._score(False))
            self.global_sum_metric += float(self._score(True))
            self.num_inst += 1
            self.global_num_inst += 1
            m.reset_stats()
        else:
            self.sum_metric = float(self._score(False)) * m.total(False)
            self.global_sum_metric = float(self._score(True)) * m.total(True)
            self.num_inst = m.total(False)
            self.global_num_inst = m.total(True)

    def reset(self) -> None:
        super().reset()
        self._metrics.reset_stats()

    def reset_local(self) -> None:
        super().reset_local()
        self._metrics.local_reset_stats()


@register
class F1(_BinaryMetric):
    """F1 score of a binary classifier (``pred`` holds two class scores per row).

    >>> m = F1()
    >>> m.update([numpy.array([0, 1, 1])], [numpy.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])])
    >>> m.get()
    ('f1', 0.8)
    """

    def __init__(self, name: str = "f1", output_names=None, label_names=None,
                 average: str = "macro"):
        super().__init__(name, output_names, label_names, average)
        self.metrics = self._metrics

    def _score(self, use_global: bool) -> float:
        return self._metrics.fscore_of(use_global)


@register
class MCC(_BinaryMetric):
    """Matthews correlation coefficient of a binary classifier.

    >>> m = MCC()
    >>> m.update([numpy.array([0, 1, 1])], [numpy.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])])
    >>> m.get()
    ('mcc', 0.0)
    """

    def __init__(self, name: str = "mcc", output_names=None, label_names=None,
                 average: str = "macro"):
        super().__init__(name, output_names, label_names, average)
        self._average = average

    def _score(self, use_global: bool) -> float:
        return self._metrics.matthewscc(use_global)

    def reset(self) -> None:
        super().reset()
        self.num_inst = self.global_num_inst = 0.0

    def reset_local(self) -> None:
        super().reset_local()
        self.num_inst = 0.0


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


@register
class PCC(EvalMetric):
    """Multiclass Matthews correlation from a growing confusion matrix.

    >>> m = PCC(); m.update([numpy.array([0, 1, 2])], [numpy.array([0, 1, 2])]); m.get()
    ('pcc', 1.0)
    """

    def __init__(self, name: str = "pcc", output_names=None, label_names=None,
                 has_global_stats: bool = True):
        self.k = 2
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    def _grow(self, inc: int) -> None:
        self.lcm = numpy.pad(self.lcm, ((0, inc), (0, inc)), "constant", constant_values=0)
        self.gcm = numpy.pad(self.gcm, ((0, inc), (0, inc)), "constant", constant_values=0)
        self.k += inc

    @staticmethod
    def _calc_mcc(cmat):
        n = cmat.sum()
        x, y = cmat.sum(axis=1), cmat.sum(axis=0)
        cov_xx, cov_yy = numpy.sum(x * (n - x)), numpy.sum(y * (n - y))
        if cov_xx == 0 or cov_yy == 0:
            return float("nan")
        cov_xy = numpy.sum(cmat.diagonal() * n - x * y)
        return float(cov_xy / (cov_xx * cov_yy) ** 0.5)

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _host(label).astype("int32"), _host(pred)
            pred = pred.argmax(axis=1) if pred.shape != label.shape else pred.astype("int32")
            n = max(pred.max(), label.max())
            if n >= self.k:
                self._grow(n + 1 - self.k)
            bcm = numpy.zeros((self.k, self.k))
            for i, j in zip(pred, label):
                bcm[i, j] += 1
            self.lcm += bcm
            self.gcm += bcm
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self):
        return self._calc_mcc(self.lcm) * self.num_inst

    @property
    def global_sum_metric(self):
        return self._calc_mcc(self.gcm) * self.global_num_inst

    def reset(self) -> None:
        self.global_num_inst = 0.0
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self) -> None:
        self.num_inst = 0.0
        self.lcm = numpy.zeros((self.k, self.k))
