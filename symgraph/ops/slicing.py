"""Slicing and rearranging: ``slice`` (``crop``), ``slice_axis``, ``slice_like``, ``tile``,
``repeat``, ``SwapAxis`` (``swapaxes``), ``squeeze`` and ``reverse`` (``flip``).

Gradients that scatter into a larger array (slices, tile, repeat) are hidden
``_backward_<op>`` ops taking ``(ograd, data)``: ``data`` only supplies the shape.

Examples
--------
>>> import symgraph as mx
>>> x = mx.sym.Variable('x')
>>> mx.sym.slice(x, begin=(None, 1), end=(None, None), step=(None, 2)).infer_shape(
...     x=(2, 5))[1]
[(2, 2)]
>>> mx.sym.slice(x, begin=(0,), end=(1, 2)).infer_shape(x=(2, 5))
... # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
ShapeError: begin and end must have the same length: begin (0,), end (1, 2)

>>> mx.sym.slice_axis(x, axis=1, begin=-3, end=None).infer_shape(x=(2, 5))[1]
[(2, 3)]
>>> mx.sym.slice_axis(x, axis=1, begin=0, end=6).infer_shape(x=(2, 5))
... # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
ShapeError: Invalid end for end=6 as axis_size is 5

>>> x, y = mx.sym.Variable('x'), mx.sym.Variable('y')
>>> mx.sym.slice_like(x, y, axes=(1,)).infer_shape(x=(3, 4), y=(1, 2))[1]
[(3, 2)]

>>> mx.sym.tile(mx.sym.Variable('x'), reps=(2, 1, 3)).infer_shape(x=(4, 5))[1]
[(2, 4, 15)]

>>> mx.sym.repeat(x, repeats=2).infer_shape(x=(2, 3))[1], mx.sym.repeat(
...     x, repeats=2, axis=0).infer_shape(x=(2, 3))[1]
([(12,)], [(4, 3)])

>>> mx.sym.SwapAxis(mx.sym.Variable('x'), dim1=0, dim2=2).infer_shape(x=(2, 3, 4))[1]
[(4, 3, 2)]

>>> mx.sym.squeeze(x).infer_shape(x=(1, 3, 1))[1]
[(3,)]
>>> mx.sym.squeeze(x, axis=1).infer_shape(x=(1, 3, 1))  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
ShapeError: cannot select an axis to squeeze out which has size=3 not equal to one

>>> mx.sym.flip(mx.sym.Variable('x'), axis=1).infer_shape(x=(2, 3))[1]
[(2, 3)]
"""
from __future__ import annotations

import math

import torch

from ..attrs import Param
from ..base import ShapeError
from ..sparse import formats
from .base import Case, OpDef, PlanHints, Storage, grad_rule, register

# ------------------------------------------------------------------ slice

def _index_range(length: int, b, e, s) -> tuple[int, int, int]:
    """MXNet's ``GetIndexRange`` for one axis: ``(begin, end, step)`` with end -1 = "past 0"."""
    if s is None:
        s = 1
    if s == 0:
        raise ShapeError("slice op step cannot be 0")
    b = b if b is not None else (length - 1 if s < 0 else 0)
    e_given = e is not None
    e = e if e_given else (-1 if s < 0 else length)
    b = b + length if b < 0 else b
    e = e + length if e < 0 and e_given else e
    b = 0 if b < 0 and s > 0 else b
    b = length - 1 if b > length - 1 and s < 0 else b
    b = -1 if b < 0 or b > length - 1 else b
    e = min(max(e, -1), length)
    return b, e, s


def _range_size(b: int, e: int, s: int) -> int:
    if e == b or b < 0:
        return 0
    if s > 0:
        return (e - b - 1) // s + 1 if e > b else 0
    return (b - e - 1) // (-s) + 1 if e < b else 0


