"""smooth_l1: the smooth L1 (Huber) function of each element, ``scalar`` being sigma.

::

    f(x) = 0.5 * (sigma * x) ** 2      if |x| <= 1 / sigma ** 2
           |x| - 0.5 / sigma ** 2      otherwise
    f'(x) = sigma ** 2 * x             if |x| <= 1 / sigma ** 2
            sign(x)                    otherwise

>>> import symgraph as mx
>>> exe = mx.sym.smooth_l1(mx.sym.Variable('data'), scalar=2.0).simple_bind(
...     mx.cpu(), data=(3,))
>>> exe.forward(data=mx.nd.array([-2.0, 0.1, 0.25]))[0].asnumpy().astype(float).round(4).tolist()
[1.875, 0.02, 0.125]
"""
from __future__ import annotations

import math
import sys

import torch

from ..attrs import Param
from .base import Case, OpDef, grad_rule, register, unary_shape

_PARAMS = (Param("scalar", "float", 1.0, doc="Sigma, the point where the pieces meet."),
           Param("is_int", "bool", True, doc="Whether the scalar is an integer (MXNet 1.9)."))


def _squares(p, finite: bool = False) -> tuple[float, float]:
    """``(sigma ** 2, 1 / sigma ** 2)``; sigma 0 gives an infinite bound, as MXNet's float
    division (every element then takes the quadratic piece: zero). ``finite``: the largest
    float for it instead, for the Triton expressions (which have no ``inf`` literal)."""
    s2 = p.scalar * p.scalar
    if s2 == 0:
        return s2, sys.float_info.max if finite else math.inf
    return s2, 1.0 / s2


def _forward(p, ins, aux, rt):
    x = ins[0]
    s2, inv = _squares(p)
    # MXNet's branch order and operation order (the float32 rounding matches)
    quad = 0.5 * x * x * s2
    return (torch.where(x > inv, x - 0.5 * inv, torch.where(x < -inv, -x - 0.5 * inv, quad)),)


def _backward(p, ins, aux, rt):
    dy, x = ins
    s2, inv = _squares(p)
    slope = torch.where(x > inv, 1.0, torch.where(x < -inv, -1.0, x * s2)).to(x.dtype)
    return (dy * slope,)


def _expr(p) -> str:
    s2, inv = _squares(p, finite=True)
    return (f"tl.where({{0}} > {inv!r}, {{0}} - {0.5 * inv!r}, tl.where({{0}} < {-inv!r}, "
            f"-{{0}} - {0.5 * inv!r}, 0.5 * {{0}} * {{0}} * {s2!r}))")


def _backward_expr(p) -> str:
    s2, inv = _squares(p, finite=True)
    return (f"({{0}} * tl.where({{1}} > {inv!r}, 1.0, tl.where({{1}} < {-inv!r}, -1.0, "
            f"{{1}} * {s2!r})))")


register(OpDef(
    name="_backward_smooth_l1", params=_PARAMS, inputs=("ograd", "data"), hidden=True,
    infer_shape=grad_rule(unary_shape), forward=_backward,
    expr=_backward_expr,
    doc="The data gradient of smooth_l1."))

register(OpDef(
    name="smooth_l1", params=_PARAMS, infer_shape=unary_shape, forward=_forward, expr=_expr,
    gradient=lambda g, p, ins, outs, og: [g.op("_backward_smooth_l1", og[0], ins[0], **p)],
    cases=(Case(((3, 5),), low=-2.0, high=2.0),
           Case(((2, 3, 4),), {"scalar": 2.0}),
           Case(((4, 5),), {"scalar": 0.5}, low=-6.0, high=6.0)),
    doc="""Smooth L1 of each element with ``sigma = scalar``: ``0.5 * (sigma * x) ** 2`` where
    ``|x| <= 1 / sigma ** 2``, ``|x| - 0.5 / sigma ** 2`` elsewhere.
    """))
