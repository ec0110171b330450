"""SoftmaxOutput: softmax forward, cross-entropy gradient backward (a loss head).

Backward math, with ``p = softmax(x)`` and one-hot (or smoothed) target ``t``:
``dx = (p - t) * grad_scale / norm``, zeroed where ``label == ignore_label`` when
``use_ignore``; ``norm`` is 1 (null), the batch size (batch) or the number of
non-ignored labels (valid). The head gradient is ignored, as in MXNet.
"""
from __future__ import annotations

import math

import torch

from ..attrs import Param
from .base import Case, OpDef, register

_PARAMS = (
    Param("grad_scale", "float", 1.0, doc="Scale the gradient by this factor."),
    Param("ignore_label", "float", -1.0, doc="Label value to ignore when use_ignore."),
    Param("multi_output", "bool", False, doc="Softmax over axis 1 of (N, C, ...) data."),
    Param("use_ignore", "bool", False, doc="Ignore labels equal to ignore_label."),
    Param("preserve_shape", "bool", False, doc="Softmax over the last axis, keep the shape."),
    Param("normalization", "str", "null", choices=("null", "batch", "valid")),
    Param("out_grad", "bool", False, doc="Multiply the gradient by the head gradient."),
    Param("smooth_alpha", "float", 0.0, doc="Label smoothing factor."),
)


def _label_shape(p, data: tuple) -> tuple:
    if p.multi_output:
        return (data[0],) + tuple(data[2:])
    # MXNet 1.9.1 wants data.shape[:-1] whatever the convention (its forward still takes the
    # softmax over the flattened trailing axes, and the backward reads one label per row)
    return tuple(data[:-1])


def _shape(p, shapes):
    data, label = shapes
    if not data:
        return None
    if label and tuple(label) == tuple(data):  # probability labels of the data's shape
        return shapes, [data]
    return [data, _label_shape(p, data)], [data]


def _as_2d(p, x: torch.Tensor) -> tuple[torch.Tensor, int]:
    """View of ``x`` with the class axis last and everything else flattened; class axis size."""
    if p.multi_output:
        c = x.shape[1]
        return x.movedim(1, -1).reshape(-1, c), c
    if p.preserve_shape:
        return x.reshape(-1, x.shape[-1]), x.shape[-1]
    return x.reshape(x.shape[0], -1), math.prod(x.shape[1:])


def _from_2d(p, y2: torch.Tensor, shape) -> torch.Tensor:
    if p.multi_output:
        moved = (shape[0],) + tuple(shape[2:]) + (shape[1],)
        return y2.reshape(moved).movedim(-1, 1).contiguous()
    return y2.reshape(shape)


def _forward(p, ins, aux, rt):
    x2, _ = _as_2d(p, ins[0])
    return (_from_2d(p, torch.softmax(x2, dim=-1), ins[0].shape),)


