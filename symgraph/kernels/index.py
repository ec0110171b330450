"""Indexing: gather (take, Embedding, gather_nd), scatter-add (their gradients), pick and its
gradient, one_hot and where.

Index tensors hold integer values in any dtype (MXNet passes float32); kernels truncate
them toward zero (the float-to-int cast) and then clip to ``[0, n-1]`` or wrap modulo ``n``.
``take`` views the data as ``(outer, n, inner)`` around the indexed axis; its gradient
adds each output-gradient slice into its row with ``tl.atomic_add`` into fp32 zeros (fp16
and bf16 gradients are accumulated in fp32 and cast once), so repeated indices sum.

Bytes moved: gathers read the indices and the gathered rows and write the output;
scatter-adds read the gradient and indices and read-modify-write the touched rows.
"""
from __future__ import annotations

import math

import torch
import triton.language as tl

from .copy import copy_view, fill
from .runtime import block_for, cdiv, device_meta, kernel
from .table import KernelSpec, tensor_bytes

_MODES = {"clip": 0, "wrap": 1}


def _block(n: int, device: torch.device) -> int:
    return block_for(n, cap=1024 if device.type == "cuda" else 256)


@kernel
def _take_kernel(a, idx, out, n_idx, n_axis, inner, total, MODE: tl.constexpr,
                 BACKWARD: tl.constexpr, BLOCK: tl.constexpr):
    """Forward: out[o, k, i] = a[o, bound(idx[k]), i]; backward: a[o, j, i] += out[o, k, i]."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    i = offs % inner
    k = (offs // inner) % n_idx
    o = offs // (inner * n_idx)
    j = tl.load(idx + k, mask=mask, other=0).to(tl.int64)
    if MODE == 0:
        j = tl.minimum(tl.maximum(j, 0), n_axis - 1)
    else:
        j = ((j % n_axis) + n_axis) % n_axis
    src = (o * n_axis + j) * inner + i
    if BACKWARD:
        g = tl.load(out + offs, mask=mask, other=0.0).to(tl.float32)
        tl.atomic_add(a + src, g, mask=mask)
    else:
        tl.store(out + offs, tl.load(a + src, mask=mask), mask=mask)


def _split(shape, axis: int) -> tuple[int, int, int]:
    outer = 1
    for s in shape[:axis]:
        outer *= s
    inner = 1
    for s in shape[axis + 1:]:
        inner *= s
    return outer, shape[axis], inner


def take(a: torch.Tensor, indices: torch.Tensor, axis: int = 0, mode: str = "clip",
         out=None) -> torch.Tensor:
    """``a`` gathered along ``axis`` at ``indices`` (clip or wrap); Embedding is axis 0."""
    a = a.contiguous()
    idx = indices.contiguous().reshape(-1)
    shape = tuple(a.shape[:axis]) + tuple(indices.shape) + tuple(a.shape[axis + 1:])
    result = out if out is not None else torch.empty(shape, dtype=a.dtype, device=a.device)
    outer, n_axis, inner = _split(a.shape, axis)
    total = result.numel()
    if total:
        block = _block(total, a.device)
        _take_kernel[(cdiv(total, block),)](a, idx, result, idx.numel(), n_axis, inner, total,
                                            MODE=_MODES[mode], BACKWARD=False, BLOCK=block)
    return result


def take_ref(a: torch.Tensor, indices: torch.Tensor, axis: int = 0,
             mode: str = "clip") -> torch.Tensor:
    """Reference: index_select (reads the indices and the rows, writes the output)."""
    n = a.shape[axis]
    j = indices.to(torch.int64).reshape(-1)
    j = j.clamp(0, n - 1) if mode == "clip" else torch.remainder(j, n)
    shape = tuple(a.shape[:axis]) + tuple(indices.shape) + tuple(a.shape[axis + 1:])
    return a.index_select(axis, j).reshape(shape)


def take_backward(g: torch.Tensor, indices: torch.Tensor, shape: tuple, axis: int = 0,
                  mode: str = "clip", out=None) -> torch.Tensor:
    """Gradient of :func:`take` for ``a`` of ``shape``: slices of ``g`` added at indices."""
    shape = tuple(shape)
    result = out if out is not None else torch.empty(shape, dtype=g.dtype, device=g.device)
    acc = result if result.dtype in (torch.float32, torch.float64) else torch.empty(
        shape, dtype=torch.float32, device=g.device)
    fill(acc, 0.0)
    idx = indices.contiguous().reshape(-1)
    outer, n_axis, inner = _split(shape, axis)
    total = outer * idx.numel() * inner
    if total:
        block = _block(total, g.device)
        _take_kernel[(cdiv(total, block),)](acc, idx, g.contiguous(), idx.numel(), n_axis,
                                            inner, total, MODE=_MODES[mode], BACKWARD=True,
                                            BLOCK=block)
    if acc is not result:
        copy_view(acc, result)
    return result


def take_backward_ref(g: torch.Tensor, indices: torch.Tensor, shape: tuple, axis: int = 0,
                      mode: str = "clip") -> torch.Tensor:
    """Reference: index_add_ into zeros (fp32 accumulation for half types)."""
    n = shape[axis]
    j = indices.to(torch.int64).reshape(-1)
    j = j.clamp(0, n - 1) if mode == "clip" else torch.remainder(j, n)
    flat = g.reshape(tuple(shape[:axis]) + (j.numel(),) + tuple(shape[axis + 1:])).float()
    out = torch.zeros(tuple(shape), dtype=torch.float32, device=g.device)
    return out.index_add_(axis, j, flat).to(g.dtype)


# ---------------------------------------------------------------- pick

@kernel
def _pick_kernel(data, idx, out, n_axis, inner, total, MODE: tl.constexpr,
                 BACKWARD: tl.constexpr, BLOCK: tl.constexpr):
    """Forward: out[o, i] = data[o, bound(idx[o, i]), i]; backward: zeros elsewhere and
    data[o, j, i] = out[o, i] (one position per (o, i): no atomics)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    i = offs % inner
    o = offs // inner
    j = tl.load(idx + offs, mask=mask, other=0).to(tl.int64)
    if MODE == 0:
        j = tl.minimum(tl.maximum(j, 0), n_axis - 1)
    else:
        j = ((j % n_axis) + n_axis) % n_axis
    if BACKWARD:
        g = tl.load(out + offs, mask=mask)
        for r in range(0, n_axis):
            tl.store(data + (o * n_axis + r) * inner + i, tl.where(j == r, g, 0.0), mask=mask)
    else:
        tl.store(out + offs, tl.load(data + (o * n_axis + j) * inner + i, mask=mask), mask=mask)


