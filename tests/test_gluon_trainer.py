"""``mx.gluon.Trainer`` against MXNet 1.9.1 (seed 003, ``mxnet/gluon/trainer.py``).

The scenarios are the functions of ``tests/fixtures/gluon/generate_trainer.py``, which ran them
on MXNet 1.9.1 to write ``trainer_arrays.npz`` / ``trainer_cases.json``; here they run again
with ``mx = symgraph`` and must give the same weights, decisions and errors. Distributed
cases use fake ``KVStoreBase`` stores whose ``type`` contains 'dist' / 'dist_async' (MXNet
would need a real cluster); sparse cases set ``_stype``/``_grad_stype`` on the Parameter and
run only the kvstore decision (symgraph has no sparse storage).
"""
from __future__ import annotations

import json
import os
import re
import warnings

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError
from symgraph.optimizer.updater import MAGIC
from tests import fixture_scripts

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "gluon")




gen = fixture_scripts.load("gluon/generate_trainer.py")


@pytest.fixture(scope="module")
def arrays():
    with np.load(os.path.join(HERE, "trainer_arrays.npz"), allow_pickle=False) as f:
        return dict(f)


@pytest.fixture(scope="module")
def cases():
    with open(os.path.join(HERE, "trainer_cases.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def inputs(arrays):
    return {k: v for k, v in arrays.items() if k.startswith("in/")}


@pytest.fixture(scope="module")
def stores():
    return gen.define_stores(mx)


def _norm(value):
    """Messages with the module of the scenario classes taken out."""
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"[\w.]*?(define_stores\.<locals>\.\w+)", r"\1", value)
    return value


def _assert_weights(arrays, prefix: str, got: dict, opt: str = "sgd") -> None:
    want = {k[len(prefix) + 1:]: v for k, v in arrays.items() if k.startswith(prefix + "/")}
    assert want and sorted(got) == sorted(want), (sorted(got), sorted(want))
    tol = {"rtol": 1e-5, "atol": 1e-6} if opt == "adam" else {"rtol": 1e-6, "atol": 1e-7}
    for key in want:
        np.testing.assert_allclose(got[key], want[key], err_msg=f"{prefix}/{key}", **tol)


# ---------------------------------------------------------------- training (fixture)
TRAIN = [(nctx, kv, up, opt) for nctx in (1, 2) for kv in gen.KVSTORES for up in gen.UPDATES
         for opt in gen.OPTS]


@pytest.mark.parametrize("nctx,kv,up,opt", TRAIN)
def test_step_matches_mxnet(nctx, kv, up, opt, arrays, cases, inputs):
    """4 steps: the weights on every context (or the error) equal MXNet's."""
    key = f"train/{nctx}/{kv}/{up}/{opt}"
    out, got = gen.run_train(mx, inputs, nctx, gen.KVSTORES[kv], gen.UPDATES[up], opt)
    fixture_scripts.assert_nested_close(_norm(out), cases[key])
    if "error" not in out:
        _assert_weights(arrays, key, got, opt)


@pytest.mark.parametrize("name", sorted(gen.TRAIN_EXTRA))
def test_step_extra_matches_mxnet(name, arrays, cases, inputs, stores):
    """Compression, lr_scheduler, batch-size changes, custom and fake-dist stores."""
    nctx, kv, up, opt, extra = gen.TRAIN_EXTRA[name]
    key = f"train_extra/{name}"
    out, got = gen.run_train(mx, inputs, nctx, gen.resolve_store(mx, stores, kv), up, opt,
                             gen.extra_kwargs(mx, extra))
    fixture_scripts.assert_nested_close(_norm(out), cases[key])
    _assert_weights(arrays, key, got, opt)


@pytest.mark.parametrize("name,kv,up", [("clip_device", "device", False),
                                        ("clip_none", None, None)])
def test_allreduce_clip_update_matches_mxnet(name, kv, up, arrays, cases, inputs):
    """allreduce_grads, clipping by global norm by hand, then update."""
    out, got = gen.run_clip(mx, inputs, kv, up)
    np.testing.assert_allclose(out["norms"], cases[name]["norms"], rtol=1e-6)
    _assert_weights(arrays, name, got)


@pytest.mark.parametrize("name,kv,up", [("amp_none", None, None),
                                        ("amp_device_on", "device", True)])
def test_amp_loss_scaler_skips_update_on_overflow(name, kv, up, arrays, cases, inputs):
    """has_overflow(params) True skips the local update (not the kvstore's, as in MXNet)."""
    out, got = gen.run_amp(mx, inputs, 2, kv, up)
    assert out == cases[name]
    _assert_weights(arrays, name, got)


def test_deferred_parameter(arrays, cases, inputs):
    """step raises DeferredInitializationError until the Parameter is initialized, then
    trains as MXNet."""
    out, got = gen.run_deferred(mx, inputs)
    assert out == cases["deferred"]
    _assert_weights(arrays, "deferred", got)


def test_stale_gradients(arrays, cases, inputs):
    """The UserWarning raised for stale gradients, per context; ignore_stale_grad skips them;
    with update_on_kvstore the fresh flags are never cleared."""
    out, got = gen.run_stale(mx, inputs)
    want = cases["stale"]
    assert out["on_kvstore_fresh"] == [bool(v) for v in want.pop("on_kvstore_fresh")]
    assert {k: v for k, v in out.items() if k != "on_kvstore_fresh"} == want
    _assert_weights(arrays, "stale", got)


# ---------------------------------------------------------------- decisions and errors
@pytest.mark.parametrize("name", sorted(gen.DECISIONS))
def test_update_on_kvstore_decision(name, cases, inputs, stores, monkeypatch):
    """The kvstore / update_on_kvstore table (MXNET_UPDATE_ON_KVSTORE included) or its error."""
    nctx, kv, up, kw = gen.DECISIONS[name]
    monkeypatch.delenv("MXNET_UPDATE_ON_KVSTORE", raising=False)
    got = gen.run_decision(mx, inputs, nctx, gen.resolve_store(mx, stores, kv), up, **kw)
    assert _norm(got) == _norm(cases[f"decision/{name}"])


def test_errors(cases, inputs, stores):
    """Construction, allreduce_grads/update on kvstore, batch-size change on a dist store,
    reset of a dist store, learning-rate and unset-optimizer errors: types and messages."""
    got, want = gen.run_errors(mx, inputs, stores), cases["errors"]
    assert sorted(got) == sorted(want)
    for key in want:
        if key == "compression_local":  # MXNet raises a bare Exception, symgraph MXNetError
            assert got[key]["error"] == "MXNetError"
            assert got[key]["msg"] == want[key]["msg"]
            continue
        assert _norm(got[key]) == _norm(want[key]), key


def test_misc(arrays, cases, inputs):
    """Dict params in sorted order, optimizer instances, learning rates, _row_sparse_pull."""
    out, got = gen.run_misc(mx, inputs)
    assert out == cases["misc"]
    np.testing.assert_array_equal(got["row_sparse_pull"], arrays["misc/row_sparse_pull"])


def test_row_sparse_pull_without_full_idx_needs_sparse_storage(inputs):
    params = gen.make_params(mx, inputs, 2)
    trainer = mx.gluon.Trainer(params, "sgd", kvstore="device")
    with pytest.raises(MXNetError, match="row_sparse"):
        trainer._row_sparse_pull(params[0], mx.nd.zeros((3, 4)), mx.nd.arange(3))


def test_learning_rate_with_scheduler(inputs):
    """The scheduler's rate by update count; set_learning_rate refuses (MXNet's UserWarning)."""
    params = gen.make_params(mx, inputs, 1)
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=0.4)
    trainer = mx.gluon.Trainer(params, "sgd", {"lr_scheduler": sched, "learning_rate": None})
    assert trainer.learning_rate == 0.4
    for step in range(2):
        gen.set_grads(mx, inputs, params, step)
        trainer.step(1)
    # MXNet's FactorScheduler: num_update 2 > count 0 + step 1 once, so 0.4 * 0.5
    assert trainer.learning_rate == pytest.approx(0.2)
    with pytest.raises(UserWarning, match="LRScheduler of the optimizer has already"):
        trainer.set_learning_rate(0.1)


