"""Custom Python operators (``mx.operator``, ``sym.Custom``, ``nd.Custom``): symbolic graphs,
imperative calls under autograd, gluon, the triton backend, JSON as MXNet writes it
(``tests/fixtures/custom_op/generate.py``), errors, and MXNet's custom-softmax example
(example/numpy-ops/custom_softmax.py) training an MLP."""
from __future__ import annotations

import json
import multiprocessing
import warnings
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph import config
from symgraph.base import MXNetError

FIXTURES = Path(__file__).parent / "fixtures" / "custom_op"
CREATED: list[tuple] = []  # (op_type, shapes, dtypes) per create_operator call


class Scale(mx.operator.CustomOp):
    """out = data * factor + shift; counts forwards in its aux state."""

    def __init__(self, factor):
        super().__init__()
        self.factor = factor
        self.saved = None

    def forward(self, is_train, req, in_data, out_data, aux):
        aux[0][:] = aux[0] + 1
        self.saved = in_data[0].asnumpy()  # per-node state read back in backward
        self.assign(out_data[0], req[0], in_data[0] * self.factor + in_data[1])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        assert np.array_equal(self.saved, in_data[0].asnumpy())
        self.assign(in_grad[0], req[0], out_grad[0] * self.factor)
        self.assign(in_grad[1], req[1], out_grad[0])


@mx.operator.register("fixture_scale")
class ScaleProp(mx.operator.CustomOpProp):
    def __init__(self, factor, bias="0"):
        super().__init__(need_top_grad=True)
        assert isinstance(factor, str) and isinstance(bias, str)  # MXNet passes strings
        self.factor = float(factor)

    def list_arguments(self):
        return ["data", "shift"]

    def list_auxiliary_states(self):
        return ["count"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [(1,)]

    def create_operator(self, ctx, shapes, dtypes):
        CREATED.append(("fixture_scale", ctx, shapes, dtypes))
        return Scale(self.factor)


class SquareLoss(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        assert out_grad[0] is None  # need_top_grad=False: no head gradient
        self.assign(in_grad[0], req[0], 2 * in_data[0])


@mx.operator.register("fixture_sqloss")
class SquareLossProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=False)

    def create_operator(self, ctx, shapes, dtypes):
        return SquareLoss()


class SplitSum(mx.operator.CustomOp):
    """Two outputs: the row sums and the column sums of a matrix."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0]
        self.assign(out_data[0], req[0], mx.nd.sum(x, axis=1))
        self.assign(out_data[1], req[1], mx.nd.sum(x, axis=0))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        rows = out_grad[0].reshape((-1, 1))
        cols = out_grad[1].reshape((1, -1))
        self.assign(in_grad[0], req[0], mx.nd.broadcast_add(rows, cols))


@mx.operator.register("split_sum")
class SplitSumProp(mx.operator.CustomOpProp):
    def list_outputs(self):
        return ["rows", "cols"]

    def infer_shape(self, in_shape):
        n, m = in_shape[0]
        return in_shape, [(n,), (m,)], []

    def create_operator(self, ctx, shapes, dtypes):
        return SplitSum()


def _fixture_net():
    data, shift = mx.sym.Variable("data"), mx.sym.Variable("shift")
    scaled = mx.sym.Custom(data, shift, op_type="fixture_scale", factor=2.5, name="scale")
    return mx.sym.Custom(scaled, op_type="fixture_sqloss", name="loss")


def test_symbol_inference_and_names():
    net = _fixture_net()
    assert net.list_arguments() == ["data", "shift"]
    assert net.list_auxiliary_states() == ["scale_count"]
    assert net.list_outputs() == ["loss_output"]
    args, outs, aux = net.infer_shape(data=(2, 3), shift=(2, 3))
    assert args == [(2, 3), (2, 3)] and outs == [(2, 3)] and aux == [(1,)]
    assert net.infer_type(data="float64", shift="float64")[1] == [np.float64]
    assert mx.sym.Custom(mx.sym.Variable("x"), op_type="custom_op").name.startswith("custom")
    assert mx.operator.get_operator_arguments("Custom") == (
        2, ["data", "op_type"], ["NDArray-or-Symbol[]", "string"])  # as MXNet 1.9.1 lists it


def test_json_matches_mxnet_and_loads():
    ours = json.loads(_fixture_net().tojson())
    theirs = json.loads((FIXTURES / "custom_graph.json").read_text())
    assert ours == theirs
    loaded = mx.sym.load_json((FIXTURES / "custom_graph.json").read_text())
    assert json.loads(loaded.tojson()) == theirs


def test_bind_forward_backward_match_mxnet():
    """Outputs, gradients (no head gradient: the loss has need_top_grad=False) and the aux
    state updated in place equal MXNet 1.9.1's on the same graph and inputs."""
    want = np.load(FIXTURES / "custom_values.npz")
    net = mx.sym.load_json((FIXTURES / "custom_graph.json").read_text())
    CREATED.clear()
    exe = net.simple_bind(mx.cpu(), data=(2, 3), shift=(2, 3))
    exe.arg_dict["data"][:] = want["data"]
    exe.arg_dict["shift"][:] = want["shift"]
    for step in range(2):
        exe.forward(is_train=True)
        exe.backward()
        np.testing.assert_allclose(exe.outputs[0].asnumpy(), want["out"], rtol=1e-6)
        np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), want["grad_data"], rtol=1e-5)
        np.testing.assert_allclose(exe.grad_dict["shift"].asnumpy(), want["grad_shift"],
                                   rtol=1e-5)
        assert exe.aux_dict["scale_count"].asnumpy()[0] == want["count"][0] + step
    # one operator per node per executor, made with the context, shapes and dtype flags
    assert CREATED == [("fixture_scale", mx.cpu(), [[2, 3], [2, 3], [1]], [0, 0, 0])]


