"""linalg factorizations and solves (``_linalg_potrf``, ``linalg.trsm``, ``linalg.det``...),
MXNet 1.9.1's forms, batched over leading axes:

* ``potrf(A, lower)``: Cholesky factor L (A = L L^T; A read from its lower triangle) or U
  (``lower=False``: A = U^T U, read from the upper triangle); gradient
  ``dA = 0.5 L^-T copyLTU(L^T dL) L^-1`` (symmetric, as MXNet's); a matrix that is not
  positive definite raises ``NotPositiveDefiniteError`` (an MXNetError, as MXNet's LAPACK);
* ``potri(A, lower)``: (L L^T)^-1 from a Cholesky factor (composite: ``trsm`` of the
  identity, then ``syrk``);
* ``trsm(A, B)``: X with op(A) X = alpha B (or X op(A) = alpha B with ``rightside``),
  A triangular; gradients ``dB = trsm(A, dX, transpose=!transpose)`` and dA the triangle of
  ``-op(dB) op(X) / alpha``;
* ``inverse(A)``, ``det(A)``, ``slogdet(A)`` (sign, log|det|) by Gauss-Jordan elimination
  with partial pivoting; gradients ``-A^-T dOut A^-T``, ``ddet det A^-T`` and
  ``dlogabsdet A^-T`` (none through sign; zero for an exactly singular matrix, as MXNet's).
  The inverse of a singular matrix raises ``SingularMatrixError`` (an MXNetError, as
  MXNet's). MXNet's hidden LU and pivot outputs of det and slogdet are not produced;
* ``gelqf(A)`` -> (Q, L): A = L Q for (m, n) matrices, m <= n, L lower triangular, Q
  row-orthonormal, signs as LAPACK's Householder (``L[i, i] = -sign(alpha) norm``);
  gradient ``dA = L^-T (dQ + copyLTU(L^T dL - dQ Q^T) Q)``;
* ``syevd(A)`` -> (U, lambda): A = U^T diag(lambda) U read from A's lower triangle, rows of
  U the eigenvectors, lambda ascending, each row signed so its largest |entry| is positive;
  gradient ``dA = U^T Y U``, Y the skew part of ``dU U^T`` over twice the eigenvalue gaps
  (mirrored) with ``dlambda`` on the diagonal.

The primitives run :mod:`symgraph.kernels.linalg` (one Triton program per matrix, up to 64 x 64;
syevd by cyclic Jacobi sweeps).

>>> import symgraph as mx
>>> a = mx.nd.array([[4, 2], [2, 5]])
>>> mx.nd.linalg.potrf(a).asnumpy()
array([[2., 0.],
       [1., 2.]], dtype=float32)
>>> mx.nd.linalg.det(mx.nd.array([[1, 4], [2, 3]])).asnumpy()
array([-5.], dtype=float32)
>>> mx.nd.linalg.trsm(mx.nd.array([[2, 0], [1, 1]]), mx.nd.array([[2], [3]])).asnumpy()
array([[1.],
       [2.]], dtype=float32)
>>> u, lam = mx.nd.linalg.syevd(mx.nd.array([[2, 1], [1, 2]]))
>>> lam.asnumpy()
array([1., 3.], dtype=float32)
>>> q, l = mx.nd.linalg.gelqf(mx.nd.array([[3, 4]]))
>>> q.asnumpy(), l.asnumpy()
(array([[-0.6, -0.8]], dtype=float32), array([[-5.]], dtype=float32))
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import DeferredError, DTypeError, ShapeError
from .base import Case, OpDef, check, register
from .linalg_tri import TRIANG_PARAMS, _square, grad_op

_CHOL = (Param("lower", "bool", True, doc="True if the triangular matrix is lower triangular, "
               "false if it is upper triangular."),)


def _same_shape(op: str):
    def rule(p, shapes):
        if not shapes[0]:
            return None
        _square(op, shapes[0])
        return shapes, [shapes[0]]
    return rule


def _float_only(op: str, visible: int):
    def rule(p, types):
        t = types[0]
        if t is None:
            return None
        if t not in ("float32", "float64"):
            raise DTypeError(f"{op}: the operator supports float32 and float64 data types "
                             f"only, got {t}")
        return [t], [t] * visible
    return rule


# ---------------------------------------------------------------- potrf / potri

class NotPositiveDefiniteError(DeferredError):
    """potrf of a matrix that is not symmetric positive definite (MXNet's LAPACK check)."""


def _checked(low, rt):
    """``low`` if every diagonal entry of the factor is positive (a failed pivot leaves 0 or
    NaN there); MXNetError as MXNet's potrf otherwise."""
    message = (f"linalg_potrf: potrf failed on an input of shape {tuple(low.shape)}. This "
               "may happen when the input matrix is either not symmetric or not positive "
               "definite.")
    check(rt, ~(torch.diagonal(low, 0, -2, -1) > 0).all(),
          lambda: NotPositiveDefiniteError(message), message)
    return (low,)


def _potrf_forward(p, ins, aux, rt):
    from ..kernels.linalg import potrf_ref
    return _checked(potrf_ref(ins[0], p.lower), rt)


def triton_potrf(p, ins, aux, rt):
    """Cholesky: one Triton program per matrix."""
    from ..kernels.linalg import potrf
    return _checked(potrf(ins[0], p.lower), rt)


def _potrf_gradient(g, p, ins, outs, og):
    low, dlow = outs[0], og[0]
    if not p.lower:  # U = L^T: the same formula on the transposes
        low = g.op("SwapAxis", low, dim1=-1, dim2=-2)
        dlow = g.op("SwapAxis", dlow, dim1=-1, dim2=-2)
    m = grad_op(g, "_linalg_trmm", low, dlow, transpose=True)
    sym = g.op("_linalg_mirrortrian", m)
    right = g.op("_linalg_trsm", low, sym, rightside=True)
    return [g.op("_linalg_trsm", low, right, transpose=True, alpha=0.5)]


def _potri(b, p, ins):
    diag = b.op("_linalg_extractdiag", ins[0], name="diag")
    eye = b.op("_linalg_makediag", b.op("ones_like", diag), name="eye")
    inv = b.op("_linalg_trsm", ins[0], eye, lower=p.lower, name="inv")
    return [b.op("_linalg_syrk", inv, transpose=p.lower)]


register(OpDef(
    name="_linalg_potrf", aliases=("linalg_potrf",), inputs=("A",), params=_CHOL,
    infer_shape=_same_shape("linalg_potrf"), forward=_potrf_forward, kernel=triton_potrf,
    gradient=_potrf_gradient,
    # uniform draws are positive definite only as 1 x 1 matrices: larger ones are checked
    # in tests/test_ops_linalg.py against MXNet
    cases=(Case(((1, 1),), low=0.5, high=2.0),
           Case(((3, 2, 1, 1),), {"lower": False}, low=0.5, high=2.0)),
    doc="Cholesky factorization of symmetric positive-definite matrices (one triangle read)."))

register(OpDef(
    name="_linalg_potri", aliases=("linalg_potri",), inputs=("A",), params=_CHOL,
    decompose=_potri, infer_shape=_same_shape("linalg_potri"),
    cases=(Case(((3, 3),), low=1.0, high=2.0),
           Case(((2, 2, 2),), {"lower": False}, low=1.0, high=2.0)),
    doc="Inverse of A = L L^T (or U^T U) from its Cholesky factor."))


# ---------------------------------------------------------------- trsm

def _trsm_forward(p, ins, aux, rt):
    from ..kernels.linalg import trsm_ref
    return (trsm_ref(ins[0], ins[1], p.alpha, p.rightside, p.lower, p.transpose),)


def triton_trsm(p, ins, aux, rt):
    """Triangular solve: one Triton program per matrix."""
    from ..kernels.linalg import trsm
    return (trsm(ins[0], ins[1], p.alpha, p.rightside, p.lower, p.transpose),)


def _trsm_gradient(g, p, ins, outs, og):
    db = g.op("_linalg_trsm", ins[0], og[0], rightside=p.rightside, lower=p.lower,
              transpose=not p.transpose, alpha=p.alpha)
    scale = -1.0 / p.alpha
    if p.rightside == p.transpose:
        full = grad_op(g, "_linalg_gemm2", db, outs[0], transpose_a=p.transpose,
                    transpose_b=not p.transpose, alpha=scale)
    else:
        full = grad_op(g, "_linalg_gemm2", outs[0], db, transpose_a=not p.transpose,
                    transpose_b=p.transpose, alpha=scale)
    return [g.op("_linalg_masktrian", full, lower=p.lower), db]


def _trsm_shape(p, shapes):
    a, bm = shapes
    if not a or not bm:
        return None
    n = _square("linalg_trsm", a)
    side = bm[-1] if p.rightside else bm[-2]
    if len(a) != len(bm) or a[:-2] != bm[:-2] or (n and side and n != side):
        raise ShapeError(f"linalg_trsm: shapes of A {a} and B {bm} do not match "
                         f"(rightside={p.rightside})")
    return shapes, [tuple(bm)]


register(OpDef(
    name="_linalg_trsm", aliases=("linalg_trsm",), inputs=("A", "B"), params=TRIANG_PARAMS,
    infer_shape=_trsm_shape, forward=_trsm_forward, kernel=triton_trsm,
    gradient=_trsm_gradient,
    cases=(Case(((3, 3), (3, 2)), {"alpha": 2.0}, low=1.0, high=2.0),
           Case(((2, 3, 3), (2, 4, 3)), {"rightside": True, "transpose": True, "lower": False},
                low=1.0, high=2.0)),
    doc="Solve op(A) X = alpha B (or X op(A) = alpha B) for triangular A."))


# ---------------------------------------------------------------- inverse / det / slogdet

def _gauss_forward(kind: str):
    def forward(p, ins, aux, rt):
        from ..kernels.linalg import gauss_jordan_ref
        return _gauss_outputs(kind, gauss_jordan_ref(ins[0], kind == "inverse"), ins[0], rt)
    return forward


def _gauss_kernel(kind: str):
    def triton_gauss(p, ins, aux, rt):
        from ..kernels.linalg import gauss_jordan
        return _gauss_outputs(kind, gauss_jordan(ins[0], kind == "inverse"), ins[0], rt)
    triton_gauss.__name__ = f"triton_linalg_{kind}"
    return triton_gauss


class SingularMatrixError(DeferredError):
    """inverse of an exactly singular matrix (MXNet's getrf check)."""


def _gauss_outputs(kind: str, got, a, rt):
    inv, sign, logdet = got
    if kind == "inverse":
        message = (f"linalg_inverse: the input matrix is non-convertible (singular) in an "
                   f"input of shape {tuple(a.shape)}")
        check(rt, ~(sign != 0).all(), lambda: SingularMatrixError(message), message)
        return (inv,)
    if a.dim() == 2:
        sign, logdet = sign.reshape(1), logdet.reshape(1)
    if kind == "det":
        return (sign * logdet.exp(),)
    return sign, logdet


def _det_shape(visible: int):
    def rule(p, shapes):
        x = shapes[0]
        if not x:
            return None
        if len(x) < 2:
            raise ShapeError(f"linalg det/slogdet: input A's dimension must be >= 2, got {x}")
        _square("linalg det/slogdet", x)
        return shapes, [tuple(x[:-2]) or (1,)] * visible
    return rule


def _inverse_t(g, a):
    return g.op("SwapAxis", g.op("_linalg_inverse", a), dim1=-1, dim2=-2)


def _scaled_by(g, scale, mat, like):
    """Each matrix of ``mat`` times its batch entry of ``scale``, shaped like ``like``."""
    s = g.op("expand_dims", g.op("expand_dims", scale, axis=-1), axis=-1)
    return g.op("reshape_like", g.op("broadcast_mul", mat, s), like)


def _inverse_gradient(g, p, ins, outs, og):
    tmp = grad_op(g, "_linalg_gemm2", og[0], outs[0], transpose_b=True)
    return [grad_op(g, "_linalg_gemm2", outs[0], tmp, transpose_a=True, alpha=-1.0)]


def _nonsingular(g, a, det):
    """(A with each singular matrix (det 0) replaced by I, 1 where det != 0 else 0): the
    inverse of the first is finite, and MXNet gives singular matrices a zero gradient."""
    keep = g.op("_not_equal_scalar", det, scalar=0.0)
    eye = g.op("_linalg_makediag", g.op("ones_like", g.op("_linalg_extractdiag", a)))
    swap = _scaled_by(g, g.op("_rminus_scalar", keep, scalar=1.0),
                      g.op("elemwise_sub", eye, a), a)
    return g.op("elemwise_add", a, swap), keep


def _det_gradient(g, p, ins, outs, og):
    safe, _ = _nonsingular(g, ins[0], outs[0])
    scale = g.op("elemwise_mul", og[0], outs[0])  # zero where det is
    return [_scaled_by(g, scale, _inverse_t(g, safe), ins[0])]


def _slogdet_gradient(g, p, ins, outs, og):
    safe, keep = _nonsingular(g, ins[0], outs[0])  # sign: 0 where log|det| = -inf
    scale = g.op("elemwise_mul", og[1], keep)
    return [_scaled_by(g, scale, _inverse_t(g, safe), ins[0])]


_WELL = dict(low=-1.0, high=1.0)
register(OpDef(
    name="_linalg_inverse", aliases=("linalg_inverse",), inputs=("A",),
    infer_shape=_same_shape("linalg_inverse"), infer_type=_float_only("linalg_inverse", 1),
    forward=_gauss_forward("inverse"), kernel=_gauss_kernel("inverse"),
    gradient=_inverse_gradient,
    cases=(Case(((3, 3),), **_WELL), Case(((2, 2, 4, 4),), **_WELL)),
    doc="Inverse of each square matrix."))

register(OpDef(
    # MXNet's det also has hidden LU and pivot outputs, so its output is named output0
    name="_linalg_det", aliases=("linalg_det",), inputs=("A",), outputs=("output0",),
    infer_shape=_det_shape(1),
    infer_type=_float_only("linalg_det", 1), forward=_gauss_forward("det"),
    kernel=_gauss_kernel("det"), gradient=_det_gradient,
    cases=(Case(((3, 3),), **_WELL), Case(((2, 4, 4),), **_WELL)),
    doc="Determinant of each square matrix (LU with partial pivoting)."))

register(OpDef(
    name="_linalg_slogdet", aliases=("linalg_slogdet",), inputs=("A",),
    outputs=("output0", "output1"), infer_shape=_det_shape(2),  # sign, log|det| (MXNet's names)
    infer_type=_float_only("linalg_slogdet", 2), forward=_gauss_forward("slogdet"),
    kernel=_gauss_kernel("slogdet"), gradient=_slogdet_gradient,
    cases=(Case(((3, 3),), **_WELL), Case(((2, 4, 4),), **_WELL)),
    doc="Sign and log of the absolute determinant of each square matrix."))


# ---------------------------------------------------------------- gelqf / syevd

def _pair_forward(fn: str):
    def forward(p, ins, aux, rt):
        from ..kernels import linalg as la
        return getattr(la, f"{fn}_ref")(ins[0])
    return forward


def _pair_kernel(fn: str):
    def triton_pair(p, ins, aux, rt):
        from ..kernels import linalg as la
        return getattr(la, fn)(ins[0])
    triton_pair.__name__ = f"triton_linalg_{fn}"
    return triton_pair


def _gelqf_shape(p, shapes):
    x = shapes[0]
    if not x:
        return None
    if len(x) < 2 or (x[-1] and x[-2] > x[-1]):
        raise ShapeError(f"linalg_gelqf: input A must be a tensor of (m, n) matrices with "
                         f"m <= n, got shape {x}")
    return shapes, [tuple(x), tuple(x[:-1]) + (x[-2],)]


def _syevd_shape(p, shapes):
    x = shapes[0]
    if not x:
        return None
    _square("linalg_syevd", x)
    return shapes, [tuple(x), tuple(x[:-1])]


def _gelqf_gradient(g, p, ins, outs, og):
    """dA = L^-T (dQ + copyLTU(L^T dL - dQ Q^T) Q) (MXNet's gelqf_backward)."""
    (q, low), (dq, dlow) = outs, og
    ltdl = grad_op(g, "_linalg_trmm", low, dlow, transpose=True)
    dqqt = grad_op(g, "_linalg_gemm2", dq, q, transpose_b=True, alpha=-1.0)
    sym = g.op("_linalg_mirrortrian", g.op("elemwise_add", ltdl, dqqt))
    full = g.op("elemwise_add", grad_op(g, "_linalg_gemm2", sym, q), dq)
    return [g.op("_linalg_trsm", low, full, transpose=True)]


# MXNet clamps eigenvalue gaps at 1e-30 (float32) or 1e-100 (float64); a gradient rule does
# not see dtypes, so 1e-30 serves both (they differ only for gaps below 1e-30)
_GAP_EPS = 1e-30


def _syevd_gradient(g, p, ins, outs, og):
    """dA = U^T Y U with Y[i, j] = (X[i, j] - X[j, i]) / (2 max(lam_i - lam_j, eps)) off
    the diagonal (i > j, mirrored) and dlam on it, X = dU U^T (MXNet's syevd_backward)."""
    (u, lam), (du, dlam) = outs, og
    x = grad_op(g, "_linalg_gemm2", du, u, transpose_b=True)
    skew = g.op("elemwise_sub", x, g.op("SwapAxis", x, dim1=-1, dim2=-2))
    gap = g.op("broadcast_sub", g.op("expand_dims", lam, axis=-1),
               g.op("expand_dims", lam, axis=-2))
    gap = g.op("_mul_scalar", g.op("_maximum_scalar", gap, scalar=_GAP_EPS), scalar=2.0)
    low = g.op("_linalg_masktrian", g.op("broadcast_div", skew, gap), offset=-1)
    y = g.op("elemwise_add", g.op("_linalg_mirrortrian", low), g.op("_linalg_makediag", dlam))
    uty = grad_op(g, "_linalg_gemm2", u, y, transpose_a=True)
    return [grad_op(g, "_linalg_gemm2", uty, u)]


register(OpDef(
    name="_linalg_gelqf", aliases=("linalg_gelqf",), inputs=("A",),
    outputs=("output0", "output1"),  # Q, L (MXNet lists no output names)
    infer_shape=_gelqf_shape, infer_type=_float_only("linalg_gelqf", 2),
    forward=_pair_forward("gelqf"), kernel=_pair_kernel("gelqf"), gradient=_gelqf_gradient,
    cases=(Case(((2, 3),)), Case(((2, 3, 3),)), Case(((2, 1, 1, 4),))),
    doc="LQ factorization A = L Q (L lower triangular, Q row-orthonormal) of each matrix."))

register(OpDef(
    name="_linalg_syevd", aliases=("linalg_syevd",), inputs=("A",),
    outputs=("output0", "output1"),  # U, lambda (MXNet lists no output names)
    infer_shape=_syevd_shape, infer_type=_float_only("linalg_syevd", 2),
    forward=_pair_forward("syevd"), kernel=_pair_kernel("syevd"), gradient=_syevd_gradient,
    # finite differences see the lower triangle only, MXNet's gradient is symmetric: the
    # gradient is checked on 1 x 1 matrices here and in tests/test_ops_linalg.py otherwise
    cases=(Case(((2, 1, 1),)), Case(((3, 3),), grad=False), Case(((2, 1, 4, 4),), grad=False)),
    doc="Symmetric eigendecomposition A = U^T diag(lambda) U of each matrix (lower triangle "
        "read), eigenvalues ascending."))
