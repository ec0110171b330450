"""ONNX export of the fused RNN operator and the vision ops (adaptive pooling, resizing,
upsampling, ROI pooling/align, box_nms, box_decode): ONNX Runtime gives symgraph's outputs."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
import symgraph.onnx.ops.rnn
import symgraph.onnx.ops.vision
from symgraph.export.graph import ExportError
from tests.onnx_check import OPSETS, check_onnx, run_onnx, run_symgraph

RNG = np.random.default_rng(21)
D, R = mx.sym.Variable("data"), mx.sym.Variable("rois")


def _f32(*shape, low=None, high=None):
    if low is None:
        return RNG.standard_normal(shape).astype(np.float32)
    return RNG.uniform(low, high, shape).astype(np.float32)


def _boxes(shape, classes=3):
    """box_nms rows [id, score, x1, y1, x2, y2]: distinct scores, many overlaps."""
    lead, count = shape[:-1], int(np.prod(shape[:-1]))
    x = np.zeros(shape, np.float32)
    x[..., 0] = RNG.integers(0, classes, lead)
    x[..., 1] = RNG.permutation(count).reshape(lead) / count + 1e-3
    xy, wh = RNG.uniform(0, 10, lead + (2,)), RNG.uniform(1, 5, lead + (2,))
    x[..., 2:4], x[..., 4:6] = xy, xy + wh
    return x


# ---------------------------------------------------------------- RNN

RNN_CASES = [(mode, layers, bi, so) for mode in ("lstm", "gru", "rnn_tanh", "rnn_relu")
             for layers, bi, so in ((1, False, False), (2, True, True), (2, False, True))]


def _rnn(mode, layers, bi, so, steps=4, batch=3, width=6, as_input=False):
    sym = mx.sym.RNN(D, state_size=5, num_layers=layers, mode=mode, bidirectional=bi,
                     state_outputs=so, name="rnn")
    shapes = sym.infer_shape(data=(steps, batch, width))[0]
    inputs, params = {}, {}
    for name, shape in zip(sym.list_arguments(), shapes):
        if name == "rnn_parameters" and not as_input:
            params[name] = _f32(*shape) * 0.5
        else:
            inputs[name] = _f32(*shape) * (0.5 if name == "rnn_parameters" else 1)
    return sym, inputs, params


@pytest.mark.parametrize("mode,layers,bi,so", RNN_CASES)
def test_rnn(mode, layers, bi, so, tmp_path):
    sym, inputs, params = _rnn(mode, layers, bi, so)
    check_onnx(sym, inputs, tmp_path, params=params, opsets=(12, 21))


# the flat parameters as a graph input: W, R, B gathered from it at run time
RNN_INPUT_CASES = [("lstm", 2, True, True), ("gru", 2, False, True), ("rnn_tanh", 1, True, False),
                   ("rnn_relu", 2, True, True), ("lstm", 1, False, False)]


@pytest.mark.parametrize("mode,layers,bi,so", RNN_INPUT_CASES)
def test_rnn_parameters_input(mode, layers, bi, so, tmp_path):
    sym, inputs, params = _rnn(mode, layers, bi, so, as_input=True)
    assert not params
    check_onnx(sym, inputs, tmp_path, opsets=(12, 13, 21))


def test_rnn_dynamic_other_batch(tmp_path):
    sym, inputs, params = _rnn("lstm", 2, True, True)
    check_onnx(sym, inputs, tmp_path, params=params, opsets=(13,), dynamic=True)
    other = _rnn("lstm", 2, True, True, steps=6, batch=5)[1]
    want = run_symgraph(sym, other, params)
    for g, w in zip(run_onnx(str(tmp_path / "model13.onnx"), other), want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_rnn_computed_parameters(tmp_path):
    """Parameters computed in the graph (here: a parameter times 2) are gathered too."""
    w = mx.sym.Variable("w")
    sym = mx.sym.RNN(D, w * 2, mx.sym.Variable("h"), state_size=5, num_layers=1, mode="gru")
    params = {"w": _f32(195) * 0.3}
    check_onnx(sym, {"data": _f32(4, 3, 6), "h": _f32(1, 3, 5)}, tmp_path, params=params,
               opsets=(12, 21), dynamic=True)


def test_rnn_refusals(tmp_path):
    sym = mx.sym.RNN(D, state_size=5, num_layers=1, mode="lstm", projection_size=3, name="rnn")
    shapes = dict(zip(sym.list_arguments(), sym.infer_shape(data=(4, 3, 6))[0]))
    params = {"rnn_parameters": mx.nd.zeros(shapes["rnn_parameters"])}
    with pytest.raises(ExportError, match="projection_size"):
        mx.onnx.export_model(sym, params, [(4, 3, 6), shapes["rnn_state"],
                                           shapes["rnn_state_cell"]], np.float32,
                             str(tmp_path / "p.onnx"))


# ---------------------------------------------------------------- vision

FEAT = _f32(2, 3, 12, 10)
ROIS = np.array([[0, 1.2, 2.3, 8.7, 9.1], [1, 0, 0, 15.5, 19], [1, 3.3, 4.4, 5.1, 5.2],
                 [0, -2, 1, 4, 30]], np.float32)
# batch index < 0 (after truncation toward zero): the roi is skipped, its output zeros
ROIS_SKIP = np.array([[-1, 0, 0, 0, 0], [0, 1.2, 2.3, 8.7, 9.1], [-2, 1, 1, 5, 5],
                      [-0.5, 1, 2, 6, 7], [1, 0, 0, 15.5, 19]], np.float32)


def _corner_boxes(*lead):
    box = _f32(*lead, 4, low=0.1, high=1)
    box[..., 2:] = box[..., :2] + _f32(*lead, 2, low=0.2, high=1)
    return box


ENCODE_IN = {"samples": _f32(2, 5, low=0, high=1),
             "matches": RNG.integers(-1, 4, (2, 5)).astype(np.float32),
             "anchors": _corner_boxes(2, 5), "refs": _corner_boxes(2, 3),
             "means": _f32(4, low=0, high=0.1), "stds": _f32(4, low=0.1, high=0.3)}
# the anchors depend on the input's height and width: a fixed-shape export only
STATIC_ONLY = {"multibox_prior"}
NMS = mx.sym.contrib.box_nms
RESIZE = mx.sym.contrib.BilinearResize2D
ADAPT = mx.sym.contrib.AdaptiveAvgPooling2D

VISION_CASES = [
    ("nms_ssd", NMS(D, id_index=0, score_index=1, coord_start=2, topk=100, overlap_thresh=0.45),
     {"data": _boxes((1, 200, 6))}),
    ("nms_force", NMS(D, id_index=0, force_suppress=True, valid_thresh=0.3, overlap_thresh=0.3),
     {"data": _boxes((2, 30, 6))}),
    ("nms_noid_4d", NMS(D, overlap_thresh=0.3, out_format="center"),
     {"data": _boxes((2, 3, 25, 6))}),
    ("nms_bg_center", NMS(D, id_index=0, background_id=1, in_format="center", topk=7),
     {"data": _boxes((3, 20, 6))}),
    ("nms_layout", NMS(D, coord_start=0, score_index=5, id_index=4, topk=9),
     {"data": _boxes((2, 15, 7))[..., [2, 3, 4, 5, 0, 1, 1]]}),
    ("nms_f64_center", NMS(D, id_index=0, in_format="center", out_format="corner", topk=12),
     {"data": _boxes((2, 25, 6)).astype(np.float64)}),
    ("adaptive_uneven", ADAPT(D, output_size=(3, 2)), {"data": _f32(2, 3, 7, 5)}),
    ("adaptive_even", ADAPT(D, output_size=2), {"data": _f32(2, 3, 6, 4)}),
    ("adaptive_global", ADAPT(D), {"data": _f32(2, 3, 6, 4)}),
    ("resize_align", RESIZE(D, height=7, width=3), {"data": _f32(2, 3, 4, 5)}),
    ("resize_half_pixel", RESIZE(D, height=3, width=9, align_corners=False),
     {"data": _f32(1, 2, 5, 4)}),
    ("resize_one_align", RESIZE(D, height=1, width=3), {"data": _f32(1, 2, 5, 4)}),
    ("resize_one_one", RESIZE(D, height=1, width=1, align_corners=False),
     {"data": _f32(1, 2, 5, 4)}),
    ("resize_scale", RESIZE(D, scale_height=1.5, scale_width=0.6), {"data": _f32(1, 2, 3, 5)}),
    ("resize_odd_scale", RESIZE(D, scale_height=2.0, scale_width=0.5, mode="odd_scale"),
     {"data": _f32(1, 1, 5, 3)}),
    ("resize_like", RESIZE(D, mx.sym.Variable("like"), mode="like"),
     {"data": _f32(1, 2, 3, 4), "like": _f32(1, 1, 6, 2)}),
    ("resize_to_odd_up", RESIZE(D, mode="to_odd_up"), {"data": _f32(1, 1, 3, 4)}),
    ("resize_to_even_down", RESIZE(D, mode="to_even_down"), {"data": _f32(1, 1, 5, 4)}),
    ("upsampling_nearest", mx.sym.UpSampling(D, scale=2, sample_type="nearest"),
     {"data": _f32(2, 3, 4, 5)}),
    ("upsampling_nearest_sum", mx.sym.UpSampling(D, mx.sym.Variable("b"), scale=2, num_args=2,
                                                 sample_type="nearest", multi_input_mode="sum"),
     {"data": _f32(2, 3, 4, 4), "b": _f32(2, 3, 8, 8)}),
    ("upsampling_bilinear", mx.sym.UpSampling(D, mx.sym.Variable("w"), scale=3, num_filter=3,
                                              sample_type="bilinear"),
     {"data": _f32(2, 3, 4, 5), "w": _f32(3, 1, 5, 5)}),
    ("box_decode", mx.sym.contrib.box_decode(D, mx.sym.Variable("a"), std0=0.1, std2=0.2,
                                             clip=0.3),
     {"data": _f32(2, 3, 4, low=0.2, high=1), "a": _f32(1, 3, 4, low=0.2, high=1)}),
    ("box_decode_corner", mx.sym.contrib.box_decode(D, mx.sym.Variable("a"), format="corner"),
     {"data": _f32(2, 3, 4, low=0.2, high=1), "a": _f32(1, 3, 4, low=0.2, high=1)}),
    ("box_decode_f16", mx.sym.contrib.box_decode(D, mx.sym.Variable("a"), std1=0.3, clip=0.5),
     {"data": _f32(2, 3, 4, low=0.2, high=1).astype(np.float16),
      "a": _f32(1, 3, 4, low=0.2, high=1).astype(np.float16)}),
    ("box_decode_f64", mx.sym.contrib.box_decode(D, mx.sym.Variable("a"), std3=0.4, clip=0.2),
     {"data": _f32(2, 3, 4, low=0.2, high=1).astype(np.float64),
      "a": _f32(1, 3, 4, low=0.2, high=1).astype(np.float64)}),
    ("multibox_prior", mx.sym.contrib.MultiBoxPrior(D, sizes=(0.5, 0.2), ratios=(1, 2)),
     {"data": _f32(2, 3, 5, 4)}),
    ("box_encode", mx.sym.contrib.box_encode(*[mx.sym.Variable(k) for k in ENCODE_IN]),
     ENCODE_IN),
    ("roi_align", mx.sym.contrib.ROIAlign(D, R, pooled_size=(3, 2), spatial_scale=0.5,
                                          sample_ratio=2), {"data": FEAT, "rois": ROIS}),
    ("roi_align_adaptive", mx.sym.contrib.ROIAlign(D, R, pooled_size=(2, 3), spatial_scale=0.7),
     {"data": FEAT, "rois": ROIS}),
    ("roi_align_skipped", mx.sym.contrib.ROIAlign(D, R, pooled_size=(3, 2), spatial_scale=0.5,
                                                  sample_ratio=2),
     {"data": FEAT, "rois": ROIS_SKIP}),
    ("roi_pooling", mx.sym.ROIPooling(D, R, pooled_size=(3, 2), spatial_scale=0.5),
     {"data": FEAT, "rois": ROIS}),
]


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("name,sym,inputs", VISION_CASES, ids=[c[0] for c in VISION_CASES])
def test_vision(name, sym, inputs, dynamic, tmp_path):
    if dynamic and name in STATIC_ONLY:
        pytest.skip("refused in a dynamic export (test_refused)")
    # ONNX Runtime 1.32 has no RoiAlign-22 / MaxRoiPool-22 kernels (22 only adds bfloat16)
    opsets = [o for o in OPSETS if o <= 21] if name.startswith("roi_") else OPSETS
    check_onnx(sym, inputs, tmp_path, dynamic=dynamic, opsets=opsets)


def test_roi_align_aligned(tmp_path):
    sym = mx.sym.contrib.ROIAlign(D, R, pooled_size=(2, 3), spatial_scale=0.7, aligned=True)
    check_onnx(sym, {"data": FEAT, "rois": ROIS}, tmp_path, opsets=(16, 21))
    with pytest.raises(ExportError, match="opset 16"):
        mx.onnx.export_model(sym, {}, [FEAT.shape, ROIS.shape], np.float32,
                             str(tmp_path / "m.onnx"), opset_version=15)


def test_nms_suppresses():
    """The nms cases are not trivial: rows are dropped by overlap and by topk."""
    x = _boxes((1, 200, 6))
    out = run_symgraph(NMS(D, id_index=0, topk=100, overlap_thresh=0.45), {"data": x}, {})[0]
    assert 20 < (out[0, :, 0] >= 0).sum() < 100


DYNAMIC_OTHER = [
    ("nms", NMS(D, id_index=0, topk=50, overlap_thresh=0.45), _boxes((1, 80, 6)),
     _boxes((3, 120, 6))),
    ("adaptive", ADAPT(D, output_size=(3, 2)), _f32(2, 3, 6, 4), _f32(3, 3, 7, 9)),
    ("resize_scale", RESIZE(D, scale_height=1.5, scale_width=0.6), _f32(1, 2, 3, 5),
     _f32(2, 2, 6, 7)),
    ("upsampling", mx.sym.UpSampling(D, scale=2, sample_type="nearest"), _f32(1, 3, 4, 5),
     _f32(2, 3, 3, 2)),
]


@pytest.mark.parametrize("name,sym,first,second", DYNAMIC_OTHER,
                         ids=[c[0] for c in DYNAMIC_OTHER])
def test_dynamic_other_shape(name, sym, first, second, tmp_path):
    """A dynamic export run with another batch and spatial size than it was exported with."""
    path = str(tmp_path / "m.onnx")
    mx.onnx.export_model(sym, {}, [first.shape], np.float32, path, dynamic=True)
    want = run_symgraph(sym, {"data": second}, {})[0]
    np.testing.assert_allclose(run_onnx(path, {"data": second})[0], want, rtol=1e-4, atol=1e-5)


REFUSED = [
    ("position_sensitive", mx.sym.contrib.ROIAlign(D, R, pooled_size=(2, 2), spatial_scale=1.0,
                                                   position_sensitive=True),
     [(1, 8, 6, 6), (2, 5)], False),
    ("height and width", mx.sym.contrib.MultiBoxPrior(D, sizes=(0.5,)), [(1, 2, 5, 4)],
     True),
    ("pixel 0", RESIZE(D, height=1, width=3, align_corners=False), [(1, 2, 5, 4)], False),
    ("dynamic output size", RESIZE(D, mode="to_even_up", align_corners=False),
     [(1, 2, 5, 4)], True),
]


@pytest.mark.parametrize("match,sym,shapes,dynamic", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused(match, sym, shapes, dynamic, tmp_path):
    with pytest.raises(ExportError, match=match):
        mx.onnx.export_model(sym, {}, shapes, np.float32, str(tmp_path / "m.onnx"),
                             dynamic=dynamic)
