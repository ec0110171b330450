"""Gluon Blocks over bound executors, against MXNet 1.9.1 (tests/fixtures/gluon/
generate_block.py): names and prefixes, deferred shapes, outputs and gradients under
autograd, save/load_parameters, export + SymbolBlock.imports both ways, two contexts, a
block called twice in one recorded step, and MXNet's errors."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph import autograd
from tests import fixture_scripts

HERE = Path(__file__).parent / "fixtures" / "gluon"
GOLDEN = np.load(HERE / "block_golden.npz", allow_pickle=False)
FACTS = json.loads((HERE / "block_golden.json").read_text())




GEN = fixture_scripts.load("gluon/generate_block.py")
Dense, Body, Top = GEN.model_classes(mx)


def _top(ctx=None):
    net = Top(prefix="top_")
    net.initialize(mx.init.Xavier(), ctx=ctx)
    net(mx.nd.array(GOLDEN["x"], ctx=(ctx[0] if isinstance(ctx, list) else ctx)))
    for name, p in net.collect_params().items():
        p.set_data(mx.nd.array(GOLDEN["param/" + name]))
    return net


def test_names_shapes_and_structural_names_match_mxnet():
    net = _top()
    assert list(net.collect_params().keys()) == FACTS["params"]
    assert {n: list(p.shape) for n, p in net.collect_params().items()} == FACTS["shapes"]
    assert sorted(net._collect_params_with_prefix().keys()) == FACTS["structural"]
    assert net.body.prefix == "top_body0_" and net.body.d2.name == "top_body0_dense1"


def test_outputs_and_gradients_match_mxnet():
    net = _top()
    x = mx.nd.array(GOLDEN["x"])
    x.attach_grad()
    with autograd.record():
        out = net(x)
    out.backward(mx.nd.array(GOLDEN["head"]))
    np.testing.assert_allclose(out.asnumpy(), GOLDEN["out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), GOLDEN["x_grad"], rtol=1e-5, atol=1e-6)
    for name, p in net.collect_params().items():
        np.testing.assert_allclose(p.grad().asnumpy(), GOLDEN["grad/" + name], rtol=1e-5,
                                   atol=1e-6, err_msg=name)
        assert p.data()._fresh_grad


def test_two_contexts_give_each_its_share():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    net = _top(ctxs)
    x, head = GOLDEN["x"], GOLDEN["head"]
    with autograd.record():
        outs = [net(mx.nd.array(x[s], ctx=c)) for s, c in zip((slice(0, 2), slice(2, 5)), ctxs)]
    autograd.backward(outs, [mx.nd.array(head[:2], ctx=ctxs[0]),
                             mx.nd.array(head[2:], ctx=ctxs[1])])
    for name, p in net.collect_params().items():
        total = p.grad(ctxs[0]).asnumpy() + p.grad(ctxs[1]).asnumpy()
        np.testing.assert_allclose(total, GOLDEN["grad/" + name], rtol=1e-5, atol=1e-6)
    assert outs[1].context == ctxs[1]


def test_block_called_twice_in_one_step_sums_parameter_gradients():
    layer = Dense(3, in_units=4, prefix="d_")
    layer.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (2, 4)))
    with autograd.record():
        loss = (layer(x) * layer(x * 2)).sum()
    loss.backward()
    w, b = layer.weight.data().asnumpy(), layer.bias.data().asnumpy()
    xa = x.asnumpy()
    y1, y2 = xa @ w.T + b, 2 * xa @ w.T + b
    np.testing.assert_allclose(layer.weight.grad().asnumpy(), y2.T @ xa + y1.T @ (2 * xa),
                               rtol=1e-5)
    np.testing.assert_allclose(layer.bias.grad().asnumpy(), (y1 + y2).sum(0), rtol=1e-5,
                               atol=1e-6)


def test_grad_req_add_accumulates_across_steps():
    layer = Dense(2, in_units=3, prefix="acc_")
    layer.initialize(mx.init.One())
    layer.collect_params().setattr("grad_req", "add")
    x = mx.nd.ones((1, 3))
    for _ in range(3):
        with autograd.record():
            out = layer(x).sum()
        out.backward()
    np.testing.assert_allclose(layer.weight.grad().asnumpy(), np.full((2, 3), 3.0))


def test_save_and_load_parameters(tmp_path):
    net = _top()
    net.save_parameters(str(tmp_path / "net.params"))
    assert sorted(mx.nd.load(str(tmp_path / "net.params"))) == FACTS["structural"]
    other = Top(prefix="other_")
    other.load_parameters(str(tmp_path / "net.params"))
    x = mx.nd.array(GOLDEN["x"])
    np.testing.assert_allclose(other(x).asnumpy(), GOLDEN["out"], rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError, match="is missing in file"):
        Body(prefix="b_").load_parameters(str(tmp_path / "net.params"))


def test_symbolblock_imports_an_mxnet_export():
    block = mx.gluon.SymbolBlock.imports(str(HERE / "block_export-symbol.json"), ["data"],
                                         str(HERE / "block_export-0000.params"))
    out = block(mx.nd.array(GOLDEN["x"]))
    np.testing.assert_allclose(out.asnumpy(), GOLDEN["export_out"], rtol=1e-5, atol=1e-6)


def test_export_round_trip_and_module_loads_it(tmp_path):
    net = _top()
    body = net.body
    body.hybridize()
    x = mx.nd.array(GOLDEN["x"])
    expected = body(x).asnumpy()
    body.export(str(tmp_path / "body"), epoch=3)
    again = mx.gluon.SymbolBlock.imports(str(tmp_path / "body-symbol.json"), ["data"],
                                         str(tmp_path / "body-0003.params"))
    np.testing.assert_allclose(again(x).asnumpy(), expected, rtol=1e-6)
    sym, args, aux = mx.model.load_checkpoint(str(tmp_path / "body"), 3)
    mod = mx.mod.Module(sym, data_names=["data"], label_names=None)
    mod.bind([("data", x.shape)], for_training=False)
    mod.set_params(args, aux)
    mod.forward(mx.io.DataBatch([x]), is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), expected, rtol=1e-6)


def test_symbol_inputs_build_graphs_and_mxnet_errors():
    body = Body(prefix="sym_")
    out = body(mx.sym.Variable("data"))
    assert isinstance(out, mx.sym.Symbol)
    assert "sym_dense0_weight" in out.list_arguments()
    with pytest.raises(ValueError, match="mixed NDArrays and Symbols"):
        mx.gluon.HybridBlock.forward(body, mx.nd.ones((1, 7)), mx.sym.Variable("y"))

    class Plain(mx.gluon.Block):
        def forward(self, x):
            return x
    with pytest.raises(ValueError, match="Children of HybridBlock must also be HybridBlock"):
        body.extra = Plain()


def test_deferred_shape_failure_is_explained():
    class Bad(mx.gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.w = self.params.get("w", shape=(0,), allow_deferred_init=True)

        def hybrid_forward(self, F, x, w):
            return F.broadcast_add(x, w)  # broadcasting says nothing about w's length
    layer = Bad(prefix="bad_")
    layer.initialize()
    with pytest.raises(ValueError, match="Deferred initialization failed because shape"):
        layer(mx.nd.ones((2, 3)))


def test_a_hybridized_block_may_ignore_an_input():
    """MXNet (test_contrib_control_flow.py::test_uniq_name): an input the hybridized graph
    does not read is dropped with a warning, not an error."""
    class FirstOnly(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x, unused):
            return x * 2

    net = FirstOnly()
    net.initialize()
    net.hybridize()
    with pytest.warns(UserWarning, match="not used by the graph"):
        out = net(mx.nd.ones((2, 3)), mx.nd.zeros((4,)))
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), 2.0))
    x = mx.nd.ones((2, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = net(x, mx.nd.zeros((4,)))
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full((2, 3), 2.0))


def test_block_inputs_may_be_auxiliary_states():
    """Regression (MXNet's ONNX test_onnx_export_batchnorm): a hybridized block whose
    inputs feed BatchNorm's moving statistics reads them as given, in training too, and
    leaves them unchanged, as MXNet 1.9.1 does (values recorded with MXNet)."""
    class BN(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, *inputs):
            return F.BatchNorm(*inputs, eps=1e-5, momentum=0.5, fix_gamma=False)
    block = BN()
    block.initialize()
    block.hybridize()
    x = mx.nd.array([[[[1.0, 2.0]], [[3.0, 5.0]]]])
    gamma, beta, mean, var = mx.nd.ones(2), mx.nd.zeros(2), mx.nd.zeros(2), mx.nd.ones(2)
    np.testing.assert_allclose(block(x, gamma, beta, mean, var).asnumpy().ravel(),
                               [0.999995, 1.99999, 2.999985, 4.999975], rtol=1e-6)
    with mx.autograd.record():
        y = block(x, gamma, beta, mean, var)
    np.testing.assert_allclose(y.asnumpy().ravel(), [-0.99998, 0.99998, -0.999995, 0.999995],
                               rtol=1e-5)
    assert mean.asnumpy().tolist() == [0, 0] and var.asnumpy().tolist() == [1, 1]