def _target(p, label: torch.Tensor, out_shape, classes: int, dtype) -> tuple:
    """Target distribution (rows x classes) and the per-row keep mask (a label with more
    entries than rows: its first ones, as MXNet reads it)."""
    lab = label.reshape(-1)[:math.prod(out_shape) // classes]
    idx = lab.long().clamp(0, classes - 1)
    on, off = 1.0 - p.smooth_alpha, p.smooth_alpha / max(classes - 1, 1)
    t = torch.full((lab.numel(), classes), off, dtype=dtype, device=label.device)
    t.scatter_(1, idx[:, None], on)
    keep = (lab != p.ignore_label) if p.use_ignore else torch.ones_like(lab, dtype=torch.bool)
    return t, keep


def _backward_forward(p, ins, aux, rt):
    out, label = ins[0], ins[1]
    y2, classes = _as_2d(p, out)
    if tuple(label.shape) == tuple(out.shape):  # probability labels
        t, keep = _as_2d(p, label)[0], torch.ones(y2.shape[0], dtype=torch.bool,
                                                  device=out.device)
    else:
        t, keep = _target(p, label, out.shape, classes, out.dtype)
    grad = (y2 - t) * keep[:, None].to(out.dtype)
    extra = not p.multi_output and label.numel() > y2.shape[0] and \
        tuple(label.shape) != tuple(out.shape)  # MXNet then normalises over every label
    if p.normalization == "batch":
        norm = float(label.numel() if extra else out.shape[0])
    elif p.normalization == "valid":
        every = label.reshape(-1) != p.ignore_label if p.use_ignore and extra else keep
        norm = every.sum().clamp_min(1).to(torch.float64)  # on the device: no host read
    else:
        norm = 1.0
    if p.multi_output and p.normalization != "valid":  # MXNet also averages over positions
        norm *= y2.shape[0] / out.shape[0]
    grad = grad * (p.grad_scale / norm)
    if p.out_grad and len(ins) > 2:
        grad = grad * _as_2d(p, ins[2])[0]
    return (_from_2d(p, grad, out.shape),)


def _prepare_forward(p, in_shapes, out_shapes, out=None):
    """Softmax over the class axis of a fixed shape: one reshape and one softmax per step."""
    if out is not None or p.multi_output:
        return None
    shape = tuple(in_shapes[0])
    classes = shape[-1] if p.preserve_shape else math.prod(shape[1:])
    if len(shape) == 2 and not p.preserve_shape:
        return lambda p, ins, aux, rt: (torch.softmax(ins[0], -1),)
    return lambda p, ins, aux, rt: (torch.softmax(ins[0].reshape(-1, classes), -1)
                                    .reshape(shape),)


def _prepare_backward(p, in_shapes, out_shapes, out=None):
    """The common heads (class labels; no smoothing, multi_output or out_grad): ``p - onehot``
    as clone + scatter_add of -1 at the clamped label; ignored rows zeroed in place; one scale
    when it is not 1 (the valid count a device scalar: nothing read on the host)."""
    shape, label_shape = tuple(in_shapes[0]), tuple(in_shapes[1])
    if out is not None or p.multi_output or p.smooth_alpha or p.out_grad or \
            label_shape == shape:
        return None
    classes = shape[-1] if p.preserve_shape else math.prod(shape[1:])
    rows = math.prod(shape) // classes
    if math.prod(label_shape) != rows:  # more labels than rows: the reference's rules
        return None
    valid, ignore = p.normalization == "valid" and p.use_ignore, p.ignore_label
    norm = {"batch": float(shape[0]), "valid": float(max(rows, 1))}.get(p.normalization, 1.0)
    scale = p.grad_scale / norm
    minus_one: dict = {}

    def backward(p, ins, aux, rt):
        y, label = ins[0], ins[1].reshape(rows, 1)
        key = (y.device, y.dtype)
        src = minus_one.get(key)
        if src is None:
            src = minus_one[key] = torch.full((rows, 1), -1.0, dtype=y.dtype, device=y.device)
        k = label.long().clamp_(0, classes - 1)
        g = y.reshape(rows, classes).clone().scatter_add_(1, k, src)
        if p.use_ignore:
            dropped = label == ignore
            g.masked_fill_(dropped, 0.0)
            if valid:  # the valid count stays on the device: no host read per step
                count = (rows - dropped.sum()).clamp_min(1).to(torch.float64)
                return (g.mul_(p.grad_scale / count).reshape(shape),)
        if scale != 1.0:
            g.mul_(scale)
        return (g.reshape(shape),)
    return backward


def triton_softmax_output(p, ins, aux, rt):
    """Triton kernel for SoftmaxOutput's forward: softmax over the class axis."""
    from ..kernels.softmax import softmax_fwd
    x = ins[0]
    if p.multi_output:
        return (softmax_fwd(x, 1),)
    if p.preserve_shape:
        return (softmax_fwd(x, -1),)
    return (softmax_fwd(x.reshape(x.shape[0], -1), -1).reshape(x.shape),)


def triton_softmax_output_backward(p, ins, aux, rt):
    """Triton kernel for _backward_SoftmaxOutput (``kernels.softmax.softmax_output_bwd``)."""
    from ..kernels.softmax import softmax_output_bwd
    if p.out_grad and len(ins) > 2:  # not reachable: the op takes (output, label) only
        return _backward_forward(p, ins, aux, rt)
    return (softmax_output_bwd(ins[0], ins[1], p.grad_scale, p.ignore_label, p.use_ignore,
                               p.multi_output, p.preserve_shape, p.normalization,
                               p.smooth_alpha),)


def implied_loss(p, ins):
    """The loss SoftmaxOutput's gradient differentiates: scaled, masked cross-entropy."""
    x, label = ins
    x2, classes = _as_2d(p, x)
    logp = torch.log_softmax(x2, dim=-1)
    t, keep = _target(p, label, x.shape, classes, x.dtype)
    rows = -(t * logp).sum(-1) * keep.to(x.dtype)
    norm = {"batch": float(x.shape[0]), "valid": float(max(int(keep.sum()), 1))}.get(
        p.normalization, 1.0)
    if p.multi_output and p.normalization != "valid":
        norm *= x2.shape[0] / x.shape[0]
    return rows.sum() * p.grad_scale / norm


def _gradient(g, p, ins, outs, og):
    attrs = {k: v for k, v in p.items()}
    dx = g.op("_backward_SoftmaxOutput", outs[0], ins[1], **attrs)
    return [dx, g.zeros(ins[1])]


register(OpDef(
    name="SoftmaxOutput", aliases=("Softmax",), params=_PARAMS, inputs=("data", "label"),
    infer_shape=_shape, forward=_forward, gradient=_gradient, loss=True,
    kernel=triton_softmax_output, prepare=_prepare_forward,
    cases=(Case(((4, 5), (4,)), ints={1: 5}, grad=False, loss=implied_loss),
           Case(((4, 5), (4,)), {"grad_scale": 0.5, "normalization": "batch",
                                 "smooth_alpha": 0.1}, ints={1: 5}, grad=False,
                loss=implied_loss),
           Case(((6, 3), (6,)), {"use_ignore": True, "ignore_label": 1,
                                 "normalization": "valid"}, ints={1: 3}, grad=False,
                loss=implied_loss),
           Case(((2, 3, 4), (2, 4)), {"multi_output": True}, ints={1: 3}, grad=False,
                loss=implied_loss),
           Case(((2, 3, 4), (2, 3)), {"preserve_shape": True}, ints={1: 4}, grad=False,
                loss=implied_loss)),
    doc="Softmax in the forward pass; the gradient of cross-entropy with ``label`` backward."))

register(OpDef(
    name="_backward_SoftmaxOutput", params=_PARAMS, inputs=("output", "label"), hidden=True,
    infer_shape=lambda p, s: (s, [s[0]]) if s[0] else None, forward=_backward_forward,
    kernel=triton_softmax_output_backward, prepare=_prepare_backward,
    doc="The data gradient of SoftmaxOutput from its output and label."))
