"""Region-of-interest pooling: ROIPooling (max), ROIAlign and RROIAlign (bilinear average).

``rois`` is (R, 5) ``[batch, x1, y1, x2, y2]`` in image coordinates (ROIAlign also takes
(R, 4), batch 0); ``scale`` maps them onto the (N, C, H, W) feature map.

* ROIPooling (MXNet's rules): corners rounded half away from zero after scaling, the ROI
  ``max(end - start + 1, 1)`` pixels per axis; bin ``p`` of ``P`` covers
  ``[floor(p * s), ceil((p + 1) * s))`` (``s = size / P``, fp32) shifted by the start and
  clipped to the map; the output is the window's max (0 for an empty bin or a batch index
  outside ``[0, N)``). Backward: ``dy`` goes to the first (row-major) maximum.
* ROIAlign: the ROI (minus 0.5 when ``aligned``; else at least 1 pixel per axis) is split
  into ``P`` bins, each averaging ``g_h x g_w`` bilinear samples (``g = sample_ratio``, or
  ``ceil(roi size / P)``) at ``start + p * bin + (i + 0.5) * bin / g``. A sample beyond
  ``[-1, size]`` reads 0; otherwise coordinates clamp to ``[0, size - 1]``. With
  ``position_sensitive`` output channel ``c`` of bin (ph, pw) reads input channel
  ``(c * PH + ph) * PW + pw``. Backward scatters ``dy * weight / count`` (atomics).
* RROIAlign: rois (R, 6) ``[batch, cx, cy, w, h, theta]`` (degrees); ROIAlign's samples
  (no aligned/position-sensitive forms, sizes at least 1) on the box centred at (cx, cy),
  rotated: ``x = xx cos + yy sin + cx``, ``y = yy cos - xx sin + cy``. Forward only.

One lane per output element; the window / sample loops run to the block's largest bound
(a reduction over the lanes), masked per lane. Bytes moved: rois, the windows read (cached:
the map once) and the output written; backward adds dy and dx.
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from .philox import device
from .runtime import block_for, cdiv, kernel
from .sampling import _accumulator, _finish, separable
from .table import KernelSpec, tensor_bytes


def _block(n: int, dev: torch.device) -> int:
    return block_for(n, cap=128 if dev.type == "cuda" else 64)


@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@device
def _round(v):
    """C's round(): halves away from zero."""
    return tl.where(v >= 0, tl.floor(v + 0.5), -tl.floor(0.5 - v))


