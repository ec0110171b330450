"""Detection operators against MXNet 1.9.1 (fixtures from tests/fixtures/detection/generate.py):
box_iou, box_encode, box_decode, box_nms with its gradient, bipartite_matching, the
MultiBox ops, Proposal and MultiProposal; plus shape and parameter errors."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError
from symgraph.ops.base import OPS
from tests.fixture_scripts import load

HERE = Path(__file__).parent / "fixtures" / "detection"
GEN = load("detection/generate.py")
ARRAYS = np.load(HERE / "detection.npz")
META = json.loads((HERE / "detection.json").read_text())
CASES = {name: (op, attrs) for name, op, _, attrs in GEN.make_cases()}
REGISTERED = [pytest.param(name, op, n, id=name) for name, op, n in META
              if f"_contrib_{op}" in OPS]


def _inputs(name: str) -> list[np.ndarray]:
    return [ARRAYS[k] for k in sorted(k for k in ARRAYS.files if k.startswith(f"{name}/in"))]


@pytest.mark.parametrize("name,op,n_out", REGISTERED)
def test_forward_matches_mxnet(name, op, n_out):
    got = GEN.run(mx, op, _inputs(name), CASES[name][1])
    assert len(got) == n_out
    for j, g in enumerate(got):
        np.testing.assert_allclose(g, ARRAYS[f"{name}/out{j}"], rtol=1e-5, atol=1e-5,
                                   err_msg=f"{name} output {j}")


@pytest.mark.parametrize("name", GEN.GRADS)
def test_box_nms_gradient_matches_mxnet(name):
    op, attrs = CASES[name]
    got = GEN.grad(mx, op, _inputs(name), attrs, ARRAYS[f"{name}/head"])
    np.testing.assert_allclose(got, ARRAYS[f"{name}/grad"], rtol=1e-6, atol=1e-7)


def test_box_nms_hidden_output_and_alias():
    x = mx.sym.Variable("x")
    nms = mx.sym.contrib.box_nms(x, name="nms")
    assert nms.list_outputs() == ["nms_output0"]
    assert nms.infer_shape(x=(2, 5, 6))[1] == [(2, 5, 6)]
    data = mx.nd.array(ARRAYS["nms_class/in0"])
    np.testing.assert_array_equal(
        mx.nd.contrib.box_non_maximum_suppression(data, id_index=0).asnumpy(),
        mx.nd.contrib.box_nms(data, id_index=0).asnumpy())


@pytest.mark.parametrize("call,match", [
    (lambda: mx.nd.contrib.box_nms(mx.nd.zeros((3, 4))), "at least 5"),
    (lambda: mx.nd.contrib.box_nms(mx.nd.zeros((3, 6)), score_index=3), "score_index"),
    (lambda: mx.nd.contrib.box_nms(mx.nd.zeros((3, 6)), id_index=1), "id_index"),
    (lambda: mx.nd.contrib.box_iou(mx.nd.zeros((3, 5)), mx.nd.zeros((2, 4))), "must be 4"),
    (lambda: mx.nd.contrib.box_decode(mx.nd.zeros((3, 4)), mx.nd.zeros((1, 3, 4))), "dim == 3"),
    (lambda: mx.nd.contrib.bipartite_matching(mx.nd.zeros((3,)), threshold=0.1), "dim >= 2"),
    (lambda: mx.nd.contrib.box_nms(mx.nd.zeros((3, 6)), in_format="xywh"), "xywh"),
    (lambda: mx.nd.contrib.MultiBoxTarget(mx.nd.zeros((2, 5, 4)), mx.nd.zeros((2, 1, 5)),
                                          mx.nd.zeros((2, 3, 5))), "shared across the batch"),
    (lambda: mx.nd.contrib.MultiBoxTarget(mx.nd.zeros((1, 5, 4)), mx.nd.zeros((2, 1, 5)),
                                          mx.nd.zeros((2, 3, 4))), "anchors mismatch"),
    (lambda: mx.nd.contrib.MultiBoxDetection(mx.nd.zeros((1, 3, 5)), mx.nd.zeros((1, 16)),
                                             mx.nd.zeros((1, 5, 4))), "4 values per anchor"),
    (lambda: mx.nd.contrib.MultiBoxDetection(mx.nd.zeros((1, 3, 5)), mx.nd.zeros((1, 20)),
                                             mx.nd.zeros((1, 5, 4)), variances=(1, 2)),
     "variances"),
    (lambda: mx.nd.contrib.Proposal(mx.nd.zeros((2, 24, 3, 3)), mx.nd.zeros((2, 48, 3, 3)),
                                    mx.nd.zeros((2, 3))), "one image per call"),
    (lambda: mx.nd.contrib.MultiProposal(mx.nd.zeros((2, 8, 3, 3)), mx.nd.zeros((2, 16, 3, 3)),
                                         mx.nd.zeros((2, 3))), "2 \\* 12 channels"),
])
def test_errors_name_op_and_shape(call, match):
    with pytest.raises(MXNetError, match=match):
        call()


def test_proposal_outputs_and_zero_gradient():
    """Proposal's score output is hidden unless output_score (MXNet's NumVisibleOutputs);
    MultiProposal's gradient is zero (MXNet test_operator.py::test_multi_proposal_op)."""
    x = mx.sym.Variable("x")
    assert mx.sym.contrib.Proposal(x, name="p").list_outputs() == ["p_output"]
    both = mx.sym.contrib.MultiProposal(x, name="p", output_score=True,
                                        rpn_post_nms_top_n=4)
    assert both.list_outputs() == ["p_output", "p_score"]
    assert both.infer_shape(x=(3, 24, 2, 2))[1] == [(12, 5), (12, 1)]
    name = "multi_proposal"
    data = [mx.nd.array(v) for v in _inputs(name)]
    for v in data:
        v.attach_grad()
    with mx.autograd.record():
        out = mx.nd.contrib.MultiProposal(*data, **dict(CASES[name][1], output_score=False))
    out.backward(mx.nd.ones(out.shape))
    for v in data:
        assert not v.grad.asnumpy().any()


def test_roi_align_gradient_with_every_roi_skipped_is_zero():
    """Regression (GluonCV's Faster R-CNN FPN through the PyTorch export): rois with a
    negative batch index are skipped; when all are, the data gradient is zero, not an
    autograd error."""
    sym = mx.sym.contrib.ROIAlign(mx.sym.var("d"), mx.sym.var("r"), pooled_size=(2, 2),
                                  spatial_scale=1.0)
    exe = sym.simple_bind(mx.cpu(), d=(1, 2, 5, 5), r=(1, 5))
    exe.forward(is_train=True, d=np.ones((1, 2, 5, 5), np.float32),
                r=np.array([[-1.0, 0, 0, 2, 2]], np.float32))
    exe.backward([mx.nd.ones((1, 2, 2, 2))])
    assert exe.grad_dict["d"].asnumpy().tolist() == np.zeros((1, 2, 5, 5)).tolist()
