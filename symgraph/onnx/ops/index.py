"""ONNX translations of indexing (take, pick, batch_take, gather_nd, one_hot), products
(dot, batch_dot), normalisations (L2Normalization, LayerNorm, InstanceNorm) and the sort
family (topk; sort and argsort export as their topk decomposition)."""
from __future__ import annotations

import math

from ..emitter import Emitter, NodeCtx, converts
from .tensor import dim, dims_of, fill, norm_axis, reshape, scalar_dim, shape_of

# ------------------------------------------------------------------ indexing

def _bounded(e: Emitter, idx: str, x: str, shape: tuple, axis: int, mode: str,
             n: NodeCtx) -> str:
    """Indices truncated to int64, then clipped or wrapped into dim ``axis`` of ``x``."""
    idx = e.cast(idx, "int64")  # MXNet truncates toward zero, as Cast does
    size = scalar_dim(e, x, shape, axis)
    if mode == "wrap":
        return e.one("Mod", [idx, size], fmod=0)  # the divisor's sign, as MXNet's wrap
    if mode == "clip":
        return e.one("Clip", [idx, e.scalar(0, "int64"),
                              e.one("Sub", [size, e.scalar(1, "int64")])])
    # 'raise': in-range indices gather as given; ONNX Runtime fails on indices past the end
    # (MXNet raises), a negative one counts from the end where MXNet raises (docs/compat.md)
    return idx


@converts("take")
def take(e: Emitter, n: NodeCtx):
    shape = n.in_shapes[0]
    axis = norm_axis(n.p.axis, len(shape))
    idx = _bounded(e, n.ins[1], n.ins[0], shape, axis, n.p.mode, n)
    return [e.one("Gather", [n.ins[0], idx], n.outs[0], axis=axis)]


@converts("pick")
def pick(e: Emitter, n: NodeCtx):
    p, x, shape = n.p, n.ins[0], n.in_shapes[0]
    if p.axis is None:
        raise n.fail("axis None")
    rank = len(shape)
    axis = norm_axis(p.axis, rank)
    idx = _bounded(e, n.ins[1], x, shape, axis, p.mode, n)
    if len(n.in_shapes[1]) != rank:  # the index may leave out the picked axis
        idx = e.unsqueeze(idx, [axis]) if rank > 1 else idx
    got = e.one("GatherElements", [x, idx], axis=axis)
    if p.keepdims or rank == 1:
        return [e.one("Identity", [got], n.outs[0])]
    return [e.squeeze(got, [axis], n.outs[0])]


@converts("batch_take")
def batch_take(e: Emitter, n: NodeCtx):
    a, shape = n.ins[0], n.in_shapes[0]
    last = len(shape) - 1
    rows = reshape(e, a, [-1, dim(e, a, shape, last)])
    idx = _bounded(e, e.one("Reshape", [n.ins[1], e.ints([-1, 1])]), a, shape, last, "clip",
                   n)
    got = e.one("GatherElements", [rows, idx], axis=1)
    return [e.one("Reshape", [got, e.dims(n.ins[1], n.in_shapes[1])], n.outs[0])]


@converts("gather_nd")
def gather_nd(e: Emitter, n: NodeCtx):
    rank = len(n.in_shapes[1])
    # MXNet's indices are (M, Y...), ONNX's (Y..., M); both wrap negative indices
    idx = e.one("Transpose", [e.cast(n.ins[1], "int64")], perm=list(range(1, rank)) + [0])
    return [e.one("GatherND", [n.ins[0], idx], n.outs[0])]


@converts("one_hot")
def one_hot(e: Emitter, n: NodeCtx):
    p = n.p
    idx = e.unsqueeze(e.cast(n.ins[0], "int64"), [len(n.in_shapes[0])])
    # Equal against 0..depth-1: out-of-range (also negative) indices stay all off, as MXNet
    hot = e.one("Equal", [idx, e.const(list(range(int(p.depth))), "int64", "depth")])
    dtype = n.out_dtypes[0]
    return [e.one("Where", [hot, e.scalar(p.on_value, dtype), e.scalar(p.off_value, dtype)],
                  n.outs[0])]


