"""GluonCV model-zoo architectures exported by MXNet 1.9.1 run in symgraph with MXNet's
outputs (``tests/fixtures/gluoncv_zoo``, recorded by its ``generate.py``; the full sweep
and ``docs/model_zoo.md`` come from ``tools/gluoncv_zoo``).

The fixtures hold MXNet's symbol JSON, the input and the outputs but no parameters: every
parameter is rebuilt here from its name and inferred shape by the formula MXNet's side
used (``gcvzoo_common.param_value``), then loaded through ``SymbolBlock.imports``.
"""
from __future__ import annotations

import gzip
import json
import pathlib
import zlib

import numpy as np
import pytest

import symgraph as mx
from tests import fixture_scripts

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "gluoncv_zoo"
check = fixture_scripts.load("gluoncv_zoo/check.py", root=ROOT / "tools")
common = check.common
RECORDS = json.loads((FIX / "models.json").read_text())

# name -> why symgraph does not match MXNet yet (strict: a fix makes the test fail until
# the entry goes)
KNOWN_FAILURES: dict[str, str] = {}  # architecture -> why it cannot match yet


def _fixture(name: str) -> tuple[str, dict]:
    with gzip.open(FIX / f"{name}-symbol.json.gz", "rt") as f:
        graph_json = f.read()
    with np.load(FIX / f"{name}.npz") as io:
        return graph_json, dict(io)


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_export_matches_mxnet(name, tmp_path):
    graph_json, io = _fixture(name)
    rec = check.check_model(mx, graph_json, io, workdir=str(tmp_path))
    if name in KNOWN_FAILURES and rec["status"] != "match":
        pytest.xfail(KNOWN_FAILURES[name])
    assert rec["missing"] == [], rec
    assert rec["status"] == "match", rec
    assert [list(io[f"out{i}"].shape) for i in range(len(rec["errors"]))] == \
        RECORDS[name]["outputs"]


def test_every_family_is_covered():
    families = {rec["family"] for rec in RECORDS.values()}
    assert {"classification", "detection", "segmentation", "pose", "action"} <= families
    assert all(common.family(name) == rec["family"] for name, rec in RECORDS.items())


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_recorded_input_is_the_formula(name):
    _, io = _fixture(name)
    for i, shape in enumerate(RECORDS[name]["inputs"]):
        np.testing.assert_array_equal(io[f"in{i}"], common.model_input(shape))
    assert sorted(k[len("const:"):] for k in io if k.startswith("const:")) == \
        sorted(RECORDS[name]["constants"])


def test_param_value_formula():
    name = "resnetv10_conv0_weight"
    value = common.param_value(name, (4, 3, 3, 3))
    rs = np.random.RandomState(zlib.crc32(name.encode()))
    np.testing.assert_array_equal(value, (rs.uniform(-1, 1, (4, 3, 3, 3)) *
                                          np.sqrt(3.0 / 27)).astype("float32"))
    assert value.dtype == np.float32
    var = common.param_value("bn0_running_var", (64,))
    assert var.min() >= 0.5 and var.max() <= 1.0
    gamma = common.param_value("bn0_gamma", (64,))
    assert np.all(np.abs(gamma - 1) <= 0.1)
    assert not np.array_equal(common.param_value("a_bias", (8,)),
                              common.param_value("b_bias", (8,)))


def test_compare_tolerances():
    want = np.array([1000.0, 1.0, np.inf, np.nan])
    assert common.compare(want + [0.5, 0.5, 0, 0], want)[0]  # within 1e-3 of the largest
    assert not common.compare(want + [5.0, 0, 0, 0], want)[0]
    assert common.compare(np.zeros((2, 3)), np.zeros((3, 2))) == (False, float("inf"))


def test_missing_ops_are_named():
    graph = {"nodes": [{"op": "null"}, {"op": "Convolution"}, {"op": "_no_such_op_"}]}
    assert check.missing_ops(graph) == ["_no_such_op_"]


def test_detections_compare_up_to_the_order_of_ties():
    ids = np.array([[[1.0], [2.0], [0.0]]])
    scores = np.array([[[0.9], [0.9], [0.5]]])
    boxes = np.arange(12, dtype=float).reshape(1, 3, 4)
    swap = [1, 0, 2]
    assert check._same_detections([ids[:, swap], scores[:, swap], boxes[:, swap]],
                                   [ids, scores, boxes])
    moved = boxes.copy()
    moved[0, 0, 0] += 5
    assert not check._same_detections([ids, scores, moved], [ids, scores, boxes])
    assert not check._same_detections([ids], [ids])


def test_detections_tied_at_the_last_kept_score_may_differ():
    ids = np.array([[[3.0], [1.0], [2.0]]])
    scores = np.array([[[0.9], [0.5], [0.5]]])
    boxes = np.arange(12, dtype=float).reshape(1, 3, 4)
    other = boxes.copy()
    other[0, 2] += 7  # another of the candidates tied at 0.5
    assert "tied at the lowest kept score" in \
        check._same_detections([ids, scores, other], [ids, scores, boxes])
    above = boxes.copy()
    above[0, 0] += 7  # the detection above the tie must agree
    assert check._same_detections([ids, scores, above], [ids, scores, boxes]) is None


