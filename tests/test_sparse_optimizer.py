"""Optimizer updates with row_sparse gradients and weights (MXNet 1.9.1's lazy and
standard sparse updates: ``src/operator/optimizer_op.cc`` storage rules, checked against
the MXNet oracle; ``python/mxnet/optimizer/optimizer.py`` for the optimizers).

A lazy update must leave every row the gradient does not hold, and its states, bit for bit
as they were, and give the gradient's rows the dense update's values; a standard update must
equal the dense update with the gradient read as zero elsewhere.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import symgraph as mx

N, D = 6, 3
ROWS = [1, 4]
D_, R_ = "default", "row_sparse"

# op, attrs, number of states, storage types (weight, grad, states...), lazy?
OP_CASES = [
    ("sgd_update", {"lr": 0.1, "wd": 0.05, "clip_gradient": 0.4}, 0, (D_, R_), True),
    ("sgd_update", {"lr": 0.1, "wd": 0.05}, 0, (R_, R_), True),
    ("sgd_update", {"lr": 0.1, "wd": 0.05, "lazy_update": False}, 0, (D_, R_), False),
    ("sgd_update", {"lr": 0.1, "wd": 0.05, "lazy_update": False}, 0, (R_, R_), False),
    ("sgd_mom_update", {"lr": 0.1, "momentum": 0.9, "wd": 0.05}, 1, (D_, R_, D_), True),
    ("sgd_mom_update", {"lr": 0.1, "momentum": 0.9, "wd": 0.05}, 1, (R_, R_, R_), True),
    ("sgd_mom_update", {"lr": 0.1, "momentum": 0.9, "wd": 0.05, "lazy_update": False}, 1,
     (D_, R_, D_), False),
    ("sgd_mom_update", {"lr": 0.1, "momentum": 0.9, "wd": 0.05, "lazy_update": False}, 1,
     (R_, R_, R_), False),
    ("sgd_mom_update", {"lr": 0.1, "momentum": 0.9, "wd": 0.05}, 1, (R_, R_, D_), False),
    ("adam_update", {"lr": 0.01, "wd": 0.05, "rescale_grad": 0.7}, 2, (D_, R_, D_, D_), True),
    ("adam_update", {"lr": 0.01, "wd": 0.05}, 2, (R_, R_, R_, R_), True),
    ("adam_update", {"lr": 0.01, "wd": 0.05, "lazy_update": False}, 2, (D_, R_, D_, D_),
     False),
    ("adam_update", {"lr": 0.01, "wd": 0.05}, 2, (R_, R_, D_, D_), False),
    ("ftrl_update", {"lr": 0.1, "wd": 0.05, "lamda1": 0.01}, 2, (R_, R_, R_, R_), True),
    ("_sparse_adagrad_update", {"lr": 0.1, "epsilon": 1e-3}, 1, (D_, R_, D_), True),
    ("_sparse_adagrad_update", {"lr": 0.1, "clip_gradient": 0.3}, 1, (R_, R_, R_), True),
    ("_contrib_group_adagrad_update", {"lr": 0.1}, 1, (D_, R_, D_), True),
    ("_contrib_group_adagrad_update", {"lr": 0.1}, 1, (R_, R_, R_), True),
]


def _inputs(name: str, n_states: int, seed: int):
    rng = np.random.RandomState(seed)
    w = rng.uniform(-1, 1, (N, D)).astype(np.float32)
    g = np.zeros((N, D), np.float32)
    g[ROWS] = rng.uniform(-1, 1, (len(ROWS), D))
    width = 1 if name == "_contrib_group_adagrad_update" else D
    states = [rng.uniform(0.1, 1, (N, width)).astype(np.float32) for _ in range(n_states)]
    return w, g, states


def _array(x: np.ndarray, stype: str):
    arr = mx.nd.array(x, dtype=x.dtype)
    return arr if stype == D_ else arr.tostype(stype)


def _adagrad_dense(w, g, h, attrs):
    """AdaGrad's dense math (MXNet's ``_sparse_adagrad_update`` has no dense form)."""
    r, clip = attrs.get("rescale_grad", 1.0), attrs.get("clip_gradient", -1.0)
    gg = r * g
    if clip >= 0:
        gg = np.clip(gg, -clip, clip)
    h = h + gg * gg
    return w - attrs["lr"] * gg / np.sqrt(h + attrs.get("epsilon", 1e-7)), [h]


def _reference(name, attrs, w, g, states):
    """The dense update: (new weight, new states) as numpy."""
    if name == "_sparse_adagrad_update":
        return _adagrad_dense(w, g, states[0], attrs)
    arrs = [mx.nd.array(s) for s in states]
    wd = mx.nd.array(w)
    attrs = {k: v for k, v in attrs.items() if k != "lazy_update"}
    fn = mx.nd.contrib.group_adagrad_update if name == "_contrib_group_adagrad_update" \
        else getattr(mx.nd, name)
    fn(wd, mx.nd.array(g), *arrs, out=wd, **attrs)
    return wd.asnumpy(), [a.asnumpy() for a in arrs]


def _call(name, arrays, attrs):
    fn = {"_sparse_adagrad_update": mx.nd.sparse.adagrad_update,
          "_contrib_group_adagrad_update": mx.nd.contrib.group_adagrad_update}.get(name)
    fn = fn or getattr(mx.nd, name)
    fn(*arrays, out=arrays[0], **attrs)


@pytest.mark.parametrize("name,attrs,n_states,stypes,lazy", OP_CASES)
def test_update_op_rows(name, attrs, n_states, stypes, lazy):
    w, g, states = _inputs(name, n_states, seed=len(name) + n_states)
    weight = _array(w, stypes[0])
    grad = _array(g, R_)
    st = [_array(s, t) for s, t in zip(states, stypes[2:])]
    _call(name, [weight, grad, *st], attrs)
    assert weight.stype == stypes[0]
    assert [s.stype for s in st] == list(stypes[2:])
    want_w, want_s = _reference(name, attrs, w, g, states)
    got_w, got_s = weight.asnumpy(), [s.asnumpy() for s in st]
    if not lazy:
        np.testing.assert_allclose(got_w, want_w, rtol=1e-5, atol=1e-6)
        for got, want in zip(got_s, want_s):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        return
    other = [r for r in range(N) if r not in ROWS]
    assert np.array_equal(got_w[other], w[other])  # untouched, bit for bit
    np.testing.assert_allclose(got_w[ROWS], want_w[ROWS], rtol=1e-5, atol=1e-6)
    for got, before, want in zip(got_s, states, want_s):
        assert np.array_equal(got[other], before[other])
        np.testing.assert_allclose(got[ROWS], want[ROWS], rtol=1e-5, atol=1e-6)


def test_fresh_row_sparse_state_gets_every_row():
    """MXNet 1.9.1 (oracle): a zero row_sparse momentum comes back storing every row."""
    w = mx.nd.ones((4, 3)).tostype(R_)
    g = mx.nd.sparse.row_sparse_array((np.ones((2, 3), np.float32), [1, 2]), shape=(4, 3))
    mom = mx.nd.sparse.zeros(R_, (4, 3))
    mx.nd.sgd_mom_update(w, g, mom, out=w, lr=0.1, momentum=0.9, wd=0.1)
    assert mom.indices.asnumpy().tolist() == [0, 1, 2, 3]
    np.testing.assert_allclose(mom.asnumpy()[:, 0], [0, -0.11, -0.11, 0], rtol=1e-6)
    np.testing.assert_allclose(w.asnumpy()[:, 0], [1, 0.89, 0.89, 1], rtol=1e-6)


def _adagrad_wd(w, g, h):
    mx.nd.sparse.adagrad_update(w, g, h, out=w, lr=0.1, wd=0.1)


def _adagrad_mixed(w, g, h):
    mx.nd.sparse.adagrad_update(w, g, h.tostype(R_), out=w, lr=0.1)


def _partial_weight(w, g, h):
    part = mx.nd.sparse.row_sparse_array((np.ones((1, 3), np.float32), [0]), shape=(4, 3))
    mx.nd.sgd_update(part, g, out=part, lr=0.1)


def _not_in_place(w, g, h):
    mx.nd.sgd_mom_update(w, g, h, lr=0.1, momentum=0.9)


@pytest.mark.parametrize("call,match", [
    (_adagrad_wd, "wd = 0.1"), (_adagrad_mixed, "storage types"),
    (_partial_weight, "all its rows"), (_not_in_place, "out=weight"),
])
def test_errors(call, match):
    """MXNet 1.9.1 refuses (oracle): sparse AdaGrad with wd or mixed storage; a row_sparse
    weight not storing every row; a sparse update not written over its weight."""
    w, h = mx.nd.ones((4, 3)), mx.nd.zeros((4, 3))
    g = mx.nd.sparse.row_sparse_array((np.ones((2, 3), np.float32), [1, 2]), shape=(4, 3))
    with pytest.raises(mx.base.MXNetError, match=match):
        call(w, g, h)


def test_fallback_writes_sparse_states_back():
    """No sparse kernel (dense weight, row_sparse momentum): the dense rule runs and the
    row_sparse momentum gets its new rows (MXNet's storage fallback, oracle values)."""
    w, mom = mx.nd.ones((4, 3)), mx.nd.sparse.zeros(R_, (4, 3))
    g = mx.nd.sparse.row_sparse_array((np.ones((2, 3), np.float32), [1, 2]), shape=(4, 3))
    mx.nd.sgd_mom_update(w, g, mom, out=w, lr=0.1, momentum=0.9, wd=0.1)
    assert mom.stype == R_
    np.testing.assert_allclose(mom.asnumpy()[:, 0], [-0.01, -0.11, -0.11, -0.01], rtol=1e-6)
    np.testing.assert_allclose(w.asnumpy()[:, 0], [0.99, 0.89, 0.89, 0.99], rtol=1e-6)


# optimizer, kwargs, lazy?
OPT_CASES = [
    ("sgd", {"learning_rate": 0.1, "wd": 0.05}, True),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.05, "clip_gradient": 0.4}, True),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "lazy_update": False}, False),
    ("adam", {"learning_rate": 0.01, "wd": 0.05, "rescale_grad": 0.5}, True),
    ("adam", {"learning_rate": 0.01, "lazy_update": False}, False),
    ("adagrad", {"learning_rate": 0.1}, True),
    ("ftrl", {"learning_rate": 0.1, "wd": 0.05}, True),
    ("groupadagrad", {"learning_rate": 0.1}, True),
    ("signum", {"learning_rate": 0.1, "wd": 0.05}, False),  # no sparse op in MXNet
    ("rmsprop", {"learning_rate": 0.1, "centered": True}, False),
]


