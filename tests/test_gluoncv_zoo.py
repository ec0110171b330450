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
