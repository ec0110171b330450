"""Deformable im2col (DeformableConvolution v1, ModulatedDeformableConvolution v2) and its
gradients.

Column layout ``col[(c, i, j), n, ho, wo]`` (C * KH * KW, N, HO, WO): the sample of channel
``c`` for kernel tap ``(i, j)`` at output pixel ``(ho, wo)`` of image ``n``, taken at::

    h = ho * SH - PH + i * DH + offset[n, g, 2 * (i * KW + j), ho, wo]
    w = wo * SW - PW + j * DW + offset[n, g, 2 * (i * KW + j) + 1, ho, wo]

with ``g = c // (C / DG)`` the deformable group, and blended bilinearly from the four
pixels around ``(h, w)``; with ``y0 = floor(h)``, ``ly = h - y0`` (x likewise)::

    v = (1-ly)(1-lx) x[y0, x0] + (1-ly) lx x[y0, x1] + ly (1-lx) x[y1, x0] + ly lx x[y1, x1]

* v1 (``MODE 0``, MXNet's ``deformable_im2col``): sampled where ``0 <= h < H`` and
  ``0 <= w < W`` (else 0); on the last row ``y1 = y0`` and ``ly = 0`` (columns alike);
* v2 (``MODE 1``, ``modulated_deformable_im2col``): sampled where ``-1 < h < H`` and
  ``-1 < w < W``, ``y1 = y0 + 1``, pixels outside the image read 0; the sample is then
  multiplied by ``mask[n, g, i * KW + j, ho, wo]``.

Backward math (one lane per column element, ``dc`` its gradient, ``m`` the mask or 1):
``dx`` gets ``dc * m`` times the four weights (atomic adds);
``d offset_h += dc * m * ((1-lx)(v10 - v00) + lx (v11 - v01))`` and
``d offset_w += dc * m * ((1-ly)(v01 - v00) + ly (v11 - v10))`` summed over the group's
channels (atomic adds; a clamped v1 edge has equal rows, so its derivative is 0 as MXNet's);
``d mask += dc * v``. These are the derivatives MXNet's col2im/col2im_coord compute.

Bytes moved: forward reads the offsets (and mask) once per channel and four pixels per
column element, writes the columns; backward reads the columns' gradient, x and the offsets
and scatters into dx, d offset and d mask.
"""
from __future__ import annotations

import torch
import triton.language as tl

from .copy import copy_view, fill
from .philox import device
from .runtime import block_for, cdiv, kernel
from .table import KernelSpec, tensor_bytes

# (KH, KW, SH, SW, PH, PW, DH, DW): the convolution geometry the wrappers take
Geometry = tuple[int, int, int, int, int, int, int, int]


@device
def _corners(h, w, H, W, MODE: tl.constexpr):
    """(y0, x0, y1, x1, ly, lx, valid) of the sample point (h, w)."""
    y0f = tl.floor(h)
    x0f = tl.floor(w)
    y0 = y0f.to(tl.int64)
    x0 = x0f.to(tl.int64)
    ly = h - y0f
    lx = w - x0f
    if MODE == 0:
        valid = (h >= 0.0) & (w >= 0.0) & (h < H) & (w < W)
        y_edge = y0 >= H - 1
        x_edge = x0 >= W - 1
        y1 = tl.where(y_edge, y0, y0 + 1)
        x1 = tl.where(x_edge, x0, x0 + 1)
        ly = tl.where(y_edge, 0.0, ly)
        lx = tl.where(x_edge, 0.0, lx)
    else:
        valid = (h > -1.0) & (w > -1.0) & (h < H) & (w < W)
        y1 = y0 + 1
        x1 = x0 + 1
    return y0, x0, y1, x1, ly, lx, valid


@device
def _tap(offset, mask_ptr, offs, lane_ok, N, C, H, W, HO, WO, KH, KW, SH, SW, PH, PW,
         DH, DW, DG, MODE: tl.constexpr):
    """Decode a column index: (image base of x, offset index, mask index, mask, h, w)."""
    wo = offs % WO
    t = offs // WO
    ho = t % HO
    t = t // HO
    b = t % N
    t = t // N
    j = t % KW
    t = t // KW
    i = t % KH
    c = t // KH
    g = c // (C // DG)
    tap = i * KW + j
    oidx = ((b * DG + g) * 2 * KH * KW + 2 * tap) * HO * WO + ho * WO + wo
    off_h = tl.load(offset + oidx, mask=lane_ok, other=0.0).to(tl.float32)
    off_w = tl.load(offset + oidx + HO * WO, mask=lane_ok, other=0.0).to(tl.float32)
    midx = ((b * DG + g) * KH * KW + tap) * HO * WO + ho * WO + wo
    if MODE == 1:
        m = tl.load(mask_ptr + midx, mask=lane_ok, other=0.0).to(tl.float32)
    else:
        m = off_h * 0.0 + 1.0
    h = (ho * SH - PH + i * DH).to(tl.float32) + off_h
    w = (wo * SW - PW + j * DW).to(tl.float32) + off_w
    return (b * C + c) * H * W, oidx, midx, m, h, w


