"""ONNX shape, layout, indexing, reduction and resizing ops."""
from __future__ import annotations

import numpy as np

import symgraph as mx

from .common import BIG, const_in, imports, ints_in, rank_of, static_shape
from .elementwise import _lift


# ---------------------------------------------------------------- shapes and layout
@imports("Flatten")
def _flatten(g, n):
    axis = int(n.a.get("axis", 1))
    x = g.sym(n.ins[0])
    if axis == 1:
        return [mx.sym.Flatten(x, name=n.name)]
    rank = rank_of(g, n, n.ins[0])
    axis %= rank if axis < 0 else rank + 1
    if axis == 0:
        return [mx.sym.reshape(x, shape=(1, -1), name=n.name)]
    shape = g.shape(n.ins[0])
    if None not in shape[axis:]:
        return [mx.sym.reshape(x, shape=(-1, int(np.prod(shape[axis:]))), name=n.name)]
    if None not in shape[:axis]:
        return [mx.sym.reshape(x, shape=(int(np.prod(shape[:axis])), -1), name=n.name)]
    raise n.fail(f"axis {axis} of a shape {shape} with unknown dims on both sides")


@imports("Reshape")
def _reshape(g, n):
    shape = ints_in(g, n, 1, "shape", "shape")
    if shape is None:
        raise n.fail("no shape")
    if int(n.a.get("allowzero", 0)) and 0 in shape:
        raise n.fail("allowzero with a 0 in the shape (an empty dim)")
    return [mx.sym.reshape(g.sym(n.ins[0]), shape=tuple(shape), name=n.name)]


@imports("Transpose")
def _transpose(g, n):
    perm = n.a.get("perm")
    axes = tuple(int(p) for p in perm) if perm is not None else ()
    return [mx.sym.transpose(g.sym(n.ins[0]), axes=axes, name=n.name)]


@imports("Squeeze")
def _squeeze(g, n):
    axes = ints_in(g, n, 1, "axes", "axes")
    return [mx.sym.squeeze(g.sym(n.ins[0]), axis=tuple(axes) if axes else None,
                           name=n.name)]


@imports("Unsqueeze")
def _unsqueeze(g, n):
    axes = ints_in(g, n, 1, "axes", "axes")
    if not axes:
        raise n.fail("no axes")
    rank = rank_of(g, n, n.ins[0]) + len(axes)
    x = g.sym(n.ins[0])
    for k, axis in enumerate(sorted(a % rank for a in axes)):
        last = k == len(axes) - 1
        x = mx.sym.expand_dims(x, axis=axis, name=n.name if last else None)
    return [x]


@imports("Concat")
def _concat(g, n):
    axis = int(n.a["axis"])
    if axis < 0:
        axis %= rank_of(g, n, n.ins[0])
    syms = [g.sym(i) for i in n.ins if i]
    return [mx.sym.Concat(*syms, dim=axis, num_args=len(syms), name=n.name)]


