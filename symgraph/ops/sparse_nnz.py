"""``_contrib_getnnz`` (``mx.nd.contrib.getnnz``): the number of stored values of a csr matrix,
explicit zeros included, in all (``axis=None``, shape ``(1,)``) or per row (``axis=1``), int64.

MXNet implements it for csr input only and refuses a dense input; here a dense input
counts its nonzero entries (the values a cast to csr would store), so the op has a dense
forward like every other; ``axis=0`` is refused as in MXNet.

>>> import symgraph as mx
>>> a = mx.nd.sparse.csr_matrix(([1., 0., 3.], [1, 2, 0], [0, 2, 2, 3]), shape=(3, 3))
>>> mx.nd.contrib.getnnz(a).asnumpy().tolist(), mx.nd.contrib.getnnz(a, axis=1).asnumpy().tolist()
([3], [2, 0, 1])
>>> mx.nd.contrib.getnnz(a, axis=0)
Traceback (most recent call last):
...
symgraph.base.AttrError: operator _contrib_getnnz: getnnz with axis = 0 is not supported yet
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import AttrError
from ..sparse.formats import CSR
from .base import Case, OpDef, Storage, register

_NAME = "_contrib_getnnz"


def _check_axis(p) -> None:
    if p.axis not in (None, 0, 1):
        raise AttrError(f"operator {_NAME}: unexpected value for axis ({p.axis}); candidates "
                        "are None, 0 and 1")
    if p.axis == 0:
        raise AttrError(f"operator {_NAME}: getnnz with axis = 0 is not supported yet")


def _shape(p, shapes):
    _check_axis(p)
    x = shapes[0]
    if len(x) != 2:
        return None
    return shapes, [(1,) if p.axis is None else (x[0],)]


def _count(p, ins, aux, rt):
    v: CSR = ins[0]
    if p.axis is None:
        return (torch.tensor([v.indices.numel()], dtype=torch.int64, device=v.device),)
    return ((v.indptr[1:] - v.indptr[:-1]).to(torch.int64),)


def _dense_forward(p, ins, aux, rt):
    nonzero = ins[0].ne(0)
    if p.axis is None:
        return (nonzero.sum().reshape(1).to(torch.int64),)
    return (nonzero.sum(1).to(torch.int64),)


register(OpDef(
    name=_NAME, forward=_dense_forward, infer_shape=_shape,
    params=(Param("axis", "int_or_none", None,
                  doc="None: the values of the whole matrix; 1: of each row."),),
    infer_type=lambda p, t: (list(t), ["int64"]),
    storage=Storage(lambda p, s: ["default"] if s[0] == "csr" else None, _count),
    differentiable=False,
    cases=(Case(((3, 4),), grad=False), Case(((5, 2),), {"axis": 1}, grad=False)),
    doc="Number of stored values of a csr matrix (explicit zeros included), in all or per "
        "row, as int64."))