@device
def _pixels(x, base, y0, x0, y1, x1, valid, H, W):
    """The four pixels around the sample (0 outside the image or an invalid sample) and
    the masks of those that exist."""
    m00 = valid & (y0 >= 0) & (y0 < H) & (x0 >= 0) & (x0 < W)
    m01 = valid & (y0 >= 0) & (y0 < H) & (x1 >= 0) & (x1 < W)
    m10 = valid & (y1 >= 0) & (y1 < H) & (x0 >= 0) & (x0 < W)
    m11 = valid & (y1 >= 0) & (y1 < H) & (x1 >= 0) & (x1 < W)
    v00 = tl.load(x + base + y0 * W + x0, mask=m00, other=0.0).to(tl.float32)
    v01 = tl.load(x + base + y0 * W + x1, mask=m01, other=0.0).to(tl.float32)
    v10 = tl.load(x + base + y1 * W + x0, mask=m10, other=0.0).to(tl.float32)
    v11 = tl.load(x + base + y1 * W + x1, mask=m11, other=0.0).to(tl.float32)
    return v00, v01, v10, v11, m00, m01, m10, m11


@kernel
def _im2col_kernel(x, offset, mask_ptr, col, n, N, C, H, W, HO, WO, KH, KW, SH, SW, PH, PW,
                   DH, DW, DG, MODE: tl.constexpr, BLOCK: tl.constexpr):
    """One column element per lane: the (masked) bilinear sample, fp32 arithmetic."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    base, oidx, midx, m, h, w = _tap(offset, mask_ptr, offs, ok, N, C, H, W, HO, WO, KH,
                                     KW, SH, SW, PH, PW, DH, DW, DG, MODE)
    y0, x0, y1, x1, ly, lx, valid = _corners(h, w, H, W, MODE)
    v00, v01, v10, v11, m00, m01, m10, m11 = _pixels(x, base, y0, x0, y1, x1, valid & ok, H, W)
    val = (1.0 - ly) * ((1.0 - lx) * v00 + lx * v01) + ly * ((1.0 - lx) * v10 + lx * v11)
    tl.store(col + offs, (val * m).to(col.dtype.element_ty), mask=ok)


@kernel
def _col2im_kernel(dcol, x, offset, mask_ptr, dx, doff, dmask, n, N, C, H, W, HO, WO, KH, KW,
                   SH, SW, PH, PW, DH, DW, DG, MODE: tl.constexpr, BLOCK: tl.constexpr):
    """One column element per lane: scatter dx, accumulate d offset (and d mask)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    base, oidx, midx, m, h, w = _tap(offset, mask_ptr, offs, ok, N, C, H, W, HO, WO, KH,
                                     KW, SH, SW, PH, PW, DH, DW, DG, MODE)
    y0, x0, y1, x1, ly, lx, valid = _corners(h, w, H, W, MODE)
    valid = valid & ok
    v00, v01, v10, v11, m00, m01, m10, m11 = _pixels(x, base, y0, x0, y1, x1, valid, H, W)
    dc = tl.load(dcol + offs, mask=ok, other=0.0).to(tl.float32)
    gm = dc * m
    tl.atomic_add(dx + base + y0 * W + x0, gm * (1.0 - ly) * (1.0 - lx), mask=m00)
    tl.atomic_add(dx + base + y0 * W + x1, gm * (1.0 - ly) * lx, mask=m01)
    tl.atomic_add(dx + base + y1 * W + x0, gm * ly * (1.0 - lx), mask=m10)
    tl.atomic_add(dx + base + y1 * W + x1, gm * ly * lx, mask=m11)
    d_h = (1.0 - lx) * (v10 - v00) + lx * (v11 - v01)
    d_w = (1.0 - ly) * (v01 - v00) + ly * (v11 - v10)
    tl.atomic_add(doff + oidx, gm * d_h, mask=valid)
    tl.atomic_add(doff + oidx + HO * WO, gm * d_w, mask=valid)
    if MODE == 1:
        val = (1.0 - ly) * ((1.0 - lx) * v00 + lx * v01) + ly * ((1.0 - lx) * v10 + lx * v11)
        tl.atomic_add(dmask + midx, dc * val, mask=valid)


def _block(n: int, device: torch.device) -> int:
    return block_for(n, cap=256 if device.type == "cuda" else 128)


def _sizes(x, offset, geom: Geometry, groups: int) -> tuple:
    """The scalar arguments both kernels take after ``n``."""
    N, C, H, W = x.shape
    return (N, C, H, W, offset.shape[2], offset.shape[3], *geom, groups)


