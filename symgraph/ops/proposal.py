"""Region proposals of Faster R-CNN's RPN: ``Proposal`` (one image) and ``MultiProposal``
(a batch).

Both decode the RPN's box offsets on shifted anchors, clip them to the image, drop small
boxes and padding cells (score -1), sort by foreground score and run NMS; the kernels are in
``kernels/proposal.py``. A second output holds the scores (visible with ``output_score``).
As in MXNet the gradients are zero.

>>> import symgraph as mx
>>> cls_prob = mx.nd.ones((1, 2, 2, 2))
>>> rois = mx.nd.contrib.Proposal(cls_prob, mx.nd.zeros((1, 4, 2, 2)),
...                               mx.nd.array([[32, 32, 1]]), scales=(1,), ratios=(1,),
...                               feature_stride=16, rpn_post_nms_top_n=2, rpn_min_size=1)
>>> rois.asnumpy()
array([[ 0.,  0.,  0., 15., 15.],
       [ 0., 16.,  0., 31., 15.]], dtype=float32)
"""
from __future__ import annotations

from ..attrs import Param
from ..base import AttrError, ShapeError
from .base import Case, OpDef, register


def _zero_grads(g, p, ins, outs, og):
    return [g.zeros(x) for x in ins]


def _check(p) -> None:
    if not p.scales or not p.ratios:
        raise AttrError(f"Proposal: scales and ratios must not be empty, got scales="
                        f"{p.scales} ratios={p.ratios}")
    if p.feature_stride < 1:
        raise AttrError(f"Proposal: feature_stride must be positive, got {p.feature_stride}")


def _shape_rule(op: str, per_image: bool):
    def rule(p, shapes):
        data = shapes[0]
        if not data:
            return None
        if len(data) != 4:
            raise ShapeError(f"{op}: cls_prob must be (batch, 2 * anchors, height, width), "
                             f"got shape {tuple(data)}")
        anchors = len(p.scales) * len(p.ratios)
        if data[1] and data[1] != 2 * anchors:
            raise ShapeError(f"{op}: cls_prob {tuple(data)} must have 2 * {anchors} channels "
                             f"(len(scales) * len(ratios) anchors, background and foreground)")
        if per_image and data[0] not in (0, 1):
            raise ShapeError(f"{op}: one image per call, got cls_prob {tuple(data)} (use "
                             "MultiProposal for a batch)")
        ins = [data, (data[0], data[1] * 2, data[2], data[3]), (data[0], 3)]
        rows = p.rpn_post_nms_top_n * (1 if per_image else data[0])
        return ins, [(rows, 5), (rows, 1)]
    return rule


def _forward(per_image: bool, triton: bool):
    def forward(p, ins, aux, rt):
        from ..kernels.proposal import multi_proposal, multi_proposal_ref
        return (multi_proposal if triton else multi_proposal_ref)(*ins, p)
    forward.__name__ = f"{'triton_' if triton else ''}{'proposal' if per_image else 'multi'}"
    return forward


_PARAMS = (
    Param("rpn_pre_nms_top_n", "int", 6000, doc="Best boxes kept before NMS (<= 0: all)."),
    Param("rpn_post_nms_top_n", "int", 300, doc="Boxes kept after NMS (rows per image)."),
    Param("threshold", "float", 0.7, doc="NMS IoU above which the lower score is dropped."),
    Param("rpn_min_size", "int", 16, doc="Smallest box side, times the image scale."),
    Param("scales", "floats", (4.0, 8.0, 16.0, 32.0), doc="Anchor scales."),
    Param("ratios", "floats", (0.5, 1.0, 2.0), doc="Anchor aspect ratios."),
    Param("feature_stride", "int", 16, doc="Image pixels per feature-map cell."),
    Param("output_score", "bool", False, doc="Also return the scores."),
    Param("iou_loss", "bool", False, doc="Offsets are corner deltas (IoU loss) instead."),
)

_SMALL = {"scales": (1.0, 2.0), "ratios": (0.5, 2.0), "feature_stride": 4,
          "rpn_pre_nms_top_n": 20, "rpn_post_nms_top_n": 7, "rpn_min_size": 2,
          "threshold": 0.5}

_DOC = """Region proposals from RPN outputs: ``cls_prob`` (B, 2A, H, W) (background then
    foreground scores of the A = len(scales) * len(ratios) anchors), ``bbox_pred``
    (B, 4A, H, W) and ``im_info`` (B, 3) rows (height, width, scale).

    The base anchors (ratio-major, of side ``feature_stride`` times each scale) are shifted
    over the map and moved by the offsets, clipped to the image; boxes with a side below
    ``rpn_min_size * scale`` and cells beyond the image get score -1. The
    ``rpn_pre_nms_top_n`` best by score go through NMS (IoU > ``threshold``) until
    ``rpn_post_nms_top_n`` are kept, repeated cyclically to fill the rows. Outputs the
    rois {rows} rows ``[image, x1, y1, x2, y2]`` and (``output_score``) their scores.
    The gradients are zero.

    Examples
    --------
    >>> import symgraph as mx
    >>> x = mx.sym.Variable('x')
    >>> mx.sym.contrib.{name}(x, rpn_post_nms_top_n=10, output_score=True).infer_shape(
    ...     x=({batch}, 24, 5, 5))[1]
    {shapes}
    """

register(OpDef(
    name="_contrib_Proposal", inputs=("cls_prob", "bbox_pred", "im_info"),
    outputs=("output", "score"), num_visible=lambda p: 2 if p.output_score else 1,
    infer_shape=_shape_rule("Proposal", True), forward=_forward(True, False),
    kernel=_forward(True, True), gradient=_zero_grads, check=_check, params=_PARAMS,
    cases=(Case(((1, 8, 3, 4), (1, 16, 3, 4), (1, 3)), _SMALL, ints={2: 13}, grad=False),
           Case(((1, 8, 2, 3), (1, 16, 2, 3), (1, 3)), dict(_SMALL, iou_loss=True,
                                                             output_score=True),
                low=-1.0, high=1.0, ints={2: 9}, grad=False)),
    doc=_DOC.replace("{rows}", "(rpn_post_nms_top_n, 5)").replace(
        "{name}", "Proposal").replace("{batch}", "1").replace("{shapes}",
                                                           "[(10, 5), (10, 1)]")))

register(OpDef(
    name="_contrib_MultiProposal", inputs=("cls_prob", "bbox_pred", "im_info"),
    outputs=("output", "score"), num_visible=lambda p: 2 if p.output_score else 1,
    infer_shape=_shape_rule("MultiProposal", False), forward=_forward(False, False),
    kernel=_forward(False, True), gradient=_zero_grads, check=_check, params=_PARAMS,
    cases=(Case(((2, 8, 3, 4), (2, 16, 3, 4), (2, 3)), _SMALL, ints={2: 14}, grad=False),),
    doc=_DOC.replace("{rows}", "(B * rpn_post_nms_top_n, 5)").replace(
        "{name}", "MultiProposal").replace("{batch}", "2").replace(
        "{shapes}", "[(20, 5), (20, 1)]")))
