"""Small contrib math ops and MXNet's internal helpers.

``_contrib_quadratic`` (``a x^2 + b x + c``), ``_contrib_allclose`` and ``khatri_rao`` are
composites; ``_contrib_div_sqrt_dim`` (``x / sqrt(x.shape[-1])``) is a primitive whose
gradient is itself; ``_contrib_gradientmultiplier`` is the identity forward with the
gradient scaled by ``scalar``; ``_contrib_round_ste``/``_contrib_sign_ste`` round/sign with
a straight-through gradient (``dx = dy``). ``_identity_with_attr_like_rhs``, ``_copyto``,
``_zeros_without_dtype`` are MXNet's internal helpers (``_grad_add`` lives with the other
binary ops).

>>> import symgraph as mx
>>> x = mx.nd.array([[1, 2], [3, 4]])
>>> mx.nd.contrib.quadratic(x, a=1, b=-1, c=2).asnumpy()
array([[ 2.,  4.],
       [ 8., 14.]], dtype=float32)
>>> mx.nd.khatri_rao(x, mx.nd.array([[1, 0], [0, 1]])).asnumpy()
array([[1., 0.],
       [0., 2.],
       [3., 0.],
       [0., 4.]], dtype=float32)
>>> mx.nd.contrib.allclose(x, x + 1e-7).asnumpy(), mx.nd.contrib.allclose(x, x + 1).asnumpy()
(array(1, dtype=uint8), array(0, dtype=uint8))
>>> mx.sym.khatri_rao(mx.sym.Variable('a'), mx.sym.Variable('b')).infer_shape(a=(2, 3),
...                                                                         b=(4, 2))
Traceback (most recent call last):
...
symgraph.base.ShapeError: ... must be a matrix with 3 columns, got input 1 of shape (4, 2) ...
"""
from __future__ import annotations

import math

import torch

from ..attrs import MAX_VARIADIC, Param
from ..base import ShapeError
from .base import Case, OpDef, PlanHints, Storage, elemwise_shape, register, unary_shape
from .elementwise import _SCALAR, TRITON, round_half_away, unary

# ------------------------------------------------------------------ quadratic


def _quadratic(b, p, ins):
    x = ins[0]
    inner = b.op("_plus_scalar", b.op("_mul_scalar", x, scalar=p.a, name="ax"), scalar=p.b,
                 name="axb")
    return [b.op("_plus_scalar", b.op("elemwise_mul", x, inner, name="x_axb"), scalar=p.c)]


def _quadratic_storage(p, stypes):
    """MXNet keeps csr for ``c == 0`` (on the stored values); row_sparse gives dense."""
    return ["csr"] if stypes[0] == "csr" and p.c == 0 else None


register(OpDef(
    name="_contrib_quadratic", decompose=_quadratic,
    storage=Storage(_quadratic_storage),
    params=(Param("a", "float", 0.0, doc="Coefficient of x^2."),
            Param("b", "float", 0.0, doc="Coefficient of x."),
            Param("c", "float", 0.0, doc="Constant term.")),
    cases=(Case(((3, 5),), {"a": 0.7, "b": -1.5, "c": 0.25}), Case(((2, 3, 2),), {"a": -2.0})),
    doc="``a * x**2 + b * x + c`` elementwise (gradient ``2 a x + b``)."))


# ------------------------------------------------------------------ div_sqrt_dim

def _div_sqrt_dim(x: torch.Tensor) -> torch.Tensor:
    return x / math.sqrt(x.shape[-1])


def triton_div_sqrt_dim(p, ins, aux, rt):
    """``x * (1 / sqrt(d))`` as one generated elementwise kernel."""
    from ..kernels.elementwise import Program, run
    x = ins[0]
    prog = Program(1, ((f"({{0}} / {math.sqrt(x.shape[-1])!r})", ("x0",)),), ("t0",))
    return run(prog, [x], tuple(x.shape), x.dtype)


register(OpDef(
    name="_contrib_div_sqrt_dim", forward=lambda p, ins, aux, rt: (_div_sqrt_dim(ins[0]),),
    infer_shape=unary_shape, kernel=triton_div_sqrt_dim, hints=PlanHints(inplace=((0, 0),)),
    gradient=lambda g, p, ins, outs, og: [g.op("_contrib_div_sqrt_dim", og[0])],
    cases=(Case(((3, 5),)), Case(((2, 3, 4),))),
    doc="Divide by the square root of the last dimension's size (attention scaling)."))


