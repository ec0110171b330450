"""MXNet operators named for sparse storage, on the dense arrays symgraph stores.

MXNet registers these for ``csr``/``row_sparse`` arrays and falls back to dense storage
for dense inputs; on dense arrays each is an existing dense operation, so each is a
composite here:

- ``cast_storage(data, stype='default')`` is the identity (``csr``/``row_sparse`` raise:
  sparse storage belongs to the sparse-storage issue);
- ``_square_sum(data, axis, keepdims, exclude)`` is ``sum(square(data))``;
- ``_scatter_plus_scalar``/``_scatter_minus_scalar``/``_scatter_elemwise_div`` are
  ``_plus_scalar``/``_minus_scalar``/``elemwise_div`` (MXNet's versions that keep a sparse
  input's zeros unwritten are the same operation on dense storage);
- ``_contrib_SparseEmbedding`` is ``Embedding`` (its gradient is dense here).

>>> import symgraph as mx
>>> x = mx.nd.array([[1, -2], [3, 0]])
>>> mx.nd._internal._square_sum(x, axis=1).asnumpy()
array([5., 9.], dtype=float32)
>>> mx.nd.cast_storage(x, stype='default').asnumpy().tolist()
[[1.0, -2.0], [3.0, 0.0]]
"""
from __future__ import annotations

from ..attrs import Param
from ..base import unsupported
from .base import Case, OpDef, register
from .elementwise import _SCALAR
from .indexing import _EMBED_PARAMS
from .reduce import _PARAMS as _REDUCE_PARAMS

_STYPE = (Param("stype", "str", None, ("default", "csr", "row_sparse"),
                doc="Output storage type."),)


def _check_stype(p) -> None:
    if p.stype != "default":
        raise unsupported(f"cast_storage(stype={p.stype!r})", "sparse storage (csr, "
                          "row_sparse) is not implemented: symgraph stores every array densely")


register(OpDef(
    name="cast_storage", aliases=("_sparse_cast_storage",), params=_STYPE, check=_check_stype,
    decompose=lambda b, p, ins: [b.op("_copy", ins[0])],
    cases=(Case(((3, 4),), {"stype": "default"}),),
    doc="Cast to storage type ``stype``; only ``'default'`` (dense) is supported."))

register(OpDef(
    name="_square_sum", params=_REDUCE_PARAMS,
    decompose=lambda b, p, ins: [b.op("sum", b.op("square", ins[0]), axis=p.axis,
                                      keepdims=p.keepdims, exclude=p.exclude)],
    cases=(Case(((3, 4),), {"axis": 1}), Case(((2, 3, 2),), {"keepdims": True})),
    doc="The sum of squares of ``data`` over ``axis``."))


def _scalar_form(op: str):
    return lambda b, p, ins: [b.op(op, ins[0], scalar=p.scalar, is_int=p.is_int)]


for _name, _dense in (("_scatter_plus_scalar", "_plus_scalar"),
                      ("_scatter_minus_scalar", "_minus_scalar")):
    register(OpDef(name=_name, params=_SCALAR, decompose=_scalar_form(_dense),
                   cases=(Case(((3, 4),), {"scalar": 1.5, "is_int": False}),),
                   doc=f"``{_dense}`` (MXNet's sparse form; the same on dense storage)."))

register(OpDef(
    name="_scatter_elemwise_div", inputs=("lhs", "rhs"),
    decompose=lambda b, p, ins: [b.op("elemwise_div", ins[0], ins[1])],
    cases=(Case(((3, 4), (3, 4)), low=0.5, high=2.0),),
    doc="``elemwise_div`` (MXNet's sparse form; the same on dense storage)."))

register(OpDef(
    name="_contrib_SparseEmbedding", inputs=("data", "weight"), params=_EMBED_PARAMS,
    decompose=lambda b, p, ins: [b.op("Embedding", ins[0], ins[1], input_dim=p.input_dim,
                                      output_dim=p.output_dim, dtype=p.dtype)],
    cases=(Case(((2, 3), (5, 4)), {"input_dim": 5, "output_dim": 4}, ints={0: 5},
                no_grad_inputs=(0,)),),
    doc="``Embedding`` (MXNet's deprecated sparse-gradient form; the gradient is dense)."))
