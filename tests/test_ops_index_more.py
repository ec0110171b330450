"""Sorting (topk/sort/argsort), diag, ravel/unravel, the scatter family, index_copy,
batch_take and choose_element_0index against MXNet 1.9.1, plus the nd-only legacy row ops
against numpy.

The fixtures (``tests/fixtures/index``, written by its ``generate.py`` with the MXNet oracle
through the struct family's recorder) hold per case the attribute strings MXNet stored,
argument and output names, inferred shapes and dtypes, the training forward and the
backward for a random head gradient, or the error MXNet raised. Nothing here imports MXNet.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError

HERE = Path(__file__).parent / "fixtures" / "index"
META = json.loads((HERE / "cases.json").read_text())
ARRAYS = dict(np.load(HERE / "arrays.npz", allow_pickle=False))
OK = [pytest.param(c, id=c["id"]) for c in META["cases"] if c["expect"] == "ok"]
ERRORS = [pytest.param(c, id=c["id"]) for c in META["cases"] if c["expect"] != "ok"]

# A phrase both MXNet's message and ours contain, per error case.
PHRASES = {
    "err_topk_k": "k must be smaller than 4, get k = 5",
    "err_diag_k": "Diagonal does not exist",
    "err_ravel_3d": "Input to ravel operator must be two-dimensional",
}


def _function(namespace, op: str):
    for part in op.split("."):
        namespace = getattr(namespace, part)
    return namespace


def _symbol(case):
    inputs = [mx.sym.Variable(n) for n in case["arguments"]]
    with mx.name.NameManager():
        return _function(mx.sym, case["op"])(*inputs, name=case["node_name"], **case["attrs"])


def _bind(case):
    sym = _symbol(case)
    shapes = {n: tuple(s) for n, s in case["shapes"].items()}
    exe = sym.simple_bind(mx.cpu(), grad_req=case["grad_req"], type_dict=case["dtypes"],
                          **shapes)
    for n in case["shapes"]:
        exe.arg_dict[n][:] = ARRAYS[f"{case['id']}/in:{n}"]
    return exe


@pytest.mark.parametrize("case", OK)
def test_names_and_shapes_match_mxnet(case):
    sym = _symbol(case)
    assert sym.list_arguments() == case["arguments"]
    assert sym.list_outputs() == case["outputs"]
    _, out_shapes, _ = sym.infer_shape(**{n: tuple(s) for n, s in case["shapes"].items()})
    assert [list(s) for s in out_shapes] == case["out_shapes"]


@pytest.mark.parametrize("case", OK)
def test_forward_and_backward_match_mxnet(case):
    exe = _bind(case)
    cid = case["id"]
    outs = [o.asnumpy() for o in exe.forward(is_train=True)]
    assert [str(o.dtype) for o in outs] == case["out_types"]
    for i, got in enumerate(outs):
        np.testing.assert_allclose(got, ARRAYS[f"{cid}/out:{i}"], 1e-5, 1e-6,
                                   err_msg=f"{cid} out {i}")
    if f"{cid}/ograd:0" not in ARRAYS:
        return
    heads = [ARRAYS[f"{cid}/ograd:{i}"] for i in range(len(outs))]
    exe.backward([mx.nd.array(h, dtype=h.dtype) for h in heads])
    for n, req in case["grad_req"].items():
        if req != "null":
            np.testing.assert_allclose(exe.grad_dict[n].asnumpy(), ARRAYS[f"{cid}/grad:{n}"],
                                       1e-5, 1e-6, err_msg=f"{cid} grad {n}")


@pytest.mark.parametrize("case", ERRORS)
def test_errors_match_mxnet(case):
    phrase = PHRASES[case["id"]]
    assert phrase in case["error"], "fixture and phrase table disagree"
    with pytest.raises(MXNetError, match=phrase):
        _symbol(case).infer_shape(**{n: tuple(s) for n, s in case["shapes"].items()})


def test_topk_ties_keep_their_order_in_both_directions():
    """Equal values keep their original order (MXNet leaves it unspecified; numpy's stable
    argsort is the reference)."""
    x = np.array([[3, 1, 3, 2, 1, 3, 2]], dtype=np.float32)
    up = mx.nd.argsort(mx.nd.array(x)).asnumpy()
    np.testing.assert_array_equal(up, np.argsort(x, kind="stable"))
    down = mx.nd.topk(mx.nd.array(x), k=7).asnumpy()
    np.testing.assert_array_equal(down, np.argsort(-x, kind="stable"))


def test_scatter_set_nd_keeps_unindexed_elements():
    lhs = np.arange(6, dtype=np.float32).reshape(2, 3)
    idx = np.array([[1, 0], [2, 0]], dtype=np.float32)
    got = mx.nd._internal._scatter_set_nd(mx.nd.array(lhs), mx.nd.array([7, 8]),
                                          mx.nd.array(idx), shape=(2, 3)).asnumpy()
    want = lhs.copy()
    want[1, 2], want[0, 0] = 7, 8
    np.testing.assert_array_equal(got, want)


def test_backward_gather_nd_sums_repeated_indices():
    """MXNet's own test_scatter_gather_nd calls the scatter-add as
    ``_backward_gather_nd(data, indices, shape=...)``."""
    data = mx.nd.array([2, 3, 0])
    idx = mx.nd.array([[1, 1, 0], [1, 1, 0]])
    got = mx.nd._internal._backward_gather_nd(data, idx, shape=(2, 2)).asnumpy()
    np.testing.assert_array_equal(got, [[0, 0], [0, 5]])


def test_legacy_row_ops_match_numpy():
    """fill_element_0index and _onehot_encode are NDArray-only functions in MXNet
    (test_ndarray.py::test_choose_element_0index's neighbours); numpy gives the values."""
    rng = np.random.RandomState(0)
    lhs = rng.uniform(size=(4, 5)).astype(np.float32)
    vals = rng.uniform(size=(4,)).astype(np.float32)
    idx = np.array([4, 0, 2, 2], dtype=np.float32)
    got = mx.nd.fill_element_0index(mx.nd.array(lhs), mx.nd.array(vals), mx.nd.array(idx))
    want = lhs.copy()
    want[np.arange(4), idx.astype(int)] = vals
    np.testing.assert_array_equal(got.asnumpy(), want)
    hot = mx.nd._internal._onehot_encode(mx.nd.array(idx), mx.nd.zeros((4, 5))).asnumpy()
    np.testing.assert_array_equal(hot, np.eye(5, dtype=np.float32)[idx.astype(int)])
