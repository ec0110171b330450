"""``Cast`` (``cast``), ``clip`` and ``norm``.

``Cast``'s gradient casts the output gradient back to the input's dtype with the hidden
``_backward_Cast(ograd, data)``; ``clip`` masks the gradient outside ``[a_min, a_max]``;
``norm`` broadcasts its output gradient back with ``_reduce_bcast``.

Examples
--------
>>> import symgraph as mx
>>> mx.sym.Cast(mx.sym.Variable('x'), dtype='int32').infer_type(x='float32')[1]
[<class 'numpy.int32'>]

>>> mx.sym.clip(mx.sym.Variable('x'), a_min=0, a_max=1).infer_shape(x=(2, 3))[1]
[(2, 3)]

>>> x = mx.sym.Variable('x')
>>> mx.sym.norm(x, axis=1).infer_shape(x=(3, 4))[1], mx.sym.norm(x).infer_shape(x=(3, 4))[1]
([(3,)], [(1,)])
"""
from __future__ import annotations

import torch

from ..attrs import Param, Params
from ..base import ShapeError, to_torch_dtype
from ..sparse import rules
from ..sparse.formats import CSR, RowSparse
from .base import Case, OpDef, Storage, register, unary_shape
from .reduce import reduce_axes, reduced_shape, sparse_sum

_CAST_DTYPES = ("bfloat16", "bool", "float16", "float32", "float64", "int32", "int64", "int8",
                "uint8")
_SMALL_INTS = (torch.uint8, torch.int8, torch.int16)


