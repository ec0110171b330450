"""Bounding boxes: ``box_iou``, ``box_encode``, ``box_decode``, ``box_nms`` and
``bipartite_matching`` (MXNet's ``contrib`` detection helpers).

Each is a primitive with its own Triton kernel (``kernels/detection.py``): IoU, encode and
decode are one pass each with a gather that a composition would spread over some twenty
nodes; NMS and matching sort and then walk the boxes greedily. As in MXNet only ``box_nms``
has a gradient (the output-gradient rows routed back to the boxes that were kept); the
others give zero gradients.

>>> import symgraph as mx
>>> boxes = mx.nd.array([[0, 0.9, 0, 0, 2, 2], [0, 0.8, 0, 0, 2, 1.9], [1, 0.7, 3, 3, 4, 4]])
>>> mx.nd.contrib.box_nms(boxes, overlap_thresh=0.5).asnumpy()[:, 1]
array([ 0.9,  0.7, -1. ], dtype=float32)
>>> mx.nd.contrib.box_iou(mx.nd.array([[0, 0, 2, 2]]), mx.nd.array([[1, 0, 3, 2]])).asnumpy()
array([[0.33333334]], dtype=float32)
"""
from __future__ import annotations

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, register

_FORMAT = ("corner", "center")


def _zero_grads(g, p, ins, outs, og):
    return [g.zeros(x) for x in ins]


def _last_is_4(op: str, what: str, shape, min_ndim: int = 2) -> None:
    if len(shape) < min_ndim:
        raise ShapeError(f"{op}: {what} must have dim >= {min_ndim}, got shape {tuple(shape)}")
    if shape[-1] and shape[-1] != 4:
        raise ShapeError(f"{op}: last dimension of {what} must be 4, got shape {tuple(shape)}")


# ---------------------------------------------------------------- box_iou

def _iou_shape(p, shapes):
    lhs, rhs = shapes
    if not lhs or not rhs:
        return None
    _last_is_4("box_iou", "lhs", lhs)
    _last_is_4("box_iou", "rhs", rhs)
    return shapes, [tuple(lhs[:-1]) + tuple(rhs[:-1])]


def _iou_forward(p, ins, aux, rt):
    from ..kernels.detection import box_iou_ref
    return (box_iou_ref(ins[0], ins[1], p.format),)


def triton_box_iou(p, ins, aux, rt):
    from ..kernels.detection import box_iou
    return (box_iou(ins[0], ins[1], p.format),)


register(OpDef(
    name="_contrib_box_iou", inputs=("lhs", "rhs"), infer_shape=_iou_shape,
    forward=_iou_forward, kernel=triton_box_iou, gradient=_zero_grads,
    params=(Param("format", "str", "corner", choices=_FORMAT,
                  doc="Box encoding: corner (xmin, ymin, xmax, ymax) or center (x, y, w, h)."),),
    cases=(Case(((3, 4), (2, 5, 4)), low=0.0, high=2.0, grad=False),
           Case(((2, 1, 4), (3, 4)), {"format": "center"}, low=0.2, high=2.0, grad=False)),
    doc="""Intersection over union of every box of ``lhs`` with every box of ``rhs``.

    The output shape is ``lhs.shape[:-1] + rhs.shape[:-1]``; its gradient is zero.

    Examples
    --------
    >>> import symgraph as mx
    >>> a = mx.nd.array([[0, 0, 2, 2], [0, 0, 1, 1]])
    >>> mx.nd.contrib.box_iou(a, a).asnumpy()
    array([[1.  , 0.25],
           [0.25, 1.  ]], dtype=float32)
    """))


# ---------------------------------------------------------------- box_encode

def _encode_shape(p, shapes):
    samples, matches, anchors, refs, means, stds = shapes
    if samples and len(samples) != 2:
        raise ShapeError(f"box_encode: samples must have dim == 2, got shape {samples}")
    if matches and len(matches) < 2:
        raise ShapeError(f"box_encode: matches must have dim >= 2, got shape {matches}")
    if refs:
        _last_is_4("box_encode", "refs", refs, 3)
    if not anchors:
        return None
    _last_is_4("box_encode", "anchors", anchors, 3)
    ins = [samples or tuple(anchors[:2]), matches or tuple(anchors[:2]), anchors, refs,
           (4,), (4,)]
    if means and means != (4,) or stds and stds != (4,):
        raise ShapeError(f"box_encode: means and stds must have shape (4,), got {means} and "
                         f"{stds}")
    return ins, [anchors, anchors]


