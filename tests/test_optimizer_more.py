"""SGLD, DCASGD, LARS, LBSGD and contrib.GroupAdaGrad against MXNet 1.9.1.

Deterministic optimizers replay the trajectories of ``tests/fixtures/optimizer_more``
(``scenarios.py`` run by ``generate.py`` on MXNet). SGLD's noise comes from symgraph's
generator, so it is checked as MXNet's own ``test_sgld`` checks it: against the Python
reference rule with the same seed for the noise.
"""
from __future__ import annotations

import math
import pathlib

import numpy as np
import pytest

import symgraph as mx
from tests import fixture_scripts

FIX = pathlib.Path(__file__).parent / "fixtures" / "optimizer_more"
scenarios = fixture_scripts.load("optimizer_more/scenarios.py")
ARR = np.load(FIX / "optimizer_more.npz", allow_pickle=False)


@pytest.mark.parametrize("case", scenarios.CASES, ids=[c[0] for c in scenarios.CASES])
def test_trajectory_matches_mxnet(case):
    got = scenarios.run(mx, case)
    want = {k.split(":", 1)[1]: ARR[k] for k in ARR.files if k.startswith(case[0] + ":")}
    assert sorted(got) == sorted(want)
    tol = dict(rtol=1e-3, atol=1e-3) if case[3].get("dtype") == "float16" else \
        dict(rtol=1e-5, atol=1e-6)
    for key in sorted(want):
        np.testing.assert_allclose(got[key], want[key], err_msg=f"{case[0]} {key}", **tol)


def _sgld_reference(w, g, lr, wd, rescale, clip, seed, dtype):
    """MXNet's test_optimizer.PySGLD: the half step, then the seeded noise."""
    g = g * rescale
    if clip is not None:
        g = np.clip(g, -clip, clip)
    w = (w - lr / 2 * (g + wd * w)).astype(dtype)
    mx.random.seed(seed)
    noise = mx.nd.random.normal(0, math.sqrt(lr), shape=w.shape, dtype=dtype).asnumpy()
    return w + noise


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [{}, {"clip_gradient": 0.4, "wd": 0.03},
                                {"rescale_grad": 0.5, "wd": 0.07}])
def test_sgld_matches_reference_rule_with_seeded_noise(dtype, kw):
    rng = np.random.RandomState(3)
    w0, g0 = rng.uniform(size=(3, 4, 5)).astype(dtype), rng.uniform(size=(3, 4, 5)).astype(dtype)
    opt = mx.optimizer.create("sgld", learning_rate=0.01, **kw)
    w = mx.nd.array(w0, dtype=dtype)
    assert opt.create_state_multi_precision(0, w) is None
    mx.random.seed(42)
    opt.update_multi_precision(0, w, mx.nd.array(g0, dtype=dtype), None)
    want = _sgld_reference(w0, g0, 0.01, kw.get("wd", 0.0), kw.get("rescale_grad", 1.0),
                           kw.get("clip_gradient"), 42, dtype)
    assert w.dtype == np.dtype(dtype)
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_sgld_multi_precision_updates_the_fp32_master():
    opt = mx.optimizer.SGLD(learning_rate=0.04, multi_precision=True)
    w = mx.nd.ones((100, 100), dtype="float16")
    state = opt.create_state_multi_precision(0, w)
    assert state[0].dtype == np.float32 and state[1] is None
    opt.update_multi_precision(0, w, mx.nd.zeros((100, 100), dtype="float16"), state)
    noise = state[0].asnumpy() - 1.0
    assert abs(noise.std() - 0.2) < 0.01 and abs(noise.mean()) < 0.01  # N(0, sqrt(lr))
    np.testing.assert_array_equal(w.asnumpy(), state[0].asnumpy().astype(np.float16))


def test_dcasgd_with_momentum_runs_the_written_rule():
    """MXNet 1.9.1 raises on this branch (``if mom:`` on an array); symgraph runs it."""
    opt = mx.optimizer.DCASGD(learning_rate=0.1, momentum=0.9, lamda=0.5, wd=0.01)
    w0, g = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.1, -0.2])
    w = mx.nd.array(w0)
    mom, prev = opt.create_state(0, w)
    m, p, wt = np.zeros(3), w0.copy(), w0.copy()
    for _ in range(3):
        opt.update(0, w, mx.nd.array(g), (mom, prev))
        m = 0.9 * m - 0.1 * (g + 0.01 * wt + 0.5 * g * g * (wt - p))
        p, wt = wt, wt + m
    np.testing.assert_allclose(w.asnumpy(), wt, rtol=1e-6)
    np.testing.assert_allclose(mom.asnumpy(), m, rtol=1e-5)
    np.testing.assert_allclose(prev.asnumpy(), p, rtol=1e-6)


@pytest.mark.parametrize("name, cls", [("sgld", "SGLD"), ("dcasgd", "DCASGD"),
                                       ("lars", "LARS"), ("LBSGD", "LBSGD"),
                                       ("groupadagrad", "GroupAdaGrad")])
def test_registered_by_name(name, cls):
    assert type(mx.optimizer.create(name)).__name__ == cls


def test_module_names():
    assert mx.optimizer.NDabs is mx.nd.abs
    assert mx.optimizer.contrib.GroupAdaGrad is type(mx.optimizer.create("groupadagrad"))
    for name in ["SGLD", "DCASGD", "LARS", "LBSGD", "NDabs", "contrib"]:
        assert name in mx.optimizer.__all__


def test_lars_decays_only_weights():
    names = {0: "fc_weight", 1: "bn_gamma", 2: "fc_bias"}
    assert mx.optimizer.LARS(param_idx2name=names).wd_mult == {"bn_gamma": 0.0, "fc_bias": 0.0}
    assert mx.optimizer.SGD(param_idx2name=names).wd_mult == {"fc_bias": 0.0}


def test_group_adagrad_refuses_weight_decay():
    opt = mx.optimizer.contrib.GroupAdaGrad(wd=0.1)
    w = mx.nd.ones((2, 3))
    with pytest.raises(AssertionError, match="Weight decay is not supported"):
        opt.update(0, w, w, opt.create_state(0, w))


@pytest.mark.parametrize("name, kw", [("lbsgd", dict(batch_scale=2, momentum=0.9)),
                                      ("lars", dict(momentum=0.9)), ("dcasgd", {})])
def test_states_round_trip_without_pickle(name, kw):
    upd = mx.optimizer.get_updater(mx.optimizer.create(name, learning_rate=0.1, **kw))
    w, g = mx.nd.ones((3,)), mx.nd.array([0.1, 0.2, 0.3])
    upd(0, g, w)
    blob = upd.get_states(dump_optimizer=True)
    other = mx.optimizer.get_updater(mx.optimizer.create("sgd"))
    other.set_states(blob)
    assert type(other.optimizer).__name__ == type(upd.optimizer).__name__
    w2 = w.copy()
    upd(0, g, w)
    other(0, g, w2)
    np.testing.assert_allclose(w2.asnumpy(), w.asnumpy(), rtol=1e-6)
