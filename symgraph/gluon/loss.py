"""Losses, as MXNet 1.9.1's ``gluon/loss.py``.

A loss is a HybridBlock ``loss(pred, label[, sample_weight])`` returning one value per
sample: every axis but ``batch_axis`` is averaged out (``KLDivLoss`` sums them), after the
optional element-wise ``sample_weight`` (broadcast) and the global scalar ``weight``.

Examples
--------
>>> import symgraph as mx
>>> loss = mx.gluon.loss.L2Loss()
>>> loss
L2Loss(batch_axis=0, w=1.0)
>>> pred = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
>>> loss(pred, mx.nd.array([[1.0, 0.0], [3.0, 5.0]])).asnumpy()
array([1.  , 0.25], dtype=float32)
>>> ce = mx.gluon.loss.SoftmaxCrossEntropyLoss()
>>> ce(mx.nd.array([[0.0, 0.0]]), mx.nd.array([1])).asnumpy()
array([0.6931472], dtype=float32)
>>> loss(pred, mx.nd.array([[1.0, 0.0], [3.0, 5.0]]), mx.nd.array([[2.0], [0.0]])).asnumpy()
array([2., 0.], dtype=float32)
>>> mx.gluon.loss.LogisticLoss(label_format='zero-one')
Traceback (most recent call last):
...
ValueError: label_format can only be signed or binary, recieved zero-one.
"""
from __future__ import annotations

from numbers import Number

import numpy as np

from .. import ndarray
from ..base import numeric_types  # noqa: F401 - MXNet's names
from ..util import is_np_array  # noqa: F401 - MXNet's names
from .block import HybridBlock, _flatten
from .utils import _require

__all__ = ["Loss", "L2Loss", "L1Loss", "SigmoidBinaryCrossEntropyLoss", "SigmoidBCELoss",
           "SoftmaxCrossEntropyLoss", "SoftmaxCELoss", "KLDivLoss", "CTCLoss", "HuberLoss",
           "HingeLoss", "SquaredHingeLoss", "LogisticLoss", "TripletLoss", "PoissonNLLLoss",
           "CosineEmbeddingLoss", "SDMLLoss"]


def _apply_weighting(F, loss, weight=None, sample_weight=None):
    """``loss`` times the broadcast ``sample_weight`` and the scalar ``weight``."""
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        _require(isinstance(weight, Number), "weight must be a number")
        loss = loss * weight
    return loss


def _reshape_like(F, x, y):
    """``x`` reshaped to ``y``'s shape."""
    if F is ndarray:
        return x.reshape(y.shape)
    return F.reshape_like(x, y)


def _retrace_if_restructured(block: HybridBlock, args: tuple) -> None:
    """Drop ``block``'s traced graph when ``args`` are structured unlike the traced ones."""
    if block._in_format is not None and _flatten(args, "input")[1] != block._in_format:
        block._clear_cached_op()


class Loss(HybridBlock):
    """Base class of the losses: a global scalar ``weight`` and the ``batch_axis``."""

    # ``forward`` retraces only for a new argument structure: calls on arrays structured
    # as traced go straight to the graph (``HybridBlock.__call__``)
    _forward_runs_graph = True

    def __init__(self, weight, batch_axis, **kwargs):
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(batch_axis={self._batch_axis}, w={self._weight})"

    def forward(self, x, *args):
        """Run the loss; a new argument structure (``sample_weight`` given or not) retraces,
        as MXNet's imperative call allows."""
        _retrace_if_restructured(self, (x,) + args)
        return super().forward(x, *args)

    def _mean(self, F, loss):
        """Average over every axis but the batch axis."""
        return F.mean(loss, axis=self._batch_axis, exclude=True)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """Override: the loss of ``x`` given the other inputs."""
        raise NotImplementedError


