"""MXNet's storage operators (symgraph/ops/sparse_storage.py) on dense and sparse arrays."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx

RNG = np.random.RandomState(0)
X = RNG.uniform(-2, 2, (3, 4)).astype(np.float32)
Y = RNG.uniform(0.5, 2, (3, 4)).astype(np.float32)


def test_cast_storage_round_trips_every_storage_type():
    out = mx.nd.cast_storage(mx.nd.array(X), stype="default")
    np.testing.assert_array_equal(out.asnumpy(), X)
    x = X.copy()
    x[1] = 0
    x[0, 2] = 0
    for stype in ("row_sparse", "csr"):
        sparse = mx.nd.cast_storage(mx.nd.array(x), stype=stype)
        assert sparse.stype == stype
        np.testing.assert_array_equal(sparse.asnumpy(), x)
        back = mx.nd.cast_storage(sparse, stype="default")
        assert back.stype == "default"
        np.testing.assert_array_equal(back.asnumpy(), x)
    rsp = mx.nd.array(x).tostype("row_sparse")
    assert rsp.indices.asnumpy().tolist() == [0, 2]
    with pytest.raises(ValueError, match="row_sparse to csr"):
        rsp.tostype("csr")


@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), (0, True)])
def test_square_sum_is_the_sum_of_squares(axis, keepdims):
    out = mx.nd._internal._square_sum(mx.nd.array(X), axis=axis, keepdims=keepdims)
    want = np.sum(X * X, axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(out.asnumpy().reshape(np.shape(want)), want, rtol=1e-6)


def test_scatter_forms_are_the_dense_operations():
    x, y = mx.nd.array(X), mx.nd.array(Y)
    np.testing.assert_allclose(mx.nd._internal._scatter_plus_scalar(x, scalar=1.5).asnumpy(),
                               X + 1.5, rtol=1e-6)
    np.testing.assert_allclose(mx.nd._internal._scatter_minus_scalar(x, scalar=2).asnumpy(),
                               X - 2, rtol=1e-6)
    np.testing.assert_allclose(mx.nd._internal._scatter_elemwise_div(x, y).asnumpy(), X / Y,
                               rtol=1e-6)


def test_sparse_embedding_is_embedding_with_a_dense_gradient():
    weight = mx.nd.array(Y)
    idx = mx.nd.array([2, 0, 2])
    weight.attach_grad()
    with mx.autograd.record():
        out = mx.nd.contrib.SparseEmbedding(idx, weight, input_dim=3, output_dim=4)
    out.backward(mx.nd.ones(out.shape))
    np.testing.assert_array_equal(out.asnumpy(), Y[[2, 0, 2]])
    np.testing.assert_array_equal(weight.grad.asnumpy()[:, 0], [1, 0, 2])
    sym = mx.sym.contrib.SparseEmbedding(mx.sym.var("d"), input_dim=3, output_dim=4, name="e")
    assert '"op": "_contrib_SparseEmbedding"' in sym.tojson()
