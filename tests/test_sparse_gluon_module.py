"""Sparse parameters and gradients in gluon, Module and autograd (MXNet 1.9.1 behaviour).

An ``Embedding`` with ``sparse_grad=True`` must train exactly as the dense-gradient one
(values after a few steps) while its weight gradient is row_sparse, holding only the rows
the batch looked up; the same through ``Module`` with an Embedding symbol. Parameter errors
are MXNet's (ported from tests/python/unittest/test_gluon.py: test_parameter_invalid_access,
test_sparse_parameter; messages checked against MXNet 1.9.1).
"""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from symgraph import gluon

VOCAB, DIM, BATCH = 20, 4, 6


def _batches(steps: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Token ids (a few distinct rows per batch) and regression targets."""
    rng = np.random.RandomState(seed)
    return [(rng.randint(0, VOCAB // 2, size=(BATCH,)).astype(np.float32) * 2,
             rng.randn(BATCH, 3).astype(np.float32)) for _ in range(steps)]


def _weights(seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.RandomState(seed)
    return (rng.randn(VOCAB, DIM).astype(np.float32), rng.randn(3, DIM).astype(np.float32),
            rng.randn(3).astype(np.float32))


def _gluon_net(sparse_grad: bool) -> gluon.nn.Sequential:
    emb_w, fc_w, fc_b = _weights()
    net = gluon.nn.Sequential()
    with net.name_scope():
        net.add(gluon.nn.Embedding(VOCAB, DIM, sparse_grad=sparse_grad))
        net.add(gluon.nn.Dense(3, in_units=DIM))
    net.initialize(ctx=mx.cpu())
    net[0].weight.set_data(mx.nd.array(emb_w))
    net[1].weight.set_data(mx.nd.array(fc_w))
    net[1].bias.set_data(mx.nd.array(fc_b))
    return net


def _train_gluon(sparse_grad: bool, optimizer: str, opt_params: dict, steps: int = 4):
    """Weights after training, and each step's embedding gradient."""
    net = _gluon_net(sparse_grad)
    trainer = gluon.Trainer(net.collect_params(), optimizer, opt_params)
    grads = []
    for ids, target in _batches(steps):
        with mx.autograd.record():
            loss = ((net(mx.nd.array(ids)) - mx.nd.array(target)) ** 2).sum()
        loss.backward()
        grads.append(net[0].weight.grad())
        grads[-1] = (grads[-1].stype, grads[-1].asnumpy(),
                     grads[-1].indices.asnumpy() if sparse_grad else None, ids)
        trainer.step(BATCH)
    return [p.data().asnumpy() for p in net.collect_params().values()], grads


TRAINERS = [
    ("sgd", {"learning_rate": 0.1}),
    ("sgd", {"learning_rate": 0.1, "wd": 0.0}),
    # lazy_update=False: rows absent from the batch move as with a zero gradient (dense)
    ("adam", {"learning_rate": 0.05, "lazy_update": False}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "lazy_update": False}),
]


@pytest.mark.parametrize("optimizer,opt_params", TRAINERS)
def test_gluon_sparse_grad_trains_as_dense(optimizer, opt_params):
    sparse_w, sparse_g = _train_gluon(True, optimizer, opt_params)
    dense_w, dense_g = _train_gluon(False, optimizer, opt_params)
    for s, d in zip(sparse_w, dense_w):
        np.testing.assert_allclose(s, d, rtol=1e-5, atol=1e-6)
    for (stype, value, rows, ids), (dstype, dvalue, _, _) in zip(sparse_g, dense_g):
        assert (stype, dstype) == ("row_sparse", "default")
        np.testing.assert_allclose(value, dvalue, rtol=1e-5, atol=1e-6)
        assert rows.tolist() == sorted(set(ids.astype(int).tolist()))  # the batch's rows only


def test_lazy_adam_updates_only_batch_rows():
    """Adam's lazy update (MXNet's default for row_sparse gradients) leaves the rows a batch
    did not look up as they were."""
    net = _gluon_net(True)
    before = net[0].weight.data().asnumpy()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.05})
    ids, target = _batches(1)[0]
    with mx.autograd.record():
        loss = ((net(mx.nd.array(ids)) - mx.nd.array(target)) ** 2).sum()
    loss.backward()
    trainer.step(BATCH)
    after = net[0].weight.data().asnumpy()
    touched = sorted(set(ids.astype(int).tolist()))
    untouched = [r for r in range(VOCAB) if r not in touched]
    np.testing.assert_array_equal(after[untouched], before[untouched])
    assert not np.allclose(after[touched], before[touched])


def test_embedding_sparse_grad_values():
    """test_gluon.py test_embedding: the gradient holds the batch's rows, counted."""
    layer = gluon.nn.Embedding(10, 2, sparse_grad=True)
    layer.initialize()
    with mx.autograd.record():
        y = layer(mx.nd.array([3, 1, 3, 7]))
    y.backward()
    grad = layer.weight.grad()
    assert grad.stype == "row_sparse"
    assert grad.indices.asnumpy().tolist() == [1, 3, 7]
    np.testing.assert_array_equal(grad.data.asnumpy(), [[1, 1], [2, 2], [1, 1]])
    layer.weight.zero_grad()
    assert layer.weight.grad().indices.asnumpy().tolist() == []


