"""linalg index and triangle ops (``_linalg_extractdiag``, ``linalg.makediag``...): MXNet 1.9.1's
diagonal/triangle copies, ``sumlogdiag``, ``syrk`` and ``trmm``, batched over leading axes.

* ``extractdiag(A, offset)`` (..., n, n) -> (..., n - |offset|); ``makediag`` the inverse
  (zeros elsewhere); each is the other's gradient;
* ``extracttrian(A, offset, lower)`` packs the triangle row by row: offset < 0 (or 0 and
  ``lower``) the lower triangle below diagonal ``offset``, otherwise the upper one read as
  the lower triangle of the transpose; ``maketrian`` unpacks; each is the other's gradient;
* ``sumlogdiag(A)`` = sum(log(diag(A))) (composite), ``syrk(A)`` = alpha * A A^T (or
  alpha * A^T A with ``transpose``; a ``gemm2`` composite), ``trmm(A, B)`` = alpha * op(A) B
  (or alpha * B op(A) with ``rightside``) with A's other triangle ignored (a triangle mask
  and ``gemm2``).

The copies are one Triton kernel (:func:`symgraph.kernels.linalg.tri_copy`); two hidden helpers of
the same kernel, ``_linalg_masktrian`` (``tril``/``triu`` with offset) and
``_linalg_mirrortrian`` (one triangle copied onto the other: MXNet's copyLTU), serve trmm and
the factorizations' gradients.

>>> import symgraph as mx
>>> a = mx.nd.array([[1, 2], [3, 4]])
>>> mx.nd.linalg.extractdiag(a).asnumpy()
array([1., 4.], dtype=float32)
>>> mx.nd.linalg.extracttrian(a, lower=False).asnumpy()
array([1., 2., 4.], dtype=float32)
>>> mx.nd.linalg.maketrian(mx.nd.array([1, 2, 3])).asnumpy()
array([[1., 0.],
       [2., 3.]], dtype=float32)
>>> mx.nd.linalg.syrk(a, alpha=0.5).asnumpy()
array([[ 2.5,  5.5],
       [ 5.5, 12.5]], dtype=float32)
"""
from __future__ import annotations

from ..attrs import Param, parse_params, to_attr_string
from ..base import ShapeError
from .base import Case, OpDef, get_op, register

_OFFSET = Param("offset", "int", 0, doc="Offset of the diagonal versus the main diagonal: "
                "negative below, positive above.")
_LOWER = Param("lower", "bool", True, doc="Refer to the lower triangular matrix if lower=true, "
               "to the upper otherwise. Only relevant when offset=0.")


def _square(op: str, shape: tuple) -> int:
    if len(shape) < 2:
        raise ShapeError(f"{op}: input operand must be a tensor of matrices, got shape {shape}")
    if shape[-1] and shape[-2] and shape[-1] != shape[-2]:
        raise ShapeError(f"{op}: input operand must be a tensor of square matrices, got shape "
                         f"{shape}")
    return shape[-1] or shape[-2]


def _tri_shape(kind: str, op: str):
    def rule(p, shapes):
        x = shapes[0]
        if not x:
            return None
        offset = p.get("offset", 0)
        if kind.startswith("extract"):
            n = _square(op, x)
            if n and n - abs(offset) <= 0:
                raise ShapeError(f"{op}: illegal offset {offset} for diag/trian extraction of "
                                 f"matrices of shape {x}")
        elif kind == "maketrian" and x[-1]:
            m = int(((8 * x[-1] + 1) ** 0.5 - 1) / 2 + 0.5)
            if m * (m + 1) // 2 != x[-1]:
                raise ShapeError(f"{op}: input tensor of maketrian has an invalid dimension "
                                 f"for the last axis: {x} ({x[-1]} is not a triangle number)")
        elif kind in ("mask", "mirror"):
            _square(op, x)
        if kind in ("mask", "mirror"):
            return shapes, [x]
        if not x[-1]:
            return None
        from ..kernels.linalg import tri_shape
        return shapes, [tri_shape(kind, tuple(x), offset)]
    return rule


