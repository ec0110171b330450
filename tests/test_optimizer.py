"""mx.optimizer against MXNet 1.9.1 trajectories (tests/fixtures/optim_api, generate.py)."""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import symgraph as mx

FIX = pathlib.Path(__file__).parent / "fixtures" / "optim_api"
META = json.loads((FIX / "optim_api.json").read_text())
ARR = dict(np.load(FIX / "optim_api.npz", allow_pickle=False))
NAMES = {0: "fc_weight", 1: "fc_bias"}


def _make_opt(name, kw, extra):
    kw = dict(kw)
    if extra.get("sched"):
        kw["lr_scheduler"] = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=0.2)
    if extra.get("mult"):
        kw["param_idx2name"] = dict(NAMES)
    opt = mx.optimizer.create(name, **kw)
    if extra.get("mult"):
        opt.set_lr_mult({"fc_weight": 2.0})
        opt.set_wd_mult({"fc_weight": 0.5})
    return opt


def _flatten(state):
    if state is None:
        return []
    if isinstance(state, (tuple, list)):
        return [x for s in state for x in _flatten(s)]
    return [state]


def _tol(dtype):
    return dict(rtol=1e-3, atol=1e-3) if dtype == "float16" else dict(rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("key", sorted(META["opt"]))
def test_trajectory_matches_mxnet(key):
    case = META["opt"][key]
    dtype = case["dtype"]
    opt = _make_opt(case["opt"], case["kwargs"], case["extra"])
    ws = [mx.nd.array(ARR[f"{key}/w{i}/init"], dtype=dtype) for i in range(2)]
    states = [opt.create_state_multi_precision(i, w) for i, w in enumerate(ws)]
    assert [len(_flatten(s)) for s in states] == case["n_states"]
    for step in range(4):
        for i, w in enumerate(ws):
            g = mx.nd.array(ARR[f"{key}/g{i}/step{step}"], dtype=dtype)
            opt.update_multi_precision(i, w, g, states[i])
            np.testing.assert_allclose(w.asnumpy(), ARR[f"{key}/w{i}/step{step}"],
                                       err_msg=f"{key} w{i} step{step}", **_tol(dtype))
    assert opt.num_update == case["num_update"]
    for i, s in enumerate(states):
        for k, arr in enumerate(_flatten(s)):
            np.testing.assert_allclose(arr.asnumpy(), ARR[f"{key}/s{i}/{k}"],
                                       err_msg=f"{key} state {i}/{k}", **_tol(dtype))


def _updater_run(upd, ws, steps):
    n = len(ws)
    for step in steps:
        gs = [mx.nd.array(ARR[f"updater/g{i}/step{step}"]) for i in range(n)]
        upd(list(range(n)), gs, ws)


def _updater_start():
    sched = mx.lr_scheduler.FactorScheduler(step=3, factor=0.5, base_lr=0.1)
    upd = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9, lr_scheduler=sched))
    n = len(META["updater"]["shapes"])
    return upd, [mx.nd.array(ARR[f"updater/w{i}/init"]) for i in range(n)]