def test_numeric_gradient_and_multiple_outputs():
    x = mx.sym.Variable("x")
    out = mx.sym.Custom(x, op_type="split_sum", name="ss")
    assert out.list_outputs() == ["ss_rows", "ss_cols"]
    value = np.random.RandomState(0).uniform(-1, 1, (3, 4))
    both = mx.sym.Concat(out[0], out[1], dim=0)
    mx.test_utils.check_numeric_gradient(both, [value], numeric_eps=1e-3, rtol=1e-2, atol=1e-3)
    rows, cols = mx.nd.Custom(mx.nd.array(value), op_type="split_sum")
    np.testing.assert_allclose(rows.asnumpy(), value.sum(1), rtol=1e-5)
    np.testing.assert_allclose(cols.asnumpy(), value.sum(0), rtol=1e-5)


def test_each_node_keeps_its_own_operator():
    """Two nodes with equal attributes get separate operators (forward state per node)."""
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    s1 = mx.sym.Custom(a, b, op_type="fixture_scale", factor=2, name="s1")
    s2 = mx.sym.Custom(s1, b, op_type="fixture_scale", factor=2, name="s2")
    exe = s2.simple_bind(mx.cpu(), a=(2, 2), b=(2, 2))
    x, y = np.arange(4.0).reshape(2, 2), np.ones((2, 2))
    exe.arg_dict["a"][:] = x
    exe.arg_dict["b"][:] = y
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 2)))
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), (x * 2 + y) * 2 + y)
    np.testing.assert_allclose(exe.grad_dict["a"].asnumpy(), np.full((2, 2), 4.0))
    np.testing.assert_allclose(exe.grad_dict["b"].asnumpy(), np.full((2, 2), 3.0))


def test_composed_copies_keep_their_own_operators():
    """Calling a symbol twice copies its Custom node: each copy gets its own operator
    (MXNet creates one per node), so forward state is not shared."""
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    f = mx.sym.Custom(a, b, op_type="fixture_scale", factor=2, name="s")
    net = mx.sym.Custom(f(a=f(a=a, b=b) * 3, b=b), op_type="fixture_sqloss")
    CREATED.clear()
    exe = net.simple_bind(mx.cpu(), a=(1, 2), b=(1, 2))
    x = np.array([[1.0, 2.0]])
    exe.arg_dict["a"][:] = x
    exe.arg_dict["b"][:] = 1
    exe.forward(is_train=True)
    exe.backward()
    y2 = (x * 2 + 1) * 3 * 2 + 1
    np.testing.assert_allclose(exe.grad_dict["a"].asnumpy(), 2 * y2 * 2 * 3 * 2)
    assert len(CREATED) == 2