def _encode_forward(p, ins, aux, rt):
    from ..kernels.detection import box_encode_ref
    return box_encode_ref(*ins)


def triton_box_encode(p, ins, aux, rt):
    from ..kernels.detection import box_encode
    return box_encode(*ins)


register(OpDef(
    name="_contrib_box_encode",
    inputs=("samples", "matches", "anchors", "refs", "means", "stds"),
    outputs=("output0", "output1"), infer_shape=_encode_shape, forward=_encode_forward,
    kernel=triton_box_encode, gradient=_zero_grads,
    cases=(Case(((2, 3), (2, 3), (2, 3, 4), (2, 2, 4), (4,), (4,)), low=0.2, high=1.0,
                ints={1: 2}, grad=False),),
    doc="""Encode the boxes ``refs[b, matches[b, i]]`` as offsets from ``anchors[b, i]``.

    Inputs: ``samples`` (B, N) (> 0.5 marks a positive anchor), ``matches`` (B, N) indices
    into the M reference boxes ``refs`` (B, M, 4), ``anchors`` (B, N, 4) (both corner
    boxes), ``means`` and ``stds`` (4,). Outputs the targets
    ``((dx, dy, log(w_r / w_a), log(h_r / h_a)) - means) / stds`` (zero for negatives) and
    their mask, each (B, N, 4). The gradients are zero.

    Examples
    --------
    >>> import symgraph as mx
    >>> box = mx.nd.array([[[0, 0, 2, 2]]])
    >>> t, m = mx.nd.contrib.box_encode(mx.nd.array([[1]]), mx.nd.array([[0]]), box,
    ...                                 box * 2, mx.nd.zeros(4), mx.nd.ones(4))
    >>> t.asnumpy()
    array([[[0.5      , 0.5      , 0.6931472, 0.6931472]]], dtype=float32)
    """))


# ---------------------------------------------------------------- box_decode

def _decode_shape(p, shapes):
    data, anchors = shapes
    if data:
        if len(data) != 3:
            raise ShapeError(f"box_decode: data must have dim == 3, got shape {data}")
        _last_is_4("box_decode", "data", data, 3)
    if anchors:
        _last_is_4("box_decode", "anchors", anchors, 3)
    if not data:
        return None
    return [data, anchors or (1, data[1], 4)], [data]


def _stds(p) -> tuple:
    return (p.std0, p.std1, p.std2, p.std3)


def _decode_forward(p, ins, aux, rt):
    from ..kernels.detection import box_decode_ref
    return (box_decode_ref(ins[0], ins[1], _stds(p), p.clip, p.format),)


def triton_box_decode(p, ins, aux, rt):
    from ..kernels.detection import box_decode
    return (box_decode(ins[0], ins[1], _stds(p), p.clip, p.format),)


register(OpDef(
    name="_contrib_box_decode", inputs=("data", "anchors"), infer_shape=_decode_shape,
    forward=_decode_forward, kernel=triton_box_decode, gradient=_zero_grads,
    params=tuple(Param(f"std{i}", "float", 1.0, doc=f"Divisor of the {i}th encoded value.")
                 for i in range(4)) + (
        Param("clip", "float", -1.0, doc="If > 0, the log-scale offsets are capped to it."),
        Param("format", "str", "center", choices=_FORMAT, doc="Encoding of the anchors.")),
    cases=(Case(((2, 3, 4), (1, 3, 4)), {"std0": 0.1, "std2": 0.2, "clip": 0.3},
                low=0.2, high=1.0, grad=False),
           Case(((1, 2, 4), (1, 2, 4)), {"format": "corner"}, grad=False)),
    doc="""Decode offsets ``data`` (B, N, 4) from ``anchors`` (1, N, 4) into corner boxes.

    ``x = data[0] * std0 * w_a + x_a``, ``w = exp(min(data[2] * std2, clip)) * w_a`` (and
    likewise for y and h); the output is (x - w / 2, y - h / 2, x + w / 2, y + h / 2).
    The gradients are zero.

    Examples
    --------
    >>> import symgraph as mx
    >>> anchors = mx.nd.array([[[1, 1, 2, 2]]])
    >>> mx.nd.contrib.box_decode(mx.nd.zeros((1, 1, 4)), anchors).asnumpy()
    array([[[0., 0., 2., 2.]]], dtype=float32)
    """))