@imports("Split")
def _split(g, n):
    x = g.sym(n.ins[0])
    axis = int(n.a.get("axis", 0))
    sizes = ints_in(g, n, 1, "split", "split")
    count = len(n.outs)
    if sizes is None:
        dim = (g.shape(n.ins[0]) or [None] * (abs(axis) + 1))[axis]
        if dim is None or dim % count == 0:
            parts = mx.sym.split(x, num_outputs=count, axis=axis, name=n.name)
            return [parts] if count == 1 else [parts[k] for k in range(count)]
        step = -(-dim // count)
        sizes = [min(step, dim - k * step) for k in range(count)]
    outs, start = [], 0
    for k, size in enumerate(sizes):
        outs.append(mx.sym.slice_axis(x, axis=axis, begin=start, end=start + size,
                                      name=n.sub(str(k))))
        start += size
    return outs


def _slice_bounds(starts, ends, steps) -> tuple[list, list, list]:
    """ONNX's clamped bounds as MXNet's (None where the bound is "to the end")."""
    begin, end, step = [], [], []
    for s, e, t in zip(starts, ends, steps):
        if t > 0:
            begin.append(None if s <= -BIG else s)
            end.append(None if e >= BIG else e)
        else:
            begin.append(None if s >= BIG else s)
            end.append(None if e <= -BIG else e)
        step.append(t)
    return begin, end, step


@imports("Slice")
def _slice(g, n):
    if g.opset < 10:
        starts, ends = list(n.a["starts"]), list(n.a["ends"])
        axes, steps = n.a.get("axes"), None
    else:
        starts = ints_in(g, n, 1, None, "starts")
        ends = ints_in(g, n, 2, None, "ends")
        axes, steps = ints_in(g, n, 3, None, "axes"), ints_in(g, n, 4, None, "steps")
    axes = list(axes) if axes is not None else list(range(len(starts)))
    steps = steps or [1] * len(starts)
    if any(a < 0 for a in axes):
        rank = rank_of(g, n, n.ins[0])
        axes = [a % rank for a in axes]
    b, e, t = _slice_bounds(starts, ends, steps)
    width = max(axes) + 1
    begin, end, step = [None] * width, [None] * width, [None] * width
    for a, bb, ee, tt in zip(axes, b, e, t):
        begin[a], end[a], step[a] = bb, ee, tt
    return [mx.sym.slice(g.sym(n.ins[0]), begin=tuple(begin), end=tuple(end),
                         step=tuple(step), name=n.name)]


@imports("Gather")
def _gather(g, n):
    axis = int(n.a.get("axis", 0))
    data, index = n.ins[0], n.ins[1]
    value = g.const(index)
    if value is not None and value.ndim == 0:  # one index drops the axis
        rank = rank_of(g, n, data)
        axis %= rank
        i = int(value)
        picked = mx.sym.slice_axis(g.sym(data), axis=axis, begin=i,
                                   end=None if i == -1 else i + 1)
        if rank == 1:  # a 0-d result: MXNet's is (1,)
            return [mx.sym.identity(picked, name=n.name)]
        return [mx.sym.squeeze(picked, axis=axis, name=n.name)]
    # "wrap" maps negative indices as ONNX does (out-of-range ones are invalid in ONNX)
    return [mx.sym.take(g.sym(data), g.sym(index), axis=axis, mode="wrap", name=n.name)]


@imports("Shape", "Size", "ConstantOfShape", "Range", "Constant", "NonZero")
def _fold_only(g, n):
    if n.op in ("Shape", "Size"):
        shape = g.shape(n.ins[0])
        if shape is not None and None not in shape:
            if n.op == "Size":
                return [np.asarray(int(np.prod(shape)), dtype=np.int64)]
            rank = len(shape)
            start, end = int(n.a.get("start", 0)), n.a.get("end")
            end = rank if end is None else int(end)
            return [np.asarray(shape[start % (rank + 1) if start < 0 else start:
                                     end % (rank + 1) if end < 0 else end], dtype=np.int64)]
    raise n.fail("its value must be known at import (constant inputs, static shapes)")


@imports("Expand")
def _expand(g, n):
    shape = ints_in(g, n, 1, None, "shape")
    rank = rank_of(g, n, n.ins[0])
    x = _lift(g, n.ins[0], len(shape) - rank) if len(shape) > rank else g.sym(n.ins[0])
    if len(shape) < rank:
        shape = [1] * (rank - len(shape)) + shape
    # a 1 keeps the input's dim (numpy broadcasting): MXNet spells that 0
    return [mx.sym.broadcast_to(x, shape=tuple(0 if d == 1 else d for d in shape),
                                name=n.name)]


@imports("Tile")
def _tile(g, n):
    reps = ints_in(g, n, 1, None, "repeats")
    return [mx.sym.tile(g.sym(n.ins[0]), reps=tuple(reps), name=n.name)]


@imports("Pad")
def _pad(g, n):
    mode = n.a.get("mode", "constant")
    if g.opset < 11:
        pads, value = list(n.a["pads"]), float(n.a.get("value", 0.0))
    else:
        pads = ints_in(g, n, 1, None, "pads")
        const = const_in(g, n, 2, "constant_value")
        value = 0.0 if const is None else float(np.ravel(const)[0])
    rank = rank_of(g, n, n.ins[0])
    axes = ints_in(g, n, 3, None, "axes") if g.opset >= 18 else None
    axes = [a % rank for a in axes] if axes else list(range(rank))
    begin, end = [0] * rank, [0] * rank
    for a, b, e in zip(axes, pads[:len(axes)], pads[len(axes):]):
        begin[a], end[a] = b, e
    if rank not in (4, 5) or begin[:2] != [0, 0] or end[:2] != [0, 0]:
        raise n.fail(f"pads {pads} on a rank-{rank} input (MXNet's Pad pads the spatial "
                     "dims of 4-D/5-D data)")
    if any(v < 0 for v in begin + end):
        raise n.fail("negative pads (cropping)")
    if mode not in ("constant", "edge", "reflect"):
        raise n.fail(f"mode {mode!r}")
    width = tuple(v for b, e in zip(begin, end) for v in (b, e))
    return [mx.sym.Pad(g.sym(n.ins[0]), mode=mode, pad_width=width, constant_value=value,
                       name=n.name)]


# ---------------------------------------------------------------- reductions and search
_REDUCE = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min",
           "ReduceProd": "prod", "ReduceL1": "l1", "ReduceL2": "l2",
           "ReduceSumSquare": "sumsq", "ReduceLogSumExp": "lse"}