def slice_ranges(p, shape: tuple) -> list[tuple[int, int, int]]:
    """Per-axis ``(begin, end, step)`` of ``slice`` on ``shape`` (0 dims: unknown, skipped)."""
    begin, end, step = p.begin, p.end, p.step
    if len(begin) > len(shape):
        raise ShapeError(f"Slicing axis exceeds data dimensions: begin {begin} for input shape "
                         f"{tuple(shape)}")
    if len(begin) != len(end):
        raise ShapeError(f"begin and end must have the same length: begin {begin}, end {end}")
    if step and len(step) != len(begin):
        raise ShapeError(f"step and begin must have the same length: step {step}, begin {begin}")
    out = []
    for i, n in enumerate(shape):
        if i >= len(begin):
            out.append((0, n, 1))
        elif n == 0:
            out.append((0, 0, 1))
        else:
            out.append(_index_range(n, begin[i], end[i], step[i] if step else None))
    return out


def _slice_shape(p, shapes):
    src = shapes[0]
    if not src:
        return None
    out = []
    for i, (n, (b, e, s)) in enumerate(zip(src, slice_ranges(p, src))):
        size = _range_size(b, e, s) if n else 0
        if n and size == 0:
            raise ShapeError(f"slice: empty result on axis {i} (begin={p.begin}, end={p.end}, "
                             f"step={p.step or None} on input shape {tuple(src)}); zero-size "
                             "arrays are not supported")
        out.append(size)
    return shapes, [tuple(out)]


def _axis_index(b: int, e: int, s: int, device) -> torch.Tensor:
    return torch.arange(b, e, s, device=device)


def _gather(x: torch.Tensor, ranges) -> torch.Tensor:
    """``x`` sliced by per-axis ``(begin, end, step)``; negative steps by index_select."""
    out = x[tuple(slice(b, e, s) if s > 0 else slice(None) for b, e, s in ranges)]
    for d, (b, e, s) in enumerate(ranges):
        if s < 0:
            out = out.index_select(d, _axis_index(b, e, s, x.device))
    return out.contiguous()


def _scatter(g: torch.Tensor, shape: tuple, ranges) -> torch.Tensor:
    """The adjoint of :func:`_gather`: ``g`` placed into zeros of ``shape``."""
    out = torch.zeros(shape, dtype=g.dtype, device=g.device)
    idx = tuple(_axis_index(b, e, s, g.device) for b, e, s in ranges)
    grid = torch.meshgrid(*idx, indexing="ij") if idx else ()
    out[grid] = g
    return out


def _starts_steps(ranges) -> tuple[list, list, list]:
    """Per-axis starts, steps and sizes of :func:`slice_ranges` output (Triton copies)."""
    return ([b for b, e, s in ranges], [s for b, e, s in ranges],
            [_range_size(b, e, s) for b, e, s in ranges])


def triton_slice(p, ins, aux, rt):
    """slice as one strided Triton copy (negative steps are negative strides)."""
    from ..kernels.copy import slice_nd
    x = ins[0]
    return (slice_nd(x, *_starts_steps(slice_ranges(p, tuple(x.shape)))),)


def triton_backward_slice(p, ins, aux, rt):
    """The slice gradient: Triton zero fill, then a strided copy into the slice."""
    from ..kernels.copy import scatter
    shape = tuple(ins[1].shape)
    starts, steps, _ = _starts_steps(slice_ranges(p, shape))
    return (scatter(ins[0], shape, starts, steps),)


def _slice_storage(p, stypes):
    """csr in, csr out for unit steps (MXNet's kernel); other steps fall back to dense."""
    if stypes[0] == "csr" and all(s in (None, 1) for s in (p.step or ())):
        return ["csr"]
    return None