@kernel
def _roi_pool_kernel(x, rois, y, dy, dx, n, N, C, H, W, PH, PW, scale,
                     BACKWARD: tl.constexpr, BLOCK: tl.constexpr):
    """Max over each bin's window; backward adds dy at the first maximum."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    pw = offs % PW
    t = offs // PW
    ph = t % PH
    t = t // PH
    c = t % C
    r = t // C
    b = tl.load(rois + r * 5, mask=mask, other=-1.0).to(tl.int64)
    x1 = _round(tl.load(rois + r * 5 + 1, mask=mask, other=0.0).to(tl.float32) * scale)
    y1 = _round(tl.load(rois + r * 5 + 2, mask=mask, other=0.0).to(tl.float32) * scale)
    x2 = _round(tl.load(rois + r * 5 + 3, mask=mask, other=0.0).to(tl.float32) * scale)
    y2 = _round(tl.load(rois + r * 5 + 4, mask=mask, other=0.0).to(tl.float32) * scale)
    bin_h = tl.maximum(y2 - y1 + 1.0, 1.0) / PH.to(tl.float32)
    bin_w = tl.maximum(x2 - x1 + 1.0, 1.0) / PW.to(tl.float32)
    h0 = tl.minimum(tl.maximum(tl.floor(ph.to(tl.float32) * bin_h) + y1, 0.0), H.to(tl.float32))
    h1 = tl.minimum(tl.maximum(tl.ceil((ph + 1).to(tl.float32) * bin_h) + y1, 0.0),
                    H.to(tl.float32))
    w0 = tl.minimum(tl.maximum(tl.floor(pw.to(tl.float32) * bin_w) + x1, 0.0), W.to(tl.float32))
    w1 = tl.minimum(tl.maximum(tl.ceil((pw + 1).to(tl.float32) * bin_w) + x1, 0.0),
                    W.to(tl.float32))
    h0, h1, w0, w1 = h0.to(tl.int64), h1.to(tl.int64), w0.to(tl.int64), w1.to(tl.int64)
    valid = mask & (b >= 0) & (b < N) & (h1 > h0) & (w1 > w0)
    kh = tl.reduce(tl.where(valid, h1 - h0, 0), 0, _max_combine)
    kw = tl.reduce(tl.where(valid, w1 - w0, 0), 0, _max_combine)
    base = (b * C + c) * H * W
    best = (offs * 0).to(tl.float32) - 3.4028234663852886e38
    arg = offs * 0 - 1
    for i in range(0, kh):
        for j in range(0, kw):
            ok = valid & (h0 + i < h1) & (w0 + j < w1)
            at = (h0 + i) * W + w0 + j
            v = tl.load(x + base + at, mask=ok, other=0.0).to(tl.float32)
            take = ok & (v > best)
            best = tl.where(take, v, best)
            arg = tl.where(take, at, arg)
    if BACKWARD:
        g = tl.load(dy + offs, mask=mask, other=0.0).to(tl.float32)
        tl.atomic_add(dx + base + arg, g, mask=valid & (arg >= 0))
    else:
        tl.store(y + offs, tl.where(valid, best, 0.0).to(y.dtype.element_ty), mask=mask)


def _pool_launch(x, rois, pooled, scale, y, dy, dx) -> None:
    n = rois.shape[0] * x.shape[1] * pooled[0] * pooled[1]
    if n:
        block = _block(n, x.device)
        _roi_pool_kernel[(cdiv(n, block),)](x.contiguous(), rois.contiguous(), y, dy, dx, n,
                                            *x.shape, *pooled, float(scale),
                                            BACKWARD=dy is not None, BLOCK=block)


def roi_pool(x: torch.Tensor, rois: torch.Tensor, pooled: tuple, scale: float,
             out=None) -> torch.Tensor:
    """ROIPooling forward: (R, C, PH, PW) bin maxima."""
    shape = (rois.shape[0], x.shape[1]) + tuple(pooled)
    y = out if out is not None else torch.empty(shape, dtype=x.dtype, device=x.device)
    _pool_launch(x, rois, pooled, scale, y, None, y)
    return y


def _roi_round(v: torch.Tensor) -> torch.Tensor:
    return torch.sign(v) * torch.floor(v.abs() + 0.5)


def _pool_bins(start: torch.Tensor, end: torch.Tensor, pooled: int, size: int):
    """Per bin of one axis: the clipped [lo, hi) window (fp32 bin arithmetic)."""
    bins = torch.clamp(end - start + 1, min=1).float() / pooled
    p = torch.arange(pooled, dtype=torch.float32)
    lo = torch.clamp(torch.floor(p * bins) + start, 0, size).long()
    hi = torch.clamp(torch.ceil((p + 1) * bins) + start, 0, size).long()
    return lo, hi


def _masked_max(v: torch.Tensor, lo, hi, dim: int) -> torch.Tensor:
    """Max over positions [lo[p], hi[p]) of ``dim`` for each bin p (new last axis)."""
    pos = torch.arange(v.shape[dim], device=v.device)
    lo, hi = lo.to(v.device), hi.to(v.device)  # the bins come from host-side ROI arithmetic
    inside = (pos[None] >= lo[:, None]) & (pos[None] < hi[:, None])  # (P, size)
    v = v.movedim(dim, -1).unsqueeze(-2)  # (..., 1, size)
    big = torch.finfo(v.dtype).max
    return torch.where(inside, v, torch.full_like(v, -big)).amax(-1)


def roi_pool_ref(x: torch.Tensor, rois: torch.Tensor, pooled: tuple, scale: float):
    """Reference: per ROI, a separable masked max (over W, then H); empty bins give 0."""
    outs = []
    for roi in rois.detach().float().cpu():
        b = int(roi[0])
        c = _roi_round(roi[1:] * torch.tensor(scale, dtype=torch.float32))
        hlo, hhi = _pool_bins(c[1], c[3], pooled[0], x.shape[2])
        wlo, whi = _pool_bins(c[0], c[2], pooled[1], x.shape[3])
        empty = (hhi <= hlo)[:, None] | (whi <= wlo)[None, :]
        if not 0 <= b < x.shape[0]:
            outs.append(x.new_zeros((x.shape[1],) + tuple(pooled)))
            continue
        cols = _masked_max(x[b], wlo, whi, 2)  # (C, H, PW)
        val = _masked_max(cols, hlo, hhi, 1).transpose(-1, -2)  # (C, PH, PW)
        outs.append(torch.where(empty.to(x.device), torch.zeros_like(val), val))
    if not outs:
        return x.new_zeros((0, x.shape[1]) + tuple(pooled))
    return torch.stack(outs)


def roi_pool_backward(dy: torch.Tensor, x: torch.Tensor, rois: torch.Tensor, pooled: tuple,
                      scale: float, out=None) -> torch.Tensor:
    """ROIPooling data gradient: recompute each bin's argmax, add dy there (atomics)."""
    dx = _accumulator(tuple(x.shape), x, out)
    _pool_launch(x, rois, pooled, scale, dx, dy.contiguous(), dx)
    return _finish(dx, x.dtype, out)


