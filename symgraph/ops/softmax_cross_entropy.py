"""softmax_cross_entropy: summed cross-entropy of ``softmax(data)`` against integer labels.

``data`` is (N, C) and ``label`` (N,) class indices (truncated to integers). The output
has shape (1,)::

    out = -sum_i log(softmax(data)[i, label[i]])
    dx = (softmax(data) - one_hot(label)) * dy

A label outside ``[0, C)`` is MXNet's undefined case: the forward picks flat element
``i * C + label`` of the softmax (a neighbouring row; symgraph clamps to the array where
MXNet reads out of bounds) while the backward's one-hot row is all zeros, as in MXNet.

Unlike the loss heads it uses the head gradient ``dy``; the label has no gradient.

>>> import symgraph as mx
>>> net = mx.sym.softmax_cross_entropy(mx.sym.Variable('data'), name='ce')
>>> net.infer_shape(data=(4, 3))
([(4, 3), (4,)], [(1,)], [])
>>> net.infer_shape(data=(4, 3, 2))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
symgraph.base.ShapeError: ... SoftmaxCrossEntropy only accept 2D data, got shape (4, 3, 2)...
"""
from __future__ import annotations

import torch

from ..base import ShapeError
from .base import Case, OpDef, register


def _shape(p, shapes):
    data, label = shapes
    if data and len(data) != 2:
        raise ShapeError(f"SoftmaxCrossEntropy only accept 2D data, got shape {tuple(data)}")
    if label and len(label) != 1:
        raise ShapeError(f"SoftmaxCrossEntropy only accept 1D label, got shape {tuple(label)}")
    if not data:
        return None
    return [data, (data[0],)], [(1,)]


def _one_hot(label: torch.Tensor, classes: int, dtype) -> torch.Tensor:
    idx = label.to(torch.long)
    return (idx[:, None] == torch.arange(classes, device=label.device)).to(dtype)


def _forward(p, ins, aux, rt):
    x, label = ins
    n, c = x.shape
    # MXNet picks flat element i * C + label[i]: a label outside [0, C) reads a neighbouring
    # row (beyond the array MXNet reads out of bounds; symgraph clamps to it)
    idx = torch.arange(n, device=x.device) * c + label.to(torch.long)
    picked = torch.softmax(x, dim=1).reshape(-1)[idx.clamp(0, n * c - 1)]
    return (-torch.log(picked).sum().reshape(1),)


def _backward(p, ins, aux, rt):
    dy, x, label = ins
    grad = torch.softmax(x, dim=1) - _one_hot(label, x.shape[1], x.dtype)
    return (grad * dy.reshape(()),)


def triton_softmax_cross_entropy(p, ins, aux, rt):
    """The loss as a Triton softmax and one gather-log-sum program."""
    from ..kernels.softmax import softmax_ce_loss
    return (softmax_ce_loss(ins[0], ins[1]),)


def triton_backward_softmax_cross_entropy(p, ins, aux, rt):
    """The data gradient as one fused Triton row kernel."""
    from ..kernels.softmax import softmax_ce_bwd
    return (softmax_ce_bwd(*ins),)


register(OpDef(
    name="_backward_softmax_cross_entropy", inputs=("ograd", "data", "label"), hidden=True,
    infer_shape=lambda p, s: (s, [s[1]]) if s[1] else None, forward=_backward,
    kernel=triton_backward_softmax_cross_entropy,
    doc="The data gradient of softmax_cross_entropy."))

register(OpDef(
    name="softmax_cross_entropy", inputs=("data", "label"), infer_shape=_shape,
    forward=_forward, kernel=triton_softmax_cross_entropy,
    gradient=lambda g, p, ins, outs, og: [
        g.op("_backward_softmax_cross_entropy", og[0], ins[0], ins[1]), None],
    cases=(Case(((4, 3), (4,)), ints={1: 3}),
           Case(((2, 7), (2,)), ints={1: 7}, low=-3.0, high=3.0),
           Case(((5, 1), (5,)), ints={1: 1})),
    doc="""Cross-entropy of ``softmax(data)`` with integer labels, summed over the batch.

    ``data`` is (N, C), ``label`` (N,) class indices; the output has shape (1,). The gradient
    ``(softmax(data) - one_hot(label)) * dy`` uses the head gradient; the label gets none.
    """))
