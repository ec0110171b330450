"""``_contrib_boolean_mask`` (``contrib.boolean_mask``): the slices of ``data`` along
``axis`` whose ``index`` entry is nonzero.

The output's length along ``axis`` is the number of nonzero entries, so its shape depends
on values: shape inference leaves it unknown (as MXNet does) and a bound graph rejects the
op at bind. ``mx.nd.contrib.boolean_mask`` runs it imperatively: the kept positions are
read on the host (MXNet synchronises there too) and the op is ``take`` of those positions,
whose gradient scatters the output gradient back into the kept slices, so it works under
``autograd.record()``; ``take`` is a Triton kernel on the Triton backend. MXNet supports
``axis=0`` only; symgraph takes any axis.

>>> import symgraph as mx
>>> data = mx.nd.array([[1, 2], [3, 4], [5, 6]])
>>> mx.nd.contrib.boolean_mask(data, mx.nd.array([0, 1, 1])).asnumpy()
array([[3., 4.],
       [5., 6.]], dtype=float32)
>>> mx.nd.contrib.boolean_mask(data, mx.nd.array([1, 0]))  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
ShapeError: _contrib_boolean_mask: index of shape (2,) must be 1-D with data.shape[0] = 3 ...
>>> d, i = mx.sym.Variable('d'), mx.sym.Variable('i')
>>> mx.sym.contrib.boolean_mask(d, i).infer_shape_partial(d=(3, 2), i=(3,))[1]
[()]
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import ShapeError
from .base import OpDef, Special, register
from .indexing import value_type
from .join_split import norm_axis


def _check(p, data: tuple, index: tuple) -> int:
    """The axis made non-negative, once ``index`` is 1-D with data's length along it."""
    axis = norm_axis(p.axis, len(data), "_contrib_boolean_mask")
    if len(index) != 1 or (index[0] and data[axis] and index[0] != data[axis]):
        raise ShapeError(f"_contrib_boolean_mask: index of shape {tuple(index)} must be 1-D "
                         f"with data.shape[{axis}] = {data[axis]} entries (data shape "
                         f"{tuple(data)})")
    return axis


def _shape(p, shapes):
    data, index = shapes
    if data and index:
        _check(p, data, index)
    return None  # the output's length is the number of nonzero entries of index


def _positions(index: torch.Tensor) -> torch.Tensor:
    return torch.nonzero(index.reshape(-1) != 0).reshape(-1)


def _forward(p, ins, aux, rt):
    data, index = ins
    axis = _check(p, tuple(data.shape), tuple(index.shape))
    return (data.index_select(axis, _positions(index)),)


def _eager(b, p, ins):
    """``take`` of the nonzero positions (recorded under autograd: take's gradient)."""
    data, index = ins
    axis = _check(p, tuple(data.shape), tuple(index.shape))
    positions = _positions(b.value(index))
    if positions.numel() == 0:  # nothing kept: an empty result, zero gradient
        empty = data.shape[:axis] + (0,) + data.shape[axis + 1:]
        return [b.constant(b.value(data).new_empty(empty), data)]
    return [b.op("take", data, b.array(positions.to(torch.int32)), axis=axis)]


register(OpDef(
    name="_contrib_boolean_mask", inputs=("data", "index"),
    params=(Param("axis", "int", 0, doc="The axis the mask selects along."),),
    infer_shape=_shape, infer_type=value_type((0,)), forward=_forward,
    special=Special(eager=_eager),
    differentiable=False,  # differentiated imperatively through take (see the module doc)
    doc="""The slices ``data[..., i, ...]`` (along ``axis``) with ``index[i] != 0``;
    ``index`` is 1-D with ``data.shape[axis]`` entries. Imperative only: the output shape
    depends on values."""))
