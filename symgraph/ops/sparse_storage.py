"""Operators about storage: ``cast_storage``, ``_sparse_retain``, ``_square_sum`` and the
``_scatter_*`` forms, each with its dense forward and its kernels on sparse storage.

- ``cast_storage(data, stype)``: the same values in storage ``stype``;
- ``_sparse_retain(data, indices)``: only the rows ``indices`` of a row_sparse array (its
  gradient keeps the same rows of the head gradient, row_sparse);
- ``_square_sum(data, axis, keepdims)``: ``sum(square(data))``, row_sparse in and out for
  ``axis=1, keepdims=True`` (as MXNet);
- ``_scatter_plus_scalar``/``_scatter_minus_scalar``/``_scatter_elemwise_div``: on sparse
  input they touch only the stored values (the zeros stay unstored); on dense input they are
  the dense operations;
- ``_contrib_SparseEmbedding``: ``Embedding`` with a row_sparse weight gradient.

>>> import symgraph as mx
>>> x = mx.nd.array([[1, -2], [0, 0], [3, 0]])
>>> mx.nd._internal._square_sum(x, axis=1).asnumpy()
array([5., 0., 9.], dtype=float32)
>>> rsp = mx.nd.cast_storage(x, stype='row_sparse')
>>> rsp.indices.asnumpy().tolist()
[0, 2]
>>> mx.nd.sparse.retain(rsp, mx.nd.array([2])).asnumpy().tolist()
[[0.0, 0.0], [0.0, 0.0], [3.0, 0.0]]
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import ShapeError
from ..sparse import formats
from ..sparse.formats import RowSparse
from .base import Case, OpDef, Storage, elemwise_shape, get_op, register, unary_shape
from .elementwise import _SCALAR
from .indexing import _EMBED_PARAMS
from .reduce import _PARAMS as _REDUCE_PARAMS
from .reduce import reduce_axes, reduced_shape, sparse_sum

RSP, CSR_S, DNS = "row_sparse", "csr", "default"

# ------------------------------------------------------------------ cast_storage

_STYPE = (Param("stype", "str", None, ("default", "csr", "row_sparse"),
                doc="Output storage type."),)


def _cast_forward(p, ins, aux, rt):
    return (ins[0].clone(),)


def _cast_sparse(p, ins, aux, rt):
    value = ins[0]
    out = formats.cast(value, p.stype)
    return (formats.clone(out) if out is value else out,)


def _cast_storage_rule(p, stypes):
    if p.stype == CSR_S and stypes[0] == RSP or p.stype == RSP and stypes[0] == CSR_S:
        raise ShapeError(f"cast_storage from {stypes[0]} to {p.stype} is not supported")
    return [p.stype]


def _cast_shape(p, shapes):
    shape = shapes[0]
    if shape and p.stype == CSR_S and len(shape) != 2:
        raise ShapeError(f"cast_storage to csr needs a 2-D array, got shape {tuple(shape)}")
    return unary_shape(p, shapes)


register(OpDef(
    name="cast_storage", aliases=("_sparse_cast_storage",), params=_STYPE,
    infer_shape=_cast_shape, forward=_cast_forward,
    expr=lambda p: "{0}" if p.stype == "default" else None,  # dense to dense: a copy
    storage=Storage(_cast_storage_rule, _cast_sparse),
    gradient=lambda g, p, ins, outs, og: [g.op("_copy", og[0])],
    cases=(Case(((3, 4),), {"stype": "default"}), Case(((3, 4),), {"stype": "csr"}),
           Case(((3, 4, 2),), {"stype": "row_sparse"})),
    doc="The same values in storage type ``stype`` (``default``, ``row_sparse``, ``csr``)."))

# ------------------------------------------------------------------ sparse_retain


def _retain_dense(p, ins, aux, rt):
    data, idx = ins
    out = torch.zeros_like(data)
    rows = idx.to(torch.int64).reshape(-1)
    out[rows] = data[rows]
    return (out,)


def _retain_sparse(p, ins, aux, rt):
    data, idx = ins
    if isinstance(data, RowSparse):
        return (formats.retain(data, idx),)
    return (formats.gather_rows(formats.to_dense(data), idx),)


def _retain_shape(p, shapes):
    data, idx = shapes
    if idx and len(idx) != 1:
        raise ShapeError(f"sparse_retain: indices must be 1-D, got shape {tuple(idx)}")
    return ([data, idx], [data]) if data else None


register(OpDef(
    name="_sparse_retain", aliases=("sparse_retain",), inputs=("data", "indices"),
    infer_shape=_retain_shape, infer_type=lambda p, t: (t, [t[0]]) if t[0] else None,
    forward=_retain_dense,
    storage=Storage(lambda p, s: [RSP] if s[0] == RSP and s[1] == DNS else None,
                    _retain_sparse),
    gradient=lambda g, p, ins, outs, og: [g.op("_backward_sparse_retain", og[0], ins[1]), None],
    cases=(Case(((5, 3), (2,)), ints={1: 5}, no_grad_inputs=(1,)),),
    doc="Only the rows ``indices`` of ``data`` (row_sparse in, row_sparse out)."))

register(OpDef(
    name="_backward_sparse_retain", inputs=("ograd", "indices"), hidden=True,
    infer_shape=_retain_shape, infer_type=lambda p, t: (t, [t[0]]) if t[0] else None,
    forward=_retain_dense,
    storage=Storage(lambda p, s: [RSP] if s[0] in (DNS, RSP) and s[1] == DNS else None,
                    _retain_sparse),
    gradient=lambda g, p, ins, outs, og: [g.op("_sparse_retain", og[0], ins[1]), None],
    cases=(Case(((5, 3), (2,)), ints={1: 5}, no_grad_inputs=(1,)),),
    doc="Gradient of ``_sparse_retain``: the head gradient's rows ``indices``, row_sparse."))

# ------------------------------------------------------------------ square_sum


def _square_sum_rule(p, stypes):
    if stypes[0] != RSP:
        return None
    return [RSP] if _row_wise(p, 2) and p.keepdims else [DNS]


def _row_wise(p, ndim: int) -> bool:
    return reduce_axes(p, ndim) == (1,)


def _square_sum_forward(p, ins, aux, rt):
    x = ins[0]
    axes = reduce_axes(p, x.dim())
    sq = x * x
    out = sq.sum(dim=axes, keepdim=True) if axes else sq
    return (out.reshape(reduced_shape(p, tuple(x.shape))),)


def _square_sum_sparse(p, ins, aux, rt):
    v: RowSparse = ins[0]
    squared = v._replace(data=v.data * v.data)
    if len(v.shape) == 2 and _row_wise(p, 2) and p.keepdims:  # the stored rows stay stored
        return (RowSparse(squared.data.sum(1, keepdim=True), v.indices, (v.shape[0], 1)),)
    return (sparse_sum(squared, p),)


def _kept(p, shape: tuple) -> tuple:
    """The reduced shape with the reduced axes kept (length 1)."""
    return reduced_shape(type(p)({**p, "keepdims": True}), tuple(shape))


def _backward_square_sum(p, ins, aux, rt):
    dy, x = ins
    return (2 * x * dy.reshape(_kept(p, tuple(x.shape))),)


def _backward_square_sum_rows(p, ins, aux, rt):
    """The gradient on the rows ``data`` stores: ``2 * data * ograd`` (row_sparse)."""
    dy, x = formats.to_dense(ins[0]), ins[1]
    kept = _kept(p, tuple(x.shape))
    dy = dy.reshape(kept)
    if kept[0] == x.shape[0]:  # axis 0 not reduced: the ograd rows of the stored rows
        dy = dy.index_select(0, x.indices)
    return (RowSparse(2 * x.data * dy, x.indices, x.shape),)


_SQUARE = ("({0} * {0})", ("x0",))


def triton_square_sum(p, ins, aux, rt):
    """The square as a generated kernel, then the Triton reduction."""
    from ..kernels.elementwise import Program, run
    from ..kernels.reduce import reduce
    x = ins[0]
    axes = reduce_axes(p, x.dim())
    if not axes or not x.dtype.is_floating_point or x.numel() == 0:
        return _square_sum_forward(p, ins, aux, rt)
    (sq,) = run(Program(1, (_SQUARE,), ("t0",)), [x], tuple(x.shape), x.dtype)
    return (reduce(sq, axes, "sum", p.keepdims).reshape(reduced_shape(p, tuple(x.shape))),)


def triton_backward_square_sum(p, ins, aux, rt):
    """``2 * data * ograd`` (ograd broadcast back) as one generated kernel."""
    from ..kernels.elementwise import Program, run
    dy, x = ins
    prog = Program(2, (("(2.0 * {0} * {1})", ("x0", "x1")),), ("t0",))
    return run(prog, [dy.reshape(_kept(p, tuple(x.shape))), x], tuple(x.shape), x.dtype)


def _square_sum_grad(g, p, ins, outs, og):
    return [g.op("_backward_square_sum", og[0], ins[0], axis=p.axis, keepdims=p.keepdims,
                 exclude=p.exclude)]


register(OpDef(
    name="_square_sum", params=_REDUCE_PARAMS, forward=_square_sum_forward,
    kernel=triton_square_sum,
    infer_shape=lambda p, s: (s, [reduced_shape(p, s[0])]) if s[0] else None,
    storage=Storage(_square_sum_rule, _square_sum_sparse), gradient=_square_sum_grad,
    cases=(Case(((3, 4),), {"axis": 1}), Case(((2, 3, 2),), {"keepdims": True})),
    doc="The sum of squares of ``data`` over ``axis`` (row_sparse kept for axis=1, "
        "keepdims=True)."))

register(OpDef(
    name="_backward_square_sum", params=_REDUCE_PARAMS, inputs=("ograd", "data"),
    hidden=True, forward=_backward_square_sum, kernel=triton_backward_square_sum,
    infer_shape=lambda p, s: (s, [s[1]]) if s[1] else None,
    storage=Storage(lambda p, s: [RSP] if s[1] == RSP else None, _backward_square_sum_rows),
    cases=(Case(((3, 1), (3, 4)), {"axis": 1, "keepdims": True}, grad=False),),
    doc="Gradient of ``_square_sum``: ``2 * data * ograd`` broadcast back (row_sparse for "
        "row_sparse data, on its stored rows)."))

# ------------------------------------------------------------------ scatter forms


def _values_only(dense_op):
    """On sparse input: ``dense_op`` on the stored values only (zeros stay unstored)."""
    def forward(p, ins, aux, rt):
        v = ins[0]
        return (v._replace(data=dense_op(p, v.data)),)
    return forward


def _dense_as(name: str) -> dict:
    """The dense forward, dtype rule and gradient of op ``name`` (looked up when called):
    on dense storage a scatter form is that op. The forms are primitives, not compositions,
    so bound graphs keep their storage rule."""
    return {"forward": lambda p, ins, aux, rt: get_op(name).forward(p, ins, aux, rt),
            "infer_type": lambda p, t: get_op(name).infer_type(p, t),
            "gradient": lambda g, p, ins, outs, og: get_op(name).gradient(g, p, ins, outs, og),
            "expr": lambda p: get_op(name).triton_expr(p)}


_SPARSE_IN = Storage(lambda p, s: [s[0]] if s[0] in (RSP, CSR_S) else None)

register(OpDef(name="_scatter_plus_scalar", params=_SCALAR, infer_shape=unary_shape,
               storage=Storage(_SPARSE_IN.infer, _values_only(lambda p, d: d + p.scalar)),
               cases=(Case(((3, 4),), {"scalar": 1.5, "is_int": False}),),
               doc="``_plus_scalar`` on the stored values of a sparse array (zeros stay).",
               **_dense_as("_plus_scalar")))
register(OpDef(name="_scatter_minus_scalar", params=_SCALAR, infer_shape=unary_shape,
               storage=Storage(_SPARSE_IN.infer, _values_only(lambda p, d: d - p.scalar)),
               cases=(Case(((3, 4),), {"scalar": 1.5, "is_int": False}),),
               doc="``_minus_scalar`` on the stored values of a sparse array (zeros stay).",
               **_dense_as("_minus_scalar")))


def _scatter_div_sparse(p, ins, aux, rt):
    lhs, rhs = ins
    rhs = formats.to_dense(rhs)
    if isinstance(lhs, RowSparse):
        return (lhs._replace(data=lhs.data / rhs.index_select(0, lhs.indices)),)
    rows = formats.csr_rows(lhs)
    return (lhs._replace(data=lhs.data / rhs[rows, lhs.indices]),)


register(OpDef(
    name="_scatter_elemwise_div", inputs=("lhs", "rhs"), infer_shape=elemwise_shape,
    storage=Storage(lambda p, s: [s[0]] if s[0] in (RSP, CSR_S) else None, _scatter_div_sparse),
    cases=(Case(((3, 4), (3, 4)), low=0.5, high=2.0),),
    doc="``elemwise_div`` of a sparse ``lhs`` on its stored values only (zeros stay).",
    **_dense_as("elemwise_div")))

# ------------------------------------------------------------------ SparseEmbedding

_SPARSE_EMBED_PARAMS = (
    *_EMBED_PARAMS[:2],
    Param("dtype", "dtype", "float32", ("float16", "float32", "float64", "int32", "uint8"),
          doc="Weight dtype when not given."),
    Param("deterministic", "bool", False,
          doc="Sum gradient rows in a fixed order (accepted; the CPU sum always is)."))

register(OpDef(
    name="_contrib_SparseEmbedding", inputs=("data", "weight"), params=_SPARSE_EMBED_PARAMS,
    decompose=lambda b, p, ins: [b.op("Embedding", ins[0], ins[1], input_dim=p.input_dim,
                                      output_dim=p.output_dim, dtype=p.dtype, sparse_grad=True)],
    cases=(Case(((2, 3), (5, 4)), {"input_dim": 5, "output_dim": 4}, ints={0: 5},
                no_grad_inputs=(0,)),),
    doc="``Embedding`` with a row_sparse weight gradient (MXNet's deprecated sparse form)."))