def test_imperative_and_autograd():
    x = mx.nd.array([[1.0, -2.0], [3.0, 0.5]])
    shift, count = mx.nd.ones((2, 2)), mx.nd.zeros((1,))
    x.attach_grad()
    shift.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, shift, count, op_type="fixture_scale", factor="3")
        loss = mx.nd.Custom(y, op_type="fixture_sqloss")
    loss.backward()
    xv = x.asnumpy()
    np.testing.assert_allclose(y.asnumpy(), xv * 3 + 1)
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * (xv * 3 + 1) * 3, rtol=1e-6)
    np.testing.assert_allclose(shift.grad.asnumpy(), 2 * (xv * 3 + 1), rtol=1e-6)
    assert count.asnumpy()[0] == 1  # aux state updated in place
    plain = mx.nd.Custom(x, shift, count, op_type="fixture_scale", factor=1)
    np.testing.assert_allclose(plain.asnumpy(), xv + 1)


class _Net(mx.gluon.HybridBlock):
    def __init__(self):
        super().__init__()
        with self.name_scope():
            self.dense = mx.gluon.nn.Dense(3, in_units=4)

    def hybrid_forward(self, F, x):
        return F.Custom(self.dense(x), op_type="split_sum")[0]


@pytest.mark.parametrize("hybridize", [False, True])
def test_gluon_hybrid_block(hybridize):
    net = _Net()
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    x = mx.nd.array(np.random.RandomState(1).uniform(-1, 1, (5, 4)))
    with mx.autograd.record():
        out = net(x)
    out.backward()
    w, b = net.dense.weight.data().asnumpy(), net.dense.bias.data().asnumpy()
    xv = x.asnumpy()
    np.testing.assert_allclose(out.asnumpy(), (xv @ w.T + b).sum(1), rtol=1e-5)
    # d sum(rows)/dW: every output unit sees each row's x, column sums add nothing (no grad)
    np.testing.assert_allclose(net.dense.weight.grad().asnumpy(),
                               np.tile(xv.sum(0), (3, 1)), rtol=1e-5)


def test_triton_backend_runs_python_kernel():
    with config.override(backend="triton"):
        exe = _fixture_net().simple_bind(mx.cpu(), data=(2, 3), shift=(2, 3))
    want = np.load(FIXTURES / "custom_values.npz")
    exe.arg_dict["data"][:] = want["data"]
    exe.arg_dict["shift"][:] = want["shift"]
    exe.forward(is_train=True)
    exe.backward()
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), want["out"], rtol=1e-6)
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), want["grad_data"], rtol=1e-5)


class Broken(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        if in_data[0].shape[0] != 3:  # three-row inputs fail in backward instead
            raise ValueError("broken forward")

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        raise KeyError("broken backward")


@mx.operator.register("broken")
class BrokenProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return Broken()


@mx.operator.register("wants_csr")
class WantsCsrProp(mx.operator.CustomOpProp):
    def infer_storage_type(self, in_stype):
        return in_stype, ["csr"], []


def test_errors_are_mxnet_errors():
    with pytest.raises(MXNetError, match="broken forward"):
        mx.nd.Custom(mx.nd.ones((2,)), op_type="broken").wait_to_read()
    exe = mx.sym.Custom(mx.sym.Variable("x"), op_type="broken").simple_bind(mx.cpu(), x=(2,))
    out = exe.forward()[0]  # raised where the output is read, as MXNet's engine does
    with pytest.raises(MXNetError, match="broken forward"):
        out.wait_to_read()
    x = mx.nd.ones((3,))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="broken")
    with pytest.raises(MXNetError, match="broken backward"):
        y.backward()
    with pytest.raises(MXNetError, match="Cannot find custom operator nope"):
        mx.sym.Custom(mx.sym.Variable("x"), op_type="nope")
    with pytest.raises(MXNetError, match="op_type"):
        mx.nd.Custom(mx.nd.ones((2,)))
    with pytest.raises(MXNetError, match="fixture_scale"):  # prop constructor rejects kwargs
        mx.sym.Custom(mx.sym.Variable("x"), op_type="fixture_scale", wrong=1)
    with pytest.raises(MXNetError, match="dense only"):  # sparse storage: issue #20
        mx.nd.Custom(mx.nd.ones((2,)), op_type="wants_csr")
    with pytest.raises(MXNetError, match="req must be one of"):
        mx.operator.CustomOp().assign(mx.nd.ones((1,)), "bogus", mx.nd.ones((1,)))


