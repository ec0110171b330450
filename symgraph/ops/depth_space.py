"""depth_to_space / space_to_depth: move blocks between the channel axis and the spatial axes
of an (N, C, H, W) array (composites of ``Reshape`` and ``transpose``), MXNet 1.9.1's (DCR)
layout::

    depth_to_space: (N, C, H, W) -> (N, b, b, C/b², H, W) -> (N, C/b², H, b, W, b)
                    -> (N, C/b², H*b, W*b)
    space_to_depth: (N, C, H, W) -> (N, C, H/b, b, W/b, b) -> (N, b, b, C, H/b, W/b)
                    -> (N, C*b², H/b, W/b)

>>> import symgraph as mx
>>> x = mx.nd.arange(8).reshape((1, 4, 1, 2))
>>> mx.nd.depth_to_space(x, block_size=2).asnumpy()[0, 0]
array([[0., 2., 1., 3.],
       [4., 6., 5., 7.]], dtype=float32)
>>> mx.nd.space_to_depth(mx.nd.depth_to_space(x, block_size=2), block_size=2).shape
(1, 4, 1, 2)
"""
from __future__ import annotations

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, register

_PARAMS = (Param("block_size", "int", lower=1,
                 doc="Blocks of [block_size, block_size] are moved."),)


def _depth_to_space(b, p, ins):
    k = p.block_size
    x = b.op("Reshape", ins[0], shape=(0, -4, k, -1, -2), name="blocks")
    x = b.op("Reshape", x, shape=(0, 0, -4, k, -1, -2), name="split")
    x = b.op("transpose", x, axes=(0, 3, 4, 1, 5, 2))
    return [b.op("Reshape", x, shape=(0, 0, -3, -3), name="merge")]


def _space_to_depth(b, p, ins):
    k = p.block_size
    x = b.op("Reshape", ins[0], shape=(0, 0, -4, -1, k, -4, -1, k), name="blocks")
    x = b.op("transpose", x, axes=(0, 3, 5, 1, 2, 4))
    x = b.op("Reshape", x, shape=(0, -3, -2), name="merge")
    return [b.op("Reshape", x, shape=(0, -3, -2), name="merge")]


def _check_4d(what: str, x) -> None:
    if len(x) != 4:
        raise ShapeError(f"Operation {what} requires exactly 4D tensor, got shape {x}")


def _to_space_shape(p, shapes):
    x, k = shapes[0], p.block_size
    if not x:
        return None
    _check_4d("Depth To Space", x)
    if x[1] and x[1] % (k * k):
        raise ShapeError("Cannot perform Depth To Space operation on the specified tensor. "
                         f"Dimension:1(depth dimension) of {x} should be a multiple of "
                         f"'block^2' = {k * k}")
    return shapes, [(x[0], x[1] // (k * k), x[2] * k, x[3] * k)]


def _to_depth_shape(p, shapes):
    x, k = shapes[0], p.block_size
    if not x:
        return None
    _check_4d("Space To Depth", x)
    for axis, which in ((2, "1st"), (3, "2nd")):
        if x[axis] % k:
            raise ShapeError("Cannot perform Space To Depth operation on the specified tensor. "
                             f"Dimension:{axis}({which} Space dimension) of {x} should be a "
                             f"multiple of 'block' = {k}")
    return shapes, [(x[0], x[1] * k * k, x[2] // k, x[3] // k)]


register(OpDef(
    name="depth_to_space", decompose=_depth_to_space, infer_shape=_to_space_shape,
    params=_PARAMS,
    cases=(Case(((2, 8, 2, 3),), {"block_size": 2}), Case(((1, 9, 1, 2),), {"block_size": 3})),
    doc="Rearrange blocks of depth (channel) data into spatial blocks of ``block_size``."))

register(OpDef(
    name="space_to_depth", decompose=_space_to_depth, infer_shape=_to_depth_shape,
    params=_PARAMS,
    cases=(Case(((2, 2, 4, 6),), {"block_size": 2}), Case(((1, 1, 3, 6),), {"block_size": 3})),
    doc="Rearrange spatial blocks of ``block_size`` into the depth (channel) axis."))
