"""Data movement: strided copies (slice, transpose, flip, broadcast, tile, repeat, nearest
upsampling), concat and split in one launch, scatter into zeros, and the reduce-sum that
undoes a broadcast.

Every layout change is one kernel, :func:`_copy_kernel`: each element of a logical shape is
read at ``src_off + sum(c_d * src_stride_d)`` and written at ``dst_off + sum(c_d *
dst_stride_d)``. Strides may be 0 (broadcast) or negative (flip, negative-step slices), so
``tile`` and ``repeat`` are copies of a stride-0 view with interleaved axes. Sizes and
strides travel in a small int64 ``meta`` tensor (any rank, one compiled kernel per rank).
Adjacent axes that are contiguous in both source and destination are merged first.

Concat and split move many tensors in one launch: a table of (pointer, width, column)
rows, one per part, over the 2-D view ``(outer, axis * inner)`` of the joined tensor.

Backward of tile/repeat/broadcast sums the gradient over the repeated axes
(:func:`reduce_sum`); backward of slicing writes the gradient into zeros (:func:`scatter`).
Nearest upsampling is a copy of the stride-0 view ``(N, C, h, s, w, s)`` of each input into
its channel slice of the output (or, in sum mode, a generated in-place add); its backward is
a reduce-sum over the two ``s`` axes.

Bytes moved: a copy reads and writes each output element once; a reduce reads the input
once and writes the output once.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import triton.language as tl

from .elementwise import Program, run
from .runtime import block_for, cdiv, device_meta, kernel
from .table import KernelSpec, tensor_bytes


def _block(n: int, device: torch.device) -> int:
    return block_for(n, cap=1024 if device.type == "cuda" else 256)


@kernel
def _copy_kernel(src, dst, meta, n, RANK: tl.constexpr, BLOCK: tl.constexpr):
    """dst[dst_off + c . dst_strides] = src[src_off + c . src_strides] for c over sizes."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    rem = offs
    so = offs * 0 + tl.load(meta + 3 * RANK)
    do = offs * 0 + tl.load(meta + 3 * RANK + 1)
    for d in tl.static_range(RANK - 1, -1, -1):
        size = tl.load(meta + d)
        c = rem % size
        rem = rem // size
        so += c * tl.load(meta + RANK + d)
        do += c * tl.load(meta + 2 * RANK + d)
    v = tl.load(src + so, mask=mask)
    tl.store(dst + do, v.to(dst.dtype.element_ty), mask=mask)