# ---------------------------------------------------------------- box_nms

def _nms_check(p, shape) -> None:
    width, want = shape[-1], 6 if p.id_index >= 0 else 5
    if width < want:
        raise ShapeError(f"box_nms: the last dimension must have at least {want} elements "
                         f"(score, 4 coordinates{', id' if want == 6 else ''}), got shape "
                         f"{tuple(shape)}")
    coords = range(p.coord_start, p.coord_start + 4)
    if p.coord_start < 0 or coords[-1] >= width:
        raise ShapeError(f"box_nms: coordinates {coords[0]}..{coords[-1]} out of range for "
                         f"shape {tuple(shape)}")
    for name in ("score_index", "id_index"):
        index = getattr(p, name)
        if name == "id_index" and index < 0:
            continue
        if not 0 <= index < width or index in coords:
            raise ShapeError(f"box_nms: {name}={index} out of range or on the coordinates "
                             f"{coords[0]}..{coords[-1]} for shape {tuple(shape)}")
    if p.id_index >= 0 and p.id_index == p.score_index:
        raise ShapeError(f"box_nms: id_index {p.id_index} conflicts with score_index")


def _nms_shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    if len(data) < 2:
        raise ShapeError(f"box_nms: input must have dim >= 2 (..., num_box, box_width), got "
                         f"shape {tuple(data)}")
    if data[-1]:
        _nms_check(p, data)
    return shapes, [data, tuple(data[:-1]) + (1,)]


def _nms_forward(p, ins, aux, rt):
    from ..kernels.detection import box_nms_ref
    return box_nms_ref(ins[0], p)


def triton_box_nms(p, ins, aux, rt):
    from ..kernels.detection import box_nms
    return box_nms(ins[0], p)


def _nms_backward_forward(p, ins, aux, rt):
    from ..kernels.detection import nms_backward_ref
    return (nms_backward_ref(ins[0], ins[1]),)


def triton_backward_box_nms(p, ins, aux, rt):
    from ..kernels.detection import nms_backward
    return (nms_backward(ins[0], ins[1]),)


_NMS_PARAMS = (
    Param("overlap_thresh", "float", 0.5, doc="IoU above which the lower score is dropped."),
    Param("valid_thresh", "float", 0.0, doc="Boxes with scores above it take part."),
    Param("topk", "int", -1, doc="Apply NMS to the topk boxes by score (-1: all)."),
    Param("coord_start", "int", 2, doc="Index of the first of the 4 coordinates."),
    Param("score_index", "int", 1, doc="Index of the score."),
    Param("id_index", "int", -1, doc="Index of the class id (-1: no classes)."),
    Param("background_id", "int", -1, doc="Class id left out of NMS."),
    Param("force_suppress", "bool", False,
          doc="Suppress across classes (otherwise only within one class id)."),
    Param("in_format", "str", "corner", choices=_FORMAT, doc="Input box encoding."),
    Param("out_format", "str", "corner", choices=_FORMAT, doc="Output box encoding."),
)

register(OpDef(
    name="_backward_contrib_box_nms", params=_NMS_PARAMS, hidden=True,
    inputs=("ograd", "record"),
    infer_shape=lambda p, s: (s, [s[0]]) if s[0] else None,
    forward=_nms_backward_forward, kernel=triton_backward_box_nms,
    doc="box_nms's gradient: output-gradient rows moved to the input rows they came from."))

