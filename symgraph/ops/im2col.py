"""``im2col`` and ``col2im``: sliding blocks of an image as columns, and back.

``im2col`` turns ``data`` of shape ``(N, C, *spatial)`` (1 to 3 spatial axes) into columns
``(N, C * prod(kernel), L)``, ``L`` the number of block positions (the spatial size a
convolution with the same ``kernel``/``stride``/``dilate``/``pad`` would output);
``col2im`` sums such columns back into an image of ``output_size`` (overlapping blocks
add up). Each is the other's gradient. Both run the Triton kernels of ``kernels/im2col.py``.

>>> import symgraph as mx
>>> x = mx.nd.arange(16).reshape((1, 1, 4, 4))
>>> col = mx.nd.im2col(x, kernel=(2, 2), stride=(2, 2))
>>> col.shape
(1, 4, 4)
>>> col[0, :, 0].asnumpy()
array([0., 1., 4., 5.], dtype=float32)
>>> mx.nd.col2im(col, output_size=(4, 4), kernel=(2, 2), stride=(2, 2)).shape
(1, 1, 4, 4)
>>> mx.nd.im2col(x, kernel=(5, 5))  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
ShapeError: im2col: kernel size exceed input: the dilated kernel (5, 5) is larger ...
"""
from __future__ import annotations

import math

from ..attrs import Param
from ..base import AttrError, ShapeError
from .base import Case, OpDef, merge_shape, register

_GEOMETRY = (
    Param("kernel", "shape", doc="Sliding kernel size: (w,), (h, w) or (d, h, w)."),
    Param("stride", "shape", (), doc="Step between blocks per axis (default 1)."),
    Param("dilate", "shape", (), doc="Spacing of kernel taps per axis (default 1)."),
    Param("pad", "shape", (), doc="Zero padding on both sides per axis (default 0)."))


def geometry(p) -> tuple[tuple, tuple, tuple, tuple]:
    """kernel, stride, dilate, pad with MXNet's defaults filled in."""
    k = tuple(p.kernel)
    return (k, tuple(p.stride) or (1,) * len(k), tuple(p.dilate) or (1,) * len(k),
            tuple(p.pad) or (0,) * len(k))


def _check(name: str):
    def check(p) -> None:
        k, s, d, pad = geometry(p)
        if not 1 <= len(k) <= 3:
            raise AttrError(f"{name}: {len(k)}D convolution not supported (kernel {k})")
        for what, v in (("Stride", s), ("Dilate", d), ("Padding", pad)):
            if len(v) != len(k):
                raise AttrError(f"{name}: {what} must have the same number of dimensions "
                                f"with kernel_size, but kernel_size is set to {k} while "
                                f"{what.lower()} is {v}")
        if min(k + s + d) <= 0:
            raise AttrError(f"{name}: kernel {k}, stride {s} and dilate {d} must be positive")
        if name == "col2im" and len(p.output_size) != len(k):
            raise AttrError(f"col2im: Output size must have the same number of dimensions with "
                            f"kernel_size, but kernel_size is set to {k} while output size "
                            f"is {tuple(p.output_size)}")
    return check