@kernel
def _fill_kernel(dst, n, value, BLOCK: tl.constexpr):
    """dst[:n] = value."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    v = (offs * 0).to(tl.float32) + value
    tl.store(dst + offs, v.to(dst.dtype.element_ty), mask=offs < n)


def _coalesce(sizes, *strides) -> tuple[list, list]:
    """Drop size-1 axes and merge neighbours that are contiguous in every stride list."""
    keep = [d for d, s in enumerate(sizes) if s != 1]
    out_sizes: list[int] = []
    out_strides: list[list[int]] = [[] for _ in strides]
    for d in keep:
        if out_sizes and all(st[d] * sizes[d] == o[-1] for st, o in zip(strides, out_strides)):
            out_sizes[-1] *= sizes[d]
            for st, o in zip(strides, out_strides):
                o[-1] = st[d]
            continue
        out_sizes.append(sizes[d])
        for st, o in zip(strides, out_strides):
            o.append(st[d])
    return out_sizes or [1], [o or [1] for o in out_strides]


def strided_copy(src: torch.Tensor, sizes: Sequence[int], src_strides: Sequence[int],
                 src_off: int, dst: torch.Tensor, dst_view: tuple[Sequence[int], int]) -> None:
    """Launch: copy the (sizes, strides, offset) view of ``src`` into ``dst``'s view
    ``(strides, offset)`` (element units; strides may be 0 or negative)."""
    n = 1
    for s in sizes:
        n *= s
    if n == 0:
        return
    sizes, (ss, ds) = _coalesce(list(sizes), list(src_strides), list(dst_view[0]))
    meta = device_meta(sizes + ss + ds + [src_off, dst_view[1]], src.device)
    block = _block(n, src.device)
    _copy_kernel[(cdiv(n, block),)](src, dst, meta, n, RANK=len(sizes), BLOCK=block)


def fill(dst: torch.Tensor, value: float) -> torch.Tensor:
    """Launch: fill contiguous ``dst`` with ``value``."""
    n = dst.numel()
    if n:
        block = _block(n, dst.device)
        _fill_kernel[(cdiv(n, block),)](dst, n, float(value), BLOCK=block)
    return dst


def _out(out, shape, like: torch.Tensor, dtype=None) -> torch.Tensor:
    if out is None:
        return torch.empty(tuple(shape), dtype=dtype or like.dtype, device=like.device)
    if tuple(out.shape) != tuple(shape) or not out.is_contiguous():
        raise ValueError(f"out must be contiguous of shape {tuple(shape)}, got "
                         f"{tuple(out.shape)}")
    return out


def _contig_strides(shape) -> list[int]:
    strides, acc = [], 1
    for s in reversed(tuple(shape)):
        strides.append(acc)
        acc *= s
    return strides[::-1]


def copy_view(view: torch.Tensor, out=None) -> torch.Tensor:
    """Materialise any strided view of a tensor (stride 0 included) contiguously."""
    out = _out(out, view.shape, view)
    strided_copy(view, view.shape, view.stride(), 0, out, (_contig_strides(view.shape), 0))
    return out


# ---------------------------------------------------------------- permute / flip / slice

def permute(x: torch.Tensor, axes: Sequence[int], out=None) -> torch.Tensor:
    """``x.permute(axes)`` made contiguous (transpose, SwapAxis)."""
    return copy_view(x.permute(tuple(axes)), out)


def permute_ref(x: torch.Tensor, axes: Sequence[int]) -> torch.Tensor:
    """Reference: reads and writes x once."""
    return x.permute(tuple(axes)).contiguous()


def _sliced(shape, strides, starts, steps, sizes) -> tuple[list, int]:
    """Strides and offset of the per-axis ``start + i * step`` view (steps may be < 0)."""
    view = [st * sp for st, sp in zip(strides, steps)]
    off = sum(st * b for st, b, n in zip(strides, starts, sizes) if n)
    return view, off


def slice_nd(x: torch.Tensor, starts: Sequence[int], steps: Sequence[int],
             sizes: Sequence[int], out=None) -> torch.Tensor:
    """``out[i] = x[start + i * step]`` per axis (slice, slice_axis, flip)."""
    out = _out(out, sizes, x)
    view, off = _sliced(x.shape, x.stride(), starts, steps, sizes)
    strided_copy(x, sizes, view, off, out, (_contig_strides(sizes), 0))
    return out


def slice_nd_ref(x: torch.Tensor, starts, steps, sizes) -> torch.Tensor:
    """Reference: index_select per axis; reads and writes the output's size once."""
    for d, (b, s, n) in enumerate(zip(starts, steps, sizes)):
        x = x.index_select(d, torch.arange(n, device=x.device) * s + b)
    return x.contiguous()


def scatter(g: torch.Tensor, shape: Sequence[int], starts: Sequence[int],
            steps: Sequence[int], out=None) -> torch.Tensor:
    """Zeros of ``shape`` with ``g`` placed at ``start + i * step`` (slice backward)."""
    out = fill(_out(out, shape, g), 0.0)
    view, off = _sliced(shape, _contig_strides(shape), starts, steps, g.shape)
    strided_copy(g, g.shape, g.stride(), 0, out, (view, off))
    return out


