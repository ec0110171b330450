"""Scatters: ``scatter_nd``, ``_scatter_set_nd``, ``_contrib_index_copy``, and MXNet's legacy
row ops ``batch_take``, ``fill_element_0index`` and ``_onehot_encode``.

``scatter_nd`` writes ``data[y]`` at ``indices[:, y]`` of zeros of ``shape`` (the inverse of
``gather_nd``; of repeated index tuples one value wins, as MXNet leaves it undefined);
``_scatter_set_nd`` writes into a copy of ``lhs`` instead. Both are primitives on the
gather_nd kernel's scatter mode. ``index_copy`` (rows of ``new_tensor`` copied over rows of
``old_tensor``) is a composite of ``_scatter_set_nd``; ``batch_take`` runs the pick kernel,
``fill_element_0index`` and ``_onehot_encode`` are composites of ``pick``'s gradient.

>>> import symgraph as mx
>>> idx = mx.nd.array([[1, 1, 0], [0, 1, 0]])
>>> mx.nd.scatter_nd(mx.nd.array([2, 3, 0]), idx, shape=(2, 2)).asnumpy()
array([[0., 0.],
       [2., 3.]], dtype=float32)
>>> old, new = mx.nd.zeros((3, 2)), mx.nd.array([[1, 2], [3, 4]])
>>> mx.nd.contrib.index_copy(old, mx.nd.array([2, 0]), new).asnumpy()
array([[3., 4.],
       [0., 0.],
       [1., 2.]], dtype=float32)
"""
from __future__ import annotations

import math

import torch

from ..attrs import Param
from ..base import ShapeError
from .base import Case, OpDef, merge_shape, register
from .indexing import _check_nd_bounds, _nd_index, value_type


def _data_shape(name: str, shape: tuple, indices: tuple) -> tuple:
    if len(indices) < 2:
        raise ShapeError(f"{name}: indices must have at least 2 dimensions, got shape "
                         f"{tuple(indices)}")
    if indices[0] > len(shape):
        raise ShapeError(f"{name}: indices of shape {tuple(indices)} index more dimensions "
                         f"than the output shape {tuple(shape)} has")
    return tuple(indices[1:]) + tuple(shape[indices[0]:])


def _scatter_shape(p, shapes):
    if not p.shape:
        raise ShapeError("scatter_nd: the shape parameter must be given")
    data, indices = shapes
    if not indices:
        return None
    data = merge_shape(data, _data_shape("scatter_nd", p.shape, indices), "input 'data'")
    return [data, indices], [tuple(p.shape)]


def _scatter_forward(p, ins, aux, rt):
    data, indices = ins
    out = torch.zeros(tuple(p.shape), dtype=data.dtype, device=data.device)
    _check_nd_bounds(out, indices, rt)
    return (out.index_put_(_nd_index(out, indices), data),)


def triton_scatter_nd(p, ins, aux, rt):
    """scatter_nd as a Triton zero fill and one scatter."""
    from ..kernels.index import scatter_nd
    _check_nd_bounds(torch.empty(tuple(p.shape), device="meta"), ins[1], rt)
    return (scatter_nd(ins[0], ins[1], tuple(p.shape)),)


_SHAPE = Param("shape", "shape", (), doc="Shape of the output.")

register(OpDef(
    name="scatter_nd", inputs=("data", "indices"), params=(_SHAPE,),
    infer_shape=_scatter_shape, infer_type=value_type((0,)), forward=_scatter_forward,
    kernel=triton_scatter_nd,
    gradient=lambda g, p, ins, outs, og: [g.op("gather_nd", og[0], ins[1]), None],
    cases=(Case(((5, 2), (2, 5)), {"shape": (3, 4, 2)}, ints={1: 3}, grad=False),
           Case(((1, 2), (1, 1)), {"shape": (4, 2)}, ints={1: 4})),
    doc="""Zeros of ``shape`` with ``data[y]`` written at ``indices[:, y]`` (``indices`` of
    shape ``(M, Y...)``, ``data`` of shape ``Y... + shape[M:]``); the inverse of
    ``gather_nd``. Of repeated index tuples one value wins."""))


def _set_shape(p, shapes):
    lhs, rhs, indices = shapes
    if p.shape:
        lhs = merge_shape(lhs, tuple(p.shape), "input 'lhs'")
    if not lhs or not indices:
        return None
    rhs = merge_shape(rhs, _data_shape("_scatter_set_nd", lhs, indices), "input 'rhs'")
    return [lhs, rhs, indices], [lhs]


def _set_forward(p, ins, aux, rt):
    lhs, rhs, indices = ins
    _check_nd_bounds(lhs, indices, rt)
    return (lhs.clone().index_put_(_nd_index(lhs, indices), rhs),)


def triton_scatter_set_nd(p, ins, aux, rt):
    """_scatter_set_nd as a Triton copy of lhs and one scatter."""
    from ..kernels.index import scatter_nd
    lhs, rhs, indices = ins
    _check_nd_bounds(lhs, indices, rt)
    return (scatter_nd(rhs, indices, lhs),)


