"""mx.profiler: the trace file of a training step, aggregate statistics in MXNet 1.9.1's
layout (tests/fixtures/profiler/generate.py records MXNet's for the same session), user
objects, state handling and errors."""
import importlib.util
import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import symgraph as mx
from symgraph import profiler
from symgraph.base import MXNetError
from tests import device

FIXTURES = Path(__file__).parent / "fixtures" / "profiler"


@pytest.fixture
def trace(tmp_path):
    """A configured profiler writing ``trace.json``; left stopped and finished."""
    path = tmp_path / "trace.json"
    profiler.set_config(profile_all=True, filename=str(path), aggregate_stats=True,
                        continuous_dump=False)
    yield path
    profiler.set_state("stop")
    profiler._PROF.dump(finished=True)
    profiler.set_config(aggregate_stats=False, filename=str(tmp_path / "unused.json"))


def _events(path: Path) -> list[dict]:
    return json.loads(path.read_text())["traceEvents"]


def _mlp_module(ctx=None):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    mod = mx.mod.Module(net, data_names=["data"], label_names=["softmax_label"],
                        context=ctx or mx.cpu())
    mod.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    rng = np.random.RandomState(0)
    batch = mx.io.DataBatch([mx.nd.array(rng.randn(4, 5))],
                            [mx.nd.array(rng.randint(0, 3, size=4))])
    return mod, batch


def test_training_step_trace_has_every_kernel(trace):
    mod, batch = _mlp_module()
    mod.forward_backward(batch)  # warm-up, unprofiled
    mod.update()
    profiler.set_state("run")
    mod.forward_backward(batch)
    mod.update()
    profiler.set_state("stop")
    profiler.dump()
    events = _events(trace)  # valid JSON, Chrome's trace layout
    plan = mod._exec_group.execs[0]._plan
    for phase, steps in (("forward", plan.forward_train), ("backward", plan.backward)):
        got = [e for e in events if e["ph"] == "X" and e["args"].get("phase") == phase]
        nodes = [s[-1] for s in steps]
        assert len(nodes) >= 4
        assert [e["args"]["node"] for e in got] == [n.name for n in nodes]
        assert [e["args"]["op"] for e in got] == [n.op.name for n in nodes]
        assert [e["name"] for e in got] == [f"{n.name}:{n.op.name}" for n in nodes]
        assert all(e["dur"] >= 0 and e["cat"] == "operator" for e in got)
        starts = [e["ts"] for e in got]
        assert starts == sorted(starts)
    ops = {e["args"]["op"] for e in events if e["ph"] == "X"}
    assert {"FullyConnected", "Activation", "SoftmaxOutput"} <= ops
    updates = [e for e in events if e["ph"] == "X" and e["args"]["op"] == "sgd_update"]
    assert sorted(p for e in updates for p in e["args"]["params"]) == \
        sorted(mod._exec_group.param_names)  # the optimizer's kernels, named by parameter
    names = {e["args"]["name"] for e in events if e["ph"] == "M"}
    assert "operator" in names


def test_stopped_profiler_records_nothing(trace):
    x = mx.nd.ones((2, 2))
    _ = mx.nd.sqrt(x) + 1
    profiler.set_state("run")
    profiler.pause()
    _ = mx.nd.sqrt(x)
    profiler.resume()
    _ = x * 2
    profiler.set_state("stop")
    _ = x + 3
    profiler.dump()
    assert [e["name"] for e in _events(trace) if e["ph"] == "X"] == ["_mul_scalar"]


