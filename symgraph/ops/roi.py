"""Region-of-interest operators: ``ROIPooling`` and ``contrib.ROIAlign``.

Both take a feature map ``data`` (N, C, H, W) and ``rois`` (R, 5) rows ``[batch_index, x1,
y1, x2, y2]`` in image coordinates (``spatial_scale`` maps them onto the map), and give
(R, C, PH, PW) for ``pooled_size=(PH, PW)``; kernels and the exact sampling rules are in
``kernels/roi.py``. ROIPooling takes each bin's maximum (its gradient goes to the first
maximum); ROIAlign averages bilinear samples per bin (``sample_ratio`` per axis, adaptive when
-1), optionally position-sensitive (C / (PH * PW) output channels, R-FCN style) or
half-pixel ``aligned`` (Detectron2). ``rois`` gets no gradient.

>>> import symgraph as mx
>>> x = mx.nd.arange(16).reshape((1, 1, 4, 4))
>>> rois = mx.nd.array([[0, 0, 0, 3, 3]])
>>> mx.nd.ROIPooling(x, rois, pooled_size=(2, 2), spatial_scale=1.0).asnumpy()
array([[[[ 5.,  7.],
         [13., 15.]]]], dtype=float32)
>>> mx.nd.contrib.ROIAlign(x, rois, pooled_size=(1, 1), spatial_scale=1.0,
...                        sample_ratio=2).asnumpy()
array([[[[7.5]]]], dtype=float32)
"""
from __future__ import annotations

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, register


def _rois_shape(op: str, data, rois) -> None:
    if data and len(data) != 4:
        raise ShapeError(f"{op}: data should be a 4D tensor, got {data}")
    if rois and (len(rois) != 2 or rois[1] != 5):
        raise ShapeError(f"{op}: rois should be a 2D tensor of shape (num_rois, 5), got {rois}")


def _pool_shape(p, shapes):
    data, rois = shapes
    _rois_shape("ROIPooling", data, rois)
    if not data or not rois:
        return None
    return shapes, [(rois[0], data[1]) + tuple(p.pooled_size)]


def _align_channels(p, data) -> int:
    if not p.position_sensitive:
        return data[1]
    bins = p.pooled_size[0] * p.pooled_size[1]
    if data[1] % bins:
        raise ShapeError(f"ROIAlign: position_sensitive needs the input channels ({data[1]}) "
                         f"divisible by PH * PW = {bins}")
    return data[1] // bins


def _align_shape(p, shapes):
    data, rois = shapes
    _rois_shape("ROIAlign", data, rois)
    if not data or not rois:
        return None
    return shapes, [(rois[0], _align_channels(p, data)) + tuple(p.pooled_size)]


def _check_pooled(p) -> None:
    if len(p.pooled_size) != 2 or min(p.pooled_size) <= 0:
        raise ShapeError(f"pooled_size should be two positive ints (h, w), got "
                         f"{tuple(p.pooled_size)}")


def _align_args(p) -> tuple:
    return (tuple(p.pooled_size), p.spatial_scale, p.sample_ratio, p.position_sensitive,
            p.aligned)


def _psroi_args(p) -> tuple:
    return (p.output_dim, p.pooled_size, p.group_size or p.pooled_size, p.spatial_scale)


def _psroi_shape(p, shapes):
    data, rois = shapes
    _rois_shape("PSROIPooling", data, rois)
    if not data or not rois:
        return None
    dim, pooled, group, _ = _psroi_args(p)
    if data[1] < dim * group * group:
        raise ShapeError(f"PSROIPooling: data {data} has fewer channels than output_dim * "
                         f"group_size^2 = {dim * group * group}")
    return shapes, [(rois[0], dim, pooled, pooled)]


def _ref(name):
    def forward(p, ins, aux, rt):
        from ..kernels import psroi, roi
        if name.startswith("psroi"):
            fn = psroi.psroi_pool_ref if name == "psroi" else psroi.psroi_pool_backward_ref
            return (fn(*ins, _psroi_args(p)),)
        if name == "pool":
            return (roi.roi_pool_ref(*ins, tuple(p.pooled_size), p.spatial_scale),)
        if name == "pool_bwd":
            return (roi.roi_pool_backward_ref(*ins, tuple(p.pooled_size), p.spatial_scale),)
        fn = roi.roi_align_ref if name == "align" else roi.roi_align_backward_ref
        return (fn(*ins, _align_args(p)),)
    return forward


