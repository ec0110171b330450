"""Bind-time graph rewrites (symgraph.compiler.rewrite): pick(log_softmax(x)) -> _log_softmax_pick.

A rewritten plan must give exactly the values and gradients of the plan as written; rules
apply only where nothing observable changes; the user's symbol stays as it was."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from symgraph import config


def _ops(exe) -> list[str]:
    return [label.split(":", 1)[1] for label in exe._plan.impl.values()]


def _run(sym, shapes, values, rewrites: bool, heads=None):
    with config.override(graph_rewrites=rewrites):
        exe = sym.simple_bind(mx.cpu(), type_dict={k: v.dtype for k, v in values.items()},
                              **shapes)
    for name, v in values.items():
        exe.arg_dict[name][:] = v
    exe.forward(is_train=True)
    outs = [o.asnumpy().copy() for o in exe.outputs]
    exe.backward(heads if heads is not None else
                 [mx.nd.array(np.linspace(-1, 2, o.size).reshape(o.shape), dtype=o.dtype)
                  for o in outs])
    grads = {k: g.asnumpy().copy() for k, g in exe.grad_dict.items() if g is not None}
    return exe, outs, grads


CASES = [  # (data shape, log_softmax axis, pick kwargs, index values, dtype)
    ((6, 5), -1, {}, [0, 4, 2, 7, -3, 1], "float32"),
    ((3, 4, 2), 1, {"axis": 1, "keepdims": True}, [[0, 3], [1, 2], [3, 0]], "float32"),
    ((3, 4, 2), -2, {"axis": 1}, [[0, 3], [1, 2], [3, 0]], "float64"),
    ((4, 3), 0, {"axis": 0, "mode": "wrap"}, [5, -1, 2], "float32"),
]


@pytest.mark.parametrize("shape,axis,kw,index,dtype", CASES)
def test_fused_plan_equals_the_plan_as_written(shape, axis, kw, index, dtype):
    x, i = mx.sym.Variable("x"), mx.sym.Variable("i")
    loss = -mx.sym.pick(mx.sym.log_softmax(x, axis=axis), i, **kw)
    index = np.array(index, dtype=dtype)
    values = {"x": np.random.RandomState(0).randn(*shape).astype(dtype), "i": index}
    shapes = {"x": shape, "i": index.shape}
    fused, outs, grads = _run(loss, shapes, values, True)
    plain, want_outs, want_grads = _run(loss, shapes, values, False)
    assert "_log_softmax_pick" in _ops(fused) and "_backward_log_softmax_pick" in _ops(fused)
    assert "log_softmax" not in _ops(fused) and "log_softmax" in _ops(plain)
    assert len(fused._plan.forward_train) + len(fused._plan.backward) < \
        len(plain._plan.forward_train) + len(plain._plan.backward)
    for got, want in zip(outs, want_outs):
        np.testing.assert_array_equal(got, want)
    for name, want in want_grads.items():
        np.testing.assert_allclose(grads[name], want, rtol=1e-12 if dtype == "float64"
                                   else 1e-6, atol=0, err_msg=name)


def test_a_per_sample_loss_is_one_launch_each_way():
    """-pick(log_softmax(x), keepdims) averaged per sample (gluon's SoftmaxCrossEntropyLoss),
    and scalar products of it, fold into the fused op; values and gradients unchanged."""
    x, i = mx.sym.Variable("x"), mx.sym.Variable("i")
    picked = mx.sym.pick(mx.sym.log_softmax(x), i, keepdims=True)
    values = {"x": np.random.RandomState(3).randn(5, 4).astype("float32"),
              "i": np.array([0, 3, 1, 2, 9], dtype="float32")}
    for loss, launches in ((mx.sym.mean(-picked, axis=0, exclude=True), 1),
                           (mx.sym.mean(mx.sym.negative(picked) * 0.5, axis=0, exclude=True), 1),
                           ((picked * 0.5) * 0.3, 2),  # a second product does not fold
                           (mx.sym.mean(picked, axis=0), 2)):  # not the picked axis
        fused, outs, grads = _run(loss, {"x": (5, 4), "i": (5,)}, values, True)
        _, want_outs, want_grads = _run(loss, {"x": (5, 4), "i": (5,)}, values, False)
        assert len(fused._plan.forward_train) == launches, fused.debug_str()
        np.testing.assert_array_equal(outs[0], want_outs[0])
        np.testing.assert_array_equal(grads["x"], want_grads["x"])


def _not_fused(sym, shapes, dtype="float32"):
    values = {n: np.random.RandomState(1).randint(0, 3, s).astype(dtype)
              for n, s in shapes.items()}
    exe = _run(sym, shapes, values, True)[0]
    assert "_log_softmax_pick" not in _ops(exe)


def test_no_rewrite_where_the_log_softmax_is_read_elsewhere():
    x, i = mx.sym.Variable("x"), mx.sym.Variable("i")
    lsm = mx.sym.log_softmax(x)
    _not_fused(mx.sym.Group([mx.sym.pick(lsm, i), lsm]), {"x": (3, 4), "i": (3,)})
    _not_fused(mx.sym.pick(lsm, i) + mx.sym.sum(lsm, axis=1), {"x": (3, 4), "i": (3,)})


def test_no_rewrite_for_options_the_fused_op_does_not_have():
    x, i = mx.sym.Variable("x"), mx.sym.Variable("i")
    shapes = {"x": (3, 4), "i": (3,)}
    _not_fused(mx.sym.pick(mx.sym.log_softmax(x, temperature=2.0), i), shapes)
    _not_fused(mx.sym.pick(mx.sym.log_softmax(x, axis=0), i, axis=1), shapes)
    _not_fused(mx.sym.pick(mx.sym.log_softmax(x), i), shapes, dtype="float16")


def test_the_symbol_is_unchanged_and_the_switch_turns_it_off():
    x, i = mx.sym.Variable("x"), mx.sym.Variable("i")
    loss = mx.sym.mean(-mx.sym.pick(mx.sym.log_softmax(x), i, name="p"), name="m")
    before = loss.tojson()
    exe = loss.simple_bind(mx.cpu(), x=(2, 3), i=(2,))
    assert loss.tojson() == before
    assert exe.output_dict.keys() == {"m_output"}
    assert "p" in exe.debug_str() and "_log_softmax_pick" in exe.debug_str()
    with config.override(graph_rewrites=False):
        assert "_log_softmax_pick" not in loss.simple_bind(mx.cpu(), x=(2, 3),
                                                          i=(2,)).debug_str()


def test_gluon_softmax_cross_entropy_runs_fused():
    net = mx.gluon.nn.Dense(4, in_units=3)
    net.initialize(mx.init.Xavier())
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    x, y = mx.nd.array(np.random.RandomState(2).randn(5, 3)), mx.nd.array([0, 3, 1, 2, 1])
    for _ in range(2):  # a call signature's first run is eager; the second is composed
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
    from symgraph.imperative import deferred
    labels = [op for cg, *_ in deferred._COMPOSED.values() for pool in cg._pools.values()
              for s in pool for op in _ops(s.exe)]
    assert "_log_softmax_pick" in labels
    with config.override(graph_rewrites=False, defer_recorded=False):
        w = net.weight.grad().asnumpy().copy()
        with mx.autograd.record():
            loss2 = loss_fn(net(x), y)
        loss2.backward()
    np.testing.assert_allclose(loss.asnumpy(), loss2.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(w, net.weight.grad().asnumpy(), rtol=1e-5, atol=1e-7)