# ---------------------------------------------------------------- save / load states
@pytest.mark.parametrize("name", sorted(gen.RESUME))
def test_save_load_states_resumes_as_mxnet(name, arrays, inputs, tmp_path):
    """Two steps, save, a new Trainer, load, two steps: MXNet's weights. Where a kvstore
    keeps the contexts equal this is also the uninterrupted run."""
    nctx, kv, up, opt, extra = gen.RESUME[name]
    fname, trainer, params = gen.run_resume(mx, inputs, str(tmp_path), *gen.RESUME[name])
    with open(fname, "rb") as f:
        assert f.read(len(MAGIC)) == MAGIC  # the Updater's pickle-free format
    assert os.listdir(tmp_path) == ["trainer.states"]  # no temporary file left behind
    assert trainer.optimizer.param_dict[0] is params[0]
    _assert_weights(arrays, f"resume/{name}", gen.weights(params), opt)
    if kv is not None or nctx == 1:
        kv_name = "none" if kv is None else kv
        up_name = {None: "auto", True: "on", False: "off"}[up]
        _assert_weights(arrays, f"train/{nctx}/{kv_name}/{up_name}/{opt}", gen.weights(params),
                        opt)


def test_load_states_refuses_pickles(inputs, tmp_path):
    import pickle
    params = gen.make_params(mx, inputs, 1)
    trainer = mx.gluon.Trainer(params, "sgd")
    fname = tmp_path / "mxnet.states"
    fname.write_bytes(pickle.dumps(({}, None)))
    with pytest.raises(ValueError, match="not a symgraph optimizer-states blob"):
        trainer.load_states(str(fname))