def test_updater_aggregated_lists_match_mxnet():
    upd, ws = _updater_start()
    _updater_run(upd, ws, range(3))
    for i, w in enumerate(ws):
        np.testing.assert_allclose(w.asnumpy(), ARR[f"updater/w{i}/final"], rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("dump_optimizer", [True, False])
def test_states_round_trip_continues_the_same_trajectory(dump_optimizer):
    upd, ws = _updater_start()
    _updater_run(upd, ws, [0])
    blob = upd.get_states(dump_optimizer=dump_optimizer)
    assert b"pickle" not in blob[:64] and blob.startswith(b"SYMGRAPH-OPTIMIZER-STATES")
    if dump_optimizer:
        fresh = mx.optimizer.get_updater(mx.optimizer.Adam())
    else:  # as in MXNet, the counters and scheduler live in the optimizer
        fresh = mx.optimizer.get_updater(upd.optimizer)
    fresh.set_states(blob)
    assert all(not v for v in fresh.states_synced.values())
    _updater_run(fresh, ws, [1, 2])
    for i, w in enumerate(ws):
        np.testing.assert_allclose(w.asnumpy(), ARR[f"updater/w{i}/final"], rtol=2e-5, atol=2e-6)


def test_round_trip_adam_fp16_multi_precision_state():
    opt = mx.optimizer.Adam(learning_rate=0.01, multi_precision=True)
    upd = mx.optimizer.get_updater(opt)
    w = mx.nd.array(np.linspace(-1, 1, 6), dtype="float16")
    upd(3, mx.nd.ones((6,), dtype="float16"), w)
    other = mx.optimizer.get_updater(mx.optimizer.SGD())
    other.set_states(upd.get_states(dump_optimizer=True))
    master, (mean, var) = other.states[3]
    assert np.dtype(master.dtype) == np.float32 and np.dtype(w.dtype) == np.float16
    np.testing.assert_array_equal(mean.asnumpy(), upd.states[3][1][0].asnumpy())
    assert other.optimizer._index_update_count == {3: 1} and other.optimizer.num_update == 1
    assert other.optimizer._index_update_count is other.optimizer._all_index_update_counts[0]


def test_mxnet_pickled_states_are_refused():
    import pickle
    upd = mx.optimizer.get_updater(mx.optimizer.SGD())
    with pytest.raises(ValueError, match="pickled optimizer states are not read"):
        upd.set_states(pickle.dumps({0: None}))


def test_unknown_optimizer_error_matches_mxnet():
    with pytest.raises(ValueError) as err:
        mx.optimizer.create("nosuchopt")
    assert f"ValueError: {err.value}" == META["create_error"]


def test_name_rules_match_mxnet():
    opt = mx.optimizer.create("sgd", wd=0.1, param_idx2name={
        0: "fc_weight", 1: "fc_bias", 2: "bn_gamma", 3: "bn_beta", 4: "emb"},
        sym=mx.sym.Variable("fc_weight", lr_mult=3.0, wd_mult=0.2)
        + mx.sym.Variable("emb", wd_mult=4.0))
    assert [opt._get_wd(i) for i in range(5)] == pytest.approx(META["name_rules"]["wd"])
    assert [opt._get_lr(i) for i in range(5)] == pytest.approx(META["name_rules"]["lr"])


def test_registry_and_defaults():
    assert type(mx.optimizer.create("SGD")) is mx.optimizer.SGD
    assert mx.optimizer.create("adam").lr == 0.001
    assert mx.optimizer.create("sgd").lr == 0.01
    opt = mx.optimizer.SGD(learning_rate=0.1, lr_scheduler=mx.lr_scheduler.FactorScheduler(2))
    assert opt.lr_scheduler.base_lr == 0.1
    with pytest.raises(UserWarning):
        opt.set_learning_rate(0.5)


class _LoggedScheduler(mx.lr_scheduler.FactorScheduler):
    """Records the ``num_update`` of every call."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.calls = []

    def __call__(self, num_update):
        self.calls.append(num_update)
        return super().__call__(num_update)


def _sgd_for_lists():
    names = {i: f"p{i}_weight" if i % 3 == 0 else f"p{i}_bias" for i in range(9)}
    opt = mx.optimizer.SGD(momentum=0.9, wd=0.01, param_idx2name=names,
                           lr_scheduler=_LoggedScheduler(step=2, factor=0.7, base_lr=0.1))
    opt.set_lr_mult({"p1_bias": 0.5, 4: 3.0})
    return opt


def _arrays(rng, count, dtype="float32"):
    return [mx.nd.array(rng.uniform(-1, 1, (i % 4 + 1, 3)), dtype=dtype) for i in range(count)]


def _mxnet_updater_call(opt, states, indices, grads, weights):
    """MXNet 1.9.1's ``Updater.__call__``: states on first use, same-dtype chunks of
    ``aggregate_num``, one ``update_multi_precision`` per chunk."""
    for i, w in zip(indices, weights):
        if i not in states:
            states[i] = opt.create_state_multi_precision(i, w)
    by_dtype = {}
    for i, w, g in zip(indices, weights, grads):
        by_dtype.setdefault(np.dtype(w.dtype), []).append((i, w, g))
    for group in by_dtype.values():
        for s in range(0, len(group), opt.aggregate_num):
            idx, ws, gs = (list(x) for x in zip(*group[s:s + opt.aggregate_num]))
            opt.update_multi_precision(idx, ws, gs, [states[i] for i in idx])


def _assert_same(got, want):
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_updater_lists_update_as_mxnet_chunked_calls():
    """One multi-tensor call per dtype: the same numbers, counts and scheduler calls."""
    rng = np.random.RandomState(0)
    ws = _arrays(rng, 7) + _arrays(rng, 2, "float16")
    ref_ws = [w.copy() for w in ws]
    upd, ref_opt, ref_states = mx.optimizer.get_updater(_sgd_for_lists()), _sgd_for_lists(), {}
    for _ in range(3):
        gs = _arrays(rng, 7) + _arrays(rng, 2, "float16")
        upd(list(range(9)), gs, ws)
        _mxnet_updater_call(ref_opt, ref_states, list(range(9)), gs, ref_ws)
    _assert_same(ws, ref_ws)
    _assert_same([upd.states[i] for i in range(9)], [ref_states[i] for i in range(9)])
    assert upd.optimizer.lr_scheduler.calls == ref_opt.lr_scheduler.calls
    assert upd.optimizer._index_update_count == ref_opt._index_update_count
    assert upd.optimizer.num_update == ref_opt.num_update == 3


def test_updater_prepares_again_when_an_array_changes():
    """A kept update notices new arrays, tensors rebound under an NDArray and new states."""
    rng = np.random.RandomState(1)
    ws = _arrays(rng, 5)
    ref_ws = [w.copy() for w in ws]
    upd, ref_opt, ref_states = mx.optimizer.get_updater(_sgd_for_lists()), _sgd_for_lists(), {}

    def new_state():
        upd.states[3] = upd.states[3] * 2
        ref_states[3] = ref_states[3] * 2

    changes = [lambda: None, lambda: setattr(ws[2], "_t", ws[2]._t.clone()), new_state,
               lambda: ws.__setitem__(4, ws[4].copy())]
    for change in changes:
        change()
        gs = _arrays(rng, 5)
        upd(list(range(5)), gs, ws)
        _mxnet_updater_call(ref_opt, ref_states, list(range(5)), gs, ref_ws)
        _assert_same(ws, ref_ws)
        _assert_same([upd.states[i] for i in range(5)], [ref_states[i] for i in range(5)])
