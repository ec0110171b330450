"""How an executor's CUDA graphs pair with each other and with its ``values`` list
(``cuda_graph.StepCalls``), checked on a CPU with a fake graph that keeps a real graph's
memory semantics: a replay reads and writes the tensors its capture used (in place),
whatever the executor's list points at since."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgraph as mx
from symgraph import config
from symgraph.compiler import cuda_graph


class _AddressGraph:
    """The capture ran the body (on a CPU it executes) and recorded the tensors it left in
    ``values``: its addresses. A replay runs the body on those tensors and copies every
    result into the recorded tensor, leaving the executor's list as it found it. The replay
    right after the capture is the capture's own execution: skipped."""

    def __init__(self, values: list):
        self.values, self.addresses, self.body, self.replays = values, None, None, 0

    def replay(self):
        self.replays += 1
        if self.replays == 1:
            return
        seen = list(self.values)
        self.values[:] = self.addresses
        self.body()
        for recorded, now in zip(self.addresses, self.values):
            if recorded is not None and now is not None and now is not recorded:
                recorded.copy_(now)
        self.values[:] = seen


class _AddressBackend:
    def __init__(self, values: list, fail: tuple = ()):
        self.values, self.fail = values, fail

    def graph(self):
        return _AddressGraph(self.values)

    def capturing(self, graph, pool):
        backend = self

        class _Capture:
            def __enter__(self):
                return graph

            def __exit__(self, *exc):
                if exc[0] is None:
                    caller = _capturing_call[-1]
                    if caller.name.startswith(backend.fail):
                        raise RuntimeError("operation not permitted when stream is capturing")
                    graph.addresses, graph.body = list(backend.values), caller.body
                return False
        return _Capture()

    @staticmethod
    def run_aside(body):
        body()

    @staticmethod
    def synchronize():
        pass


_capturing_call: list = []


@pytest.fixture
def graphed(monkeypatch):
    """Plans on the CPU captured as fake graphs (``fail``: name prefixes whose capture
    fails)."""
    wanted = cuda_graph.wanted
    monkeypatch.setattr(cuda_graph, "wanted",
                        lambda device, steps: wanted(torch.device("cuda"), steps))
    capture = cuda_graph.GraphedCall._capture

    def tracked(self):
        _capturing_call.append(self)
        try:
            capture(self)
        finally:
            _capturing_call.pop()
    monkeypatch.setattr(cuda_graph.GraphedCall, "_capture", tracked)
    settings = {"fail": ()}
    init = cuda_graph.StepCalls.__init__

    def with_fake(self, values, *args):
        init(self, values, *args)
        if config.get().cuda_graphs:
            self.backend = _AddressBackend(values, settings["fail"])
    monkeypatch.setattr(cuda_graph.StepCalls, "__init__", with_fake)
    return settings


def _net():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn")
    net = mx.sym.FullyConnected(mx.sym.relu(net), num_hidden=4, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _pair():
    """(graphed executor, eager executor) with the same parameters."""
    execs = []
    for graphs in (True, False):
        with config.override(cuda_graphs=graphs):
            exe = _net().simple_bind(mx.cpu(), data=(6, 5))
            rng = np.random.RandomState(0)
            for _, arr in sorted(exe.arg_dict.items()):
                arr[:] = rng.uniform(-1, 1, arr.shape)
            for arr in exe.aux_arrays:
                arr[:] = rng.uniform(0.5, 1, arr.shape)
            execs.append(exe)
    return execs


def _each(execs, fn):
    """``fn(exe)`` for the graphed executor, then for the eager one with graphs off (the
    runners of a step list are made at its first call)."""
    for exe, graphs in zip(execs, (True, False)):
        with config.override(cuda_graphs=graphs):
            fn(exe)


def _batch(step: int) -> dict:
    rng = np.random.RandomState(100 + step)
    return {"data": rng.uniform(-1, 1, (6, 5)), "softmax_label": rng.randint(0, 4, 6)}


def _same(graphed, eager):
    for a, b in zip(graphed.outputs, eager.outputs):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)
    for name, grad in graphed.grad_dict.items():
        if grad is not None:
            np.testing.assert_allclose(grad.asnumpy(), eager.grad_dict[name].asnumpy(),
                                       rtol=1e-5, atol=1e-6, err_msg=name)
    for a, b in zip(graphed.aux_arrays, eager.aux_arrays):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)


def _step(exe, step):
    exe.forward(is_train=True, **_batch(step))
    exe.backward()


def _train(execs, step):
    _each(execs, lambda exe: _step(exe, step))


TRAIN = ("forward", True, True)
EVAL = ("forward", False, True)


def test_training_replays_the_captured_pair(graphed):
    execs = _pair()
    for step in range(5):
        _train(execs, step)
        _same(*execs)
    calls = execs[0]._calls.calls
    assert calls[TRAIN].graph.replays >= 3
    assert calls[("backward", True, TRAIN)].graph.replays >= 3


def test_an_evaluation_forward_between_steps_keeps_each_graph_on_its_own_values(graphed):
    """fit() with eval_data: the inference forward is its own graph; the training graph's
    replay afterwards must hand out its own outputs, and its backward read its values."""
    execs = _pair()
    for step in range(8):
        _train(execs, step)
        _same(*execs)
        _each(execs, lambda exe, s=step: exe.forward(is_train=False, **_batch(50 + s)))
        _same(*execs)
    calls = execs[0]._calls.calls
    assert calls[EVAL].graph.replays >= 3 and calls[TRAIN].graph.replays >= 3