def _csr_block(value: formats.CSR, rows: tuple[int, int], cols: tuple[int, int]):
    """The block ``value[rows[0]:rows[1], cols[0]:cols[1]]`` of a csr matrix, as csr."""
    (r0, r1), (c0, c1) = rows, cols
    lo, hi = int(value.indptr[r0]), int(value.indptr[r1])
    data, idx = value.data[lo:hi], value.indices[lo:hi]
    indptr = value.indptr[r0:r1 + 1] - lo
    if (c0, c1) != (0, value.shape[1]):  # keep the columns in range, recount each row
        keep = (idx >= c0) & (idx < c1)
        owner = torch.repeat_interleave(torch.arange(r1 - r0, device=idx.device),
                                        indptr[1:] - indptr[:-1], output_size=hi - lo)
        indptr = torch.zeros(r1 - r0 + 1, dtype=formats.INDEX, device=idx.device)
        indptr[1:] = torch.bincount(owner[keep], minlength=r1 - r0).cumsum(0)
        data, idx = data[keep], idx[keep] - c0
    return formats.CSR(data.clone(), idx.clone(), indptr.clone(), (r1 - r0, c1 - c0))


def _slice_csr(p, ins, aux, rt):
    value = ins[0]
    (r0, r1, _), (c0, c1, _) = slice_ranges(p, tuple(value.shape))
    return (_csr_block(value, (r0, r1), (c0, c1)),)


_SLICE_PARAMS = (
    Param("begin", "shape_with_none", doc="Start index per axis (None: from the edge)."),
    Param("end", "shape_with_none", doc="End index per axis, exclusive (None: to edge)."),
    Param("step", "shape_with_none", (), doc="Step per axis (None or empty: 1)."))

register(OpDef(
    name="slice", aliases=("crop",), params=_SLICE_PARAMS, infer_shape=_slice_shape,
    forward=lambda p, ins, aux, rt: (_gather(ins[0], slice_ranges(p, tuple(ins[0].shape))),),
    kernel=triton_slice, storage=Storage(_slice_storage, _slice_csr),
    gradient=lambda g, p, ins, outs, og: [g.op("_backward_slice", og[0], ins[0], begin=p.begin,
                                               end=p.end, step=p.step)],
    cases=(Case(((3, 4, 5),), {"begin": (0, 1), "end": (2, 3)}),
           Case(((3, 4, 5),), {"begin": (None, -1, None), "end": (None, None, -1),
                               "step": (None, -1, 2)}),
           Case(((4, 5),), {"begin": (-1, 4), "end": (-5, 0), "step": (-2, -3)}),
           Case(((3, 4),), {"begin": (-10, 1), "end": (10, None)})),
    doc="""Slice a region: ``data[begin[0]:end[0]:step[0], ...]`` over the leading axes.

    ``None`` entries take the whole axis in the step's direction; indices are clipped to the
    axis as MXNet's ``GetIndexRange`` does. Empty results raise ``ShapeError``."""))


def _slice_like_grad_shape(p, shapes):
    """``_backward_slice_like``: ograd fits at the origin of data (same rank, no larger)."""
    ograd, data = shapes
    if not data:
        return None
    if ograd and (len(ograd) != len(data) or any(g > d for g, d in zip(ograd, data))):
        raise ShapeError(f"input 'ograd' of shape {tuple(ograd)} does not fit into the input "
                         f"of shape {tuple(data)}")
    return [ograd, data], [data]


register(OpDef(
    name="_backward_slice", params=_SLICE_PARAMS, inputs=("ograd", "data"), hidden=True,
    infer_shape=grad_rule(_slice_shape),
    forward=lambda p, ins, aux, rt: (
        _scatter(ins[0], tuple(ins[1].shape), slice_ranges(p, tuple(ins[1].shape))),),
    kernel=triton_backward_slice,
    gradient=lambda g, p, ins, outs, og: [
        g.op("slice", og[0], begin=p.begin, end=p.end, step=p.step), None],
    cases=(Case(((2, 2, 2), (3, 4, 5)), {"begin": (0, -1, None), "end": (2, 0, -1),
                                         "step": (1, -2, 2)}, no_grad_inputs=(1,)),),
    doc="Gradient of ``slice``: the output gradient placed into zeros of data's shape."))


# ------------------------------------------------------------------ slice_axis

