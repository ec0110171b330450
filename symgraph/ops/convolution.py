"""Convolution: 1-D, 2-D and 3-D cross-correlation (NCW, NCHW, NCDHW), MXNet 1.x semantics.

Shapes, with ``dk = 1 + (kernel - 1) * dilate`` per spatial axis::

    data   (N, C, *spatial)
    weight (num_filter, C / num_group, *kernel)
    bias   (num_filter,)                       absent when no_bias
    out    (N, num_filter, *[(d + 2 * pad - dk) // stride + 1 for d in spatial])

Backward math (one ``_backward_Convolution`` node, three outputs): with ``dy`` the output
gradient, ``dx`` is the transposed convolution of ``dy`` with ``weight``, ``dw`` the
correlation of ``data`` with ``dy`` and ``db = dy.sum(axes other than 1)``.

>>> import symgraph as mx
>>> net = mx.sym.Convolution(mx.sym.Variable('data'), kernel=(3, 3), num_filter=4,
...                          pad=(1, 1), stride=(2, 2), name='conv')
>>> arg_shapes, out_shapes, _ = net.infer_shape(data=(2, 3, 7, 6))
>>> arg_shapes, out_shapes
([(2, 3, 7, 6), (4, 3, 3, 3), (4,)], [(2, 4, 4, 3)])
>>> net.infer_shape(data=(2, 3, 7))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
symgraph.base.ShapeError: ... Input data should be 4D in batch-num_filter-y-x ...
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..attrs import Param
from ..base import AttrError, ShapeError
from .base import Case, OpDef, PlanHints, Special, register

# The layout MXNet assumes for each number of spatial axes; the only ones its CPU kernels run.
DEFAULT_LAYOUT = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
LAYOUT_CHOICES = ("None", "NCW", "NCHW", "NCDHW", "NHWC", "NDHWC")
CUDNN_TUNE_CHOICES = ("None", "off", "limited_workspace", "fastest")
_AXES = {1: ("x",), 2: ("y", "x"), 3: ("d", "y", "x")}
_DATA_DESC = {1: "batch-num_filter-x", 2: "batch-num_filter-y-x", 3: "batch-num_filter-depth-y-x"}
_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def tshape(t) -> str:
    """A shape the way MXNet's messages print it: ``[3,3]``."""
    return "[" + ",".join(str(v) for v in t) + "]"


def spatial(p, name: str, fill: int) -> tuple[int, ...]:
    """``p[name]``, or ``fill`` on every spatial axis when left empty (MXNet's defaults)."""
    value = p[name]
    return tuple(value) if value else (fill,) * len(p.kernel)


def dilated_kernel(p) -> tuple[int, ...]:
    """Extent of the dilated kernel on each spatial axis: ``1 + (k - 1) * dilate``."""
    return tuple(1 + (k - 1) * d for k, d in zip(p.kernel, spatial(p, "dilate", 1)))


def check_params(p, op: str, extra: tuple[tuple[str, str], ...] = ()) -> None:
    """MXNet's parameter parser checks (run when the node is created); raise ``AttrError``."""
    nd = len(p.kernel)
    if nd not in (1, 2, 3):
        raise AttrError(f"Check failed: param_.kernel.ndim() == 3U ({nd} vs. 3) : "
                        f"{nd}D {op.lower()} not supported")
    named = (("stride", "Stride"), ("dilate", "Dilate"), ("pad", "Padding")) + extra
    for key, label in named:
        value = spatial(p, key, 0)
        if len(value) != nd:
            raise AttrError(f"Check failed: param_.kernel.ndim() == param_.{key}.ndim() "
                            f"({nd} vs. {len(value)}) : {label} must have the same number of "
                            f"dimensions with kernel_size,but kernel_size is set to "
                            f"{tshape(p.kernel)} while {label.lower()} is {tshape(value)}")
    if p.num_group < 1:
        raise AttrError(f"num_group must be at least 1, got {p.num_group}")
    if p.layout not in ("None", DEFAULT_LAYOUT[nd]):
        raise AttrError(f"{op}: layout {p.layout} is not supported for a {nd}-D kernel; "
                        f"MXNet's CPU operator runs {DEFAULT_LAYOUT[nd]} only (leave layout "
                        "None)")


