"""Behaviours of MXNet 1.9.1's ``tests/python/unittest/test_operator.py``, ported.

Each test names the MXNet test it comes from; the expected values were read from the MXNet
1.9.1 oracle. Nothing here imports MXNet.
"""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError


def _run(sym, args, head=None):
    grads = {k: mx.nd.zeros(v.shape, dtype=v.dtype) for k, v in args.items()}
    exe = sym.bind(mx.cpu(), args=args, args_grad=grads)
    out = exe.forward(is_train=True)[0].asnumpy()
    if head is not None:
        exe.backward([head])
    return out, {k: g.asnumpy() for k, g in grads.items()}


def test_binary_op_int_mod_div_like_mxnet():
    """test_binary_op/test_broadcast_binary_op: integer mod by 0 is 0; int division truncates."""
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    args = {"a": mx.nd.array([5, -5, -7, 7, 0], dtype="int32"),
            "b": mx.nd.array([3, 3, -3, 0, 0], dtype="int32")}
    for sym in (a % b, mx.sym.broadcast_mod(a, b)):
        out, _ = _run(sym, dict(args))
        assert out.tolist() == [2, 1, -1, 0, 0] and out.dtype == np.int32
    for sym in (a / b, mx.sym.broadcast_div(a, b)):
        out, _ = _run(sym, dict(args))
        assert out.tolist() == [1, -1, 2, 0, 0] and out.dtype == np.int32
    assert (args["a"] % 0).asnumpy().tolist() == [0] * 5
    assert (5 % args["b"]).asnumpy().tolist() == [2, 2, -1, 0, 0]
    floats = mx.nd.array([5.0, -5.0]) % mx.nd.zeros(2)
    assert floats.asnumpy().tolist() == [0.0, 0.0]


def test_binary_op_int_mod_backward_like_mxnet():
    """test_binary_op ``test_bmod_int``: a zero divisor gives finite (zero) gradients."""
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    sym = mx.sym.cast(a, dtype="int32") % mx.sym.cast(b, dtype="int32")
    args = {"a": mx.nd.array([5, -5, 7, 0]), "b": mx.nd.array([0, 0, 3, 0])}
    out, grads = _run(sym, args, head=mx.nd.array([0.5, 0.5, 0.25, 0.5]))
    assert out.tolist() == [0, 0, 1, 0]
    assert grads["a"].tolist() == [0] * 4 and grads["b"].tolist() == [0] * 4
    for dtype, want_a, want_b in (("int32", [0] * 4, [0] * 4),
                                  ("float32", [3.0] * 4, [-6.0, 9.0, -6.0, 0.0])):
        args = {"a": mx.nd.array([5, -5, 7, 0], dtype=dtype),
                "b": mx.nd.array([2, 2, 3, 4], dtype=dtype)}
        for sym in (a % b, mx.sym.broadcast_mod(a, b)):  # MXNet: integer mod grads are 0
            _, grads = _run(sym, dict(args), head=mx.nd.array([3] * 4, dtype=dtype))
            assert grads["a"].tolist() == want_a and grads["b"].tolist() == want_b


def test_convolution_independent_gradients_grad_req_like_mxnet():
    """test_convolution_independent_gradients: a grad_req dict may name non-arguments."""
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    net = mx.sym.FullyConnected(x, w, num_hidden=2, no_bias=True)
    args = {"x": mx.nd.ones((1, 3)), "w": mx.nd.ones((2, 3))}
    grads = {"x": mx.nd.zeros((1, 3)), "w": mx.nd.ones((2, 3)), "b": mx.nd.zeros(2)}
    exe = net.bind(mx.cpu(), args, args_grad=grads,
                   grad_req={"w": "add", "b": "write", "parameters": "null"})
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((1, 2)))
    assert grads["w"].asnumpy().tolist() == [[2.0] * 3] * 2  # added to the ones
    assert grads["x"].asnumpy().tolist() == [[0.0] * 3]  # not named: null
    exe = net.simple_bind(mx.cpu(), x=(1, 3), grad_req={"x": "write", "bogus": "add"})
    assert exe.grad_dict["x"] is not None and exe.grad_dict["w"] is None