def triton_roi_pooling(p, ins, aux, rt):
    """ROIPooling as one Triton kernel (a window max per output)."""
    from ..kernels.roi import roi_pool
    return (roi_pool(*ins, tuple(p.pooled_size), p.spatial_scale),)


def triton_backward_roi_pooling(p, ins, aux, rt):
    """The ROIPooling data gradient: argmax recomputed, dy added there atomically."""
    from ..kernels.roi import roi_pool_backward
    return (roi_pool_backward(*ins, tuple(p.pooled_size), p.spatial_scale),)


def triton_roi_align(p, ins, aux, rt):
    """ROIAlign as one Triton kernel (bilinear samples averaged per output)."""
    from ..kernels.roi import roi_align
    return (roi_align(*ins, _align_args(p)),)


def triton_backward_roi_align(p, ins, aux, rt):
    """The ROIAlign data gradient: atomic adds of the sample weights."""
    from ..kernels.roi import roi_align_backward
    return (roi_align_backward(*ins, _align_args(p)),)


def triton_psroi_pooling(p, ins, aux, rt):
    """PSROIPooling as one Triton kernel (a window average per output)."""
    from ..kernels.psroi import psroi_pool
    return (psroi_pool(*ins, _psroi_args(p)),)


def triton_backward_psroi_pooling(p, ins, aux, rt):
    """The PSROIPooling data gradient: atomic adds of dy / bin area."""
    from ..kernels.psroi import psroi_pool_backward
    return (psroi_pool_backward(*ins, _psroi_args(p)),)


def _gradient(backward: str):
    def rule(g, p, ins, outs, og):
        return [g.op(backward, og[0], *ins, **p), g.zeros(ins[1])]
    return rule


def _grad_shape(p, s):
    return (s, [s[1]]) if s[1] else None


_SCALE = Param("spatial_scale", "float", lower=0.0, upper=1.0,
               doc="Feature map size over image size (1 / total stride).")
_POOL_PARAMS = (Param("pooled_size", "shape", doc="Output (height, width)."), _SCALE)
_ALIGN_PARAMS = _POOL_PARAMS + (
    Param("sample_ratio", "int", -1, doc="Samples per bin and axis (-1: adaptive)."),
    Param("position_sensitive", "bool", False, doc="Position-sensitive (R-FCN) pooling."),
    Param("aligned", "bool", False, doc="Half-pixel aligned boxes (Detectron2)."))


_PSROI_PARAMS = (
    _SCALE, Param("output_dim", "int", doc="Output channels (classes)."),
    Param("pooled_size", "int", doc="Output height and width."),
    Param("group_size", "int", 0, doc="Position-sensitive groups per axis (0: pooled_size)."))


def _register(name: str, params, shape, kernels: tuple, cases: tuple, doc: str,
              check=_check_pooled) -> None:
    """The op and its hidden ``_backward_<name>`` (data gradient, from ograd/data/rois)."""
    backward = "_backward_" + name
    register(OpDef(
        name=backward, params=params, hidden=True, inputs=("ograd", "data", "rois"),
        outputs=("data_grad",), infer_shape=_grad_shape, forward=_ref(kernels[2]),
        kernel=kernels[1], doc=f"Gradient of {name} with respect to its data."))
    register(OpDef(
        name=name, params=params, inputs=("data", "rois"), infer_shape=shape,
        forward=_ref(kernels[3]), kernel=kernels[0], gradient=_gradient(backward),
        check=check, cases=cases, doc=doc))


# rois drawn as integers in [0, 5): batch indices valid for N = 5, corners inside the map
_register("ROIPooling", _POOL_PARAMS, _pool_shape,
          (triton_roi_pooling, triton_backward_roi_pooling, "pool_bwd", "pool"),
          (Case(((5, 2, 5, 6), (4, 5)), {"pooled_size": (2, 3), "spatial_scale": 1.0},
                ints={1: 5}),
           Case(((5, 3, 5, 4), (3, 5)), {"pooled_size": (3, 2), "spatial_scale": 0.5},
                ints={1: 5})),
          "Max pooling of each region of interest into a fixed (PH, PW) grid.")