def check_data(p, data: tuple, what: str = "dshp") -> int:
    """The data rank must be kernel rank + 2; returns the number of spatial axes."""
    nd = len(p.kernel)
    if len(data) != nd + 2:
        raise ShapeError(f"Check failed: {what}.ndim() == {nd + 2}U ({len(data)} vs. {nd + 2}) "
                         f": Input data should be {nd + 2}D in {_DATA_DESC[nd]}")
    return nd


def check_groups(p, channels: int) -> None:
    """Channel counts must split evenly into ``num_group`` groups."""
    if channels and channels % p.num_group:
        raise ShapeError(f"Check failed: dshape[1] % param_.num_group == 0U "
                         f"({channels % p.num_group} vs. 0) : input num_filter must divide "
                         "group size")
    if p.num_filter % p.num_group:
        raise ShapeError(f"Check failed: param_.num_filter % param_.num_group == 0U "
                         f"({p.num_filter % p.num_group} vs. 0) : output num_filter must "
                         "divide group size")


def check_geometry(p, extra: tuple[str, ...] = ()) -> None:
    """Kernel, stride and dilate entries are positive, pad (and ``extra``) entries not
    negative. MXNet checks the first three when it infers shapes ("incorrect kernel size:
    [0,3]"); its kernels fail on a negative pad."""
    for key, least in (("kernel", 1), ("stride", 1), ("dilate", 1), ("pad", 0)) + \
            tuple((key, 0) for key in extra):
        if any(v < least for v in p[key]):
            check = f"Check failed: param_.{key}.Size() > 0U (0 vs. 0) : " \
                if least and 0 in p[key] else ""
            raise ShapeError(f"{check}incorrect {key} size: {tshape(p[key])}"
                             + ("" if check else f" (entries must be >= {least})"))


def _inputs(p) -> list[str]:
    return ["data", "weight"] if p.no_bias else ["data", "weight", "bias"]