def roi_pool_backward_ref(dy, x, rois, pooled, scale):
    """Reference: autograd through :func:`roi_pool_ref` (the max picks one element)."""
    with torch.enable_grad():
        leaf = x.detach().requires_grad_(True)
        return torch.autograd.grad(roi_pool_ref(leaf, rois, pooled, scale), leaf, dy)[0]


@device
def _align_axis(v, size):
    """Bilinear taps of sample coordinate ``v`` on an axis: (low, high, weight of high,
    in range); MXNet clamps to the edge and zeroes samples beyond [-1, size]."""
    ok = (v >= -1.0) & (v <= size.to(tl.float32))
    v = tl.maximum(v, 0.0)
    lo = v.to(tl.int64)
    edge = lo >= size - 1
    lo = tl.where(edge, size - 1, lo)
    hi = tl.where(edge, lo, lo + 1)
    v = tl.where(edge, lo.to(tl.float32), v)
    return lo, hi, v - lo.to(tl.float32), ok


@kernel
def _roi_align_kernel(x, rois, y, dy, dx, n, C, H, W, PH, PW, scale, ratio, COLS: tl.constexpr,
                      ALIGNED: tl.constexpr, PS: tl.constexpr, BACKWARD: tl.constexpr,
                      BLOCK: tl.constexpr):
    """Average of the bin's bilinear samples; backward scatters dy * weight / count."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    pw = offs % PW
    t = offs // PW
    ph = t % PH
    t = t // PH
    c = t % C
    r = t // C
    row = rois + r * COLS
    b = offs * 0
    if COLS == 5:
        b = tl.load(row, mask=mask, other=0.0).to(tl.int64)
        row += 1
    shift = 0.5 if ALIGNED else 0.0
    x1 = tl.load(row, mask=mask, other=0.0).to(tl.float32) * scale - shift
    y1 = tl.load(row + 1, mask=mask, other=0.0).to(tl.float32) * scale - shift
    roi_w = tl.load(row + 2, mask=mask, other=0.0).to(tl.float32) * scale - shift - x1
    roi_h = tl.load(row + 3, mask=mask, other=0.0).to(tl.float32) * scale - shift - y1
    if not ALIGNED:
        roi_w = tl.maximum(roi_w, 1.0)
        roi_h = tl.maximum(roi_h, 1.0)
    bin_h = roi_h / PH.to(tl.float32)
    bin_w = roi_w / PW.to(tl.float32)
    auto_h = tl.maximum(tl.ceil(roi_h / PH.to(tl.float32)), 1.0).to(tl.int64)
    auto_w = tl.maximum(tl.ceil(roi_w / PW.to(tl.float32)), 1.0).to(tl.int64)
    gh = tl.where(ratio > 0, ratio, auto_h)
    gw = tl.where(ratio > 0, ratio, auto_w)
    valid = mask & (b >= 0)
    count = (gh * gw).to(tl.float32)
    cin = tl.where(PS, (c * PH + ph) * PW + pw, c)
    base = (b * tl.where(PS, C * PH * PW, C) + cin) * H * W
    if BACKWARD:
        g = tl.load(dy + offs, mask=mask, other=0.0).to(tl.float32) / count
    acc = (offs * 0).to(tl.float32)
    for iy in range(0, tl.reduce(tl.where(valid, gh, 0), 0, _max_combine)):
        yy = y1 + ph.to(tl.float32) * bin_h + (iy + 0.5) * bin_h / gh.to(tl.float32)
        ylo, yhi, ly, yok = _align_axis(yy, H)
        for ix in range(0, tl.reduce(tl.where(valid, gw, 0), 0, _max_combine)):
            xx = x1 + pw.to(tl.float32) * bin_w + (ix + 0.5) * bin_w / gw.to(tl.float32)
            xlo, xhi, lx, xok = _align_axis(xx, W)
            ok = valid & (iy < gh) & (ix < gw) & yok & xok
            w00 = (1.0 - ly) * (1.0 - lx)
            w01 = (1.0 - ly) * lx
            w10 = ly * (1.0 - lx)
            w11 = ly * lx
            if BACKWARD:
                tl.atomic_add(dx + base + ylo * W + xlo, g * w00, mask=ok)
                tl.atomic_add(dx + base + ylo * W + xhi, g * w01, mask=ok)
                tl.atomic_add(dx + base + yhi * W + xlo, g * w10, mask=ok)
                tl.atomic_add(dx + base + yhi * W + xhi, g * w11, mask=ok)
            else:
                acc += (w00 * tl.load(x + base + ylo * W + xlo, mask=ok, other=0.0)
                        + w01 * tl.load(x + base + ylo * W + xhi, mask=ok, other=0.0)
                        + w10 * tl.load(x + base + yhi * W + xlo, mask=ok, other=0.0)
                        + w11 * tl.load(x + base + yhi * W + xhi, mask=ok, other=0.0))
    if not BACKWARD:
        tl.store(y + offs, tl.where(valid, acc / count, 0.0).to(y.dtype.element_ty), mask=mask)


def _align_out_channels(x, pooled, position_sensitive: bool) -> int:
    return x.shape[1] // (pooled[0] * pooled[1]) if position_sensitive else x.shape[1]


def _align_launch(x, rois, a, y, dy, dx) -> None:
    pooled, scale, ratio, ps, aligned = a
    c = _align_out_channels(x, pooled, ps)
    n = rois.shape[0] * c * pooled[0] * pooled[1]
    if n:
        block = _block(n, x.device)
        _roi_align_kernel[(cdiv(n, block),)](
            x.contiguous(), rois.contiguous(), y, dy, dx, n, c, x.shape[2], x.shape[3],
            *pooled, float(scale), int(ratio), COLS=rois.shape[1], ALIGNED=bool(aligned),
            PS=bool(ps), BACKWARD=dy is not None, BLOCK=block)


def roi_align(x: torch.Tensor, rois: torch.Tensor, a: tuple, out=None) -> torch.Tensor:
    """ROIAlign forward; ``a`` = (pooled, scale, sample_ratio, position_sensitive,
    aligned)."""
    shape = (rois.shape[0], _align_out_channels(x, a[0], a[3])) + tuple(a[0])
    y = out if out is not None else torch.empty(shape, dtype=x.dtype, device=x.device)
    _align_launch(x, rois, a, y, None, y)
    return y


def roi_align_backward(dy: torch.Tensor, x: torch.Tensor, rois: torch.Tensor, a: tuple,
                       out=None) -> torch.Tensor:
    """ROIAlign data gradient (atomic adds of the sample weights)."""
    dx = _accumulator(tuple(x.shape), x, out)
    _align_launch(x, rois, a, dx, dy.contiguous(), dx)
    return _finish(dx, x.dtype, out)


def _align_weights(start, bins, grid: int, pooled: int, size: int, dtype) -> torch.Tensor:
    """(pooled, size) averaging weights of one axis: the bilinear taps of its samples,
    placed in ``start``'s precision."""
    p = torch.arange(pooled, dtype=start.dtype)[:, None]
    i = torch.arange(grid, dtype=start.dtype)[None, :]
    v = (start + p * bins + (i + 0.5) * bins / grid).reshape(-1)
    lo, hi, frac, ok = _taps(v, size)
    frac = frac * ok
    w = torch.zeros(pooled * grid, size, dtype=torch.float64)
    rows = torch.arange(pooled * grid)
    w.index_put_((rows, lo), ((1 - frac) * ok).double(), accumulate=True)
    w.index_put_((rows, hi), frac.double(), accumulate=True)
    return (w.reshape(pooled, grid, size).sum(1) / grid).to(dtype)


