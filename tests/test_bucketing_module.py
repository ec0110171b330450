"""``mx.mod.BucketingModule``: MXNet 1.9.1's behaviour (module/bucketing_module.py) plus the
shared memory arena and the LRU bound on cached buckets (issue #5)."""
from __future__ import annotations

import gc
import random
import weakref

import numpy as np
import pytest

import symgraph as mx
from symgraph import config

VOCAB, HIDDEN, BATCH = 12, 8, 4


def sym_gen(length: int):
    """An unrolled tanh RNN over ``length`` steps; every step shares its weights."""
    data, label = mx.sym.Variable("data"), mx.sym.Variable("softmax_label")
    embed = mx.sym.Embedding(data, input_dim=VOCAB, output_dim=HIDDEN, name="embed")
    steps = mx.sym.SliceChannel(embed, num_outputs=length, axis=1, squeeze_axis=True)
    weights = {n: mx.sym.Variable(n) for n in ("i2h_weight", "i2h_bias", "h2h_weight",
                                               "h2h_bias")}
    hidden, outs = None, []
    for t in range(length):
        x = mx.sym.FullyConnected(steps[t] if length > 1 else steps, weight=weights["i2h_weight"],
                                  bias=weights["i2h_bias"], num_hidden=HIDDEN, name=f"t{t}_i2h")
        if hidden is not None:
            x = x + mx.sym.FullyConnected(hidden, weight=weights["h2h_weight"],
                                          bias=weights["h2h_bias"], num_hidden=HIDDEN,
                                          name=f"t{t}_h2h")
        hidden = mx.sym.Activation(x, act_type="tanh")
        outs.append(mx.sym.expand_dims(hidden, axis=1))
    seq = mx.sym.Reshape(mx.sym.Concat(*outs, dim=1), shape=(-1, HIDDEN))
    pred = mx.sym.FullyConnected(seq, num_hidden=VOCAB, name="pred")
    out = mx.sym.SoftmaxOutput(pred, mx.sym.Reshape(label, shape=(-1,)), name="softmax")
    return out, ("data",), ("softmax_label",)


def batch(length: int, seed: int):
    """A batch of the learnable task "predict the previous token" for bucket ``length``."""
    rng = np.random.RandomState(seed)
    x = rng.randint(0, VOCAB, (BATCH, length)).astype(np.float32)
    y = np.concatenate([x[:, :1], x[:, :-1]], axis=1)
    return mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)], pad=0, bucket_key=length,
                           provide_data=[mx.io.DataDesc("data", (BATCH, length))],
                           provide_label=[mx.io.DataDesc("softmax_label", (BATCH, length))])


class BucketIter(mx.io.DataIter):
    """A tiny bucketed iterator: fixed batches, each carrying bucket_key/provide_data."""

    def __init__(self, lengths, default: int, seed: int = 0):
        super().__init__(batch_size=BATCH)
        self.batches = [batch(n, seed + i) for i, n in enumerate(lengths)]
        self.default_bucket_key = default
        self.provide_data = [mx.io.DataDesc("data", (BATCH, default))]
        self.provide_label = [mx.io.DataDesc("softmax_label", (BATCH, default))]
        self.cur = 0

    def reset(self):
        self.cur = 0

    def next(self):
        if self.cur == len(self.batches):
            raise StopIteration
        self.cur += 1
        return self.batches[self.cur - 1]


def bound(default=10, for_training=True, **kwargs):
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=default, **kwargs)
    mod.bind([("data", (BATCH, default))], [("softmax_label", (BATCH, default))],
             for_training=for_training)
    mod.init_params(mx.init.Xavier())
    return mod


def params_of(mod):
    args, aux = mod.get_params()
    return {k: v.asnumpy().copy() for k, v in args.items()}


def test_buckets_share_parameters_and_gradients():
    mod = bound()
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    before = params_of(mod)
    for n in (3, 7):
        mod.forward_backward(batch(n, n))
    default_exe = mod._buckets[10]._exec_group.execs[0]
    for key in (3, 7):
        exe = mod._buckets[key]._exec_group.execs[0]
        for name in ("i2h_weight", "h2h_weight", "pred_weight", "embed_weight"):
            assert exe.arg_dict[name] is default_exe.arg_dict[name]
            assert exe.grad_dict[name] is default_exe.grad_dict[name]
        assert mod._buckets[key]._optimizer is mod._buckets[10]._optimizer
    mod.update()  # through bucket 7: the default bucket sees the new values
    after = params_of(mod)
    assert not np.allclose(before["i2h_weight"], after["i2h_weight"])
    np.testing.assert_array_equal(default_exe.arg_dict["i2h_weight"].asnumpy(),
                                  after["i2h_weight"])
    assert mod._curr_bucket_key == 7 and mod._default_bucket_key == 10
    assert mod.symbol.list_arguments() == sym_gen(7)[0].list_arguments()
    assert mod.data_shapes[0].shape == (BATCH, 7)
    # MXNet writes the batch size into axis 0 of every output shape, even this (28, 12) one
    assert mod.output_shapes == [("softmax_output", (BATCH, VOCAB))]


