"""Activation: relu, sigmoid, tanh, softrelu (softplus) and softsign in one op."""
from __future__ import annotations

import torch

from ..attrs import Param
from .base import OPS, Case, OpDef, PlanHints, register, unary_shape

_FORWARD = {
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "softrelu": torch.nn.functional.softplus,
    "softsign": lambda x: x / (1 + x.abs()),
}


def _expr(p) -> str:
    from .elementwise import TRITON
    if p.act_type == "softrelu":  # log(1 + exp(x)) without overflow
        return "(tl.maximum({0}, 0.0) + tl.log(1.0 + tl.exp(-tl.abs({0}))))"
    return TRITON[p.act_type]


def _gradient(g, p, ins, outs, og):
    if p.act_type == "softrelu":  # d softplus(x) = sigmoid(x)
        return [g.op("elemwise_mul", og[0], g.op("sigmoid", ins[0]))]
    # the other four share their rule with the unary op of the same name
    return OPS[p.act_type].gradient(g, p, ins, outs, og)


register(OpDef(
    name="Activation",
    params=(Param("act_type", "str", choices=tuple(_FORWARD),
                  doc="Activation function to apply."),),
    infer_shape=unary_shape, gradient=_gradient,
    hints=PlanHints(inplace=((0, 0),), activation=lambda p: p.act_type), expr=_expr,
    forward=lambda p, ins, aux, rt: (_FORWARD[p.act_type](ins[0]),),
    cases=tuple(Case(((3, 5),), {"act_type": a}) for a in _FORWARD),
    doc="Elementwise activation: ``act_type`` is relu, sigmoid, tanh, softrelu or softsign."))
