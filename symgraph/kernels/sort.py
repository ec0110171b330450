"""Sorting: a stable bitonic sort of every row along one axis (values with their indices),
the top-k outputs read from it, and the scatter that undoes a top-k (its gradient, the mask).

A row is the ``n`` elements ``x[o, :, i]`` of an array viewed as ``(outer, n, inner)``. The
rows are copied into ``(rows, P)`` scratch (``P`` the power of two >= n) with their positions
as payload; each bitonic stage ``(size, stride)`` compares the pairs ``(t, t + stride)``.
Elements compare by ``(value, position)``, padding (positions >= n) after everything: a total
order, so the network gives exactly the stable sort (ties keep their original order,
ascending or descending). Stages whose pairs stay inside a chunk of ``C`` elements (2048 on
GPU) run fused, one program per chunk with a barrier between stages: one launch sorts every
chunk, and each later merge of ``size`` is ``log2(size / C)`` launches for the strides that
span chunks plus one for the rest. A row of P <= C is one launch (the unfused network took
``log2(P) * (log2(P) + 1) / 2``); P = 2^20 takes 55 instead of 210.

Bytes moved: the sort reads the input once, then reads and writes ``(value, index)`` scratch
once per stage; the top-k read writes ``k`` values and indices per row.
"""
from __future__ import annotations

import torch
import triton.language as tl

from .copy import fill
from .index import _split
from .philox import device
from .runtime import block_for, cdiv, kernel
from .table import KernelSpec, tensor_bytes


def _block(n: int, device: torch.device) -> int:
    return block_for(n, cap=1024 if device.type == "cuda" else 256)