def test_shuffled_buckets_equal_separately_bound_modules():
    keys = [3, 10, 5, 7, 3, 10, 7, 5, 5, 3]
    random.Random(1).shuffle(keys)
    opt = {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}
    mod = bound()
    init = mod.get_params()
    mod.init_optimizer(optimizer="sgd", optimizer_params=opt)
    # the reference: plain Modules, one per bucket, bound on the default one's parameters
    ref = {10: mx.mod.Module(sym_gen(10)[0])}
    ref[10].bind([("data", (BATCH, 10))], [("softmax_label", (BATCH, 10))])
    ref[10].set_params(*init)
    ref[10].init_optimizer(optimizer="sgd", optimizer_params=opt)
    for step, key in enumerate(keys):
        b = batch(key, step)
        if key not in ref:
            ref[key] = mx.mod.Module(sym_gen(key)[0])
            ref[key].bind(b.provide_data, b.provide_label, shared_module=ref[10])
        for m in (mod, ref[key]):
            m.forward(b, is_train=True)
            m.backward()
            m.update()
        np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(),
                                   ref[key].get_outputs()[0].asnumpy(), rtol=1e-6, atol=1e-7)
    ours, theirs = params_of(mod), {k: v.asnumpy() for k, v in ref[10].get_params()[0].items()}
    for name, value in theirs.items():
        np.testing.assert_allclose(ours[name], value, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("order", ["largest_first", "largest_last"])
def test_memory_is_the_largest_bucket_in_either_order(order):
    keys = [40, 20, 10, 5] if order == "largest_first" else [5, 10, 20, 40]
    alone = bound(default=keys[0])
    alone.forward_backward(batch(40, 0))
    alone_stats = alone.memory_stats()  # only the largest bucket has run

    mod = bound(default=keys[0])
    for step, key in enumerate(keys * 2):
        mod.forward_backward(batch(key, step))
    stats = mod.memory_stats()
    sizes = mod._arena.bucket_bytes()
    assert stats["buckets"] == 4 and stats["largest_bucket_bytes"] == sizes[40]
    assert stats["peak_planned_bytes"] <= 1.05 * sizes[40]
    assert stats["unshared_bytes"] > 1.5 * stats["planned_bytes"]  # what sharing saves
    # the arrays really held: the bucket that ran last keeps its intermediates, the others
    # only their outputs (as in MXNet, outputs stay readable until the bucket runs again)
    others = sum(o._t.untyped_storage().nbytes() for k, m in mod._buckets.items()
                 if k != keys[-1] for o in m._exec_group.execs[0].outputs)
    assert stats["held_bytes"] <= 1.05 * alone_stats["held_bytes"] + others


def test_lru_eviction_releases_executors_and_rebinds():
    mod = bound(default=10, max_buckets=3)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    mod.forward(batch(3, 0), is_train=False)
    first = mod.get_outputs()[0].asnumpy().copy()
    ref = weakref.ref(mod._buckets[3]._exec_group.execs[0])
    ref_mod = weakref.ref(mod._buckets[3])
    for key in (5, 7):
        mod.forward(batch(key, key), is_train=False)
    assert list(mod._buckets) == [10, 5, 7]  # 3 was the least recently used
    gc.collect()
    assert ref() is None and ref_mod() is None
    assert mod.memory_stats()["buckets"] == 3
    mod.forward(batch(3, 0), is_train=False)  # rebind: same parameters, same result
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), first)
    assert list(mod._buckets) == [10, 7, 3]
    mod.forward_backward(batch(3, 1))
    mod.update()  # the rebound bucket trains the shared parameters
    exe = mod._buckets[3]._exec_group.execs[0]
    assert exe.arg_dict["i2h_weight"] is mod._buckets[10]._exec_group.execs[0].arg_dict[
        "i2h_weight"]


def test_lru_never_evicts_default_or_current():
    mod = bound(default=10, max_buckets=1)
    for key in (3, 5, 7):
        mod.forward(batch(key, key), is_train=False)
        assert set(mod._buckets) == {10, key}
    with config.override(max_buckets=2):
        assert mx.mod.BucketingModule(sym_gen, 10)._max_buckets == 2
    assert mx.mod.BucketingModule(sym_gen, 10, max_buckets=0)._max_buckets == 0


def test_max_buckets_from_environment(monkeypatch):
    monkeypatch.setenv("SYMGRAPH_MAX_BUCKETS", "5")
    assert config._from_env().max_buckets == 5
    monkeypatch.delenv("SYMGRAPH_MAX_BUCKETS")
    assert config._from_env().max_buckets == config.Config.max_buckets


def test_monitor_covers_new_buckets_and_forgets_evicted_ones():
    mod = bound(default=10, max_buckets=2)
    mon = mx.monitor.Monitor(1, pattern="pred_output")
    mod.install_monitor(mon)
    mon.tic()
    mod.forward(batch(3, 0), is_train=False)
    assert [name for _, name, _ in mon.toc()] == ["pred_output"]
    mod.forward(batch(5, 0), is_train=False)  # evicts 3
    assert len(mon.exes) == 2