def test_release_keeps_outputs_and_graphs_and_drops_intermediates(graphed):
    execs = _pair()
    for step in range(3):
        _train(execs, step)
    exe = execs[0]
    plan = exe._plan
    assert exe.release_values() and execs[1].release_values()
    kept = {i for i, t in enumerate(exe._values) if t is not None}
    allowed = set(plan.var_slot.values()) | set(plan.head_slots) | \
        {s for s in plan.head_grad_slots if s is not None}
    assert kept <= allowed and set(plan.head_slots) <= kept
    assert exe._calls.calls[TRAIN].graph is not None  # the graphs stay
    for step in range(3, 6):  # replays from here: no intermediate is referenced again
        _train(execs, step)
        _same(*execs)
        assert {i for i, t in enumerate(exe._values) if t is not None} <= allowed | \
            set(s for _, _, _, _, outs, _, _ in plan.backward for s in outs)


def test_a_backward_without_its_graph_after_a_release_recomputes_the_forward_once(graphed):
    """Forward captured, released before its backward was: the backward recomputes the
    forward eagerly (running statistics move once, as the user ran one forward) and the
    pair is captured together at the next step."""
    execs = _pair()
    _train(execs, 0)

    def run(exe):
        exe.forward(is_train=True, **_batch(1))  # captured: the forward alone
        exe.release_values()
        exe.forward(is_train=True, **_batch(2))  # a replay, nothing kept
        exe.backward()
    _each(execs, run)
    _same(*execs)
    for step in range(3, 6):
        _train(execs, step)
        _same(*execs)
    assert execs[0]._calls.calls[("backward", True, TRAIN)].graph is not None


def test_a_monitored_or_profiled_forward_is_followed_by_an_eager_backward(graphed, tmp_path):
    execs = _pair()
    for step in range(3):
        _train(execs, step)
    seen = []

    def monitored_forward(exe):
        exe.set_monitor_callback(lambda name, arr: seen.append(name))
        exe.forward(is_train=True, **_batch(10))
        exe.set_monitor_callback(None)
        exe.backward()
    _each(execs, monitored_forward)
    _same(*execs)
    assert seen

    def monitored_backward(exe):  # after a replayed forward
        exe.forward(is_train=True, **_batch(11))
        exe.set_monitor_callback(lambda name, arr: None)
        exe.backward()
        exe.set_monitor_callback(None)
    _each(execs, monitored_backward)
    _same(*execs)
    mx.profiler.set_config(profile_symbolic=True, filename=str(tmp_path / "trace.json"))
    mx.profiler.set_state("run")
    try:
        _each(execs, lambda exe: exe.forward(is_train=True, **_batch(12)))
    finally:
        mx.profiler.set_state("stop")
        mx.profiler.set_config(profile_symbolic=False, filename=str(tmp_path / "unused.json"))
    _each(execs, lambda exe: exe.backward())
    _same(*execs)
    _train(execs, 13)
    _same(*execs)


def test_a_backward_that_fails_to_capture_takes_its_forward_out_of_graphs(graphed):
    """A backward graph paired with an eagerly run forward would read the addresses of one
    old forward forever: when the backward cannot be captured, neither is its forward."""
    graphed["fail"] = ("backward",)
    execs = _pair()
    with pytest.warns(RuntimeWarning, match="capture of backward"):
        for step in range(5):
            _train(execs, step)
            _same(*execs)
    calls = execs[0]._calls.calls
    assert calls[TRAIN].failed and calls[TRAIN].graph is None


def train_buckets_with_and_without_graphs(context, rtol: float, atol: float) -> list:
    """A BucketingModule trained over shuffled buckets with CUDA graphs and without, step
    by step equal; returns both. Shared with the GPU test (tests/kernels/test_cuda_graph)."""
    from tests.test_bucketing_module import batch, bound, params_of
    keys = [3, 10, 5, 7, 3, 10, 7, 5, 5, 3, 10, 7]
    mods = []
    for graphs in (True, False):
        with config.override(cuda_graphs=graphs):
            mod = bound(context=context)
            if mods:
                mod.set_params(*mods[0].get_params())
            mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
            mods.append(mod)
    for step, key in enumerate(keys):
        for mod, graphs in zip(mods, (True, False)):
            with config.override(cuda_graphs=graphs):
                mod.forward_backward(batch(key, step))
                mod.update()
        np.testing.assert_allclose(mods[0].get_outputs()[0].asnumpy(),
                                   mods[1].get_outputs()[0].asnumpy(), rtol=rtol, atol=atol)
    ours, theirs = params_of(mods[0]), params_of(mods[1])
    for name, value in theirs.items():
        np.testing.assert_allclose(ours[name], value, rtol=rtol, atol=atol, err_msg=name)
    return mods


def assert_buckets_not_running_keep_only_outputs(mod) -> None:
    """Every bucket captured its graphs; those not running hold arguments, outputs and
    head gradients only."""
    for key, module in mod._buckets.items():
        exe = module._exec_group.execs[0]
        assert exe._calls.graphs, key
        if key != mod._curr_bucket_key:
            plan = exe._plan
            kept = {i for i, t in enumerate(exe._values) if t is not None}
            assert kept <= set(plan.var_slot.values()) | set(plan.head_slots) | \
                {s for s in plan.head_grad_slots if s is not None}, key


def test_bucketing_with_graphs_trains_as_without_and_keeps_one_bucket_of_values(graphed):
    mods = train_buckets_with_and_without_graphs(mx.cpu(), 1e-5, 1e-6)
    assert_buckets_not_running_keep_only_outputs(mods[0])