@pytest.mark.parametrize("w_stype", [D_, R_])
@pytest.mark.parametrize("name,kwargs,lazy", OPT_CASES)
def test_optimizer_sparse_grad(name, kwargs, lazy, w_stype):
    if name == "ftrl" and w_stype == D_:
        lazy = False  # MXNet's ftrl has a sparse kernel only with a row_sparse weight
    w, g, _ = _inputs(name, 0, seed=7)
    sparse_opt, dense_opt = mx.optimizer.create(name, **kwargs), \
        mx.optimizer.create(name, **kwargs)
    weight, grad = _array(w, w_stype), _array(g, R_)
    state = sparse_opt.create_state_multi_precision(0, weight)
    dense_w = mx.nd.array(w)
    dense_state = dense_opt.create_state_multi_precision(0, dense_w)
    before = [s.asnumpy() for s in _leaves(state)]
    for _ in range(2):
        sparse_opt.update_multi_precision(0, weight, grad, state)
        dense_opt.update_multi_precision(0, dense_w, mx.nd.array(g), dense_state)
    assert weight.stype == w_stype
    got, want = weight.asnumpy(), dense_w.asnumpy()
    if not lazy:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        return
    other = [r for r in range(N) if r not in ROWS]
    assert np.array_equal(got[other], w[other])
    np.testing.assert_allclose(got[ROWS], want[ROWS], rtol=1e-5, atol=1e-6)
    for s, b, d in zip(_leaves(state), before, _leaves(dense_state)):
        assert np.array_equal(s.asnumpy()[other], b[other])
        np.testing.assert_allclose(s.asnumpy()[ROWS], d.asnumpy()[ROWS], rtol=1e-5,
                                   atol=1e-6)