def _set_gradient(g, p, ins, outs, og):
    kept = g.op("_scatter_set_nd", og[0], g.op("zeros_like", ins[1]), ins[2], shape=p.shape)
    return [kept, g.op("gather_nd", og[0], ins[2]), None]


register(OpDef(
    name="_scatter_set_nd", inputs=("lhs", "rhs", "indices"),
    params=(Param("shape", "shape", (), doc="Shape of lhs and the output (default: lhs's)."),),
    infer_shape=_set_shape, infer_type=value_type((0, 1)), forward=_set_forward,
    kernel=triton_scatter_set_nd, gradient=_set_gradient,
    cases=(Case(((3, 4), (2,), (2, 2)), {"shape": (3, 4)}, ints={2: 3}, grad=False),
           Case(((4, 2), (3, 2), (1, 3)), ints={2: 4}, grad=False),
           Case(((5, 3), (1, 3), (1, 1)), {}, ints={2: 5})),
    doc="""A copy of ``lhs`` with ``rhs[y]`` written at ``indices[:, y]`` (``scatter_nd``
    that keeps the elements not indexed)."""))


def _index_copy(b, p, ins):
    old, index, new = ins
    rows = b.op("expand_dims", index, axis=0)
    return [b.op("_scatter_set_nd", old, new, rows)]


register(OpDef(
    name="_contrib_index_copy",
    inputs=("old_tensor", "index_vector", "new_tensor"), decompose=_index_copy,
    cases=(Case(((5, 3), (1,), (1, 3)), ints={1: 5}),
           Case(((4, 2, 3), (1,), (1, 2, 3)), ints={1: 4})),
    doc="""``old_tensor`` with its rows ``index_vector[i]`` replaced by ``new_tensor[i]``
    (``new_tensor`` has ``old_tensor``'s shape with ``len(index_vector)`` rows)."""))


def _batch_take_shape(p, shapes):
    a, indices = shapes
    if not a or not indices:
        return None
    if len(a) < 2:
        raise ShapeError(f"batch_take: Data array must have at least 2 dimensional, got shape "
                         f"{tuple(a)}")
    rows = math.prod(a) // a[-1] if a[-1] else 0
    if rows and math.prod(indices) and math.prod(indices) != rows:
        raise ShapeError("batch_take: Index array's size must be the same as data array's "
                         f"size excluding the first dimension: a {tuple(a)}, indices "
                         f"{tuple(indices)}")
    return shapes, [tuple(indices)]


def _batch_take_forward(p, ins, aux, rt):
    a, indices = ins
    rows = a.reshape(-1, a.shape[-1])
    j = indices.reshape(-1, 1).to(torch.int64).clamp(0, a.shape[-1] - 1)
    return (torch.gather(rows, 1, j).reshape(indices.shape),)


def triton_batch_take(p, ins, aux, rt):
    """batch_take as the pick kernel over the last axis (Triton)."""
    from ..kernels.index import pick
    a, indices = ins
    out = pick(a, indices.reshape(a.shape[:-1]), a.dim() - 1, "clip")
    return (out.reshape(indices.shape),)


register(OpDef(
    name="batch_take", differentiable=False, inputs=("a", "indices"), infer_shape=_batch_take_shape,
    infer_type=value_type((0,)), forward=_batch_take_forward, kernel=triton_batch_take,
    cases=(Case(((4, 3), (4,)), ints={1: 5}), Case(((2, 3, 5), (3, 2)), ints={1: 5})),
    doc="""One element of each last-axis row of ``a``: ``out[i] = a[i, indices[i]]`` over
    the rows, indices clipped (deprecated in MXNet: ``pick`` does the same). No gradient,
    as in MXNet."""))


def _fill_element(b, p, ins):
    lhs, mhs, rhs = ins
    hit = b.op("_backward_pick", b.op("ones_like", mhs), lhs, rhs, axis=1)
    values = b.op("broadcast_like", b.op("expand_dims", mhs, axis=1), lhs)
    return [b.op("where", hit, values, lhs)]


register(OpDef(
    name="fill_element_0index", inputs=("lhs", "mhs", "rhs"), decompose=_fill_element,
    cases=(Case(((3, 4), (3,), (3,)), ints={2: 4}),),
    doc="""``lhs`` (2-D) with ``out[i, rhs[i]] = mhs[i]`` in each row."""))


def _onehot_encode(b, p, ins):
    indices, like = ins
    ones = b.op("ones_like", b.op("Cast", indices, dtype="float32"))
    hot = b.op("_backward_pick", ones, b.op("Cast", like, dtype="float32"), indices, axis=1)
    return [b.op("BlockGrad", hot)]


register(OpDef(
    name="_onehot_encode", inputs=("lhs", "rhs"), decompose=_onehot_encode,
    cases=(Case(((3,), (3, 4)), ints={0: 4}, grad=False),),
    doc="""One-hot rows (float32) shaped like ``rhs``: 1 at column ``lhs[i]`` of row i."""))