def test_transpose_infer_shape_back_like_mxnet():
    """test_transpose_infer_shape_back/_mixed: -1 in ``ones(shape=)`` is inferred backwards."""
    for first, second in (((2, 3), (-1, -1)), ((2, -1), (3, -1))):
        b = mx.sym.ones(shape=first) + mx.sym.transpose(mx.sym.ones(shape=second))
        _, out_shapes, _ = b.infer_shape()
        assert out_shapes == [(2, 3)]
        out = b.bind(mx.cpu(), args={}).forward()[0]
        assert out.shape == (2, 3) and out.asnumpy().tolist() == [[2.0] * 3] * 2


def test_slice_partial_infer_like_mxnet():
    """test_slice_partial_infer: a ``var(shape=(-1, 20))`` under np_shape has an unknown dim."""
    with mx.np_shape():
        data = mx.sym.var(name="data", shape=(-1, 20))
        out = mx.sym.slice(data, begin=(None, 3), end=(None, 10), step=(None, 2))
        assert out.infer_shape_partial()[1][0] == (-1, 4)
    data = mx.sym.var(name="data", shape=(0, 20))
    out = mx.sym.slice(data, begin=(2, 3), end=(None, 10))
    assert out.infer_shape_partial()[1][0] == (0, 7)


def test_zero_size_tensor_creation_like_mxnet():
    """test_zero_size_tensor_creation/test_scalar_tensor_creation: legacy shapes read 0 as
    unknown, so ``zeros``/``ones`` of such shapes raise; under np_shape they are arrays."""
    for fn in (mx.nd.zeros, mx.nd.ones):
        for shape in ((0, 1, 3, 0), ()):
            with pytest.raises(MXNetError, match="inferring shapes"):
                fn(shape=shape)
    with mx.np_shape():
        assert mx.nd.ones(shape=(0, 1, 0, 4)).shape == (0, 1, 0, 4)
        assert mx.nd.ones(shape=()).asnumpy().tolist() == 1.0


def test_zero_size_min_max_like_mxnet():
    """test_zero_size_min_max: min/max of a zero-size array raise MXNetError (sum does not)."""
    with mx.np_shape():
        a = mx.nd.zeros(shape=(5, 0))
        for reduce in (a.min, a.max):
            with pytest.raises(MXNetError, match="size should > 0"):
                reduce()
        assert a.sum().asnumpy().tolist() == [0.0]


def test_reshape_like_mxnet():
    """test_reshape: reverse=True reverses the codes (-4 groups too); the deprecated
    ``target_shape`` reads 0 as "infer"; an unknown input dim is inferred from the output."""
    data = mx.sym.Variable("data")
    cases = [((64,), (16, 4, -4), (16, 4)), ((64,), (16, -1, -4), (16, 4)),
             ((1, 2, 3, 64), (-2, -1, 16, -4), (1, 2, 3, 4, 16))]
    for src, spec, want in cases:
        assert mx.sym.Reshape(data, shape=spec, reverse=True).infer_shape(data=src)[1] == [want]
    net = mx.sym.load_json(mx.sym.Reshape(data, target_shape=(2, 0)).tojson())
    assert net.infer_shape(data=(2, 3, 5, 5))[1] == [(2, 75)]
    net = mx.sym.Reshape(data, target_shape=(7, 0, 5), keep_highest=True)
    assert net.infer_shape(data=(2, 3, 5, 5))[1] == [(2, 15, 5)]
    net = mx.sym.elemwise_add(data.reshape((6, 1, -2)), mx.sym.ones(shape=(6, 1, 5, 6)))
    assert net.infer_shape(data=(0, 3, 5, 6))[:2] == ([(2, 3, 5, 6)], [(6, 1, 5, 6)])
    assert data.reshape((-4, 2, -1, 0)).infer_shape_partial(data=(0, 3))[1] == [(2, 0, 3)]


def test_prelu_extra_out_grads_like_mxnet():
    """test_prelu: ``backward`` reads one out_grad per output and ignores further ones."""
    x = mx.sym.Variable("x")
    exe = (x * 2).simple_bind(mx.cpu(), x=(2,))
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones(2), mx.nd.ones(5)])
    assert exe.grad_dict["x"].asnumpy().tolist() == [2.0, 2.0]
    with pytest.raises(MXNetError, match="head_gradient|out_grads"):
        exe.backward([])


