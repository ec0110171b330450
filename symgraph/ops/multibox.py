"""MultiBox (SSD) operators: ``MultiBoxPrior`` (the anchor boxes of a feature map),
``MultiBoxTarget`` (training targets of the anchors) and ``MultiBoxDetection`` (decoded,
suppressed detections).

``MultiBoxPrior`` reads only its input's spatial size; its Triton kernel writes each anchor
from its flat index (fp32 arithmetic, as MXNet). ``MultiBoxTarget`` matches anchors to
labels (greedy best pairs, then by threshold) and mines hard negatives by background
probability; ``MultiBoxDetection`` decodes boxes and runs MXNet's NMS. Their kernels are in
``kernels/multibox.py``; as in MXNet, all three have zero gradients.

>>> import symgraph as mx
>>> anchors = mx.nd.contrib.MultiBoxPrior(mx.nd.zeros((1, 3, 2, 2)), sizes=(0.5,))
>>> anchors.shape
(1, 4, 4)
>>> anchors[0, 0].asnumpy()
array([0. , 0. , 0.5, 0.5], dtype=float32)
"""
from __future__ import annotations

from ..attrs import Param
from ..base import AttrError, ShapeError
from .base import Case, OpDef, register


def _zero_grads(g, p, ins, outs, og):
    return [g.zeros(x) for x in ins]


def _ndim(op: str, what: str, shape, ndim: int) -> None:
    if len(shape) != ndim:
        raise ShapeError(f"{op}: {what} must have dim == {ndim}, got shape {tuple(shape)}")


def _variances_check(op: str):
    def check(p) -> None:
        if len(p.variances) != 4:
            raise AttrError(f"{op}: variances takes 4 values, got {p.variances}")
    return check


def _prior_check(p) -> None:
    if not p.sizes or not p.ratios:
        raise AttrError("MultiBoxPrior: sizes and ratios must not be empty")
    if len(p.steps) != 2 or len(p.offsets) != 2:
        raise AttrError(f"MultiBoxPrior: steps and offsets take 2 values (y, x), got "
                        f"steps={p.steps} offsets={p.offsets}")
    if not all(0.0 <= o <= 1.0 for o in p.offsets):
        raise AttrError(f"MultiBoxPrior: offsets must lie in [0, 1], got {p.offsets}")
    if p.steps[0] * p.steps[1] < 0:
        raise AttrError(f"MultiBoxPrior: must specify both step_y and step_x, got {p.steps}")


def _prior_shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    if len(data) < 4:
        raise ShapeError(f"MultiBoxPrior: input data should be 4D (batch, channel, y, x), got "
                         f"shape {tuple(data)}")
    if not data[2] or not data[3]:
        return None
    return shapes, [(1, data[2] * data[3] * (len(p.sizes) + len(p.ratios) - 1), 4)]


def _args(p) -> dict:
    return {"sizes": p.sizes, "ratios": p.ratios, "clip": p.clip, "steps": p.steps,
            "offsets": p.offsets}


def _prior_forward(p, ins, aux, rt):
    from ..kernels.multibox import multibox_prior_ref
    return (multibox_prior_ref(ins[0], **_args(p)),)


def triton_multibox_prior(p, ins, aux, rt):
    from ..kernels.multibox import multibox_prior
    return (multibox_prior(ins[0], **_args(p)),)


register(OpDef(
    name="_contrib_MultiBoxPrior", infer_shape=_prior_shape, forward=_prior_forward,
    kernel=triton_multibox_prior, check=_prior_check,
    gradient=lambda g, p, ins, outs, og: [g.zeros(ins[0])],
    params=(Param("sizes", "floats", (1.0,), doc="Anchor sizes (fractions of the image)."),
            Param("ratios", "floats", (1.0,), doc="Anchor aspect ratios."),
            Param("clip", "bool", False, doc="Clip the boxes to [0, 1]."),
            Param("steps", "floats", (-1.0, -1.0),
                  doc="Anchor step (y, x); -1 for 1 / feature size."),
            Param("offsets", "floats", (0.5, 0.5), doc="Centre offsets (y, x) in a cell.")),
    cases=(Case(((1, 2, 3, 4),), {"sizes": (0.5, 0.2), "ratios": (1, 2)}, grad=False),
           Case(((2, 1, 2, 3),), {"sizes": (0.7,), "ratios": (1, 0.5, 3), "clip": True,
                                  "steps": (0.3, 0.2), "offsets": (0.2, 0.9)}, grad=False)),
    doc="""Anchor boxes for every cell of NCHW ``data``: (1, H * W * A, 4) corner boxes.

    Per cell, ``A = len(sizes) + len(ratios) - 1`` anchors: the first ratio with every
    size, then the first size with every other ratio; width ``size * H / W * sqrt(ratio)``,
    height ``size / sqrt(ratio)``, centred at ``((x + offsets[1]) * steps[1], (y +
    offsets[0]) * steps[0])``. The gradient is zero.

    Examples
    --------
    >>> import symgraph as mx
    >>> x = mx.sym.Variable('x')
    >>> mx.sym.contrib.MultiBoxPrior(x, sizes=(0.5, 0.25), ratios=(1, 2)).infer_shape(
    ...     x=(1, 3, 4, 4))[1]
    [(1, 48, 4)]
    """))


