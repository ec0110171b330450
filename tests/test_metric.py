"""mx.metric against MXNet 1.9.1 golden values (tests/fixtures/metric_io/generate.py)."""
import json
import math
import os

import numpy as np
import pytest
import torch

import symgraph as mx
from tests.import_alone import failing_alone

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "metric_io", "metric_io.json")


def _fixtures():
    with open(FIX) as f:
        return json.load(f)["metric"]


def _close(got, want):
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
    elif math.isnan(want):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("case", _fixtures(), ids=lambda c: f"{c['metric']}-{c['kwargs']}")
def test_metric_matches_mxnet(case):
    m = mx.metric.create(case["metric"], **case["kwargs"])
    for step, (want_local, want_global) in zip(case["steps"], case["results"]):
        if step == "reset_local":
            m.reset_local()
        else:
            labels, preds = step
            m.update([mx.nd.array(x) for x in labels], [mx.nd.array(x) for x in preds])
        name, value = m.get()
        assert name == want_local[0]
        _close(value, want_local[1])
        gname, gvalue = m.get_global()
        assert gname == want_global[0]
        _close(gvalue, want_global[1])


def test_numpy_inputs_and_reset():
    m = mx.metric.Accuracy()
    m.update([np.array([0, 1])], [np.array([[1.0, 0.0], [1.0, 0.0]])])
    assert m.get() == ("accuracy", 0.5)
    m.reset()
    assert math.isnan(m.get()[1]) and math.isnan(m.get_global()[1])


def test_update_dict_and_config():
    m = mx.metric.Accuracy(output_names=["out"], label_names=["lab"])
    m.update_dict({"lab": mx.nd.array([1]), "x": mx.nd.array([0])},
                  {"out": mx.nd.array([[0.0, 1.0]]), "y": mx.nd.array([[1.0, 0.0]])})
    assert m.get() == ("accuracy", 1.0)
    cfg = m.get_config()
    assert cfg == {"axis": 1, "metric": "Accuracy", "name": "accuracy",
                   "output_names": ["out"], "label_names": ["lab"]}
    assert isinstance(mx.metric.create(cfg), mx.metric.Accuracy)
    assert str(m) == "EvalMetric: {'accuracy': 1.0}"


def test_create_variants():
    assert isinstance(mx.metric.create("ACC"), mx.metric.Accuracy)
    assert isinstance(mx.metric.create('["top_k_acc", {"top_k": 3}]'), mx.metric.TopKAccuracy)
    acc = mx.metric.Accuracy()
    assert mx.metric.create(acc) is acc
    comp = mx.metric.create(["acc", "mae"])
    assert [n for n, _ in comp.get_name_value()] == ["accuracy", "mae"]
    with pytest.raises(AssertionError):
        mx.metric.create("no_such_metric")
    assert isinstance(mx.metric.create("torch"), mx.metric.Loss)
    assert isinstance(mx.metric.create("caffe"), mx.metric.Loss)


def test_custom_and_np():
    def feval(label, pred):
        return float(np.abs(label - pred).sum())
    m = mx.metric.create(feval)
    m.update([mx.nd.array([1, 2])], [mx.nd.array([2, 2])])
    m.update([mx.nd.array([1])], [mx.nd.array([4])])
    assert m.get() == ("feval", 2.0)
    with pytest.raises(NotImplementedError):
        m.get_config()
    m2 = mx.metric.np(lambda l, p: (float((l == p).sum()), l.size), allow_extra_outputs=True)
    assert m2.name == "custom(<lambda>)"
    m2.update([mx.nd.array([1, 2])], [mx.nd.array([1, 3]), mx.nd.array([0])])
    assert m2.get()[1] == 0.5


def test_register_and_alias():
    @mx.metric.register
    @mx.metric.alias("always_one")
    class AlwaysOne(mx.metric.EvalMetric):
        def __init__(self):
            super().__init__("one")

        def update(self, labels, preds):
            self.sum_metric += 1
            self.num_inst += 1

    m = mx.metric.create("always_one")
    m.update([], [])
    assert m.get() == ("one", 1.0) and m.get_global() == ("one", 1.0)


def test_errors():
    with pytest.raises(ValueError, match="does not match"):
        mx.metric.Accuracy().update([mx.nd.array([1])], [])
    with pytest.raises(AssertionError):
        mx.metric.TopKAccuracy(top_k=1)
    with pytest.raises(ValueError, match="binary"):
        mx.metric.F1().update([mx.nd.array([0, 1, 2])], [mx.nd.array(np.eye(3)[:, :2])])


