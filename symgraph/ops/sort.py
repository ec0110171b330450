"""Sorting: ``topk``, ``sort`` and ``argsort`` along one axis (``axis=None``: the flattened
array), with MXNet 1.9.1's parameters and outputs.

``topk`` is the primitive (a stable bitonic sort kernel, ``kernels/sort.py``); ``sort`` and
``argsort`` are composites of it. Equal values keep their original order in both directions
(MXNet leaves the order of ties unspecified). ``ret_typ='value'`` and ``sort`` have a hidden
second output, the int32 indices their gradient scatters the head gradient back through;
``'indices'`` and ``'mask'`` outputs get a zero gradient, as in MXNet.

>>> import symgraph as mx
>>> x = mx.nd.array([[0.3, 0.2, 0.4], [0.1, 0.3, 0.2]])
>>> mx.nd.topk(x, k=2, ret_typ='value').asnumpy()
array([[0.4, 0.3],
       [0.3, 0.2]], dtype=float32)
>>> mx.nd.argsort(x, axis=0).asnumpy()
array([[1., 0., 1.],
       [0., 1., 0.]], dtype=float32)
>>> mx.nd.topk(x, k=4)
... # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
ShapeError: topk: k must be smaller than 3, get k = 4
"""
from __future__ import annotations

import math

import torch

from ..attrs import Param
from ..base import ShapeError, to_torch_dtype
from .base import Case, OpDef, register

_RET = ("value", "indices", "mask", "both")
_INDEX_DTYPES = ("uint8", "int32", "int64", "float16", "float32", "float64")


def _dims(p, shape: tuple) -> tuple[int, int, int]:
    """(axis of the sorted view, its length n, k) for data of ``shape``."""
    if p.axis is None:
        axis, n = 0, math.prod(shape)
    else:
        if not -len(shape) <= p.axis < len(shape):
            raise ShapeError(f"topk: axis {p.axis} is out of range for data of shape "
                             f"{tuple(shape)}")
        axis = p.axis % len(shape)
        n = shape[axis]
    k = p.k if p.k >= 1 else n
    if n and k > n:
        raise ShapeError(f"topk: k must be smaller than {n}, get k = {k} (data of shape "
                         f"{tuple(shape)}, axis {p.axis})")
    return axis, n, k


def _view(p, shape: tuple) -> tuple:
    """The shape sorted along: the data's, or flat for ``axis=None``."""
    return (math.prod(shape),) if p.axis is None else tuple(shape)


def _two(p) -> bool:
    return p.ret_typ in ("value", "both")


def _shape(p, shapes):
    x = shapes[0]
    if not x:
        return None
    axis, n, k = _dims(p, x)
    if p.ret_typ == "mask":
        return shapes, [tuple(x)]
    view = list(_view(p, x))
    view[axis] = k if n else 0
    return shapes, [tuple(view)] * (2 if _two(p) else 1)


def _type(p, types):
    x = types[0]
    index = "int32" if p.ret_typ == "value" else p.dtype
    if p.ret_typ == "indices":
        return list(types), [p.dtype]
    if x is None:
        return None
    return list(types), [x, index] if _two(p) else [x]


def _outputs(p) -> tuple[str, ...]:
    return ["output0", "output1"] if _two(p) else ["output"]


def _index_dtype(p) -> torch.dtype:
    return torch.int32 if p.ret_typ == "value" else to_torch_dtype(p.dtype)


def _finish(p, x: torch.Tensor, values, indices, axis: int, shape: tuple, mask_fn):
    """The op's outputs from the sorted values and (int64) indices of the first k."""
    if p.ret_typ == "mask":
        return (mask_fn(indices, tuple(x.shape), axis, x.dtype).reshape(shape),)
    if p.ret_typ == "indices":
        return (indices.to(to_torch_dtype(p.dtype)),)
    return values, indices.to(_index_dtype(p))


def _forward(p, ins, aux, rt):
    data = ins[0]
    x = data.reshape(_view(p, tuple(data.shape)))
    axis, n, k = _dims(p, tuple(data.shape))
    values, indices = torch.sort(x, dim=axis, descending=not p.is_ascend, stable=True)
    values, indices = values.narrow(axis, 0, k), indices.narrow(axis, 0, k)

    def mask(idx, shape, axis, dtype):
        return torch.zeros(shape, dtype=dtype, device=idx.device).scatter_(axis, idx, 1)
    return _finish(p, x, values, indices, axis, tuple(data.shape), mask)


def triton_topk(p, ins, aux, rt):
    """topk as a bitonic sort of every row (Triton), then the first k read out."""
    from ..kernels.sort import put_along_axis, topk
    data = ins[0]
    x = data.reshape(_view(p, tuple(data.shape)))
    axis, n, k = _dims(p, tuple(data.shape))
    want = (p.ret_typ in ("value", "both"), True)
    index_dtype = torch.int64 if p.ret_typ == "mask" else _index_dtype(p)
    values, indices = topk(x, axis, k, not p.is_ascend, index_dtype, want)
    if p.ret_typ == "mask":
        return (put_along_axis(indices, 1.0, tuple(x.shape), axis, x.dtype)
                .reshape(data.shape),)
    return (indices,) if p.ret_typ == "indices" else (values, indices)