def _tri_forward(kind: str):
    def forward(p, ins, aux, rt):
        from ..kernels.linalg import tri_copy_ref
        return (tri_copy_ref(ins[0], kind, p.get("offset", 0), p.get("lower", True)),)
    return forward


def _tri_kernel(kind: str):
    def triton_tri(p, ins, aux, rt):
        from ..kernels.linalg import tri_copy
        return (tri_copy(ins[0], kind, p.get("offset", 0), p.get("lower", True)),)
    triton_tri.__name__ = f"triton_linalg_{kind}"
    return triton_tri


class _Expanding:
    """A gradient builder that expands composite ops into their primitives as it adds them
    (autodiff runs after composite expansion, so a backward graph must hold primitives)."""

    def __init__(self, g):
        self.g = g

    def multi(self, name: str, /, *inputs, **attrs) -> list:
        op = get_op(name)
        attrs.pop("name", None)
        if op.decompose is None:
            return self.g.multi(name, *inputs, **attrs)
        p = parse_params(op.params, {k: to_attr_string(v) for k, v in attrs.items()}, name)
        return list(op.decompose(self, p, list(inputs)))

    def op(self, name: str, /, *inputs, **attrs):
        return self.multi(name, *inputs, **attrs)[0]


def grad_op(g, name: str, *inputs, **attrs):
    """``g.op(name, ...)`` for gradient rules, with a composite ``name`` expanded."""
    return _Expanding(g).op(name, *inputs, **attrs)


def _mirror_gradient(g, p, ins, outs, og):
    """d/dA of copyLTU(A): the triangle gets og plus og^T off the diagonal."""
    swapped = g.op("SwapAxis", og[0], dim1=-1, dim2=-2)
    own = g.op("_linalg_masktrian", og[0], offset=0, lower=p.lower)
    other = g.op("_linalg_masktrian", swapped, offset=-1 if p.lower else 1, lower=p.lower)
    return [g.op("elemwise_add", own, other)]


_INVERSE = {"extractdiag": "_linalg_makediag", "makediag": "_linalg_extractdiag",
            "extracttrian": "_linalg_maketrian", "maketrian": "_linalg_extracttrian",
            "mask": "_linalg_masktrian"}


def _tri_gradient(kind: str):
    def gradient(g, p, ins, outs, og):
        return [g.op(_INVERSE[kind], og[0], **p)]
    return gradient


def _register_tri(kind: str, name: str, params: tuple, cases: tuple, doc: str,
                  hidden: bool = False) -> None:
    grad = _mirror_gradient if kind == "mirror" else _tri_gradient(kind)
    register(OpDef(
        name=name, aliases=() if hidden else (name[1:],), inputs=("A",), params=params,
        infer_shape=_tri_shape(kind, name), forward=_tri_forward(kind),
        kernel=_tri_kernel(kind), gradient=grad, hidden=hidden, cases=cases, doc=doc))


_DIAG_CASES = (Case(((3, 3),)), Case(((2, 4, 4),), {"offset": 1}),
               Case(((2, 1, 3, 3),), {"offset": -2}))
_register_tri("extractdiag", "_linalg_extractdiag", (_OFFSET,), _DIAG_CASES,
              "The diagonal (offset below/above the main one) of each square matrix.")
_register_tri("makediag", "_linalg_makediag", (_OFFSET,),
              (Case(((3,),)), Case(((2, 3),), {"offset": -1}), Case(((2, 1, 2),), {"offset": 2})),
              "Square matrices with the given vectors on a diagonal, zeros elsewhere.")
_register_tri("extracttrian", "_linalg_extracttrian", (_OFFSET, _LOWER),
              (Case(((3, 3),)), Case(((2, 4, 4),), {"lower": False}),
               Case(((2, 4, 4),), {"offset": -1}), Case(((3, 3),), {"offset": 1})),
              "The lower (upper) triangle of each square matrix packed row by row.")
_register_tri("maketrian", "_linalg_maketrian", (_OFFSET, _LOWER),
              (Case(((6,),)), Case(((2, 3),), {"lower": False}),
               Case(((2, 1, 6),), {"offset": -1}), Case(((1,),), {"offset": 2})),
              "Triangular matrices from packed triangles (the inverse of extracttrian).")
