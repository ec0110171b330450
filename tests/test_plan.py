"""The bound plan: alias elimination, in-place memory planning, gradients written in place."""
from __future__ import annotations

import numpy as np

import symgraph as mx


def test_view_ops_with_unchanged_shapes_launch_nothing():
    x = mx.sym.Variable("x")
    net = mx.sym.relu(mx.sym.Flatten(mx.sym.Reshape(x, shape=(0, -1))))
    exe = net.simple_bind(mx.cpu(), grad_req="null", x=(3, 4))
    assert [s[-1].op.name for s in exe._plan.forward_train] == ["relu"]
    exe.arg_dict["x"][:] = np.arange(12).reshape(3, 4) - 6
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(),
                                  np.maximum(np.arange(12).reshape(3, 4) - 6, 0))


def test_elementwise_chain_is_planned_in_place():
    net = mx.sym.Variable("x")
    for _ in range(5):
        net = mx.sym.sigmoid(mx.sym.relu(net))
    exe = net.simple_bind(mx.cpu(), grad_req="null", x=(64, 64))
    mem = exe._plan.memory
    assert len(mem.block_bytes) == 1  # every step overwrites its dying input
    assert mem.planned_bytes == 64 * 64 * 4
    assert mem.naive_bytes == 10 * 64 * 64 * 4


def test_write_gradients_are_computed_into_their_arrays():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    net = mx.sym.LinearRegressionOutput(net, name="lro")
    exe = net.simple_bind(mx.cpu(), grad_req={"fc_weight": "write", "fc_bias": "add"},
                          data=(4, 5))
    copied = {id(t) for _, t, _ in exe._grad_out}
    assert id(exe.grad_dict["fc_weight"]._t) not in copied  # written by its producing step
    assert id(exe.grad_dict["fc_bias"]._t) in copied  # 'add' accumulates after the step
    rng = np.random.RandomState(0)
    for name in ("data", "fc_weight", "lro_label"):
        exe.arg_dict[name][:] = rng.uniform(-1, 1, exe.arg_dict[name].shape)
    exe.forward(is_train=True)
    exe.backward()
    x, w, y = (exe.arg_dict[n].asnumpy() for n in ("data", "fc_weight", "lro_label"))
    dy = (x @ w.T - y) / 3
    np.testing.assert_allclose(exe.grad_dict["fc_weight"].asnumpy(), dy.T @ x, rtol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["fc_bias"].asnumpy(), dy.sum(0), rtol=1e-5)


def test_intermediates_are_freed_after_their_last_use():
    net = mx.sym.Variable("x")
    for i in range(4):
        net = mx.sym.FullyConnected(net, num_hidden=8, name=f"fc{i}")
    exe = net.simple_bind(mx.cpu(), grad_req="null", x=(2, 8))
    exe.forward()
    live = [v for v in exe._values if v is not None]
    # arguments (x, 4 weights, 4 biases) and the head: nothing else survives the step
    assert len(live) == 9 + 1


def test_outputs_nobody_reads_are_not_computed():
    net = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=2, name="conv")
    net = mx.sym.MakeLoss(mx.sym.sum(net))
    exe = net.simple_bind(mx.cpu(), grad_req={"conv_weight": "write", "conv_bias": "write"},
                          data=(1, 1, 5, 5))
    exe.arg_dict["data"][:] = 1
    exe.forward(is_train=True)
    exe.backward()
    step = next(s for s in exe._plan.backward if s[-1].op.name == "_backward_Convolution")
    assert step[1]["_needed"] == (False, True, True)
    assert exe._values[step[4][0]] is None  # the data gradient was skipped
    np.testing.assert_allclose(exe.grad_dict["conv_weight"].asnumpy(), np.full((2, 1, 3, 3), 9))


def test_zero_gradients_add_nothing_to_sums():
    # x reaches the head twice: through tanh and through BlockGrad, whose gradient is zero;
    # the zero is not summed in (no add_n), as MXNet's zero ops; y, reached only through
    # BlockGrad, still gets its zeros written over whatever its array held
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    net = mx.sym.tanh(x) + mx.sym.BlockGrad(x) + mx.sym.BlockGrad(y)
    exe = net.simple_bind(mx.cpu(), x=(2, 3), y=(2, 3))
    ops = [s[-1].op.name for s in exe._plan.backward]
    assert "add_n" not in ops, ops
    exe.arg_dict["x"][:] = 0.5
    exe.grad_dict["y"][:] = 7.0
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 3)))
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), np.full((2, 3), 1 - np.tanh(0.5) ** 2),
                               rtol=1e-6)
    np.testing.assert_array_equal(exe.grad_dict["y"].asnumpy(), np.zeros((2, 3)))
