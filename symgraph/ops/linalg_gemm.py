"""linalg_gemm / linalg_gemm2 (``_linalg_gemm``, ``linalg.gemm``...): batched matrix products
(composites of ``batch_dot``), MXNet 1.9.1's forms::

    gemm(A, B, C)  = alpha * op(A) @ op(B) + beta * C
    gemm2(A, B)    = alpha * op(A) @ op(B)

over the leading n-2 axes. Rows are on ``axis`` (default -2), columns on the last axis: a
non-default axis works as ``swapaxes(axis, -2)`` around the product. The batch axes are
merged by ``Reshape`` with ``reverse`` (shape-independent) for one 3-D ``batch_dot``, and
restored with ``reshape_like`` (from ``C``, or from ``A``'s leading axes).

>>> import symgraph as mx
>>> a = mx.nd.array([[1, 2], [3, 4]])
>>> mx.nd.linalg.gemm2(a, a, transpose_b=True, alpha=0.5).asnumpy()
array([[ 2.5,  5.5],
       [ 5.5, 12.5]], dtype=float32)
>>> mx.nd.linalg.gemm(a, a, mx.nd.ones((2, 2)), beta=2.0).asnumpy()
array([[ 9., 12.],
       [17., 24.]], dtype=float32)
"""
from __future__ import annotations

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, register

_PARAMS = (Param("transpose_a", "bool", False, doc="Multiply with transposed of A."),
           Param("transpose_b", "bool", False, doc="Multiply with transposed of B."),
           Param("alpha", "float", 1.0, doc="Scalar factor multiplied with A*B."))
_AXIS = Param("axis", "int", -2, doc="Axis corresponding to the matrix rows.")


def _rows_last(b, p, x, tag: str):
    """``x`` with its row axis moved to -2 (a no-op node is not added for axis -2)."""
    return x if p.axis == -2 else b.op("SwapAxis", x, dim1=p.axis, dim2=-2, name=f"swap{tag}")


def _product(b, p, a, bm):
    """alpha * op(A) @ op(B) as (merged batch, M, P), and A with its rows at -2 untransposed
    (whose leading axes give the output's)."""
    a, bm = _rows_last(b, p, a, "_a"), _rows_last(b, p, bm, "_b")
    if p.transpose_a:  # rows of op(A) on -2, so A's leading axes name the output's
        a = b.op("SwapAxis", a, dim1=-1, dim2=-2, name="transpose_a")
    a3 = b.op("Reshape", a, shape=(-1, 0, 0), reverse=True, name="a3")
    b3 = b.op("Reshape", bm, shape=(-1, 0, 0), reverse=True, name="b3")
    prod = b.op("batch_dot", a3, b3, transpose_b=p.transpose_b)
    if p.alpha != 1.0:
        prod = b.op("_mul_scalar", prod, scalar=p.alpha, name="alpha")
    return prod, a


def _gemm(b, p, ins):
    a, bm, c = ins
    c = _rows_last(b, p, c, "_c")
    prod, _ = _product(b, p, a, bm)
    if p.beta != 1.0:
        c = b.op("_mul_scalar", c, scalar=p.beta, name="beta")
    out = b.op("elemwise_add", b.op("reshape_like", prod, c), c)
    return [_rows_last(b, p, out, "_out")]


def _gemm2(b, p, ins):
    prod, a = _product(b, p, ins[0], ins[1])
    out = b.op("reshape_like", prod, a, lhs_begin=0, lhs_end=2, rhs_begin=0, rhs_end=-1)
    return [_rows_last(b, p, out, "_out")]


def _matrix(p, x, which: str):
    """(batch axes, rows, cols) of input ``which`` (after ``axis`` and its transpose flag)."""
    if len(x) < 2:
        raise ShapeError(f"linalg: input {which} must have at least 2 dimensions, got {x}")
    if not -len(x) <= p.axis < len(x) - 1:
        raise ShapeError(f"linalg: axis {p.axis} is not a valid row axis of {which} {x} "
                         "(columns are the last axis)")
    axis = p.axis % len(x)
    batch = tuple(d for i, d in enumerate(x[:-1]) if i != axis)
    rows, cols = x[axis], x[-1]
    flip = {"A": p.transpose_a, "B": p.transpose_b}.get(which, False)
    return (batch, cols, rows) if flip else (batch, rows, cols)


def _out_shape(p, a, bm) -> tuple:
    (ba, m, k), (bb, k2, n) = _matrix(p, a, "A"), _matrix(p, bm, "B")
    if ba != bb or (k and k2 and k != k2):
        raise ShapeError(f"linalg: shapes of A {a} and B {bm} do not match for a matrix "
                         f"product (axis={p.axis}, transpose_a={p.transpose_a}, "
                         f"transpose_b={p.transpose_b})")
    out = list(a)
    out[p.axis % len(a)], out[-1] = m, n
    return tuple(out)


def _gemm_shape(p, shapes):
    a, bm, c = shapes
    if not a or not bm:
        return None
    out = _out_shape(p, a, bm)
    if c and tuple(c) != out:
        raise ShapeError(f"linalg_gemm: C has shape {c}, the product of A {a} and B {bm} has "
                         f"shape {out}")
    return [a, bm, out], [out]


def _gemm2_shape(p, shapes):
    a, bm = shapes
    if not a or not bm:
        return None
    return shapes, [_out_shape(p, a, bm)]


register(OpDef(
    name="_linalg_gemm", aliases=("linalg_gemm",), inputs=("A", "B", "C"), decompose=_gemm,
    infer_shape=_gemm_shape,
    params=_PARAMS + (Param("beta", "float", 1.0, doc="Scalar factor multiplied with C."),
                      _AXIS),
    cases=(Case(((3, 4), (4, 2), (3, 2)), {"alpha": 0.5, "beta": 2.0}),
           Case(((2, 4, 3), (2, 2, 4), (2, 3, 2)), {"transpose_a": True, "transpose_b": True}),
           Case(((2, 3, 2, 4), (2, 4, 2, 5), (2, 3, 2, 5)), {"axis": 1})),
    doc="alpha * op(A) * op(B) + beta * C over the leading axes (batched matrices)."))

register(OpDef(
    name="_linalg_gemm2", aliases=("linalg_gemm2",), inputs=("A", "B"), decompose=_gemm2,
    infer_shape=_gemm2_shape, params=_PARAMS + (_AXIS,),
    cases=(Case(((3, 4), (4, 2)), {"alpha": 2.0}),
           Case(((2, 2, 4, 3), (2, 2, 5, 4)), {"transpose_a": True, "transpose_b": True}),
           Case(((2, 3, 2, 4), (2, 4, 2, 5)), {"axis": -3})),
    doc="alpha * op(A) * op(B) over the leading axes (batched matrices)."))