_register("_contrib_ROIAlign", _ALIGN_PARAMS, _align_shape,
          (triton_roi_align, triton_backward_roi_align, "align_bwd", "align"),
          (Case(((5, 1, 6, 5), (4, 5)), {"pooled_size": (2, 3), "spatial_scale": 1.0},
                ints={1: 5}),
           Case(((5, 2, 5, 4), (3, 5)), {"pooled_size": (2, 2), "spatial_scale": 0.5,
                                         "sample_ratio": 2, "aligned": True}, ints={1: 5}),
           Case(((5, 4, 4, 3), (3, 5)), {"pooled_size": (2, 2), "spatial_scale": 1.0,
                                         "position_sensitive": True}, ints={1: 5})),
          "Average of bilinear samples over each bin of each region of interest.")
_register("_contrib_PSROIPooling", _PSROI_PARAMS, _psroi_shape,
          (triton_psroi_pooling, triton_backward_psroi_pooling, "psroi_bwd", "psroi"),
          (Case(((5, 8, 5, 4), (3, 5)), {"spatial_scale": 1.0, "output_dim": 2,
                                         "pooled_size": 2}, ints={1: 5}),
           Case(((5, 9, 4, 6), (3, 5)), {"spatial_scale": 0.5, "output_dim": 1,
                                         "pooled_size": 2, "group_size": 3}, ints={1: 5})),
          "Position-sensitive ROI average pooling (R-FCN): bin (i, j) of class c reads "
          "channel (c * G + gi) * G + gj.", check=None)


# ---------------------------------------------------------------- DeformablePSROIPooling

def _deform_args(p) -> tuple:
    return (p.output_dim, p.pooled_size, p.group_size, p.part_size or p.pooled_size,
            p.sample_per_part, p.spatial_scale, p.trans_std)


def _deform_inputs(p) -> list[str]:
    return ["data", "rois"] if p.no_trans else ["data", "rois", "trans"]


def _deform_shape(p, shapes):
    data, rois = shapes[:2]
    _rois_shape("DeformablePSROIPooling", data, rois)
    trans = shapes[2] if len(shapes) > 2 else ()
    if trans and len(trans) != 4:
        raise ShapeError(f"DeformablePSROIPooling: trans should be a 4D tensor, got {trans}")
    if not data or not rois:
        return None
    return shapes, [(rois[0], p.output_dim, p.pooled_size, p.pooled_size)]


def _deform_forward(p, ins, aux, rt):
    from ..kernels.psroi import deform_psroi_pool_ref
    return (deform_psroi_pool_ref(ins[0], ins[1], ins[2] if len(ins) > 2 else None,
                                  _deform_args(p)),)


def triton_deformable_psroi_pooling(p, ins, aux, rt):
    """DeformablePSROIPooling as one Triton kernel (S x S bilinear samples per output)."""
    from ..kernels.psroi import deform_psroi_pool
    return (deform_psroi_pool(ins[0], ins[1], ins[2] if len(ins) > 2 else None,
                              _deform_args(p)),)


def _deform_backward(p, ins, aux, rt):
    from ..kernels.psroi import deform_psroi_pool_backward_ref
    trans = ins[3] if len(ins) > 3 else None
    grads = deform_psroi_pool_backward_ref(ins[0], ins[1], ins[2], trans, _deform_args(p))
    return grads if trans is not None else grads[:1]


def triton_backward_deformable_psroi_pooling(p, ins, aux, rt):
    """DeformablePSROIPooling gradients of data and trans: one Triton launch (atomics)."""
    from ..kernels.psroi import deform_psroi_pool_backward
    trans = ins[3] if len(ins) > 3 else None
    grads = deform_psroi_pool_backward(ins[0], ins[1], ins[2], trans, _deform_args(p))
    return grads if trans is not None else grads[:1]


def _deform_gradient(g, p, ins, outs, og):
    grads = g.multi("_backward_DeformablePSROIPooling", og[0], *ins, **p)
    return [grads[0], g.zeros(ins[1])] + grads[1:]