register(OpDef(
    name="_contrib_box_nms", aliases=("_contrib_box_non_maximum_suppression",),
    params=_NMS_PARAMS, outputs=("output0", "output1"), num_visible=lambda p: 1,
    infer_shape=_nms_shape, forward=_nms_forward, kernel=triton_box_nms,
    gradient=lambda g, p, ins, outs, og: [g.op("_backward_contrib_box_nms", og[0], outs[1],
                                               **p)],
    cases=(Case(((7, 6),), {"id_index": 0, "overlap_thresh": 0.3}, low=0.0, high=3.0),
           Case(((2, 5, 6),), {"topk": 3, "force_suppress": True, "valid_thresh": 0.2},
                low=0.0, high=3.0),
           Case(((1, 6, 7),), {"coord_start": 0, "score_index": 5, "id_index": 4,
                                "in_format": "center", "out_format": "center",
                                "background_id": 1}, low=0.0, high=3.0),
           # MXNet routes gradient rows unconverted: no finite-difference check with a format
           # change
           Case(((2, 4, 6),), {"out_format": "center"}, low=0.0, high=3.0, grad=False)),
    doc="""Non-maximum suppression of boxes ``data`` (..., N, W).

    Each batch item's boxes with score > ``valid_thresh`` (and class id != ``background_id``)
    are sorted by descending score; walking the first ``topk``, a box overlapping a kept box
    of the same class (any class with ``force_suppress``) by IoU > ``overlap_thresh`` is
    dropped. The output has the kept rows first, then rows of -1; a second, hidden output
    records where each row came from (the gradient moves rows back along it).

    Examples
    --------
    >>> import symgraph as mx
    >>> x = mx.nd.array([[0, 0.5, 0, 0, 1, 1], [0, 0.9, 0, 0, 1, 1.1]])
    >>> mx.nd.contrib.box_nms(x, id_index=0).asnumpy()
    array([[ 0. ,  0.9,  0. ,  0. ,  1. ,  1.1],
           [-1. , -1. , -1. , -1. , -1. , -1. ]], dtype=float32)
    """))


# ---------------------------------------------------------------- bipartite_matching

def _matching_shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    if len(data) < 2:
        raise ShapeError(f"bipartite_matching: score matrix must have dim >= 2, got shape "
                         f"{tuple(data)}")
    return shapes, [tuple(data[:-1]), tuple(data[:-2]) + (data[-1],)]


def _matching_forward(p, ins, aux, rt):
    from ..kernels.detection import bipartite_matching_ref
    return bipartite_matching_ref(ins[0], p.threshold, p.is_ascend, p.topk)


def triton_bipartite_matching(p, ins, aux, rt):
    from ..kernels.detection import bipartite_matching
    return bipartite_matching(ins[0], p.threshold, p.is_ascend, p.topk)


register(OpDef(
    name="_contrib_bipartite_matching", outputs=("output0", "output1"),
    infer_shape=_matching_shape, forward=_matching_forward,
    kernel=triton_bipartite_matching, gradient=_zero_grads,
    params=(Param("is_ascend", "bool", False, doc="Lower scores are better."),
            Param("threshold", "float", doc="Scores must be above it (below if is_ascend)."),
            Param("topk", "int", -1, doc="Stop after more than topk matches (-1: no limit).")),
    cases=(Case(((3, 4),), {"threshold": 0.1}, grad=False),
           Case(((2, 4, 3),), {"threshold": 0.5, "is_ascend": True, "topk": 1}, grad=False)),
    doc="""Greedy bipartite matching of score matrices ``data`` (..., R, C).

    Pairs are taken best score first; a pair whose row and column are both free is matched
    while its score passes ``threshold``. Outputs the matched column of each row (..., R)
    and the matched row of each column (..., C), -1 where unmatched, in data's dtype.

    Examples
    --------
    >>> import symgraph as mx
    >>> s = mx.nd.array([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]])
    >>> rows, cols = mx.nd.contrib.bipartite_matching(s, threshold=1e-12)
    >>> rows.asnumpy(), cols.asnumpy()
    (array([ 1., -1.,  0.], dtype=float32), array([2., 0.], dtype=float32))
    """))