def scatter_ref(g: torch.Tensor, shape, starts, steps) -> torch.Tensor:
    """Reference: writes the output once, reads and writes g's size once more."""
    out = torch.zeros(tuple(shape), dtype=g.dtype, device=g.device)
    idx = [torch.arange(n, device=g.device) * s + b for b, s, n in zip(starts, steps, g.shape)]
    out[torch.meshgrid(*idx, indexing="ij")] = g
    return out


def slice_assign(base: torch.Tensor, value: torch.Tensor | float, starts: Sequence[int],
                 steps: Sequence[int], sizes: Sequence[int], out=None) -> torch.Tensor:
    """A copy of ``base`` with ``value`` (an array of ``sizes``, or a scalar) written at
    ``start + i * step`` per axis (MXNet's ``_slice_assign``/``_slice_assign_scalar``)."""
    out = copy_view(base, out)
    if not torch.is_tensor(value):  # a scalar: read one element through zero strides
        value = torch.full((1,), float(value), dtype=base.dtype, device=base.device)
        value = value.expand(tuple(sizes))
    view, off = _sliced(base.shape, _contig_strides(base.shape), starts, steps, sizes)
    strided_copy(value, sizes, value.stride(), 0, out, (view, off))
    return out


def slice_assign_ref(base: torch.Tensor, value, starts, steps, sizes) -> torch.Tensor:
    """Reference: copies base once, then writes the box (reads value once)."""
    out = base.clone()
    idx = [torch.arange(n, device=base.device) * s + b for b, s, n in zip(starts, steps, sizes)]
    out[torch.meshgrid(*idx, indexing="ij")] = value if torch.is_tensor(value) else \
        torch.tensor(float(value), dtype=base.dtype)
    return out


def flip(x: torch.Tensor, dims: Sequence[int], out=None) -> torch.Tensor:
    """``torch.flip(x, dims)`` as a negative-stride copy."""
    starts = [n - 1 if d in dims else 0 for d, n in enumerate(x.shape)]
    steps = [-1 if d in dims else 1 for d in range(x.dim())]
    return slice_nd(x, starts, steps, tuple(x.shape), out)


def flip_ref(x: torch.Tensor, dims: Sequence[int]) -> torch.Tensor:
    """Reference: reads and writes x once."""
    return torch.flip(x, tuple(dims))


# ---------------------------------------------------------------- broadcast / tile / repeat

def broadcast_to(x: torch.Tensor, shape: Sequence[int], out=None) -> torch.Tensor:
    """``x.expand(shape)`` made contiguous (broadcast_to/axis/like)."""
    return copy_view(x.expand(tuple(shape)), out)


def broadcast_to_ref(x: torch.Tensor, shape) -> torch.Tensor:
    """Reference: reads x, writes the output once."""
    return x.expand(tuple(shape)).contiguous()


def tile_dims(shape, reps) -> tuple[tuple, tuple]:
    """Shape and reps padded on the left with ones to one length (numpy.tile)."""
    n = max(len(reps), len(shape))
    return (1,) * (n - len(shape)) + tuple(shape), (1,) * (n - len(reps)) + tuple(reps)


def tile(x: torch.Tensor, reps: Sequence[int], out=None) -> torch.Tensor:
    """``numpy.tile``: a copy of the stride-0 view ``(r0, d0, r1, d1, ...)``."""
    dims, reps = tile_dims(tuple(x.shape), tuple(reps))
    xv = x.reshape(dims)
    inter = [v for pair in zip(reps, dims) for v in pair]
    strides = [v for st in xv.stride() for v in (0, st)]
    result = _out(out, [r * d for r, d in zip(reps, dims)], x)
    strided_copy(xv, inter, strides, 0, result, (_contig_strides(inter), 0))
    return result


def tile_ref(x: torch.Tensor, reps) -> torch.Tensor:
    """Reference: reads x, writes the output once."""
    dims, reps = tile_dims(tuple(x.shape), tuple(reps))
    return x.reshape(dims).repeat(reps)