def slice_axis_range(p, shape: tuple) -> tuple[int, int, int]:
    """``(axis, begin, end)`` of ``slice_axis`` with MXNet's checks."""
    ndim = len(shape)
    axis = p.axis + ndim if p.axis < 0 else p.axis
    if not 0 <= axis < ndim:
        raise ShapeError(f"Transformed axis must be smaller than the source ndim and larger than "
                         f"zero! Recieved axis={p.axis}, src_ndim={ndim}, transformed axis={axis}")
    size = shape[axis]
    begin = p.begin + size if p.begin < 0 else p.begin
    end = size if p.end is None else (p.end + size if p.end < 0 else p.end)
    if size:
        if end > size:
            raise ShapeError(f"Invalid end for end={end} as axis_size is {size}")
        if begin >= end:
            raise ShapeError(f"Invalid begin, end, get begin={begin}, end={end}")
    if begin < 0:
        raise ShapeError(f"Invalid begin for begin={p.begin}")
    return axis, begin, end


def _slice_axis_shape(p, shapes):
    src = shapes[0]
    if not src:
        return None
    axis, begin, end = slice_axis_range(p, src)
    out = list(src)
    out[axis] = end - begin if src[axis] else 0
    return shapes, [tuple(out)]


def _slice_axis_forward(p, ins, aux, rt):
    axis, begin, end = slice_axis_range(p, tuple(ins[0].shape))
    return (ins[0].narrow(axis, begin, end - begin).contiguous(),)


def _backward_slice_axis(p, ins, aux, rt):
    g, x = ins
    axis, begin, end = slice_axis_range(p, tuple(x.shape))
    out = torch.zeros_like(x, dtype=g.dtype)
    out.narrow(axis, begin, end - begin).copy_(g)
    return (out,)


def _axis_starts(p, shape: tuple) -> tuple[list, list, list]:
    axis, begin, end = slice_axis_range(p, shape)
    starts = [begin if d == axis else 0 for d in range(len(shape))]
    sizes = [end - begin if d == axis else n for d, n in enumerate(shape)]
    return starts, [1] * len(shape), sizes


def triton_slice_axis(p, ins, aux, rt):
    """slice_axis as one strided Triton copy."""
    from ..kernels.copy import slice_nd
    return (slice_nd(ins[0], *_axis_starts(p, tuple(ins[0].shape))),)


def triton_backward_slice_axis(p, ins, aux, rt):
    """The slice_axis gradient: Triton zero fill, then a copy into the slice."""
    from ..kernels.copy import scatter
    shape = tuple(ins[1].shape)
    starts, steps, _ = _axis_starts(p, shape)
    return (scatter(ins[0], shape, starts, steps),)


_SLICE_AXIS_PARAMS = (Param("axis", "int", doc="The axis to slice (negative counts from the end)."),
                      Param("begin", "int", doc="Start index (negative counts from the end)."),
                      Param("end", "int_or_none", doc="End index, exclusive (None: axis end)."))

register(OpDef(
    name="slice_axis", params=_SLICE_AXIS_PARAMS, infer_shape=_slice_axis_shape,
    forward=_slice_axis_forward, kernel=triton_slice_axis,
    gradient=lambda g, p, ins, outs, og: [g.op("_backward_slice_axis", og[0], ins[0],
                                               axis=p.axis, begin=p.begin, end=p.end)],
    cases=(Case(((3, 4, 2),), {"axis": 1, "begin": 1, "end": None}),
           Case(((3, 5),), {"axis": -1, "begin": -4, "end": -1}),
           Case(((4, 3),), {"axis": 0, "begin": 0, "end": 2})),
    doc="Slice ``data[begin:end]`` along one ``axis`` (``end`` None: to the end)."))

register(OpDef(
    name="_backward_slice_axis", params=_SLICE_AXIS_PARAMS, inputs=("ograd", "data"),
    hidden=True, infer_shape=grad_rule(_slice_axis_shape), forward=_backward_slice_axis,
    kernel=triton_backward_slice_axis,
    gradient=lambda g, p, ins, outs, og: [
        g.op("slice_axis", og[0], axis=p.axis, begin=p.begin, end=p.end), None],
    cases=(Case(((3, 2), (3, 5)), {"axis": 1, "begin": 1, "end": 3}, no_grad_inputs=(1,)),),
    doc="Gradient of ``slice_axis``: the output gradient placed into zeros of data's shape."))


