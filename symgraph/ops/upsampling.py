"""UpSampling: nearest-neighbour (1..N inputs) and bilinear (a grouped Deconvolution).

Nearest: the output is (N, C, h0 * scale, w0 * scale) with ``h0, w0`` the first input's
spatial size; every input ``i`` is repeated ``h0 * scale / h_i`` times along each spatial
axis, then the results are concatenated along channels (``multi_input_mode='concat'``) or
added (``'sum'``). Its gradient sums the output gradient over each repeated block.

Bilinear: inputs ``data`` (N, C, h, w) and ``weight`` (C, 1, k, k) with
``k = 2 * scale - scale % 2``; the result is MXNet's Deconvolution with that kernel,
stride ``scale``, pad ``ceil((scale - 1) / 2)`` and ``num_group = num_filter = C``, so its
gradient is Deconvolution's.

>>> import symgraph as mx
>>> up = mx.sym.UpSampling(mx.sym.Variable('a'), mx.sym.Variable('b'), scale=2,
...                        sample_type='nearest')
>>> up.list_arguments()
['a', 'b']
>>> up.infer_shape(a=(1, 3, 4, 4), b=(1, 2, 2, 2))[1]
[(1, 5, 8, 8)]
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..attrs import MAX_VARIADIC, Param
from ..base import ShapeError
from .base import Case, OpDef, register


def _bilinear_geometry(scale: int) -> tuple[int, int]:
    """Kernel size and padding of the deconvolution MXNet runs for bilinear upsampling."""
    return 2 * scale - scale % 2, math.ceil((scale - 1) / 2)


def _inputs(p) -> list[str]:
    if p.sample_type == "bilinear":
        return ["data", "weight"]
    return [f"arg{i}" for i in range(p.num_args)]


def _nearest_shape(p, shapes):
    if not all(shapes):
        return None
    first = shapes[0]
    for shape in shapes:
        if len(shape) != 4:
            raise ShapeError(f"Check failed: shape.ndim() == 4U ({len(shape)} vs. 4) : "
                             "UpSamplingNearest: Input data should be 4D in (batch, channel, "
                             "y, x)")
    oh, ow = first[2] * p.scale, first[3] * p.scale
    for shape in shapes:
        if oh % shape[2]:
            raise ShapeError(f"Check failed: oh%shape[2] == 0U ({oh % shape[2]} vs. 0) : "
                             f"UpSamplingNearest: input height of {shape[2]}does not divide "
                             f"output height of {oh}")
        if ow % shape[3]:
            raise ShapeError(f"Check failed: ow%shape[3] == 0U ({ow % shape[3]} vs. 0) : "
                             f"UpSamplingNearest: input width of {shape[3]}does not divide "
                             f"output width of {ow}")
        if oh // shape[2] != ow // shape[3]:
            raise ShapeError(f"UpSamplingNearest: input {tuple(shape)} needs one scale for "
                             f"height and width to reach ({oh}, {ow})")
    if p.multi_input_mode == "sum":
        if any(s[1] != first[1] for s in shapes):
            raise ShapeError("Check failed: oshape[1] == 0 || oshape[1] == shape[1]: Number "
                             "of channels must be the same when multi_input_mode==sum")
        channels = first[1]
    else:
        channels = sum(s[1] for s in shapes)
    return shapes, [(first[0], channels, oh, ow)]


def _bilinear_shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    if len(data) != 4:
        raise ShapeError(f"Check failed: dshape.ndim() == 4U ({len(data)} vs. 4) : "
                         "UpSamplingBilinear: Input data should be 4D in (batch, channel, y, x)")
    if data[1] and data[1] != p.num_filter:
        raise ShapeError(f"UpSampling bilinear: num_filter ({p.num_filter}) must equal the "
                         f"number of input channels ({data[1]})")
    k = _bilinear_geometry(p.scale)[0]
    out = (data[0], data[1], data[2] * p.scale, data[3] * p.scale)
    return [data, (data[1], 1, k, k)], [out]


def _shape(p, shapes):
    if p.sample_type == "bilinear":
        return _bilinear_shape(p, shapes)
    return _nearest_shape(p, shapes)


def _nearest(x: torch.Tensor, scale: int) -> torch.Tensor:
    return x.repeat_interleave(scale, dim=2).repeat_interleave(scale, dim=3)


def _forward(p, ins, aux, rt):
    if p.sample_type == "bilinear":
        k, pad = _bilinear_geometry(p.scale)
        return (F.conv_transpose2d(ins[0], ins[1], None, p.scale, pad,
                                   groups=ins[0].shape[1]),)
    if len(ins) == 1:
        return (_nearest(ins[0], p.scale),)
    oh = ins[0].shape[2] * p.scale
    parts = [_nearest(x, oh // x.shape[2]) for x in ins]
    if p.multi_input_mode == "sum":
        return (torch.stack(parts).sum(0),)
    return (torch.cat(parts, dim=1),)


def _block_sum(dy: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    n, c, h, w = x.shape
    s = dy.shape[2] // h
    return dy.reshape(n, c, h, s, w, s).sum(dim=(3, 5))


def _backward_forward(p, ins, aux, rt):
    dy, xs = ins[0], ins[1:]
    grads, begin = [], 0
    for x in xs:
        c = x.shape[1]
        part = dy if p.multi_input_mode == "sum" else dy[:, begin:begin + c]
        grads.append(_block_sum(part, x))
        begin += c
    return tuple(grads)


def triton_upsampling(p, ins, aux, rt):
    """Nearest: one strided Triton copy per input (sum mode: generated adds); bilinear: the
    Triton deconvolution kernel, as the reference."""
    if p.sample_type == "bilinear":
        from ..kernels.conv import conv_transpose_nd
        _, pad = _bilinear_geometry(p.scale)
        return (conv_transpose_nd(ins[0], ins[1], None, stride=(p.scale, p.scale),
                                  pad=(pad, pad), dilate=(1, 1), groups=ins[0].shape[1]),)
    from ..kernels.copy import upsample_nearest
    return (upsample_nearest(ins, p.scale, p.multi_input_mode),)


def triton_backward_upsampling(p, ins, aux, rt):
    """Nearest UpSampling's gradients: one Triton reduce-sum per input."""
    from ..kernels.copy import upsample_nearest_backward
    return upsample_nearest_backward(ins[0], [tuple(x.shape) for x in ins[1:]],
                                     p.multi_input_mode)