_register_tri("mask", "_linalg_masktrian", (_OFFSET, _LOWER),
              (Case(((3, 3),)), Case(((2, 4, 4),), {"lower": False, "offset": 1})),
              "np.tril(A, offset) (lower) or np.triu(A, offset) on the last two axes.",
              hidden=True)
_register_tri("mirror", "_linalg_mirrortrian", (Param("lower", "bool", True),),
              (Case(((3, 3),)), Case(((2, 4, 4),), {"lower": False})),
              "A symmetric matrix from the lower (upper) triangle and diagonal of A.",
              hidden=True)


# ---------------------------------------------------------------- composites

def _sumlogdiag(b, p, ins):
    diag = b.op("_linalg_extractdiag", ins[0], name="diag")
    return [b.op("sum", b.op("log", diag), axis=-1)]


def _syrk(b, p, ins):
    return [b.op("_linalg_gemm2", ins[0], ins[0], transpose_a=p.transpose,
                 transpose_b=not p.transpose, alpha=p.alpha)]


def _trmm(b, p, ins):
    tri = b.op("_linalg_masktrian", ins[0], lower=p.lower, name="tri")
    if p.rightside:
        return [b.op("_linalg_gemm2", ins[1], tri, transpose_b=p.transpose, alpha=p.alpha)]
    return [b.op("_linalg_gemm2", tri, ins[1], transpose_a=p.transpose, alpha=p.alpha)]


def _sumlogdiag_shape(p, shapes):
    x = shapes[0]
    if not x:
        return None
    _square("linalg_sumlogdiag", x)
    return shapes, [tuple(x[:-2]) or (1,)]


def _trmm_shape(p, shapes):
    a, bm = shapes
    if not a or not bm:
        return None
    n = _square("linalg_trmm", a)
    side = bm[-1] if p.rightside else bm[-2]
    if len(a) != len(bm) or a[:-2] != bm[:-2] or (n and side and n != side):
        raise ShapeError(f"linalg_trmm: shapes of A {a} and B {bm} do not match "
                         f"(rightside={p.rightside})")
    return shapes, [tuple(bm)]


register(OpDef(
    name="_linalg_sumlogdiag", aliases=("linalg_sumlogdiag",), inputs=("A",),
    decompose=_sumlogdiag, infer_shape=_sumlogdiag_shape,
    cases=(Case(((3, 3),), low=0.5, high=2.0), Case(((2, 2, 4, 4),), low=0.5, high=2.0)),
    doc="Sum of the logarithms of the diagonal elements of each square matrix."))

register(OpDef(
    name="_linalg_syrk", aliases=("linalg_syrk",), inputs=("A",), decompose=_syrk,
    params=(Param("transpose", "bool", False, doc="Use transpose of input matrix."),
            Param("alpha", "float", 1.0, doc="Scalar factor to be applied to the result.")),
    cases=(Case(((3, 4),), {"alpha": 2.0}), Case(((2, 3, 2),), {"transpose": True})),
    doc="alpha * A A^T (or alpha * A^T A with transpose) for each matrix."))

TRIANG_PARAMS = (
    Param("transpose", "bool", False, doc="Use transposed of the triangular matrix"),
    Param("rightside", "bool", False,
          doc="Multiply triangular matrix from the right to non-triangular one."),
    Param("lower", "bool", True, doc="True if the triangular matrix is lower triangular, "
          "false if it is upper triangular."),
    Param("alpha", "float", 1.0, doc="Scalar factor to be applied to the result."))

register(OpDef(
    name="_linalg_trmm", aliases=("linalg_trmm",), inputs=("A", "B"), decompose=_trmm,
    infer_shape=_trmm_shape, params=TRIANG_PARAMS,
    cases=(Case(((3, 3), (3, 2)), {"alpha": 2.0}),
           Case(((2, 3, 3), (2, 4, 3)), {"rightside": True, "transpose": True, "lower": False})),
    doc="alpha * op(A) B (or alpha * B op(A) with rightside), A triangular."))