# ------------------------------------------------------------------ products

def _reverse_axes(e: Emitter, x: str, rank: int) -> str:
    return e.one("Transpose", [x], perm=list(range(rank))[::-1]) if rank > 1 else x


@converts("dot")
def dot(e: Emitter, n: NodeCtx):
    """MXNet's dot: the last axis of ``lhs`` against the first of ``rhs`` (``transpose_*``
    reverse every axis of an operand)."""
    p = n.p
    if str(p.get("forward_stype", "None")) not in ("None", "default"):
        raise n.fail(f"forward_stype {p.forward_stype}")
    (a, b), (sa, sb) = n.ins, n.in_shapes
    ra, rb = len(sa), len(sb)
    if p.transpose_a:
        a, sa = _reverse_axes(e, a, ra), tuple(sa[::-1])
    if p.transpose_b:
        b, sb = _reverse_axes(e, b, rb), tuple(sb[::-1])
    if ra == 2 and rb == 2:
        return [e.one("MatMul", [a, b], n.outs[0])]
    a2 = reshape(e, a, [-1, dim(e, a, sa, ra - 1)])
    b2 = reshape(e, b, [dim(e, b, sb, 0), -1])
    items = dims_of(e, a, sa, 0, ra - 1) + dims_of(e, b, sb, 1)
    return [reshape(e, e.one("MatMul", [a2, b2]), items or [1], n.outs[0])]


@converts("batch_dot")
def batch_dot(e: Emitter, n: NodeCtx):
    p = n.p
    if str(p.get("forward_stype", "None")) not in ("None", "default"):
        raise n.fail(f"forward_stype {p.forward_stype}")
    a, b = n.ins
    perm = list(range(len(n.in_shapes[0]) - 2)) + [len(n.in_shapes[0]) - 1,
                                                      len(n.in_shapes[0]) - 2]
    if p.transpose_a:
        a = e.one("Transpose", [a], perm=perm)
    if p.transpose_b:
        b = e.one("Transpose", [b], perm=perm)
    return [e.one("MatMul", [a, b], n.outs[0])]


# ------------------------------------------------------------------ normalisation

_L2_AXES = {"instance": lambda r: list(range(1, r)), "channel": lambda r: [1],
            "spatial": lambda r: list(range(2, r))}


@converts("L2Normalization")
def l2_normalization(e: Emitter, n: NodeCtx):
    x, rank, dtype = n.ins[0], len(n.in_shapes[0]), n.in_dtypes[0]
    axes = _L2_AXES[n.p.mode](rank)
    sq = e.one("Mul", [x, x])
    if axes:
        sq = e.reduce("ReduceSum", sq, axes, True)
    norm = e.one("Sqrt", [e.one("Add", [sq, e.scalar(float(n.p.eps), dtype)])])
    return [e.one("Div", [x, norm], n.outs[0]), norm]


@converts("LayerNorm")
def layer_norm(e: Emitter, n: NodeCtx):
    p, x, shape, dtype = n.p, n.ins[0], n.in_shapes[0], n.in_dtypes[0]
    rank = len(shape)
    axis = norm_axis(p.axis, rank)
    if e.opset >= 17 and axis == rank - 1 and not p.output_mean_var:
        return [e.one("LayerNormalization", n.ins[:3], n.outs[0], axis=axis,
                      epsilon=float(p.eps))]
    mean = e.reduce("ReduceMean", x, [axis], True)
    centred = e.one("Sub", [x, mean])
    var = e.reduce("ReduceMean", e.one("Mul", [centred, centred]), [axis], True)
    std = e.one("Sqrt", [e.one("Add", [var, e.scalar(float(p.eps), dtype)])])
    gamma, beta = n.ins[1], n.ins[2]
    if axis != rank - 1:  # (C,) against axis: trailing axes of length 1
        trailing = list(range(1, rank - axis))
        gamma, beta = e.unsqueeze(gamma, trailing), e.unsqueeze(beta, trailing)
    out = e.one("Add", [e.one("Mul", [e.one("Div", [centred, std]), gamma]), beta],
                n.outs[0])
    if not p.output_mean_var:
        return [out]
    return [out, e.one("Identity", [mean], n.outs[1]), e.one("Identity", [std], n.outs[2])]