# ------------------------------------------------------------------ slice_like

def _like_axes(p, ishape: tuple, fshape: tuple) -> list[int]:
    if not p.axes:
        if len(ishape) != len(fshape):
            raise ShapeError(f"By default slice_axis performs slice on all axes, but ndim "
                             f"mismatch for inputs: {len(ishape)} vs. {len(fshape)}")
        return list(range(len(ishape)))
    axes = []
    for a in p.axes:
        a2 = a + len(ishape) if a < 0 else a
        if not 0 <= a2 < len(ishape) or a2 >= len(fshape):
            raise ShapeError(f"slice_like: axis {a} out of range for data shape {tuple(ishape)} "
                             f"and shape_like shape {tuple(fshape)}")
        axes.append(a2)
    return axes


def _slice_like_shape(p, shapes):
    ishape, fshape = shapes
    if not ishape or not fshape:
        return None
    out = list(ishape)
    for i in _like_axes(p, ishape, fshape):
        if ishape[i] and fshape[i] and ishape[i] < fshape[i]:
            raise ShapeError(f"Slice axis {i} with size {fshape[i]} exceeds limit of input with "
                             f"size {ishape[i]}")
        out[i] = fshape[i]
    return shapes, [tuple(out)]


def _slice_like_forward(p, ins, aux, rt):
    x, like = ins
    idx = [slice(None)] * x.dim()
    for i in _like_axes(p, tuple(x.shape), tuple(like.shape)):
        idx[i] = slice(0, like.shape[i])
    return (x[tuple(idx)].contiguous(),)


def _backward_slice_like(p, ins, aux, rt):
    g, x = ins
    out = torch.zeros_like(x, dtype=g.dtype)
    out[tuple(slice(0, n) for n in g.shape)] = g
    return (out,)


def triton_slice_like(p, ins, aux, rt):
    """slice_like as one strided Triton copy from the origin."""
    from ..kernels.copy import slice_nd
    x, like = ins
    sizes = list(x.shape)
    for i in _like_axes(p, tuple(x.shape), tuple(like.shape)):
        sizes[i] = like.shape[i]
    return (slice_nd(x, [0] * x.dim(), [1] * x.dim(), sizes),)


def triton_backward_slice_like(p, ins, aux, rt):
    """The slice_like gradient: Triton zero fill, then a copy into the origin corner."""
    from ..kernels.copy import scatter
    g, x = ins
    return (scatter(g, tuple(x.shape), [0] * x.dim(), [1] * x.dim()),)


register(OpDef(
    name="slice_like", inputs=("data", "shape_like"),
    params=(Param("axes", "shape", (), doc="Axes to slice (empty: all; shapes must then have "
                                           "one ndim)."),),
    infer_shape=_slice_like_shape, forward=_slice_like_forward, kernel=triton_slice_like,
    infer_type=lambda p, t: ([t[0], t[1]], [t[0]]) if t[0] is not None else None,
    gradient=lambda g, p, ins, outs, og: [g.op("_backward_slice_like", og[0], ins[0]), None],
    cases=(Case(((3, 4, 5), (2, 3, 4)), no_grad_inputs=(1,)),
           Case(((3, 4, 5), (2, 1, 3)), {"axes": (-1, 0)}, no_grad_inputs=(1,))),
    doc="Slice ``data`` from the origin to the shape of ``shape_like`` on ``axes``."))

register(OpDef(
    name="_backward_slice_like", inputs=("ograd", "data"), hidden=True,
    infer_shape=_slice_like_grad_shape, forward=_backward_slice_like,
    kernel=triton_backward_slice_like,
    gradient=lambda g, p, ins, outs, og: [g.op("slice_like", og[0], ins[0]), None],
    cases=(Case(((2, 3), (3, 4)), no_grad_inputs=(1,)),),
    doc="Gradient of ``slice_like``: the output gradient placed at the origin of zeros."))


# ------------------------------------------------------------------ tile

