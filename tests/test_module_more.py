"""SequentialModule, PythonModule/PythonLossModule, BaseModule's interface, module states,
output layouts, group2ctxs and the executor group's shared arrays (MXNet 1.9.1 behaviour;
numbers from tests/fixtures/module_io_more, written by MXNet)."""
from __future__ import annotations

import importlib
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.module.executor_group import DataParallelExecutorGroup, _prepare_group2ctxs
from tests import fixture_scripts

HERE = Path(__file__).parent / "fixtures" / "module_io_more"
GOLD = json.loads((HERE / "module_io_more.json").read_text())
SCENARIOS = fixture_scripts.load("module_io_more/scenarios.py")


@pytest.mark.parametrize("name", ["sequential", "python_loss", "layout_tnc", "states"])
def test_scenario_matches_mxnet(name, tmp_path):
    got = json.loads(json.dumps(SCENARIOS.SCENARIOS[name](mx, str(tmp_path))))
    SCENARIOS.assert_close(got, GOLD[name])


@pytest.mark.parametrize("path, name", [
    ("mxnet.module.sequential_module", "SequentialModule"),
    ("mxnet.module.python_module", "PythonLossModule"),
    ("mxnet.module.executor_group", "DataParallelExecutorGroup"),
    ("mxnet.module.base_module", "BaseModule"),
])
def test_module_paths_import_under_the_alias(path, name):
    from symgraph import alias
    module = importlib.import_module(alias.target_module(path))
    assert getattr(module, name) is getattr(mx.mod, name, getattr(module, name))
    assert hasattr(mx.mod, path.rsplit(".", 1)[1])


def test_sequential_rejects_unknown_meta_and_empty_bind():
    seq = mx.mod.SequentialModule()
    with pytest.raises(AssertionError, match='Unknown meta "foo"'):
        seq.add(mx.mod.Module(mx.sym.var("data") * 2, label_names=None), foo=1)
    with pytest.raises(AssertionError, match="empty SequentialModule"):
        mx.mod.SequentialModule().bind(data_shapes=[("data", (1, 2))])


def test_sequential_duplicate_parameter_names():
    def fc():
        return mx.mod.Module(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2,
                                                   name="fc"), label_names=None)
    seq = mx.mod.SequentialModule().add(fc()).add(fc(), auto_wiring=True)
    seq.bind(data_shapes=[("data", (1, 2))])
    with pytest.raises(AssertionError, match='Duplicated parameter names: name "fc_'):
        seq.init_params()


def test_python_loss_module_needs_grad_func():
    loss = mx.mod.PythonLossModule()
    loss.bind(data_shapes=[("data", (1, 2))], label_shapes=[("softmax_label", (1, 2))])
    loss.forward(mx.io.DataBatch(data=[mx.nd.ones((1, 2))], label=[mx.nd.ones((1, 2))]))
    with pytest.raises(NotImplementedError):
        loss.backward()
    with pytest.raises(NotImplementedError):
        loss.install_monitor(None)
    with pytest.raises(AssertionError):
        loss.backward(out_grads=[mx.nd.ones((1, 2))])


def test_python_module_update_metric_skips_without_labels():
    class Double(mx.mod.PythonModule):
        def _compute_output_shapes(self):
            return [("double_output", self._data_shapes[0][1])]

    mod = Double(["data"], None, ["double_output"])
    mod.bind(data_shapes=[("data", (2,))])
    metric = mx.metric.create("mse")
    mod.update_metric(metric, [mx.nd.ones((2,))])  # no labels bound: nothing happens
    assert metric.num_inst == 0
    assert mod.output_shapes == [("double_output", (2,))]


