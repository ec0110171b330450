"""ravel_multi_index / unravel_index: multi-indices into an array of ``shape`` to flat
indices and back (``numpy.ravel_multi_index`` / ``numpy.unravel_index``), in the input's
dtype. ``data`` is 2-D for ravel; unravel reads the first ``data.shape[0]`` elements.
Values are truncated to integers; out-of-range indices are not checked (as MXNet).
Both have a zero gradient.

>>> import symgraph as mx
>>> mx.nd.ravel_multi_index(mx.nd.array([[3, 6, 6], [4, 5, 1]]), shape=(7, 6)).asnumpy()
array([22., 41., 37.], dtype=float32)
>>> mx.nd.unravel_index(mx.nd.array([22, 41, 37]), shape=(7, 6)).asnumpy()
array([[3., 6., 6.],
       [4., 5., 1.]], dtype=float32)
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, merge_shape, register


def _check(name: str, p) -> None:
    if not p.shape:
        raise ShapeError(f"{name}: Empty shape parameter for {name.split('_')[0]} operator")


def _ravel_shape(p, shapes):
    _check("ravel_multi_index", p)
    data = shapes[0]
    if not data:
        return None
    if len(data) != 2:
        raise ShapeError(f"ravel_multi_index: Input to ravel operator must be two-dimensional, "
                         f"got data of shape {tuple(data)}")
    data = merge_shape(data, (len(p.shape),) + tuple(data[1:]), "input 'data' (its first "
                       f"dimension is the number of dimensions of shape {p.shape})")
    return [data], [tuple(data[1:])]


def _unravel_shape(p, shapes):
    _check("unravel_index", p)
    data = shapes[0]
    if not data:
        return None
    return shapes, [(len(p.shape), data[0])]


def _leading(data: torch.Tensor) -> torch.Tensor:
    """The flat indices unravel reads: the first ``data.shape[0]`` elements (as MXNet)."""
    return data.reshape(-1)[:data.shape[0]]


def _ravel_forward(p, ins, aux, rt):
    multi = ins[0]
    acc = torch.zeros(tuple(multi.shape[1:]), dtype=torch.int64, device=multi.device)
    for j, size in enumerate(p.shape):
        acc = acc * size + multi[j].to(torch.int64)
    return (acc.to(multi.dtype),)


def _unravel_forward(p, ins, aux, rt):
    idx = _leading(ins[0]).to(torch.int64)
    rows = []
    for size in reversed(p.shape[1:]):
        q = torch.div(idx, size, rounding_mode="trunc")
        rows.append(idx - q * size)
        idx = q
    rows.append(idx)
    return (torch.stack(rows[::-1]).to(ins[0].dtype),)


def triton_ravel(p, ins, aux, rt):
    """ravel_multi_index as one Triton kernel."""
    from ..kernels.index import ravel
    return (ravel(ins[0], tuple(p.shape)),)


def triton_unravel(p, ins, aux, rt):
    """unravel_index as one Triton kernel."""
    from ..kernels.index import unravel
    return (unravel(_leading(ins[0]), tuple(p.shape)),)


_SHAPE = (Param("shape", "shape", (), doc="Shape of the array the multi-indices apply to."),)

register(OpDef(
    name="_ravel_multi_index", aliases=("ravel_multi_index",), params=_SHAPE,
    infer_shape=_ravel_shape, forward=_ravel_forward, kernel=triton_ravel,
    gradient=lambda g, p, ins, outs, og: [g.zeros(ins[0])],
    cases=(Case(((2, 5),), {"shape": (4, 3)}, ints={0: 3}, grad=False),
           Case(((3, 7),), {"shape": (2, 3, 4)}, ints={0: 2}, grad=False)),
    doc="""Flat indices of the multi-indices ``data`` (shape ``(len(shape), ...)``) into an
    array of ``shape``."""))

register(OpDef(
    name="_unravel_index", aliases=("unravel_index",), params=_SHAPE,
    infer_shape=_unravel_shape, forward=_unravel_forward, kernel=triton_unravel,
    gradient=lambda g, p, ins, outs, og: [g.zeros(ins[0])],
    cases=(Case(((5,),), {"shape": (4, 3)}, ints={0: 12}, grad=False),
           Case(((3, 2),), {"shape": (2, 3, 4)}, ints={0: 24}, grad=False)),
    doc="""The multi-indices (shape ``(len(shape), n)``) of the flat indices ``data`` in an
    array of ``shape``; n is data's first dimension (MXNet reads that many elements)."""))
