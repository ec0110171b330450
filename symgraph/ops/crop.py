"""Crop: crop the spatial axes (2, 3) of an (N, C, H, W) array to ``h_w`` (``num_args=1``) or
to the height and width of a second input ``crop_like`` (``num_args=2``), from ``offset`` or
centred (``center_crop``: offset ``(H - h) // 2, (W - w) // 2``). A composite:

- at an offset: ``slice_axis`` on each axis (then ``slice_like`` for ``crop_like``);
- centred: the offset depends on the input shape, which a decomposition must not read, so it
  is computed in the graph (``shape_array``) and the crop is a ``take`` of
  ``offset + arange(h)`` on each axis.

``crop_like`` gets a zero gradient, as in MXNet. An offset crop running past the input
raises (MXNet 1.9.1 reads out of bounds there).

>>> import symgraph as mx
>>> x = mx.nd.arange(35).reshape((1, 1, 5, 7))
>>> mx.nd.Crop(x, num_args=1, h_w=(2, 3), center_crop=True).asnumpy()[0, 0]
array([[ 9., 10., 11.],
       [16., 17., 18.]], dtype=float32)
>>> mx.nd.Crop(x, mx.nd.zeros((1, 1, 2, 2)), offset=(3, 5)).asnumpy()[0, 0]
array([[26., 27.],
       [33., 34.]], dtype=float32)
"""
from __future__ import annotations

from ..attrs import Param
from ..base import AttrError, ShapeError
from .base import Case, OpDef, register


def _size(b, x, axis: int, tag: str):
    """``x.shape[axis]`` as a (1,) float32 array, in the graph."""
    dims = b.op("shape_array", x, name=f"shape_{tag}")
    dim = b.op("slice_axis", dims, axis=0, begin=axis, end=axis + 1, name=f"dim_{tag}{axis}")
    return b.op("Cast", dim, dtype="float32", name=f"size_{tag}{axis}")


def _centred_index(b, p, x, like, axis: int):
    """``(H - h) // 2 + arange(h)`` along ``axis`` (float32 indices for ``take``)."""
    if like is None:
        n = p.h_w[axis - 2]
        span = b.op("_minus_scalar", _size(b, x, axis, "data"), scalar=n, name=f"span{axis}")
        steps = b.op("_arange", start=0, stop=n, dtype="float32", name=f"steps{axis}")
    else:
        span = b.op("_minus", _size(b, x, axis, "data"), _size(b, like, axis, "like"),
                    name=f"span{axis}")
        steps = b.op("Cast", b.op("_contrib_arange_like", like, axis=axis,
                                  name=f"arange{axis}"), dtype="float32", name=f"steps{axis}")
    start = b.op("floor", b.op("_div_scalar", span, scalar=2, name=f"half{axis}"),
                 name=f"start{axis}")
    return b.op("broadcast_add", steps, start, name=f"index{axis}")


def _decompose(b, p, ins):
    x, like = ins[0], (ins[1] if p.num_args == 2 else None)
    if p.center_crop:
        out = x
        for axis in (2, 3):
            out = b.op("take", out, _centred_index(b, p, x, like, axis), axis=axis,
                       name=f"crop{axis}")
        return [out]
    for axis, offset in zip((2, 3), p.offset):
        end = None if like is not None else offset + p.h_w[axis - 2]
        x = b.op("slice_axis", x, axis=axis, begin=offset, end=end, name=f"crop{axis}")
    return [x if like is None else b.op("slice_like", x, like, axes=(2, 3))]


def _shape(p, shapes):
    x = shapes[0]
    like = shapes[1] if p.num_args == 2 else None
    if not x or (like is not None and not like):
        return None
    if len(x) != 4:
        raise ShapeError(f"Crop: input data should be 4D in batch-num_filter-y-x, got {x}")
    if like is not None and len(like) != 4:
        raise ShapeError(f"Crop: crop_like should be 4D in batch-num_filter-y-x, got {like}")
    hw = tuple(like[2:]) if like is not None else tuple(p.h_w)
    for i, what in enumerate(("height", "width")):
        if hw[i] < 1:
            raise ShapeError(f"Crop: the crop {what} (h_w[{i}]={hw[i]}) should be larger than 1")
        if x[2 + i] and hw[i] > x[2 + i]:
            raise ShapeError(f"Crop: the crop {what} ({hw[i]}) should be less than the input "
                             f"data's {what} ({x[2 + i]}) of {x}")
        if not p.center_crop and x[2 + i] and p.offset[i] + hw[i] > x[2 + i]:
            raise ShapeError(f"Crop: offset {p.offset} plus crop size {hw} runs past the input "
                             f"{x}")
    return shapes, [(x[0], x[1]) + hw]


def _check(p) -> None:
    if len(p.offset) != 2 or len(p.h_w) != 2 or min(p.offset) < 0:
        raise AttrError(f"Crop: offset {p.offset} and h_w {p.h_w} must be pairs of "
                         "non-negative ints")


register(OpDef(
    name="Crop", key_var_num_args="num_args", decompose=_decompose, infer_shape=_shape,
    check=_check, inputs=lambda p: ["data", "crop_like"][:p.num_args],
    params=(Param("num_args", "int", lower=1, upper=2,
                  doc="1: crop to ``h_w``; 2: crop to the height and width of the second "
                      "input (``crop_like``)."),
            Param("offset", "shape", (0, 0), doc="Crop offset coordinate: (y, x)."),
            Param("h_w", "shape", (0, 0), doc="Crop height and width: (h, w)."),
            Param("center_crop", "bool", False,
                  doc="Crop at the centre (else at ``offset``).")),
    cases=(Case(((2, 3, 5, 6),), {"num_args": 1, "h_w": (2, 3), "offset": (1, 2)}),
           Case(((2, 3, 5, 6), (1, 1, 3, 3)), {"num_args": 2, "offset": (2, 1)},
                no_grad_inputs=(1,)),
           Case(((1, 2, 5, 7),), {"num_args": 1, "h_w": (2, 4), "center_crop": True}),
           Case(((1, 2, 6, 5), (2, 1, 3, 2)), {"num_args": 2, "center_crop": True},
                no_grad_inputs=(1,))),
    doc="Crop the spatial axes of ``data`` to ``h_w`` or to ``crop_like``'s height and "
        "width, at ``offset`` or centred."))
