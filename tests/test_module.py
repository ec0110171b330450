"""mx.mod.Module: fit on real data, several contexts, resume from a checkpoint."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from symgraph.examples.datasets import load_digits


def _mlp(hidden=32):
    net = mx.sym.Variable("data")
    net = mx.sym.Activation(mx.sym.FullyConnected(net, num_hidden=hidden, name="fc1"),
                            act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _iters(batch=50, n_train=1500):
    x, y = load_digits()
    order = np.random.RandomState(0).permutation(len(x))  # the file is sorted by writer
    x, y = x[order], y[order]
    train = mx.io.NDArrayIter(x[:n_train], y[:n_train], batch_size=batch, shuffle=False)
    val = mx.io.NDArrayIter(x[n_train:], y[n_train:], batch_size=batch)
    return train, val


def _fit(context, epochs=2, **kwargs):
    mx.random.seed(7)
    train, _ = _iters()
    mod = mx.mod.Module(_mlp(), context=context)
    mod.fit(train, num_epoch=epochs, optimizer="sgd",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
            initializer=mx.init.Xavier(), **kwargs)
    return mod


def test_fit_reaches_accuracy_on_digits():
    train, val = _iters()
    mx.random.seed(0)
    mod = mx.mod.Module(_mlp(), context=mx.cpu())
    mod.fit(train, eval_data=val, num_epoch=10, optimizer="sgd",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
            initializer=mx.init.Xavier(), eval_metric="acc")
    (name, acc), = mod.score(val, "acc")
    assert name == "accuracy" and acc >= 0.93, acc


def test_two_contexts_train_like_one():
    one = _fit(mx.cpu(0))
    two = _fit([mx.cpu(0), mx.cpu(1)], kvstore="device")
    a1, _ = one.get_params()
    a2, _ = two.get_params()
    for name in a1:
        np.testing.assert_allclose(a1[name].asnumpy(), a2[name].asnumpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=name)


def test_resume_from_checkpoint_with_optimizer_states(tmp_path):
    full = _fit(mx.cpu(), epochs=2)
    half = _fit(mx.cpu(), epochs=1)
    prefix = str(tmp_path / "digits")
    half.save_checkpoint(prefix, 1, save_optimizer_states=True)
    resumed = mx.mod.Module.load(prefix, 1, load_optimizer_states=True, context=mx.cpu())
    train, _ = _iters()
    resumed.fit(train, num_epoch=2, begin_epoch=1, optimizer="sgd",
                optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    a_full, _ = full.get_params()
    a_res, _ = resumed.get_params()
    for name in a_full:
        np.testing.assert_allclose(a_res[name].asnumpy(), a_full[name].asnumpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=name)


def test_predict_and_internal_handles():
    mod = _fit(mx.cpu(), epochs=1)
    _, val = _iters()
    out = mod.predict(val)
    assert out.shape == (297, 10)
    assert len(mod._exec_group.execs) == 1 and mod._optimizer is not None
    with pytest.raises(ValueError, match="number of epochs"):
        mod.fit(_iters()[0])


def test_forward_rebinds_when_the_batch_shape_changes():
    # MXNet 1.9.1 Module.forward compares the batch arrays' shapes with the bound ones and,
    # without provide_data, reshapes to the arrays' shapes (labels from the batch's labels)
    mod = mx.mod.Module(_mlp(hidden=4), context=mx.cpu())
    mod.bind([mx.io.DataDesc("data", (4, 6))], [mx.io.DataDesc("softmax_label", (4,))])
    mod.init_params(mx.init.Xavier())
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (7, 6)).astype(np.float32)
    mod.forward(mx.io.DataBatch([mx.nd.array(x[:4])], [mx.nd.zeros((4,))]), is_train=False)
    first = mod.get_outputs()[0].asnumpy()
    mod.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.zeros((7,))]), is_train=False)
    assert mod.data_shapes[0].shape == (7, 6) and mod.label_shapes[0].shape == (7,)
    out = mod.get_outputs()[0].asnumpy()
    assert out.shape == (7, 10)
    np.testing.assert_allclose(out[:4], first, rtol=1e-5, atol=1e-6)
    # provide_data names the new shapes when the batch has it
    batch = mx.io.DataBatch([mx.nd.array(x[:2])], [mx.nd.zeros((2,))],
                            provide_data=[mx.io.DataDesc("data", (2, 6))],
                            provide_label=[mx.io.DataDesc("softmax_label", (2,))])
    mod.forward(batch, is_train=False)
    assert mod.get_outputs()[0].shape == (2, 10)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), first[:2], rtol=1e-5, atol=1e-6)


def _bound(hidden=4):
    mod = mx.mod.Module(_mlp(hidden=hidden), context=mx.cpu())
    mod.bind([mx.io.DataDesc("data", (4, 6))], [mx.io.DataDesc("softmax_label", (4,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
    batch = mx.io.DataBatch([mx.nd.array(np.random.RandomState(1).uniform(-1, 1, (4, 6)))],
                            [mx.nd.array([0, 1, 2, 3])])
    return mod, batch


def test_set_params_of_own_params_after_sync_copies_nothing(monkeypatch):
    # fit's epoch end: get_params syncs the one device into the host arrays and set_params
    # hands the same dicts back; MXNet copies them to the devices, a no-op we skip
    mod, batch = _bound()
    mod.forward_backward(batch)
    mod.update()
    calls = []
    monkeypatch.setattr(mod._exec_group, "set_params", lambda *a, **k: calls.append(a))
    mod.set_params(*mod.get_params())
    assert calls == []
    mod.forward_backward(batch)  # a step runs: the devices may have changed
    mod.set_params(*mod.get_params())
    assert len(calls) == 1


def test_set_params_sees_writes_between_get_and_set():
    # host or device arrays written after get_params: set_params copies host -> device (MXNet)
    mod, batch = _bound()
    mod.forward_backward(batch)
    mod.update()
    arg, aux = mod.get_params()
    arg["fc1_weight"][:] = 0.25
    mod.set_params(arg, aux)
    dev = mod._exec_group.execs[0].arg_dict
    assert (dev["fc1_weight"].asnumpy() == 0.25).all()
    arg, aux = mod.get_params()
    before = arg["fc2_bias"].asnumpy()
    dev["fc2_bias"][:] = 7.0
    mod.set_params(arg, aux)
    np.testing.assert_array_equal(dev["fc2_bias"].asnumpy(), before)
    mod.forward_backward(batch)
    mod.update()
    arg, aux = mod.get_params()
    arg["fc2_bias"] = mx.nd.ones(arg["fc2_bias"].shape)  # a new array under the same name
    mod.set_params(arg, aux)
    np.testing.assert_array_equal(dev["fc2_bias"].asnumpy(), np.ones(10))


def test_bind_parses_data_descs_like_mxnet():
    """MXNet 1.9.1 (checked in its virtualenv): pairs become DataDescs, label_shapes None stays
    None with a warning, mismatched data names raise ValueError; reshape parses the same way."""
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3),
                               name="softmax")
    mod = mx.mod.Module(net)
    with pytest.warns(UserWarning, match="label_shapes don't match names specified by"):
        mod.bind([("data", (2, 4))], for_training=False)
    assert isinstance(mod.data_shapes[0], mx.io.DataDesc) and mod.label_shapes is None
    assert mod.data_shapes[0].shape == (2, 4)
    mod.init_params()
    mod.reshape([("data", (3, 4))])
    assert isinstance(mod.data_shapes[0], mx.io.DataDesc) and mod.output_shapes == \
        [("softmax_output", (3, 3))]
    with pytest.raises(ValueError, match="data_shapes don't match names specified by data_names"):
        mx.mod.Module(net).bind([("x", (2, 4))], [("softmax_label", (2,))])