# ---------------------------------------------------------------- MultiBoxTarget

def _target_shape(p, shapes):
    anchor, label, cls_pred = shapes
    if not anchor or not label or not cls_pred:
        return None
    op = "MultiBoxTarget"
    _ndim(op, "anchor", anchor, 3)
    _ndim(op, "label", label, 3)
    _ndim(op, "cls_pred", cls_pred, 3)
    if anchor[0] != 1 or anchor[2] != 4 or anchor[1] < 1:
        raise ShapeError(f"{op}: anchors are shared across the batch, (1, num_anchors, 4), "
                         f"got shape {tuple(anchor)}")
    if label[1] < 1 or label[2] < 5:
        raise ShapeError(f"{op}: label must be (batch, num_labels > 0, width >= 5), got shape "
                         f"{tuple(label)}")
    if cls_pred[2] != anchor[1]:
        raise ShapeError(f"{op}: number of anchors mismatch: cls_pred {tuple(cls_pred)}, "
                         f"anchor {tuple(anchor)}")
    loc = (label[0], anchor[1] * 4)
    return shapes, [loc, loc, (label[0], anchor[1])]


def _target_forward(p, ins, aux, rt):
    from ..kernels.multibox import multibox_target_ref
    return multibox_target_ref(*ins, p)


def triton_multibox_target(p, ins, aux, rt):
    from ..kernels.multibox import multibox_target
    return multibox_target(*ins, p)


def _target_label(shape, attrs=None, **kw):
    return Case(shape, attrs or {}, low=0.0, high=1.0, grad=False, **kw)


register(OpDef(
    name="_contrib_MultiBoxTarget", inputs=("anchor", "label", "cls_pred"),
    outputs=("loc_target", "loc_mask", "cls_target"), infer_shape=_target_shape,
    forward=_target_forward, kernel=triton_multibox_target, gradient=_zero_grads,
    check=_variances_check("MultiBoxTarget"),
    params=(Param("overlap_threshold", "float", 0.5,
                  doc="Anchor-label IoU above which an anchor is a positive match."),
            Param("ignore_label", "float", -1.0, doc="Class target of ignored anchors."),
            Param("negative_mining_ratio", "float", -1.0,
                  doc="Most negatives per positive (-1: no mining, every other anchor)."),
            Param("negative_mining_thresh", "float", 0.5,
                  doc="Anchors whose best IoU is below it may be mined as negatives."),
            Param("minimum_negative_samples", "int", 0,
                  doc="Minimum number of negatives (accepted, unused, as in MXNet)."),
            Param("variances", "floats", (0.1, 0.1, 0.2, 0.2),
                  doc="Divisors of the encoded box offsets.")),
    cases=(_target_label(((1, 5, 4), (2, 3, 5), (2, 3, 5))),
           _target_label(((1, 6, 4), (1, 2, 6), (1, 4, 6)),
                         {"negative_mining_ratio": 2, "negative_mining_thresh": 0.6,
                          "overlap_threshold": 0.2})),
    doc="""Training targets of SSD anchors ``anchor`` (1, N, 4) for labels ``label``
    (B, L, W) rows ``[class, xmin, ymin, xmax, ymax, ...]`` (a class of -1 ends the labels
    of an item) and class predictions ``cls_pred`` (B, C, N).

    Each label first takes its best anchor (greedily, best IoU first); every other anchor
    whose best IoU exceeds ``overlap_threshold`` is positive too. With
    ``negative_mining_ratio`` > 0 the negatives are the ``ratio * positives`` anchors of
    lowest background probability among those with IoU below ``negative_mining_thresh``;
    otherwise every other anchor is negative. Outputs ``loc_target`` (B, N * 4), the
    encoded offsets divided by ``variances``, ``loc_mask`` (B, N * 4) and ``cls_target``
    (B, N): label class + 1, 0 for negatives, ``ignore_label`` for the rest.

    Examples
    --------
    >>> import symgraph as mx
    >>> anchors = mx.nd.array([[[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]]])
    >>> label = mx.nd.array([[[1, 0.1, 0.1, 0.5, 0.6]]])
    >>> loc, mask, cls = mx.nd.contrib.MultiBoxTarget(anchors, label, mx.nd.zeros((1, 3, 2)))
    >>> cls.asnumpy(), mask.asnumpy()[0, :4]
    (array([[2., 0.]], dtype=float32), array([1., 1., 1., 1.], dtype=float32))
    """))