# ------------------------------------------------------------------ straight-through ops

register(OpDef(
    name="_contrib_gradientmultiplier", params=_SCALAR, infer_shape=unary_shape,
    hints=PlanHints(view=True),
    expr="{0}", forward=lambda p, ins, aux, rt: (ins[0].clone(),),
    gradient=lambda g, p, ins, outs, og: [g.op("_mul_scalar", og[0], scalar=p.scalar)],
    cases=(Case(((3, 5),), {"scalar": -2.5}, grad=False),),  # the gradient is by definition
    doc="The identity forward; the backward multiplies the gradient by ``scalar`` "
        "(``scalar=-1`` reverses it, as in domain-adversarial training)."))

TRITON["_contrib_round_ste"] = TRITON["round"]
TRITON["_contrib_sign_ste"] = TRITON["sign"]
unary("_contrib_round_ste", round_half_away,
      lambda g, x, y, dy: dy, "round half away from zero", fd=False,
      doc="``round(x)`` with the straight-through gradient ``dx = dy``.")
unary("_contrib_sign_ste", torch.sign, lambda g, x, y, dy: dy, "sign(x)", fd=False,
      doc="``sign(x)`` with the straight-through gradient ``dx = dy``.")


# ------------------------------------------------------------------ allclose

def _allclose(b, p, ins):
    """MXNet's rule per element: NaNs match only NaNs (with ``equal_nan``); otherwise
    ``a == b`` (infinities) or ``|a - b| <= atol + rtol * |b|``; then all of them."""
    a, y = ins
    diff = b.op("abs", b.op("elemwise_sub", a, y, name="diff"), name="absdiff")
    tol = b.op("_plus_scalar", b.op("_mul_scalar", b.op("abs", y, name="absb"),
                                    scalar=p.rtol, name="rtolb"), scalar=p.atol, name="tol")
    close = b.op("_logical_or", b.op("_lesser_equal", diff, tol, name="within"),
                 b.op("_equal", a, y, name="same"), name="close")
    if p.equal_nan:
        both = b.op("_logical_and", b.op("_not_equal", a, a, name="nan_a"),
                    b.op("_not_equal", y, y, name="nan_b"), name="both_nan")
        close = b.op("_logical_or", close, both, name="close_nan")
    return [b.op("Cast", b.op("min", close, name="all"), dtype="uint8")]


def _allclose_eager(p, ins, aux, rt):
    """The imperative call: MXNet's 0-d result (a bound graph's output has shape (1,),
    since legacy shapes read ``()`` as unknown)."""
    a, y = ins
    close = ((a - y).abs() <= p.atol + p.rtol * y.abs()) | (a == y)
    if p.equal_nan:
        close = close | (a.isnan() & y.isnan())
    return (close.all().to(torch.uint8),)


def _allclose_shape(p, shapes):
    merged = elemwise_shape(p, shapes)
    if merged is None:
        return None
    return merged[0], [(1,)]


register(OpDef(
    name="_contrib_allclose", inputs=("a", "b"), decompose=_allclose,
    infer_shape=_allclose_shape, forward=_allclose_eager,
    params=(Param("rtol", "float", 1e-5, doc="Relative tolerance."),
            Param("atol", "float", 1e-8, doc="Absolute tolerance."),
            Param("equal_nan", "bool", True, doc="Whether NaNs compare equal to NaNs.")),
    cases=(Case(((3, 5), (3, 5)), grad=False),
           Case(((2, 3, 2), (2, 3, 2)), {"rtol": 10.0, "atol": 0.5}, grad=False)),
    doc="1 (uint8) when every ``|a - b| <= atol + rtol * |b|``, else 0."))


# ------------------------------------------------------------------ khatri_rao

def _khatri_rao(b, p, ins):
    out = ins[0]
    if len(ins) == 1:
        return [b.op("_copy", out)]
    for k, x in enumerate(ins[1:]):
        outer = b.op("broadcast_mul", b.op("expand_dims", out, axis=1, name=f"rows{k}"),
                     b.op("expand_dims", x, axis=0, name=f"cols{k}"), name=f"outer{k}")
        out = b.op("Reshape", outer, shape=(-3, 0), name=f"merge{k}")
    return [out]