def _gradient(g, p, ins, outs, og):
    if not _two(p):
        return [g.zeros(ins[0])]
    return [g.op("_backward_topk", og[0], outs[1], ins[0], axis=p.axis, k=p.k,
                 ret_typ=p.ret_typ, is_ascend=p.is_ascend, dtype=p.dtype)]


_AXIS = Param("axis", "int_or_none", -1, doc="Axis to sort along; None sorts the flattened "
              "array.")
_DTYPE = Param("dtype", "dtype", "float32", _INDEX_DTYPES, doc="Dtype of returned indices.")
_PARAMS = (_AXIS, Param("k", "int", 1, doc="Number of top elements (< 1: all of them)."),
           Param("ret_typ", "str", "indices", _RET,
                 doc="Return the values, the indices, a 0/1 mask of the top k, or both "
                     "values and indices."),
           Param("is_ascend", "bool", False, doc="Take the k smallest instead of largest."),
           _DTYPE)

register(OpDef(
    name="topk", params=_PARAMS, outputs=_outputs,
    num_visible=lambda p: 2 if p.ret_typ == "both" else 1, infer_shape=_shape,
    infer_type=_type, forward=_forward, kernel=triton_topk, gradient=_gradient,
    cases=(Case(((3, 5),), {"k": 2, "ret_typ": "value"}),
           Case(((2, 4, 3),), {"axis": 1, "k": 3, "ret_typ": "both", "is_ascend": True}),
           Case(((3, 4),), {"axis": None, "k": 5, "ret_typ": "value"}),
           Case(((2, 5, 2),), {"axis": 1, "k": 2, "ret_typ": "mask"}, grad=False),
           Case(((4, 3),), {"axis": 0, "k": 0, "ret_typ": "indices", "dtype": "int32"},
                grad=False)),
    doc="""The top ``k`` elements along ``axis`` (largest first, or smallest with
    ``is_ascend``): their indices (``ret_typ='indices'``, in ``dtype``), values (``'value'``),
    both (``'both'``) or a 0/1 mask of the input's shape (``'mask'``). ``axis=None``
    works on the flattened array; ``k < 1`` takes every element."""))


def _backward_shape(p, shapes):
    ograd, indices, data = shapes
    if not data:
        return None
    out = _shape(p, [data])[1][0]
    return [out, out, data], [data]


def _backward_forward(p, ins, aux, rt):
    g, indices, data = ins
    axis = _dims(p, tuple(data.shape))[0]
    out = torch.zeros(_view(p, tuple(data.shape)), dtype=g.dtype, device=g.device)
    return (out.scatter_(axis, indices.to(torch.int64), g).reshape(data.shape),)


def triton_backward_topk(p, ins, aux, rt):
    """The topk value gradient: the head gradient written at the kept indices (Triton)."""
    from ..kernels.sort import put_along_axis
    g, indices, data = ins
    axis = _dims(p, tuple(data.shape))[0]
    return (put_along_axis(indices, g, _view(p, tuple(data.shape)), axis)
            .reshape(data.shape),)


register(OpDef(
    name="_backward_topk", inputs=("ograd", "indices", "data"), params=_PARAMS, hidden=True,
    infer_shape=_backward_shape, infer_type=lambda p, t: (list(t), [t[0]]),
    forward=_backward_forward, kernel=triton_backward_topk,
    cases=(Case(((3, 1), (3, 1), (3, 5)), {"k": 1, "ret_typ": "value"}, grad=False,
                ints={1: 5}),),
    doc="Gradient of ``topk``'s values: the head gradient at the kept positions, else 0."))


def _sort_decompose(b, p, ins):
    return b.multi("topk", ins[0], axis=p.axis, k=0, ret_typ="value", is_ascend=p.is_ascend)


def _argsort_decompose(b, p, ins):
    return [b.op("topk", ins[0], axis=p.axis, k=0, ret_typ="indices", is_ascend=p.is_ascend,
                 dtype=p.dtype)]


_ASCEND = Param("is_ascend", "bool", True, doc="Ascending (True) or descending order.")

register(OpDef(
    name="sort", params=(_AXIS, _ASCEND), decompose=_sort_decompose,
    outputs=("output0", "output1"), num_visible=lambda p: 1,
    cases=(Case(((3, 5),)), Case(((2, 3, 4),), {"axis": 1, "is_ascend": False}),
           Case(((2, 3),), {"axis": None})),
    doc="The values sorted along ``axis`` (``None``: the flattened array)."))

register(OpDef(
    name="argsort", params=(_AXIS, _ASCEND, _DTYPE),
    decompose=_argsort_decompose,
    cases=(Case(((3, 5),), grad=False),
           Case(((2, 3, 4),), {"axis": 1, "is_ascend": False, "dtype": "int32"}, grad=False)),
    doc="The indices that sort the values along ``axis`` (``None``: flattened), in ``dtype``."))