def _tile_dims(reps: tuple, shape: tuple) -> tuple[tuple, tuple]:
    """Input shape and reps both padded on the left with ones to one length."""
    if any(r <= 0 for r in reps):
        raise ShapeError(f"tile: reps must be positive, got reps={reps}")
    n = max(len(reps), len(shape))
    return (1,) * (n - len(shape)) + tuple(shape), (1,) * (n - len(reps)) + tuple(reps)


def _tile_shape(p, shapes):
    src = shapes[0]
    if not src:
        return None
    dims, reps = _tile_dims(p.reps, src)
    return shapes, [tuple(d * r for d, r in zip(dims, reps))]


def _tile_forward(p, ins, aux, rt):
    x = ins[0]
    dims, reps = _tile_dims(p.reps, tuple(x.shape))
    return (x.reshape(dims).repeat(reps),)


def _backward_tile(p, ins, aux, rt):
    g, x = ins
    dims, reps = _tile_dims(p.reps, tuple(x.shape))
    split = [n for pair in zip(reps, dims) for n in pair]
    summed = g.reshape(split).sum(dim=tuple(range(0, len(split), 2)))
    return (summed.reshape(x.shape),)


def triton_tile(p, ins, aux, rt):
    """tile as one Triton copy of a stride-0 view."""
    from ..kernels.copy import tile
    _tile_dims(p.reps, tuple(ins[0].shape))  # MXNet's checks
    return (tile(ins[0], p.reps),)


def triton_backward_tile(p, ins, aux, rt):
    """The tile gradient as one Triton reduce-sum over the repetitions."""
    from ..kernels.copy import tile_backward
    return (tile_backward(ins[0], tuple(ins[1].shape), p.reps),)


register(OpDef(
    name="tile", params=(Param("reps", "shape", doc="Repetitions per axis (numpy.tile)."),),
    infer_shape=_tile_shape, forward=_tile_forward, kernel=triton_tile,
    gradient=lambda g, p, ins, outs, og: [g.op("_backward_tile", og[0], ins[0], reps=p.reps)],
    cases=(Case(((2, 3),), {"reps": (2, 1)}), Case(((2, 3),), {"reps": (3,)}),
           Case(((3,),), {"reps": (2, 1, 2)}), Case(((2, 3),), {"reps": ()})),
    doc="Repeat the whole array ``reps`` times per axis, as ``numpy.tile``."))

register(OpDef(
    name="_backward_tile", params=(Param("reps", "shape"),), inputs=("ograd", "data"),
    hidden=True, infer_shape=grad_rule(_tile_shape), forward=_backward_tile,
    kernel=triton_backward_tile,
    gradient=lambda g, p, ins, outs, og: [g.op("tile", og[0], reps=p.reps), None],
    cases=(Case(((2, 4, 3), (2, 3)), {"reps": (2, 2, 1)}, no_grad_inputs=(1,)),),
    doc="Gradient of ``tile``: the output gradient summed over the repetitions."))


# ------------------------------------------------------------------ repeat

def _repeat_axis(p, ndim: int) -> int | None:
    if p.repeats < 0:
        raise ShapeError(f"repeats cannot be a negative number, got {p.repeats}")
    if p.repeats == 0:
        raise ShapeError("repeat: repeats=0 gives an empty array; zero-size arrays are not "
                         "supported")
    if p.axis is None:
        return None
    axis = p.axis + ndim if p.axis < 0 else p.axis
    if not 0 <= axis < ndim:
        raise ShapeError(f"axis = {p.axis} out of bounds for an input of {ndim} dimensions")
    return axis


def _repeat_shape(p, shapes):
    src = shapes[0]
    if not src:
        return None
    axis = _repeat_axis(p, len(src))
    if axis is None:
        return shapes, [(math.prod(src) * p.repeats,)]
    out = list(src)
    out[axis] *= p.repeats
    return shapes, [tuple(out)]


