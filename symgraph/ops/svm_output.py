"""SVMOutput: a support vector machine loss head (MXNet 1.9.1's ``SVMOutput``).

Forward is the identity. Backward ignores the head gradient; with ``x`` the data viewed as
(N, M) (first axis kept), ``k`` the label of row ``n``, ``m = margin`` and
``c = regularization_coefficient``::

    L1 (use_linear)   dx[n, k] = -c * (m > x[n, k])      dx[n, j] = c * (m > -x[n, j])
    L2                dx[n, k] = -2c * max(m - x[n, k], 0)
                      dx[n, j] = 2c * max(m + x[n, j], 0)                 (j != k)

the gradients of ``c * sum(max(0, m - x_k)^p + sum_j max(0, m + x_j)^p)`` (p = 1, 2).
``label`` has the data's shape without its last axis and gets a zero gradient.

>>> import symgraph as mx
>>> net = mx.sym.SVMOutput(mx.sym.Variable('data'), name='svm')
>>> net.list_arguments(), net.infer_shape(data=(4, 3))[0]
(['data', 'svm_label'], [(4, 3), (4,)])
>>> net.infer_shape(data=(4, 3), svm_label=(3,))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
symgraph.base.ShapeError: ... Shape inconsistent ...
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, PlanHints, merge_shape, register

_PARAMS = (
    Param("margin", "float", 1.0, doc="The margin outside which outputs are penalised."),
    Param("regularization_coefficient", "float", 1.0, doc="Scale of the penalty."),
    Param("use_linear", "bool", False, doc="L1-SVM objective (default: L2-SVM)."),
)


def _shape(p, shapes):
    data, label = shapes
    if not data:
        return None
    if len(data) < 2:
        raise ShapeError(f"SVMOutput: data must have at least 2 dimensions, got {data}")
    label = merge_shape(label, data[:-1], "SVMOutput input 'label'")
    return [data, label], [data]


def _rows(p, out: torch.Tensor, label: torch.Tensor):
    """Data as (N, M), the label of each row and a mask of the labelled entries."""
    x = out.reshape(out.shape[0], -1)
    k = label.reshape(-1)[: x.shape[0]].to(torch.int64)
    mask = torch.arange(x.shape[1], device=x.device).view(1, -1) == k.view(-1, 1)
    return x, mask


def _backward(p, ins, aux, rt):
    x, mask = _rows(p, *ins)
    m, c = p.margin, p.regularization_coefficient
    if p.use_linear:
        grad = torch.where(mask, -(m > x).to(x.dtype), (m > -x).to(x.dtype)) * c
    else:
        grad = torch.where(mask, -2 * torch.clamp(m - x, min=0), 2 * torch.clamp(m + x, min=0))
        grad = grad * c
    return (grad.reshape(ins[0].shape),)


def _expr(p) -> str:
    """The gradient as one Triton expression over (out, row label, columns M)."""
    m, c = repr(float(p.margin)), repr(float(p.regularization_coefficient))
    hit = "((offs % {2}) == {1}.to(tl.int64))"
    if p.use_linear:
        return (f"tl.where({hit}, tl.where({m} > {{0}}, -{c}, 0.0), "
                f"tl.where({m} > -{{0}}, {c}, 0.0))")
    return (f"tl.where({hit}, -2.0 * {c} * tl.maximum({m} - {{0}}, 0.0), "
            f"2.0 * {c} * tl.maximum({m} + {{0}}, 0.0))")


def triton_svm_backward(p, ins, aux, rt):
    """The gradient as one generated elementwise kernel (label broadcast along rows)."""
    from ..kernels.elementwise import Program, run
    out, label = ins
    x = out.reshape(out.shape[0], -1)
    rows = label.reshape(-1)[: x.shape[0]].reshape(-1, 1).contiguous()
    cols = str(x.shape[1])
    prog = Program(2, ((_expr(p).replace("{2}", cols), ("x0", "x1")),), ("t0",))
    return (run(prog, [x, rows], tuple(x.shape), out.dtype)[0].reshape(out.shape),)


def _loss(p, ins):
    x, label = ins
    x2 = x.reshape(x.shape[0], -1)
    mask = torch.zeros_like(x2, dtype=torch.bool)
    mask[torch.arange(x2.shape[0]), label.reshape(-1)[: x2.shape[0]].long()] = True
    m = p.margin
    hinge = torch.where(mask, torch.clamp(m - x2, min=0), torch.clamp(m + x2, min=0))
    power = 1 if p.use_linear else 2
    return (hinge ** power).sum() * p.regularization_coefficient


register(OpDef(
    name="_backward_SVMOutput", params=_PARAMS, inputs=("output", "label"), hidden=True,
    infer_shape=lambda p, s: (s, [s[0]]) if s[0] else None, forward=_backward,
    kernel=triton_svm_backward,
    doc="The data gradient of SVMOutput from its output and label."))

register(OpDef(
    name="SVMOutput", params=_PARAMS, inputs=("data", "label"), infer_shape=_shape,
    forward=lambda p, ins, aux, rt: (ins[0].clone(),), loss=True, hints=PlanHints(view=True),
    gradient=lambda g, p, ins, outs, og: [g.op("_backward_SVMOutput", outs[0], ins[1], **p),
                                          g.zeros(ins[1])],
    cases=(Case(((4, 3), (4,)), ints={1: 3}, grad=False, loss=_loss, low=-2.0, high=2.0),
           Case(((5, 4), (5,)), {"use_linear": True, "margin": 0.5}, ints={1: 4}, grad=False,
                loss=_loss, low=-2.0, high=2.0),
           Case(((3, 6), (3,)), {"regularization_coefficient": 0.3, "margin": 1.5},
                ints={1: 6}, grad=False, loss=_loss, low=-2.0, high=2.0)),
    doc="""Support vector machine loss head: the identity forward.

    The gradient ignores the head gradient: the L2-SVM hinge gradient (or the L1-SVM one
    with ``use_linear``) of each row against its label, scaled by
    ``regularization_coefficient``; ``label`` (the data's shape without its last axis) gets
    a zero gradient.
    """))