def _align_roi(x, roi, a):
    """One ROI's (C_out, PH, PW) output: separable weights ``A_h @ x[b] @ A_w^T``."""
    pooled, scale, ratio, ps, aligned = a
    b = int(roi[0]) if roi.numel() == 5 else 0
    scale = torch.tensor(scale, dtype=torch.float32).to(roi.dtype)  # MXNet's float parameter
    box = roi[-4:] * scale - (0.5 if aligned else 0.0)
    size = box[2:] - box[:2]  # (w, h)
    if not aligned:
        size = torch.clamp(size, min=1.0)
    grids = [ratio if ratio > 0 else int(math.ceil(float(size[k]) / pooled[1 - k]))
             for k in (1, 0)]
    ah = _align_weights(box[1], size[1] / pooled[0], grids[0], pooled[0], x.shape[2], x.dtype)
    aw = _align_weights(box[0], size[0] / pooled[1], grids[1], pooled[1], x.shape[3], x.dtype)
    if b < 0:
        return None
    out = separable(ah.to(x.device), x[b], aw.to(x.device))  # (C, PH, PW)
    if ps:  # output channel c of bin k reads input channel c * PH * PW + k
        ph, pw = pooled
        out = out.reshape(-1, ph * pw, ph * pw).diagonal(dim1=1, dim2=2)
        out = out.reshape(-1, ph, pw)
    return out