# ---------------------------------------------------------------- MultiBoxDetection

def _detection_shape(p, shapes):
    cls_prob, loc_pred, anchor = shapes
    if not cls_prob or not loc_pred or not anchor:
        return None
    op = "MultiBoxDetection"
    _ndim(op, "cls_prob", cls_prob, 3)
    _ndim(op, "loc_pred", loc_pred, 2)
    _ndim(op, "anchor", anchor, 3)
    if cls_prob[2] != anchor[1] or anchor[1] < 1 or anchor[2] != 4:
        raise ShapeError(f"{op}: number of anchors mismatch: cls_prob {tuple(cls_prob)}, "
                         f"anchor {tuple(anchor)} (1, num_anchors > 0, 4)")
    if cls_prob[2] * 4 != loc_pred[1]:
        raise ShapeError(f"{op}: loc_pred {tuple(loc_pred)} must hold 4 values per anchor of "
                         f"cls_prob {tuple(cls_prob)}")
    return shapes, [(cls_prob[0], anchor[1], 6)]


def _detection_forward(p, ins, aux, rt):
    from ..kernels.multibox import multibox_detection_ref
    return (multibox_detection_ref(*ins, p),)


def triton_multibox_detection(p, ins, aux, rt):
    from ..kernels.multibox import multibox_detection
    return (multibox_detection(*ins, p),)


register(OpDef(
    name="_contrib_MultiBoxDetection", inputs=("cls_prob", "loc_pred", "anchor"),
    infer_shape=_detection_shape, forward=_detection_forward,
    kernel=triton_multibox_detection, gradient=_zero_grads,
    check=_variances_check("MultiBoxDetection"),
    params=(Param("clip", "bool", True, doc="Clip the boxes to [0, 1]."),
            Param("threshold", "float", 0.01, doc="Lowest score of a valid detection."),
            Param("background_id", "int", 0,
                  doc="Background class (accepted; class 0 is background, as in MXNet)."),
            Param("nms_threshold", "float", 0.5,
                  doc="IoU from which the lower score is suppressed (NMS off outside (0, 1])."),
            Param("force_suppress", "bool", False, doc="Suppress across classes."),
            Param("variances", "floats", (0.1, 0.1, 0.2, 0.2),
                  doc="Multipliers of the box offsets."),
            Param("nms_topk", "int", -1, doc="Keep the nms_topk best before NMS (-1: all).")),
    cases=(Case(((2, 3, 5), (2, 20), (1, 5, 4)), {"threshold": 0.2}, low=0.0, high=1.0,
                grad=False),
           Case(((1, 4, 6), (1, 24), (1, 6, 4)), {"force_suppress": True, "nms_topk": 4,
                                                  "clip": False, "nms_threshold": 0.1},
                low=0.0, high=1.0, grad=False)),
    doc="""Detections from SSD class probabilities ``cls_prob`` (B, C, N), box offsets
    ``loc_pred`` (B, N * 4) and anchors ``anchor`` (1, N, 4): (B, N, 6) rows
    ``[class, score, xmin, ymin, xmax, ymax]``.

    Each anchor takes its best non-background class (class 0 is background; the output
    class is one less); below ``threshold`` it is dropped. The valid rows come first; with
    NMS on, the ``nms_topk`` best are sorted by score and a row overlapping a better row of
    its class (any class with ``force_suppress``) by IoU >= ``nms_threshold`` gets class
    -1; the remaining rows are -1. The gradients are zero.

    Examples
    --------
    >>> import symgraph as mx
    >>> prob = mx.nd.array([[[0.2, 0.9], [0.8, 0.1]]])
    >>> anchors = mx.nd.array([[[0.1, 0.1, 0.3, 0.3], [0.5, 0.5, 0.6, 0.6]]])
    >>> out = mx.nd.contrib.MultiBoxDetection(prob, mx.nd.zeros((1, 8)), anchors, threshold=0.5)
    >>> out.asnumpy().round(2)
    array([[[ 0. ,  0.8,  0.1,  0.1,  0.3,  0.3],
            [-1. , -1. , -1. , -1. , -1. , -1. ]]], dtype=float32)
    """))