def test_softmax_with_length_grads_like_mxnet():
    """test_softmax_with_length: a float64 gradient array for a float16 argument takes the
    gradient cast, and the integer ``length`` input's gradient is written as zeros."""
    data, length = mx.sym.Variable("data"), mx.sym.Variable("length")
    sym = mx.sym.softmax(data=data, length=length, use_length=True, axis=1)
    x = mx.nd.array(np.random.RandomState(0).normal(size=(2, 4, 3)), dtype="float16")
    lens = mx.nd.array([[1, 4, 2], [3, 3, 1]], dtype="int32")
    grads = {"data": mx.nd.ones((2, 4, 3), dtype="float64") * 7,
             "length": mx.nd.ones((2, 3), dtype="int32") * 7}
    exe = sym.bind(mx.cpu(), {"data": x, "length": lens}, args_grad=grads)
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2, 4, 3), dtype="float16")])
    assert grads["data"].dtype == np.float64
    np.testing.assert_allclose(grads["data"].asnumpy(), 0.0, atol=2e-3)  # d(sum softmax) = 0
    assert grads["length"].asnumpy().tolist() == [[0, 0, 0]] * 2
    a, i = mx.sym.Variable("a"), mx.sym.Variable("i")
    grads = {"a": mx.nd.zeros((3, 2)), "i": mx.nd.ones(2) * 7}
    exe = mx.sym.take(a, i).bind(mx.cpu(), {"a": mx.nd.ones((3, 2)), "i": mx.nd.array([0, 2])},
                                 args_grad=grads)
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2, 2))])
    assert grads["i"].asnumpy().tolist() == [0.0, 0.0]
    assert grads["a"].asnumpy().tolist() == [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]


def test_gather_nd_check_bound_like_mxnet():
    """test_gather_nd_check_bound: an index outside [-size, size) raises IndexError."""
    data = mx.nd.array([[0, 1, 2], [3, 4, 5]])
    for bad, value in (([[0, 1, 0], [0, 1, 3]], 3), ([[0, 1, 0], [0, 1, -5]], -5)):
        with pytest.raises(IndexError, match=f"index {value} is out of bounds for axis 1 with "
                                             "size 3"):
            mx.nd.gather_nd(data, mx.nd.array(bad)).asnumpy()
    wrapped = mx.nd.gather_nd(data, mx.nd.array([[0, 1, -1], [0, 1, -2]]))
    assert wrapped.asnumpy().tolist() == [0.0, 4.0, 4.0]


def test_get_operator_arguments_like_mxnet():
    """test_get_all_registered_operators/test_get_operator_arguments (``mxnet.operator``)."""
    from symgraph.operator import (
        OperatorArguments,
        get_all_registered_operators,
        get_operator_arguments,
    )
    ops = get_all_registered_operators()
    assert isinstance(ops, list) and "Activation" in ops and "FullyConnected" in ops
    args = get_operator_arguments("Activation")
    assert isinstance(args, OperatorArguments) and args.narg == 2
    assert args.names == ["data", "act_type"]
    assert args.types == ["NDArray-or-Symbol",
                          "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"]
    fc = get_operator_arguments("FullyConnected")
    assert fc.names == ["data", "weight", "bias", "num_hidden", "no_bias", "flatten"]
    assert fc.types[3:] == ["int, required", "boolean, optional, default=0",
                            "boolean, optional, default=1"]
    with pytest.raises(MXNetError, match="nope is not registered"):
        get_operator_arguments("nope")
    assert mx.operator.register("my_op")(mx.operator.CustomOpProp) is mx.operator.CustomOpProp


def test_monitor_with_variable_input_shape_like_mxnet():
    """test_monitor_with_variable_input_shape/test_op_output_names_monitor: a reshaped
    executor (a Module fed a new input shape) keeps the monitor callback, and callbacks may
    read the name with ``py_str`` as MXNet hands them C strings."""
    seen = {}
    data = mx.sym.Variable("data", shape=(1, 3, 10, 10))
    net = mx.sym.Convolution(data, kernel=(1, 1), num_filter=1, name="conv")
    mod = mx.mod.Module(symbol=net, label_names=None)
    mod.bind(for_training=False, data_shapes=[("data", (1, 3, 10, 10))])
    mod.init_params()
    mod._exec_group.execs[0].set_monitor_callback(
        lambda name, arr: seen.setdefault(mx.base.py_str(name), arr.shape), monitor_all=False)
    mod.forward(mx.io.DataBatch([mx.nd.ones((1, 3, 10, 14))]), is_train=False)
    assert seen == {"conv_output": (1, 1, 10, 14)}
    exe = net.simple_bind(mx.cpu(), grad_req="null")
    names = []
    exe.set_monitor_callback(lambda name, arr: names.append(name), monitor_all=False)
    exe.reshape(allow_up_sizing=True, data=(2, 3, 10, 10)).forward()
    assert names == ["conv_output"] and isinstance(names[0], str)