def roi_align_ref(x: torch.Tensor, rois: torch.Tensor, a: tuple) -> torch.Tensor:
    """Reference: per ROI, separable averaging weights on both sides of the map."""
    shape = (_align_out_channels(x, a[0], a[3]),) + tuple(a[0])
    coords = torch.float64 if x.dtype == torch.float64 else torch.float32  # MXNet's T
    outs = [_align_roi(x, roi, a) for roi in rois.detach().to(coords).cpu()]
    outs = [o if o is not None else x.new_zeros(shape) for o in outs]
    return torch.stack(outs) if outs else x.new_zeros((0,) + shape)


def roi_align_backward_ref(dy, x, rois, a):
    """Reference: autograd through :func:`roi_align_ref`."""
    with torch.enable_grad():
        leaf = x.detach().requires_grad_(True)
        out = roi_align_ref(leaf, rois, a)
        if not out.requires_grad:  # every ROI skipped (negative batch index): no gradient
            return torch.zeros_like(x)
        return torch.autograd.grad(out, leaf, dy)[0]


# ---------------------------------------------------------------- RROIAlign

@kernel
def _rroi_align_kernel(x, rois, y, n, C, H, W, PH, PW, scale, ratio, BLOCK: tl.constexpr):
    """ROIAlign over a box rotated by ``theta`` degrees about its centre (forward only)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    pw = offs % PW
    t = offs // PW
    ph = t % PH
    t = t // PH
    c = t % C
    r = t // C
    row = rois + r * 6
    b = tl.load(row, mask=mask, other=0.0).to(tl.int64)
    cx = tl.load(row + 1, mask=mask, other=0.0).to(tl.float32) * scale
    cy = tl.load(row + 2, mask=mask, other=0.0).to(tl.float32) * scale
    roi_w = tl.maximum(tl.load(row + 3, mask=mask, other=0.0).to(tl.float32) * scale, 1.0)
    roi_h = tl.maximum(tl.load(row + 4, mask=mask, other=0.0).to(tl.float32) * scale, 1.0)
    theta = (tl.load(row + 5, mask=mask, other=0.0).to(tl.float64)
             * 3.141592653589793 / 180.0).to(tl.float32)
    cos_t = tl.cos(theta)
    sin_t = tl.sin(theta)
    bin_h = roi_h / PH.to(tl.float32)
    bin_w = roi_w / PW.to(tl.float32)
    gh = tl.where(ratio > 0, ratio, tl.ceil(roi_h / PH.to(tl.float32)).to(tl.int64))
    gw = tl.where(ratio > 0, ratio, tl.ceil(roi_w / PW.to(tl.float32)).to(tl.int64))
    base = (b * C + c) * H * W
    acc = (offs * 0).to(tl.float32)
    for iy in range(0, tl.reduce(tl.where(mask, gh, 0), 0, _max_combine)):
        yy = -roi_h / 2.0 + ph.to(tl.float32) * bin_h + (iy + 0.5) * bin_h / gh.to(tl.float32)
        for ix in range(0, tl.reduce(tl.where(mask, gw, 0), 0, _max_combine)):
            xx = -roi_w / 2.0 + pw.to(tl.float32) * bin_w + (ix + 0.5) * bin_w / gw.to(tl.float32)
            ylo, yhi, ly, yok = _align_axis(yy * cos_t - xx * sin_t + cy, H)
            xlo, xhi, lx, xok = _align_axis(xx * cos_t + yy * sin_t + cx, W)
            ok = mask & (iy < gh) & (ix < gw) & yok & xok
            acc += ((1.0 - ly) * (1.0 - lx) * tl.load(x + base + ylo * W + xlo, mask=ok, other=0.0)
                    + (1.0 - ly) * lx * tl.load(x + base + ylo * W + xhi, mask=ok, other=0.0)
                    + ly * (1.0 - lx) * tl.load(x + base + yhi * W + xlo, mask=ok, other=0.0)
                    + ly * lx * tl.load(x + base + yhi * W + xhi, mask=ok, other=0.0))
    count = (gh * gw).to(tl.float32)
    tl.store(y + offs, (acc / count).to(y.dtype.element_ty), mask=mask)


def rroi_align(x: torch.Tensor, rois: torch.Tensor, pooled: tuple, scale: float,
               ratio: int = -1, out=None) -> torch.Tensor:
    """RROIAlign forward: rois (R, 6) ``[batch, cx, cy, w, h, theta_degrees]``."""
    shape = (rois.shape[0], x.shape[1]) + tuple(pooled)
    y = out if out is not None else torch.empty(shape, dtype=x.dtype, device=x.device)
    n = y.numel()
    if n:
        block = _block(n, x.device)
        _rroi_align_kernel[(cdiv(n, block),)](x.contiguous(), rois.contiguous(), y, n,
                                              *x.shape[1:], *pooled, float(scale), int(ratio),
                                              BLOCK=block)
    return y


def _taps(v: torch.Tensor, size: int):
    """MXNet's clamped bilinear taps of coordinates ``v``: (lo, hi, frac, in range)."""
    ok = (v >= -1.0) & (v <= size)
    v = torch.clamp(v, min=0.0)
    lo = v.long()
    edge = lo >= size - 1
    lo = torch.where(edge, torch.full_like(lo, size - 1), lo)
    hi = torch.where(edge, lo, lo + 1)
    return lo, hi, torch.where(edge, torch.zeros_like(v), v - lo.to(v.dtype)), ok


