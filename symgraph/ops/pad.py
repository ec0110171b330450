"""Pad (``pad``): pad the spatial axes of a 4-D or 5-D array (a composite of slices).

``pad_width`` is ``(before_0, after_0, ..., before_N, after_N)``, zero on the first two axes
as MXNet requires. Each padded axis concatenates, around the data:

- ``constant``: blocks of ``constant_value`` (zeros of an edge slice plus the value);
- ``edge``: the edge slice broadcast along the axis;
- ``reflect``: the slices next to the edge, reversed (widths below the axis length).

>>> import symgraph as mx
>>> x = mx.nd.array([[[[1, 2, 3]]]])
>>> mx.nd.pad(x, mode='reflect', pad_width=(0, 0, 0, 0, 0, 0, 2, 1)).asnumpy()
array([[[[3., 2., 1., 2., 3., 2.]]]], dtype=float32)
"""
from __future__ import annotations

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, register


def _block(b, p, x, axis: int, width: int, before: bool):
    """The ``width`` entries padded before or after ``x`` along ``axis``."""
    if p.mode == "reflect":
        piece = b.op("slice_axis", x, axis=axis, begin=1 if before else -width - 1,
                     end=width + 1 if before else -1, name=f"reflect{axis}")
        return b.op("reverse", piece, axis=axis)
    edge = b.op("slice_axis", x, axis=axis, begin=0 if before else -1,
                end=1 if before else None, name=f"edge{axis}")
    if p.mode == "constant":
        edge = b.op("_plus_scalar", b.op("zeros_like", edge), scalar=p.constant_value,
                    name=f"value{axis}")
    return b.op("broadcast_axis", edge, axis=axis, size=width)


def _decompose(b, p, ins):
    x = ins[0]
    for axis in range(2, len(p.pad_width) // 2):
        before, after = p.pad_width[2 * axis], p.pad_width[2 * axis + 1]
        if not before and not after:
            continue
        parts = ([_block(b, p, x, axis, before, True)] if before else []) + [x] + \
            ([_block(b, p, x, axis, after, False)] if after else [])
        x = b.op("Concat", *parts, dim=axis, num_args=len(parts), name=f"concat{axis}")
    return [x if x is not ins[0] else b.op("_copy", x)]


def _shape(p, shapes):
    x = shapes[0]
    if not x:
        return None
    if len(x) not in (4, 5):
        raise ShapeError(f"Pad: current implementation only supports 4-D or 5-D input, got {x}")
    if len(p.pad_width) != 2 * len(x):
        raise ShapeError(f"Pad: input shape vs padding spec mismatch: input {x}, pad_width "
                         f"{p.pad_width}")
    if any(p.pad_width[:4]):
        raise ShapeError("Pad: current implementation expects padding on the first two axes "
                         f"to be zero, got pad_width {p.pad_width}")
    out = list(x)
    for axis in range(2, len(x)):
        before, after = p.pad_width[2 * axis], p.pad_width[2 * axis + 1]
        if p.mode == "reflect" and x[axis] and max(before, after) >= x[axis]:
            raise ShapeError("Pad: current implementation of reflection padding only supports "
                             f"padding sizes smaller than the input size: axis {axis} of {x} "
                             f"with pad_width {p.pad_width}")
        out[axis] = x[axis] + before + after if x[axis] else 0
    return shapes, [tuple(out)]


register(OpDef(
    name="Pad", aliases=("pad",), decompose=_decompose, infer_shape=_shape,
    params=(Param("mode", "str", choices=("constant", "edge", "reflect"),
                  doc="Padding type: constant, edge or reflect."),
            Param("pad_width", "shape", doc="(before, after) widths of every axis, flattened."),
            Param("constant_value", "float", 0.0, doc="The value of constant padding.")),
    cases=(Case(((2, 2, 3, 4),), {"mode": "constant", "pad_width": (0, 0, 0, 0, 1, 2, 0, 1),
                                  "constant_value": 1.5}),
           Case(((1, 2, 3, 4),), {"mode": "edge", "pad_width": (0, 0, 0, 0, 2, 1, 1, 0)}),
           Case(((1, 2, 3, 4),), {"mode": "reflect", "pad_width": (0, 0, 0, 0, 2, 1, 1, 3)}),
           Case(((1, 1, 2, 3, 3),), {"mode": "reflect",
                                     "pad_width": (0, 0, 0, 0, 1, 0, 2, 2, 0, 1)})),
    doc="Pad the spatial axes of ``data`` (constant, edge or reflect)."))
