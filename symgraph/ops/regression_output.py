"""Regression heads: LinearRegressionOutput, LogisticRegressionOutput, MAERegressionOutput.

Forward is the identity (logistic: the sigmoid). Backward ignores the head gradient
(loss heads) and, with ``num_output = label.size / label.shape[0]`` (the outputs per
sample, as MXNet computes it), gives::

    Linear, Logistic   dx = (out - label) * grad_scale / num_output
    MAE                dx = (out > label ? 1 : -1) * grad_scale / num_output

``label`` gets a zero gradient. Its shape defaults to the data's ((N,) for (N, 1) data);
any label with the data's first dimension and size is accepted.

>>> import symgraph as mx
>>> net = mx.sym.LinearRegressionOutput(mx.sym.Variable('data'), name='lro')
>>> net.list_arguments(), net.infer_shape(data=(4, 1))[0]
(['data', 'lro_label'], [(4, 1), (4,)])
>>> net.infer_shape(data=(4, 3), lro_label=(4,))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
symgraph.base.ShapeError: ... Shape inconsistent, Provided=(4,), inferred shape=(4, 3)...
"""
from __future__ import annotations

import math

import torch

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, PlanHints, register

_PARAMS = (Param("grad_scale", "float", 1.0, doc="Scale the gradient by this factor."),)


def _shape(p, shapes):
    data, label = shapes
    if not data:
        return None
    if not label:
        label = (data[0],) if len(data) == 2 and data[1] == 1 else data
    elif all(label) and all(data) and (
            label[0] != data[0] or math.prod(label) != math.prod(data)):
        raise ShapeError(f"Shape inconsistent, Provided={tuple(label)}, inferred "
                         f"shape={tuple(data)}")
    return [data, label], [data]


def _backward(kind: str):
    def run(p, ins, aux, rt):
        out, label = ins
        lab = label.reshape(out.shape).to(out.dtype)
        if kind == "MAE":
            diff = torch.where(out > lab, 1.0, -1.0).to(out.dtype)
        else:
            diff = out - lab
        num_output = label.numel() // label.shape[0]
        return (diff * (p.grad_scale / num_output),)
    return run


_FORWARD = {"Linear": torch.clone, "Logistic": torch.sigmoid, "MAE": torch.clone}
_DOCS = {
    "Linear": """Linear regression loss head (squared error): the identity forward.

    The gradient ignores the head gradient: ``(out - label) * grad_scale / num_output``,
    ``num_output`` being the label's size per sample. ``label`` gets a zero gradient.
    """,
    "Logistic": """Logistic regression loss head: ``sigmoid(data)`` forward.

    The gradient ignores the head gradient: ``(out - label) * grad_scale / num_output``,
    ``num_output`` being the label's size per sample. ``label`` gets a zero gradient.
    """,
    "MAE": """Mean absolute error loss head: the identity forward.

    The gradient ignores the head gradient: ``s * grad_scale / num_output`` with
    ``s = 1`` where ``out > label`` and ``-1`` elsewhere (also where they are equal),
    ``num_output`` being the label's size per sample. ``label`` gets a zero gradient.
    """,
}
def _implied(kind: str):
    """The loss each head's gradient differentiates (per-sample sums, scaled like MXNet)."""
    def loss(p, ins):
        x, label = ins
        label = label.reshape(x.shape)
        scale = p.grad_scale / (label.numel() // label.shape[0])
        if kind == "Linear":
            return 0.5 * ((x - label) ** 2).sum() * scale
        if kind == "Logistic":
            out = torch.sigmoid(x)
            return -(label * torch.log(out) + (1 - label) * torch.log1p(-out)).sum() * scale
        return (x - label).abs().sum() * scale
    return loss


def _cases(kind: str) -> tuple:
    loss = _implied(kind)
    return (Case(((4, 3), (4, 3)), grad=False, loss=loss),
            Case(((2, 3, 2), (2, 3, 2)), {"grad_scale": 2.5}, grad=False, loss=loss),
            Case(((5, 1), (5,)), grad=False, loss=loss),
            Case(((2, 3, 2), (2, 6)), grad=False, loss=loss))


_BACKWARD_EXPR = {"Linear": "(({0} - {1}) * {2})", "Logistic": "(({0} - {1}) * {2})",
                  "MAE": "(tl.where({0} > {1}, 1.0, -1.0) * {2})"}


def _triton_backward(kind: str):
    """The gradient as one generated elementwise kernel (label viewed in the output's shape)."""
    def triton_regression_backward(p, ins, aux, rt):
        from ..kernels.elementwise import Program, run
        out, label = ins
        scale = p.grad_scale / (label.numel() // label.shape[0])
        prog = Program(2, ((_BACKWARD_EXPR[kind].replace("{2}", repr(scale)), ("x0", "x1")),),
                       ("t0",))
        return run(prog, [out, label.reshape(out.shape)], tuple(out.shape), out.dtype)
    return triton_regression_backward


def _register(kind: str) -> None:
    name = f"{kind}RegressionOutput"
    backward = f"_backward_{name}"
    register(OpDef(
        name=backward, params=_PARAMS, inputs=("output", "label"), hidden=True,
        infer_shape=lambda p, s: (s, [s[0]]) if s[0] else None, forward=_backward(kind),
        kernel=_triton_backward(kind),
        doc=f"The data gradient of {name} from its output and label."))
    fwd = _FORWARD[kind]
    register(OpDef(
        name=name, params=_PARAMS, inputs=("data", "label"), infer_shape=_shape,
        forward=lambda p, ins, aux, rt: (fwd(ins[0]),), loss=True,
        expr="(1.0 / (1.0 + tl.exp(-{0})))" if kind == "Logistic" else None,
        hints=PlanHints(view=kind != "Logistic"),  # Linear and MAE heads pass data through
        gradient=lambda g, p, ins, outs, og: [g.op(backward, outs[0], ins[1], **p),
                                              g.zeros(ins[1])],
        cases=_cases(kind),
        doc=_DOCS[kind]))


for _kind in ("Linear", "Logistic", "MAE"):
    _register(_kind)
