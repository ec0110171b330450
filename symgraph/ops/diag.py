"""diag: a diagonal of an array, or a matrix with the given diagonal.

A 1-D input of length n becomes the ``(n + |k|, n + |k|)`` matrix with it on the ``k``-th
diagonal; an N-D input gives the ``k``-th diagonal of its ``(axis1, axis2)`` planes, moved
to the last axis (``numpy.diagonal``). Both directions are strided copies (the diagonal is
a view with stride ``stride(axis1) + stride(axis2)``), so the Triton path is the copy
family's strided-copy kernel; each direction's gradient is the other one.

>>> import symgraph as mx
>>> mx.nd.diag(mx.nd.array([[1, 2, 3], [4, 5, 6]]), k=1).asnumpy()
array([2., 6.], dtype=float32)
>>> mx.nd.diag(mx.nd.array([1, 2]), k=-1).asnumpy()
array([[0., 0., 0.],
       [1., 0., 0.],
       [0., 2., 0.]], dtype=float32)
>>> mx.sym.diag(mx.sym.Variable('a'), k=5).infer_shape(a=(3, 4))
... # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
ShapeError: diag: Diagonal does not exist: k=5 for data of shape (3, 4)
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, register
from .indexing import value_type


def _axes(p, ndim: int) -> tuple[int, int]:
    for name, axis in (("axis1", p.axis1), ("axis2", p.axis2)):
        if not -ndim <= axis < ndim:
            raise ShapeError(f"diag: {name}={axis} is out of range for an input of {ndim} "
                             "dimensions")
    a1, a2 = p.axis1 % ndim, p.axis2 % ndim
    if a1 == a2:
        raise ShapeError(f"diag: axis1 and axis2 cannot refer to the same axis {a1}")
    return a1, a2


def _out_shape(p, x: tuple) -> tuple:
    if len(x) == 0:
        raise ShapeError("diag: the input must have at least one dimension, got a scalar")
    if len(x) == 1:
        n = x[0] + abs(p.k) if x[0] else 0
        return (n, n)
    a1, a2 = _axes(p, len(x))
    h, w = x[a1], x[a2]
    rest = tuple(d for i, d in enumerate(x) if i not in (a1, a2))
    if not h or not w:
        return rest + (0,)
    size = min(h, w - p.k) if p.k >= 0 else min(h + p.k, w)
    if size < 0:
        raise ShapeError(f"diag: Diagonal does not exist: k={p.k} for data of shape {x}")
    return rest + (size,)


def _shape(p, shapes):
    x = shapes[0]
    if not x:
        return None
    return shapes, [_out_shape(p, tuple(x))]


def _diagonal(p, t: torch.Tensor, vector: bool) -> torch.Tensor:
    """The diagonal view of ``t``: of its (axis1, axis2) planes, or (``vector``: the data
    is 1-D) of the matrix ``t``."""
    a1, a2 = (0, 1) if vector else _axes(p, t.dim())
    return torch.diagonal(t, offset=p.k, dim1=a1, dim2=a2)


def _place(p, g: torch.Tensor, shape: tuple, vector: bool) -> torch.Tensor:
    out = torch.zeros(shape, dtype=g.dtype, device=g.device)
    _diagonal(p, out, vector).copy_(g)
    return out


def _forward(p, ins, aux, rt):
    x = ins[0]
    if x.dim() == 1:
        return (_place(p, x, _out_shape(p, tuple(x.shape)), True),)
    return (_diagonal(p, x, False).contiguous(),)


def _backward_forward(p, ins, aux, rt):
    g, data = ins
    if data.dim() == 1:
        return (_diagonal(p, g, True).contiguous(),)
    return (_place(p, g, tuple(data.shape), False),)


def _strided_place(p, g: torch.Tensor, shape: tuple, vector: bool) -> torch.Tensor:
    from ..kernels.copy import fill, strided_copy
    out = fill(torch.empty(shape, dtype=g.dtype, device=g.device), 0.0)
    view = _diagonal(p, out, vector)
    g = g.contiguous()
    strided_copy(g, g.shape, g.stride(), 0, out, (view.stride(), view.storage_offset()))
    return out


def triton_diag(p, ins, aux, rt):
    """diag as one strided copy (Triton): the diagonal view read, or written into zeros."""
    from ..kernels.copy import copy_view
    x = ins[0]
    if x.dim() == 1:
        return (_strided_place(p, x, _out_shape(p, tuple(x.shape)), True),)
    return (copy_view(_diagonal(p, x, False)),)


def triton_backward_diag(p, ins, aux, rt):
    """The diag gradient: the other direction's strided copy (Triton)."""
    from ..kernels.copy import copy_view
    g, data = ins
    if data.dim() == 1:
        return (copy_view(_diagonal(p, g, True)),)
    return (_strided_place(p, g, tuple(data.shape), False),)


_PARAMS = (Param("k", "int", 0, doc="The diagonal: 0 the main one, > 0 above, < 0 below."),
           Param("axis1", "int", 0, doc="First axis of the 2-D planes (N-D input)."),
           Param("axis2", "int", 1, doc="Second axis of the 2-D planes (N-D input)."))


def _backward_shape(p, shapes):
    g, data = shapes
    if not data:
        return None
    return [_out_shape(p, tuple(data)), data], [data]


register(OpDef(
    name="diag", params=_PARAMS, infer_shape=_shape, forward=_forward, kernel=triton_diag,
    gradient=lambda g, p, ins, outs, og: [
        g.op("_backward_diag", og[0], ins[0], k=p.k, axis1=p.axis1, axis2=p.axis2)],
    cases=(Case(((4,),), {"k": 1}), Case(((3,),), {"k": -2}), Case(((3, 5),), {"k": 1}),
           Case(((4, 3),), {"k": -1}), Case(((2, 3, 4),), {"k": 1, "axis1": 2, "axis2": 0}),
           Case(((3, 2, 4),), {"axis1": -1, "axis2": 1})),
    doc="""The ``k``-th diagonal of ``data``'s ``(axis1, axis2)`` planes, moved to the last
    axis; a 1-D ``data`` becomes a square matrix with it on the ``k``-th diagonal."""))

register(OpDef(
    name="_backward_diag", inputs=("ograd", "data"), params=_PARAMS, hidden=True,
    infer_shape=_backward_shape, infer_type=value_type((0, 1)), forward=_backward_forward,
    kernel=triton_backward_diag,
    gradient=lambda g, p, ins, outs, og: [
        g.op("diag", og[0], k=p.k, axis1=p.axis1, axis2=p.axis2), None],
    cases=(Case(((5, 5), (4,)), {"k": 1}, no_grad_inputs=(1,)),
           Case(((3, 1), (2, 3, 4)), {"k": 1, "axis1": 2, "axis2": 0}, no_grad_inputs=(1,))),
    doc="Gradient of ``diag``: the diagonal taken back out, or put into zeros."))
