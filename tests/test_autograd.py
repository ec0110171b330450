"""``mx.autograd`` over bound executors: recorded NDArray arithmetic, marked variables,
head gradients, write/add, retain_graph, custom Functions and the errors MXNet raises.
Expected gradients are the closed forms of the recorded expressions."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from symgraph import autograd


def _var(values, req="write"):
    x = mx.nd.array(values)
    x.attach_grad(req)
    return x


def test_recording_flags_and_scopes():
    assert not autograd.is_recording() and not autograd.is_training()
    with autograd.record():
        assert autograd.is_recording() and autograd.is_training()
        with autograd.pause():
            assert not autograd.is_recording() and not autograd.is_training()
        with autograd.predict_mode():
            assert autograd.is_recording() and not autograd.is_training()
    with autograd.record(train_mode=False):
        assert autograd.is_recording() and not autograd.is_training()
    with autograd.train_mode():
        assert autograd.is_training() and not autograd.is_recording()
    assert autograd.set_recording(True) is False
    assert autograd.set_recording(False) is True


def test_arithmetic_gradients_match_closed_forms():
    a = np.array([[1.0, -2.0], [3.0, 0.5]], dtype=np.float32)
    b = np.array([[0.5, 4.0], [-1.0, 2.0]], dtype=np.float32)
    x, y = _var(a), _var(b)
    with autograd.record():
        z = ((x * y + 3 * x - y / 2) ** 2).sum() + (-x).mean() + mx.nd.exp(y).sum()
    z.backward()
    inner = a * b + 3 * a - b / 2
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * inner * (b + 3) - 0.25, rtol=1e-5)
    np.testing.assert_allclose(y.grad.asnumpy(), 2 * inner * (a - 0.5) + np.exp(b),
                               rtol=1e-5)
    np.testing.assert_allclose(z.asnumpy(), [(inner ** 2).sum() - a.mean() + np.exp(b).sum()],
                               rtol=1e-5)


def test_broadcasting_and_reflected_scalars():
    x, y = _var([[1.0, 2.0, 3.0]]), _var([[2.0], [4.0]])
    with autograd.record():
        z = (1 / (x + y) + 2 - x).sum()
    z.backward()
    s = np.array([[1.0, 2.0, 3.0]]) + np.array([[2.0], [4.0]])
    np.testing.assert_allclose(x.grad.asnumpy(), (-1 / s ** 2).sum(0, keepdims=True) - 2,
                               rtol=1e-5)
    np.testing.assert_allclose(y.grad.asnumpy(), (-1 / s ** 2).sum(1, keepdims=True),
                               rtol=1e-5)


def test_head_gradients_add_and_write():
    x = _var([1.0, 2.0], req="add")
    for _ in range(2):
        with autograd.record():
            y = x * x
        y.backward(mx.nd.array([1.0, 10.0]))
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * np.array([2.0, 40.0]))
    w = _var([1.0, 2.0])
    for _ in range(2):
        with autograd.record():
            y = w * 3
        y.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), [3.0, 3.0])
    assert w._fresh_grad


def test_shared_subexpression_sums_its_gradients():
    x = _var([2.0, 3.0])
    with autograd.record():
        s = x * x
        z = s * s + s
    autograd.backward([z], [mx.nd.ones((2,))])
    xs = np.array([2.0, 3.0])
    np.testing.assert_allclose(x.grad.asnumpy(), 4 * xs ** 3 + 2 * xs, rtol=1e-6)


def test_retain_graph_and_freed_graph_error():
    x = _var([1.0, 2.0])
    with autograd.record():
        y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 4.0])
    with pytest.raises(mx.base.MXNetError, match="freed"):
        y.backward()


def test_unrecorded_head_raises():
    x = _var([1.0])
    y = x * 2  # not recorded
    with pytest.raises(mx.base.MXNetError, match="not in a computational graph"):
        y.backward()


def test_grad_returns_without_writing():
    x = _var([1.0, 3.0])
    with autograd.record():
        y = (x ** 3).sum()
    g = autograd.grad(y, x)[0]  # a list, as MXNet returns
    np.testing.assert_allclose(g.asnumpy(), [3.0, 27.0])
    np.testing.assert_allclose(x.grad.asnumpy(), [0.0, 0.0])


def test_pause_and_detach_stop_gradients():
    x = _var([1.0, 2.0])
    with autograd.record():
        with autograd.pause():
            c = x * 5  # a constant
        y = (x * c).sum() + (x.detach() * 7).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [5.0, 10.0])


def test_custom_function():
    class Sigmoid(autograd.Function):
        def forward(self, x):
            y = 1 / (1 + mx.nd.exp(-x))
            self.save_for_backward(y)
            return y

        def backward(self, dy):
            (y,) = self.saved_tensors
            return dy * y * (1 - y)
    x = _var([0.0, 1.0])
    with autograd.record():
        z = (Sigmoid()(x) * 2).sum()
    z.backward()
    s = 1 / (1 + np.exp(-np.array([0.0, 1.0])))
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * s * (1 - s), rtol=1e-6)


def test_contexts_are_kept_apart():
    x = mx.nd.array([1.0, 2.0], ctx=mx.cpu(1))
    x.attach_grad()
    with autograd.record():
        y = (x * x).sum()
    assert y.context == mx.cpu(1)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 4.0])
    assert x.grad.context == mx.cpu(1)


def test_values_of_a_freed_graph_are_constants_in_a_new_recording():
    """MXNet (test_ndarray.py::test_cached): an array computed in a graph that a backward
    freed is a constant when a new recording reads it; the old backward's head is not."""
    w, b = _var([1.0, 2.0]), _var([1.0, 1.0])
    with autograd.record():
        b = b + 1
        out = (w * b) * 2
        out.backward()
    with autograd.record():
        b = b + 1  # reads the freed graph's b
        out = (w * b) * 2
        out.backward(retain_graph=True)
        out.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), [6.0, 6.0])  # 2 * b, b = 3 (MXNet's values)
    with autograd.record():
        b = b + 1
        out = (w * b) * 2
    out.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), [8.0, 8.0])
    x = _var([1.0, 2.0])
    with autograd.record():
        y = x * 3
        y.backward()
    with autograd.record():
        z = y + 1
    with pytest.raises(mx.base.MXNetError, match="freed"):
        z.backward()
