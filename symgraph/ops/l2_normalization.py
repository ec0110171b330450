"""L2Normalization: divide by the L2 norm over the axes ``mode`` names.

``norm = sqrt(sum(x ** 2) + eps)`` over axes 1.. (instance), axis 1 (channel) or axes 2..
(spatial); ``out = x / norm``. The norm is a hidden second output (kept with the reduced
axes of length 1). Backward: ``dx = (dy - out * sum(dy * out)) / norm``, the sum over the
same axes.

>>> import symgraph as mx
>>> net = mx.sym.L2Normalization(mx.sym.Variable('data'), mode='channel', name='l2')
>>> net.list_outputs(), net.infer_shape(data=(2, 3, 4))[1]
(['l2_output'], [(2, 3, 4)])
>>> net.infer_shape(data=(2, 3))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
symgraph.base.ShapeError: ... mode 'channel' needs data with at least 3 dimensions...
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, register

_PARAMS = (
    Param("eps", "float", 1e-10, doc="A small constant added to the sum of squares."),
    Param("mode", "str", "instance", choices=("channel", "instance", "spatial"),
          doc="Normalise each instance, across channels or over spatial positions."),
)

# the reduced axes as ``sum`` attributes that need no rank: (axis, exclude)
_SUM_AXES = {"instance": (0, True), "channel": (1, False), "spatial": ((0, 1), True)}


def _axes(mode: str, ndim: int) -> tuple[int, ...]:
    if mode == "instance":
        return tuple(range(1, ndim))
    return (1,) if mode == "channel" else tuple(range(2, ndim))


def _shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    if p.mode != "instance" and len(data) < 3:
        raise ShapeError(f"L2Normalization mode '{p.mode}' needs data with at least 3 "
                         f"dimensions, got shape {tuple(data)}")
    axes = _axes(p.mode, len(data))
    norm = tuple(1 if i in axes else d for i, d in enumerate(data))
    return shapes, [data, norm]


def _forward(p, ins, aux, rt):
    x = ins[0]
    axes = _axes(p.mode, x.dim())
    sq = x * x
    if axes:  # torch sums over every axis when given none
        sq = sq.sum(dim=axes, keepdim=True)
    norm = torch.sqrt(sq + p.eps)
    return x / norm, norm


def triton_l2_normalization(p, ins, aux, rt):
    """Triton kernel for L2Normalization (``symgraph.kernels.norm.l2_normalization``)."""
    from ..kernels.norm import l2_normalization
    return l2_normalization(ins[0], p.mode, p.eps)


def _gradient(g, p, ins, outs, og):
    out, norm = outs[0], outs[1]
    axis, exclude = _SUM_AXES[p.mode]
    dot = g.op("sum", g.op("elemwise_mul", og[0], out), axis=axis, exclude=exclude,
               keepdims=True)
    diff = g.op("elemwise_sub", og[0], g.op("broadcast_mul", out, dot))
    return [g.op("broadcast_div", diff, norm)]


register(OpDef(
    name="L2Normalization", params=_PARAMS, outputs=("output", "norm"),
    num_visible=lambda p: 1, infer_shape=_shape, forward=_forward, gradient=_gradient,
    kernel=triton_l2_normalization,
    cases=(Case(((3, 5),)),
           Case(((2, 3, 4),), {"mode": "channel"}),
           Case(((2, 3, 2, 2),), {"mode": "spatial", "eps": 0.1}),
           Case(((2, 3, 2, 2),), {"mode": "instance"}),
           Case(((4,),), {"eps": 0.5})),
    doc="""Normalise ``data`` by its L2 norm: ``x / sqrt(sum(x ** 2) + eps)``.

    ``mode`` picks the summed axes: ``instance`` all but the first, ``channel`` axis 1,
    ``spatial`` axes 2 and beyond; ``channel`` and ``spatial`` need 3-D or larger input.
    """))
