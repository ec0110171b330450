"""Deferred recorded calls (``symgraph.imperative.deferred``): under ``record()``
consecutive graph calls (a network, its loss, arithmetic on the loss) run as one composed
graph, and every value and gradient equals running each call on its own
(``defer_recorded=False``), including when a value is read in between, a block is called
twice, an output feeds a second loss after its chain ran, or chains on two contexts meet."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from symgraph import autograd, config
from symgraph.imperative import deferred


def _net(prefix: str):
    net = mx.gluon.nn.HybridSequential(prefix=prefix)
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(5, activation="tanh"), mx.gluon.nn.Dense(3))
    net.initialize(mx.init.Xavier(), ctx=[mx.cpu(0), mx.cpu(1)])
    return net


def _data(seed: int, ctx=None):
    ctx = ctx or mx.cpu(0)
    rng = np.random.RandomState(seed)
    return (mx.nd.array(rng.uniform(-1, 1, (4, 6)), ctx=ctx),
            mx.nd.array(rng.randint(0, 3, 4), ctx=ctx))


def _grads(net) -> dict:
    return {n: np.concatenate([g.asnumpy().ravel() for g in p.list_grad()])
            for n, p in net.collect_params().items()}


def _scenarios(net, loss_fn):
    x, y = _data(0)
    x1, y1 = _data(1, mx.cpu(1))

    def plain():
        with autograd.record():
            loss = (loss_fn(net(x), y) * 2).mean()
        loss.backward()
        return [loss]

    def read_in_between():
        with autograd.record():
            out = net(x)
            seen = out.asnumpy().copy()  # runs the chain so far
            loss = loss_fn(out, y).sum() + (out * out).mean()
        loss.backward()
        return [loss, mx.nd.array(seen)]

    def twice_and_second_loss():
        with autograd.record():
            out = net(x)
            l1 = loss_fn(out, y) + loss_fn(net(x * 0.5), y)
            first = l1.asnumpy().copy()
            l2 = (out ** 2).sum()  # reads out after its chain ran
        autograd.backward([l1, l2])
        return [l1, l2, mx.nd.array(first)]

    def two_contexts():
        with autograd.record():
            losses = [loss_fn(net(a), b) for a, b in ((x, y), (x1, y1))]
        autograd.backward(losses)
        return losses
    return [plain, read_in_between, twice_and_second_loss, two_contexts]


@pytest.mark.parametrize("index", range(4))
def test_deferred_equals_eager(index):
    results = {}
    for defer in (False, True):
        net, loss_fn = _net("n_"), mx.gluon.loss.SoftmaxCrossEntropyLoss()
        net(mx.nd.ones((4, 6)))
        for i, (_, p) in enumerate(sorted(net.collect_params().items())):
            p.set_data(mx.nd.array(np.random.RandomState(10 + i).uniform(-1, 1, p.shape)))
        with config.override(defer_recorded=defer):
            outs = _scenarios(net, loss_fn)[index]()
        results[defer] = ([o.asnumpy() for o in outs], _grads(net))
    (v0, g0), (v1, g1) = results[False], results[True]
    for a, b in zip(v0, v1):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert g0.keys() == g1.keys()
    for name in g0:
        np.testing.assert_allclose(g0[name], g1[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_network_and_loss_run_as_one_graph():
    net, loss_fn = _net("one_"), mx.gluon.loss.SoftmaxCrossEntropyLoss()
    x, y = _data(2)
    with autograd.record():  # a first step runs each new call signature at once
        first = net(x)
        assert first._chain is None
        loss_fn(first, y).mean().backward()
    with autograd.record():
        out = net(x)
        loss = loss_fn(out, y).mean()
        assert out._chain is not None and out._chain is loss._chain
        assert len(loss._chain.calls) == 3  # net, loss, mean: nothing ran yet
    loss.backward()
    assert out._chain is None and loss._chain is None
    # the chain was the whole backward pass: it ran forward and backward at once, leaving
    # no tape node; a second backward fails as MXNet's does on a freed graph
    assert out._ag_node is None and loss._ag_node is None
    assert all(p.data()._fresh_grad for p in net.collect_params().values())
    with pytest.raises(mx.base.MXNetError, match="not in a computational graph"):
        loss.backward()
    x.attach_grad()
    with autograd.record():  # a chain whose input takes part keeps a tape node
        loss = loss_fn(net(x), y).mean()
    loss.backward()
    assert loss._ag_node is not None and np.abs(x.grad.asnumpy()).sum() > 0


def test_bad_input_fails_at_the_call():
    net = _net("bad_")
    net(mx.nd.ones((4, 6)))
    with autograd.record():
        with pytest.raises(mx.base.MXNetError):
            net(mx.nd.ones((4, 7)))  # a new signature runs now: the shape error is here


def test_chains_are_bounded():
    x = mx.nd.ones((2, 2))
    x.attach_grad()
    with autograd.record():
        y = x
        for _ in range(deferred.MAX_CALLS + 3):
            y = y * 1.5
        total = y.sum()
    total.backward()
    expected = np.full((2, 2), 1.5 ** (deferred.MAX_CALLS + 3))
    np.testing.assert_allclose(x.grad.asnumpy(), expected, rtol=1e-5)


def test_outputs_no_backward_reaches_get_no_zero_gradients():
    # the usual step reads the network's output after backward (a metric): the backward
    # that runs the chain leaves that output's (zero) head gradient out of the plan
    net, loss_fn = _net("mask_"), mx.gluon.loss.SoftmaxCrossEntropyLoss()
    x, y = _data(3)
    for _ in range(2):  # the first step runs each new call signature at once
        with autograd.record():
            out = net(x)
            loss = loss_fn(out, y)
        loss.backward()
    np.testing.assert_allclose(out.asnumpy(), net(x).asnumpy(), rtol=1e-6)
    masked = [c for k, c in deferred._COMPOSED.items() if k[2] == (False, True)]
    assert masked, list(deferred._COMPOSED)
    plan = next(iter(masked[-1][0]._pools.values()))[0].exe._plan
    assert "add_n" not in [s[-1].op.name for s in plan.backward]


@pytest.mark.parametrize("retain", [False, True])
def test_a_retained_graph_differentiates_every_output(retain):
    # with retain_graph the chain keeps every output's gradient path: a second backward
    # from the network's output equals the eager one
    results = {}
    for defer in (False, True):
        net, loss_fn = _net(f"ret{int(retain)}_"), mx.gluon.loss.SoftmaxCrossEntropyLoss()
        net(mx.nd.ones((4, 6)))
        for i, (_, p) in enumerate(sorted(net.collect_params().items())):
            p.set_data(mx.nd.array(np.random.RandomState(20 + i).uniform(-1, 1, p.shape)))
        x, y = _data(4)
        with config.override(defer_recorded=defer):
            for _ in range(2):
                with autograd.record():
                    out = net(x)
                    loss = loss_fn(out, y)
                loss.backward(retain_graph=retain)
            first = _grads(net)
            if retain:
                out.backward()
        results[defer] = (first, _grads(net))
    for name in results[False][0]:
        for k in range(2):
            np.testing.assert_allclose(results[False][k][name], results[True][k][name],
                                       rtol=1e-5, atol=1e-6, err_msg=name)
