"""ONNX translations of shape manipulation, slicing, joining and splitting, broadcasting and
the creation ops: MXNet's Reshape codes, transpose, slice/slice_axis/slice_like, tile,
repeat, reverse, stack, split, Pad, depth_to_space, zeros/ones/arange.

Shapes a model computes are built from per-dimension items (:func:`shape_of`): constants,
dims of a value, or small computed pieces, so a dynamic export never bakes in a data dim.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..emitter import Emitter, NodeCtx, converts

INT_MAX, INT_MIN = 2 ** 63 - 1, -(2 ** 63)


# ------------------------------------------------------------------ shape helpers

def dim(e: Emitter, value: str, shape: tuple, axis: int):
    """Dim ``axis`` of ``value`` as a shape item: an int, or ``(value, shape, axis)``."""
    return shape[axis] if not e.dynamic else (value, tuple(shape), axis)


def dims_of(e: Emitter, value: str, shape: tuple, start: int = 0, end: int | None = None):
    """Dims ``start:end`` of ``value`` as shape items."""
    end = len(shape) if end is None else end
    return [dim(e, value, shape, a) for a in range(start, end)]


def shape_of(e: Emitter, items: Sequence) -> str:
    """A 1-D int64 shape from items: ints, ``(value, shape, axis)`` dims, or ``str`` names of
    1-D int64 values of length 1 (consecutive constants and dims become one piece each)."""
    pieces: list[str] = []
    k = 0
    while k < len(items):
        item = items[k]
        if isinstance(item, str):
            pieces.append(item)
            k += 1
        elif isinstance(item, (int, np.integer)):
            run = [int(item)]
            while k + len(run) < len(items) and isinstance(items[k + len(run)],
                                                           (int, np.integer)):
                run.append(int(items[k + len(run)]))
            pieces.append(e.ints(run))
            k += len(run)
        else:
            value, shape, axis = item
            end = axis + 1
            while k + end - axis < len(items) and items[k + end - axis] == (value, shape, end):
                end += 1
            pieces.append(e.dim_slice(value, shape, axis, end))
            k += end - axis
    if not pieces:
        return e.ints([])
    return pieces[0] if len(pieces) == 1 else e.one("Concat", pieces, axis=0)


def item_value(e: Emitter, item) -> str:
    """One shape item as a 1-D int64 value of length 1."""
    return shape_of(e, [item])


def scalar_dim(e: Emitter, value: str, shape: tuple, axis: int) -> str:
    """Dim ``axis`` of ``value`` as a 0-d int64 value."""
    if not e.dynamic:
        return e.scalar(shape[axis], "int64")
    return e.one("Reshape", [e.dim_slice(value, shape, axis, axis + 1), e.ints([])])


def reshape(e: Emitter, value: str, items: Sequence, out: str | None = None) -> str:
    return e.one("Reshape", [value, shape_of(e, items)], out)


def _mul(e: Emitter, a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    return e.one("Mul", [item_value(e, a), item_value(e, b)])


def _div(e: Emitter, a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    return e.one("Div", [item_value(e, a), item_value(e, b)])


def fill(e: Emitter, shape: str, value, dtype: str, out: str | None = None) -> str:
    """A tensor of ``shape`` (a 1-D int64 value) filled with ``value`` of ``dtype``."""
    tensor = e.numpy_helper.from_array(np.asarray([value], dtype=_np_dtype(dtype)), "value")
    return e.one("ConstantOfShape", [shape], out, value=tensor)


def _np_dtype(dtype: str):
    return np.float32 if dtype == "bfloat16" else np.dtype(dtype)


def norm_axis(axis: int, rank: int) -> int:
    """``axis`` counted from the front."""
    return axis + rank if axis < 0 else axis


# ------------------------------------------------------------------ Reshape family

def _spec(p) -> tuple:
    """The Reshape codes (the deprecated ``target_shape`` reads 0 as infer)."""
    if p.shape or not p.target_shape:
        return tuple(p.shape)
    spec = tuple(-1 if d == 0 else d for d in p.target_shape)
    return (0,) + spec[1:] if p.keep_highest else spec


def _reshape_items(e: Emitter, x: str, shape: tuple, spec: tuple, reverse: bool) -> list:
    """MXNet's Reshape codes as shape items (-1 stays ONNX's inferred dim)."""
    rank = len(shape)
    if reverse:
        spec = spec[::-1]

    def src(i: int):  # dim i of the (reversed, if so) source
        return dim(e, x, shape, rank - 1 - i if reverse else i)
    out: list = []
    i = j = 0
    while j < len(spec):
        code = spec[j]
        if code == 0:
            out.append(src(i)); i += 1
        elif code == -1:
            out.append(-1); i += 1
        elif code == -2:
            out.extend(src(k) for k in range(i, rank)); i = rank
        elif code == -3:
            out.append(_mul(e, src(i), src(i + 1))); i += 2
        elif code == -4:
            a, b = spec[j + 1], spec[j + 2]
            a = _div(e, src(i), b) if a == -1 else a
            b = _div(e, src(i), a) if b == -1 else b
            out.extend((a, b)); i += 1; j += 2
        else:
            out.append(code); i += 1
        j += 1
    return out[::-1] if reverse else out


@converts("Reshape")
def reshape_op(e: Emitter, n: NodeCtx):
    x, shape = n.ins[0], n.in_shapes[0]
    if not e.dynamic:
        return [e.one("Reshape", [x, e.ints(n.out_shapes[0])], n.outs[0])]
    items = _reshape_items(e, x, shape, _spec(n.p), bool(n.p.reverse))
    return [reshape(e, x, items, n.outs[0])]


def _like_range(ndim: int, begin, end) -> tuple[int, int]:
    b = 0 if begin is None else norm_axis(begin, ndim)
    return b, ndim if end is None else norm_axis(end, ndim)


@converts("reshape_like")
def reshape_like(e: Emitter, n: NodeCtx):
    (a, b), p = n.in_shapes, n.p
    lb, le = _like_range(len(a), p.lhs_begin, p.lhs_end)
    rb, re = _like_range(len(b), p.rhs_begin, p.rhs_end)
    items = dims_of(e, n.ins[0], a, 0, lb) + dims_of(e, n.ins[1], b, rb, re) + \
        dims_of(e, n.ins[0], a, le)
    return [reshape(e, n.ins[0], items, n.outs[0])]


@converts("transpose")
def transpose(e: Emitter, n: NodeCtx):
    rank = len(n.in_shapes[0])
    axes = [a % rank for a in n.p.axes] if tuple(n.p.axes) else list(range(rank))[::-1]
    return [e.one("Transpose", [n.ins[0]], n.outs[0], perm=axes)]


@converts("SwapAxis")
def swap_axis(e: Emitter, n: NodeCtx):
    rank = len(n.in_shapes[0])
    perm = list(range(rank))
    a, b = norm_axis(n.p.dim1, rank), norm_axis(n.p.dim2, rank)
    perm[a], perm[b] = b, a
    return [e.one("Transpose", [n.ins[0]], n.outs[0], perm=perm)]


@converts("expand_dims")
def expand_dims(e: Emitter, n: NodeCtx):
    return [e.unsqueeze(n.ins[0], [norm_axis(n.p.axis, len(n.in_shapes[0]) + 1)], n.outs[0])]


@converts("squeeze")
def squeeze(e: Emitter, n: NodeCtx):
    shape = n.in_shapes[0]
    axis = n.p.axis
    if axis is None and e.dynamic:  # which dims are 1 is known only at run time
        if all(d == 1 for d in shape):
            raise n.fail("axis None on all-ones dims in a dynamic export (the rank of the "
                         "result depends on the run's dims)")
        return [e.one("Squeeze", [n.ins[0]], n.outs[0])]
    if axis is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    else:
        axes = [norm_axis(a, len(shape)) for a in ((axis,) if isinstance(axis, int) else axis)]
    if len(axes) == len(shape):  # MXNet keeps one axis
        return [e.one("Reshape", [n.ins[0], e.ints([1])], n.outs[0])]
    if not axes:
        return [e.one("Identity", [n.ins[0]], n.outs[0])]
    return [e.squeeze(n.ins[0], axes, n.outs[0])]


# ------------------------------------------------------------------ split and join

def _slice_axis(e: Emitter, x: str, axis: int, start, end, out: str | None = None) -> str:
    """``x[start:end]`` along ``axis`` (start/end: ints or 1-D int64 values)."""
    def value(v):
        return e.ints([v]) if isinstance(v, int) else v
    return e.one("Slice", [x, value(start), value(end), e.ints([axis])], out)


def _squeeze_parts(e: Emitter, parts: list[str], axis: int, rank: int, outs) -> list[str]:
    if rank == 1:  # a 1-D part keeps its axis
        return [e.one("Identity", [v], o) for v, o in zip(parts, outs)]
    return [e.squeeze(v, [axis], o) for v, o in zip(parts, outs)]


@converts("SliceChannel")
def slice_channel(e: Emitter, n: NodeCtx):
    p, rank = n.p, len(n.in_shapes[0])
    axis, count = norm_axis(p.axis, rank), int(p.num_outputs)
    outs = n.outs if not p.squeeze_axis else count
    if count == 1:
        parts = [n.ins[0]]
    elif e.opset >= 18:
        parts = e.node("Split", [n.ins[0]], outs, axis=axis, num_outputs=count)
    else:  # without sizes Split makes equal parts
        parts = e.node("Split", [n.ins[0]], outs, axis=axis)
    if p.squeeze_axis:
        return _squeeze_parts(e, parts, axis, rank, n.outs)
    return parts if count > 1 else [e.one("Identity", parts, n.outs[0])]


def _section_bounds(e: Emitter, x: str, shape: tuple, axis: int, sections: int) -> list:
    """MXNet's ``_split_v2`` section starts (the first ``size % sections`` parts one longer),
    as ints for a fixed shape and 1-D int64 values when dims are dynamic."""
    if not e.dynamic:
        short, extra = divmod(shape[axis], sections)
        return [i * short + min(i, extra) for i in range(sections + 1)]
    size = e.dim_slice(x, shape, axis, axis + 1)
    count = e.ints([sections])
    short, extra = e.one("Div", [size, count]), e.one("Mod", [size, count])
    return [e.one("Add", [e.one("Mul", [short, e.ints([i])]),
                          e.one("Min", [extra, e.ints([i])])]) for i in range(sections + 1)]


@converts("_split_v2")
def split_v2(e: Emitter, n: NodeCtx):
    p, x, shape = n.p, n.ins[0], n.in_shapes[0]
    axis = norm_axis(p.axis, len(shape))
    if p.sections > 0:
        bounds = _section_bounds(e, x, shape, axis, int(p.sections))
    else:
        bounds = [int(i) for i in p.indices] + [INT_MAX]
    outs = n.outs if not p.squeeze_axis else [None] * len(n.outs)
    parts = [_slice_axis(e, x, axis, bounds[k], bounds[k + 1], outs[k])
             for k in range(len(n.outs))]
    if p.squeeze_axis:
        return _squeeze_parts(e, parts, axis, len(shape), n.outs)
    return parts


@converts("stack")
def stack(e: Emitter, n: NodeCtx):
    axis = norm_axis(n.p.axis, len(n.in_shapes[0]) + 1)
    parts = [e.unsqueeze(v, [axis]) for v in n.ins]
    return [e.one("Concat", parts, n.outs[0], axis=axis)]


# ------------------------------------------------------------------ slicing

@converts("slice")
def slice_op(e: Emitter, n: NodeCtx):
    p = n.p
    if 0 in n.out_shapes[0]:
        raise n.fail("an empty slice (ONNX clamps such ranges differently)")
    starts, ends, steps = [], [], []
    for k, (b, en) in enumerate(zip(p.begin, p.end)):
        s = p.step[k] if tuple(p.step) and p.step[k] is not None else 1
        if s == 0:
            raise n.fail("step 0")
        starts.append(b if b is not None else (0 if s > 0 else INT_MAX))
        # MXNet's end None with a negative step runs past index 0
        ends.append(en if en is not None else (INT_MAX if s > 0 else INT_MIN))
        steps.append(s)
    axes = list(range(len(starts)))
    return [e.one("Slice", [n.ins[0], e.ints(starts), e.ints(ends), e.ints(axes),
                            e.ints(steps)], n.outs[0])]


@converts("slice_axis")
def slice_axis(e: Emitter, n: NodeCtx):
    p = n.p
    axis = norm_axis(p.axis, len(n.in_shapes[0]))
    end = INT_MAX if p.end is None else int(p.end)
    return [_slice_axis(e, n.ins[0], axis, int(p.begin), end, n.outs[0])]


@converts("slice_like")
def slice_like(e: Emitter, n: NodeCtx):
    (a, b), p = n.in_shapes, n.p
    axes = [norm_axis(x, len(a)) for x in p.axes] if tuple(p.axes) else list(range(len(a)))
    ends = shape_of(e, [dim(e, n.ins[1], b, x) for x in axes])
    return [e.one("Slice", [n.ins[0], e.ints([0] * len(axes)), ends, e.ints(axes)],
                  n.outs[0])]


@converts("reverse")
def reverse(e: Emitter, n: NodeCtx):
    rank = len(n.in_shapes[0])
    axes = [a for a in range(rank) if list(n.p.axis).count(a) % 2]
    if not axes:
        return [e.one("Identity", [n.ins[0]], n.outs[0])]
    k = len(axes)
    return [e.one("Slice", [n.ins[0], e.ints([-1] * k), e.ints([INT_MIN] * k), e.ints(axes),
                            e.ints([-1] * k)], n.outs[0])]


@converts("tile")
def tile(e: Emitter, n: NodeCtx):
    x, shape, reps = n.ins[0], n.in_shapes[0], list(n.p.reps)
    extra = len(reps) - len(shape)
    if extra > 0:  # numpy.tile: the input gains leading axes first
        x = e.unsqueeze(x, list(range(extra)))
    reps = [1] * (-extra) + reps
    return [e.one("Tile", [x, e.ints(reps)], n.outs[0])]


@converts("repeat")
def repeat(e: Emitter, n: NodeCtx):
    x, shape, r = n.ins[0], n.in_shapes[0], int(n.p.repeats)
    if n.p.axis is None:
        x, shape, axis = e.one("Reshape", [x, e.ints([-1])]), (math.prod(shape),), 0
    else:
        axis = norm_axis(n.p.axis, len(shape))
    rank = len(shape)
    wide = e.unsqueeze(x, [axis + 1])
    reps = [1] * (rank + 1)
    reps[axis + 1] = r
    tiled = e.one("Tile", [wide, e.ints(reps)])
    items = dims_of(e, x, shape, 0, axis) + [-1] + dims_of(e, x, shape, axis + 1)
    return [reshape(e, tiled, items, n.outs[0])]


# ------------------------------------------------------------------ broadcasting

@converts("broadcast_to")
def broadcast_to(e: Emitter, n: NodeCtx):
    # 0 keeps the input's dim: Expand with 1 there broadcasts to the input's own dim
    target = [d if d > 0 else 1 for d in n.p.shape]
    return [e.one("Expand", [n.ins[0], e.ints(target)], n.outs[0])]


@converts("broadcast_axis")
def broadcast_axis(e: Emitter, n: NodeCtx):
    rank = len(n.in_shapes[0])
    axes, sizes = n.p.axis, n.p.size
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    sizes = (sizes,) if isinstance(sizes, int) else tuple(sizes)
    target = [1] * rank
    for a, s in zip(axes, sizes):
        target[norm_axis(a, rank)] = s
    return [e.one("Expand", [n.ins[0], e.ints(target)], n.outs[0])]


@converts("broadcast_like")
def broadcast_like(e: Emitter, n: NodeCtx):
    (a, b), p = n.in_shapes, n.p
    if p.lhs_axes is None or p.rhs_axes is None:
        target = e.dims(n.ins[1], b)
    else:
        items: list = [1] * len(a)
        for la, ra in zip(p.lhs_axes, p.rhs_axes):
            items[norm_axis(la, len(a))] = dim(e, n.ins[1], b, norm_axis(ra, len(b)))
        target = shape_of(e, items)
    return [e.one("Expand", [n.ins[0], target], n.outs[0])]


@converts("zeros_like", "ones_like")
def zeros_like(e: Emitter, n: NodeCtx):
    value = 0 if n.op == "zeros_like" else 1
    return [fill(e, e.dims(n.ins[0], n.in_shapes[0]), value, n.out_dtypes[0], n.outs[0])]


@converts("shape_array")
def shape_array(e: Emitter, n: NodeCtx):
    return [e.one("Shape", [n.ins[0]], n.outs[0])]


@converts("size_array")
def size_array(e: Emitter, n: NodeCtx):
    return [e.one("Reshape", [e.one("Size", [n.ins[0]]), e.ints([1])], n.outs[0])]


# ------------------------------------------------------------------ creation

_FILLS = {"_zeros": 0, "_ones": 1, "_full": 0, "_zeros_without_dtype": 0}


@converts("_zeros", "_ones", "_full", "_arange", "_eye", "_linspace", "_zeros_without_dtype")
def created(e: Emitter, n: NodeCtx):
    """A creation op with static parameters: its value, computed by symgraph, as a constant."""
    from ...attrs import Params
    from ...ops.base import OPS, Runtime
    p = n.p
    if p.get("infer_range") and p.get("stop") is None:
        raise n.fail("infer_range (the length comes from the graph)")
    if e.dynamic and any(d <= 0 for d in tuple(p.get("shape") or ())):
        if n.op not in _FILLS:
            raise n.fail("a shape with dims inferred from the graph in a dynamic export")
        value = p.get("value", _FILLS[n.op])  # dims follow the inputs': filled at run time
        return [fill(e, e.out_dims(n), value, n.out_dtypes[0], n.outs[0])]
    params = Params(dict(p, _out_shape=tuple(n.out_shapes[0])))
    value = OPS[n.op].forward(params, [], [], Runtime())[0]
    array = value.float().numpy() if str(value.dtype) == "torch.bfloat16" else value.numpy()
    return [e.one("Identity", [e.const(array, hint=n.op.strip("_"))], n.outs[0])]


@converts("_contrib_arange_like")
def arange_like(e: Emitter, n: NodeCtx):
    p, x, shape = n.p, n.ins[0], n.in_shapes[0]
    if p.axis is None:
        count = e.scalar(math.prod(shape), "int64") if not e.dynamic else \
            e.one("Size", [x])
        out_shape = e.dims(x, shape)
    else:
        axis = norm_axis(p.axis, len(shape))
        count = scalar_dim(e, x, shape, axis)
        out_shape = shape_of(e, [dim(e, x, shape, axis)])
    idx = e.one("Range", [e.scalar(0, "int64"), count, e.scalar(1, "int64")])
    if p.repeat != 1:
        idx = e.one("Div", [idx, e.scalar(int(p.repeat), "int64")])
    vals = e.one("Mul", [e.cast(idx, "float64"), e.scalar(float(p.step), "float64")])
    vals = e.one("Add", [vals, e.scalar(float(p.start), "float64")])
    return [reshape(e, e.cast(vals, n.out_dtypes[0]), [out_shape], n.outs[0])]


# ------------------------------------------------------------------ padding, depth/space

_PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect"}


@converts("Pad")
def pad(e: Emitter, n: NodeCtx):
    p = n.p
    if p.mode not in _PAD_MODES:
        raise n.fail(f"mode {p.mode}")
    width = list(p.pad_width)
    pads = width[0::2] + width[1::2]  # MXNet: (b0, e0, b1, e1 ...); ONNX: begins, then ends
    ins = [n.ins[0], e.ints(pads)]
    if p.mode == "constant":
        ins.append(e.scalar(float(p.constant_value), n.in_dtypes[0]))
    return [e.one("Pad", ins, n.outs[0], mode=_PAD_MODES[p.mode])]


@converts("depth_to_space")
def depth_to_space(e: Emitter, n: NodeCtx):
    # MXNet splits the channels as (block, block, C'): ONNX's DCR mode
    return [e.one("DepthToSpace", [n.ins[0]], n.outs[0], blocksize=int(n.p.block_size),
                  mode="DCR")]


@converts("space_to_depth")
def space_to_depth(e: Emitter, n: NodeCtx):
    return [e.one("SpaceToDepth", [n.ins[0]], n.outs[0], blocksize=int(n.p.block_size))]



# ------------------------------------------------------------------ diag

@converts("diag")
def diag(e: Emitter, n: NodeCtx):
    if len(n.in_shapes[0]) == 1:
        return [_diag_matrix(e, n)]
    return [_diag_extract(e, n)]


def _diag_matrix(e: Emitter, n: NodeCtx) -> str:
    """A 1-D input on diagonal k of a square matrix (exact: a Where, not a product)."""
    x, shape, k = n.ins[0], n.in_shapes[0], int(n.p.k)
    side = shape[0] + abs(k) if not e.dynamic else \
        e.one("Add", [e.dim_slice(x, shape, 0, 1), e.ints([abs(k)])])
    square = fill(e, shape_of(e, [side, side]), 0, n.in_dtypes[0])
    mask = e.cast(e.one("EyeLike", [square], k=k), "bool")
    padded = e.one("Pad", [x, e.ints([0, abs(k)])]) if k else x
    # row i holds x[i] at column i + k (k >= 0); column j holds x[j] at row j - k (k < 0)
    values = e.unsqueeze(padded, [1 if k >= 0 else 0])
    return e.one("Where", [mask, values, e.scalar(0, n.in_dtypes[0])], n.outs[0])


def _diag_extract(e: Emitter, n: NodeCtx) -> str:
    """Diagonal k of the (axis1, axis2) planes, moved to the last axis."""
    x, shape, k = n.ins[0], n.in_shapes[0], int(n.p.k)
    rank = len(shape)
    a1, a2 = norm_axis(n.p.axis1, rank), norm_axis(n.p.axis2, rank)
    rest = [i for i in range(rank) if i not in (a1, a2)]
    t = e.one("Transpose", [x], perm=rest + [a1, a2])
    r0, c0 = max(0, -k), max(0, k)
    if not e.dynamic:
        length = min(shape[a1] - r0, shape[a2] - c0)
        rows, cols = e.ints(range(r0, r0 + length)), e.ints(range(c0, c0 + length))
    else:
        length = e.one("Min", [e.one("Sub", [scalar_dim(e, x, shape, a1), e.scalar(r0, "int64")]),
                               e.one("Sub", [scalar_dim(e, x, shape, a2),
                                             e.scalar(c0, "int64")])])
        rows = e.one("Range", [e.scalar(r0, "int64"),
                               e.one("Add", [length, e.scalar(r0, "int64")]),
                               e.scalar(1, "int64")])
        cols = e.one("Add", [rows, e.scalar(k, "int64")])
    picked = e.one("Gather", [t, rows], axis=rank - 2)  # (..., L, w)
    idx = e.unsqueeze(cols, list(range(rank - 2)) + [rank - 1])  # (1.., L, 1)
    if rest:
        idx = e.one("Expand", [idx, shape_of(e, [dim(e, x, shape, i) for i in rest] + [1, 1])])
    got = e.one("GatherElements", [picked, idx], axis=rank - 1)
    return e.squeeze(got, [rank - 1], n.outs[0])
