"""Dropout: zero elements with probability ``p`` and scale the kept ones by ``1 / (1 - p)``.

The hidden second output is MXNet's mask, already scaled: each element is 0 or
``1 / (1 - p)``, so ``out = data * mask`` and ``dx = dy * mask``. Elements are kept where
a uniform draw from the executor's generator is below ``1 - p``, so ``mx.random.seed``
makes masks reproducible. ``axes`` lists axes along which one draw is shared (variational
dropout). Dropout is active in training (``mode='training'``) or always
(``mode='always'``); otherwise it is the identity and the mask is all ones.

>>> import symgraph as mx
>>> net = mx.sym.Dropout(mx.sym.Variable('data'), p=0.5, name='drop')
>>> net.list_outputs()
['drop_output']
>>> exe = net.simple_bind(mx.cpu(), data=(2, 3))
>>> exe.arg_dict['data'][:] = 1.0
>>> exe.forward(is_train=False)[0].asnumpy().tolist()
[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
>>> sorted(set(exe.forward(is_train=True)[0].asnumpy().ravel().tolist()) - {0.0, 2.0})
[]
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, draw_seed, register

_PARAMS = (
    Param("p", "float", 0.5, doc="Fraction of the input dropped during training."),
    Param("mode", "str", "training", choices=("always", "training"),
          doc="Drop only in training, or also in inference."),
    Param("axes", "shape", (), doc="Axes sharing one draw (variational dropout)."),
    Param("cudnn_off", "bool_or_none", False,
          doc="Boolean or None; accepted for compatibility, no effect."),
)


def _shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    for a in p.axes:
        if not -len(data) <= a < len(data):
            raise ShapeError(f"Dropout axis {a} is out of range for data of shape {data}")
    return shapes, [data, data]


def _forward(p, ins, aux, rt):
    x = ins[0]
    if not (rt.is_train or p.mode == "always") or p.p == 0:
        return x.clone(), torch.ones_like(x)
    keep = 1.0 - p.p
    draw_shape = list(x.shape)
    for a in p.axes:
        draw_shape[a] = 1
    u = torch.rand(draw_shape, generator=rt.generator, device=x.device)
    scale = 1.0 / keep if keep > 0 else float("inf")  # p = 1 gives NaN, as in MXNet
    mask = ((u < keep).to(x.dtype) * scale).expand(x.shape).contiguous()
    return x * mask, mask


def triton_dropout(p, ins, aux, rt):
    """Dropout from Triton's Philox stream, seeded by a 64-bit draw from the executor's
    generator (so ``mx.random.seed`` reproduces it); the identity outside training."""
    from ..kernels.copy import broadcast_to
    from ..kernels.dropout import apply_mask, dropout, dropout_mask
    x = ins[0]
    if not (rt.is_train or p.mode == "always") or p.p == 0:
        return x.clone(), torch.ones_like(x)
    seed = draw_seed(rt)
    if not p.axes:
        return dropout(x, p.p, seed)
    draw_shape = list(x.shape)
    for a in p.axes:
        draw_shape[a] = 1
    mask = broadcast_to(dropout_mask(draw_shape, p.p, seed, x.dtype, x.device), x.shape)
    return apply_mask(x, mask), mask


register(OpDef(
    name="Dropout", params=_PARAMS, outputs=("output", "mask"), num_visible=lambda p: 1,
    infer_shape=_shape, forward=_forward, random="device", kernel=triton_dropout,
    gradient=lambda g, p, ins, outs, og: [g.op("elemwise_mul", og[0], outs[1])],
    cases=(Case(((4, 5),)),
           Case(((2, 3, 4),), {"p": 0.3, "axes": (1,)}),
           Case(((3, 4),), {"p": 0.7, "mode": "always"}, train=False, grad=False),
           Case(((3, 4),), {"p": 0.25}, train=False, grad=False)),
    doc="""Dropout: in training, zero each element with probability ``p`` and scale the rest by
    ``1 / (1 - p)``; ``axes`` shares one draw along the listed axes; ``mode='always'``
    drops in inference too. Otherwise the identity.
    """))