def _leaves(state) -> list:
    if state is None:
        return []
    return list(state) if isinstance(state, (tuple, list)) else [state]


@pytest.mark.parametrize("name,kwargs,want", [
    ("sgd", {"momentum": 0.9}, R_), ("sgd", {"momentum": 0.9, "lazy_update": False}, D_),
    ("adam", {}, R_), ("adam", {"lazy_update": False}, D_), ("adagrad", {}, R_),
    ("ftrl", {}, R_), ("rmsprop", {}, R_), ("signum", {}, R_),
])
def test_state_storage(name, kwargs, want):
    """States take the weight's storage type (``lazy_update=False``: dense), as MXNet."""
    weight = mx.nd.ones((4, 2)).tostype(R_)
    state = mx.optimizer.create(name, **kwargs).create_state(0, weight)
    assert {s.stype for s in _leaves(state)} == {want}


def test_multi_precision_row_sparse():
    """fp16 row_sparse weight with multi_precision: the fp32 master (row_sparse) is updated
    lazily and cast back (MXNet's Optimizer.update_multi_precision)."""
    w, g, _ = _inputs("adam", 0, seed=3)
    weight = _array(w.astype(np.float16), R_)
    opt = mx.optimizer.Adam(learning_rate=0.01, multi_precision=True)
    state = opt.create_state_multi_precision(0, weight)
    assert state[0].stype == R_ and state[0].dtype == np.float32
    opt.update_multi_precision(0, weight, _array(g.astype(np.float16), R_), state)
    assert weight.stype == R_ and weight.dtype == np.float16
    np.testing.assert_allclose(weight.asnumpy(), state[0].asnumpy().astype(np.float16))
    other = [r for r in range(N) if r not in ROWS]
    assert np.array_equal(weight.asnumpy()[other], w.astype(np.float16)[other])