def test_save_states_is_atomic(inputs, tmp_path, monkeypatch):
    """A failing save leaves the previous file whole and no temporary file."""
    params = gen.make_params(mx, inputs, 1)
    trainer = mx.gluon.Trainer(params, "adam")
    gen.set_grads(mx, inputs, params, 0)
    trainer.step(1)
    fname = tmp_path / "t.states"
    trainer.save_states(str(fname))
    before = fname.read_bytes()

    def broken(*args, **kwargs):
        raise OSError("disk full")

    import symgraph.symbol.json_io as json_io
    real = json_io.os.replace
    monkeypatch.setattr(json_io.os, "replace", broken)
    gen.set_grads(mx, inputs, params, 1)
    trainer.step(1)
    with pytest.raises(OSError, match="disk full"):
        trainer.save_states(str(fname))
    monkeypatch.setattr(json_io.os, "replace", real)
    assert fname.read_bytes() == before
    assert os.listdir(tmp_path) == ["t.states"]


def test_save_states_on_kvstore_with_uninitialized_params(inputs, tmp_path):
    """MXNet's assertion: a deferred Parameter still waiting for the kvstore."""
    params = gen.make_params(mx, inputs, 2)
    trainer = mx.gluon.Trainer(params, "sgd", kvstore="device", update_on_kvstore=True)
    trainer._init_kvstore()
    late = mx.gluon.Parameter("late_weight", shape=(0, 2), allow_deferred_init=True)
    late.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    trainer._params_to_init = [late]
    with pytest.raises(AssertionError, match="Cannot save trainer states when some"):
        trainer.save_states(str(tmp_path / "x.states"))
    assert trainer._params_to_init == [late]


# ---------------------------------------------------------------- custom stores
def test_custom_store_without_optimizer_updates_locally(inputs, stores):
    """A store lacking the 'optimizer' capability reduces gradients; the Trainer updates."""
    params = gen.make_params(mx, inputs, 2)
    store = stores["noopt"]()
    trainer = mx.gluon.Trainer(params, "sgd", gen.OPTS["sgd"][1], kvstore=store)
    gen.set_grads(mx, inputs, params, 0)
    trainer.step(gen.BATCH)
    assert trainer._kvstore is store and trainer._update_on_kvstore is False
    # every Parameter is broadcast, the grad_req="null" one (key 3) too, as MXNet
    assert store._updater is None and sorted(store._store) == [0, 1, 2, 3]


def test_custom_store_with_optimizer_updates_on_store(inputs, stores):
    params = gen.make_params(mx, inputs, 2)
    store = stores["opt"]()
    trainer = mx.gluon.Trainer(params, "adam", kvstore=store)
    gen.set_grads(mx, inputs, params, 0)
    trainer.step(gen.BATCH)
    assert trainer._update_on_kvstore is True
    assert store._updater.optimizer is trainer.optimizer
    with pytest.raises(AssertionError, match="update\\(\\) when parameters are updated"):
        trainer.update(gen.BATCH)


def test_registered_store_by_name(inputs, stores):
    """A KVStoreBase subclass registered by name is created by the Trainer when the name
    contains 'dist' (case-sensitively, as MXNet's ``_create_kvstore``), even on one context."""
    class Fake_dist_named(stores["dist_sync"]):  # the registry's lowercase name
        pass

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a new name: no "overriding" warning
        mx.kv.KVStoreBase.register(Fake_dist_named)
    try:
        params = gen.make_params(mx, inputs, 1)
        trainer = mx.gluon.Trainer(params, "sgd", kvstore="fake_dist_named")
        gen.set_grads(mx, inputs, params, 0)
        trainer.step(gen.BATCH)
        assert isinstance(trainer._kvstore, Fake_dist_named)
        assert trainer._distributed is True and trainer._update_on_kvstore is True
        trainer = mx.gluon.Trainer(params, "sgd", kvstore="FAKE_DIST_NAMED")
        trainer.step(gen.BATCH, ignore_stale_grad=True)
        assert trainer._kvstore is None  # 'DIST' is not 'dist': one context needs no store
    finally:
        mx.kv.KVStoreBase.kv_registry.pop("fake_dist_named", None)