@kernel
def _load_rows_kernel(x, keys, pos, n, inner, P, total, BLOCK: tl.constexpr):
    """keys[row, r] = x[o, r, i] (row = o * inner + i), pos[row, r] = r; r >= n is padding."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    r = offs % P
    row = offs // P
    src = ((row // inner) * n + r) * inner + row % inner
    v = tl.load(x + src, mask=mask & (r < n), other=0)
    tl.store(keys + offs, v, mask=mask)
    tl.store(pos + offs, r, mask=mask)


@device
def _compare_swap(keys, pos, a, b, n, P, size, mask, DESCEND: tl.constexpr):
    """Order the pair (a, b) of a bitonic block of ``size``: within a block running up, b
    must not come before a (and the reverse)."""
    va = tl.load(keys + a, mask=mask, other=0)
    vb = tl.load(keys + b, mask=mask, other=0)
    pa = tl.load(pos + a, mask=mask, other=0)
    pb = tl.load(pos + b, mask=mask, other=0)
    if DESCEND:
        ahead = va > vb
    else:
        ahead = va < vb
    # a comes before b: a is real and (b is padding, or a's value ranks first, or a tie
    # broken by position)
    a_first = (pa < n) & ((pb >= n) | ahead | ((va == vb) & (pa < pb)))
    up = ((a % P) & size) == 0
    swap = up != a_first
    tl.store(keys + a, tl.where(swap, vb, va), mask=mask)
    tl.store(keys + b, tl.where(swap, va, vb), mask=mask)
    tl.store(pos + a, tl.where(swap, pb, pa), mask=mask)
    tl.store(pos + b, tl.where(swap, pa, pb), mask=mask)


@kernel
def _bitonic_stage_kernel(keys, pos, n, P, size, stride, pairs, DESCEND: tl.constexpr,
                          BLOCK: tl.constexpr):
    """One compare-and-swap stage ``(size, stride)`` over all pairs (t, t + stride)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    half = P // 2
    q = offs % half
    a = (offs // half) * P + (q // stride) * (2 * stride) + q % stride
    _compare_swap(keys, pos, a, a + stride, n, P, size, offs < pairs, DESCEND)


@kernel
def _bitonic_local_kernel(keys, pos, n, P, first_size, last_size, first_stride,
                          DESCEND: tl.constexpr, HALF: tl.constexpr):
    """Every stage from ``(first_size, first_stride)`` through ``(last_size, 1)`` whose
    pairs lie inside one chunk of ``2 * HALF`` elements, in one launch: a program owns a
    chunk and a barrier separates its stages (the stages of one block run in order)."""
    base = tl.program_id(0).to(tl.int64) * (2 * HALF)
    t = tl.arange(0, HALF)
    live = t < HALF
    size = first_size
    stride = first_stride
    while size <= last_size:
        while stride >= 1:
            a = base + (t // stride) * (2 * stride) + t % stride
            _compare_swap(keys, pos, a, a + stride, n, P, size, live, DESCEND)
            tl.debug_barrier()
            stride = stride // 2
        size = size * 2
        stride = size // 2


@kernel
def _read_topk_kernel(keys, pos, values, indices, k, inner, P, total, WANT_VALUES: tl.constexpr,
                      WANT_INDICES: tl.constexpr, BLOCK: tl.constexpr):
    """values[o, r, i] = keys[o * inner + i, r] for r < k (indices likewise, cast)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    i = offs % inner
    r = (offs // inner) % k
    o = offs // (inner * k)
    src = (o * inner + i) * P + r
    if WANT_VALUES:
        tl.store(values + offs, tl.load(keys + src, mask=mask), mask=mask)
    if WANT_INDICES:
        p = tl.load(pos + src, mask=mask, other=0)
        tl.store(indices + offs, p.to(indices.dtype.element_ty), mask=mask)


def sort_rows(x: torch.Tensor, axis: int, descend: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``(keys, positions)`` of shape ``(rows, P)``: every row of ``x`` along ``axis``
    stably sorted (first ``n`` columns), with the positions the values came from."""
    x = x.contiguous()
    outer, n, inner = _split(tuple(x.shape), axis)
    padded = block_for(n, cap=1 << 62, floor=2)
    rows = outer * inner
    keys = torch.empty((rows, padded), dtype=x.dtype, device=x.device)
    pos = torch.empty((rows, padded), dtype=torch.int64, device=x.device)
    total = keys.numel()
    if total == 0:
        return keys, pos
    block = _block(total, x.device)
    _load_rows_kernel[(cdiv(total, block),)](x, keys, pos, n, inner, padded, total, BLOCK=block)
    _bitonic_network(keys, pos, n, descend)
    return keys, pos


def _bitonic_network(keys: torch.Tensor, pos: torch.Tensor, n: int, descend: bool) -> None:
    """Launch the network on ``(rows, P)`` scratch: the stages inside a chunk (all of them up
    to the chunk's size, then each merge's last ones) fused per launch, the stages whose
    pairs span chunks one launch each."""
    padded = keys.shape[1]
    chunk = min(padded, 2048 if keys.is_cuda else 16)
    local = _bitonic_local_kernel[(keys.numel() // chunk,)]
    local(keys, pos, n, padded, 2, chunk, 1, DESCEND=descend, HALF=chunk // 2)
    pairs = keys.numel() // 2
    block = _block(pairs, keys.device)
    size = 2 * chunk
    while size <= padded:
        stride = size // 2
        while stride >= chunk:
            _bitonic_stage_kernel[(cdiv(pairs, block),)](keys, pos, n, padded, size, stride,
                                                         pairs, DESCEND=descend, BLOCK=block)
            stride //= 2
        local(keys, pos, n, padded, size, size, stride, DESCEND=descend, HALF=chunk // 2)
        size *= 2


def topk(x: torch.Tensor, axis: int, k: int, descend: bool, index_dtype=torch.int64,
         want=(True, True), out=None) -> tuple:
    """The first ``k`` of the stably sorted rows of ``x`` along ``axis``: ``(values,
    indices)`` shaped like ``x`` with ``k`` on ``axis`` (an output not in ``want`` is None)."""
    outer, n, inner = _split(tuple(x.shape), axis)
    shape = tuple(x.shape[:axis]) + (k,) + tuple(x.shape[axis + 1:])
    values, indices = out if out is not None else (None, None)
    if want[0] and values is None:
        values = torch.empty(shape, dtype=x.dtype, device=x.device)
    if want[1] and indices is None:
        indices = torch.empty(shape, dtype=index_dtype, device=x.device)
    keys, pos = sort_rows(x, axis, descend)
    total = outer * k * inner
    if total:
        block = _block(total, x.device)
        _read_topk_kernel[(cdiv(total, block),)](
            keys, pos, values if want[0] else keys, indices if want[1] else pos, k, inner,
            keys.shape[1], total, WANT_VALUES=want[0], WANT_INDICES=want[1], BLOCK=block)
    return values, indices


def topk_ref(x: torch.Tensor, axis: int, k: int, descend: bool, index_dtype=torch.int64,
             want=(True, True)) -> tuple:
    """Reference: torch's stable sort, narrowed to ``k`` (reads x, writes k per row)."""
    values, indices = torch.sort(x, dim=axis, descending=descend, stable=True)
    values, indices = values.narrow(axis, 0, k), indices.narrow(axis, 0, k)
    return (values if want[0] else None, indices.to(index_dtype) if want[1] else None)


# ---------------------------------------------------------------- scatter along an axis

@kernel
def _put_kernel(idx, src, out, n, k, inner, total, value, CONST: tl.constexpr,
                BLOCK: tl.constexpr):
    """out[o, idx[o, r, i], i] = src[o, r, i] (or ``value``); indices are distinct per row."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    i = offs % inner
    o = offs // (inner * k)
    j = tl.load(idx + offs, mask=mask, other=0).to(tl.int64)
    dst = (o * n + j) * inner + i
    if CONST:
        tl.store(out + dst, (offs * 0 + value).to(out.dtype.element_ty), mask=mask)
    else:
        tl.store(out + dst, tl.load(src + offs, mask=mask), mask=mask)


def put_along_axis(indices: torch.Tensor, src: torch.Tensor | float, shape: tuple, axis: int,
                   dtype=None, out=None) -> torch.Tensor:
    """Zeros of ``shape`` with ``src`` (a tensor shaped like ``indices``, or a number)
    written at ``indices`` along ``axis``: the top-k gradient and mask (indices distinct
    per row, so no atomics)."""
    shape = tuple(shape)
    const = not isinstance(src, torch.Tensor)
    dtype = dtype or (src.dtype if not const else torch.float32)
    result = out if out is not None else torch.empty(shape, dtype=dtype, device=indices.device)
    fill(result, 0.0)
    outer, n, inner = _split(shape, axis)
    idx = indices.contiguous()
    total = idx.numel()
    if total:
        block = _block(total, idx.device)
        _put_kernel[(cdiv(total, block),)](
            idx, idx if const else src.contiguous(), result, n, idx.shape[axis], inner, total,
            float(src) if const else 0.0, CONST=const, BLOCK=block)
    return result


def put_along_axis_ref(indices: torch.Tensor, src, shape: tuple, axis: int,
                       dtype=None) -> torch.Tensor:
    """Reference: scatter into zeros (reads the indices and src, writes the whole output)."""
    const = not isinstance(src, torch.Tensor)
    dtype = dtype or (src.dtype if not const else torch.float32)
    out = torch.zeros(tuple(shape), dtype=dtype, device=indices.device)
    if const:
        return out.scatter_(axis, indices.to(torch.int64), float(src))
    return out.scatter_(axis, indices.to(torch.int64), src.to(dtype))


# ---------------------------------------------------------------- table entries

def _distinct(dtype, device, shape, seed=0):
    """Shuffled distinct values with some repeats (ties exercise the stable order)."""
    gen = torch.Generator().manual_seed(seed)
    n = 1
    for s in shape:
        n *= s
    vals = (torch.randperm(n, generator=gen) % max(2, n // 3)).float() - n / 6
    return vals.reshape(tuple(shape)).to(device=device, dtype=dtype)


def _make_topk(dtype, device, shape):
    axis = len(shape) // 2
    k = max(1, shape[axis] // 2)
    return (_distinct(dtype, device, shape), axis, k, True, torch.int32), {}


def _make_sort_asc(dtype, device, shape):
    return (_distinct(dtype, device, shape), len(shape) - 1, shape[-1], False), {}


def _make_put(dtype, device, shape):
    axis = len(shape) - 1
    (x, *_), _ = _make_sort_asc(dtype, device, shape)
    idx = torch.sort(x, dim=axis, stable=True)[1].narrow(axis, 0, max(1, shape[-1] // 3))
    gen = torch.Generator().manual_seed(3)
    src = torch.randn(tuple(idx.shape), generator=gen).to(device=device, dtype=dtype)
    return (idx.to(torch.int32), src, tuple(shape), axis), {}


_SHAPES = ((3, 37), (5, 129), (2, 7, 3))
_DT = (torch.float32, torch.float16)
_EXACT = {torch.float32: (0, 0), torch.float16: (0, 0)}


def _entry(name, fn, ref, make, traffic) -> KernelSpec:
    return KernelSpec(name=name, fn=fn, ref=ref, make=make, shapes=_SHAPES,
                      bench_shapes=((4096, 1000), (64, 1 << 15)), dtypes=_DT, tol=_EXACT,
                      bytes=traffic, family="sort")


def _sort_bytes(x, axis, *rest) -> int:
    p = block_for(x.shape[axis], cap=1 << 62, floor=2)
    stages = p.bit_length() * (p.bit_length() - 1) // 2
    return tensor_bytes(x) + 2 * stages * (x.numel() // x.shape[axis]) * p * (
        x.element_size() + 8)


KERNELS = [
    _entry("topk", topk, topk_ref, _make_topk, _sort_bytes),
    _entry("sort", topk, topk_ref, _make_sort_asc, _sort_bytes),
    _entry("put_along_axis", put_along_axis, put_along_axis_ref, _make_put,
           lambda idx, src, shape, axis: tensor_bytes(idx, src) + 4 * idx.numel() * (
               shape[axis] // idx.shape[axis])),
]