@imports(*_REDUCE)
def _reduce(g, n):
    axes = ints_in(g, n, 1, "axes", "axes")
    keep = bool(n.a.get("keepdims", 1))
    x = g.sym(n.ins[0])
    if not axes:
        if n.a.get("noop_with_empty_axes", 0):
            return [mx.sym.identity(x, name=n.name)]
        axes = None
    kind = _REDUCE[n.op]
    axis = tuple(axes) if axes is not None else None
    if kind in ("mean", "sum", "max", "min", "prod"):
        return [getattr(mx.sym, kind)(x, axis=axis, keepdims=keep, name=n.name)]
    if kind == "l2":
        return [mx.sym.sqrt(mx.sym.sum(mx.sym.square(x), axis=axis, keepdims=keep),
                            name=n.name)]
    inner = {"l1": mx.sym.abs, "sumsq": mx.sym.square, "lse": mx.sym.exp}[kind](x)
    total = mx.sym.sum(inner, axis=axis, keepdims=keep)
    return [mx.sym.log(total, name=n.name) if kind == "lse" else
            mx.sym.identity(total, name=n.name)]


@imports("ArgMax", "ArgMin")
def _arg(g, n):
    if n.a.get("select_last_index", 0):
        raise n.fail("select_last_index=1 (MXNet picks the first)")
    fn = mx.sym.argmax if n.op == "ArgMax" else mx.sym.argmin
    found = fn(g.sym(n.ins[0]), axis=int(n.a.get("axis", 0)),
               keepdims=bool(n.a.get("keepdims", 1)))
    return [mx.sym.Cast(found, dtype="int64", name=n.name)]


@imports("TopK")
def _topk(g, n):
    k = int(n.a["k"]) if g.opset < 10 else int(np.ravel(const_in(g, n, 1, "K"))[0])
    got = mx.sym.topk(g.sym(n.ins[0]), axis=int(n.a.get("axis", -1)), k=k, ret_typ="both",
                      is_ascend=not n.a.get("largest", 1), dtype="int64", name=n.name)
    return [got[0], got[1]]


# ---------------------------------------------------------------- resizing
def _scales(g, n, x: str) -> list:
    """The per-axis factors of a Resize/Upsample (from ``scales`` or ``sizes``)."""
    if n.op == "Upsample":
        scales = n.a.get("scales")
        if scales is None:
            scales = list(np.ravel(const_in(g, n, 1, "scales")))
        return [float(s) for s in scales]
    scales = const_in(g, n, 1 if g.opset < 11 else 2, "scales")
    if scales is not None and scales.size:
        return [float(s) for s in np.ravel(scales)]
    sizes = const_in(g, n, 3, "sizes")
    if sizes is None:
        raise n.fail("neither scales nor sizes")
    shape = static_shape(g, n, x)
    axes = n.a.get("axes")
    if axes is not None:  # opset 18: sizes of the named axes only
        full = list(shape)
        for a, s in zip(axes, np.ravel(sizes)):
            full[a % len(shape)] = int(s)
        sizes = full
    return [int(s) / d for s, d in zip(np.ravel(sizes), shape)]


@imports("Resize", "Upsample")
def _resize(g, n):
    mode = n.a.get("mode", "nearest")
    if mode != "nearest":
        raise n.fail(f"mode {mode!r} (only nearest with integer scales)")
    if n.op == "Resize" and g.opset >= 11:
        coord = n.a.get("coordinate_transformation_mode", "half_pixel")
        near = n.a.get("nearest_mode", "round_prefer_floor")
        # with integer factors these map output i to input i // s exactly
        exact = (coord in ("half_pixel", "pytorch_half_pixel") and near.startswith("round")) \
            or (coord == "asymmetric" and near == "floor")
        if not exact:
            raise n.fail(f"coordinate_transformation_mode {coord!r} with nearest_mode "
                         f"{near!r}")
    if n.a.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise n.fail(f"keep_aspect_ratio_policy {n.a['keep_aspect_ratio_policy']!r}")
    scales = _scales(g, n, n.ins[0])
    if any(s != int(s) or s < 1 for s in scales):
        raise n.fail(f"scales {scales} (only whole factors >= 1)")
    x = g.sym(n.ins[0])
    steps = [(a, int(s)) for a, s in enumerate(scales) if s != 1]
    for k, (axis, s) in enumerate(steps):
        x = mx.sym.repeat(x, repeats=s, axis=axis,
                          name=n.name if k == len(steps) - 1 else None)
    return [x if steps else mx.sym.identity(x, name=n.name)]


@imports("DepthToSpace", "SpaceToDepth")
def _depth_space(g, n):
    if n.a.get("mode", "DCR") != "DCR":
        raise n.fail(f"mode {n.a['mode']!r} (MXNet's depth_to_space is DCR)")
    fn = mx.sym.depth_to_space if n.op == "DepthToSpace" else mx.sym.space_to_depth
    return [fn(g.sym(n.ins[0]), block_size=int(n.a["blocksize"]), name=n.name)]



@imports("GatherND")
def _gather_nd(g, n):
    if n.a.get("batch_dims", 0):
        raise n.fail("batch_dims > 0")
    rank = rank_of(g, n, n.ins[1])
    # ONNX indexes with the last axis of ``indices``, MXNet with the first
    index = mx.sym.transpose(g.sym(n.ins[1]), axes=(rank - 1,) + tuple(range(rank - 1)))
    return [mx.sym.gather_nd(g.sym(n.ins[0]), index, name=n.name)]