def _custom_add_in_child():
    out = mx.nd.Custom(mx.nd.array([1.0]), mx.nd.array([2.0]), mx.nd.zeros((1,)),
                       op_type="fixture_scale", factor=1)
    assert out.asnumpy()[0] == 3.0


def test_custom_op_in_forked_process():
    """MXNet's test_custom_op_fork (issue 14396): a child process runs custom ops too."""
    _custom_add_in_child()
    proc = multiprocessing.get_context("fork").Process(target=_custom_add_in_child)
    proc.start()
    proc.join(20)
    assert proc.exitcode == 0


def test_numpy_op_and_ndarray_op():
    class NumpySquare(mx.operator.NumpyOp):
        def forward(self, in_data, out_data):
            out_data[0][:] = in_data[0] ** 2

        def backward(self, out_grad, in_data, out_data, in_grad):
            in_grad[0][:] = 2 * in_data[0] * out_grad[0]

    class NDArrayTwice(mx.operator.NDArrayOp):
        def forward(self, in_data, out_data):
            out_data[0][:] = in_data[0] * 2

        def backward(self, out_grad, in_data, out_data, in_grad):
            in_grad[0][:] = out_grad[0] * 2

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        net = NDArrayTwice()(NumpySquare()(mx.sym.Variable("x")))
    value = np.array([[1.0, -2.0, 0.5]])
    exe = net.simple_bind(mx.cpu(), x=(1, 3))
    exe.arg_dict["x"][:] = value
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((1, 3)))
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), 2 * value ** 2)
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), 4 * value)


# ---------------------------------------------------------------- MXNet's custom softmax example