def deformable_im2col(x: torch.Tensor, offset: torch.Tensor, mask: torch.Tensor | None,
                      geom: Geometry, groups: int, out=None) -> torch.Tensor:
    """Columns (C * KH * KW, N, HO, WO) of ``x`` (N, C, H, W) sampled at ``offset``
    (N, 2 * groups * KH * KW, HO, WO); v2 (modulated) when ``mask`` is given."""
    N, C = x.shape[:2]
    shape = (C * geom[0] * geom[1], N) + tuple(offset.shape[2:])
    col = out if out is not None else torch.empty(shape, dtype=x.dtype, device=x.device)
    n = col.numel()
    if n:
        offset = offset.contiguous()
        block = _block(n, x.device)
        _im2col_kernel[(cdiv(n, block),)](
            x.contiguous(), offset, offset if mask is None else mask.contiguous(), col, n,
            *_sizes(x, offset, geom, groups), MODE=0 if mask is None else 1, BLOCK=block)
    return col


def _accumulator(like: torch.Tensor, out=None) -> torch.Tensor:
    """Zeroed storage for atomics in ``like``'s dtype (fp32 for half types)."""
    if out is not None and out.dtype in (torch.float32, torch.float64):
        return fill(out, 0.0)
    dtype = like.dtype if like.dtype in (torch.float32, torch.float64) else torch.float32
    return fill(torch.empty(like.shape, dtype=dtype, device=like.device), 0.0)


def _finish(acc: torch.Tensor, like: torch.Tensor, out=None) -> torch.Tensor:
    if out is acc or (out is None and acc.dtype == like.dtype):
        return acc
    result = out if out is not None else torch.empty_like(like)
    copy_view(acc, result)
    return result


def deformable_col2im(dcol: torch.Tensor, x: torch.Tensor, offset: torch.Tensor,
                      mask: torch.Tensor | None, geom: Geometry, groups: int,
                      out=None) -> tuple:
    """Gradients (dx, d offset) (and d mask when ``mask`` is given) of
    :func:`deformable_im2col` for the columns' gradient ``dcol``; one launch, atomics."""
    outs = tuple(out) if out is not None else (None,) * (2 if mask is None else 3)
    likes = (x, offset) if mask is None else (x, offset, mask)
    accs = [_accumulator(t, o) for t, o in zip(likes, outs)]
    n = dcol.numel()
    if n:
        offset = offset.contiguous()
        block = _block(n, x.device)
        spare = accs[1] if mask is None else accs[2]
        _col2im_kernel[(cdiv(n, block),)](
            dcol.contiguous(), x.contiguous(), offset,
            offset if mask is None else mask.contiguous(), accs[0], accs[1], spare, n,
            *_sizes(x, offset, geom, groups), MODE=0 if mask is None else 1, BLOCK=block)
    return tuple(_finish(a, t, o) for a, t, o in zip(accs, likes, outs))


def _axis(pos, size: int, modulated: bool):
    """Per axis: (low index, high index, high weight, in-range flag) of sample positions."""
    low = torch.floor(pos)
    frac = pos - low
    low = low.long()
    if modulated:
        return low, low + 1, frac, (pos > -1) & (pos < size)
    edge = low >= size - 1
    high = torch.where(edge, low, low + 1)
    return low, high, torch.where(edge, torch.zeros_like(frac), frac), (pos >= 0) & (pos < size)


def _positions(x, offset, geom: Geometry, groups: int):
    """Sample positions h, w of shape (N, DG, KH * KW, HO, WO)."""
    kh, kw, sh, sw, ph, pw, dh, dw = geom
    N, _, HO, WO = offset.shape
    off = offset.reshape(N, groups, kh * kw, 2, HO, WO)
    dev, dt = x.device, offset.dtype
    base_h = (torch.arange(kh, device=dev) * dh)[:, None] + torch.zeros(kw, device=dev)
    base_w = torch.zeros(kh, device=dev)[:, None] + torch.arange(kw, device=dev) * dw
    grid_h = (torch.arange(HO, device=dev) * sh - ph)[:, None].expand(HO, WO)
    grid_w = (torch.arange(WO, device=dev) * sw - pw)[None, :].expand(HO, WO)
    h = (base_h.reshape(-1, 1, 1) + grid_h).to(dt) + off[:, :, :, 0]
    w = (base_w.reshape(-1, 1, 1) + grid_w).to(dt) + off[:, :, :, 1]
    return h, w