_DEFORM_PARAMS = (
    _SCALE, Param("output_dim", "int", doc="Output channels."),
    Param("group_size", "int", doc="Position-sensitive groups per axis."),
    Param("pooled_size", "int", doc="Output height and width."),
    Param("part_size", "int", 0, doc="Offset grid size per axis (0: pooled_size)."),
    Param("sample_per_part", "int", 1, doc="Samples per bin and axis."),
    Param("trans_std", "float", 0.0, lower=0.0, upper=1.0, doc="Scale of the offsets."),
    Param("no_trans", "bool", False, doc="No offsets input (plain position-sensitive)."))

register(OpDef(
    name="_backward_DeformablePSROIPooling", params=_DEFORM_PARAMS, hidden=True,
    inputs=lambda p: ["ograd"] + _deform_inputs(p),
    outputs=lambda p: ["data_grad"] if p.no_trans else ["data_grad", "trans_grad"],
    infer_shape=lambda p, s: (s, [s[1]] + list(s[3:])) if all(s[1:]) else None,
    forward=_deform_backward, kernel=triton_backward_deformable_psroi_pooling,
    doc="Gradients of DeformablePSROIPooling with respect to data and trans."))

register(OpDef(
    name="_contrib_DeformablePSROIPooling", params=_DEFORM_PARAMS, inputs=_deform_inputs,
    infer_shape=_deform_shape, forward=_deform_forward,
    kernel=triton_deformable_psroi_pooling, gradient=_deform_gradient,
    cases=(Case(((5, 8, 5, 6), (3, 5), (3, 2, 2, 2)),
                {"spatial_scale": 1.0, "output_dim": 2, "group_size": 2, "pooled_size": 3,
                 "part_size": 2, "sample_per_part": 2, "trans_std": 0.1}, ints={1: 5}),
           Case(((5, 4, 4, 5), (3, 5)),
                {"spatial_scale": 0.5, "output_dim": 1, "group_size": 2, "pooled_size": 2,
                 "no_trans": True}, ints={1: 5})),
    doc="Deformable position-sensitive ROI pooling: each bin averages bilinear samples "
        "shifted by learned offsets ``trans`` (R, 2 * classes, part, part)."))


# ---------------------------------------------------------------- RROIAlign

def _rroi_shape(p, shapes):
    data, rois = shapes
    if data and len(data) != 4:
        raise ShapeError(f"RROIAlign: data should be a 4D tensor, got {data}")
    if rois and (len(rois) != 2 or rois[1] != 6):
        raise ShapeError(f"RROIAlign: rois should be a 2D tensor of shape (num_rois, 6), "
                         f"got {rois}")
    if not data or not rois:
        return None
    return shapes, [(rois[0], data[1]) + tuple(p.pooled_size)]


def _rroi_forward(p, ins, aux, rt):
    from ..kernels.roi import rroi_align_ref
    return (rroi_align_ref(*ins, tuple(p.pooled_size), p.spatial_scale, p.sampling_ratio),)


def triton_rroi_align(p, ins, aux, rt):
    """RROIAlign as one Triton kernel (rotated bilinear samples averaged per output)."""
    from ..kernels.roi import rroi_align
    return (rroi_align(*ins, tuple(p.pooled_size), p.spatial_scale, p.sampling_ratio),)


register(OpDef(
    name="_contrib_RROIAlign", inputs=("data", "rois"), infer_shape=_rroi_shape,
    forward=_rroi_forward, kernel=triton_rroi_align, differentiable=False, check=_check_pooled,
    params=(Param("pooled_size", "shape", doc="Output (height, width)."), _SCALE,
            Param("sampling_ratio", "int", -1, doc="Samples per bin and axis (-1: adaptive).")),
    cases=(Case(((5, 2, 6, 5), (4, 6)), {"pooled_size": (2, 3), "spatial_scale": 1.0},
                ints={1: 5}, grad=False),
           Case(((5, 1, 5, 7), (3, 6)), {"pooled_size": (3, 2), "spatial_scale": 0.5,
                                         "sampling_ratio": 2}, ints={1: 5}, grad=False)),
    doc="ROIAlign over rotated boxes ``[batch, cx, cy, w, h, theta_degrees]`` (forward only; "
        "MXNet has no gradient)."))
