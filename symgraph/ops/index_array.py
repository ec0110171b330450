"""``_contrib_index_array`` (``contrib.index_array``): every position's coordinates.

For ``data`` of shape ``(d_1, ..., d_n)`` the int64 output has shape ``(d_1, ..., d_n, n)``
with ``out[i_1, ..., i_n, :] = (i_1, ..., i_n)``, or ``(d_1, ..., d_n, m)`` holding the
coordinates on the ``m`` given ``axes`` (negative axes count from the end). Only the shape
of ``data`` is read; its gradient is zero. One Triton kernel writes the output.

>>> import symgraph as mx
>>> mx.nd.contrib.index_array(mx.nd.zeros((2, 2))).asnumpy().tolist()
[[[0, 0], [0, 1]], [[1, 0], [1, 1]]]
>>> mx.nd.contrib.index_array(mx.nd.zeros((2, 3)), axes=(1,)).shape
(2, 3, 1)
>>> mx.nd.contrib.index_array(mx.nd.zeros((2, 3)), axes=(2,))
... # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
ShapeError: _contrib_index_array: axis 2 is out of range for an input of shape (2, 3)
"""
from __future__ import annotations

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, register


def _axes(p, shape: tuple) -> tuple[int, ...]:
    """The selected axes made non-negative (all axes when ``axes`` is None)."""
    ndim = len(shape)
    if p.axes is None:
        return tuple(range(ndim))
    for a in p.axes:
        if not -ndim <= a < ndim:
            raise ShapeError(f"_contrib_index_array: axis {a} is out of range for an input "
                             f"of shape {tuple(shape)}")
    return tuple(a % ndim for a in p.axes)


def _shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    return shapes, [tuple(data) + (len(_axes(p, data)),)]


def _forward(p, ins, aux, rt):
    from ..kernels.index import index_array_ref
    shape = tuple(ins[0].shape)
    return (index_array_ref(shape, _axes(p, shape), ins[0].device),)


def triton_index_array(p, ins, aux, rt):
    """index_array as one Triton kernel."""
    from ..kernels.index import index_array
    shape = tuple(ins[0].shape)
    return (index_array(shape, _axes(p, shape), ins[0].device),)


register(OpDef(
    name="_contrib_index_array",
    params=(Param("axes", "shape_or_none", None,
                  doc="The axes whose coordinates to list (None: all)."),),
    infer_shape=_shape, infer_type=lambda p, t: (list(t), ["int64"]), forward=_forward,
    kernel=triton_index_array, gradient=lambda g, p, ins, outs, og: [g.zeros(ins[0])],
    cases=(Case(((3, 4),), grad=False), Case(((2, 3, 5),), {"axes": (2, 0)}, grad=False),
           Case(((7,),), {"axes": (-1,)}, grad=False)),
    doc="""The coordinates of every position of ``data`` (int64, a trailing axis of length
    ``len(axes)``, or ``data.ndim`` when ``axes`` is None); ``data``'s values are not
    read."""))