def pick(data: torch.Tensor, index: torch.Tensor, axis: int, mode: str = "clip",
         out=None) -> torch.Tensor:
    """``data`` picked along ``axis`` at ``index`` (data's shape without the axis)."""
    data = data.contiguous()
    outer, n_axis, inner = _split(data.shape, axis)
    shape = tuple(data.shape[:axis]) + tuple(data.shape[axis + 1:])
    result = out if out is not None else torch.empty(shape, dtype=data.dtype,
                                                      device=data.device)
    total = outer * inner
    block = _block(total, data.device)
    _pick_kernel[(cdiv(total, block),)](data, index.contiguous(), result, n_axis, inner, total,
                                        MODE=_MODES[mode], BACKWARD=False, BLOCK=block)
    return result


def pick_ref(data: torch.Tensor, index: torch.Tensor, axis: int,
             mode: str = "clip") -> torch.Tensor:
    """Reference: torch.gather (reads index and picked elements, writes the output)."""
    n = data.shape[axis]
    j = index.to(torch.int64)
    j = j.clamp(0, n - 1) if mode == "clip" else torch.remainder(j, n)
    return torch.gather(data, axis, j.unsqueeze(axis)).squeeze(axis)


def pick_backward(g: torch.Tensor, index: torch.Tensor, shape: tuple, axis: int,
                  mode: str = "clip", out=None) -> torch.Tensor:
    """Gradient of :func:`pick`: ``g`` placed at the picked positions of zeros."""
    result = out if out is not None else torch.empty(tuple(shape), dtype=g.dtype,
                                                     device=g.device)
    outer, n_axis, inner = _split(tuple(shape), axis)
    total = outer * inner
    block = _block(total, g.device)
    _pick_kernel[(cdiv(total, block),)](result, index.contiguous(), g.contiguous(), n_axis,
                                        inner, total, MODE=_MODES[mode], BACKWARD=True,
                                        BLOCK=block)
    return result