def _repeat_forward(p, ins, aux, rt):
    x = ins[0]
    axis = _repeat_axis(p, x.dim())
    if axis is None:
        return (torch.repeat_interleave(x.reshape(-1), p.repeats),)
    return (torch.repeat_interleave(x, p.repeats, dim=axis),)


def _backward_repeat(p, ins, aux, rt):
    g, x = ins
    axis = _repeat_axis(p, x.dim())
    if axis is None:
        return (g.reshape(-1, p.repeats).sum(1).reshape(x.shape),)
    split = tuple(x.shape[:axis]) + (x.shape[axis], p.repeats) + tuple(x.shape[axis + 1:])
    return (g.reshape(split).sum(axis + 1),)


def triton_repeat(p, ins, aux, rt):
    """repeat as one Triton copy of a stride-0 view."""
    from ..kernels.copy import repeat
    return (repeat(ins[0], p.repeats, _repeat_axis(p, ins[0].dim())),)


def triton_backward_repeat(p, ins, aux, rt):
    """The repeat gradient as one Triton reduce-sum over each element's copies."""
    from ..kernels.copy import repeat_backward
    x = ins[1]
    return (repeat_backward(ins[0], tuple(x.shape), p.repeats, _repeat_axis(p, x.dim())),)


_REPEAT_PARAMS = (Param("repeats", "int", doc="How many times to repeat each element."),
                  Param("axis", "int_or_none", None, doc="The axis (None: flatten first)."))

register(OpDef(
    name="repeat", params=_REPEAT_PARAMS, infer_shape=_repeat_shape, forward=_repeat_forward,
    kernel=triton_repeat,
    gradient=lambda g, p, ins, outs, og: [g.op("_backward_repeat", og[0], ins[0],
                                               repeats=p.repeats, axis=p.axis)],
    cases=(Case(((2, 3),), {"repeats": 2}), Case(((2, 3, 2),), {"repeats": 3, "axis": 1}),
           Case(((2, 3),), {"repeats": 2, "axis": -1})),
    doc="Repeat each element ``repeats`` times along ``axis`` (None: of the flattened array)."))

register(OpDef(
    name="_backward_repeat", params=_REPEAT_PARAMS, inputs=("ograd", "data"), hidden=True,
    infer_shape=grad_rule(_repeat_shape), forward=_backward_repeat, kernel=triton_backward_repeat,
    gradient=lambda g, p, ins, outs, og: [
        g.op("repeat", og[0], repeats=p.repeats, axis=p.axis), None],
    cases=(Case(((2, 6), (2, 3)), {"repeats": 2, "axis": 1}, no_grad_inputs=(1,)),),
    doc="Gradient of ``repeat``: the output gradient summed over each element's copies."))


# ------------------------------------------------------------------ SwapAxis

def _swap_dims(p, ndim: int) -> tuple[int, int]:
    out = []
    for name, d in (("axis1", p.dim1), ("axis2", p.dim2)):
        d2 = d + ndim if d < 0 else d
        if not 0 <= d2 < ndim:
            raise ShapeError(f"{name}: axis {d} is out of bounds for array of ndim {ndim}")
        out.append(d2)
    return out[0], out[1]


def _swap_shape(p, shapes):
    src = shapes[0]
    if not src:
        return None
    a, b = _swap_dims(p, len(src))
    out = list(src)
    out[a], out[b] = src[b], src[a]
    return shapes, [tuple(out)]


def triton_swap_axis(p, ins, aux, rt):
    """SwapAxis as one strided Triton copy."""
    from ..kernels.copy import permute
    a, b = _swap_dims(p, ins[0].dim())
    perm = list(range(ins[0].dim()))
    perm[a], perm[b] = b, a
    return (permute(ins[0], perm),)


register(OpDef(
    name="SwapAxis", aliases=("swapaxes",),
    params=(Param("dim1", "int", 0, doc="The first axis."),
            Param("dim2", "int", 0, doc="The second axis.")),
    infer_shape=_swap_shape, kernel=triton_swap_axis,
    forward=lambda p, ins, aux, rt: (
        ins[0].transpose(*_swap_dims(p, ins[0].dim())).contiguous(),),
    gradient=lambda g, p, ins, outs, og: [g.op("SwapAxis", og[0], dim1=p.dim1, dim2=p.dim2)],
    cases=(Case(((2, 3, 4),), {"dim1": 0, "dim2": 2}), Case(((2, 3, 4),), {"dim1": -1}),
           Case(((3, 2),))),
    doc="Interchange two axes ``dim1`` and ``dim2``."))