def _out_size(p, spatial_in: tuple) -> tuple[int, ...]:
    nd = len(p.kernel)
    out = []
    for i, (d, dk, s, pad) in enumerate(zip(spatial_in, dilated_kernel(p),
                                            spatial(p, "stride", 1), spatial(p, "pad", 0))):
        if not d:
            out.append(0)
            continue
        if dk > d + 2 * pad:
            raise ShapeError(f"Check failed: dilated_ksize_{_AXES[nd][i]} <= AddPad(dshape"
                             f"[{i + 2}], param_.pad[{i}]) ({dk} vs. {d + 2 * pad}) : kernel "
                             "size exceed input")
        out.append((d + 2 * pad - dk) // s + 1)
    return tuple(out)


def _shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    check_data(p, data)
    check_geometry(p)
    check_groups(p, data[1])
    weight = (p.num_filter, data[1] // p.num_group if data[1] else 0) + tuple(p.kernel)
    ins = [data, weight] + ([] if p.no_bias else [(p.num_filter,)])
    return ins, [(data[0], p.num_filter) + _out_size(p, tuple(data[2:]))]


def _data_from_output(p, shapes, outs):
    """MXNet's incomplete inference backwards: the batch size from the output, and each
    spatial size whose stride is 1 from the output's."""
    out = outs[0] if outs else ()
    if not out or len(out) != len(p.kernel) + 2:
        return None
    data = list(shapes[0] or (0,) * len(out))
    data[0] = data[0] or out[0]
    strides, pads = spatial(p, "stride", 1), spatial(p, "pad", 0)
    for i, (o, dk, st, pad) in enumerate(zip(out[2:], dilated_kernel(p), strides, pads)):
        if o and st == 1 and not data[i + 2]:
            data[i + 2] = o + dk - 1 - 2 * pad
    return [tuple(data)] + list(shapes[1:])


def _forward(p, ins, aux, rt):
    conv = _CONV[len(p.kernel)]
    bias = None if p.no_bias else ins[2]
    return (conv(ins[0], ins[1], bias, spatial(p, "stride", 1), spatial(p, "pad", 0),
                 spatial(p, "dilate", 1), p.num_group),)


def _prepare(p, in_shapes, out_shapes, out=None):
    """The forward for a fixed shape: geometry decoded once. (A channels-last path, data and
    weight converted each step, measured 1.1-2.3x slower than torch's default layout on the
    CPU with torch 2.13 at ResNet sizes, so convolutions keep the default layout.)"""
    if out is not None:
        return None
    conv, args = _CONV[len(p.kernel)], (spatial(p, "stride", 1), spatial(p, "pad", 0),
                                        spatial(p, "dilate", 1), p.num_group)
    with_bias = not p.no_bias
    return lambda p, ins, aux, rt: (conv(ins[0], ins[1], ins[2] if with_bias else None,
                                         *args),)


def _geometry(p) -> dict:
    """MXNet's stride/pad/dilate/num_group as keyword arguments of the kernels' wrappers."""
    return {"stride": spatial(p, "stride", 1), "pad": spatial(p, "pad", 0),
            "dilate": spatial(p, "dilate", 1), "groups": p.num_group}


def triton_convolution(p, ins, aux, rt):
    """Triton kernel: implicit-GEMM convolution with the bias fused into its epilogue."""
    from ..kernels.conv import conv_nd
    return (conv_nd(ins[0], ins[1], None if p.no_bias else ins[2], **_geometry(p)),)


def triton_backward_convolution(p, ins, aux, rt):
    """Triton kernels: data gradient, weight gradient (implicit GEMMs) and bias gradient."""
    from ..kernels.conv import conv_bias_grad, conv_data_grad, conv_weight_grad
    dy, x, w = ins
    dx = conv_data_grad(dy, w, tuple(x.shape[2:]), **_geometry(p))
    dw = conv_weight_grad(dy, x, tuple(w.shape[2:]), **_geometry(p))
    return (dx, dw) if p.no_bias else (dx, dw, conv_bias_grad(dy))


def _gradient(g, p, ins, outs, og):
    return g.multi("_backward_Convolution", og[0], ins[0], ins[1], **p)


def backward_outputs(p) -> list[str]:
    """Outputs of the convolution-family backward ops: data, weight (and bias) gradients."""
    return ["data_grad", "weight_grad"] + ([] if p.no_bias else ["bias_grad"])


def backward_shape(p, shapes):
    """Gradients have the shapes of data, weight (and the bias, ``(num_filter,)``)."""
    dy, data, weight = shapes
    if not data or not weight:
        return None
    return shapes, [data, weight] + ([] if p.no_bias else [(p.num_filter,)])


def _backward_forward(p, ins, aux, rt):
    dy, x, w = ins
    nd = len(p.kernel)
    needed = p.get("_needed") or (True, True, True)  # an unread data gradient is skipped
    dx, dw, db = torch.ops.aten.convolution_backward(
        dy, x, w, None if p.no_bias else [p.num_filter], list(spatial(p, "stride", 1)),
        list(spatial(p, "pad", 0)), list(spatial(p, "dilate", 1)), False, [0] * nd,
        p.num_group, [needed[0], needed[1], not p.no_bias and needed[-1]])
    return (dx, dw) if p.no_bias else (dx, dw, db)


PARAMS = (
    Param("kernel", "shape", doc="Convolution kernel size: (w,), (h, w) or (d, h, w)."),
    Param("stride", "shape", (), doc="Convolution stride; defaults to 1 on each axis."),
    Param("dilate", "shape", (), doc="Convolution dilation; defaults to 1 on each axis."),
    Param("pad", "shape", (), doc="Zero padding on both sides; defaults to 0 on each axis."),
    Param("num_filter", "int", lower=1, doc="Number of output channels."),
    Param("num_group", "int", 1, doc="Number of groups the channels are split into."),
    Param("workspace", "int", 1024, lower=0, doc="Workspace limit in MB (accepted, unused)."),
    Param("no_bias", "bool", False, doc="Whether to disable the bias."),
    Param("cudnn_tune", "str", "None", choices=CUDNN_TUNE_CHOICES,
          doc="cuDNN algorithm selection (accepted, unused)."),
    Param("cudnn_off", "bool", False, doc="Turn off cuDNN (accepted, unused)."),
    Param("layout", "str", "None", choices=LAYOUT_CHOICES,
          doc="Data layout; only None and NCW/NCHW/NCDHW matching the kernel are supported."),
)

register(OpDef(
    name="_backward_Convolution", params=PARAMS, inputs=("ograd", "data", "weight"),
    outputs=backward_outputs, hidden=True, infer_shape=backward_shape,
    forward=_backward_forward, kernel=triton_backward_convolution,
    hints=PlanHints(skips_unused_outputs=True, measured=True),
    doc="Gradients of Convolution with respect to data, weight and (unless no_bias) bias."))

register(OpDef(
    name="Convolution", params=PARAMS, inputs=_inputs, infer_shape=_shape,
    aliases=("Convolution_v1",),  # MXNet's old form: a subset of these params, same math
    special=Special(infer_inputs_from_outputs=_data_from_output),
    check=lambda p: check_params(p, "Convolution"),
    forward=_forward, gradient=_gradient, kernel=triton_convolution, prepare=_prepare,
    hints=PlanHints(measured=True),
    cases=(
        Case(((2, 3, 7, 6), (4, 3, 3, 3), (4,)), {"kernel": (3, 3), "num_filter": 4}),
        Case(((2, 3, 7, 6), (4, 3, 3, 2), (4,)),
             {"kernel": (3, 2), "num_filter": 4, "stride": (2, 1), "pad": (1, 2)}),
        Case(((2, 4, 7, 6), (6, 2, 2, 3)),
             {"kernel": (2, 3), "num_filter": 6, "num_group": 2, "dilate": (2, 1),
              "no_bias": True}),
        Case(((2, 3, 9), (4, 3, 3), (4,)),
             {"kernel": (3,), "num_filter": 4, "stride": (2,), "pad": (1,), "dilate": (2,)}),
        Case(((1, 2, 4, 5, 3), (3, 2, 2, 3, 2), (3,)),
             {"kernel": (2, 3, 2), "num_filter": 3, "stride": (1, 2, 1), "pad": (1, 0, 1)}),
        Case(((2, 4, 5, 5), (4, 1, 3, 3), (4,)),
             {"kernel": (3, 3), "num_filter": 4, "num_group": 4, "pad": (1, 1),
              "layout": "NCHW", "cudnn_tune": "off", "workspace": 256}),
    ),
    doc="""Convolution over 1, 2 or 3 spatial axes (cross-correlation, as MXNet computes it).

    ``data`` is (N, C, *spatial) in NCW, NCHW or NCDHW layout; ``weight`` is
    (num_filter, C / num_group, *kernel) and ``bias`` (num_filter,). Each spatial axis of
    the output has size ``(d + 2 * pad - (1 + (k - 1) * dilate)) // stride + 1``.
    ``stride``, ``dilate`` and ``pad`` left empty mean 1, 1 and 0 on every axis; when given
    they must have as many entries as ``kernel``. ``workspace``, ``cudnn_tune`` and
    ``cudnn_off`` are accepted for compatibility and do not change the result.

    Examples
    --------
    >>> import symgraph as mx
    >>> c = mx.sym.Convolution(mx.sym.Variable('data'), kernel=(3,), num_filter=2, name='c')
    >>> c.infer_shape(data=(1, 3, 9))[1]
    [(1, 2, 7)]
    >>> mx.sym.Convolution(mx.sym.Variable('data'), kernel=(3, 3), stride=(1, 1, 1),
    ...                    num_filter=3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symgraph.base.AttrError: ... kernel_size is set to [3,3] while stride is [1,1,1]
    """))