def pick_backward_ref(g: torch.Tensor, index: torch.Tensor, shape: tuple, axis: int,
                      mode: str = "clip") -> torch.Tensor:
    """Reference: scatter into zeros (writes the whole gradient once)."""
    n = shape[axis]
    j = index.to(torch.int64)
    j = j.clamp(0, n - 1) if mode == "clip" else torch.remainder(j, n)
    out = torch.zeros(tuple(shape), dtype=g.dtype, device=g.device)
    return out.scatter_(axis, j.unsqueeze(axis), g.unsqueeze(axis))


# ---------------------------------------------------------------- one_hot / where

@kernel
def _one_hot_kernel(idx, out, depth, total, on, off, BLOCK: tl.constexpr):
    """out[k, c] = on if trunc(idx[k]) == c else off."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    j = tl.load(idx + offs // depth, mask=mask, other=0).to(tl.int64)
    v = tl.where(j == offs % depth, on, off)
    tl.store(out + offs, v.to(out.dtype.element_ty), mask=mask)


def one_hot(indices: torch.Tensor, depth: int, on_value: float = 1.0, off_value: float = 0.0,
            dtype: torch.dtype = torch.float32, out=None) -> torch.Tensor:
    """One-hot rows of length ``depth`` (out-of-range indices: all ``off_value``)."""
    shape = tuple(indices.shape) + (depth,)
    result = out if out is not None else torch.empty(shape, dtype=dtype, device=indices.device)
    total = result.numel()
    block = _block(total, indices.device)
    _one_hot_kernel[(cdiv(total, block),)](indices.contiguous(), result, depth, total,
                                           float(on_value), float(off_value), BLOCK=block)
    return result


def one_hot_ref(indices, depth, on_value=1.0, off_value=0.0, dtype=torch.float32):
    """Reference: comparison against arange (writes the output once)."""
    hot = indices.to(torch.int64).unsqueeze(-1) == torch.arange(depth, device=indices.device)
    on = torch.tensor(on_value, dtype=torch.float64).to(dtype)
    off = torch.tensor(off_value, dtype=torch.float64).to(dtype)
    return torch.where(hot, on, off)


@kernel
def _where_kernel(cond, x, y, out, rows, total, BLOCK: tl.constexpr):
    """out = x where cond != 0 else y; cond is read at offs // rows (rows 1: same shape)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    c = tl.load(cond + offs // rows, mask=mask, other=0)
    v = tl.where(c != 0, tl.load(x + offs, mask=mask), tl.load(y + offs, mask=mask))
    tl.store(out + offs, v, mask=mask)


def where(cond: torch.Tensor, x: torch.Tensor, y: torch.Tensor, out=None) -> torch.Tensor:
    """MXNet ``where``: ``cond`` of x's shape, or 1-D over x's first axis."""
    result = out if out is not None else torch.empty_like(x, memory_format=torch.contiguous_format)
    total = x.numel()
    rows = total // cond.numel() if cond.dim() < x.dim() else 1
    block = _block(total, x.device)
    _where_kernel[(cdiv(total, block),)](cond.contiguous(), x.contiguous(), y.contiguous(),
                                         result, rows, total, BLOCK=block)
    return result