def _load_generator():
    spec = importlib.util.spec_from_file_location("prof_generate", FIXTURES / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _json_block(text: str, category: str) -> str:
    """One category's block of MXNet's JSON text, numbers replaced by N."""
    start = text.index(f'        "{category}": {{\n')
    end = text.index("\n        }\n", start)
    return re.sub(r"\d+(\.\d+)?(e[-+]\d+)?", "N", text[start:end])


def test_session_matches_mxnet_layout(tmp_path):
    recorded = json.loads((FIXTURES / "session.json").read_text())
    table, text = _load_generator().session(mx, str(tmp_path / "s.json"))
    profiler.set_config(aggregate_stats=False, filename=str(tmp_path / "unused.json"))
    ours, theirs = table.splitlines(), recorded["table"].splitlines()
    assert ours[:3] == theirs[:3]
    for category in ("dom", "dom,frame", "dom,instant_marker", "event", "operator"):
        i, j = ours.index(category), theirs.index(category)
        assert ours[i:i + 4] == theirs[j:j + 4]  # name, rule, header, dashes
    ctr = [line for line in theirs if line.startswith("ctr ")]
    assert ctr == [line for line in ours if line.startswith("ctr ")]  # values 3, 5, 4
    for op, count in (("_ones", 1), ("sqrt", 1), ("_plus_scalar", 2)):
        assert re.search(rf"^{op} +{count} ", table, re.M)
    for category in ("dom", "dom,frame", "event"):
        assert _json_block(text, category) == _json_block(recorded["json"], category)
    mine, mxnet = json.loads(text), json.loads(recorded["json"])
    assert mine["Time"]["dom"]["ctr"] == mxnet["Time"]["dom"]["ctr"]
    assert mine["Unit"] == mxnet["Unit"] and mine["Time"]["dom,instant_marker"] == {}
    users = {(n, c) for n, c, _ in recorded["user_events"] if c != "MXNET_C_API"
             and c != "Device Storage"}
    trace_users = {(e["name"], e["cat"]) for e in _events(tmp_path / "s.json")
                   if e.get("cat") not in (None, "operator")}
    assert trace_users == users


def test_dumps_sorting_and_reset(trace):
    profiler.set_state("run")
    x = mx.nd.ones((3, 3))
    for _ in range(3):
        x = x + 1
    _ = mx.nd.sqrt(x)
    profiler.set_state("stop")
    for sort_by, field in (("count", "Count"), ("total", "Total"), ("max", "Max")):
        for ascending in (False, True):
            ops = json.loads(profiler.dumps(format="json", sort_by=sort_by,
                                            ascending=ascending))["Time"]["operator"]
            values = [v[field] for v in ops.values()]
            assert values == sorted(values, reverse=not ascending)
    assert json.loads(profiler.dumps(format="json"))["Time"]["operator"]["_plus_scalar"][
        "Count"] == 3
    profiler.dumps(reset=True)
    assert json.loads(profiler.dumps(format="json"))["Time"] == {}


def test_user_objects_in_trace(trace):
    profiler.set_state("run")
    domain = profiler.Domain("train")
    with profiler.Task(domain, "step"):
        counter = domain.new_counter("batches", 1)
        counter += 4
        counter -= 2
    frame = domain.new_frame("epoch")
    frame.start()
    frame.stop()
    domain.new_marker("begin").mark("global")
    with profiler.scope("outer:"):
        _ = mx.nd.ones((2,)) * 3
    profiler.set_state("stop")
    profiler.dump()
    events = _events(trace)
    counts = [e["args"]["batches"] for e in events if e["ph"] == "C"]
    assert counts == [1, 5, 3]
    step = next(e for e in events if e["name"] == "step")
    assert step["ph"] == "X" and step["cat"] == "train"
    assert next(e for e in events if e["name"] == "epoch")["cat"] == "train,frame"
    marker = next(e for e in events if e["ph"] == "i")
    assert (marker["name"], marker["s"], marker["cat"]) == ("begin", "g",
                                                            "train,instant_marker")
    assert "outer:_mul_scalar" in {e["name"] for e in events}


def test_continuous_dump_keeps_a_valid_growing_file(tmp_path):
    path = tmp_path / "c.json"
    profiler.set_config(filename=str(path), continuous_dump=True)
    profiler.set_state("run")
    sizes = []
    for _ in range(3):
        _ = mx.nd.ones((2,)) + 1
        profiler.dump(False)
        sizes.append(len(_events(path)))  # valid JSON after every dump
    profiler.set_state("stop")
    profiler.dump(True)
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    with pytest.raises(MXNetError, match="hasn't been run"):
        profiler.dump()


def test_errors_change_nothing(tmp_path):
    before = profiler._PROF.config
    with pytest.raises(MXNetError, match="cannot find argument 'bogus'"):
        profiler.set_config(filename=str(tmp_path / "x.json"), bogus=1)
    with pytest.raises(MXNetError, match="not a boolean"):
        profiler.set_config(profile_all="maybe")
    assert profiler._PROF.config is before
    with pytest.raises(MXNetError, match="state must be"):
        profiler.set_state("go")
    with pytest.raises(MXNetError, match="sort_by"):
        profiler.dumps(sort_by="median")
    with pytest.raises(MXNetError, match="without start"):
        profiler.Event("e").stop()
    assert profiler.state() == "stop"


def test_deprecated_names(tmp_path):
    path = tmp_path / "d.json"
    with pytest.warns(DeprecationWarning):
        profiler.profiler_set_config(mode="all", filename=str(path))
    with pytest.warns(DeprecationWarning):
        profiler.profiler_set_state("run")
    _ = mx.nd.ones((2,)) - 1
    profiler.set_state("stop")
    with pytest.warns(DeprecationWarning):
        profiler.dump_profile()
    assert "_minus_scalar" in {e["name"] for e in _events(path)}


@pytest.mark.skipif(not device.ON_GPU, reason="CUDA-event timing needs a GPU")
def test_gpu_steps_timed_on_the_device(trace):
    mod, batch = _mlp_module(device.context())
    exe = mod._exec_group.execs[0]
    for _ in range(4):  # warm-up, then a captured CUDA graph replays each step list
        mod.forward_backward(batch)
    expected = [g.asnumpy() for g in exe.grad_arrays if g is not None]
    profiler.set_state("run")
    mod.forward_backward(batch)  # runs eagerly, each step between two CUDA events
    profiler.set_state("stop")
    got = [g.asnumpy() for g in exe.grad_arrays if g is not None]
    mod.forward_backward(batch)  # the captured graph again, on the same buffers
    again = [g.asnumpy() for g in exe.grad_arrays if g is not None]
    for e, g, a in zip(expected, got, again):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
    profiler.dump()
    steps = exe._plan.forward_train + exe._plan.backward
    timed = [e for e in _events(trace) if e["ph"] == "X" and "phase" in e["args"]]
    assert [e["args"]["node"] for e in timed] == [s[-1].name for s in steps]
    assert all(e["dur"] >= 0 for e in timed) and sum(e["dur"] for e in timed) > 0
    assert [e["ts"] for e in timed] == sorted(e["ts"] for e in timed)


class _FakeCudaEvent:
    """torch.cuda.Event's timing API on the host clock (the bookkeeping runs without a GPU)."""

    def __init__(self, enable_timing=False):
        self.at = None

    def record(self):
        import time
        self.at = time.perf_counter()

    def elapsed_time(self, end):
        return (end.at - self.at) * 1000.0


def test_cuda_timing_bookkeeping_without_gpu(trace, monkeypatch):
    import torch
    monkeypatch.setattr(torch.cuda, "Event", _FakeCudaEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    node = SimpleNamespace(name="n1", op=SimpleNamespace(name="myop"))

    def step(p, ins, aux, rt):
        return [ins[0] * 2]
    rt = SimpleNamespace(device=torch.device("cuda"))
    values = [torch.ones(3), None]
    profiler.set_state("run")
    profiler.run_steps([(step, None, [0], [], [1], [0], node)], values, rt, {}, "forward")
    assert profiler._PROF.gpu.records  # resolved later, not at launch
    profiler.set_state("stop")
    assert not profiler._PROF.gpu.records and values == [None, values[1]]
    profiler.dump()
    (event,) = [e for e in _events(trace) if e["ph"] == "X"]
    assert event["name"] == "n1:myop" and event["dur"] >= 0 and event["ts"] > 1e15
    stats = json.loads(profiler.dumps(format="json"))["Time"]["operator"]
    assert stats["myop"]["Count"] == 1


def test_unwritable_trace_file_keeps_the_events(tmp_path):
    bad = tmp_path / "missing_dir" / "t.json"
    profiler.set_config(filename=str(bad), continuous_dump=False)
    profiler.set_state("run")
    _ = mx.nd.ones((2,)) + 1
    profiler.set_state("stop")
    with pytest.raises(MXNetError, match="cannot write the trace file"):
        profiler.dump()
    bad.parent.mkdir()
    profiler.dump()  # the same events, now written
    assert [e["name"] for e in _events(bad) if e["ph"] == "X"] == ["_ones", "_plus_scalar"]


def test_periodic_dump_failure_only_warns(tmp_path):
    bad = tmp_path / "missing_dir" / "t.json"
    profiler.set_config(filename=str(bad), continuous_dump=True, dump_period=1e-4)
    profiler.set_state("run")
    try:
        with pytest.warns(RuntimeWarning, match="cannot write the trace file"):
            y = mx.nd.ones((2,)) + 1  # the operators still run
    finally:
        profiler.set_state("stop")
        profiler._PROF.output = False  # nothing left to write at exit
    assert y.asnumpy().tolist() == [2.0, 2.0]
