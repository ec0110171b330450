"""Classification metrics of ``mx.metric``: Accuracy, TopKAccuracy, F1, MCC, PCC.

>>> import symgraph as mx
>>> acc = mx.metric.create('acc')
>>> acc.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.7, 0.3], [0.2, 0.8], [0.9, 0.1]])])
>>> acc.get()
('accuracy', 0.6666666666666666)
"""
from __future__ import annotations

import math

import numpy
import torch

from .base import (
    EvalMetric,
    _Accumulating,
    _host,
    _host_view,
    _on_accelerator,
    _scalar,
    alias,
    check_label_shapes,
    register,
)


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
            if _on_accelerator(pred_label):  # counted on the device, read when read
                self._add(*_accuracy_counts_torch(pred_label, label, self.axis))
                continue
            pred_label, label = _host_view(pred_label), _host_view(label)
            if pred_label.shape != label.shape:
                pred_label = pred_label.argmax(axis=self.axis)
            pred_label = pred_label.astype(numpy.int32).ravel()
            label = label.astype(numpy.int32).ravel()
            check_label_shapes(label, pred_label)
            self._add(numpy.count_nonzero(pred_label == label), len(pred_label))


def _accuracy_counts_torch(pred, label, axis: int) -> tuple[torch.Tensor, int]:
    """Accuracy's ``(correct, total)`` computed by torch on ``pred``'s device, ``correct``
    left there (a device scalar: no sync per batch).

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
    return (pred == label).sum(), pred.numel()


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