def repeat(x: torch.Tensor, repeats: int, axis: int | None, out=None) -> torch.Tensor:
    """``repeat_interleave`` along ``axis`` (None: of the flattened array)."""
    xv = x.reshape(-1) if axis is None else x
    ax = 0 if axis is None else axis
    shape = list(xv.shape)
    sizes = shape[:ax + 1] + [repeats] + shape[ax + 1:]
    strides = list(xv.stride()[:ax + 1]) + [0] + list(xv.stride()[ax + 1:])
    shape[ax] *= repeats
    result = _out(out, shape, x)
    strided_copy(xv, sizes, strides, 0, result, (_contig_strides(sizes), 0))
    return result


def repeat_ref(x: torch.Tensor, repeats: int, axis: int | None) -> torch.Tensor:
    """Reference: reads x, writes the output once."""
    if axis is None:
        return torch.repeat_interleave(x.reshape(-1), repeats)
    return torch.repeat_interleave(x, repeats, dim=axis)


# ---------------------------------------------------------------- reduce-sum

@kernel
def _sum_kernel(src, dst, meta, n, r, RANK_O: tl.constexpr, RANK_R: tl.constexpr,
                BLOCK: tl.constexpr):
    """dst[o] = sum over reduced coordinates of src (fp32 accumulation, one loop per o)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    rem = offs
    base = offs * 0
    for d in tl.static_range(RANK_O - 1, -1, -1):
        size = tl.load(meta + d)
        base += (rem % size) * tl.load(meta + RANK_O + d)
        rem = rem // size
    acc = (offs * 0).to(tl.float32)
    for j in range(0, r):
        rj = j
        off = 0
        for d in tl.static_range(RANK_R - 1, -1, -1):
            size = tl.load(meta + 2 * RANK_O + d)
            off += (rj % size) * tl.load(meta + 2 * RANK_O + RANK_R + d)
            rj = rj // size
        acc += tl.load(src + base + off, mask=mask, other=0.0).to(tl.float32)
    tl.store(dst + offs, acc.to(dst.dtype.element_ty), mask=mask)


def reduce_sum(x: torch.Tensor, axes: Sequence[int], out=None) -> torch.Tensor:
    """Sum ``x`` (any strides) over ``axes``; the result drops those axes (contiguous)."""
    axes = sorted(a % x.dim() for a in axes)
    kept = [d for d in range(x.dim()) if d not in axes]
    shape = [x.shape[d] for d in kept]
    result = _out(out, shape, x)
    n, r = result.numel(), 1
    for a in axes:
        r *= x.shape[a]
    if n == 0:
        return result
    osz, (ost,) = _coalesce(shape, [x.stride(d) for d in kept])
    rsz, (rst,) = _coalesce([x.shape[a] for a in axes] or [1],
                            [x.stride(a) for a in axes] or [1])
    meta = device_meta(osz + ost + rsz + rst, x.device)
    block = _block(n, x.device)
    _sum_kernel[(cdiv(n, block),)](x, result, meta, n, r, RANK_O=len(osz), RANK_R=len(rsz),
                                   BLOCK=block)
    return result


def reduce_sum_ref(x: torch.Tensor, axes: Sequence[int]) -> torch.Tensor:
    """Reference: reads x once, writes the result once."""
    return x.sum(dim=tuple(axes)) if axes else x.clone()


def tile_backward(g: torch.Tensor, shape: Sequence[int], reps: Sequence[int],
                  out=None) -> torch.Tensor:
    """Gradient of :func:`tile`: ``g`` summed over the repetitions, into ``shape``."""
    dims, reps = tile_dims(tuple(shape), tuple(reps))
    split = [v for pair in zip(reps, dims) for v in pair]
    res = reduce_sum(g.reshape(split), range(0, len(split), 2),
                     None if out is None else out.view(dims))
    return res.view(tuple(shape))


def repeat_backward(g: torch.Tensor, shape: Sequence[int], repeats: int, axis: int | None,
                    out=None) -> torch.Tensor:
    """Gradient of :func:`repeat`: each element's copies summed."""
    shape = tuple(shape)
    if axis is None:
        res = reduce_sum(g.reshape(-1, repeats), (1,), None if out is None else out.view(-1))
        return res.view(shape)
    split = shape[:axis + 1] + (repeats,) + shape[axis + 1:]
    return reduce_sum(g.reshape(split), (axis + 1,), out)