@pytest.mark.parametrize("call", [
    lambda m: m.bind([("data", (1,))]), lambda m: m.forward(None), lambda m: m.backward(),
    lambda m: m.get_outputs(), lambda m: m.get_input_grads(), lambda m: m.update(),
    lambda m: m.update_metric(None, None), lambda m: m.init_optimizer(),
    lambda m: m.get_params(), lambda m: m.init_params(), lambda m: m.install_monitor(None),
    lambda m: m.data_names, lambda m: m.output_names, lambda m: m.data_shapes,
    lambda m: m.label_shapes, lambda m: m.output_shapes,
])
def test_base_module_interface_is_abstract(call):
    with pytest.raises(NotImplementedError):
        call(mx.mod.BaseModule())


def test_base_module_states_are_empty():
    mod = mx.mod.BaseModule()
    mod.binded = mod.params_initialized = True
    assert mod.get_states(merge_multi_context=False) == []
    with pytest.raises(AssertionError):
        mod.get_states()
    mod.set_states()
    with pytest.raises(AssertionError):
        mod.set_states(value=1)


def test_module_checks_input_names_like_mxnet():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    with pytest.raises(ValueError, match="input with name 'x' is not found"):
        mx.mod.Module(net, data_names=["x"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mx.mod.Module(net)  # softmax_label is not an argument: a warning only
    assert any("softmax_label" in str(w.message) for w in caught)


def test_module_get_states_needs_unmerged_form():
    mod = mx.mod.Module(mx.sym.var("data") + mx.sym.var("s"), label_names=None,
                        state_names=["s"], context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[("data", (4, 2))], for_training=False)
    mod.init_params()
    with pytest.raises(mx.MXNetError, match="merge_multi_context=True"):
        mod.get_states()
    with pytest.raises(ValueError):
        mod.set_states(states=[[mx.nd.ones((2, 2))] * 2], value=1)


@pytest.mark.parametrize("given, n, expected", [
    (None, 2, [None, None]),
    ({"a": mx.cpu(1)}, 2, [{"a": mx.cpu(1)}, {"a": mx.cpu(1)}]),
    ({"a": [mx.cpu(3)], "b": [mx.cpu(1), mx.cpu(2)]}, 2,
     [{"a": mx.cpu(3), "b": mx.cpu(1)}, {"a": mx.cpu(3), "b": mx.cpu(2)}]),
    ([{"a": mx.cpu(1)}, {"a": mx.cpu(2)}], 2, [{"a": mx.cpu(1)}, {"a": mx.cpu(2)}]),
])
def test_prepare_group2ctxs(given, n, expected):
    assert _prepare_group2ctxs(given, n) == expected


def test_prepare_group2ctxs_rejects_wrong_lengths():
    with pytest.raises(ValueError):
        _prepare_group2ctxs([{"a": mx.cpu(1)}], 2)
    with pytest.raises(ValueError):
        _prepare_group2ctxs({"a": [mx.cpu(1), mx.cpu(2), mx.cpu(3)]}, 2)


def _rnn_sym(layers):
    stack = mx.rnn.SequentialRNNCell()
    for i in range(layers):
        stack.add(mx.rnn.LSTMCell(num_hidden=4, prefix=f"lstm_l{i}_"))
    embed = mx.sym.Embedding(mx.sym.var("data"), input_dim=10, output_dim=3, name="embed")
    outputs, _ = stack.unroll(5, inputs=embed, merge_outputs=True)
    pred = mx.sym.FullyConnected(mx.sym.Reshape(outputs, shape=(-1, 4)), num_hidden=10,
                                 name="pred")
    label = mx.sym.Reshape(mx.sym.var("softmax_label"), shape=(-1,))
    return mx.sym.SoftmaxOutput(pred, label, name="softmax")


def test_executor_group_shares_data_arrays():
    """MXNet's test_module.py::test_executor_group, dense embedding, smaller."""
    shapes = dict(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4, 5))])
    sym1 = _rnn_sym(1)
    params = [n for n in sym1.list_arguments() if n not in ("data", "softmax_label")]
    ctxs = [mx.cpu(0), mx.cpu(1)]
    g1 = DataParallelExecutorGroup(sym1, ctxs, [1, 1], param_names=params, for_training=True,
                                   inputs_need_grad=False, **shapes)
    assert [sorted(d) for d in g1.shared_data_arrays] == [["data", "softmax_label"]] * 2
    g2 = DataParallelExecutorGroup(_rnn_sym(2), ctxs, [1, 1], param_names=params,
                                   for_training=True, inputs_need_grad=False,
                                   shared_group=g1, **shapes)
    assert g2.shared_data_arrays is g1.shared_data_arrays
    extra = [n for n in _rnn_sym(2).list_arguments() if n not in params]
    for i in range(2):
        assert sorted(g1.shared_data_arrays[i]) == sorted(extra)
        for name in ("data", "softmax_label"):
            assert g2.execs[i].arg_dict[name] is g1.execs[i].arg_dict[name]
        for name in params:
            assert g2.execs[i].arg_dict[name] is g1.execs[i].arg_dict[name]
            assert g2.execs[i].grad_dict[name] is g1.execs[i].grad_dict[name]
    assert g1.grad_req["data"] == "null" and g1.grad_req["pred_weight"] == "write"