def test_save_and_load_checkpoint(tmp_path):
    prefix = str(tmp_path / "rnn")
    mod = bound()
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    for key in (10, 4, 6):
        mod.forward_backward(batch(key, key))
        mod.update()
    mod.save_checkpoint(prefix, 3)
    assert mx.nd.load(prefix + ".buckets")[0].asnumpy().tolist() == [10, 4, 6]
    assert (tmp_path / "rnn-4-symbol.json").exists()
    loaded = mx.mod.BucketingModule.load(prefix, 3, sym_gen=sym_gen, default_bucket_key=10)
    assert sorted(loaded._buckets) == [4, 6, 10] and loaded.params_initialized
    loaded.bind([("data", (BATCH, 10))], [("softmax_label", (BATCH, 10))], for_training=False)
    for key in (10, 4, 6):
        b = batch(key, 100 + key)
        mod.forward(b, is_train=False)
        loaded.forward(b, is_train=False)
        np.testing.assert_array_equal(loaded.get_outputs()[0].asnumpy(),
                                      mod.get_outputs()[0].asnumpy())
    args, aux = mod.get_params()
    from_dict = mx.mod.BucketingModule.load_dict(
        {k: sym_gen(k)[0] for k in (10, 4)}, sym_gen=sym_gen, default_bucket_key=10,
        arg_params=args, aux_params=aux)
    from_dict.bind([("data", (BATCH, 10))], [("softmax_label", (BATCH, 10))],
                   for_training=False)
    from_dict.forward(batch(4, 104), is_train=False)
    mod.forward(batch(4, 104), is_train=False)
    np.testing.assert_array_equal(from_dict.get_outputs()[0].asnumpy(),
                                  mod.get_outputs()[0].asnumpy())
    params = tmp_path / "p.params"
    mod.save_params(str(params))
    other = bound()
    other.load_params(str(params))
    np.testing.assert_array_equal(params_of(other)["h2h_weight"], params_of(mod)["h2h_weight"])


def test_fit_score_predict_on_a_bucketed_iterator():
    lengths = [3, 5, 8, 5, 3, 8, 8, 3] * 2
    train = BucketIter(lengths, default=8)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=8)
    metric = mx.metric.Perplexity(None)
    mod.fit(train, num_epoch=1, optimizer="adam", optimizer_params={"learning_rate": 0.05},
            initializer=mx.init.Xavier(), eval_metric=metric)
    start = dict(mod.score(train, mx.metric.Perplexity(None)))["perplexity"]
    train.reset()  # score leaves it at its end; fit resets only after each epoch (as MXNet)
    mod.fit(train, begin_epoch=1, num_epoch=12, optimizer="adam",
            optimizer_params={"learning_rate": 0.05}, eval_metric=metric)
    end = dict(mod.score(train, mx.metric.Perplexity(None)))["perplexity"]
    assert end < 0.5 * start
    assert sorted(mod._buckets) == [3, 5, 8]
    out = mod.predict(BucketIter([5, 5], default=8), merge_batches=False)
    assert [o[0].shape for o in out] == [(BATCH * 5, VOCAB)] * 2


def test_mxnet_checks():
    with pytest.raises(ValueError, match="default_bucket_key"):
        mx.mod.BucketingModule(sym_gen)
    with pytest.raises(ValueError, match="input with name 'nope' is not found"):
        mx.mod.BucketingModule(sym_gen, 4, fixed_param_names=["nope"])
    mod = mx.mod.BucketingModule(sym_gen, 4)
    assert mod.data_names == ("data",) and mod.output_names == ["softmax_output"]
    with pytest.raises(AssertionError):
        mod.switch_bucket(3, [("data", (BATCH, 3))])


def test_matches_mxnet_golden_run(tmp_path):
    """``tests/fixtures/bucketing/generate.py``'s script, recorded under MXNet 1.9.1, run
    here with ``import symgraph as mx``: outputs per step, trained parameters, score,
    bookkeeping (``_buckets`` order, shapes), checkpoint files and ``load``."""
    import importlib.util
    import json
    from pathlib import Path
    here = Path(__file__).parent / "fixtures" / "bucketing"
    spec = importlib.util.spec_from_file_location("bucketing_generate", here / "generate.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    golden = np.load(here / "bucketing.npz", allow_pickle=False)
    facts = json.loads((here / "bucketing.json").read_text())
    inputs = {k: golden[k] for k in golden.files if k.startswith("in/")}
    arrays, ours = gen.script(mx, inputs, str(tmp_path / "rnn"))
    for key, value in arrays.items():
        np.testing.assert_allclose(value, golden[key], rtol=1e-5, atol=1e-6, err_msg=key)
    assert ours["score"][0][1] == pytest.approx(facts["score"][0][1], rel=1e-5)
    for key in ("steps", "files", "saved_buckets", "loaded_buckets", "unbound_output_names",
                "unbound_data_names"):
        assert ours[key] == facts[key], key
