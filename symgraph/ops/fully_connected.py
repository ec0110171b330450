"""FullyConnected: ``out = data @ weight.T + bias`` (data flattened to 2-D unless flatten=False)."""
from __future__ import annotations

import math

import torch

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, PlanHints, Special, Storage, register
from .matmul import csr_mm


def _inputs(p):
    return ["data", "weight"] if p.no_bias else ["data", "weight", "bias"]


def _shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    k = math.prod(data[1:]) if p.flatten else data[-1]
    if k == 0 and all(d > 0 for d in data[:1]):
        raise ShapeError(f"Shape dim size must be known, got data shape {tuple(data)}")
    out = (data[0], p.num_hidden) if p.flatten else tuple(data[:-1]) + (p.num_hidden,)
    ins = [data, (p.num_hidden, k)] + ([] if p.no_bias else [_bias_shape(p, shapes[2])])
    return ins, [out]


def _bias_shape(p, given: tuple) -> tuple:
    """``(num_hidden,)``; a given ``(num_hidden, 1)`` bias is kept (MXNet takes both)."""
    return tuple(given) if tuple(given) == (p.num_hidden, 1) else (p.num_hidden,)


def _inputs_from_output(p, shapes, outs):
    """MXNet's FullyConnected shape rule also runs backwards: the data's batch size (its
    leading dims without flatten) from the output's."""
    data, out = shapes[0], outs[0] if outs else ()
    if not data or not out or 0 not in data:
        return None
    lead = 1 if p.flatten else len(data) - 1
    if len(out) < lead:
        return None
    filled = tuple(o if d == 0 else d for d, o in zip(data[:lead], out[:lead]))
    return [filled + tuple(data[lead:])] + list(shapes[1:])


def _forward(p, ins, aux, rt):
    x, w = ins[0], ins[1]
    if p.flatten and x.dim() != 2:
        x = x.reshape(x.shape[0], -1)
    b = None if p.no_bias else ins[2].reshape(-1)
    return (torch.nn.functional.linear(x, w, b),)


def _csr_storage(p, stypes):
    """csr data with dense weight and bias: a dense output, the data never densified."""
    if stypes[0] == "csr" and all(s == "default" for s in stypes[1:]):
        return ["default"]
    return None


def _forward_csr(p, ins, aux, rt):
    out = csr_mm(ins[0], ins[1].t())
    return (out if p.no_bias else out + ins[2].reshape(-1),)


def _prepare(p, in_shapes, out_shapes, out=None):
    """``linear`` on a fixed shape: whether to flatten the data is decided once."""
    if out is not None or (not p.no_bias and len(in_shapes[2]) != 1):
        return None
    linear = torch.nn.functional.linear
    rows = in_shapes[0][0]
    if p.flatten and len(in_shapes[0]) != 2:
        if p.no_bias:
            return lambda p, ins, aux, rt: (linear(ins[0].reshape(rows, -1), ins[1]),)
        return lambda p, ins, aux, rt: (linear(ins[0].reshape(rows, -1), ins[1], ins[2]),)
    if p.no_bias:
        return lambda p, ins, aux, rt: (linear(ins[0], ins[1]),)
    return lambda p, ins, aux, rt: (linear(ins[0], ins[1], ins[2]),)


def triton_fully_connected(p, ins, aux, rt, act=None):
    """Triton kernel: one matmul with the bias (and an activation) fused into its epilogue."""
    from ..kernels.gemm import linear
    x, w = ins[0], ins[1]
    lead = (x.shape[0],) if p.flatten else tuple(x.shape[:-1])
    x2 = x.reshape(x.shape[0], -1) if p.flatten else x.reshape(-1, x.shape[-1])
    y = linear(x2, w, None if p.no_bias else ins[2].reshape(-1), act=act)
    return (y.reshape(lead + (p.num_hidden,)),)


def _epilogue(p, act: str):
    """FullyConnected + relu/sigmoid/tanh as one launch."""
    if act not in ("relu", "sigmoid", "tanh"):
        return None

    def triton_fully_connected_act(p, ins, aux, rt):
        return triton_fully_connected(p, ins, aux, rt, act=act)
    triton_fully_connected_act.__name__ = f"triton_fully_connected_{act}"
    return triton_fully_connected_act


def _gradient(g, p, ins, outs, og):
    data, weight = ins[0], ins[1]
    dy = og[0]
    if p.flatten:
        x2, dy2 = g.op("Flatten", data), dy
    else:
        x2 = g.op("Reshape", data, shape=(-1, 0), reverse=True)
        dy2 = g.op("Reshape", dy, shape=(-1, p.num_hidden))
    dx = g.op("reshape_like", g.op("dot", dy2, weight), data)
    dw = g.op("dot", dy2, x2, transpose_a=True)
    grads = [dx, dw]
    if not p.no_bias:  # reshaped like the bias: MXNet also takes a (num_hidden, 1) one
        grads.append(g.op("reshape_like", g.op("sum", dy2, axis=0), ins[2]))
    return grads


register(OpDef(
    name="FullyConnected",
    params=(Param("num_hidden", "int", doc="Number of hidden units.", lower=1),
            Param("no_bias", "bool", False, doc="Whether to disable the bias."),
            Param("flatten", "bool", True, doc="Flatten all but the first axis of data.")),
    inputs=_inputs, infer_shape=_shape, forward=_forward, gradient=_gradient,
    hints=PlanHints(epilogue=_epilogue), prepare=_prepare,
    special=Special(infer_inputs_from_outputs=_inputs_from_output),
    kernel=triton_fully_connected, storage=Storage(_csr_storage, _forward_csr),
    cases=(Case(((4, 5), (3, 5), (3,)), {"num_hidden": 3}),
           Case(((2, 3, 4), (6, 12)), {"num_hidden": 6, "no_bias": True}),
           Case(((2, 3, 4), (5, 4), (5,)), {"num_hidden": 5, "flatten": False})),
    doc="""Fully connected layer: ``out = dot(data, weight.T) + bias``.

    ``data`` of shape (N, ...) is flattened to (N, K) when ``flatten`` is True; otherwise
    the last axis is contracted: (..., K) -> (..., num_hidden). ``weight`` is (num_hidden, K).
    """))
