"""``symgraph.export.to_torch``: an MXNet graph as a ``torch.fx.GraphModule`` whose outputs and
parameter gradients equal the executor's, and which ``torch.compile`` and ``torch.export``
accept."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import symgraph as mx
from symgraph.export import ExportError, to_torch
from symgraph.export.torch_module import MXNET_GRADIENT
from symgraph.ops.base import canonical_ops
from tests import op_harness
from tests.export_nets import NETS


def _executor_run(net, args, aux, ins, heads_seed=5):
    exe = net.sym.simple_bind(mx.cpu(), **net.shapes)
    exe.copy_params_from(args, aux)
    outs = exe.forward(is_train=True, **ins)
    heads = [np.random.RandomState(heads_seed).uniform(-1, 1, size=o.shape).astype(np.float32)
             for o in outs]
    exe.backward([mx.nd.array(h) for h in heads])
    return exe, [o.asnumpy() for o in outs], heads


@pytest.mark.parametrize("name", sorted(NETS))
def test_module_matches_the_executor_forward_and_gradients(name):
    net = NETS[name]()
    args, aux = net.params()
    ins = net.inputs()
    exe, want, heads = _executor_run(net, args, aux, ins)
    m = to_torch(net.sym, args, aux, input_shapes=net.shapes).train()
    got = m(**{k: torch.tensor(v) for k, v in ins.items()})
    got = got if isinstance(got, tuple) else (got,)
    torch.autograd.backward(got, [torch.tensor(h) for h in heads])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w, rtol=1e-4, atol=1e-5)
    params = dict(m.named_parameters())
    assert set(params) == set(args)
    for k in args:
        np.testing.assert_allclose(params[k].grad.numpy(), exe.grad_dict[k].asnumpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=k)
    buffers = dict(m.named_buffers())  # training updated the moving statistics as MXNet
    for k in aux:
        np.testing.assert_allclose(buffers[k].numpy(), exe.aux_dict[k].asnumpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=k)


@pytest.mark.parametrize("name", sorted(NETS))
def test_module_exports_and_compiles(name):
    net = NETS[name]()
    args, aux = net.params()
    data = {k: torch.tensor(v) for k, v in net.inputs().items() if not k.endswith("label")}
    m = to_torch(net.sym, args, aux, input_shapes=net.shapes).eval()
    want = m(**data)
    ep = torch.export.export(m, (), kwargs=data)
    torch.testing.assert_close(ep.module()(**data), want)
    compiled = torch.compile(m, backend="aot_eager")  # dynamo + AOTAutograd, no C++ build
    torch.testing.assert_close(compiled(**data), want)


def test_compiles_in_one_graph_with_reshape_resize_and_gather_nd():
    """No graph break (``fullgraph=True``) where ops compute sizes on the host (Reshape's
    -1, BilinearResize2D's float32 scale) or check indices (gather_nd: checked as it runs)."""
    x = mx.sym.var("data")
    y = mx.sym.contrib.BilinearResize2D(mx.sym.reshape(x, shape=(0, -1, 3, 4)), height=5,
                                        width=7)
    idx = mx.sym.var("idx", dtype="int32")
    net = mx.sym.Group([y, mx.sym.gather_nd(x, idx)])
    data = torch.randn(2, 6, 2)
    m = to_torch(net, {}, {}, input_shapes={"data": (2, 6, 2), "idx": (2, 3)},
                 input_types={"idx": np.int32}).eval()
    compiled = torch.compile(m, backend="aot_eager", fullgraph=True)
    good = torch.tensor([[0, 1, -2], [5, 0, 1]], dtype=torch.int32)
    for got, want in zip(compiled(data=data, idx=good), m(data=data, idx=good)):
        torch.testing.assert_close(got, want)
    with pytest.raises(RuntimeError, match="out of bounds for axis 1"):
        torch.compile(m, backend="aot_eager")(
            data=data, idx=torch.tensor([[0, 1, 1], [5, 6, 1]], dtype=torch.int32))


def test_inductor_compiles_the_module():
    net = NETS["resnet_block"]()
    args, aux = net.params()
    data = torch.tensor(net.inputs()["data"])
    m = to_torch(net.sym, args, aux).eval()
    torch.testing.assert_close(torch.compile(m)(data), m(data), rtol=1e-4, atol=1e-5)


def test_state_dict_has_mxnet_names_and_train_eval_switch_batch_norm():
    net = NETS["resnet_block"]()
    args, aux = net.params()
    m = to_torch(net.sym, args, aux)
    assert set(m.state_dict()) == set(args) | set(aux)
    x = torch.tensor(net.inputs()["data"])
    before = m.bn1_moving_mean.clone()
    m.eval()(x)
    assert torch.equal(m.bn1_moving_mean, before)  # inference reads the moving statistics
    m.train()(x)
    assert not torch.equal(m.bn1_moving_mean, before)  # training updates them


def test_dropout_drops_only_in_training():
    x = mx.sym.Dropout(mx.sym.var("data"), p=0.5)
    m = to_torch(x, {})
    data = torch.ones(50, 40)
    assert torch.equal(m.eval()(data), data)
    out = m.train()(data)
    assert set(out.unique().tolist()) == {0.0, 2.0}


def test_loss_head_gradient_is_mxnet_s():
    """SoftmaxOutput's backward is softmax - onehot(label), whatever the head gradient."""
    net = NETS["mlp"]()
    args, aux = net.params()
    ins = net.inputs()
    m = to_torch(net.sym, args, aux)
    out = m(**{k: torch.tensor(v) for k, v in ins.items()})
    out.backward(torch.full_like(out, 7.0))
    exe, _, _ = _executor_run(net, args, aux, ins)
    np.testing.assert_allclose(m.fc2_weight.grad.numpy(), exe.grad_dict["fc2_weight"].asnumpy(),
                               rtol=1e-4, atol=1e-6)


def test_missing_label_gives_inference_outputs():
    net = NETS["lstm_unrolled"]()
    args, aux = net.params()
    m = to_torch(net.sym, args, aux, input_shapes=net.shapes).eval()  # begin states' batch
    out = m(torch.tensor(net.inputs()["data"]))
    assert out.shape == (8, 20)
    np.testing.assert_allclose(out.sum(dim=1).detach().numpy(), 1.0, rtol=1e-5)


def test_parameters_and_checkpoint_files(tmp_path):
    net = NETS["lenet"]()
    args, aux = net.params()
    mx.model.save_checkpoint(str(tmp_path / "lenet"), 3, net.sym, args, aux)
    m = to_torch(str(tmp_path / "lenet-symbol.json"), str(tmp_path / "lenet-0003.params"))
    assert set(dict(m.named_parameters())) == set(args)


def test_a_value_dependent_op_is_refused_with_its_name():
    out = mx.sym.contrib.boolean_mask(mx.sym.var("data"), mx.sym.var("index"), name="bm")
    with pytest.raises(ExportError, match="bm"):
        to_torch(out, {})


def test_gluon_blocks_convert():
    from symgraph.gluon import nn
    block = nn.HybridSequential()
    block.add(nn.Dense(5, activation="relu"), nn.BatchNorm(), nn.Dense(2))
    block.initialize()
    x = mx.nd.random.uniform(shape=(3, 4))
    want = block(x).asnumpy()
    m = block.to_torch(x)
    np.testing.assert_allclose(m.eval()(torch.tensor(x.asnumpy())).detach().numpy(), want,
                               rtol=1e-5, atol=1e-6)
    assert len(list(m.parameters())) == 6


def test_symbol_block_converts(tmp_path):
    from symgraph.gluon import nn
    block = nn.HybridSequential()
    block.add(nn.Conv2D(3, 3), nn.BatchNorm(), nn.Activation("relu"), nn.Dense(2))
    block.initialize()
    block.hybridize()
    x = mx.nd.random.uniform(shape=(2, 1, 6, 6))
    want = block(x).asnumpy()
    block.export(str(tmp_path / "b"))
    loaded = mx.gluon.SymbolBlock.imports(str(tmp_path / "b-symbol.json"), ["data"],
                                          str(tmp_path / "b-0000.params"))
    m = loaded.to_torch(x).eval()
    np.testing.assert_allclose(m(torch.tensor(x.asnumpy())).detach().numpy(), want,
                               rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- every op's gradient

def _gradient_cases():
    for op in canonical_ops():
        if op.hidden or not op.cases or not op.differentiable or op.random in (True, "device"):
            continue
        for k, case in enumerate(op.cases):
            if case.shapes:  # grad=False cases too: the executor still runs MXNet's rule
                yield pytest.param(op, case, id=f"{op.name}-{k}")


# cases the comparison leaves out, each with why
NOT_COMPARED = {
    "BatchNorm-4": "a backward after an inference forward (MXNet decides by is_train)",
    "RNN-8": "LSTM projection has no training support on CPU",
}


def _op_grads(op, case):
    values = op_harness.draw_inputs(case, np.float64 if not case.ints else np.float32)
    sym, exe = op_harness.bind(op, case, values, grad=True)
    outs = exe.forward(is_train=case.train)
    heads = [np.random.RandomState(3).uniform(-1, 1, size=o.shape) for o in outs]
    try:
        exe.backward([mx.nd.array(h, dtype=values[0].dtype) for h in heads])
    except RuntimeError as err:  # the executor has no backward for these inputs
        pytest.skip(f"executor backward fails: {err}")
    names = [n for n in sym.list_arguments() if exe.grad_dict.get(n) is not None]
    shapes = {f"in{i}": v.shape for i, v in enumerate(values)}
    m = to_torch(sym, {}, input_shapes={k: v for k, v in shapes.items()
                                        if k in sym.list_arguments()}).train(case.train)
    ins = {n: torch.tensor(v, requires_grad=n in names)
           for n, v in zip([f"in{i}" for i in range(len(values))], values)}
    got = m(**{k: v for k, v in ins.items() if k in sym.list_inputs()})
    got = got if isinstance(got, tuple) else (got,)
    torch.autograd.backward([g for g in got if g.requires_grad],
                            [torch.tensor(h) for g, h in zip(got, heads) if g.requires_grad])
    return {n: (ins[n].grad, exe.grad_dict[n].asnumpy()) for n in names}


@pytest.mark.parametrize(("op", "case"), list(_gradient_cases()))
def test_every_op_gradient_is_mxnet_s(op, case):
    """Autograd through the reference (or the op's rule, for MXNET_GRADIENT ops) gives the
    executor's gradient; an op where it does not belongs in MXNET_GRADIENT."""
    if f"{op.name}-{op.cases.index(case)}" in NOT_COMPARED:
        pytest.skip(NOT_COMPARED[f"{op.name}-{op.cases.index(case)}"])
    for name, (got, want) in _op_grads(op, case).items():
        got = np.zeros_like(want) if got is None else got.detach().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8,
                                   err_msg=f"{op.name} {name}: add it to MXNET_GRADIENT?")


def test_mxnet_gradient_names_registered_ops():
    from symgraph.ops.base import OPS
    assert set(MXNET_GRADIENT) <= set(OPS)