# ------------------------------------------------------------------ squeeze

def _squeeze_axes(p, shape: tuple) -> tuple[int, ...] | None:
    ndim = len(shape)
    if p.axis is None:
        if any(d == 0 for d in shape):
            return None  # an unknown dimension might be 1
        return tuple(i for i, d in enumerate(shape) if d == 1)
    axes = (p.axis,) if isinstance(p.axis, int) else tuple(p.axis)
    out = []
    for a in axes:
        a2 = a + ndim if a < 0 else a
        if not 0 <= a2 < ndim:
            raise ShapeError(f"axis {a} is out of bounds for array of dimension {ndim}")
        if a2 in out:
            raise ShapeError(f"duplicate value in axis {axes}")
        if shape[a2] not in (0, 1):
            raise ShapeError(f"cannot select an axis to squeeze out which has size={shape[a2]} "
                             f"not equal to one (input shape {tuple(shape)}, axis {axes})")
        out.append(a2)
    return tuple(out)


def _squeeze_shape(p, shapes):
    src = shapes[0]
    if not src:
        return None
    axes = _squeeze_axes(p, src)
    if axes is None:
        return None
    return shapes, [tuple(d for i, d in enumerate(src) if i not in axes) or (1,)]


register(OpDef(
    name="squeeze", params=(Param("axis", "axis", None, doc="Axes of length 1 to remove (None: "
                                                           "every one)."),),
    infer_shape=_squeeze_shape, hints=PlanHints(view=True),
    forward=lambda p, ins, aux, rt: (
        ins[0].reshape(_squeeze_shape(p, [tuple(ins[0].shape)])[1][0]),),
    gradient=lambda g, p, ins, outs, og: [g.op("reshape_like", og[0], ins[0])],
    cases=(Case(((1, 3, 1, 2),)), Case(((1, 3, 1, 2),), {"axis": -2}),
           Case(((1, 3, 1),), {"axis": (0, 2)}), Case(((1, 1),))),
    doc="Remove axes of length 1 (all of them when ``axis`` is None; at least one "
        "axis stays)."))


# ------------------------------------------------------------------ reverse

def _reverse_dims(p, ndim: int) -> list[int]:
    for a in p.axis:
        if not 0 <= a < ndim:
            raise ShapeError(f"reverse: axis {a} must be in range [0, {ndim}) (MXNet 1.x accepts "
                             "no negative axes here)")
    # an axis listed twice is reversed twice
    return [a for a in range(ndim) if list(p.axis).count(a) % 2]


def _reverse_forward(p, ins, aux, rt):
    dims = _reverse_dims(p, ins[0].dim())
    return (torch.flip(ins[0], dims) if dims else ins[0].clone(),)


def triton_reverse(p, ins, aux, rt):
    """reverse (flip) as one negative-stride Triton copy."""
    from ..kernels.copy import flip
    return (flip(ins[0], _reverse_dims(p, ins[0].dim())),)


register(OpDef(
    name="reverse", aliases=("flip",),
    params=(Param("axis", "shape", doc="The axes to reverse."),),
    infer_shape=lambda p, s: (_reverse_dims(p, len(s[0])), (s, [s[0]]))[1] if s[0] else None,
    forward=_reverse_forward, kernel=triton_reverse,
    gradient=lambda g, p, ins, outs, og: [g.op("reverse", og[0], axis=p.axis)],
    cases=(Case(((3, 4),), {"axis": 1}), Case(((2, 3, 4),), {"axis": (0, 2)}),
           Case(((2, 3),), {"axis": (1, 1)})),
    doc="Reverse the order of elements along the given axes; the shape is unchanged."))
