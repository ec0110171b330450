"""The linalg ops (ops/linalg_tri.py, ops/linalg_factor.py) against MXNet 1.9.1: outputs
and input gradients recorded by tests/fixtures/linalg/generate.py, in float64, through
``mx.nd.linalg`` under ``autograd``; plus shape/dtype errors and the kernels' size limit."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import DTypeError, MXNetError, ShapeError

RECORDS = json.loads((Path(__file__).parent / "fixtures" / "linalg" / "ops.json").read_text())


@pytest.mark.parametrize("rec", RECORDS, ids=[f"{r['op']}-{i}" for i, r in enumerate(RECORDS)])
def test_matches_mxnet(rec):
    ins = [mx.nd.array(np.array(x), dtype="float64") for x in rec["inputs"]]
    for x in ins:
        x.attach_grad()
    with mx.autograd.record():
        outs = getattr(mx.nd.linalg, rec["op"])(*ins, **rec["attrs"])
        outs = outs if isinstance(outs, list) else [outs]
    assert len(outs) == len(rec["outputs"])
    for got, want in zip(outs, rec["outputs"]):
        np.testing.assert_allclose(got.asnumpy(), np.array(want), rtol=1e-7, atol=1e-9)
    heads = [mx.nd.array(np.array(h), dtype="float64") for h in rec["heads"]]
    mx.autograd.backward(outs, heads)
    for i, (x, want) in enumerate(zip(ins, rec["grads"])):
        np.testing.assert_allclose(x.grad.asnumpy(), np.array(want), rtol=1e-6, atol=1e-8,
                                   err_msg=f"{rec['op']} d/d input {i}")


def test_shape_errors_name_op_and_shapes():
    a = mx.sym.Variable("a")
    with pytest.raises(ShapeError, match=r"linalg_potrf.*\(3, 4\)"):
        mx.sym.linalg.potrf(a).infer_shape(a=(3, 4))
    with pytest.raises(ShapeError, match="illegal offset 3"):
        mx.sym.linalg.extractdiag(a, offset=3).infer_shape(a=(2, 3, 3))
    with pytest.raises(ShapeError, match="triangle number"):
        mx.sym.linalg.maketrian(a).infer_shape(a=(2, 5))
    with pytest.raises(ShapeError, match="do not match"):
        mx.sym.linalg.trsm(a, mx.sym.Variable("b")).infer_shape(a=(3, 3), b=(4, 2))
    with pytest.raises(ShapeError, match=r"linalg_gelqf.*m <= n.*\(2, 4, 3\)"):
        mx.sym.linalg.gelqf(a).infer_shape(a=(2, 4, 3))
    with pytest.raises(ShapeError, match=r"linalg_syevd.*\(3, 4\)"):
        mx.sym.linalg.syevd(a).infer_shape(a=(3, 4))


def test_factor_output_shapes():
    """MXNet's LaLQFactShape / LaEigFactShape: Q like A, L (..., m, m); U like A, lambda
    (..., n)."""
    a = mx.sym.Variable("a")
    _, outs, _ = mx.sym.linalg.gelqf(a).infer_shape(a=(2, 3, 5))
    assert outs == [(2, 3, 5), (2, 3, 3)]
    _, outs, _ = mx.sym.linalg.syevd(a).infer_shape(a=(2, 1, 4, 4))
    assert outs == [(2, 1, 4, 4), (2, 1, 4)]


@pytest.mark.parametrize("op", ["det", "gelqf", "syevd"])
def test_float_only(op):
    a = mx.sym.Variable("a")
    with pytest.raises(DTypeError, match=f"linalg_{op}.*float32 and float64"):
        getattr(mx.sym.linalg, op)(a).infer_type(a=np.int32)


def test_kernels_refuse_matrices_beyond_their_limit():
    import torch

    from symgraph.kernels.linalg import MAX_N, potrf
    with pytest.raises(ValueError, match=f"limit of {MAX_N}"):
        potrf(torch.eye(MAX_N + 1))


def test_singular_slogdet_is_zero_sign_and_minus_inf():
    """MXNet's documented example: a singular matrix has sign 0 and log|det| = -inf."""
    a = mx.nd.array([[[2., 3.], [1., 4.]], [[1., 2.], [2., 4.]], [[1., 2.], [4., 3.]]])
    sign, logabsdet = mx.nd.linalg.slogdet(a)
    np.testing.assert_allclose(sign.asnumpy(), [1., 0., -1.])
    np.testing.assert_allclose(logabsdet.asnumpy(), [np.log(5.), -np.inf, np.log(5.)],
                               rtol=1e-6)


def test_potrf_of_a_matrix_not_positive_definite_raises():
    """MXNet's potrf raises (LAPACK's info > 0) where the Cholesky factor does not exist."""
    with pytest.raises(MXNetError, match="not symmetric or not positive definite"):
        mx.nd.linalg.potrf(mx.nd.array([[[4., 2.], [2., 5.]], [[1., 2.], [2., 1.]]])).asnumpy()


def test_inverse_of_a_singular_matrix_raises():
    """MXNet's inverse raises "the input matrix is non-convertible" (getrf's info > 0)."""
    with pytest.raises(MXNetError, match="non-convertible"):
        mx.nd.linalg.inverse(mx.nd.array([[[2., 1.], [1., 3.]], [[1., 2.], [2., 4.]]])).asnumpy()
