"""``cumsum`` (MXNet's ``_np_cumsum``): running sums along an axis, as numpy's.

With ``axis=None`` the input is flattened first (the output is 1-D). ``dtype`` sets the
output dtype (None: the input's). The gradient is the running sum taken from the other
end, ``dx = flip(cumsum(flip(dy)))``, computed by the hidden ``_backward_cumsum`` with the
same kernel (``symgraph.kernels.reduce.cumsum`` with ``reverse``) and reshaped to the input.

>>> import symgraph as mx
>>> x = mx.nd.array([[1, 2], [3, 4]])
>>> mx.nd.cumsum(x).asnumpy(), mx.nd.cumsum(x, axis=1).asnumpy()
(array([ 1.,  3.,  6., 10.], dtype=float32), array([[1., 3.],
       [3., 7.]], dtype=float32))
>>> mx.sym.cumsum(mx.sym.Variable('a'), axis=2).infer_shape(a=(2, 3))
Traceback (most recent call last):
...
symgraph.base.ShapeError: ... axis 2 is out of range for input a of shape (2, 3) ...
"""
from __future__ import annotations

import math

import torch

from ..attrs import Param
from ..base import ShapeError, to_torch_dtype
from .base import Case, OpDef, register

_PARAMS = (
    Param("axis", "int_or_none", None, doc="The axis to sum along (None: the flattened input)."),
    Param("dtype", "dtype_or_none", None,
          choices=(None, "float16", "float32", "float64", "int32", "int64", "int8"),
          doc="Output dtype (None: the input's)."),
)


def _axis(p, shape: tuple) -> int | None:
    if p.axis is None:
        return None
    if not -len(shape) <= p.axis < len(shape) or not shape:
        raise ShapeError(f"cumsum: axis {p.axis} is out of range for input a of shape "
                         f"{tuple(shape)}")
    return p.axis % len(shape)


def _shape(p, shapes):
    x = shapes[0]
    if not x:
        return None
    if _axis(p, x) is None:
        return shapes, [(math.prod(x),) if all(x) else (0,)]
    return shapes, [x]


def _type(p, types):
    if types[0] is None:
        return None
    return list(types), [p.dtype or types[0]]


def _flat(p, x: torch.Tensor) -> tuple[torch.Tensor, int]:
    """The tensor to scan and its axis (axis None: flattened, axis 0)."""
    ax = _axis(p, tuple(x.shape))
    return (x.reshape(-1), 0) if ax is None else (x, ax)


def _forward(p, ins, aux, rt):
    x, ax = _flat(p, ins[0])
    out = to_torch_dtype(p.dtype) if p.dtype else x.dtype
    return (torch.cumsum(x.to(out), ax, dtype=out),)  # torch would widen int32 to int64


def triton_cumsum(p, ins, aux, rt):
    """cumsum as one row-scan kernel (``symgraph.kernels.reduce.cumsum``)."""
    from ..kernels.reduce import cumsum
    x, ax = _flat(p, ins[0])
    return (cumsum(x, ax, to_torch_dtype(p.dtype) if p.dtype else x.dtype),)


def _backward(p, ins, aux, rt):
    dy, x = ins
    ax = _axis(p, tuple(x.shape))
    dy = dy if ax is not None else dy.reshape(-1)
    ax = 0 if ax is None else ax
    dx = torch.flip(torch.cumsum(torch.flip(dy, (ax,)), ax, dtype=dy.dtype), (ax,))
    return (dx.reshape(x.shape).to(x.dtype),)


def triton_backward_cumsum(p, ins, aux, rt):
    """The reversed scan of ``_backward_cumsum`` with the cumsum kernel."""
    from ..kernels.reduce import cumsum
    dy, x = ins
    ax = _axis(p, tuple(x.shape))
    flat = ax is None
    dx = cumsum(dy.reshape(-1) if flat else dy, 0 if flat else ax, x.dtype, reverse=True)
    return (dx.reshape(x.shape),)


register(OpDef(
    name="cumsum", aliases=("_np_cumsum",), inputs=("a",), params=_PARAMS,
    infer_shape=_shape, infer_type=_type, forward=_forward, kernel=triton_cumsum,
    gradient=lambda g, p, ins, outs, og: [g.op("_backward_cumsum", og[0], ins[0], axis=p.axis,
                                                      dtype=p.dtype)],
    cases=(Case(((3, 5),), {"axis": 1}), Case(((2, 3, 4),)),
           Case(((2, 3, 4),), {"axis": -3, "dtype": "float64"})),
    doc="""Running sums along ``axis`` (the flattened input when None), in ``dtype``.

    The gradient is the output gradient's running sum from the other end.
    """))


def _backward_shape(p, shapes):
    dy, x = shapes
    if not x:
        return None
    return [_shape(p, [x])[1][0], x], [x]


register(OpDef(
    name="_backward_cumsum", inputs=("ograd", "a"), params=_PARAMS, hidden=True,
    infer_shape=_backward_shape, forward=_backward, kernel=triton_backward_cumsum,
    infer_type=lambda p, t: (list(t), [t[1]]) if t[1] is not None else None,
    gradient=lambda g, p, ins, outs, og: [g.op("cumsum", og[0], axis=p.axis, dtype=p.dtype), None],
    cases=(Case(((3, 5), (3, 5)), {"axis": 1}, no_grad_inputs=(1,)),
           Case(((24,), (2, 3, 4)), no_grad_inputs=(1,))),
    doc="The gradient of ``cumsum``: the running sum of ``ograd`` from the end of the axis, "
        "in the input's shape and dtype."))
