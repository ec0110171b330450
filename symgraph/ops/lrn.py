"""LRN: local response normalisation across channels (a composite over sum pooling).

For ``x`` of shape (N, C, H, W) and an odd window ``nsize``::

    s[c] = sum of x[c']**2 for |c' - c| <= nsize // 2
    out  = x / (knorm + alpha / nsize * s) ** beta

The window sum is a sum ``Pooling`` over the channel axis of ``x**2`` viewed as
(N, 1, C, H*W).

>>> import symgraph as mx
>>> mx.sym.LRN(mx.sym.Variable('x'), nsize=3).infer_shape(x=(1, 4, 2, 2))[1]
[(1, 4, 2, 2)]
"""
from __future__ import annotations

from ..attrs import Param
from ..base import AttrError, ShapeError
from .base import Case, OpDef, register


def _check(p) -> None:
    if p.nsize % 2 == 0:
        # MXNet accepts an even window with a window placement of its own; not reproduced
        raise AttrError(f"LRN: nsize={p.nsize} is even; symgraph supports odd windows only")


def _decompose(b, p, ins):
    x = ins[0]
    sq = b.op("expand_dims", b.op("square", x), axis=1, name="sq")
    sq = b.op("Reshape", sq, shape=(0, 0, 0, -1), name="sq4")
    window = b.op("Pooling", sq, kernel=(p.nsize, 1), pad=(p.nsize // 2, 0), stride=(1, 1),
                  pool_type="sum", name="window")
    scale = b.op("_mul_scalar", b.op("reshape_like", window, x), scalar=p.alpha / p.nsize)
    den = b.op("_power_scalar", b.op("_plus_scalar", scale, scalar=p.knorm), scalar=p.beta)
    return [b.op("elemwise_div", x, den)]


def _shape(p, shapes):
    x = shapes[0]
    if not x:
        return None
    if len(x) != 4:
        raise ShapeError(f"LRN: input data should be 4D in batch-num_filter-y-x, got {x}")
    return shapes, [x]


register(OpDef(
    name="LRN", decompose=_decompose, check=_check, infer_shape=_shape,
    params=(Param("alpha", "float", 1e-4, doc="The variance scaling parameter alpha."),
            Param("beta", "float", 0.75, doc="The power parameter beta."),
            Param("knorm", "float", 2.0, doc="The parameter k."),
            Param("nsize", "int", lower=0, doc="Normalisation window width in elements.")),
    cases=(Case(((2, 5, 3, 2),), {"nsize": 3, "alpha": 0.5}),
           Case(((1, 3, 2, 3),), {"nsize": 5, "alpha": 0.2, "beta": 0.5, "knorm": 1.5})),
    doc="Local response normalisation across channels."))