class L2Loss(Loss):
    """``weight / 2 * (label - pred) ** 2``, averaged per sample."""

    def __init__(self, weight=1., batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.square(label - pred)
        loss = _apply_weighting(F, loss, self._weight / 2, sample_weight)
        return self._mean(F, loss)


class L1Loss(Loss):
    """``|label - pred|``, averaged per sample."""

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross-entropy of ``sigmoid(pred)`` (or of ``pred`` with ``from_sigmoid``)
    against labels in {0, 1}; ``pos_weight`` (an input) weighs the positive term."""

    def __init__(self, from_sigmoid: bool = False, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):
        label = _reshape_like(F, label, pred)
        if self._from_sigmoid:
            loss = _bce_from_sigmoid(F, pred, label, pos_weight)
        else:
            loss = _bce_from_logits(F, pred, label, pos_weight)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


def _bce_from_logits(F, pred, label, pos_weight):
    """The stable form ``max(x, 0) - x * z + log(1 + exp(-|x|))`` (MXNet's)."""
    softplus = F.Activation(-F.abs(pred), act_type="softrelu")
    if pos_weight is None:
        return F.relu(pred) - pred * label + softplus
    log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
    return pred - pred * label + log_weight * (softplus + F.relu(-pred))


def _bce_from_sigmoid(F, pred, label, pos_weight):
    eps = 1e-12
    positive = F.log(pred + eps) * label
    if pos_weight is not None:
        positive = F.broadcast_mul(positive, pos_weight)
    return -(positive + F.log(1. - pred + eps) * (1. - label))


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    """Cross-entropy of ``softmax(pred)`` along ``axis`` with class indices
    (``sparse_label``) or distributions; ``from_logits`` takes ``pred`` as log-probabilities."""

    def __init__(self, axis=-1, sparse_label: bool = True, from_logits: bool = False,
                 weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            label = _reshape_like(F, label, pred)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    """``label * (log(label) - pred)`` summed per sample (``pred`` are log-probabilities
    unless ``from_logits=False``, then ``log_softmax`` along ``axis`` is applied)."""

    def __init__(self, from_logits: bool = True, axis=-1, weight=None, batch_axis=0,
                 **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.sum(loss, axis=self._batch_axis, exclude=True)


class CTCLoss(Loss):
    """Connectionist temporal classification loss over unnormalised predictions (the last
    class is the blank); labels padded with -1; optional per-sequence lengths."""

    def __init__(self, layout="NTC", label_layout="NT", weight=None, **kwargs):
        _require(layout in ["NTC", "TNC"],
                f"Only 'NTC' and 'TNC' layouts for pred are supported. Got: {layout}")
        _require(label_layout in ["NT", "TN"],
                f"Only 'NT' and 'TN' layouts for label are supported. Got: {label_layout}")
        self._layout = layout
        self._label_layout = label_layout
        super().__init__(weight, label_layout.find("N"), **kwargs)

    def hybrid_forward(self, F, pred, label, pred_lengths=None, label_lengths=None,
                       sample_weight=None):
        if self._layout == "NTC":  # the operator reads (T, N, C)
            pred = F.swapaxes(pred, 0, 1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, 0, 1)
        lengths = [x for x in (pred_lengths, label_lengths) if x is not None]
        loss = F.CTCLoss(pred, label, *lengths, use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None, blank_label="last")
        return _apply_weighting(F, loss, self._weight, sample_weight)


class HuberLoss(Loss):
    """Smoothed L1: ``0.5 / rho * d ** 2`` when ``|d| <= rho``, else ``|d| - 0.5 * rho``."""

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = F.where(loss > self._rho, loss - 0.5 * self._rho,
                       (0.5 / self._rho) * F.square(loss))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class HingeLoss(Loss):
    """``max(0, margin - pred * label)`` for labels in {-1, 1}."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.relu(self._margin - pred * label)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class SquaredHingeLoss(Loss):
    """``max(0, margin - pred * label) ** 2`` for labels in {-1, 1}."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.square(F.relu(self._margin - pred * label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class LogisticLoss(Loss):
    """``log(1 + exp(-pred * label))``; labels in {-1, 1} (``'signed'``) or {0, 1}."""

    def __init__(self, weight=None, batch_axis=0, label_format="signed", **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._label_format = label_format
        if self._label_format not in ["signed", "binary"]:
            raise ValueError(f"label_format can only be signed or binary, recieved "
                             f"{label_format}.")

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        if self._label_format == "signed":
            label = (label + 1.0) / 2.0
        loss = F.relu(pred) - pred * label + F.Activation(-F.abs(pred), act_type="softrelu")
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class TripletLoss(Loss):
    """``max(0, |pos - pred|^2 - |neg - pred|^2 + margin)`` per sample."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, positive, negative):
        positive = _reshape_like(F, positive, pred)
        negative = _reshape_like(F, negative, pred)
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred),
                     axis=self._batch_axis, exclude=True)
        loss = F.relu(loss + self._margin)
        return _apply_weighting(F, loss, self._weight, None)


class PoissonNLLLoss(Loss):
    """Negative log-likelihood of a Poisson target, averaged over all elements (a scalar)."""

    def __init__(self, weight=None, from_logits: bool = True, batch_axis=0,
                 compute_full: bool = False, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        target = _reshape_like(F, target, pred)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            stirling = target * F.log(target) - target + 0.5 * F.log(2 * target * np.pi)
            loss = loss + stirling * (target > 1)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss)


class CosineEmbeddingLoss(Loss):
    """``1 - cos(x1, x2)`` for label 1, ``max(0, cos(x1, x2) - margin)`` for label -1."""

    def __init__(self, weight=None, batch_axis=0, margin=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        input1 = _reshape_like(F, input1, input2)
        label = F.reshape(label, shape=(-1, 1))
        cos_sim = self._cosine_similarity(F, input1, input2)
        cos_sim_a = (1 - cos_sim) * (label == 1)
        cos_sim_b = F.broadcast_maximum(F.zeros((1, 1)),
                                        (label == -1) * (cos_sim - self._margin))
        loss = _apply_weighting(F, cos_sim_a + cos_sim_b, self._weight, sample_weight)
        return loss

    def _cosine_similarity(self, F, x, y, axis=-1):
        x_norm = F.reshape(F.norm(x, axis=axis), shape=(-1, 1))
        y_norm = F.reshape(F.norm(y, axis=axis), shape=(-1, 1))
        x_dot_y = F.reshape(F.sum(x * y, axis=axis), shape=(-1, 1))
        return x_dot_y / F.broadcast_maximum(x_norm * y_norm, F.full((1, 1), 1e-12))


class SDMLLoss(Loss):
    """Batchwise Smoothed Deep Metric Learning loss (Bonadiman et al., 2019): row ``i`` of
    ``x1`` and of ``x2`` form a positive pair, every other row of ``x2`` a negative one. The
    KL divergence between ``log_softmax`` of the negative squared distances and the identity
    smoothed by ``smoothing_parameter``, per sample.

    It reads the batch size from ``x1.shape``, so it runs on NDArrays (``hybrid_forward`` with
    ``F`` = ``mx.nd``), as MXNet's does; hybridized, tracing fails as in MXNet.

    Examples
    --------
    >>> import symgraph as mx
    >>> x = mx.nd.array([[0.0, 1.0], [1.0, 0.0]])
    >>> mx.gluon.loss.SDMLLoss()(x, x).asnumpy().round(4)
    array([0.1161, 0.1161], dtype=float32)
    """

    def __init__(self, smoothing_parameter=0.3, weight=1., batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self.kl_loss = KLDivLoss(from_logits=True)
        self.smoothing_parameter = smoothing_parameter

    def forward(self, x1, x2):
        if self._active or not isinstance(x1, ndarray.NDArray):
            return super().forward(x1, x2)
        return self._forward_imperative(x1, x2)

    def _compute_distances(self, F, x1, x2):
        """Squared euclidean distances between every row of ``x1`` and of ``x2``."""
        if x1.shape != x2.shape:
            raise AssertionError(f"SDMLLoss: x1 and x2 differ in shape, {x1.shape} and "
                                 f"{x2.shape}")
        batch_size, dim = x1.shape
        x1_ = F.broadcast_to(F.expand_dims(x1, axis=1), shape=(batch_size, batch_size, dim))
        x2_ = F.broadcast_to(F.expand_dims(x2, axis=0), shape=(batch_size, batch_size, dim))
        return F.sum(F.square(x1_ - x2_), axis=2)

    def _compute_labels(self, F, batch_size):
        """The identity, smoothed: ``1 - s`` on the diagonal, ``s / (batch_size - 1)`` off."""
        gold = F.eye(batch_size)
        return gold * (1 - self.smoothing_parameter) + \
            (1 - gold) * self.smoothing_parameter / (batch_size - 1)

    def hybrid_forward(self, F, x1, x2):
        labels = self._compute_labels(F, x1.shape[0])
        distances = self._compute_distances(F, x1, x2)
        log_probabilities = F.log_softmax(-distances, axis=1)
        return self.kl_loss(log_probabilities, labels.as_in_context(distances.context))