# ------------------------------------------------------------------ Module
def _module_symbol(sparse_grad: bool):
    data = mx.sym.var("data")
    emb = mx.sym.Embedding(data, input_dim=VOCAB, output_dim=DIM, sparse_grad=sparse_grad,
                           name="emb")
    fc = mx.sym.FullyConnected(emb, num_hidden=3, name="fc")
    return mx.sym.LinearRegressionOutput(fc, mx.sym.var("label"), name="out")


def _train_module(sparse_grad: bool, steps: int = 4):
    emb_w, fc_w, fc_b = _weights()
    mod = mx.mod.Module(_module_symbol(sparse_grad), data_names=["data"],
                        label_names=["label"], context=mx.cpu())
    mod.bind(data_shapes=[("data", (BATCH,))], label_shapes=[("label", (BATCH, 3))])
    mod.init_params(arg_params={"emb_weight": mx.nd.array(emb_w), "fc_weight": mx.nd.array(fc_w),
                                "fc_bias": mx.nd.array(fc_b)})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    stypes = []
    for ids, target in _batches(steps):
        batch = mx.io.DataBatch([mx.nd.array(ids)], [mx.nd.array(target)])
        mod.forward(batch, is_train=True)
        mod.backward()
        grad = mod._exec_group.execs[0].grad_dict["emb_weight"]
        stypes.append((grad.stype, grad.indices.asnumpy().tolist() if sparse_grad else None,
                       sorted(set(ids.astype(int).tolist()))))
        mod.update()
    args, _ = mod.get_params()
    return {k: v.asnumpy() for k, v in args.items()}, stypes


def test_module_sparse_grad_trains_as_dense():
    sparse_args, sparse_stypes = _train_module(True)
    dense_args, dense_stypes = _train_module(False)
    for name in dense_args:
        np.testing.assert_allclose(sparse_args[name], dense_args[name], rtol=1e-5, atol=1e-6)
    for stype, rows, wanted in sparse_stypes:
        assert stype == "row_sparse" and rows == wanted
    assert {s for s, _, _ in dense_stypes} == {"default"}


def test_module_row_sparse_weight_initialized_whole():
    """test_module.py test_module_initializer: a row_sparse weight gets every row."""
    x = mx.sym.var("data", stype="csr")
    v = mx.sym.var("v", shape=(7, 1), init=mx.init.Uniform(scale=.1), stype="row_sparse")
    out = mx.sym.LinearRegressionOutput(mx.sym.dot(x, v), mx.sym.var("label"))
    mod = mx.mod.Module(out, data_names=["data"], label_names=["label"])
    mod.bind(data_shapes=[("data", (4, 7))], label_shapes=[("label", (4, 1))])
    mod.init_params()
    weight = mod._arg_params["v"]
    assert weight.stype == "row_sparse"
    assert weight.indices.asnumpy().tolist() == list(range(7))
    assert np.abs(weight.asnumpy()).max() <= 0.1 and np.abs(weight.asnumpy()).sum() > 0


# ------------------------------------------------------------------ Parameter errors
def _rsp_param(**kwargs) -> gluon.Parameter:
    p = gluon.Parameter("weight", shape=(4, 2), stype="row_sparse", grad_stype="row_sparse",
                        **kwargs)
    p.initialize(init="zeros", ctx=[mx.cpu(0), mx.cpu(1)])
    return p


def _dense_param() -> gluon.Parameter:
    p = gluon.Parameter("weight", shape=(4, 2))
    p.initialize(init="zeros", ctx=mx.cpu(0))
    return p


ERRORS = [  # (make parameter, call, error type, message start) — MXNet 1.9.1's
    (_rsp_param, lambda p: p.data(), RuntimeError,
     "Cannot return a copy of Parameter 'weight' on ctx None via data() because its storage "
     "type is row_sparse. Please use row_sparse_data() instead."),
    (_rsp_param, lambda p: p.list_data(), RuntimeError,
     "Cannot return copies of Parameter 'weight' on all contexts via list_data() because its "
     "storage type is row_sparse. Please use row_sparse_data() instead."),
    (_rsp_param, lambda p: p.list_row_sparse_data(mx.nd.arange(0, 4)), RuntimeError,
     "Cannot get row_sparse data for Parameter 'weight' when no Trainer is created with it."),
    (_rsp_param, lambda p: p._get_row_sparse(p._data, list, [0]), TypeError,
     "row_id must have NDArray type, but <class 'list'> is given"),
    (_dense_param, lambda p: p.row_sparse_data(mx.nd.arange(0, 4)), RuntimeError,
     "Cannot return a copy of Parameter weight via row_sparse_data() because its storage type "
     "is default. Please use data() instead."),
    (_dense_param, lambda p: p.list_row_sparse_data(mx.nd.arange(0, 4)), RuntimeError,
     "Cannot return copies of Parameter 'weight' on all contexts via list_row_sparse_data() "
     "because its storage type is default. Please use data() instead."),
    (lambda: gluon.Parameter("w", stype="bad"), None, AssertionError,
     "stype for Parameter 'w' must be one of 'default', 'row_sparse', or 'csr', but got 'bad'"),
    (lambda: gluon.Parameter("w", grad_stype="bad"), None, AssertionError,
     "grad_stype for Parameter 'w' must be one of 'default', 'row_sparse', or 'csr', but got "
     "'bad'"),
]