@pytest.mark.parametrize("grad_req, expected", [
    ({"fc_bias": "add"}, {"data": "null", "fc_weight": "write", "fc_bias": "add"}),
    (["write", "null", "add"], {"data": "write", "fc_weight": "null", "fc_bias": "add"}),
])
def test_executor_group_grad_req_forms(grad_req, expected):
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    group = DataParallelExecutorGroup(net, [mx.cpu()], [1], [("data", (2, 3))], [],
                                      ["fc_weight", "fc_bias"], for_training=True,
                                      inputs_need_grad=False, grad_req=grad_req)
    assert group.grad_req == expected


def test_set_states_takes_per_context_lists():
    mod = mx.mod.Module(mx.sym.var("data") + mx.sym.var("s"), label_names=None,
                        state_names=["s"], context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[("data", (4, 2))], for_training=False)
    mod.init_params()
    mod.set_states(states=[[mx.nd.ones((2, 2)), mx.nd.ones((2, 2)) * 3]])
    mod.forward(mx.io.DataBatch(data=[mx.nd.zeros((4, 2))]))
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(),
                                  [[1, 1], [1, 1], [3, 3], [3, 3]])


def test_reexported_names_are_mxnets():
    """The names MXNet's mx.model, mx.rnn, mx.callback, mx.monitor, mx.executor_manager
    carry from other modules."""
    model, rnn = mx.model, mx.rnn
    assert model.LogValidationMetricsCallback is mx.callback.LogValidationMetricsCallback
    assert (model.io, model.metric, model.nd, model.opt, model.sym) == \
        (mx.io, mx.metric, mx.nd, mx.optimizer, mx.sym)
    assert model.Uniform is mx.init.Uniform and model.get_updater is mx.optimizer.get_updater
    assert model.mx_real_t is np.float32 and model.SKLEARN_INSTALLED is False
    assert mx.callback.save_checkpoint is model.save_checkpoint
    assert rnn.save_checkpoint is model.save_checkpoint and rnn.init is mx.init
    assert (rnn.DataBatch, rnn.DataDesc, rnn.DataIter) == \
        (mx.io.DataBatch, mx.io.DataDesc, mx.io.DataIter)
    assert mx.monitor.py_str(b"fc1") == "fc1" and mx.monitor.ndarray is mx.nd
    assert mx.executor_manager.DataDesc is mx.io.DataDesc and mx.executor_manager.nd is mx.nd


def test_feedforward_pickles_after_predict():
    """MXNet's train/test_mlp.py pickles a model that has predicted (its executor is not
    part of the pickle)."""
    import pickle
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3,
                                                     name="fc"), name="softmax")
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    model = mx.model.FeedForward(net, num_epoch=1, numpy_batch_size=2)
    model.fit(X=x, y=np.array([0, 1, 2, 0]))
    prob = model.predict(x)
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.predict(x), prob)