def cast_to(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """MXNet's ``static_cast``: truncate toward zero; narrow integers wrap; bool is ``x != 0``."""
    if x.dtype == dtype:
        return x.clone()
    if dtype == torch.bool:
        return x != 0
    if x.is_floating_point() and dtype in _SMALL_INTS:
        return x.to(torch.int64).to(dtype)  # float -> uint8/int8 directly is undefined in C++
    return x.to(dtype)


def _cast_template(dtype: torch.dtype) -> str:
    """Triton expression of ``cast_to`` (computed in fp32/fp64, stored in ``dtype``)."""
    if dtype.is_floating_point:
        return "{0}"
    if dtype == torch.bool:
        return "tl.where({0} != 0.0, 1.0, 0.0)"
    t = "tl.where({0} >= 0.0, tl.floor({0}), tl.ceil({0}))"  # truncate toward zero
    if dtype in _SMALL_INTS:  # wrap modulo 2^bits, as the C++ static_cast through int64
        bits = {torch.uint8: 256.0, torch.int8: 256.0, torch.int16: 65536.0}[dtype]
        shift = 0.0 if dtype == torch.uint8 else bits / 2
        v = f"(({t}) + {shift!r})"
        return f"({v} - tl.floor({v} / {bits!r}) * {bits!r} - {shift!r})"
    return t


def triton_cast_to(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``cast_to`` as one generated kernel."""
    from ..kernels.elementwise import Program, run
    prog = Program(1, ((_cast_template(dtype), ("x0",)),), ("t0",))
    return run(prog, [x], tuple(x.shape), dtype)[0]


def triton_cast(p, ins, aux, rt):
    return (triton_cast_to(ins[0], to_torch_dtype(p.dtype)),)


def triton_backward_cast(p, ins, aux, rt):
    return (triton_cast_to(ins[0], ins[1].dtype),)


register(OpDef(
    name="Cast", aliases=("cast",), kernel=triton_cast,
    params=(Param("dtype", "dtype", choices=_CAST_DTYPES, doc="Output dtype."),),
    infer_shape=unary_shape, infer_type=lambda p, t: (list(t), [p.dtype]),
    forward=lambda p, ins, aux, rt: (cast_to(ins[0], to_torch_dtype(p.dtype)),),
    gradient=lambda g, p, ins, outs, og: [g.op("_backward_Cast", og[0], ins[0])],
    cases=(Case(((3, 4),), {"dtype": "float64"}),
           Case(((3, 4),), {"dtype": "float16"}, grad=False),
           Case(((2, 5),), {"dtype": "int32"}, low=-3.0, high=3.0, grad=False),
           Case(((2, 5),), {"dtype": "uint8"}, low=-3.0, high=3.0, grad=False)),
    doc="Cast every element to ``dtype`` (floats truncate toward zero into integers)."))

register(OpDef(
    name="_backward_Cast", inputs=("ograd", "data"), hidden=True,
    # ograd cast to data's dtype: ograd's shape (norm passes the reduced gradient and x)
    infer_shape=lambda p, s: (s, [s[0]]) if s[0] else None,
    infer_type=lambda p, t: (list(t), [t[1]]) if t[1] is not None else None,
    forward=lambda p, ins, aux, rt: (cast_to(ins[0], ins[1].dtype),), kernel=triton_backward_cast,
    gradient=lambda g, p, ins, outs, og: [g.op("_backward_Cast", og[0], ins[0]), None],
    cases=(Case(((3, 4), (3, 4)), no_grad_inputs=(1,)),),
    doc="Gradient of ``Cast``: the output gradient cast back to the input's dtype."))


# ------------------------------------------------------------------ clip

def _clip_forward(p, ins, aux, rt):
    x = ins[0]
    hi = torch.tensor(p.a_max, dtype=torch.float64).to(x.dtype)
    lo = torch.tensor(p.a_min, dtype=torch.float64).to(x.dtype)
    # MXNet tests the upper bound first: with a_min > a_max the result is a_max above it
    return (torch.where(x > hi, hi, torch.where(x < lo, lo, x)),)


def _clip_grad(g, p, ins, outs, og):
    inside = g.op("elemwise_mul", g.op("_greater_equal_scalar", ins[0], scalar=p.a_min),
                  g.op("_lesser_equal_scalar", ins[0], scalar=p.a_max))
    return [g.op("elemwise_mul", og[0], inside)]


register(OpDef(
    name="clip",
    params=(Param("a_min", "float", doc="Lower bound."), Param("a_max", "float",
                                                              doc="Upper bound.")),
    infer_shape=unary_shape, forward=_clip_forward, gradient=_clip_grad,
    storage=rules.clip_rule(),  # sparse kept for a_min <= 0 <= a_max, else an error
    expr="tl.where({0} > {a_max}, {a_max}, tl.where({0} < {a_min}, {a_min}, {0}))",
    cases=(Case(((3, 5),), {"a_min": -0.5, "a_max": 0.3}),
           Case(((2, 3, 2),), {"a_min": -2.0, "a_max": 2.0}),
           Case(((4, 3),), {"a_min": 0.5, "a_max": -0.5})),
    doc="Limit values to ``[a_min, a_max]``; the gradient passes where "
        "``a_min <= x <= a_max``."))


# ------------------------------------------------------------------ norm

def _reduce_params(p) -> Params:
    return Params(axis=p.axis, keepdims=p.keepdims, exclude=False)


def _norm_shape(p, shapes):
    if p.ord not in (1, 2):
        raise ShapeError(f"norm only supports ord=1 and ord=2, got ord={p.ord}")
    src = shapes[0]
    if not src:
        return None
    return shapes, [reduced_shape(_reduce_params(p), src)]


def _norm_forward(p, ins, aux, rt):
    x = ins[0]
    q = _reduce_params(p)
    xf = x if x.is_floating_point() else x.to(torch.float64)
    out = torch.linalg.vector_norm(xf, ord=p.ord, dim=reduce_axes(q, x.dim()), keepdim=True)
    out = out.reshape(reduced_shape(q, tuple(x.shape)))
    return (cast_to(out, to_torch_dtype(p.out_dtype) if p.out_dtype else x.dtype),)


def triton_norm(p, ins, aux, rt):
    """|x| or x*x, a row reduction, then sqrt: three kernels, fp32 accumulation."""
    from ..kernels.elementwise import Program, run
    from ..kernels.reduce import reduce
    x = ins[0]
    if not x.is_floating_point():
        return _norm_forward(p, ins, aux, rt)
    q = _reduce_params(p)
    axes = reduce_axes(q, x.dim())
    mag = "tl.abs({0})" if p.ord == 1 else "({0} * {0})"
    powered = run(Program(1, ((mag, ("x0",)),), ("t0",)), [x], tuple(x.shape), x.dtype)[0]
    total = reduce(powered, axes, "sum", keepdims=True) if axes else powered
    root = "{0}" if p.ord == 1 else "tl.sqrt({0})"
    out_dtype = to_torch_dtype(p.out_dtype) if p.out_dtype else x.dtype
    shape = reduced_shape(q, tuple(x.shape))
    return run(Program(1, ((root, ("x0",)),), ("t0",)), [total.reshape(shape)], shape,
               out_dtype)


def _norm_sparse(p, ins, aux, rt):
    """The norm of a csr or row_sparse array from its stored values (zeros add nothing)."""
    v: CSR | RowSparse = ins[0]
    data = v.data if v.data.is_floating_point() else v.data.to(torch.float64)
    mag = data.abs() if p.ord == 1 else data * data
    out = sparse_sum(v._replace(data=mag), _reduce_params(p))
    out = out if p.ord == 1 else out.sqrt()
    return (cast_to(out, to_torch_dtype(p.out_dtype) if p.out_dtype else v.dtype),)


def _norm_grad(g, p, ins, outs, og):
    x, dy, y = ins[0], og[0], outs[0]
    if p.out_dtype is not None:
        dy, y = g.op("_backward_Cast", dy, x), g.op("_backward_Cast", y, x)
    keep = {"axis": p.axis, "keepdims": p.keepdims}
    dy = g.op("_reduce_bcast", dy, x, **keep)
    if p.ord == 1:
        return [g.op("elemwise_mul", dy, g.op("sign", x))]
    return [g.op("elemwise_mul", dy, g.op("elemwise_div", x, g.op("_reduce_bcast", y, x,
                                                                   **keep)))]


register(OpDef(
    name="norm", kernel=triton_norm,
    params=(Param("ord", "int", 2, doc="1 (sum of magnitudes) or 2 (Euclidean)."),
            Param("axis", "axis", None, doc="Axis or axes to reduce (None: all)."),
            Param("out_dtype", "dtype_or_none", None,
                  (None, "float16", "float32", "float64", "int32", "int64", "int8"),
                  doc="Output dtype (None: the input's)."),
            Param("keepdims", "bool", False, doc="Keep reduced axes with length 1.")),
    infer_shape=_norm_shape,
    infer_type=lambda p, t: (list(t), [p.out_dtype or t[0]]) if t[0] is not None else None,
    forward=_norm_forward, gradient=_norm_grad,
    storage=Storage(lambda p, s: ["default"] if s[0] != "default" else None, _norm_sparse),
    cases=(Case(((3, 4),)), Case(((3, 4, 2),), {"axis": 1, "keepdims": True}),
           Case(((3, 4, 2),), {"ord": 1, "axis": (0, 2)}, low=0.1),
           Case(((2, 3),), {"ord": 1}, low=-1.0, high=-0.1),
           Case(((2, 3),), {"axis": -1, "out_dtype": "float64"})),
    doc="The L1 or L2 norm over ``axis`` (all axes when None; a full reduction "
        "gives ``(1,)``)."))