def test_rounding_verdict_needs_symgraph_as_close_to_float64_as_mxnet():
    exact = [np.array([1.0, 2.0, 3.0])]
    mxnet_out = [np.array([1.0, 2.0, 3.06])]
    assert "float32 rounding" in check._rounding_verdict(exact, [np.array([1.05, 2, 3])],
                                                         mxnet_out)
    assert check._rounding_verdict(exact, [np.array([1.3, 2, 3])], mxnet_out) is None
    assert check._rounding_verdict(None, [np.array([1.0])], mxnet_out) is None


def test_detections_pair_up_when_noise_reorders_near_equal_scores():
    ids = np.array([[[2.0], [2.0], [2.0]]])
    want_scores = np.array([[[0.07550], [0.07549], [0.5]]])
    got_scores = np.array([[[0.07549], [0.07550], [0.5]]])  # float32 noise flips the order
    boxes = np.array([[[0, 83, 0, 83.4], [0, 146, 0, 146.1], [1, 2, 3, 4]]])
    got_boxes = boxes[:, [1, 0, 2]]
    assert check._same_detections([ids, got_scores, got_boxes], [ids, want_scores, boxes])
    wrong = got_boxes.copy()
    wrong[0, 0, 1] += 20  # a box that is not there
    assert check._same_detections([ids, got_scores, wrong], [ids, want_scores, boxes]) is None


def test_tied_scores_may_differ_in_the_last_bits():
    ids = np.array([[[3.0], [1.0], [2.0]]])
    scores = np.array([[[0.9], [0.5], [0.5]]])
    boxes = np.arange(12, dtype=float).reshape(1, 3, 4)
    other = boxes.copy()
    other[0, 2] += 7
    ulp = scores.copy()
    ulp[0, 1:] = 0.5 * (1 + 3e-16)  # the same tie, summed in another order
    assert "tied at the lowest kept score" in \
        check._same_detections([ids, ulp, other], [ids, scores, boxes])
    apart = scores.copy()
    apart[0, 1:] = 0.5001  # not a tie any more
    assert check._same_detections([ids, apart, other], [ids, scores, boxes]) is None


def test_float64_verdict_needs_mxnet_float64_outputs_that_agree():
    exact = [np.array([1.0, 2.0, 3.0])]
    rec = {"status": "mismatch", "errors": [0.4]}
    assert check._float64_verdict(exact, {"out0": np.array([1.0, 2.0, 3.0])}, rec) \
        .startswith("float64: ")
    assert check._float64_verdict(exact, {"out0": np.array([1.0, 2.5, 3.0])}, rec) is None
    assert check._float64_verdict(exact, None, rec) is None
    assert check._float64_verdict(None, {"out0": exact[0]}, rec) is None


def _roialign_graph() -> str:
    data, rois = mx.sym.Variable("data"), mx.sym.Variable("rois")
    out = mx.sym.contrib.ROIAlign(data, rois, pooled_size=(2, 2), spatial_scale=0.5,
                                  sample_ratio=2)
    return mx.sym.argsort(mx.sym.sum(out, axis=(2, 3)), axis=1).tojson()


def test_float64_rewrites_keep_the_computation():
    """``widen_json`` makes every float32 dtype float64 (argsort's default too);
    ``zero_skipped_rois`` gives the rows of rois with batch index -1 as zeros, which
    symgraph's ROIAlign writes already: the rewritten graph computes the same."""
    graph = _roialign_graph()
    wide = common.widen_json(graph)
    assert json.loads(wide)["nodes"][-1]["attrs"]["dtype"] == "float64"
    rng = np.random.RandomState(0)
    args = {"data": mx.nd.array(rng.uniform(-1, 1, (2, 3, 6, 6)), dtype="float64"),
            "rois": mx.nd.array([[0, 1, 1, 9, 8], [-1, 0, 0, 4, 4], [1, 2, 0, 7, 11]],
                                dtype="float64")}
    outs = []
    for text in (wide, common.zero_skipped_rois(wide)):
        sym = mx.sym.load_json(text)
        assert sorted(sym.list_arguments()) == ["data", "rois"]
        outs.append(sym.bind(mx.cpu(), dict(args)).forward()[0].asnumpy())
    assert outs[0].dtype == np.float64
    np.testing.assert_array_equal(outs[0], outs[1])
    roi_nodes = [n for n in json.loads(common.zero_skipped_rois(graph))["nodes"]
                 if n["op"] == "_contrib_ROIAlign"]
    assert len(roi_nodes) == 1 and roi_nodes[0]["attrs"]["spatial_scale"] == "0.5"
