"""Parameter updates are all-or-nothing and bad arguments raise typed errors (issue 16,
items 2 and 3): a checkpoint missing a parameter never binds it as zeros; ``set_params``,
``init_params``, ``copy_params_from``, gluon's loaders, KVStore calls and
``backward(out_grads=...)`` validate every entry before changing anything; data batches whose
counts or shapes differ from the module's inputs are rejected."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import DTypeError, MXNetError, ShapeError

logging.disable(logging.WARNING)


def _net():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=4, name="fc1")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _module(ctx=None, bind=True):
    mod = mx.mod.Module(_net(), context=ctx or mx.cpu())
    if bind:
        mod.bind([("data", (8, 5))], [("softmax_label", (8,))])
        mod.init_params(mx.init.Uniform(0.5))
    return mod


def _host(mod) -> dict:
    return {k: v.asnumpy().copy() for k, v in mod._arg_params.items()}


def _devices(mod) -> list[dict]:
    return [{k: v.asnumpy().copy() for k, v in exe.arg_dict.items() if k.startswith("fc")}
            for exe in mod._exec_group.execs]


def _same(a: dict, b: dict) -> bool:
    return sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a)


def _sevens(mod, **bad) -> dict:
    """Every parameter set to 7 (a valid update), then the entries of ``bad``."""
    args = {k: mx.nd.ones(v.shape) * 7 for k, v in mod.get_params()[0].items()}
    args.update(bad)
    return args


def _iter(n_data=1, n_label=1, batch=8):
    rng = np.random.RandomState(0)
    data = {f"data{i}" if i else "data": rng.rand(batch * 2, 5).astype("f")
            for i in range(n_data)}
    label = {f"label{i}" if i else "softmax_label": np.zeros(batch * 2, "f")
             for i in range(n_label)}
    return mx.io.NDArrayIter(data, label, batch_size=batch)


# ---------------------------------------------------------------- item 2: missing parameters

def _checkpoint_without(tmp_path, missing: str, extra: dict | None = None) -> str:
    mod = _module()
    prefix = str(tmp_path / "net")
    mod.save_checkpoint(prefix, 1)
    args, auxs = mod.get_params()
    saved = {f"arg:{k}": v for k, v in args.items() if k != missing}
    saved.update({f"aux:{k}": v for k, v in auxs.items()})
    saved.update(extra or {})
    mx.nd.save(f"{prefix}-0002.params", saved)
    return prefix


def test_checkpoint_missing_a_parameter_raises_at_bind(tmp_path):
    prefix = _checkpoint_without(tmp_path, "fc2_bias")
    mod = mx.mod.Module.load(prefix, 2)
    with pytest.raises(MXNetError, match="fc2_bias") as err:
        mod.bind([("data", (8, 5))], [("softmax_label", (8,))])
    assert "net-0002.params" in str(err.value)
    assert isinstance(err.value, RuntimeError)  # MXNet: RuntimeError('... is not presented')
    assert not mod.binded


def test_fit_from_checkpoint_missing_a_parameter_raises(tmp_path):
    prefix = _checkpoint_without(tmp_path, "fc1_weight")
    mod = mx.mod.Module.load(prefix, 2)
    with pytest.raises(MXNetError, match="fc1_weight"):
        mod.fit(_iter(), num_epoch=1)


def test_bucketing_checkpoint_missing_a_parameter_raises(tmp_path):
    def sym_gen(key):
        return _net(), ("data",), ("softmax_label",)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=8)
    mod.bind([("data", (8, 5))], [("softmax_label", (8,))])
    mod.init_params()
    prefix = str(tmp_path / "bucket")
    mod.save_checkpoint(prefix, 1)
    saved = mx.nd.load(f"{prefix}-0001.params")
    del saved["arg:fc2_weight"]
    mx.nd.save(f"{prefix}-0001.params", saved)
    loaded = mx.mod.BucketingModule.load(prefix, 1, sym_gen=sym_gen, default_bucket_key=8)
    with pytest.raises(MXNetError, match="fc2_weight"):
        loaded.bind([("data", (8, 5))], [("softmax_label", (8,))])


def test_allow_missing_initializes_the_missing_parameter_and_saves_it(tmp_path):
    prefix = _checkpoint_without(tmp_path, "fc2_weight")
    _, args, auxs = mx.model.load_checkpoint(prefix, 2)
    mod = _module(bind=False)
    mod.bind([("data", (8, 5))], [("softmax_label", (8,))])
    mod.init_params(mx.init.One(), arg_params=args, aux_params=auxs, allow_missing=True)
    got, _ = mod.get_params()
    assert sorted(got) == ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"]
    np.testing.assert_array_equal(got["fc2_weight"].asnumpy(), np.ones((3, 4)))
    np.testing.assert_array_equal(got["fc1_weight"].asnumpy(), args["fc1_weight"].asnumpy())
    mod.save_checkpoint(prefix, 3)
    assert "arg:fc2_weight" in mx.nd.load(f"{prefix}-0003.params")


def test_checkpoint_with_an_unknown_parameter_raises_like_mxnet(tmp_path):
    prefix = _checkpoint_without(tmp_path, "", extra={"arg:zzz": mx.nd.ones((2,))})
    mod = mx.mod.Module.load(prefix, 2)
    with pytest.raises(ValueError, match='Find name "zzz"'):
        mod.bind([("data", (8, 5))], [("softmax_label", (8,))])
    assert not mod.binded


def test_checkpoint_with_a_wrong_shape_leaves_the_module_unbound(tmp_path):
    prefix = _checkpoint_without(tmp_path, "fc2_bias", extra={"arg:fc2_bias": mx.nd.ones((4,))})
    mod = mx.mod.Module.load(prefix, 2)
    with pytest.raises(ShapeError, match=r"fc2_bias.*\(4,\).*\(3,\)"):
        mod.bind([("data", (8, 5))], [("softmax_label", (8,))])
    assert not mod.binded and mod._exec_group is None


# ---------------------------------------------------------------- item 3: set_params/init_params

@pytest.mark.parametrize("ctx", [[mx.cpu()], [mx.cpu(0), mx.cpu(1)]], ids=["1ctx", "2ctx"])
@pytest.mark.parametrize("bad", [{"fc2_weight": (3, 5)}, {"fc2_bias": (1, 3)},
                                 {"fc1_weight": (1, 5)}], ids=["wrong", "bcast1", "bcast2"])
def test_failed_set_params_changes_nothing(tmp_path, ctx, bad):
    mod = _module(ctx)
    before_host, before_dev = _host(mod), _devices(mod)
    mod.save_checkpoint(str(tmp_path / "a"), 1)
    name, shape = next(iter(bad.items()))
    with pytest.raises(ShapeError, match=name) as err:
        mod.set_params(_sevens(mod, **{name: mx.nd.ones(shape)}), mod.get_params()[1])
    assert str(shape) in str(err.value)
    assert _same(_host(mod), before_host)
    assert all(_same(a, b) for a, b in zip(_devices(mod), before_dev))
    mod.save_checkpoint(str(tmp_path / "b"), 1)
    a, b = mx.nd.load(str(tmp_path / "a-0001.params")), mx.nd.load(str(tmp_path / "b-0001.params"))
    assert _same({k: v.asnumpy() for k, v in a.items()}, {k: v.asnumpy() for k, v in b.items()})


def test_failed_init_params_changes_nothing():
    mod = _module()
    before = _host(mod)
    with pytest.raises(ShapeError, match="fc2_bias"):
        mod.init_params(arg_params=_sevens(mod, fc2_bias=mx.nd.ones((4,))), force_init=True)
    assert _same(_host(mod), before)
    assert _same(_devices(mod)[0], before)


def test_failed_set_params_with_allow_missing_changes_nothing():
    mod = _module([mx.cpu(0), mx.cpu(1)])
    before = _devices(mod)
    good = {"fc1_weight": mx.nd.ones((4, 5)) * 7, "fc2_weight": mx.nd.ones((1, 4))}
    with pytest.raises(ShapeError, match="fc2_weight"):
        mod.set_params(good, {}, allow_missing=True)
    assert all(_same(a, b) for a, b in zip(_devices(mod), before))


def test_set_params_rejects_values_that_cannot_be_cast():
    mod = _module()
    before = _host(mod)
    bad = np.ones((3,), dtype=np.complex64)
    with pytest.raises(DTypeError, match="fc2_bias"):
        mod.set_params(_sevens(mod, fc2_bias=bad), {})
    assert _same(_host(mod), before)
    mod.set_params(_sevens(mod, fc2_bias=mx.nd.ones((3,), dtype="int32")), {})  # MXNet casts
    assert mod.get_params()[0]["fc2_bias"].dtype == np.float32


def test_get_params_returns_every_parameter_after_partial_set():
    mod = _module()
    mod.set_params({"fc1_weight": mx.nd.ones((4, 5))}, {}, allow_missing=True)
    assert sorted(mod.get_params()[0]) == ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"]


def test_bucketing_set_params_changes_nothing_on_error():
    def sym_gen(key):
        return _net(), ("data",), ("softmax_label",)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=8)
    mod.bind([("data", (8, 5))], [("softmax_label", (8,))])
    mod.init_params()
    before = {k: v.asnumpy().copy() for k, v in mod.get_params()[0].items()}
    with pytest.raises(ShapeError, match="fc2_bias"):
        mod.set_params(_sevens(mod, fc2_bias=mx.nd.ones((1, 3))), {})
    assert _same({k: v.asnumpy() for k, v in mod.get_params()[0].items()}, before)


def test_sequential_init_params_changes_nothing_on_error():
    first = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, name="fc1")
    second = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3,
                                                        name="fc2"), name="softmax")
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(first, label_names=None))
    seq.add(mx.mod.Module(second), take_labels=True, auto_wiring=True)
    seq.bind([("data", (8, 5))], [("softmax_label", (8,))])
    seq.init_params()
    before = {k: v.asnumpy().copy() for k, v in seq.get_params()[0].items()}
    args = {k: mx.nd.ones(v.shape) * 7 for k, v in seq.get_params()[0].items()}
    args["fc2_weight"] = mx.nd.ones((1, 4))
    with pytest.raises(ShapeError, match="fc2_weight"):
        seq.init_params(arg_params=args, force_init=True)
    assert _same({k: v.asnumpy() for k, v in seq.get_params()[0].items()}, before)


def test_feedforward_rejects_broadcastable_params():
    args = {"fc_weight": mx.nd.ones((1, 5)), "fc_bias": mx.nd.ones((3,))}
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3,
                                                     name="fc"), name="softmax")
    model = mx.model.FeedForward(net, arg_params=args, num_epoch=1)
    with pytest.raises(ShapeError, match=r"fc_weight.*\(1, 5\).*\(3, 5\)"):
        model.fit(np.ones((4, 5), "f"), np.zeros(4, "f"))


# ---------------------------------------------------------------- executor arguments

def _fc_exec(**shapes):
    net = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=3, name="fc")
    exe = net.simple_bind(mx.cpu(), x=(4, 5), **shapes)
    exe.arg_dict["fc_weight"][:] = 1
    return exe


def test_copy_params_from_is_all_or_nothing():
    exe = _fc_exec()
    with pytest.raises(ShapeError, match=r"fc_weight.*\(1, 5\).*\(3, 5\)"):
        exe.copy_params_from({"fc_bias": mx.nd.ones((3,)) * 5, "fc_weight": mx.nd.ones((1, 5))})
    assert exe.arg_dict["fc_bias"].asnumpy().tolist() == [0, 0, 0]
    with pytest.raises(DTypeError, match="fc_bias"):
        exe.copy_params_from({"fc_bias": np.array(["a", "b", "c"])})


def test_executor_forward_checks_keyword_arrays():
    exe = _fc_exec()
    with pytest.raises(ShapeError, match=r"x.*\(4, 5\).*\(1, 5\)"):
        exe.forward(x=mx.nd.ones((1, 5)))
    with pytest.raises(TypeError, match="zz"):  # MXNet: TypeError('Unknown argument zz')
        exe.forward(zz=mx.nd.ones((1, 5)))


@pytest.mark.parametrize("ctx", [[mx.cpu()], [mx.cpu(0), mx.cpu(1)]], ids=["1ctx", "2ctx"])
def test_module_backward_checks_out_grads(ctx):
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    mod = mx.mod.Module(net, label_names=None, context=ctx)
    mod.bind([("data", (4, 5))])
    mod.init_params()
    mod.forward(mx.io.DataBatch([mx.nd.ones((4, 5))]), is_train=True)
    grads = [exe.grad_dict["fc_weight"].asnumpy().copy() for exe in mod._exec_group.execs]
    for shape in [(2, 3), (1, 3), (4, 4)]:
        with pytest.raises(ShapeError, match=rf"fc_output.*{shape}.*\(4, 3\)"):
            mod.backward(out_grads=[mx.nd.ones(shape)])
    with pytest.raises(MXNetError, match="0 out_grads.*1 output"):
        mod.backward(out_grads=[])
    for exe, grad in zip(mod._exec_group.execs, grads):
        np.testing.assert_array_equal(exe.grad_dict["fc_weight"].asnumpy(), grad)
    mod.backward(out_grads=[mx.nd.ones((4, 3))])
    once = [exe.grad_dict["fc_weight"].asnumpy().copy() for exe in mod._exec_group.execs]
    mod.backward(out_grads=[mx.nd.ones((4, 3)), mx.nd.ones(7)])  # MXNet ignores extra ones
    for exe, grad in zip(mod._exec_group.execs, once):
        np.testing.assert_array_equal(exe.grad_dict["fc_weight"].asnumpy(), grad)


# ---------------------------------------------------------------- KVStore

def test_kvstore_push_of_a_wrong_shape_raises_and_keeps_the_value():
    kv = mx.kv.create("local")
    kv.init(["a", "b"], [mx.nd.ones((2,)), mx.nd.ones((3,))])
    with pytest.raises(ShapeError, match=r"key b: the pushed shape \[5\] differs.*\[3\]"):
        kv.push(["a", "b"], [mx.nd.ones((2,)) * 4, mx.nd.ones((5,))])
    with pytest.raises(ShapeError, match="key a"):
        kv.push("a", [mx.nd.ones((2,)), mx.nd.ones((1, 2))])
    assert kv._store["a"].tolist() == [1, 1] and kv._store["b"].tolist() == [1, 1, 1]
    kv.push("a", mx.nd.ones((2,), dtype="float16") * 2)  # MXNet casts into the stored dtype
    out = mx.nd.zeros((2,))
    kv.pull("a", out=out)
    assert out.asnumpy().tolist() == [2, 2] and kv._store["a"].dtype == mx.nd.ones(1)._t.dtype


def test_kvstore_push_with_an_optimizer_checks_the_shape():
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.ones((2,)))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    with pytest.raises(ShapeError, match=r"key 0.*\[5\].*\[2\]"):
        kv.push(0, mx.nd.ones((5,)))
    assert kv._store[0].tolist() == [1, 1]


def test_kvstore_pull_and_pushpull_change_nothing_on_error():
    kv = mx.kv.create("local")
    kv.init(["a", "b"], [mx.nd.ones((2,)), mx.nd.ones((3,))])
    outs = [mx.nd.zeros((2,)), mx.nd.zeros((4,))]
    with pytest.raises(ShapeError, match="key b"):
        kv.pull(["a", "b"], out=outs)
    assert outs[0].asnumpy().tolist() == [0, 0]
    with pytest.raises(ShapeError, match="key b"):
        kv.pushpull(["a", "b"], [mx.nd.ones((2,)) * 3, mx.nd.ones((3,))], out=outs)
    assert kv._store["a"].tolist() == [1, 1]


def test_kvstore_init_changes_nothing_on_error():
    kv = mx.kv.create("local")
    with pytest.raises(MXNetError, match="duplicate init of key c"):
        kv.init(["b", "c", "c"], [mx.nd.ones((2,))] * 3)
    with pytest.raises(MXNetError, match="2 keys"):
        kv.init(["b", "c"], [mx.nd.ones((2,))])
    assert kv._store == {}


# ---------------------------------------------------------------- gluon

def _gluon_net():
    net = mx.gluon.nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(4, in_units=5), mx.gluon.nn.Dense(3, in_units=4))
    net.initialize(mx.init.Uniform(0.5))
    return net


def _values(net) -> dict:
    return {k: v.data().asnumpy().copy() for k, v in net.collect_params().items()}


@pytest.mark.parametrize("case", ["shape", "dtype", "extra"])
def test_load_parameters_is_all_or_nothing(tmp_path, case):
    net = _gluon_net()
    fname = str(tmp_path / "net.params")
    net.save_parameters(fname)
    saved = mx.nd.load(fname)
    saved["0.weight"] = mx.nd.ones((4, 5)) * 9  # valid, and first in file order
    bad = {"shape": ("1.weight", mx.nd.ones((3, 2))),
           "dtype": ("1.bias", mx.nd.ones((3,), dtype="float16")),
           "extra": ("zz", mx.nd.ones((1,)))}[case]
    saved[bad[0]] = bad[1]
    mx.nd.save(fname, saved)
    target = _gluon_net()
    before = _values(target)
    # MXNet's error types (AssertionError, ValueError): the golden records compare them
    with pytest.raises((AssertionError, ValueError), match=bad[0].split(".")[-1]):
        target.load_parameters(fname)
    assert _same(_values(target), before)


def test_parameter_dict_load_is_all_or_nothing(tmp_path):
    net = _gluon_net()
    fname = str(tmp_path / "pd.params")
    net.collect_params().save(fname)
    saved = mx.nd.load(fname)
    saved["net_dense0_weight"] = mx.nd.ones((4, 5)) * 9
    saved["net_dense1_weight"] = mx.nd.ones((3, 3))
    mx.nd.save(fname, saved)
    target = _gluon_net()
    before = _values(target)
    with pytest.raises(AssertionError, match="net_dense1_weight"):
        target.collect_params().load(fname)
    assert _same(_values(target), before)


def test_parameter_set_data_rejects_other_shapes():
    net = _gluon_net()
    weight = net.collect_params()["net_dense0_weight"]
    before = weight.data().asnumpy().copy()
    for shape in [(1, 5), (3, 5)]:
        with pytest.raises(AssertionError, match="incompatible"):
            weight.set_data(mx.nd.ones(shape))
    assert weight.shape == (4, 5)
    np.testing.assert_array_equal(weight.data().asnumpy(), before)


# ---------------------------------------------------------------- data/label counts and shapes

def test_fit_rejects_an_iterator_with_more_data_than_data_names():
    mod = mx.mod.Module(_net())
    with pytest.raises(MXNetError, match=r"data.*\['data'\].*data1"):
        mod.fit(_iter(n_data=2), num_epoch=1)


def test_fit_rejects_an_iterator_with_more_labels_than_label_names():
    mod = mx.mod.Module(_net())
    with pytest.raises(MXNetError, match=r"softmax_label.*label1"):
        mod.fit(_iter(n_label=2), num_epoch=1)
    assert not mod.binded


def test_forward_rejects_batches_with_other_counts():
    mod = _module()
    with pytest.raises(MXNetError, match=r"2 data arrays.*1 data name"):
        mod.forward(mx.io.DataBatch([mx.nd.ones((8, 5))] * 2, [mx.nd.zeros((8,))]))
    with pytest.raises(MXNetError, match=r"2 label arrays.*1 label name"):
        mod.forward(mx.io.DataBatch([mx.nd.ones((8, 5))], [mx.nd.zeros((8,))] * 2))
    with pytest.raises(MXNetError, match=r"0 data arrays.*1 data name"):
        mod.forward(mx.io.DataBatch([], [mx.nd.zeros((8,))]))


def test_forward_rejects_arrays_that_differ_from_provide_data():
    mod = _module([mx.cpu(0), mx.cpu(1)])
    batch = mx.io.DataBatch([mx.nd.ones((1, 5))], [mx.nd.zeros((8,))],
                            provide_data=[mx.io.DataDesc("data", (8, 5))],
                            provide_label=[mx.io.DataDesc("softmax_label", (8,))])
    with pytest.raises(ShapeError, match=r"data.*\(1, 5\)"):
        mod.forward(batch)
    label_batch = mx.io.DataBatch([mx.nd.ones((8, 5))], [mx.nd.zeros((8, 2))])
    with pytest.raises(ShapeError, match=r"softmax_label.*\(8, 2\)"):
        mod.forward(label_batch)
    single = _module()
    with pytest.raises(ShapeError, match=r"softmax_label.*\(1,\)"):
        single.forward(mx.io.DataBatch([mx.nd.ones((8, 5))], [mx.nd.zeros((1,))]))


def test_rnn_checkpoint_missing_a_gate_weight_names_it(tmp_path):
    cell = mx.rnn.LSTMCell(2, prefix="l_")
    out, _ = cell.unroll(1, [mx.sym.Variable("x")])
    args = {"l_i2h_weight": mx.nd.ones((8, 3)), "l_i2h_bias": mx.nd.zeros((8,)),
            "l_h2h_weight": mx.nd.ones((8, 2)), "l_h2h_bias": mx.nd.zeros((8,))}
    prefix = str(tmp_path / "lm")
    mx.rnn.save_rnn_checkpoint(cell, prefix, 1, out[0], args, {})
    saved = mx.nd.load(f"{prefix}-0001.params")
    del saved["arg:l_h2h_f_weight"]
    mx.nd.save(f"{prefix}-0001.params", saved)
    with pytest.raises(MXNetError, match=r"l_h2h_f_weight.*lm-0001.params"):
        mx.rnn.load_rnn_checkpoint(cell, prefix, 1)


def test_gluon_load_errors_are_mxnet_errors_of_mxnets_builtin_type(tmp_path):
    net = mx.gluon.nn.Dense(2, in_units=3)
    net.initialize()
    path = str(tmp_path / "dense.params")
    net.save_parameters(path)
    wider = mx.gluon.nn.Dense(2, in_units=4)
    wider.initialize()
    before = wider.weight.data().asnumpy().copy()
    with pytest.raises(mx.base.MXNetError, match="shape incompatible") as info:
        wider.load_parameters(path)
    assert isinstance(info.value, AssertionError)  # MXNet's type, for code that catches it
    np.testing.assert_array_equal(wider.weight.data().asnumpy(), before)
    extra = mx.gluon.nn.Dense(2, in_units=3, use_bias=False)
    with pytest.raises(mx.base.MXNetError, match="not present"):
        extra.load_parameters(path)