def where_ref(cond: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Reference: torch.where (reads cond, x, y; writes the output)."""
    if cond.dim() < x.dim():
        cond = cond.reshape((-1,) + (1,) * (x.dim() - 1))
    return torch.where(cond != 0, x, y)


# ---------------------------------------------------------------- gather_nd

@kernel
def _gather_nd_kernel(data, idx, out, dims, n_y, inner, total, M: tl.constexpr,
                      BACKWARD: tl.constexpr, BLOCK: tl.constexpr):
    """Forward (0): out[y, i] = data[w(idx[0, y]), ..., w(idx[M-1, y]), i] (w wraps
    negatives); backward (1): data[...] += out[y, i] with atomics (repeated index tuples
    sum); scatter (2): data[...] = out[y, i] (repeated tuples: one of them wins)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    i = offs % inner
    y = offs // inner
    row = offs * 0
    for m in tl.static_range(M):
        size = tl.load(dims + m)
        j = tl.load(idx + m * n_y + y, mask=mask, other=0).to(tl.int64)
        row = row * size + ((j % size) + size) % size
    src = row * inner + i
    if BACKWARD == 1:
        g = tl.load(out + offs, mask=mask, other=0.0).to(tl.float32)
        tl.atomic_add(data + src, g, mask=mask)
    elif BACKWARD == 2:
        tl.store(data + src, tl.load(out + offs, mask=mask), mask=mask)
    else:
        tl.store(out + offs, tl.load(data + src, mask=mask), mask=mask)


def _nd_layout(shape: tuple, indices: torch.Tensor) -> tuple[int, int, int, torch.Tensor]:
    """(M, index tuples, inner size, the M indexed sizes as an int64 tensor)."""
    m = indices.shape[0]
    if indices.dim() < 2 or m > len(shape):
        raise ValueError(f"gather_nd: indices of shape {tuple(indices.shape)} do not index "
                         f"data of shape {tuple(shape)}")
    inner = 1
    for s in shape[m:]:
        inner *= s
    dims = device_meta(shape[:m], indices.device)
    return m, indices[0].numel(), inner, dims


def gather_nd(data: torch.Tensor, indices: torch.Tensor, out=None) -> torch.Tensor:
    """``out[y] = data[indices[0, y], ..., indices[M-1, y]]`` (negative indices wrap)."""
    data, idx = data.contiguous(), indices.contiguous()
    m, n_y, inner, dims = _nd_layout(tuple(data.shape), idx)
    shape = tuple(idx.shape[1:]) + tuple(data.shape[m:])
    result = out if out is not None else torch.empty(shape, dtype=data.dtype,
                                                      device=data.device)
    total = n_y * inner
    if total:
        block = _block(total, data.device)
        _gather_nd_kernel[(cdiv(total, block),)](data, idx, result, dims, n_y, inner, total,
                                                 M=m, BACKWARD=0, BLOCK=block)
    return result


def gather_nd_ref(data: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """Reference: advanced indexing (reads the indices and the rows, writes the output)."""
    idx = indices.to(torch.int64)
    return data[tuple(torch.remainder(idx[i], data.shape[i]) for i in range(idx.shape[0]))]


def gather_nd_backward(g: torch.Tensor, indices: torch.Tensor, shape: tuple,
                       out=None) -> torch.Tensor:
    """Gradient of :func:`gather_nd` for data of ``shape``: ``g`` added at the indices
    (fp32 atomics, cast once for half types)."""
    shape = tuple(shape)
    result = out if out is not None else torch.empty(shape, dtype=g.dtype, device=g.device)
    acc = result if result.dtype in (torch.float32, torch.float64) else torch.empty(
        shape, dtype=torch.float32, device=g.device)
    fill(acc, 0.0)
    idx = indices.contiguous()
    m, n_y, inner, dims = _nd_layout(shape, idx)
    total = n_y * inner
    if total:
        block = _block(total, g.device)
        _gather_nd_kernel[(cdiv(total, block),)](acc, idx, g.contiguous(), dims, n_y, inner,
                                                 total, M=m, BACKWARD=1, BLOCK=block)
    if acc is not result:
        copy_view(acc, result)
    return result


def gather_nd_backward_ref(g: torch.Tensor, indices: torch.Tensor, shape: tuple) -> torch.Tensor:
    """Reference: index_put_ with accumulate into fp32 zeros."""
    idx = indices.to(torch.int64)
    at = tuple(torch.remainder(idx[i], shape[i]) for i in range(idx.shape[0]))
    out = torch.zeros(tuple(shape), dtype=torch.float32, device=g.device)
    return out.index_put_(at, g.float(), accumulate=True).to(g.dtype)


def scatter_nd(data: torch.Tensor, indices: torch.Tensor, base: torch.Tensor | tuple,
               out=None) -> torch.Tensor:
    """``base`` (a tensor, copied; or a shape: zeros) with ``data[y]`` written at
    ``indices[:, y]`` (negative indices wrap; of repeated tuples one value wins)."""
    shape = tuple(base.shape) if isinstance(base, torch.Tensor) else tuple(base)
    result = out if out is not None else torch.empty(shape, dtype=data.dtype,
                                                      device=data.device)
    if isinstance(base, torch.Tensor):
        copy_view(base, result)
    else:
        fill(result, 0.0)
    idx = indices.contiguous()
    m, n_y, inner, dims = _nd_layout(shape, idx)
    total = n_y * inner
    if total:
        block = _block(total, data.device)
        _gather_nd_kernel[(cdiv(total, block),)](result, idx, data.contiguous(), dims, n_y,
                                                 inner, total, M=m, BACKWARD=2, BLOCK=block)
    return result


def scatter_nd_ref(data: torch.Tensor, indices: torch.Tensor, base) -> torch.Tensor:
    """Reference: index_put_ into zeros or a copy of ``base``."""
    if isinstance(base, torch.Tensor):
        out = base.clone()
    else:
        out = torch.zeros(tuple(base), dtype=data.dtype, device=data.device)
    idx = indices.to(torch.int64)
    at = tuple(torch.remainder(idx[i], out.shape[i]) for i in range(idx.shape[0]))
    return out.index_put_(at, data)


# ---------------------------------------------------------------- ravel / unravel

@kernel
def _ravel_kernel(multi, flat, dims, n, NDIM: tl.constexpr, RAVEL: tl.constexpr,
                  BLOCK: tl.constexpr):
    """Ravel: flat[i] = sum_j trunc(multi[j, i]) * stride_j; unravel: multi[j, i] = the
    j-th coordinate of trunc(flat[i]) in ``dims`` (C division, as MXNet)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if RAVEL:
        acc = offs * 0
        for j in tl.static_range(NDIM):
            v = tl.load(multi + j * n + offs, mask=mask, other=0).to(tl.int64)
            acc = acc * tl.load(dims + j) + v
        tl.store(flat + offs, acc.to(flat.dtype.element_ty), mask=mask)
    else:
        idx = tl.load(flat + offs, mask=mask, other=0).to(tl.int64)
        for jj in tl.static_range(NDIM - 1):
            j = NDIM - 1 - jj
            size = tl.load(dims + j)
            q = idx // size
            tl.store(multi + j * n + offs, (idx - q * size).to(multi.dtype.element_ty), mask=mask)
            idx = q
        tl.store(multi + offs, idx.to(multi.dtype.element_ty), mask=mask)


def ravel(multi: torch.Tensor, shape: tuple, out=None) -> torch.Tensor:
    """Flat indices into ``shape`` of the multi-indices ``multi`` (``(len(shape), ...)``)."""
    multi = multi.contiguous()
    result = out if out is not None else torch.empty(tuple(multi.shape[1:]), dtype=multi.dtype,
                                                      device=multi.device)
    n = result.numel()
    if n:
        dims = device_meta(shape, multi.device)
        block = _block(n, multi.device)
        _ravel_kernel[(cdiv(n, block),)](multi, result, dims, n, NDIM=len(shape), RAVEL=True,
                                         BLOCK=block)
    return result


def ravel_ref(multi: torch.Tensor, shape: tuple) -> torch.Tensor:
    """Reference: Horner's rule over the rows (reads multi, writes one row)."""
    acc = torch.zeros(tuple(multi.shape[1:]), dtype=torch.int64, device=multi.device)
    for j, size in enumerate(shape):
        acc = acc * size + multi[j].to(torch.int64)
    return acc.to(multi.dtype)


def unravel(flat: torch.Tensor, shape: tuple, out=None) -> torch.Tensor:
    """The multi-indices (``(len(shape), ...)``) of the flat indices ``flat`` in ``shape``."""
    flat = flat.contiguous()
    result = out if out is not None else torch.empty((len(shape),) + tuple(flat.shape),
                                                      dtype=flat.dtype, device=flat.device)
    n = flat.numel()
    if n:
        dims = device_meta(shape, flat.device)
        block = _block(n, flat.device)
        _ravel_kernel[(cdiv(n, block),)](result, flat, dims, n, NDIM=len(shape), RAVEL=False,
                                         BLOCK=block)
    return result


def unravel_ref(flat: torch.Tensor, shape: tuple) -> torch.Tensor:
    """Reference: repeated truncating division (reads flat, writes len(shape) rows)."""
    idx = flat.to(torch.int64)
    rows = []
    for size in reversed(shape[1:]):
        q = torch.div(idx, size, rounding_mode="trunc")
        rows.append(idx - q * size)
        idx = q
    rows.append(idx)
    return torch.stack(rows[::-1]).to(flat.dtype)


# ---------------------------------------------------------------- index_array

@kernel
def _index_array_kernel(out, meta, m, total, BLOCK: tl.constexpr):
    """out[i, j] = coordinate ``axes[j]`` of flat position i: (i // stride) % size, with
    ``meta`` = sizes then strides of the selected axes."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    i = offs // m
    j = offs - i * m
    size = tl.load(meta + j, mask=mask, other=1)
    stride = tl.load(meta + m + j, mask=mask, other=1)
    tl.store(out + offs, ((i // stride) % size).to(out.dtype.element_ty), mask=mask)


def index_array(shape: tuple, axes: tuple, device, out=None) -> torch.Tensor:
    """The int64 ``shape + (len(axes),)`` array of every position's coordinates on ``axes``
    (non-negative axes of ``shape``)."""
    result = out if out is not None else torch.empty(tuple(shape) + (len(axes),),
                                                      dtype=torch.int64, device=device)
    total = result.numel()
    if total:
        strides = [1] * len(shape)
        for d in range(len(shape) - 2, -1, -1):
            strides[d] = strides[d + 1] * shape[d + 1]
        meta = device_meta([shape[a] for a in axes] + [strides[a] for a in axes], device)
        block = _block(total, result.device)
        _index_array_kernel[(cdiv(total, block),)](result, meta, len(axes), total, BLOCK=block)
    return result


def index_array_ref(shape: tuple, axes: tuple, device) -> torch.Tensor:
    """Reference: one arange per axis broadcast into the output (writes it once)."""
    grids = torch.meshgrid(*[torch.arange(n, device=device) for n in shape], indexing="ij")
    return torch.stack([grids[a] for a in axes], dim=-1) if axes else \
        torch.empty(tuple(shape) + (0,), dtype=torch.int64, device=device)


# ---------------------------------------------------------------- table entries

def _rand(dtype, device, shape, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(tuple(shape), generator=gen).to(device=device, dtype=dtype)


def _ints(device, shape, high, seed=1, low=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, tuple(shape), generator=gen).float().to(device)


def _make_take(dtype, device, shape):
    return (_rand(dtype, device, shape), _ints(device, (7,), shape[0] + 3, low=-2), 0), {}


def _make_take_wrap(dtype, device, shape):
    a = _rand(dtype, device, shape)
    return (a, _ints(device, (2, 5), 3 * shape[-1], low=-shape[-1]), a.dim() - 1, "wrap"), {}


def _make_take_bwd(dtype, device, shape):
    idx = _ints(device, (11,), shape[0])  # repeated rows: sums
    g = _rand(dtype, device, (11,) + tuple(shape[1:]))
    return (g, idx, tuple(shape)), {}


def _make_pick(dtype, device, shape):
    data = _rand(dtype, device, shape)
    return (data, _ints(device, shape[:1] + shape[2:], shape[1] + 2, low=-1), 1), {}


def _make_pick_bwd(dtype, device, shape):
    (data, idx, axis), _ = _make_pick(dtype, device, shape)
    return (_rand(dtype, device, idx.shape), idx, tuple(shape), axis), {}


def _make_one_hot(dtype, device, shape):
    return (_ints(device, shape[:-1], shape[-1] + 2), shape[-1], 2.5, -1.0, dtype), {}


def _make_where(dtype, device, shape):
    cond = _ints(device, shape[:1], 2)
    return (cond, _rand(dtype, device, shape), _rand(dtype, device, shape, seed=2)), {}


def _make_gather_nd(dtype, device, shape):
    m = 1 if len(shape) == 2 else 2
    idx = _ints(device, (m, shape[0] + 4), 3 * shape[0], low=-2 * shape[0])
    return (_rand(dtype, device, shape), idx), {}


def _make_gather_nd_bwd(dtype, device, shape):
    (data, idx), _ = _make_gather_nd(dtype, device, shape)
    g = _rand(dtype, device, (idx.shape[1],) + tuple(shape[idx.shape[0]:]))
    return (g, idx, tuple(shape)), {}


def _make_scatter_nd(dtype, device, shape):
    m = 1 if len(shape) == 2 else 2
    gen = torch.Generator().manual_seed(4)  # distinct index tuples: a unique result
    flat = torch.randperm(shape[0] * (shape[1] if m == 2 else 1), generator=gen)[:shape[0]]
    rows = [flat] if m == 1 else [flat // shape[1], flat % shape[1] - shape[1]]
    idx = torch.stack(rows).float().to(device)
    data = _rand(dtype, device, (idx.shape[1],) + tuple(shape[m:]))
    return (data, idx, _rand(dtype, device, shape, seed=5)), {}


def _make_ravel(dtype, device, shape):
    dims = tuple(shape[:2]) + (4,)
    rows = [_ints(device, (1,) + tuple(shape[1:]), d, seed=j) for j, d in enumerate(dims)]
    return (torch.cat(rows).to(dtype), dims), {}


def _make_unravel(dtype, device, shape):
    dims = tuple(shape[:2]) + (4,)
    return (_ints(device, shape[1:], shape[0] * shape[1] * 4).to(dtype), dims), {}


def _make_index_array(dtype, device, shape):
    return (tuple(shape), tuple(range(len(shape)))[::-1][:2], device), {}


_SHAPES = ((3, 37), (5, 129), (2, 3, 7, 6))
_DT = (torch.float32, torch.float16, torch.bfloat16)
_EXACT = {torch.float32: (0, 0), torch.float16: (0, 0), torch.bfloat16: (0, 0)}
_SUMS = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-3, 1e-3),
         torch.bfloat16: (1e-2, 1e-2)}


def _entry(name, fn, ref, make, traffic, tol=None, bench=((1 << 15, 512),)) -> KernelSpec:
    return KernelSpec(name=name, fn=fn, ref=ref, make=make, shapes=_SHAPES, bench_shapes=bench,
                      dtypes=_DT, tol=tol or _EXACT, bytes=traffic, family="index")


KERNELS = [
    _entry("take", take, take_ref, _make_take,
           lambda a, i, axis: tensor_bytes(i) + 2 * i.numel() * a[0].numel() * a.element_size()),
    _entry("take_wrap", take, take_ref, _make_take_wrap,
           lambda a, i, axis, mode: tensor_bytes(i) + 2 * tensor_bytes(a) // a.shape[-1]
           * i.numel()),
    _entry("take_backward", take_backward, take_backward_ref, _make_take_bwd,
           lambda g, i, shape: tensor_bytes(g, i) + 2 * tensor_bytes(g), tol=_SUMS),
    _entry("pick", pick, pick_ref, _make_pick, lambda d, i, axis: tensor_bytes(i) * 3),
    _entry("pick_backward", pick_backward, pick_backward_ref, _make_pick_bwd,
           lambda g, i, shape, axis: tensor_bytes(g, i) + g.element_size() * g.numel()
           * shape[axis]),
    _entry("one_hot", one_hot, one_hot_ref, _make_one_hot,
           lambda i, depth, *a: tensor_bytes(i) * (1 + depth)),
    _entry("where", where, where_ref, _make_where,
           lambda c, x, y: tensor_bytes(c, x, y, x), bench=((4096, 4096),)),
    _entry("gather_nd", gather_nd, gather_nd_ref, _make_gather_nd,
           lambda d, i: tensor_bytes(i) + 2 * d.element_size() * i.shape[1]
           * d[(0,) * i.shape[0]].numel(), bench=((1 << 15, 512),)),
    _entry("gather_nd_backward", gather_nd_backward, gather_nd_backward_ref,
           _make_gather_nd_bwd, lambda g, i, shape: tensor_bytes(g, i) + 2 * tensor_bytes(g),
           tol=_SUMS, bench=((1 << 15, 512),)),
    _entry("scatter_nd", scatter_nd, scatter_nd_ref, _make_scatter_nd,
           lambda d, i, base: tensor_bytes(i) + 2 * tensor_bytes(d) + 2 * tensor_bytes(base)),
    KernelSpec(name="ravel", fn=ravel, ref=ravel_ref, make=_make_ravel, shapes=_SHAPES,
               bench_shapes=((4, 1 << 20),), dtypes=(torch.float32, torch.int32), tol=_EXACT,
               bytes=lambda m, shape: tensor_bytes(m) * (len(shape) + 1) // len(shape),
               family="index"),
    KernelSpec(name="unravel", fn=unravel, ref=unravel_ref, make=_make_unravel, shapes=_SHAPES,
               bench_shapes=((4, 1 << 20),), dtypes=(torch.float32, torch.int32), tol=_EXACT,
               bytes=lambda f, shape: tensor_bytes(f) * (len(shape) + 1), family="index"),
    KernelSpec(name="index_array", fn=index_array, ref=index_array_ref,
               make=_make_index_array, shapes=_SHAPES, bench_shapes=((1 << 12, 1 << 10),),
               dtypes=(torch.int64,), tol={torch.int64: (0, 0)},
               bytes=lambda shape, axes, device: 8 * math.prod(shape) * len(axes),
               family="index"),
]