def _rroi_one(x, roi, pooled, scale, ratio):
    f32 = torch.float32
    cx, cy, w, h = (roi[1:5] * torch.tensor(scale, dtype=f32)).unbind()
    w, h = torch.clamp(w, min=1.0), torch.clamp(h, min=1.0)
    theta = (roi[5].double() * math.pi / 180.0).to(f32)
    gh = ratio if ratio > 0 else int(math.ceil(float(h / pooled[0])))
    gw = ratio if ratio > 0 else int(math.ceil(float(w / pooled[1])))
    bh, bw = h / pooled[0], w / pooled[1]
    yy = (-h / 2 + torch.arange(pooled[0], dtype=f32)[:, None] * bh
          + (torch.arange(gh, dtype=f32)[None] + 0.5) * bh / gh)  # (PH, gh)
    xx = (-w / 2 + torch.arange(pooled[1], dtype=f32)[:, None] * bw
          + (torch.arange(gw, dtype=f32)[None] + 0.5) * bw / gw)  # (PW, gw)
    yy, xx = yy[:, None, :, None], xx[None, :, None, :]
    ylo, yhi, ly, yok = _taps(yy * torch.cos(theta) - xx * torch.sin(theta) + cy, x.shape[2])
    xlo, xhi, lx, xok = _taps(xx * torch.cos(theta) + yy * torch.sin(theta) + cx, x.shape[3])
    flat = x[int(roi[0])].reshape(x.shape[1], -1)
    total = 0
    for yi, wy in ((ylo, 1 - ly), (yhi, ly)):
        for xi, wx in ((xlo, 1 - lx), (xhi, lx)):
            weight = (wy * wx * (yok & xok)).to(x.device, x.dtype)
            index = (yi * x.shape[3] + xi).reshape(-1).to(x.device)
            total = total + flat[:, index].reshape(
                (-1,) + weight.shape) * weight
    return total.sum((-1, -2)) / (gh * gw)