@converts("InstanceNorm")
def instance_norm(e: Emitter, n: NodeCtx):
    return [e.one("InstanceNormalization", n.ins[:3], n.outs[0], epsilon=float(n.p.eps))]


# ------------------------------------------------------------------ sorting

def _topk_k(e: Emitter, x: str, shape: tuple, axis: int, k: int) -> str:
    """TopK's K: ``k``, or the whole axis (k < 1) read from the shape when dims are
    dynamic."""
    if k >= 1:
        return e.ints([k])
    return shape_of(e, [dim(e, x, shape, axis)])


@converts("topk")
def topk(e: Emitter, n: NodeCtx):
    p, x, shape = n.p, n.ins[0], n.in_shapes[0]
    if p.axis is None:
        x, view, axis = e.one("Reshape", [x, e.ints([-1])]), (math.prod(shape),), 0
    else:
        view, axis = tuple(shape), norm_axis(p.axis, len(shape))
    values, indices = e.node("TopK", [x, _topk_k(e, x, view, axis, int(p.k))], 2, axis=axis,
                             largest=int(not p.is_ascend), sorted=1)
    if p.ret_typ == "mask":
        return [_mask(e, n, x, view, axis, indices)]
    if p.ret_typ == "indices":
        return [e.cast(indices, p.dtype, n.outs[0])]
    index_dtype = "int32" if p.ret_typ == "value" else p.dtype
    out_values = e.one("Identity", [values], n.outs[0])
    out_index = e.cast(indices, index_dtype, n.outs[1] if len(n.outs) > 1 else None)
    return [out_values, out_index]


def _mask(e: Emitter, n: NodeCtx, x: str, view: tuple, axis: int, indices: str) -> str:
    """ret_typ mask: ones scattered at the top-k indices into zeros of the input's shape."""
    dtype = n.in_dtypes[0]
    zeros = fill(e, e.dims(x, view), 0, dtype)
    k_shape = tuple(n.p.k if i == axis and n.p.k >= 1 else d for i, d in enumerate(view))
    ones = fill(e, e.dims(indices, k_shape), 1, dtype)
    mask = e.one("ScatterElements", [zeros, indices, ones], axis=axis)
    return e.one("Reshape", [mask, e.dims(n.ins[0], n.in_shapes[0])], n.outs[0])


@converts("GroupNorm")
def group_norm(e: Emitter, n: NodeCtx):
    """Statistics over each (sample, group) of x viewed as (N, G, S); gamma and beta are
    per group (MXNet 1.x)."""
    p, x, dtype = n.p, n.ins[0], n.in_dtypes[0]
    x3 = e.one("Reshape", [x, e.ints([0, int(p.num_groups), -1])])  # 0: ONNX copies N
    mean = e.reduce("ReduceMean", x3, [2], True)
    centred = e.one("Sub", [x3, mean])
    var = e.reduce("ReduceMean", e.one("Mul", [centred, centred]), [2], True)
    std = e.one("Sqrt", [e.one("Add", [var, e.scalar(float(p.eps), dtype)])])
    gamma, beta = (e.one("Reshape", [v, e.ints([1, -1, 1])]) for v in n.ins[1:3])
    out = e.one("Add", [e.one("Mul", [e.one("Div", [centred, std]), gamma]), beta])
    out = e.one("Reshape", [out, e.dims(x, n.in_shapes[0])], n.outs[0])
    if not p.output_mean_var:
        return [out]
    return [out, e.squeeze(mean, [2], n.outs[1]), e.squeeze(std, [2], n.outs[2])]
