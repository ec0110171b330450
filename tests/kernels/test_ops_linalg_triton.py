"""The linalg ops under ``backend='triton'`` (kernels/linalg.py under Triton's interpreter on
CPU) give the torch backend's outputs and gradients, and no node of the plan runs a torch
reference: the primitives run their own kernels, the composites (sumlogdiag, syrk, trmm,
potri) expand into Triton-backed ops."""
from __future__ import annotations

import numpy as np
import pytest

from symgraph.ops.base import Case, canonical_ops, get_op
from tests.op_harness import assert_backends_agree, assert_no_torch_step, draw_inputs, run_case

NAMES = sorted(op.name for op in canonical_ops()
               if op.name.startswith("_linalg_") and "gemm" not in op.name)
CASES = [pytest.param(name, i, id=f"{name}-{i}")
         for name in NAMES for i, _ in enumerate(get_op(name).cases)]


def _run(op, case, values):
    exe = assert_backends_agree(op, case, values, 1e-4, 1e-5)
    labels = assert_no_torch_step(exe)
    return labels


@pytest.mark.parametrize("name,index", CASES)
def test_triton_backend_matches_torch(name, index):
    op = get_op(name)
    case = op.cases[index]
    labels = _run(op, case, draw_inputs(case, np.float32))
    if op.kernel is not None:
        assert f"triton:{op.kernel.__name__}" in labels.values(), labels


@pytest.mark.parametrize("lower", [True, False])
def test_triton_potrf_on_positive_definite_matrices(lower):
    """The table's potrf cases are 1 x 1 (uniform draws are not positive definite)."""
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (2, 4, 4))
    spd = (x @ x.transpose(0, 2, 1) + 4 * np.eye(4)).astype(np.float32)
    _run(get_op("_linalg_potrf"), Case(((2, 4, 4),), {"lower": lower}), [spd])


def test_triton_syevd_on_symmetric_matrices():
    """syevd's table cases read random (non-symmetric) draws; this one has distinct,
    well-separated eigenvalues and checks the eigenvector-sign and ordering paths."""
    rng = np.random.RandomState(1)
    x = rng.uniform(-1, 1, (2, 4, 4))
    sym = (x + x.transpose(0, 2, 1) + np.diag([0.0, 2.0, 4.0, 6.0])).astype(np.float32)
    _run(get_op("_linalg_syevd"), Case(((2, 4, 4),)), [sym])


@pytest.mark.parametrize("name", ["_linalg_det", "_linalg_slogdet"])
def test_triton_det_gradient_is_zero_at_singular_matrices(name):
    """MXNet stops the gradient of a singular matrix (det 0): both backends give zeros."""
    a = np.array([[[1., 2.], [2., 4.]], [[2., 1.], [1., 3.]]], np.float32)
    op, case = get_op(name), Case(((2, 2, 2),))
    _run(op, case, [a])
    _, grads, _ = run_case(op, case, [a], "triton")
    (grad,) = grads.values()
    assert not grad[0].any() and grad[1].any()


def test_triton_potrf_and_inverse_raise_as_mxnet():
    """The Triton kernels' failed pivots raise MXNet's errors too (potrf: not positive
    definite; inverse: singular), where the output is read, and the kernel stays in use
    (no fallback to the torch reference)."""
    import warnings

    import symgraph as mx
    from symgraph import config
    from symgraph.base import MXNetError
    from tests import device
    x = mx.sym.Variable("x")
    for sym, match in ((mx.sym.linalg.potrf(x), "not positive definite"),
                       (mx.sym.linalg.inverse(x), "non-convertible")):
        with config.override(backend="triton"):
            exe = sym.simple_bind(device.context(), x=(2, 2))
        exe.arg_dict["x"][:] = np.array([[1., 2.], [2., 4.]], np.float32)
        with warnings.catch_warnings(record=True) as caught, \
                pytest.raises(MXNetError, match=match):
            warnings.simplefilter("always")
            exe.forward()[0].asnumpy()
        assert not [w for w in caught if "torch reference" in str(w.message)]
        exe.arg_dict["x"][:] = np.array([[4., 2.], [2., 5.]], np.float32)
        out = exe.forward()[0].asnumpy()
        np.testing.assert_allclose(out, np.linalg.inv([[4., 2.], [2., 5.]]) if "conv" in match
                                   else [[2., 0.], [1., 2.]], rtol=1e-5)