class Softmax(mx.operator.CustomOp):
    """example/numpy-ops/custom_softmax.py's operator (``np.int`` spelled ``int``)."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        y = np.exp(x - x.max(axis=1).reshape((x.shape[0], 1)))
        y /= y.sum(axis=1).reshape((x.shape[0], 1))
        self.assign(out_data[0], req[0], mx.nd.array(y))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        label = in_data[1].asnumpy().ravel().astype(int)
        y = out_data[0].asnumpy()
        y[np.arange(label.shape[0]), label] -= 1.0
        self.assign(in_grad[0], req[0], mx.nd.array(y))


@mx.operator.register("example_softmax")
class SoftmaxProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=False)

    def list_arguments(self):
        return ["data", "label"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        return [in_shape[0], (in_shape[0][0],)], [in_shape[0]], []

    def infer_type(self, in_type):
        return in_type, [in_type[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return Softmax()


def _mlp(head):
    data = mx.sym.Variable("data")
    act1 = mx.sym.Activation(mx.sym.FullyConnected(data, name="fc1", num_hidden=32),
                             act_type="relu")
    act2 = mx.sym.Activation(mx.sym.FullyConnected(act1, name="fc2", num_hidden=16),
                             act_type="relu")
    return head(mx.sym.FullyConnected(act2, name="fc3", num_hidden=4))


def _blobs(n=300, dim=16, classes=4):
    rng = np.random.RandomState(0)
    centers = rng.normal(0, 2, (classes, dim))
    label = rng.randint(0, classes, n)
    return (centers[label] + rng.normal(0, 1, (n, dim))).astype(np.float32), label


def _fit(net, data, label, arg_params):
    it = mx.io.NDArrayIter(data, label.astype(np.float32), batch_size=50, shuffle=False)
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.fit(it, optimizer="sgd", num_epoch=3, arg_params=arg_params,
            optimizer_params={"learning_rate": 0.01, "momentum": 0.9, "wd": 1e-5})
    return mod


def test_custom_softmax_example_trains_like_softmax_output():
    """The example's MLP with a Python softmax learns synthetic blobs, step for step as the
    same MLP with the built-in SoftmaxOutput (same gradient y - onehot) does."""
    data, label = _blobs()
    custom = _mlp(lambda x: mx.sym.Custom(data=x, name="softmax", op_type="example_softmax"))
    builtin = _mlp(lambda x: mx.sym.SoftmaxOutput(x, name="softmax"))
    rng = np.random.RandomState(1)
    shapes = custom.infer_shape(data=(50, 16))[0]
    init = {n: mx.nd.array(rng.uniform(-0.3, 0.3, s)) for n, s in
            zip(custom.list_arguments(), shapes) if n not in ("data", "softmax_label")}
    ours = _fit(custom, data, label, init)
    ref = _fit(builtin, data, label, init)
    test = mx.io.NDArrayIter(data, label.astype(np.float32), batch_size=50)
    assert ours.score(test, "acc")[0][1] > 0.9
    for name, value in ref.get_params()[0].items():
        np.testing.assert_allclose(ours.get_params()[0][name].asnumpy(), value.asnumpy(),
                                   rtol=1e-3, atol=1e-5, err_msg=name)


class WeightedLogisticRegression(mx.operator.CustomOp):
    """example/numpy-ops/weighted_logistic_regression.py's operator, unchanged."""

    def __init__(self, pos_grad_scale, neg_grad_scale):
        self.pos_grad_scale = float(pos_grad_scale)
        self.neg_grad_scale = float(neg_grad_scale)

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.divide(1, (1 + mx.nd.exp(- in_data[0]))))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        in_grad[0][:] = ((out_data[0] - 1) * in_data[1] * self.pos_grad_scale
                         + out_data[0] * (1 - in_data[1]) * self.neg_grad_scale) \
            / out_data[0].shape[1]


@mx.operator.register("weighted_logistic_regression")
class WeightedLogisticRegressionProp(mx.operator.CustomOpProp):
    def __init__(self, pos_grad_scale, neg_grad_scale):
        self.pos_grad_scale = pos_grad_scale
        self.neg_grad_scale = neg_grad_scale
        super().__init__(False)

    def list_arguments(self):
        return ["data", "label"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        shape = in_shape[0]
        return [shape, shape], [shape]

    def create_operator(self, ctx, shapes, dtypes):
        return WeightedLogisticRegression(self.pos_grad_scale, self.neg_grad_scale)


def test_weighted_logistic_regression_example():
    """The example's main block: the Custom loss (no head gradient, kwargs as strings)
    beside LogisticRegressionOutput on the same data (MXNet 1.9.1 prints the same values)."""
    m, n, pos, neg = 2, 5, 1, 0.1
    data = mx.sym.Variable("data")
    wlr = mx.sym.Custom(data, pos_grad_scale=pos, neg_grad_scale=neg, name="wlr",
                        op_type="weighted_logistic_regression")
    lr = mx.sym.LogisticRegressionOutput(data, name="lr")
    label = np.vstack([np.ones([m, n]), np.zeros([m, n])])
    exes = []
    for net, name in ((wlr, "wlr_label"), (lr, "lr_label")):
        exe = net.simple_bind(ctx=mx.cpu(), data=(2 * m, n))
        exe.arg_dict["data"][:] = np.ones([2 * m, n])
        exe.arg_dict[name][:] = label
        exe.forward(is_train=True)
        exe.backward()
        exes.append(exe)
    y = 1 / (1 + np.exp(-1.0))
    for exe in exes:
        np.testing.assert_allclose(exe.outputs[0].asnumpy(), np.full((2 * m, n), y), rtol=1e-6)
    want = ((y - 1) * label * pos + y * (1 - label) * neg) / n
    np.testing.assert_allclose(exes[0].grad_dict["data"].asnumpy(), want, rtol=1e-5)
    # MXNet divides by the outputs per sample, as the example does
    np.testing.assert_allclose(exes[1].grad_dict["data"].asnumpy(), (y - label) / n, rtol=1e-5)