@pytest.mark.parametrize("shape,axis", [((6, 4), 1), ((3, 4, 2), 1), ((6,), 1), ((2, 3, 4), 2)])
def test_accuracy_device_counts_match_numpy_path(shape, axis):
    # outputs on an accelerator are counted by torch there; the counts equal the host path's
    from symgraph.metric.classification import _accuracy_counts_torch
    rng = np.random.RandomState(3)
    pred = rng.uniform(-3, 3, shape).astype(np.float32)
    pred[0, ...] = 1.0  # ties: the first maximum, as numpy
    lshape = shape if len(shape) == 1 else shape[:axis] + shape[axis + 1:]
    label = rng.randint(0, 4, lshape).astype(np.float32) + 0.7  # float labels truncate
    m = mx.metric.Accuracy(axis=axis)
    m.update([mx.nd.array(label)], [mx.nd.array(pred)])
    correct, total = _accuracy_counts_torch(mx.nd.array(pred), mx.nd.array(label), axis)
    assert (int(correct), total) == (m.sum_metric, m.num_inst)
    again, total2 = _accuracy_counts_torch(mx.nd.array(pred), label, axis)
    assert (int(again), total2) == (m.sum_metric, m.num_inst)
    # summed on the device across batches, read back when read
    dev = mx.metric.Accuracy(axis=axis)
    for _ in range(2):
        dev._add(*_accuracy_counts_torch(mx.nd.array(pred), mx.nd.array(label), axis))
    assert isinstance(dev.__dict__["_pending"][0], torch.Tensor)
    assert (dev.sum_metric, dev.num_inst) == (2 * m.sum_metric, 2 * m.num_inst)
    assert dev.get() == m.get()
    if len(shape) > 1:
        with pytest.raises(ValueError, match="does not match"):
            _accuracy_counts_torch(mx.nd.array(pred), mx.nd.array(np.zeros(7)), axis)


def test_every_metric_module_imports_alone():
    """Each module of the package imports first in a fresh interpreter (issue 19: the old
    metric_classification module raised ImportError that way)."""
    names = ["symgraph.metric"] + [f"symgraph.metric.{m}" for m in
                                   ("base", "classification", "regression", "probability",
                                    "loss")]
    assert failing_alone(names) == []


def test_metric_package_keeps_mxnets_names():
    for name in ("EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "MCC",
                 "PCC", "Perplexity", "MAE", "MSE", "RMSE", "CrossEntropy",
                 "NegativeLogLikelihood", "PearsonCorrelation", "Loss", "Torch", "Caffe",
                 "CustomMetric", "np", "create", "register", "alias", "check_label_shapes",
                 "numeric_types", "string_types", "ndarray", "registry"):
        assert hasattr(mx.metric, name), name
    assert mx.metric.create("pearsonr").__class__ is mx.metric.PearsonCorrelation



def test_perplexity_accumulates_on_the_device_and_reads_back_once(monkeypatch):
    """Issue #22: on an accelerator Perplexity sums on the device (no copy of the prediction
    matrix per batch) and reads one number back when a statistic is read; the value equals
    the host path's, with ignore_label, local and global statistics (the device path is
    forced here on CPU tensors)."""
    import torch

    from symgraph.metric import probability
    rng = np.random.RandomState(4)
    batches = []
    for n in (6, 9):
        pred = rng.uniform(0.01, 1, (n, 5)).astype(np.float32)
        batches.append((rng.randint(0, 5, n).astype(np.float32), pred / pred.sum(1, keepdims=True)))
    host = mx.metric.Perplexity(ignore_label=2)
    for label, pred in batches:
        host.update([mx.nd.array(label)], [mx.nd.array(pred)])
    monkeypatch.setattr(probability, "_on_accelerator", lambda x: True)
    dev = mx.metric.Perplexity(ignore_label=2)
    reads = []
    monkeypatch.setattr(torch.Tensor, "item", lambda t: reads.append(t) or t.tolist())
    for label, pred in batches:
        dev.update([mx.nd.array(label)], [mx.nd.array(pred)])
    assert not reads and isinstance(dev.__dict__["_pending"][0], torch.Tensor)
    assert dev.get()[1] == pytest.approx(host.get()[1], rel=1e-6)
    assert len(reads) == 2  # the loss sum and the count, once
    assert dev.num_inst == host.num_inst and isinstance(dev.num_inst, int)
    dev.reset_local()
    assert dev.num_inst == 0 and dev.get_global()[1] == pytest.approx(host.get()[1], rel=1e-6)
    dev.update([mx.nd.array(batches[0][0])], [mx.nd.array(batches[0][1])])
    dev.reset()
    assert dev.global_num_inst == 0 and "_pending" not in dev.__dict__
