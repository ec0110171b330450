"""Deconvolution: the transposed convolution (gradient of Convolution w.r.t. its data).

Shapes, with ``dk = 1 + (kernel - 1) * dilate`` per spatial axis::

    data   (N, C, *spatial)
    weight (C, num_filter / num_group, *kernel)
    bias   (num_filter,)                       only when no_bias=False (MXNet's default: True)
    out    (N, num_filter, *[stride * (d - 1) + dk - 2 * pad + adj for d in spatial])

With ``target_shape`` set (any entry non-zero) MXNet ignores ``pad`` and ``adj`` and derives
them per axis from ``total = stride * (d - 1) + dk``: ``pad = (total - target + 1) // 2`` and
``adj = (total - target) % 2``, so that the output has exactly the target size.

Backward math (one ``_backward_Deconvolution`` node): ``dx`` is the ordinary convolution of
``dy`` with ``weight``, ``dw`` the correlation of ``dy`` with ``data``, ``db`` sums ``dy``
over every axis but 1.

With stride > 1 and dilate > 1 on the same axis, MXNet's native CPU forward (MKLDNN off)
is wrong (mshadow's ``pack_col2patch`` steps over patches by the dilation); its default
MKLDNN path, its GPU path and its own backward compute the true transposed convolution,
which is what this op computes.

>>> import symgraph as mx
>>> net = mx.sym.Deconvolution(mx.sym.Variable('data'), kernel=(3, 3), num_filter=2,
...                            stride=(2, 2), target_shape=(8, 9), name='up')
>>> net.list_arguments()
['data', 'up_weight']
>>> net.infer_shape(data=(1, 3, 4, 4))[:2]
([(1, 3, 4, 4), (3, 2, 3, 3)], [(1, 2, 8, 9)])
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..attrs import Param
from ..base import AttrError, ShapeError
from .base import Case, OpDef, PlanHints, register
from .convolution import (
    CUDNN_TUNE_CHOICES,
    LAYOUT_CHOICES,
    backward_outputs,
    backward_shape,
    check_data,
    check_geometry,
    check_groups,
    check_params,
    dilated_kernel,
    spatial,
    tshape,
)

_AXES = {1: ("x",), 2: ("y", "x"), 3: ("d", "y", "x")}
_DECONV = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _check(p) -> None:
    check_params(p, "Deconvolution", (("adj", "Adjustment"),))
    if p.target_shape and len(p.target_shape) != len(p.kernel):
        raise AttrError(f"Deconvolution: target_shape {tshape(p.target_shape)} must have as "
                        f"many entries as kernel {tshape(p.kernel)}")


def _inputs(p) -> list[str]:
    return ["data", "weight"] if p.no_bias else ["data", "weight", "bias"]


def pad_adj(p, spatial_in: tuple) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Effective padding and output adjustment per axis (MXNet's ``InferPad``)."""
    if not any(p.target_shape):
        return spatial(p, "pad", 0), spatial(p, "adj", 0)
    pads, adjs = [], []
    for d, s, dk, t in zip(spatial_in, spatial(p, "stride", 1), dilated_kernel(p),
                           p.target_shape):
        total = s * (d - 1) + dk if d else 0
        if d and total < t:
            raise ShapeError(f"Check failed: o_pad[i] >= target_shape[i] ({total} vs. {t}) : "
                             "too big target shape")
        pads.append((total - t + 1) // 2 if d else 0)
        adjs.append((total - t) % 2 if d else 0)
    return tuple(pads), tuple(adjs)


def _out_size(p, spatial_in: tuple) -> tuple[int, ...]:
    nd = len(p.kernel)
    pads, adjs = pad_adj(p, spatial_in)
    strides = spatial(p, "stride", 1)
    out = []
    for i, (d, s, dk) in enumerate(zip(spatial_in, strides, dilated_kernel(p))):
        if adjs[i] > s - 1:
            axis = _AXES[nd][i]
            raise ShapeError(f"Check failed: param_.stride[{i}]-1 >= o_adj[{i}] ({s - 1} vs. "
                             f"{adjs[i]}) : adj({axis}) must be samller than stride[{i}]")
        size = s * (d - 1) + dk - 2 * pads[i] + adjs[i] if d else 0
        if size < 0:
            raise ShapeError(f"Deconvolution: output size {size} on spatial axis {i} is "
                             f"negative (input {d}, pad {pads[i]})")
        out.append(size)  # 0 (unknown) for a zero target_shape entry, as in MXNet
    return tuple(out)


def _shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    check_data(p, data, "dshape")
    check_geometry(p, ("adj", "target_shape"))
    check_groups(p, data[1])
    weight = (data[1], p.num_filter // p.num_group) + tuple(p.kernel)
    ins = [data, weight] + ([] if p.no_bias else [(p.num_filter,)])
    return ins, [(data[0], p.num_filter) + _out_size(p, tuple(data[2:]))]


def _forward(p, ins, aux, rt):
    x = ins[0]
    pads, adjs = pad_adj(p, tuple(x.shape[2:]))
    bias = None if p.no_bias else ins[2]
    return (_DECONV[len(p.kernel)](x, ins[1], bias, spatial(p, "stride", 1), pads, adjs,
                                   p.num_group, spatial(p, "dilate", 1)),)


def _geometry(p, spatial_in: tuple) -> dict:
    """Stride, effective pad (``pad_adj``), dilate and groups for the kernels' wrappers."""
    pads, _ = pad_adj(p, spatial_in)
    return {"stride": spatial(p, "stride", 1), "pad": pads, "dilate": spatial(p, "dilate", 1),
            "groups": p.num_group}


def triton_deconvolution(p, ins, aux, rt):
    """Triton kernel: the convolution data-gradient kernel with data and output swapped."""
    from ..kernels.conv import conv_transpose_nd
    x = ins[0]
    _, adjs = pad_adj(p, tuple(x.shape[2:]))
    return (conv_transpose_nd(x, ins[1], None if p.no_bias else ins[2], adj=adjs,
                              **_geometry(p, tuple(x.shape[2:]))),)


def triton_backward_deconvolution(p, ins, aux, rt):
    """Triton kernels: dx = conv(dy, w), dw = conv weight gradient with x and dy swapped."""
    from ..kernels.conv import conv_bias_grad, conv_nd, conv_weight_grad
    dy, x, w = ins
    geom = _geometry(p, tuple(x.shape[2:]))
    dx = conv_nd(dy, w, None, **geom)
    dw = conv_weight_grad(x, dy, tuple(w.shape[2:]), **geom)
    return (dx, dw) if p.no_bias else (dx, dw, conv_bias_grad(dy))


def _gradient(g, p, ins, outs, og):
    return g.multi("_backward_Deconvolution", og[0], ins[0], ins[1], **p)


def _backward_forward(p, ins, aux, rt):
    dy, x, w = ins
    pads, adjs = pad_adj(p, tuple(x.shape[2:]))
    dx, dw, db = torch.ops.aten.convolution_backward(
        dy, x, w, None if p.no_bias else [p.num_filter], list(spatial(p, "stride", 1)),
        list(pads), list(spatial(p, "dilate", 1)), True, list(adjs), p.num_group,
        [True, True, not p.no_bias])
    return (dx, dw) if p.no_bias else (dx, dw, db)


PARAMS = (
    Param("kernel", "shape", doc="Kernel size: (w,), (h, w) or (d, h, w)."),
    Param("stride", "shape", (), doc="Stride of the corresponding convolution; default 1s."),
    Param("dilate", "shape", (), doc="Dilation; defaults to 1 on each axis."),
    Param("pad", "shape", (), doc="Padding of the corresponding convolution; default 0s."),
    Param("adj", "shape", (), doc="Extra output size at the end of each axis; default 0s."),
    Param("target_shape", "shape", (),
          doc="Output spatial shape; when set, pad and adj are derived from it."),
    Param("num_filter", "int", lower=1, doc="Number of output channels."),
    Param("num_group", "int", 1, doc="Number of groups the channels are split into."),
    Param("workspace", "int", 512, lower=0, doc="Workspace limit in MB (accepted, unused)."),
    Param("no_bias", "bool", True, doc="Whether to disable the bias (MXNet default True)."),
    Param("cudnn_tune", "str", "None", choices=CUDNN_TUNE_CHOICES,
          doc="cuDNN algorithm selection (accepted, unused)."),
    Param("cudnn_off", "bool", False, doc="Turn off cuDNN (accepted, unused)."),
    Param("layout", "str", "None", choices=LAYOUT_CHOICES,
          doc="Data layout; only None and NCW/NCHW/NCDHW matching the kernel are supported."),
)

register(OpDef(
    name="_backward_Deconvolution", params=PARAMS, inputs=("ograd", "data", "weight"),
    outputs=backward_outputs, hidden=True, infer_shape=backward_shape,
    forward=_backward_forward, kernel=triton_backward_deconvolution,
    hints=PlanHints(measured=True),
    doc="Gradients of Deconvolution with respect to data, weight and (unless no_bias) bias."))

register(OpDef(
    name="Deconvolution", params=PARAMS, inputs=_inputs, infer_shape=_shape, check=_check,
    forward=_forward, gradient=_gradient, kernel=triton_deconvolution,
    hints=PlanHints(measured=True),
    cases=(
        Case(((2, 3, 4, 3), (3, 2, 3, 3)), {"kernel": (3, 3), "num_filter": 2}),
        Case(((2, 3, 3, 4), (3, 2, 3, 2), (2,)),
             {"kernel": (3, 2), "num_filter": 2, "stride": (2, 3), "pad": (1, 0),
              "adj": (1, 2), "no_bias": False}),
        Case(((1, 3, 4, 4), (3, 2, 3, 3)),
             {"kernel": (3, 3), "num_filter": 2, "stride": (2, 2), "target_shape": (8, 9)}),
        Case(((2, 4, 3, 3), (4, 3, 2, 2), (6,)),
             {"kernel": (2, 2), "num_filter": 6, "num_group": 2, "dilate": (2, 1),
              "pad": (1, 1), "no_bias": False}),
        Case(((2, 3, 5), (3, 2, 3)), {"kernel": (3,), "num_filter": 2, "stride": (2,)}),
        Case(((2, 2, 4), (2, 4, 3), (4,)),
             {"kernel": (3,), "num_filter": 4, "stride": (3,), "target_shape": (11,),
              "no_bias": False}),
    ),
    doc="""Deconvolution (transposed convolution) over 1, 2 or 3 spatial axes.

    ``data`` is (N, C, *spatial); ``weight`` is (C, num_filter / num_group, *kernel), the
    layout of the weight of the convolution this op transposes; ``bias`` (num_filter,)
    exists only with ``no_bias=False`` (MXNet's default is ``no_bias=True``). Each output
    axis has size ``stride * (d - 1) + 1 + (k - 1) * dilate - 2 * pad + adj``; ``adj`` must
    be smaller than ``stride``. A non-zero ``target_shape`` replaces ``pad`` and ``adj`` by
    the values that produce it.

    Examples
    --------
    >>> import symgraph as mx
    >>> d = mx.sym.Deconvolution(mx.sym.Variable('data'), kernel=(3, 3), num_filter=2,
    ...                          stride=(2, 2), pad=(1, 1), adj=(1, 1))
    >>> d.infer_shape(data=(1, 3, 4, 4))[1]
    [(1, 2, 8, 8)]
    >>> mx.sym.Deconvolution(mx.sym.Variable('data'), kernel=(3, 3), num_filter=2,
    ...                      stride=(2, 2), adj=(2, 2)).infer_shape(data=(1, 3, 4, 4))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symgraph.base.ShapeError: ... adj(y) must be samller than stride[0] ...
    """))