def rroi_align_ref(x: torch.Tensor, rois: torch.Tensor, pooled: tuple, scale: float,
                   ratio: int = -1) -> torch.Tensor:
    """Reference: per ROI, all rotated samples gathered at once."""
    outs = [_rroi_one(x, roi, pooled, scale, ratio) for roi in rois.detach().float().cpu()]
    return torch.stack(outs) if outs else x.new_zeros((0, x.shape[1]) + tuple(pooled))


# ---------------------------------------------------------------- table entries

def _rand(dtype, device, shape, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(tuple(shape), generator=gen).to(device=device, dtype=dtype)


def _rois(device, shape, scale: float, cols: int = 5):
    """Boxes in image coordinates, some reaching past the map, one with batch -1."""
    n, _, h, w = shape
    gen = torch.Generator().manual_seed(3)
    corners = torch.rand(6, 2, 2, generator=gen) * torch.tensor([w + 1.0, h + 1.0]) - 0.5
    lo, hi = corners.min(1).values, corners.max(1).values
    boxes = torch.cat([lo, hi], 1) / scale
    batch = torch.randint(0, n, (6, 1), generator=gen).float()
    batch[-1] = -1.0 if cols == 5 else batch[-1]
    rows = torch.cat([batch, boxes], 1)
    return (rows if cols == 5 else rows[:, 1:]).to(device)


_POOL = ((3, 2), 0.5)


def _make_pool(dtype, device, shape):
    return (_rand(dtype, device, shape), _rois(device, shape, _POOL[1]), *_POOL), {}


def _make_pool_bwd(dtype, device, shape):
    dy = _rand(dtype, device, (6, shape[1]) + _POOL[0], seed=2)
    return (dy, _rand(dtype, device, shape), _rois(device, shape, _POOL[1]), *_POOL), {}


def _align_args(shape) -> tuple:
    ps = shape[1] % 4 == 0
    return ((2, 2), 0.5, -1 if ps else 2, ps, shape[3] % 2 == 1)


def _make_align(dtype, device, shape):
    a = _align_args(shape)
    rois = _rois(device, shape, a[1], cols=5 if a[3] else 4)
    return (_rand(dtype, device, shape), rois, a), {}


def _make_align_bwd(dtype, device, shape):
    (x, rois, a), _ = _make_align(dtype, device, shape)
    dy = _rand(dtype, device, tuple(roi_align_ref(x, rois, a).shape), seed=2)
    return (dy, x, rois, a), {}


def _fwd_bytes(x, rois, *rest):
    return tensor_bytes(x, rois)


def _bwd_bytes(dy, x, rois, *rest):
    return tensor_bytes(dy, rois) + 2 * tensor_bytes(x)


_SHAPES = ((2, 3, 7, 6), (1, 8, 5, 9))
_BENCH = ((4, 256, 38, 50),)


def _entry(name, fn, ref, make, traffic, family="roi") -> KernelSpec:
    return KernelSpec(name=name, fn=fn, ref=ref, make=make, shapes=_SHAPES, bench_shapes=_BENCH,
                      dtypes=(torch.float32,), tol={torch.float32: (1e-4, 1e-5)},
                      bytes=traffic, family=family)


def _make_rroi(dtype, device, shape):
    gen = torch.Generator().manual_seed(5)
    n, _, h, w = shape
    rois = torch.rand(5, 6, generator=gen) * torch.tensor([n, w, h, w, h, 360.0]) * 2
    rois[:, 0] = torch.arange(5) % n
    return (_rand(dtype, device, shape), rois.to(device), (3, 2), 0.5, 2 if n > 1 else -1), {}


KERNELS = [
    _entry("rroi_align_fwd", rroi_align, rroi_align_ref, _make_rroi, _fwd_bytes),
    _entry("roi_pool_fwd", roi_pool, roi_pool_ref, _make_pool, _fwd_bytes),
    _entry("roi_pool_bwd", roi_pool_backward, roi_pool_backward_ref, _make_pool_bwd,
           _bwd_bytes),
    _entry("roi_align_fwd", roi_align, roi_align_ref, _make_align, _fwd_bytes),
    _entry("roi_align_bwd", roi_align_backward, roi_align_backward_ref, _make_align_bwd,
           _bwd_bytes),
]