def blocks(name: str, p, spatial: tuple) -> tuple[int, ...]:
    """The number of block positions per spatial axis (MXNet's check and wording)."""
    k, s, d, pad = geometry(p)
    if len(spatial) != len(k):
        raise ShapeError(f"{name}: the kernel {k} needs {len(k)} spatial axes, the image has "
                         f"{len(spatial)} (spatial shape {spatial})")
    span = tuple(di * (ki - 1) + 1 for ki, di in zip(k, d))
    padded = tuple(n + 2 * q for n, q in zip(spatial, pad))
    if any(sp > n for sp, n in zip(span, padded)):
        raise ShapeError(f"{name}: kernel size exceed input: the dilated kernel {span} is "
                         f"larger than the padded image {padded}")
    return tuple((n + 2 * q - sp) // st + 1 for n, q, sp, st in zip(spatial, pad, span, s))


def _im2col_shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    if len(data) < 3:
        raise ShapeError(f"im2col: data must be (N, C, *spatial), got shape {tuple(data)}")
    cols = math.prod(blocks("im2col", p, tuple(data[2:])))
    return shapes, [(data[0], data[1] * math.prod(p.kernel), cols)]


def _col2im_shape(p, shapes):
    col = shapes[0]
    size = tuple(p.output_size)
    cols = math.prod(blocks("col2im", p, size))
    k = math.prod(p.kernel)
    if col:
        if len(col) != 3:
            raise ShapeError(f"col2im: data must be (N, C * prod(kernel), L), got shape "
                             f"{tuple(col)}")
        if col[2] and col[2] != cols:
            raise ShapeError(f"col2im: data has {col[2]} block positions, output_size {size} "
                             f"with these kernel/stride/dilate/pad gives {cols} (data shape "
                             f"{tuple(col)})")
        if col[1] % k:
            raise ShapeError(f"col2im: data's axis 1 ({col[1]}) is not a multiple of "
                             f"prod(kernel) = {k} (data shape {tuple(col)})")
    col = merge_shape(col, (0, 0, cols), "input 'data'")
    if not col[0] or not col[1]:
        return None
    return [col], [(col[0], col[1] // k) + size]


def _im2col_forward(p, ins, aux, rt):
    from ..kernels.im2col import im2col_ref
    return (im2col_ref(ins[0], *geometry(p)),)


def triton_im2col(p, ins, aux, rt):
    """im2col as one Triton gather."""
    from ..kernels.im2col import im2col
    return (im2col(ins[0], *geometry(p)),)


def _col2im_forward(p, ins, aux, rt):
    from ..kernels.im2col import col2im_ref
    return (col2im_ref(ins[0], tuple(p.output_size), *geometry(p)),)


def triton_col2im(p, ins, aux, rt):
    """col2im as one Triton gather-sum (no atomics)."""
    from ..kernels.im2col import col2im
    return (col2im(ins[0], tuple(p.output_size), *geometry(p)),)


def _attrs(p) -> dict:
    return {"kernel": p.kernel, "stride": p.stride, "dilate": p.dilate, "pad": p.pad}


register(OpDef(
    name="im2col", params=_GEOMETRY, check=_check("im2col"), infer_shape=_im2col_shape,
    forward=_im2col_forward, kernel=triton_im2col,
    gradient=lambda g, p, ins, outs, og: [g.op("_backward_im2col", og[0], ins[0], **_attrs(p))],
    cases=(Case(((2, 3, 5, 6),), {"kernel": (3, 2), "stride": (2, 1), "dilate": (1, 2),
                                  "pad": (1, 0)}),
           Case(((1, 2, 7),), {"kernel": (3,), "pad": (1,)}),
           Case(((1, 1, 3, 4, 4),), {"kernel": (2, 2, 3), "stride": (1, 2, 1)})),
    doc="""Columns ``(N, C * prod(kernel), L)`` of the sliding blocks of ``data``
    ``(N, C, *spatial)``: ``kernel``, ``stride``, ``dilate`` and ``pad`` as in
    ``Convolution``. Its gradient is ``col2im``."""))


def _backward_im2col_shape(p, shapes):
    ograd, data = shapes
    if not data:
        return None
    _, (col,) = _im2col_shape(p, [data])
    return [merge_shape(ograd, col, "input 'ograd'"), data], [data]


def _backward_im2col(p, ins, aux, rt, fn=None):
    from ..kernels import im2col as k
    return ((fn or k.col2im_ref)(ins[0], tuple(ins[1].shape[2:]), *geometry(p)),)


def triton_backward_im2col(p, ins, aux, rt):
    """The im2col gradient: col2im into data's shape (Triton)."""
    from ..kernels.im2col import col2im
    return _backward_im2col(p, ins, aux, rt, col2im)


register(OpDef(
    name="_backward_im2col", hidden=True, params=_GEOMETRY, inputs=("ograd", "data"),
    check=_check("im2col"), infer_shape=_backward_im2col_shape, forward=_backward_im2col,
    kernel=triton_backward_im2col,
    gradient=lambda g, p, ins, outs, og: [g.op("im2col", og[0], **_attrs(p)), None],
    cases=(Case(((1, 4, 8), (1, 1, 4, 5)), {"kernel": (2, 2), "dilate": (2, 1)},
                no_grad_inputs=(1,)),),
    doc="Gradient of ``im2col``: ``col2im`` of the output gradient into data's shape."))

register(OpDef(
    name="col2im",
    params=(Param("output_size", "shape", doc="The spatial shape of the output image."),
            *_GEOMETRY),
    check=_check("col2im"), infer_shape=_col2im_shape, forward=_col2im_forward,
    kernel=triton_col2im,
    gradient=lambda g, p, ins, outs, og: [g.op("im2col", og[0], **_attrs(p))],
    cases=(Case(((2, 18, 12),), {"output_size": (5, 6), "kernel": (3, 2), "stride": (2, 1),
                                "dilate": (1, 2), "pad": (1, 0)}),
           Case(((1, 6, 7),), {"output_size": (7,), "kernel": (3,), "pad": (1,)})),
    doc="""The image ``(N, C, *output_size)`` whose elements sum the entries of the columns
    ``data`` (``(N, C * prod(kernel), L)``) that ``im2col`` would have read from them:
    overlapping blocks add up. Its gradient is ``im2col``."""))
