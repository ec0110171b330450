"""ONNX translations of MXNet's reductions: sum/mean/prod/max/min (and nansum/nanprod),
norm, argmax/argmin.

MXNet's axes: None or ``()`` reduce everything, ``exclude`` reduces the axes *not*
listed, and a full reduction without ``keepdims`` gives shape ``(1,)`` (ONNX gives a
scalar: reshaped). An empty set of axes (``exclude`` of every axis) is a copy.
"""
from __future__ import annotations

import numpy as np

from ...attrs import Params
from ...ops.reduce import reduce_axes
from ..emitter import Emitter, NodeCtx, converts, onnx_type
from .elemwise import cast_like_mxnet, needs_widening, scalar_const

_FLOATS = ("float16", "float32", "float64", "bfloat16")
_REDUCE = {"sum": "ReduceSum", "mean": "ReduceMean", "prod": "ReduceProd",
           "max": "ReduceMax", "min": "ReduceMin", "nansum": "ReduceSum",
           "nanprod": "ReduceProd"}


def _reduce_like_mxnet(e: Emitter, op_type: str, x: str, rank: int, axes: tuple[int, ...],
                      keepdims: bool, out: str | None) -> str:
    """``op_type`` over ``axes`` of a rank-``rank`` value, with MXNet's output shape."""
    if not axes:
        return x
    if not keepdims and len(axes) == rank:  # MXNet keeps a (1,) where ONNX gives a scalar
        y = e.reduce(op_type, x, list(axes), True)
        return e.one("Reshape", [y, e.ints([1])], out)
    return e.reduce(op_type, x, list(axes), bool(keepdims), out)


@converts(*_REDUCE)
def reduction(e: Emitter, n: NodeCtx):
    x, dt, rank = n.ins[0], n.in_dtypes[0], len(n.in_shapes[0])
    if n.op in ("nansum", "nanprod") and dt in _FLOATS:
        fill = scalar_const(e, 0.0 if n.op == "nansum" else 1.0, dt, "fill")
        x = e.one("Where", [e.one("IsNaN", [x]), fill, x])
    axes, op_type = reduce_axes(n.p, rank), _REDUCE[n.op]
    if axes and op_type == "ReduceProd" and dt not in _FLOATS and dt != "bool":
        return [_integer_prod(e, n, x, axes)]
    if axes and needs_widening(e, op_type, dt):  # int64: ONNX Runtime saturates int32 prods
        y = _reduce_like_mxnet(e, op_type, e.cast(x, "int64"), rank, axes, n.p.keepdims, None)
        return [e.cast(y, dt, n.outs[0])]
    return [_reduce_like_mxnet(e, op_type, x, rank, axes, n.p.keepdims, n.outs[0])]


def _integer_prod(e: Emitter, n: NodeCtx, x: str, axes: tuple[int, ...]) -> str:
    """An integer product that wraps on overflow as MXNet's (C++) does: ONNX Runtime's
    ReduceProd saturates instead. The reduced axes go first and are flattened to one, and a
    Loop multiplies its rows in (int8/uint8 in int32, wrapped back at the end)."""
    dt, shape = n.in_dtypes[0], n.in_shapes[0]
    work = "int32" if dt in ("int8", "uint8") else dt
    rest = [a for a in range(len(shape)) if a not in axes]
    rows = e.one("Transpose", [x], perm=list(axes) + rest)
    rows = e.one("Reshape", [rows, e.one("Concat", [e.reduce(
        "ReduceProd", e.one("Gather", [e.dims(x, shape), e.ints(axes)]), [0], True),
        e.ints([-1])], axis=0)])
    if work != dt:
        rows = e.cast(rows, work)
    it, cond_in, acc_in = e.fresh("iter"), e.fresh("cond_in"), e.fresh("acc_in")
    outer, e.nodes = e.nodes, []
    acc_out = e.one("Mul", [acc_in, e.one("Gather", [rows, it], axis=0)])
    cond_out = e.one("Identity", [cond_in])
    body_nodes, e.nodes = e.nodes, outer
    h, t = e.helper, onnx_type(work)
    body = h.make_graph(
        body_nodes, e.fresh("prod_body"),
        [h.make_tensor_value_info(it, 7, []), h.make_tensor_value_info(cond_in, 9, []),
         h.make_tensor_value_info(acc_in, t, None)],
        [h.make_tensor_value_info(cond_out, 9, []), h.make_tensor_value_info(acc_out, t, None)])
    width = e.one("Slice", [e.one("Shape", [rows]), e.ints([1]), e.ints([2])])
    ones = e.one("ConstantOfShape", [width],
                 value=e.numpy_helper.from_array(np.ones(1, np.dtype(work))))
    trips = e.one("Gather", [e.one("Shape", [rows]), e.ints([0])])
    acc = e.node("Loop", [e.squeeze(trips, [0]), "", ones], 1, body=body)[0]
    if work != dt:
        acc = e.cast(acc, dt)
    return e.one("Reshape", [acc, e.out_dims(n)], n.outs[0])


@converts("norm")
def norm(e: Emitter, n: NodeCtx):
    p, x, dt, rank = n.p, n.ins[0], n.in_dtypes[0], len(n.in_shapes[0])
    if p.ord not in (1, 2):
        raise n.fail(f"ord={p.ord}")
    op_type = "ReduceL1" if p.ord == 1 else "ReduceL2"
    axes = reduce_axes(Params(axis=p.axis, keepdims=p.keepdims, exclude=False), rank)
    work = dt if dt in _FLOATS else "float64"  # integers are normed in float64
    if work != dt:
        x = e.cast(x, work)
    y = _reduce_like_mxnet(e, op_type, x, rank, axes, p.keepdims, None)
    return [cast_like_mxnet(e, y, work, n.out_dtypes[0], n.outs[0])]


@converts("argmax", "argmin")
def arg_reduce(e: Emitter, n: NodeCtx):
    """The index of the first extreme, as MXNet in the input's dtype."""
    x, shape = n.ins[0], n.in_shapes[0]
    rank, op_type = len(shape), "ArgMax" if n.op == "argmax" else "ArgMin"
    if n.p.axis is None:  # over the flattened data
        idx = e.one(op_type, [e.one("Reshape", [x, e.ints([-1])])], axis=0, keepdims=1)
        if n.p.keepdims:
            idx = e.one("Reshape", [idx, e.ints([1] * rank)])
    else:
        keep = bool(n.p.keepdims) or rank == 1  # MXNet's (1,) for a rank-1 input
        idx = e.one(op_type, [x], axis=int(n.p.axis) % rank, keepdims=int(keep))
    return [e.cast(idx, n.out_dtypes[0], n.outs[0])]