def test_take_grads_like_mxnet():
    """test_take_grads: an unhybridized HybridBlock runs ``hybrid_forward`` on NDArrays,
    so it may hand an NDArray to an ``F`` op (``F.take(x, nd.array([0]))``)."""
    from symgraph import autograd, gluon

    class Model(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.dense = gluon.nn.Dense(3, flatten=False)

        def hybrid_forward(self, F, x):
            return F.take(self.dense(x), mx.nd.array([0]), axis=-1)

    model = Model()
    model.initialize()
    x = mx.nd.array(np.arange(8.0).reshape(2, 4))
    with autograd.record():
        y = model(x)
    y.backward()
    weight = model.dense.weight
    assert y.shape == (2, 1)
    np.testing.assert_allclose(y.asnumpy()[:, 0], (x.asnumpy() @ weight.data().asnumpy().T)[:, 0]
                               + model.dense.bias.data().asnumpy()[0], rtol=1e-5)
    grad = weight.grad().asnumpy()
    assert grad[0].tolist() == x.asnumpy().sum(axis=0).tolist() and not grad[1:].any()
    model.hybridize()
    with pytest.raises(TypeError):  # a traced graph cannot hold the NDArray (MXNet: assert)
        model(x)


def test_take_raise_mode_error_appears_where_the_output_is_read():
    """test_take (mode='raise'): MXNet's engine reports an out-of-range index when the output
    is read, not in ``forward``; the next good forward clears it."""
    idx = mx.sym.BlockGrad(mx.sym.Variable("indices"))
    out = mx.sym.take(a=mx.sym.Variable("a"), indices=idx, axis=0, mode="raise")
    exe = out.simple_bind(mx.cpu(), a=(3, 2), indices=(2,))
    exe.arg_dict["a"][:] = mx.nd.array(np.arange(6).reshape(3, 2))
    exe.arg_dict["indices"][:] = mx.nd.array([5, 0])
    outs = exe.forward(is_train=True)
    for read in (outs[0].asnumpy, outs[0].wait_to_read, exe.outputs[0].asnumpy):
        with pytest.raises(MXNetError, match="indices out of bound"):
            read()
    exe.arg_dict["indices"][:] = mx.nd.array([2, 0])
    assert exe.forward()[0].asnumpy().tolist() == [[4.0, 5.0], [0.0, 1.0]]


def test_one_hot_depth_zero_gives_an_empty_array():
    """test_one_hot::test_zero_depth: depth 0 is an empty (..., 0) array, not an error."""
    out = mx.nd.one_hot(mx.nd.array(np.ones((2, 4, 3)), dtype="int32"), depth=0, dtype="int32")
    assert out.shape == (2, 4, 3, 0) and out.asnumpy().dtype == np.int32
    with pytest.raises(MXNetError, match="depth must not be negative"):
        mx.nd.one_hot(mx.nd.array([1, 2]), depth=-1)


def test_arange_infer_range_takes_its_length_from_the_graph():
    """test_init::test_arange_inferstop: ``arange(start, infer_range=True)`` without ``stop``
    gets its length from the op it feeds."""
    s = mx.sym.arange(start=2, step=3, infer_range=True) + mx.sym.zeros(shape=(4,))
    exe = s.bind(mx.cpu(), args={})
    assert exe.forward()[0].asnumpy().tolist() == [2.0, 5.0, 8.0, 11.0]


def test_many_recorded_calls_of_one_graph_all_keep_their_backward():
    """test_take::check_autograd_req: 16 recorded calls of one op awaiting one backward
    (MXNet keeps every recorded call's values until the backward)."""
    x = mx.nd.array(np.arange(16.0).reshape(2, 8))
    x.attach_grad()
    with mx.autograd.record():
        picked = [x.take(mx.nd.array([i])).squeeze(axis=0).take(mx.nd.array([j]))
                  for i in range(2) for j in range(8)]
        total = mx.nd.stack(*picked).sum()
    total.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.ones((2, 8)))