@pytest.mark.parametrize("make,call,error,message", ERRORS)
def test_parameter_errors(make, call, error, message):
    with pytest.raises(error) as info:
        p = make()
        call(p)
    assert str(info.value) == message


def test_sparse_parameter_one_trainer():
    p = _rsp_param()
    gluon.Trainer([p], "sgd")
    with pytest.raises(RuntimeError, match="More than one trainers for a row_sparse Parameter"):
        gluon.Trainer([p], "sgd")


def test_sparse_parameter_arrays():
    """test_gluon.py test_sparse_parameter: storage of data and gradients, the variable."""
    p = _rsp_param()
    assert [a.stype for a in p._data] == ["row_sparse"] * 2
    assert [g.stype for g in p.list_grad()] == ["row_sparse"] * 2
    assert p._data[1].indices.asnumpy().tolist() == [0, 1, 2, 3]  # initialized: every row
    assert p.list_grad()[0].indices.asnumpy().tolist() == []
    assert p.var().attr("__storage_type__") == "1"


def test_dense_weight_row_sparse_grad_single_context():
    """test_gluon_trainer.py test_trainer_with_sparse_grad_on_single_context."""
    x = gluon.Parameter("x", shape=(10,), grad_stype="row_sparse")
    x.initialize(ctx=[mx.cpu(0)], init="zeros")
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0, "momentum": 0.5})
    with mx.autograd.record():
        y = x.data() + 1
    y.backward()
    assert x.grad().stype == "row_sparse"
    trainer.step(1)
    assert trainer._kvstore is None and trainer._update_on_kvstore is None
    np.testing.assert_array_equal(x.data().asnumpy(), -np.ones(10))


# ------------------------------------------------------------------ autograd
@pytest.mark.parametrize("stype", ["default", "row_sparse", "csr"])
def test_attach_grad_sparse(stype):
    """test_autograd.py test_attach_grad: the gradient keeps the array's storage."""
    x = mx.nd.array(np.arange(12).reshape(3, 4)).tostype(stype)
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2
    assert y.stype == stype
    y.backward(out_grad=mx.nd.ones_like(y).tostype(stype))
    assert x.grad.stype == stype
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full((3, 4), 2.0))


def test_sparse_dot_grad_row_sparse():
    """test_autograd.py test_sparse_dot_grad: dot(csr, w) gives w a row_sparse gradient with
    the rows of the csr's columns."""
    lhs = mx.nd.sparse.csr_matrix(([1.0, 2.0, 3.0], [1, 5, 1], [0, 2, 2, 3]), shape=(3, 8))
    w = mx.nd.ones((8, 2))
    w.attach_grad(stype="row_sparse")
    with mx.autograd.record():
        y = mx.nd.dot(lhs, w)
    y.backward()
    assert w.grad.stype == "row_sparse"
    expected = lhs.asnumpy().T @ np.ones((3, 2))
    np.testing.assert_allclose(w.grad.asnumpy(), expected)
    assert set(w.grad.indices.asnumpy().tolist()) <= {1, 5}


def test_initializer_fills_every_row():
    arr = mx.nd.sparse.zeros("row_sparse", (5, 2))
    mx.init.One()(mx.init.InitDesc("fc_weight"), arr)
    assert arr.indices.asnumpy().tolist() == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(arr.asnumpy(), np.ones((5, 2)))


def test_custom_function_with_sparse_head_gradient():
    """A row_sparse head gradient reaches a custom ``autograd.Function`` as an array."""
    class Square(mx.autograd.Function):
        def forward(self, x):
            self.save_for_backward(x)
            return x * x

        def backward(self, dy):
            x, = self.saved_tensors
            return 2 * x * dy

    x = mx.nd.array([[1., 2.], [0., 0.], [3., 4.]]).tostype("row_sparse")
    x.attach_grad()
    with mx.autograd.record():
        y = Square()(x)
    y.backward(out_grad=mx.nd.ones((3, 2)).tostype("row_sparse"))
    assert x.grad.stype == "row_sparse"
    np.testing.assert_array_equal(x.grad.asnumpy(), [[2., 4.], [0., 0.], [6., 8.]])


def test_module_prepare_without_kvstore_warns():
    """Module.prepare: a sparse_row_id_fn with no kvstore updates is not called (MXNet)."""
    mod = mx.mod.Module(_module_symbol(True), data_names=["data"], label_names=["label"])
    mod.bind(data_shapes=[("data", (BATCH,))], label_shapes=[("label", (BATCH, 3))])
    mod.init_params()
    mod.init_optimizer()
    called = []
    with pytest.warns(UserWarning, match="Parameters are not updated in the KVStore"):
        mod.prepare(None, sparse_row_id_fn=lambda batch: called.append(batch) or {})
    assert called == []
