"""mx.model: checkpoints in MXNet's layout, and the classic training loop."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.model import load_checkpoint, save_checkpoint
from tests.import_alone import failing_alone

NETS = Path(__file__).parent / "fixtures" / "mxnet" / "nets"


@pytest.mark.parametrize("name", ["mlp", "lenet", "resblock"])
def test_mxnet_checkpoint_loads_and_predicts_like_mxnet(name):
    sym, args, aux = load_checkpoint(str(NETS / name / "checkpoint"), 0)
    arrays = np.load(NETS / name / "arrays.npz")
    meta = json.loads((NETS / name / "meta.json").read_text())
    exe = sym.simple_bind(mx.cpu(), grad_req="null",
                          **{k: tuple(v) for k, v in meta["input_shapes"].items()})
    exe.copy_params_from(args, aux, allow_extra_params=True)
    exe.arg_dict["data"][:] = arrays["arg:data"]
    np.testing.assert_allclose(exe.forward(is_train=False)[0].asnumpy(), arrays["out_eval:0"],
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["mlp", "lenet"])
def test_our_checkpoint_is_byte_identical_to_mxnets(name, tmp_path):
    sym, args, aux = load_checkpoint(str(NETS / name / "checkpoint"), 0)
    save_checkpoint(str(tmp_path / "ours"), 0, sym, args, aux)
    for suffix in ("-symbol.json", "-0000.params"):
        assert (tmp_path / f"ours{suffix}").read_bytes() == \
            (NETS / name / f"checkpoint{suffix}").read_bytes(), suffix


def test_corrupt_files_raise_clear_errors(tmp_path):
    net = mx.sym.Variable("x") * 2
    save_checkpoint(str(tmp_path / "m"), 1, net, {"w": mx.nd.ones((3,))}, {})
    params = tmp_path / "m-0001.params"
    params.write_bytes(params.read_bytes()[:-5])
    with pytest.raises(mx.MXNetError, match="m-0001.params"):
        load_checkpoint(str(tmp_path / "m"), 1)
    (tmp_path / "m-symbol.json").write_text("{not json")
    with pytest.raises(mx.MXNetError, match="malformed"):
        load_checkpoint(str(tmp_path / "m"), 1)
    mx.nd.save(str(tmp_path / "bad-0000.params"), {"weird:w": mx.nd.ones((1,))})
    with pytest.raises(mx.MXNetError, match="not arg:/aux:"):
        mx.model.load_params(str(tmp_path / "bad"), 0)


def test_feedforward_trains_on_two_contexts_and_round_trips(tmp_path):
    import warnings

    from symgraph.examples.datasets import load_digits
    x, y = load_digits()
    order = np.random.RandomState(0).permutation(len(x))
    x, y = x[order], y[order]
    np.random.seed(0)
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=32, name="fc1")
    net = mx.sym.FullyConnected(mx.sym.Activation(net, act_type="relu"), num_hidden=10,
                                name="fc2")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        model = mx.model.FeedForward(net, ctx=[mx.cpu(0), mx.cpu(1)], num_epoch=6,
                                     learning_rate=0.1, momentum=0.9, numpy_batch_size=50,
                                     initializer=mx.init.Xavier())
        model.fit(x[:1500], y[:1500])
        acc = model.score(mx.io.NDArrayIter(x[1500:], y[1500:], batch_size=50))
        assert acc >= 0.9, acc
        model.save(str(tmp_path / "ff"))
        again = mx.model.FeedForward.load(str(tmp_path / "ff"), 6)
        np.testing.assert_allclose(again.predict(x[1500:]), model.predict(x[1500:]),
                                   rtol=1e-6)


def test_training_modules_import_alone():
    """The training layer has no import cycle to hide (issue 19): model, its lower modules,
    FeedForward, callbacks, executor_manager and the Module package each import first."""
    names = ["symgraph.model", "symgraph.training.model_io", "symgraph.training.model_kvstore",
             "symgraph.training.fit_loop", "symgraph.training.feedforward", "symgraph.callback",
             "symgraph.executor_manager", "symgraph.module", "symgraph.module.executor_group",
             "symgraph.module.base_module", "symgraph.module.module",
             "symgraph.module.bucketing_module", "symgraph.module.python_module",
             "symgraph.module.sequential_module"]
    assert failing_alone(names) == []


def test_model_keeps_mxnets_names():
    for name in ("FeedForward", "BatchEndParam", "save_checkpoint", "load_checkpoint",
                 "load_params", "LogValidationMetricsCallback", "DataParallelExecutorManager",
                 "_train_multi_device", "_create_kvstore", "_create_sparse_kvstore",
                 "_initialize_kvstore", "_update_params", "_update_params_on_kvstore",
                 "_multiple_callbacks"):
        assert hasattr(mx.model, name), name
    assert mx.callback.save_checkpoint is mx.model.save_checkpoint



def test_train_multi_device_keeps_mxnets_signature():
    """MXNet 1.9.1's mxnet/model.py::_train_multi_device, parameter for parameter."""
    import inspect
    params = inspect.signature(mx.model._train_multi_device).parameters
    assert list(params) == [
        "symbol", "ctx", "arg_names", "param_names", "aux_names", "arg_params", "aux_params",
        "begin_epoch", "end_epoch", "epoch_size", "optimizer", "kvstore", "update_on_kvstore",
        "train_data", "eval_data", "eval_metric", "epoch_end_callback", "batch_end_callback",
        "logger", "work_load_list", "monitor", "eval_end_callback", "eval_batch_end_callback",
        "sym_gen"]
    assert all(params[n].default is None for n in list(params)[14:])