def deformable_im2col_ref(x: torch.Tensor, offset: torch.Tensor, mask: torch.Tensor | None,
                          geom: Geometry, groups: int) -> torch.Tensor:
    """Reference: four gathers per sample (differentiable in x, offset and mask)."""
    N, C, H, W = x.shape
    h, w = _positions(x, offset, geom, groups)
    (y0, y1, ly, okh), (x0, x1, lx, okw) = (_axis(h, H, mask is not None),
                                            _axis(w, W, mask is not None))
    flat = x.reshape(N, groups, C // groups, H * W)
    val = torch.zeros((N, groups, C // groups) + h.shape[2:], dtype=x.dtype, device=x.device)
    for yy, wy in ((y0, 1 - ly), (y1, ly)):
        for xx, wx in ((x0, 1 - lx), (x1, lx)):
            ok = okh & okw & (yy >= 0) & (yy < H) & (xx >= 0) & (xx < W)
            idx = (yy.clamp(0, H - 1) * W + xx.clamp(0, W - 1)).reshape(N, groups, 1, -1)
            got = flat.gather(3, idx.expand(N, groups, C // groups, idx.shape[-1]))
            got = got.reshape(N, groups, C // groups, *h.shape[2:])
            weight = torch.where(ok, wy * wx, torch.zeros_like(wy))
            val = val + got * weight[:, :, None]
    if mask is not None:
        val = val * mask.reshape(N, groups, 1, *h.shape[2:])
    # (N, DG, C/DG, KK, HO, WO) -> (C, KK, N, HO, WO) -> (C * KK, N, HO, WO)
    val = val.reshape(N, C, *h.shape[2:]).permute(1, 2, 0, 3, 4)
    return val.reshape(C * h.shape[2], N, *h.shape[3:]).contiguous()


def deformable_col2im_ref(dcol, x, offset, mask, geom: Geometry, groups: int) -> tuple:
    """Reference: autograd through :func:`deformable_im2col_ref` (floor has no gradient)."""
    args = (x, offset) if mask is None else (x, offset, mask)
    with torch.enable_grad():
        leaves = [a.detach().requires_grad_(True) for a in args]
        m = None if mask is None else leaves[2]
        col = deformable_im2col_ref(leaves[0], leaves[1], m, geom, groups)
        return torch.autograd.grad(col, leaves, dcol)


# ---------------------------------------------------------------- table entries

def _rand(dtype, device, shape, seed, low=0.0, high=1.0):
    gen = torch.Generator().manual_seed(seed)
    return (torch.rand(tuple(shape), generator=gen) * (high - low) + low).to(device=device,
                                                                             dtype=dtype)


def _make(dtype, device, shape, backward=False):
    """shape = (N, C, H, W, DG, modulated): a 3x2 kernel, stride (1, 2), pad 1, dilate
    (2, 1); offsets in [-2, 2] so samples cross every border."""
    N, C, H, W, dg, modulated = shape
    geom = (3, 2, 1, 2, 1, 1, 2, 1)
    ho, wo = (H + 2 - 5) // 1 + 1, (W + 2 - 2) // 2 + 1
    x = _rand(dtype, device, (N, C, H, W), 0, -1.0, 1.0)
    offset = _rand(dtype, device, (N, 2 * dg * 6, ho, wo), 1, -2.0, 2.0)
    mask = _rand(dtype, device, (N, dg * 6, ho, wo), 2) if modulated else None
    if not backward:
        return (x, offset, mask, geom, dg), {}
    dcol = _rand(dtype, device, (C * 6, N, ho, wo), 3, -1.0, 1.0)
    return (dcol, x, offset, mask, geom, dg), {}


def _bytes_fwd(x, offset, mask, geom, groups):
    cols = x.shape[1] * geom[0] * geom[1] * offset.shape[0] * offset.shape[2] * offset.shape[3]
    return tensor_bytes(x, offset) + 5 * cols * x.element_size()


def _bytes_bwd(dcol, x, offset, mask, geom, groups):
    return tensor_bytes(dcol) * 6 + 2 * tensor_bytes(x, offset)


_SHAPES = ((2, 4, 5, 6, 2, False), (1, 3, 4, 3, 1, True), (2, 4, 3, 5, 2, True))
_BENCH = ((8, 64, 56, 56, 1, False), (8, 64, 56, 56, 1, True))
_TOL = {torch.float32: (1e-4, 1e-5)}

KERNELS = [
    KernelSpec(name="deformable_im2col", fn=deformable_im2col, ref=deformable_im2col_ref,
               make=_make, shapes=_SHAPES, bench_shapes=_BENCH, tol=_TOL, bytes=_bytes_fwd,
               family="deformable"),
    KernelSpec(name="deformable_col2im", fn=deformable_col2im, ref=deformable_col2im_ref,
               make=lambda dt, dev, s: _make(dt, dev, s, backward=True), shapes=_SHAPES,
               bench_shapes=_BENCH, tol=_TOL, bytes=_bytes_bwd, family="deformable"),
]
