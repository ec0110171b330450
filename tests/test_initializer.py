"""mx.init against MXNet 1.9.1 (tests/fixtures/optim_api, generate.py); random initializers
are checked for reproducibility, shape and scale (they cannot match MXNet's RNG)."""
from __future__ import annotations

import json
import pathlib
import warnings

import numpy as np
import pytest

import symgraph as mx

FIX = pathlib.Path(__file__).parent / "fixtures" / "optim_api"
META = json.loads((FIX / "optim_api.json").read_text())["init"]
ARR = dict(np.load(FIX / "optim_api.npz", allow_pickle=False))

DETERMINISTIC = {"bilinear": (mx.init.Bilinear(), (2, 3, 4, 4)),
                 "bilinear_odd": (mx.init.Bilinear(), (1, 1, 3, 5)),
                 "lstmbias": (mx.init.LSTMBias(forget_bias=2.5), (12,)),
                 "constant": (mx.init.Constant(0.3), (2, 3)),
                 "one": (mx.init.One(), (3,)), "zero": (mx.init.Zero(), (3,))}


@pytest.mark.parametrize("name", sorted(DETERMINISTIC))
def test_deterministic_initializer_via_init_attr_matches_mxnet(name):
    init, shape = DETERMINISTIC[name]
    arr = mx.nd.ones(shape) * 7
    mx.init.Uniform()(mx.init.InitDesc("x_weight", {"__init__": init.dumps()}), arr)
    np.testing.assert_array_equal(arr.asnumpy(), ARR[f"init/{name}"])


@pytest.mark.parametrize("name", sorted(META["dumps"]))
def test_dumps_matches_mxnet_and_round_trips(name):
    text = META["dumps"][name]
    assert mx.init.create(text).dumps() == text


@pytest.mark.parametrize("key", sorted(META["dispatch"]))
def test_name_dispatch_matches_mxnet(key):
    path, name = key.split(":")
    arr = mx.nd.ones((6,)) * 7
    desc = mx.init.InitDesc(name) if path == "desc" else name
    expected = META["dispatch"][key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        if isinstance(expected, str):
            with pytest.raises(Exception) as err:
                mx.init.Constant(0.5)(desc, arr)
            assert f"{type(err.value).__name__}: {err.value}" == expected
        else:
            mx.init.Constant(0.5)(desc, arr)
            assert arr.asnumpy().tolist() == expected


def test_unknown_initializer_name_error_matches_mxnet():
    with pytest.raises(AssertionError) as err:
        mx.init.create("nosuchinit")
    assert f"AssertionError: {err.value}" == META["create_error"]


def _draw(init, shape=(64, 32, 3, 3), name="conv_weight"):
    arr = mx.nd.zeros(shape)
    init(mx.init.InitDesc(name), arr)
    return arr.asnumpy()


@pytest.mark.parametrize("init", [mx.init.Uniform(0.2), mx.init.Normal(0.3), mx.init.Xavier(),
                                  mx.init.Xavier("gaussian", "in", 2), mx.init.MSRAPrelu(),
                                  mx.init.Orthogonal(rand_type="normal")])
def test_random_initializers_follow_mx_random_seed(init):
    mx.random.seed(11)
    a = _draw(init)
    mx.random.seed(11)
    np.testing.assert_array_equal(a, _draw(init))
    assert not np.array_equal(a, _draw(init))


def test_random_initializer_scales():
    fan_in, fan_out = 32 * 9, 64 * 9
    u = _draw(mx.init.Xavier(magnitude=3))
    bound = np.sqrt(3 / ((fan_in + fan_out) / 2))
    assert np.abs(u).max() <= bound and np.abs(u).max() > 0.95 * bound
    g = _draw(mx.init.Xavier("gaussian", "out", 2))
    assert abs(g.std() - np.sqrt(2 / fan_out)) < 0.03 * np.sqrt(2 / fan_out)
    m = _draw(mx.init.MSRAPrelu("in", 0.0))
    assert abs(m.std() - np.sqrt(2 / fan_in)) < 0.03 * np.sqrt(2 / fan_in)
    assert abs(_draw(mx.init.Normal(0.5)).std() - 0.5) < 0.015
    u = _draw(mx.init.Uniform(0.07))
    assert np.abs(u).max() <= 0.07 and abs(u.std() - 0.07 / np.sqrt(3)) < 0.002
    o = _draw(mx.init.Orthogonal(scale=2.0), shape=(8, 4, 2, 2)).reshape(8, 16)
    np.testing.assert_allclose(o @ o.T, 4 * np.eye(8), atol=1e-4)


def test_mixed_load_and_defaults():
    init = mx.init.Mixed(["bias", ".*"], [mx.init.Constant(3), mx.init.Uniform(0.1)])
    b = mx.nd.zeros((4,))
    init(mx.init.InitDesc("fc_bias"), b)
    assert b.asnumpy().tolist() == [0.0] * 4  # Constant's bias rule: MXNet dispatches on name
    load = mx.init.Load({"arg:fc_weight": mx.nd.ones((2, 2)) * 5}, default_init=mx.init.One())
    w, v = mx.nd.zeros((2, 2)), mx.nd.zeros((2, 2))
    load("fc_weight", w)
    load(mx.init.InitDesc("fc2_weight"), v)
    assert w.asnumpy().tolist() == [[5, 5], [5, 5]] and v.asnumpy().tolist() == [[1, 1], [1, 1]]
    with pytest.raises(AssertionError, match="Shape mismatch"):
        load("fc_weight", mx.nd.zeros((3,)))
    assert mx.init.create("zeros") == mx.init.Zero() and mx.init.create("ones") == mx.init.One()
    assert mx.init.Xavier().dumps() == \
        '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 3}]'


def test_variable_init_attr_used_by_global_initializer():
    var = mx.sym.Variable("emb_table", init=mx.init.Constant(0.25))
    arr = mx.nd.zeros((2, 2))
    mx.init.Xavier()(mx.init.InitDesc("emb_table", var.attr_dict()["emb_table"]), arr)
    assert arr.asnumpy().tolist() == [[0.25, 0.25], [0.25, 0.25]]
