"""Model-zoo architectures through both exports (``tools/export_zoo/sweep.py`` runs all of
them and writes ``docs/export_zoo.md``; CI runs two small ones without inductor)."""
from __future__ import annotations

import pathlib

import pytest

import symgraph as mx
from tests import fixture_scripts

pytest.importorskip("onnxruntime")
sweep = fixture_scripts.load("export_zoo/sweep.py",
                             root=pathlib.Path(__file__).resolve().parents[1] / "tools")


@pytest.mark.parametrize("name", ["mobilenet0.25", "resnet18_v1"])
def test_zoo_architecture_exports_match(name):
    rec = sweep.check_model(mx, name, compile_=None)
    assert rec["status"] == "match", rec


def _detector():
    """A tiny detector head: scores and boxes from a dense layer, then box_nms."""
    import numpy as np
    rows = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=6 * 12, name="head")
    rows = mx.sym.reshape(mx.sym.sigmoid(rows) * 10, shape=(0, 12, 6))
    sym = mx.sym.contrib.box_nms(rows, id_index=0, score_index=1, coord_start=2,
                                 overlap_thresh=0.3, topk=8)
    rng = np.random.RandomState(3)
    args = {"head_weight": mx.nd.array(rng.uniform(-1, 1, (72, 5))),
            "head_bias": mx.nd.array(rng.uniform(-1, 1, 72))}
    return sym, args, {"data": rng.uniform(-1, 1, (2, 5)).astype(np.float32)}


def test_cut_verdict_feeds_the_discrete_ops():
    """The verdict for a flipped choice runs ONNX Runtime with box_nms's input fed from the
    executor, and checks the stretch before it too: equal outputs give a note, wrong
    reference outputs none."""
    sym, args, inputs = _detector()
    cut_json, names, entries = sweep._cut_graph(sym.tojson())
    cut = mx.sym.load_json(cut_json)
    assert names and names[0] in cut.list_arguments() and len(cut.list_outputs()) == 2
    want = [o.asnumpy() for o in sym.bind(mx.cpu(), {**args, "data": mx.nd.array(
        inputs["data"])}).forward()]
    err, note = sweep.cut_verdict(mx, sym, args, {}, inputs, want)
    assert err <= sweep.TOL and "_contrib_box_nms" in note
    assert sweep.cut_verdict(mx, sym, args, {}, inputs, [w + 1 for w in want]) is None
    assert sweep.conditioning(mx, sym, args, {}, inputs) is None  # float32 is fine here


def test_training_falls_back_to_float32_only_with_frozen_batchnorm(monkeypatch):
    """Training is compared in float64, except where float64 would not fit and no
    BatchNorm uses batch statistics (the C4 R-CNNs): then in float32, and the record says
    so."""
    import numpy as np
    data = mx.sym.var("data")
    rng = np.random.RandomState(0)
    inputs = {"data": rng.uniform(-1, 1, (2, 3)).astype(np.float32)}
    args = {"fc_weight": mx.nd.array(rng.uniform(-1, 1, (4, 3))),
            "fc_bias": mx.nd.array(rng.uniform(-1, 1, 4)),
            "bn_gamma": mx.nd.ones(4), "bn_beta": mx.nd.zeros(4)}
    aux = {"bn_moving_mean": mx.nd.zeros(4), "bn_moving_var": mx.nd.ones(4)}
    fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    frozen = mx.sym.BatchNorm(fc, use_global_stats=True, name="bn")
    batch = mx.sym.BatchNorm(fc, name="bn")
    assert sweep._float64_bytes(frozen, inputs) == 8 * (6 + 12 + 4 + 8 + 4 + 4 + 4 + 4 + 8)
    assert not sweep._train_in_float32(mx, frozen, inputs)  # fits: float64
    monkeypatch.setattr(sweep, "FLOAT64_TRAIN_BYTES", 0)
    assert sweep._train_in_float32(mx, frozen, inputs)
    assert not sweep._train_in_float32(mx, batch, inputs)  # batch statistics: float64 always
    rec = sweep.check_all(mx, frozen, args, aux, inputs, None, {})
    assert rec["status"] == "match" and rec["train_dtype"] == "float32", rec
    rec = sweep.check_all(mx, batch, args, aux, inputs, None, {})
    assert rec["status"] == "match" and rec["train_dtype"] == "float64", rec


def test_conditioning_looks_behind_a_saturating_op():
    """An ill-conditioned value upstream of the first discrete op is found even when a clip
    hides it from that op's input (faster_rcnn_fpn_syncbn_resnest269: RPN box deltas of
    1e7 clipped to the image): ``(1e8 * x0 + x1) - 1e8`` loses x1 in float32."""
    import numpy as np
    data = mx.sym.var("data")
    h = mx.sym.FullyConnected(data, num_hidden=1, no_bias=True, name="fc") - 1e8
    sym = mx.sym.clip(h, 5.0, 6.0) > 5.5
    args = {"fc_weight": mx.nd.array(np.array([[1e8, 1.0]]))}
    inputs = {"data": np.array([[1.0, 0.3]], np.float32)}
    graph = __import__("json").loads(sym.tojson())
    first = next(i for i, n in enumerate(graph["nodes"]) if n["op"] in sweep.DISCRETE)
    assert [graph["nodes"][i]["op"] for i in sweep._upstream(graph["nodes"], first)] == [
        "FullyConnected", "_minus_scalar", "clip"]
    note = sweep.conditioning(mx, sym, args, {}, inputs)
    assert note and note.startswith("no verdict") and "at _minusscalar" in note, note
