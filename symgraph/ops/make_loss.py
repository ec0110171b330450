"""MakeLoss: mark any symbol as a loss; forward is the identity.

Backward ignores the head gradient and gives every element ``grad_scale / norm`` with
``norm`` by ``normalization``: ``null`` 1; ``batch`` the size of every axis but the last
(MXNet flattens the data to 2-D and divides by the rows: (2, 3, 4) data divides by 6,
1-D data by 1); ``valid`` the number of elements greater than ``valid_thresh`` (at least 1).

>>> import symgraph as mx
>>> x = mx.sym.Variable('data')
>>> exe = mx.sym.MakeLoss(x, normalization='batch').simple_bind(mx.cpu(), data=(3, 2))
>>> _ = exe.forward(is_train=True)
>>> exe.backward()
>>> exe.grad_dict['data'].asnumpy().astype(float).round(4).tolist()
[[0.3333, 0.3333], [0.3333, 0.3333], [0.3333, 0.3333]]
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..sparse import rules
from .base import Case, OpDef, register, unary_shape

_PARAMS = (
    Param("grad_scale", "float", 1.0, doc="Scale the gradient by this factor."),
    Param("valid_thresh", "float", 0.0, doc="Elements above it count as valid."),
    Param("normalization", "str", "null", choices=("batch", "null", "valid"),
          doc="Divide the gradient by nothing, the batch size or the valid count."),
)


def _factor(p, out: torch.Tensor):
    """``grad_scale / norm``: a Python float, or for 'valid' (a count of the data) a 0-d
    float64 tensor on the data's device, so no step reads the count on the host."""
    if p.normalization == "valid":
        return p.grad_scale / (out > p.valid_thresh).sum().clamp_min(1).to(torch.float64)
    if p.normalization == "batch":
        return p.grad_scale / (float(out.numel() // out.shape[-1]) if out.dim() and
                               out.shape[-1] else 1.0)
    return p.grad_scale


def _backward(p, ins, aux, rt):
    out = ins[0]
    factor = _factor(p, out)
    if isinstance(factor, float):
        return (torch.full_like(out, factor),)
    return (factor.to(out.dtype).expand_as(out).clone(),)


def triton_make_loss_backward(p, ins, aux, rt):
    """The constant gradient written by one generated kernel (a valid count read from a
    device scalar, so the program does not change with it)."""
    from ..kernels.elementwise import Program, run
    out = ins[0]
    factor = _factor(p, out)
    if isinstance(factor, float):
        prog = Program(1, ((f"({{0}} * 0.0 + {factor!r})", ("x0",)),), ("t0",))
        return run(prog, [out], tuple(out.shape), out.dtype)
    prog = Program(2, (("({0} * 0.0 + {1})", ("x0", "x1")),), ("t0",))
    return run(prog, [out, factor.to(out.dtype)], tuple(out.shape), out.dtype)


def _implied_loss(p, ins):
    """The loss MakeLoss's gradient differentiates: the scaled, normalised sum of data."""
    x = ins[0]
    if p.normalization == "batch":
        norm = float(x.numel() // x.shape[-1]) if x.dim() > 1 else 1.0
    elif p.normalization == "valid":
        norm = float(max(int((x > p.valid_thresh).sum()), 1))
    else:
        norm = 1.0
    return x.sum() * p.grad_scale / norm


register(OpDef(
    name="_backward_MakeLoss", params=_PARAMS, hidden=True, inputs=("output",),
    infer_shape=unary_shape, forward=_backward, kernel=triton_make_loss_backward,
    doc="The gradient of MakeLoss: ``grad_scale / norm`` everywhere."))

register(OpDef(
    name="MakeLoss", params=_PARAMS, infer_shape=unary_shape, loss=True, expr="{0}",
    forward=lambda p, ins, aux, rt: (ins[0].clone(),),
    gradient=lambda g, p, ins, outs, og: [g.op("_backward_MakeLoss", outs[0], **p)],
    cases=(Case(((3, 4),), grad=False, loss=_implied_loss),
           Case(((2, 3, 2),), {"normalization": "batch", "grad_scale": 2.0}, grad=False,
                loss=_implied_loss),
           Case(((5,),), {"normalization": "valid", "valid_thresh": 0.1}, grad=False,
                loss=_implied_loss)),
    doc="""Use ``data`` as a loss: the identity forward; backward ignores the head gradient
    and writes ``grad_scale / norm`` everywhere (``normalization``: null 1, batch the
    product of all but the last axis, valid the count of elements > ``valid_thresh``).
    """))


def _make_loss_grad(g, p, ins, outs, og):
    return [g.op("_backward_MakeLoss", outs[0], grad_scale=1.0, normalization="null")]


register(OpDef(
    name="make_loss", outputs=("loss",), infer_shape=unary_shape, loss=True, expr="{0}",
    forward=lambda p, ins, aux, rt: (ins[0].clone(),), gradient=_make_loss_grad,
    storage=rules.KEEP_SPARSE,
    cases=(Case(((3, 4),), grad=False, loss=lambda p, ins: ins[0].sum()),),
    doc="Use ``data`` as a loss (MXNet's parameterless ``make_loss``): the identity "
        "forward, output named ``loss``; backward ignores the head gradient and writes ones."))