def _khatri_rao_shape(p, shapes):
    if not all(shapes):
        return None
    cols = shapes[0][1] if len(shapes[0]) == 2 else None
    for i, s in enumerate(shapes):
        if len(s) != 2 or s[1] != cols:
            raise ShapeError(f"every input must be a matrix with {cols} columns, got input "
                             f"{i} of shape {tuple(s)}")
    return shapes, [(math.prod(s[0] for s in shapes), cols)]


register(OpDef(
    name="khatri_rao", decompose=_khatri_rao, infer_shape=_khatri_rao_shape,
    key_var_num_args="num_args",
    params=(Param("num_args", "int", lower=1, upper=MAX_VARIADIC),),
    inputs=lambda p: [f"arg{i}" for i in range(p.num_args)],
    cases=(Case(((2, 3), (4, 3))), Case(((3, 2), (1, 2), (2, 2))), Case(((3, 4),))),
    doc="Column-wise Kronecker product of matrices with equal column counts: row "
        "``(i, j, ...)`` of the result is the product of row ``i`` of the first input, row "
        "``j`` of the second, ...; shape ``(prod of rows, columns)``."))


# ------------------------------------------------------------------ internal helpers

register(OpDef(
    name="_identity_with_attr_like_rhs", inputs=("lhs", "rhs"), infer_shape=elemwise_shape,
    hints=PlanHints(view=True), expr="{0}", forward=lambda p, ins, aux, rt: (ins[0].clone(),),
    gradient=lambda g, p, ins, outs, og: [og[0], g.zeros(ins[1])],
    cases=(Case(((3, 4), (3, 4)), no_grad_inputs=(1,)),),
    doc="``lhs`` unchanged (MXNet uses it to give ``lhs`` the storage type of ``rhs``)."))

TRITON["_copyto"] = "{0}"
unary("_copyto", torch.clone, lambda g, x, y, dy: dy, "x", view=True,
      doc="A copy of ``data`` (MXNet's ``NDArray.copyto`` operator).")

# mshadow's type flags, which ``_zeros_without_dtype`` takes (-1: unset, float32)
_TYPE_FLAGS = {-1: "float32", 0: "float32", 1: "float64", 2: "float16", 3: "uint8",
               4: "int32", 5: "int8", 6: "int64", 7: "bool", 12: "bfloat16"}


def _flag_dtype(p) -> str:
    if p.dtype not in _TYPE_FLAGS:
        raise ShapeError(f"_zeros_without_dtype: unknown type flag {p.dtype} (known: "
                         f"{sorted(_TYPE_FLAGS)})")
    return _TYPE_FLAGS[p.dtype]


def _zeros_forward(p, ins, aux, rt):
    from ..base import to_torch_dtype
    shape = p.get("_out_shape") or tuple(p.shape)
    return (torch.zeros(shape, dtype=to_torch_dtype(_flag_dtype(p)), device=rt.device),)


def triton_zeros_without_dtype(p, ins, aux, rt):
    """Zeros as one generated kernel over the flat index."""
    from ..base import to_torch_dtype
    from ..kernels.elementwise import Program, run
    shape = p.get("_out_shape") or tuple(p.shape)
    return run(Program(0, (("(offs * 0.0)", ()),), ("t0",)), [], shape,
               to_torch_dtype(_flag_dtype(p)), device=rt.device)


register(OpDef(
    name="_zeros_without_dtype", inputs=(), hints=PlanHints(reads_out_shape=True),
    params=(Param("shape", "shape", ()), Param("ctx", "str", ""),
            Param("dtype", "int", -1, doc="An mshadow type flag (-1: float32).")),
    infer_shape=lambda p, s: ([], [tuple(max(d, 0) for d in p.shape)]),
    infer_type=lambda p, t: ([], [_flag_dtype(p)]),
    forward=_zeros_forward, kernel=triton_zeros_without_dtype,
    gradient=lambda g, p, ins, outs, og: [],
    cases=(Case((), {"shape": (2, 3)}, grad=False), Case((), {"shape": (4,), "dtype": 1},
                                                         grad=False)),
    doc="Zeros of ``shape`` with the dtype given as an mshadow type flag (MXNet's "
        "internal ``zeros_like`` helper)."))
