"""arange_like (``contrib.arange_like``): ``start + (i // repeat) * step`` over the flat
index ``i`` of ``data`` (its shape), or over ``data.shape[axis]`` given ``axis``.

Only the input's shape is read, so this is a primitive with a generated Triton kernel (the
``_arange`` program) and a zero gradient, as in MXNet.

>>> import symgraph as mx
>>> mx.nd.contrib.arange_like(mx.nd.zeros((2, 3)), start=1, step=2, repeat=2).asnumpy()
array([[1., 1., 3.],
       [3., 5., 5.]], dtype=float32)
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, register


def _out_shape(p, x: tuple) -> tuple:
    if p.axis is None:
        return x
    if not -len(x) <= p.axis < len(x):
        raise ShapeError(f"arange_like: axis {p.axis} is out of range for input shape {x}")
    return (x[p.axis],)


def _shape(p, shapes):
    x = shapes[0]
    if not x:
        return None
    return shapes, [_out_shape(p, x)]


def _forward(p, ins, aux, rt):
    x = ins[0]
    shape = _out_shape(p, tuple(x.shape))
    n = 1
    for d in shape:
        n *= d
    idx = torch.arange(n, device=x.device, dtype=torch.float64)
    vals = p.start + torch.div(idx, p.repeat, rounding_mode="floor") * p.step
    return (vals.to(x.dtype).reshape(shape),)


def _kernel(p, ins, aux, rt):
    from ..kernels.elementwise import Program, run
    x = ins[0]
    expr = f"({float(p.start)!r} + (offs // {p.repeat}) * {float(p.step)!r})"
    return run(Program(0, ((expr, ()),), ("t0",)), [], _out_shape(p, tuple(x.shape)), x.dtype,
               device=x.device)


_kernel.__name__ = "triton_arange_like"

register(OpDef(
    name="_contrib_arange_like", infer_shape=_shape, forward=_forward, kernel=_kernel,
    gradient=lambda g, p, ins, outs, og: [g.zeros(ins[0])],
    params=(Param("start", "float", 0.0, doc="Start of interval."),
            Param("step", "float", 1.0, doc="Spacing between values."),
            Param("repeat", "int", 1, lower=1, doc="How many times each value repeats."),
            Param("ctx", "str", "", doc="Context of the output (the input's)."),
            Param("axis", "int_or_none", None,
                  doc="Arange along this axis of ``data`` (None: over its whole shape).")),
    cases=(Case(((2, 3),), {"start": 1.0, "step": 2.0, "repeat": 2}, grad=False),
           Case(((2, 5, 3),), {"axis": -2, "step": 0.5}, grad=False)),
    doc="Values ``start + (i // repeat) * step`` in the shape of ``data`` (or along "
        "``axis``)."))
