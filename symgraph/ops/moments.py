"""moments: mean and (biased) variance over ``axes``, a composite of ``mean``.

    mean = x.mean(axes)    var = ((x - x.mean(axes, keepdims)) ** 2).mean(axes)

>>> import symgraph as mx
>>> m = mx.sym.moments(mx.sym.Variable('x'), axes=(1,), name='m')
>>> m.list_outputs()
['m_output0', 'm_output1']
>>> m.infer_shape(x=(2, 3, 4))[1]
[(2, 4), (2, 4)]
"""
from __future__ import annotations

from ..attrs import Param
from ..base import AttrError
from .base import Case, OpDef, register


def _check(p) -> None:
    if not p.axes:
        raise AttrError("Empty axes is not supported, if you would like to do global moments, "
                        "please pass all axes to axes argument")


def _decompose(b, p, ins):
    x = ins[0]
    centred = b.op("broadcast_sub", x, b.op("mean", x, axis=p.axes, keepdims=True,
                                                name="mean_keep"))
    var = b.op("mean", b.op("square", centred), axis=p.axes, keepdims=p.keepdims, name="var")
    return [b.op("mean", x, axis=p.axes, keepdims=p.keepdims), var]


register(OpDef(
    name="moments", outputs=("output0", "output1"), decompose=_decompose, check=_check,
    params=(Param("axes", "shape_or_none", None,
                  doc="Axes along which to compute mean and variance."),
            Param("keepdims", "bool", False,
                  doc="Produce moments with the same dimensionality as the input.")),
    cases=(Case(((2, 3, 4),), {"axes": (1,)}),
           Case(((3, 5),), {"axes": (0, 1), "keepdims": True}),
           Case(((2, 3, 4),), {"axes": (0, -1)})),
    doc="Mean and variance of ``data`` over ``axes``."))