# ---------------------------------------------------------------- concat / split

@kernel
def _parts_kernel(table, big, outer, width, max_w, TO_PARTS: tl.constexpr,
                  BLOCK: tl.constexpr):
    """Move part ``program_id(0)`` (row: pointer, width, column) to or from the 2-D view
    ``(outer, width)`` of ``big``; programs past a part's end exit."""
    part = tl.program_id(0)
    ptr = tl.load(table + 3 * part).to(tl.pointer_type(big.dtype.element_ty))
    w = tl.load(table + 3 * part + 1)
    col = tl.load(table + 3 * part + 2)
    offs = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < outer * w
    row = offs // w
    at = row * width + col + offs % w
    if TO_PARTS:
        tl.store(ptr + offs, tl.load(big + at, mask=mask), mask=mask)
    else:
        tl.store(big + at, tl.load(ptr + offs, mask=mask), mask=mask)


def _parts(big: torch.Tensor, parts: Sequence[torch.Tensor], axis: int, to_parts: bool):
    outer = 1
    for s in big.shape[:axis]:
        outer *= s
    inner = 1
    for s in big.shape[axis + 1:]:
        inner *= s
    rows, col = [], 0
    for t in parts:
        w = t.shape[axis] * inner if t.dim() == big.dim() else inner
        if w and outer:  # empty parts take no program
            rows += [t.data_ptr(), w, col]
        col += w
    if col != big.shape[axis] * inner:
        raise ValueError(f"parts {[tuple(t.shape) for t in parts]} do not fill axis {axis} "
                         f"of {tuple(big.shape)}")
    if not rows:
        return
    max_w = max(rows[1::3])
    table = device_meta(rows, big.device)  # a bound plan's buffers: the same rows each step
    block = _block(outer * max_w, big.device)
    _parts_kernel[(len(rows) // 3, cdiv(outer * max_w, block))](
        table, big, outer, col, max_w, TO_PARTS=to_parts, BLOCK=block)


def concat(tensors: Sequence[torch.Tensor], axis: int, out=None) -> torch.Tensor:
    """``torch.cat(tensors, axis)`` in one launch (inputs of one dtype, made contiguous)."""
    tensors = [t.contiguous() for t in tensors]
    shape = list(tensors[0].shape)
    shape[axis] = sum(t.shape[axis] for t in tensors)
    result = _out(out, shape, tensors[0])
    _parts(result, tensors, axis, to_parts=False)
    return result


def concat_ref(tensors: Sequence[torch.Tensor], axis: int) -> torch.Tensor:
    """Reference: reads every input once, writes the output once."""
    return torch.cat(list(tensors), dim=axis)


def stack(tensors: Sequence[torch.Tensor], axis: int, out=None) -> torch.Tensor:
    """``torch.stack`` in one launch: a concat of the inputs given a length-1 ``axis``."""
    result = concat([t.unsqueeze(axis) for t in tensors], axis,
                    None if out is None else out)
    return result


def split(x: torch.Tensor, sizes: Sequence[int], axis: int, out=None) -> tuple:
    """``torch.split(x, sizes, axis)`` into contiguous parts, in one launch."""
    x = x.contiguous()
    shapes = [tuple(x.shape[:axis]) + (s,) + tuple(x.shape[axis + 1:]) for s in sizes]
    outs = tuple(out) if out is not None else tuple(
        torch.empty(s, dtype=x.dtype, device=x.device) for s in shapes)
    for o, s in zip(outs, shapes):
        if o.numel() != torch.Size(s).numel() or not o.is_contiguous():
            raise ValueError(f"split output must be contiguous with {s}'s size")
    _parts(x, [o.view(s) for o, s in zip(outs, shapes)], axis, to_parts=True)
    return outs


def split_ref(x: torch.Tensor, sizes: Sequence[int], axis: int) -> tuple:
    """Reference: reads x once, writes every part once."""
    return tuple(t.contiguous() for t in torch.split(x, list(sizes), dim=axis))


# ---------------------------------------------------------------- nearest upsampling

_ADD = Program(2, (("({0} + {1})", ("x0", "x1")),), ("t0",))


def _up_sizes(x: torch.Tensor, oh: int) -> tuple[list, list]:
    """x (N, C, h, w) as the stride-0 view (N, C, h, s, w, s) with s = oh // h."""
    n, c, h, w = x.shape
    s = oh // h
    sn, sc, sh, sw = x.stride()
    return [n, c, h, s, w, s], [sn, sc, sh, 0, sw, 0]


def upsample_nearest(xs: Sequence[torch.Tensor], scale: int, mode: str = "concat",
                     out=None) -> torch.Tensor:
    """Nearest upsampling of NCHW inputs to the first one's size times ``scale``, the
    inputs concatenated on channels (one copy each) or summed (a copy, then in-place adds)."""
    n, c0, h0, w0 = xs[0].shape
    oh, ow = h0 * scale, w0 * scale
    channels = c0 if mode == "sum" else sum(x.shape[1] for x in xs)
    result = _out(out, (n, channels, oh, ow), xs[0])
    ost = _contig_strides(result.shape)
    begin = 0
    for k, x in enumerate(xs):
        sizes, strides = _up_sizes(x, oh)
        if mode == "sum" and k:
            acc = result.view(sizes)
            run(_ADD, [acc, x.reshape(sizes[:3] + [1, sizes[4], 1])], tuple(sizes),
                result.dtype, out=[acc])
            continue
        s = sizes[3]
        dst = [ost[0], ost[1], s * ost[2], ost[2], s * ost[3], ost[3]]
        strided_copy(x, sizes, strides, 0, result, (dst, begin * ost[1]))
        begin += 0 if mode == "sum" else x.shape[1]
    return result


def upsample_nearest_ref(xs: Sequence[torch.Tensor], scale: int,
                         mode: str = "concat") -> torch.Tensor:
    """Reference: repeat_interleave twice per input, then cat or a stacked sum (fp32)."""
    oh = xs[0].shape[2] * scale
    parts = [x.repeat_interleave(oh // x.shape[2], 2).repeat_interleave(oh // x.shape[2], 3)
             for x in xs]
    if mode == "sum":
        return torch.stack([t.float() for t in parts]).sum(0).to(xs[0].dtype)
    return torch.cat(parts, dim=1)


def upsample_nearest_backward(dy: torch.Tensor, shapes: Sequence[tuple], mode: str = "concat",
                              out=None) -> tuple:
    """Gradients of :func:`upsample_nearest`: ``dy`` (or its channel slice) summed over
    each input's repeated blocks, one reduce-sum per input."""
    outs = tuple(out) if out is not None else (None,) * len(shapes)
    grads, begin = [], 0
    for shape, o in zip(shapes, outs):
        n, c, h, w = shape
        s = dy.shape[2] // h
        part = dy if mode == "sum" else dy[:, begin:begin + c]
        grads.append(reduce_sum(part.view(n, c, h, s, w, s), (3, 5), o))
        begin += 0 if mode == "sum" else c
    return tuple(grads)


def upsample_nearest_backward_ref(dy: torch.Tensor, shapes: Sequence[tuple],
                                  mode: str = "concat") -> tuple:
    """Reference: a reshaped fp32 sum per input (reads dy once per input)."""
    grads, begin = [], 0
    for n, c, h, w in shapes:
        s = dy.shape[2] // h
        part = dy if mode == "sum" else dy[:, begin:begin + c]
        grads.append(part.float().reshape(n, c, h, s, w, s).sum((3, 5)).to(dy.dtype))
        begin += 0 if mode == "sum" else c
    return tuple(grads)


# ---------------------------------------------------------------- table entries

def _rand(dtype, device, shape, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(tuple(shape), generator=gen).to(device=device, dtype=dtype)


def _make_permute(dtype, device, shape):
    return (_rand(dtype, device, shape), tuple(range(len(shape)))[::-1]), {}


def _make_slice(dtype, device, shape):
    """Every axis: odd start, step 2 (last axis: reversed with step -3)."""
    starts = [1] * (len(shape) - 1) + [shape[-1] - 1]
    steps = [2] * (len(shape) - 1) + [-3]
    sizes = [(n - 2) // 2 + 1 for n in shape[:-1]] + [(shape[-1] - 1) // 3 + 1]
    return (_rand(dtype, device, shape), starts, steps, sizes), {}


def _make_scatter(dtype, device, shape):
    (x, starts, steps, sizes), _ = _make_slice(dtype, device, shape)
    return (_rand(dtype, device, sizes), tuple(shape), starts, steps), {}


def _make_slice_assign(scalar: bool):
    def make(dtype, device, shape):
        starts = [1] * len(shape)
        steps = [2 if d % 2 else -1 for d in range(len(shape))]
        sizes = [(n - 1) // 2 if d % 2 else 2 for d, n in enumerate(shape)]
        value = 2.5 if scalar else _rand(dtype, device, sizes, seed=1)
        return (_rand(dtype, device, shape), value, starts, steps, sizes), {}
    return make


def _make_flip(dtype, device, shape):
    return (_rand(dtype, device, shape), (0, len(shape) - 1)), {}


def _make_broadcast(dtype, device, shape):
    small = tuple(1 if d % 2 == 0 else n for d, n in enumerate(shape))
    return (_rand(dtype, device, small), tuple(shape)), {}


def _make_tile(dtype, device, shape):
    return (_rand(dtype, device, shape), (2,) + (1,) * (len(shape) - 1) + (3,)), {}


def _make_repeat(dtype, device, shape):
    return (_rand(dtype, device, shape), 3, len(shape) - 1), {}


def _make_reduce(dtype, device, shape):
    return (_rand(dtype, device, shape).transpose(0, -1), (0, 2) if len(shape) > 2 else (0,)), {}


def _make_concat(dtype, device, shape):
    parts = [_rand(dtype, device, shape[:1] + (w,) + shape[2:], seed=w) for w in (1, 3, shape[1])]
    return (parts, 1), {}


def _make_split(dtype, device, shape):
    return (_rand(dtype, device, shape), (1, 0, shape[1] - 1), 1), {}


def _make_upsample(mode):
    def make(dtype, device, shape):
        n, c, h, w = shape
        xs = [_rand(dtype, device, shape), _rand(dtype, device, (n, c, 2 * h, 2 * w), seed=1)]
        return (xs, 2, mode), {}
    return make


def _make_upsample_bwd(mode):
    def make(dtype, device, shape):
        n, c, h, w = shape
        dy = _rand(dtype, device, (n, c if mode == "sum" else 2 * c, 2 * h, 2 * w))
        return (dy, [tuple(shape), (n, c, 2 * h, 2 * w)], mode), {}
    return make


def _upsample_bytes(xs, scale, mode):
    out = xs[0].numel() * scale * scale * (1 if mode == "sum" else len(xs))
    return tensor_bytes(*xs) + xs[0].element_size() * out * (2 * len(xs) - 1 if mode == "sum"
                                                             else 1)


def _copy_bytes(x, *args):
    return 2 * tensor_bytes(x)


_SHAPES = ((3, 37), (5, 129), (2, 3, 7, 6))
_BENCH = ((4096, 4096), (64, 512, 512))
_DT = (torch.float32, torch.float16, torch.bfloat16)
_EXACT = {torch.float32: (0, 0), torch.float16: (0, 0), torch.bfloat16: (0, 0)}


_SUMS = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2)}
_UP_SHAPES = ((2, 3, 5, 7), (1, 2, 3, 1))
_UP_BENCH = ((8, 64, 128, 128),)


def _spec(name, fn, ref, make, **kw) -> KernelSpec:
    kw.setdefault("bytes", _copy_bytes)
    kw.setdefault("shapes", _SHAPES)
    kw.setdefault("bench_shapes", _BENCH)
    return KernelSpec(name=name, fn=fn, ref=ref, make=make, dtypes=_DT,
                      tol=kw.pop("tol", _EXACT), family="copy", **kw)


KERNELS = [
    _spec("permute", permute, permute_ref, _make_permute),
    _spec("slice_nd", slice_nd, slice_nd_ref, _make_slice),
    _spec("slice_scatter", scatter, scatter_ref, _make_scatter,
          bytes=lambda g, shape, *a: tensor_bytes(g) + 2 * g.element_size() * math.prod(shape)),
    _spec("flip", flip, flip_ref, _make_flip),
    _spec("slice_assign", slice_assign, slice_assign_ref, _make_slice_assign(False),
          bytes=lambda b, v, *a: 2 * tensor_bytes(b) + 2 * tensor_bytes(v)),
    _spec("slice_assign_scalar", slice_assign, slice_assign_ref, _make_slice_assign(True),
          bytes=lambda b, *a: 2 * tensor_bytes(b)),
    _spec("broadcast_to", broadcast_to, broadcast_to_ref, _make_broadcast,
          bytes=lambda x, shape: tensor_bytes(x) + x.element_size() * math.prod(shape)),
    _spec("tile", tile, tile_ref, _make_tile,
          bytes=lambda x, reps: tensor_bytes(x) * (1 + math.prod(reps))),
    _spec("repeat", repeat, repeat_ref, _make_repeat,
          bytes=lambda x, r, axis: tensor_bytes(x) * (1 + r)),
    _spec("reduce_sum", reduce_sum, reduce_sum_ref, _make_reduce,
          tol={torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 1e-2),
               torch.bfloat16: (2e-2, 2e-2)},
          bytes=lambda x, axes: tensor_bytes(x)),
    _spec("concat", concat, concat_ref, _make_concat,
          bytes=lambda parts, axis: 2 * tensor_bytes(*parts)),
    _spec("split", split, split_ref, _make_split),
    _spec("upsample_nearest_concat", upsample_nearest, upsample_nearest_ref,
          _make_upsample("concat"), shapes=_UP_SHAPES, bench_shapes=_UP_BENCH,
          bytes=_upsample_bytes),
    _spec("upsample_nearest_sum", upsample_nearest, upsample_nearest_ref,
          _make_upsample("sum"), shapes=_UP_SHAPES, bench_shapes=_UP_BENCH,
          bytes=_upsample_bytes, tol=_SUMS),
    _spec("upsample_nearest_backward", upsample_nearest_backward,
          upsample_nearest_backward_ref, _make_upsample_bwd("concat"), shapes=_UP_SHAPES,
          bench_shapes=_UP_BENCH, bytes=lambda dy, *a: tensor_bytes(dy) * 5 // 4, tol=_SUMS),
    _spec("upsample_nearest_sum_backward", upsample_nearest_backward,
          upsample_nearest_backward_ref, _make_upsample_bwd("sum"), shapes=_UP_SHAPES,
          bench_shapes=_UP_BENCH, bytes=lambda dy, *a: tensor_bytes(dy) * 9 // 4, tol=_SUMS),
]