def _largest_allocation(fn) -> int:
    """The largest single CPU allocation (bytes) made while ``fn`` runs."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    return max([e.cpu_memory_usage for e in prof.events()] + [0])


@pytest.mark.parametrize("name,kwargs", [
    ("sgd", {"momentum": 0.9}), ("sgd", {}), ("adam", {}), ("adagrad", {}),
])
def test_lazy_update_memory(name, kwargs):
    """A lazy update of a (100000, 16) weight from 10 rows allocates O(rows), not a dense
    (100000, 16) temporary, and writes the weight's own tensor in place."""
    rows = np.array([3, 50, 999, 7000, 12345, 20000, 40000, 60000, 80000, 99999])
    weight = mx.nd.ones((100000, 16))
    grad = mx.nd.sparse.row_sparse_array((np.ones((10, 16), np.float32), rows),
                                         shape=(100000, 16))
    opt = mx.optimizer.create(name, learning_rate=0.1, **kwargs)
    state = opt.create_state(0, weight)
    tensor = weight._t
    opt.update(0, weight, grad, state)  # warm up (first calls parse and cache params)
    biggest = _largest_allocation(lambda: opt.update(0, weight, grad, state))
    assert biggest < 100000 * 16 * 4 // 100, biggest
    assert weight._t is tensor
    changed = np.nonzero((weight.asnumpy() != 1).any(1))[0]
    assert changed.tolist() == rows.tolist()
    assert torch.equal(weight._t[0], torch.ones(16))


def test_updater_list_with_sparse_grad():
    """The Updater's aggregated SGD call with one row_sparse gradient among dense ones: the
    sparse weight is updated lazily, the dense one as a dense update (MXNet's SGD turns
    aggregation off for the list when any array is sparse)."""
    w, g, _ = _inputs("sgd", 0, seed=11)
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.05)
    ref = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.05)
    updater = mx.optimizer.get_updater(opt)
    weights = [mx.nd.array(w), mx.nd.array(w)]
    updater([0, 1], [_array(g, R_), mx.nd.array(g)], weights)
    dense = mx.nd.array(w)
    ref.update(1, dense, mx.nd.array(g), ref.create_state(1, dense))
    np.testing.assert_allclose(weights[1].asnumpy(), dense.asnumpy(), rtol=1e-6)
    other = [r for r in range(N) if r not in ROWS]
    assert np.array_equal(weights[0].asnumpy()[other], w[other])
    np.testing.assert_allclose(weights[0].asnumpy()[ROWS], dense.asnumpy()[ROWS], rtol=1e-6)
