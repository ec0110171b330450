"""mx.callback and mx.monitor against MXNet 1.9.1 log text (tests/fixtures/metric_io)."""
import json
import logging
import os
from types import SimpleNamespace

import numpy as np
import pytest

import symgraph as mx
import symgraph.callback as cbmod

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "metric_io", "metric_io.json")


@pytest.fixture(scope="module")
def golden():
    with open(FIX) as f:
        return json.load(f)["callback"]


def _messages(caplog):
    return [r.getMessage() for r in caplog.records]


def test_speedometer_and_friends_log_text(golden, caplog, monkeypatch):
    clock = {"t": 100.0}
    monkeypatch.setattr(cbmod.time, "time", lambda: clock["t"])
    caplog.set_level(logging.INFO)
    for auto_reset in (True, False):
        metric = mx.metric.create(["acc", "mse"])
        speed = mx.callback.Speedometer(batch_size=8, frequent=2, auto_reset=auto_reset)
        for epoch in range(2):
            for n in range(5):
                metric.update([mx.nd.array([n % 2, 1])], [mx.nd.array([1, 1])])
                clock["t"] += 0.5
                speed(SimpleNamespace(epoch=epoch, nbatch=n, eval_metric=metric, locals={}))
    speed = mx.callback.Speedometer(batch_size=4, frequent=1)
    for n in range(3):
        clock["t"] += 0.25
        speed(SimpleNamespace(epoch=3, nbatch=n, eval_metric=None, locals={}))
    mx.callback.ProgressBar(total=7, length=10)(SimpleNamespace(epoch=0, nbatch=3))
    cb = mx.callback.log_train_metric(2, auto_reset=True)
    metric = mx.metric.create("acc")
    metric.update([mx.nd.array([1, 1])], [mx.nd.array([1, 0])])
    cb(SimpleNamespace(epoch=1, nbatch=4, eval_metric=metric))
    assert _messages(caplog) == golden["log"]


def test_do_checkpoint_calls_model_save(monkeypatch):
    # MXNet's callback module imports mx.model.save_checkpoint and calls it by that name
    assert mx.callback.save_checkpoint is mx.model.save_checkpoint
    calls = []
    monkeypatch.setattr(mx.callback, "save_checkpoint", lambda *a: calls.append(a))
    cb = mx.callback.do_checkpoint("pre", period=2)
    for epoch in range(4):
        cb(epoch, "sym", {"w": 1}, {})
    assert calls == [("pre", 2, "sym", {"w": 1}, {}), ("pre", 4, "sym", {"w": 1}, {})]


def test_module_checkpoint():
    calls = []
    mod = SimpleNamespace(save_checkpoint=lambda *a: calls.append(a))
    cb = mx.callback.module_checkpoint(mod, "p", period=1, save_optimizer_states=True)
    cb(0)
    assert calls == [("p", 1, True)]


def test_tqdm_progress_counts_batches_per_epoch():
    pytest.importorskip("tqdm")
    import io
    out = io.StringIO()
    bar = mx.callback.TqdmProgress(total=3, file=out)
    metric = mx.metric.Accuracy()
    for epoch in range(2):
        for n in range(3):
            bar(SimpleNamespace(epoch=epoch, nbatch=n, eval_metric=metric, locals=None))
        assert bar._bar is None  # closed at the epoch's last batch (with a total)
        assert f"Epoch[{epoch}]: 100%" in out.getvalue() and "3/3" in out.getvalue()
    bar.close()


def _executor():
    net = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3,
                                                  name="fc"), act_type="relu", name="relu")
    exe = net.simple_bind(mx.cpu(), data=(2, 4))
    exe.arg_dict["data"][:] = np.arange(8, dtype=np.float32).reshape(2, 4) / 8 - 0.3
    exe.arg_dict["fc_weight"][:] = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    exe.arg_dict["fc_bias"][:] = np.array([0.1, -0.2, 0.3], np.float32)
    return exe


def _same_stats(got, want):
    assert [(s, n) for s, n, _ in got] == [(s, n) for s, n, _ in want]
    for (_, _, g), (_, _, w) in zip(got, want):
        assert g.endswith("\t") and float(g) == pytest.approx(float(w), rel=1e-5)


def test_monitor_matches_mxnet(golden, caplog):
    want = golden["monitor"]["False"]
    exe = _executor()
    mon = mx.monitor.Monitor(2, pattern=".*")
    mon.install(exe)
    for step in want["steps"]:
        mon.tic()
        exe.forward()
        _same_stats([list(r) for r in mon.toc()], step)
    mon.interval = 1
    caplog.set_level(logging.INFO)
    mon.tic()
    exe.forward()
    mon.toc_print()
    got = _messages(caplog)
    assert [line.split()[:3] for line in got] == [line.split()[:3] for line in want["log"]]
    assert [line[:46] for line in got] == [line[:46] for line in want["log"]]


def test_monitor_all_pattern_and_custom_stat(golden):
    want = {n: float(v) for _, n, v in golden["monitor"]["True"]["steps"][0]}
    exe = _executor()
    mon = mx.monitor.Monitor(1, pattern="fc_.*", sort=True, monitor_all=True)
    mon.install(exe)
    mon.tic()
    exe.forward()
    got = {n: float(v) for _, n, v in mon.toc()}
    for name in ("fc_data", "fc_weight", "fc_bias", "fc_output"):
        assert got[name] == pytest.approx(want[name], rel=1e-5)
    mon2 = mx.monitor.Monitor(1, stat_func=lambda x: [x.max(), x.min()], pattern="fc_bias")
    mon2.install(exe)
    mon2.tic()
    assert mon2.toc() == [(1, "fc_bias", "0.3\t-0.2\t")]