def _gradient(g, p, ins, outs, og):
    if p.sample_type == "bilinear":
        k, pad = _bilinear_geometry(p.scale)
        return g.multi("_backward_Deconvolution", og[0], ins[0], ins[1], kernel=(k, k),
                       stride=(p.scale, p.scale), pad=(pad, pad), num_filter=p.num_filter,
                       num_group=p.num_filter, no_bias=True)
    return g.multi("_backward_UpSampling", og[0], *ins, **p)


_PARAMS = (
    Param("scale", "int", lower=1, doc="Upsampling factor."),
    Param("num_filter", "int", 0, doc="Channels of the input (bilinear only)."),
    Param("sample_type", "str", choices=("bilinear", "nearest"), doc="Upsampling method."),
    Param("multi_input_mode", "str", "concat", choices=("concat", "sum"),
          doc="Combine several nearest inputs by channel concat or by sum."),
    Param("num_args", "int", lower=1, upper=MAX_VARIADIC,
          doc="Number of inputs (nearest: 1..N; bilinear: 2)."),
    Param("workspace", "int", 512, lower=0, doc="Workspace limit in MB (accepted, unused)."),
)

register(OpDef(
    name="_backward_UpSampling", params=_PARAMS, hidden=True,
    inputs=lambda p: ["ograd"] + [f"arg{i}" for i in range(p.num_args)],
    outputs=lambda p: [f"arg{i}_grad" for i in range(p.num_args)],
    infer_shape=lambda p, s: (s, list(s[1:])) if all(s[1:]) else None,
    forward=_backward_forward, kernel=triton_backward_upsampling,
    doc="Gradients of nearest UpSampling: block sums of the output gradient per input."))

register(OpDef(
    name="UpSampling", params=_PARAMS, inputs=_inputs, infer_shape=_shape,
    forward=_forward, gradient=_gradient, key_var_num_args="num_args",
    kernel=triton_upsampling,
    cases=(
        Case(((2, 3, 3, 2),), {"scale": 2, "sample_type": "nearest"}),
        Case(((2, 3, 4, 2), (2, 2, 2, 1)), {"scale": 2, "sample_type": "nearest"}),
        Case(((1, 2, 2, 2), (1, 2, 3, 3), (1, 2, 6, 6)),
             {"scale": 3, "sample_type": "nearest", "multi_input_mode": "sum"}),
        Case(((1, 2, 3, 4), (2, 1, 4, 4)),
             {"scale": 2, "sample_type": "bilinear", "num_filter": 2, "num_args": 2}),
    ),
    doc="""Upsample NCHW data by an integer ``scale``: nearest neighbour or bilinear.

    ``sample_type='nearest'`` takes one or more inputs (``arg0``, ``arg1``, ...); the
    output spatial size is the first input's times ``scale`` and the others are scaled to
    match, then concatenated along channels or summed (``multi_input_mode``).
    ``sample_type='bilinear'`` takes ``data`` and a ``weight`` of shape
    (C, 1, 2 * scale - scale % 2, same) and needs ``num_filter=C`` and ``num_args=2``.

    Examples
    --------
    >>> import symgraph as mx
    >>> up = mx.sym.UpSampling(mx.sym.Variable('data'), scale=2, sample_type='bilinear',
    ...                        num_filter=3, num_args=2, name='up')
    >>> up.infer_shape(data=(1, 3, 4, 4))[:2]
    ([(1, 3, 4, 4), (3, 1, 4, 4)], [(1, 3, 8, 8)])
    """))
