"""argmax_channel: indices of the maximum along axis 1 (a composite of ``argmax``).

MXNet 1.9.1 fixes ``axis=1, keepdims=False``; the indices come in the input's dtype.

>>> import symgraph as mx
>>> mx.nd.argmax_channel(mx.nd.array([[0, 1, 2], [3, 5, 4]])).asnumpy()
array([2., 1.], dtype=float32)
"""
from __future__ import annotations

from .base import Case, OpDef, register


def _decompose(b, p, ins):
    return [b.op("argmax", ins[0], axis=1, keepdims=False)]


register(OpDef(
    name="argmax_channel", decompose=_decompose,
    cases=(Case(((3, 4),), grad=False), Case(((2, 3, 4),), grad=False)),
    doc="Indices of the maximum along axis 1 (the channel axis), in the input's dtype."))
