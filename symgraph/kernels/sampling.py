"""Bilinear sampling (BilinearSampler, BilinearResize2D) and adaptive average pooling.

Bilinear sampling reads, for output pixel (n, c, i, j), the source point ``(yr, xr)`` and
blends the four pixels around it: with ``y0 = floor(yr)``, ``ly = yr - y0`` (same for x)::

    out = (1-ly)(1-lx) v(y0, x0) + (1-ly) lx v(y0, x1) + ly (1-lx) v(y1, x0) + ly lx v(y1, x1)

* grid mode (``BilinearSampler``): ``xr = (grid[n, 0, i, j] + 1) * (W - 1) / 2`` (y from
  channel 1), ``x1 = x0 + 1``, pixels outside the image read as 0;
* resize mode (``BilinearResize2D``): ``yr = s_h * i`` (``align_corners``) or
  ``max(s_h * (i + 0.5) - 0.5, 0)``, computed in fp32 as MXNet does, with
  ``y1 = y0 + (y0 < H - 1)`` (the last row blends with itself).

Backward math, one lane per output pixel (n, i, j) looping over channels: ``dx`` gets the
four weights times ``dy`` by atomic adds; in grid mode ``d xr = sum_c dy * ((1-ly)(v01 - v00)
+ ly (v11 - v10))`` (and symmetrically for y), times ``(W - 1) / 2`` for the grid.

Adaptive average pooling averages the window ``[floor(o * H / OH), ceil((o + 1) * H / OH))``
per axis (``sum / kw / kh`` as MXNet); its backward scatters ``dy / kh / kw`` atomically.

Bytes moved: forward reads four pixels (cached: the input once) and the grid, writes the
output; backward reads dy, x, grid and writes dx (and dgrid).
"""
from __future__ import annotations

import math

import torch
import triton.language as tl

from .copy import copy_view, fill
from .philox import device
from .runtime import block_for, cdiv, fp32, kernel
from .table import KernelSpec, tensor_bytes


def _block(n: int, device: torch.device) -> int:
    return block_for(n, cap=256 if device.type == "cuda" else 128)


@device
def _source(grid, b, oh, ow, H, W, OH, OW, sh, sw, mask, MODE: tl.constexpr,
            ALIGN: tl.constexpr):
    """(y0, x0, y1, x1, ly, lx) of the source point of output pixel (b, oh, ow)."""
    if MODE == 0:
        g = b * 2 * OH * OW + oh * OW + ow
        gx = tl.load(grid + g, mask=mask, other=0.0).to(tl.float32)
        gy = tl.load(grid + g + OH * OW, mask=mask, other=0.0).to(tl.float32)
        yr = (gy + 1.0) * (H - 1).to(tl.float32) / 2.0
        xr = (gx + 1.0) * (W - 1).to(tl.float32) / 2.0
        y0f = tl.floor(yr)
        x0f = tl.floor(xr)
        y0 = y0f.to(tl.int64)
        x0 = x0f.to(tl.int64)
        return y0, x0, y0 + 1, x0 + 1, yr - y0f, xr - x0f
    if ALIGN:
        yr = sh * oh.to(tl.float32)
        xr = sw * ow.to(tl.float32)
    else:
        yr = tl.maximum(sh * (oh.to(tl.float32) + 0.5) - 0.5, 0.0)
        xr = tl.maximum(sw * (ow.to(tl.float32) + 0.5) - 0.5, 0.0)
    y0 = yr.to(tl.int64)
    x0 = xr.to(tl.int64)
    y1 = tl.where(y0 < H - 1, y0 + 1, y0)
    x1 = tl.where(x0 < W - 1, x0 + 1, x0)
    return y0, x0, y1, x1, yr - y0.to(tl.float32), xr - x0.to(tl.float32)


@kernel
def _bilinear_fwd_kernel(x, grid, y, n, C, H, W, OH, OW, sh, sw, MODE: tl.constexpr,
                         ALIGN: tl.constexpr, BLOCK: tl.constexpr):
    """One output element per lane: blend the four source pixels (fp32)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    ow = offs % OW
    t = offs // OW
    oh = t % OH
    t = t // OH
    b = t // C
    y0, x0, y1, x1, ly, lx = _source(grid, b, oh, ow, H, W, OH, OW, sh, sw, mask, MODE, ALIGN)
    base = t * H * W
    iny0 = (y0 >= 0) & (y0 < H)
    iny1 = (y1 >= 0) & (y1 < H)
    inx0 = (x0 >= 0) & (x0 < W)
    inx1 = (x1 >= 0) & (x1 < W)
    v00 = tl.load(x + base + y0 * W + x0, mask=mask & iny0 & inx0, other=0.0).to(tl.float32)
    v01 = tl.load(x + base + y0 * W + x1, mask=mask & iny0 & inx1, other=0.0).to(tl.float32)
    v10 = tl.load(x + base + y1 * W + x0, mask=mask & iny1 & inx0, other=0.0).to(tl.float32)
    v11 = tl.load(x + base + y1 * W + x1, mask=mask & iny1 & inx1, other=0.0).to(tl.float32)
    out = ((1.0 - ly) * ((1.0 - lx) * v00 + lx * v01)
           + ly * ((1.0 - lx) * v10 + lx * v11))
    tl.store(y + offs, out.to(y.dtype.element_ty), mask=mask)


@kernel
def _bilinear_bwd_kernel(dy, x, grid, dx, dgrid, n, C, H, W, OH, OW, sh, sw,
                         MODE: tl.constexpr, ALIGN: tl.constexpr, BLOCK: tl.constexpr):
    """One output pixel (b, oh, ow) per lane, looping over channels: scatter dx, sum dgrid."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    ow = offs % OW
    t = offs // OW
    oh = t % OH
    b = t // OH
    y0, x0, y1, x1, ly, lx = _source(grid, b, oh, ow, H, W, OH, OW, sh, sw, mask, MODE, ALIGN)
    m00 = mask & (y0 >= 0) & (y0 < H) & (x0 >= 0) & (x0 < W)
    m01 = mask & (y0 >= 0) & (y0 < H) & (x1 >= 0) & (x1 < W)
    m10 = mask & (y1 >= 0) & (y1 < H) & (x0 >= 0) & (x0 < W)
    m11 = mask & (y1 >= 0) & (y1 < H) & (x1 >= 0) & (x1 < W)
    gy = (offs * 0).to(tl.float32)
    gx = (offs * 0).to(tl.float32)
    for c in range(0, C):
        g = tl.load(dy + ((b * C + c) * OH + oh) * OW + ow, mask=mask, other=0.0).to(tl.float32)
        base = (b * C + c) * H * W
        tl.atomic_add(dx + base + y0 * W + x0, g * (1.0 - ly) * (1.0 - lx), mask=m00)
        tl.atomic_add(dx + base + y0 * W + x1, g * (1.0 - ly) * lx, mask=m01)
        tl.atomic_add(dx + base + y1 * W + x0, g * ly * (1.0 - lx), mask=m10)
        tl.atomic_add(dx + base + y1 * W + x1, g * ly * lx, mask=m11)
        if MODE == 0:
            v00 = tl.load(x + base + y0 * W + x0, mask=m00, other=0.0).to(tl.float32)
            v01 = tl.load(x + base + y0 * W + x1, mask=m01, other=0.0).to(tl.float32)
            v10 = tl.load(x + base + y1 * W + x0, mask=m10, other=0.0).to(tl.float32)
            v11 = tl.load(x + base + y1 * W + x1, mask=m11, other=0.0).to(tl.float32)
            gx += g * ((1.0 - ly) * (v01 - v00) + ly * (v11 - v10))
            gy += g * ((1.0 - lx) * (v10 - v00) + lx * (v11 - v01))
    if MODE == 0:
        go = b * 2 * OH * OW + oh * OW + ow
        tl.store(dgrid + go, (gx * (W - 1).to(tl.float32) / 2.0).to(dgrid.dtype.element_ty),
                 mask=mask)
        tl.store(dgrid + go + OH * OW,
                 (gy * (H - 1).to(tl.float32) / 2.0).to(dgrid.dtype.element_ty), mask=mask)


def resize_scale(size_in: int, size_out: int, align_corners: bool) -> float:
    """MXNet's source-index scale of one axis (fp32, 0 for a single output pixel)."""
    if size_out <= 1:
        return 0.0
    ratio = (size_in - 1) / (size_out - 1) if align_corners else size_in / size_out
    return fp32(ratio)


def _geometry(x, out_hw, align_corners):
    (H, W), (OH, OW) = x.shape[2:], out_hw
    return (x.shape[1], H, W, OH, OW, resize_scale(H, OH, align_corners),
            resize_scale(W, OW, align_corners))


def _launch_fwd(x, grid, out_hw, align_corners, out, mode):
    shape = tuple(x.shape[:2]) + tuple(out_hw)
    y = out if out is not None else torch.empty(shape, dtype=x.dtype, device=x.device)
    n = y.numel()
    if n:
        block = _block(n, x.device)
        _bilinear_fwd_kernel[(cdiv(n, block),)](
            x.contiguous(), grid, y, n, *_geometry(x, out_hw, align_corners), MODE=mode,
            ALIGN=align_corners, BLOCK=block)
    return y


def _accumulator(shape, like: torch.Tensor, out=None) -> torch.Tensor:
    """Zeroed fp32/fp64 storage for atomics: ``out`` itself where its dtype allows."""
    if out is not None and out.dtype in (torch.float32, torch.float64):
        return fill(out, 0.0)
    dtype = like.dtype if like.dtype in (torch.float32, torch.float64) else torch.float32
    return fill(torch.empty(shape, dtype=dtype, device=like.device), 0.0)


def _finish(acc: torch.Tensor, dtype: torch.dtype, out=None) -> torch.Tensor:
    """``acc`` in ``dtype`` (written into ``out`` when given and not already it)."""
    if out is acc or (out is None and acc.dtype == dtype):
        return acc
    result = out if out is not None else torch.empty(acc.shape, dtype=dtype, device=acc.device)
    copy_view(acc, result)
    return result


def _launch_bwd(dy, x, grid, align_corners, mode, out=(None, None)):
    out_hw = tuple(dy.shape[2:])
    dx = _accumulator(tuple(x.shape), x, out[0])
    dgrid = out[1] if out[1] is not None else dx if mode == 1 else torch.empty(
        grid.shape, dtype=grid.dtype, device=x.device)  # resize mode writes no dgrid
    n = dy.shape[0] * out_hw[0] * out_hw[1]
    if n:
        block = _block(n, x.device)
        _bilinear_bwd_kernel[(cdiv(n, block),)](
            dy.contiguous(), x.contiguous(), grid, dx, dgrid, n,
            *_geometry(x, out_hw, align_corners), MODE=mode, ALIGN=align_corners, BLOCK=block)
    return _finish(dx, x.dtype, out[0]), dgrid


def bilinear_sample(x: torch.Tensor, grid: torch.Tensor, out=None) -> torch.Tensor:
    """BilinearSampler forward: ``x`` (N, C, H, W) at ``grid`` (N, 2, OH, OW) in [-1, 1]."""
    return _launch_fwd(x, grid.contiguous(), grid.shape[2:], True, out, 0)


def bilinear_sample_ref(x: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    """Reference: four masked gathers (zero outside the image), in x's dtype."""
    N, C, H, W = x.shape
    xr = (grid[:, 0] + 1) * (W - 1) / 2
    yr = (grid[:, 1] + 1) * (H - 1) / 2
    x0, y0 = torch.floor(xr), torch.floor(yr)
    lx, ly = xr - x0, yr - y0
    flat = x.reshape(N, C, H * W)
    out = torch.zeros(N, C, *grid.shape[2:], dtype=x.dtype, device=x.device)
    for dy_, wy in ((0, 1 - ly), (1, ly)):
        for dx_, wx in ((0, 1 - lx), (1, lx)):
            yy, xx = (y0 + dy_).long(), (x0 + dx_).long()
            ok = (yy >= 0) & (yy < H) & (xx >= 0) & (xx < W)
            idx = (yy.clamp(0, H - 1) * W + xx.clamp(0, W - 1)).reshape(N, 1, -1)
            v = flat.gather(2, idx.expand(N, C, -1)).reshape(out.shape)
            out = out + torch.where(ok[:, None], v, torch.zeros_like(v)) * (wy * wx)[:, None]
    return out


def bilinear_sample_backward(dy: torch.Tensor, x: torch.Tensor, grid: torch.Tensor,
                             out=None) -> tuple[torch.Tensor, torch.Tensor]:
    """BilinearSampler gradients (dx, dgrid): one launch, fp32 atomics into dx."""
    return _launch_bwd(dy, x, grid.contiguous(), True, 0, out if out is not None else (None,
                                                                                         None))


def bilinear_sample_backward_ref(dy, x, grid):
    """Reference: autograd through :func:`bilinear_sample_ref` (floor has no gradient)."""
    return _vjp(bilinear_sample_ref, dy, x, grid)


def bilinear_resize(x: torch.Tensor, out_hw: tuple, align_corners: bool = True,
                    out=None) -> torch.Tensor:
    """BilinearResize2D forward: ``x`` (N, C, H, W) resized to ``out_hw``."""
    return _launch_fwd(x, x, tuple(out_hw), bool(align_corners), out, 1)


def _resize_taps(size_in: int, size_out: int, align_corners: bool, device):
    """Per output index: the two source indices and the weight of the second (fp32)."""
    scale = torch.tensor(resize_scale(size_in, size_out, align_corners), dtype=torch.float32)
    o = torch.arange(size_out, dtype=torch.float32, device=device)
    src = scale * o if align_corners else torch.clamp(scale * (o + 0.5) - 0.5, min=0.0)
    i0 = src.long()
    i1 = torch.where(i0 < size_in - 1, i0 + 1, i0)
    return i0, i1, src - i0.float()


def bilinear_resize_ref(x: torch.Tensor, out_hw: tuple, align_corners: bool = True):
    """Reference: separable gathers along H then W with MXNet's fp32 source indices."""
    h0, h1, lh = _resize_taps(x.shape[2], out_hw[0], align_corners, x.device)
    w0, w1, lw = _resize_taps(x.shape[3], out_hw[1], align_corners, x.device)
    lh, lw = lh.to(x.dtype)[:, None], lw.to(x.dtype)
    rows = x[:, :, h0] * (1 - lh) + x[:, :, h1] * lh
    return rows[..., w0] * (1 - lw) + rows[..., w1] * lw


def bilinear_resize_backward(dy: torch.Tensor, x: torch.Tensor, align_corners: bool = True,
                             out=None) -> torch.Tensor:
    """BilinearResize2D data gradient: fp32 atomics of the four weights times dy."""
    return _launch_bwd(dy, x, dy, bool(align_corners), 1, (out, None))[0]


def bilinear_resize_backward_ref(dy, x, align_corners=True):
    """Reference: autograd through :func:`bilinear_resize_ref`."""
    return _vjp(lambda t: bilinear_resize_ref(t, tuple(dy.shape[2:]), align_corners), dy, x)[0]


def _vjp(fn, dy, *args):
    with torch.enable_grad():
        leaves = [a.detach().requires_grad_(True) for a in args]
        return torch.autograd.grad(fn(*leaves), leaves, dy)


# ---------------------------------------------------------------- adaptive average pooling

@kernel
def _adaptive_kernel(x, y, n, H, W, OH, OW, KH, KW, BACKWARD: tl.constexpr,
                     BLOCK: tl.constexpr):
    """One output element per lane: average its window (or scatter dy / count into dx)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    ow = offs % OW
    t = offs // OW
    oh = t % OH
    t = t // OH
    h0 = (oh * H) // OH
    h1 = ((oh + 1) * H + OH - 1) // OH
    w0 = (ow * W) // OW
    w1 = ((ow + 1) * W + OW - 1) // OW
    kh = (h1 - h0).to(tl.float32)
    kw = (w1 - w0).to(tl.float32)
    acc = (offs * 0).to(tl.float32)
    if BACKWARD:
        g = tl.load(y + offs, mask=mask, other=0.0).to(tl.float32) / kh / kw
    for i in range(0, KH):
        for j in range(0, KW):
            ok = mask & (h0 + i < h1) & (w0 + j < w1)
            at = x + t * H * W + (h0 + i) * W + w0 + j
            if BACKWARD:
                tl.atomic_add(at, g, mask=ok)
            else:
                acc += tl.load(at, mask=ok, other=0.0).to(tl.float32)
    if not BACKWARD:
        tl.store(y + offs, (acc / kw / kh).to(y.dtype.element_ty), mask=mask)


def _max_window(size_in: int, size_out: int) -> int:
    return max(-(-((o + 1) * size_in) // size_out) - (o * size_in) // size_out
               for o in range(size_out))


def _adaptive_launch(x, y, backward: bool) -> None:
    H, W = x.shape[2:]
    OH, OW = y.shape[2:]
    n = y.numel()
    if n:
        block = _block(n, x.device)
        _adaptive_kernel[(cdiv(n, block),)](x, y, n, H, W, OH, OW, _max_window(H, OH),
                                            _max_window(W, OW), BACKWARD=backward,
                                            BLOCK=block)


def adaptive_avg_pool(x: torch.Tensor, out_hw: tuple, out=None) -> torch.Tensor:
    """AdaptiveAvgPooling2D forward of ``x`` (N, C, H, W) to ``out_hw``."""
    shape = tuple(x.shape[:2]) + tuple(out_hw)
    y = out if out is not None else torch.empty(shape, dtype=x.dtype, device=x.device)
    _adaptive_launch(x.contiguous(), y, False)
    return y


def _window_matrix(size_in: int, size_out: int, dtype, device) -> torch.Tensor:
    m = torch.zeros(size_out, size_in, dtype=dtype, device=device)
    for o in range(size_out):
        lo, hi = (o * size_in) // size_out, -(-((o + 1) * size_in) // size_out)
        m[o, lo:hi] = 1.0 / (hi - lo)
    return m


def separable(ah: torch.Tensor, x: torch.Tensor, aw: torch.Tensor) -> torch.Tensor:
    """``ah @ x @ aw.T`` over the last two axes of ``x`` as two 2-D matmuls (batched
    matmuls of tiny matrices are far slower on a loaded CPU)."""
    lead, (h, w) = x.shape[:-2], x.shape[-2:]
    t = (x.reshape(-1, w) @ aw.T).reshape(-1, h, aw.shape[0])
    t = ah @ t.transpose(0, 1).reshape(h, -1)
    return t.reshape(ah.shape[0], -1, aw.shape[0]).transpose(0, 1).reshape(
        tuple(lead) + (ah.shape[0], aw.shape[0])).contiguous()


def adaptive_avg_pool_ref(x: torch.Tensor, out_hw: tuple) -> torch.Tensor:
    """Reference: averaging matrices on both sides, ``A_h @ x @ A_w^T``."""
    ah = _window_matrix(x.shape[2], out_hw[0], x.dtype, x.device)
    aw = _window_matrix(x.shape[3], out_hw[1], x.dtype, x.device)
    return separable(ah, x, aw)


def adaptive_avg_pool_backward(dy: torch.Tensor, x: torch.Tensor, out=None) -> torch.Tensor:
    """AdaptiveAvgPooling2D data gradient: fp32 atomics of ``dy / kh / kw``."""
    dx = _accumulator(tuple(x.shape), x, out)
    _adaptive_launch(dx, dy.contiguous(), True)
    return _finish(dx, x.dtype, out)


def adaptive_avg_pool_backward_ref(dy: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Reference: the transposed averaging matrices."""
    ah = _window_matrix(x.shape[2], dy.shape[2], dy.dtype, dy.device)
    aw = _window_matrix(x.shape[3], dy.shape[3], dy.dtype, dy.device)
    return separable(ah.T, dy, aw.T)


# ---------------------------------------------------------------- table entries

def _rand(dtype, device, shape, seed=0, scale=1.0):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(tuple(shape), generator=gen) * scale).to(device=device, dtype=dtype)


def _out_hw(shape) -> tuple:
    return (shape[2] * 2 - 1, max(1, shape[3] - 2))


def _make_sample(dtype, device, shape):
    grid = _rand(dtype, device, (shape[0], 2) + _out_hw(shape), seed=1, scale=0.7)
    return (_rand(dtype, device, shape), grid), {}


def _make_sample_bwd(dtype, device, shape):
    (x, grid), _ = _make_sample(dtype, device, shape)
    return (_rand(dtype, device, tuple(shape[:2]) + _out_hw(shape), seed=2), x, grid), {}


def _make_resize(dtype, device, shape):
    return (_rand(dtype, device, shape), _out_hw(shape), shape[3] % 2 == 0), {}


def _make_resize_bwd(dtype, device, shape):
    dy = _rand(dtype, device, tuple(shape[:2]) + _out_hw(shape), seed=2)
    return (dy, _rand(dtype, device, shape), shape[3] % 2 == 0), {}


def _make_adaptive(dtype, device, shape):
    return (_rand(dtype, device, shape), (3, 2)), {}


def _make_adaptive_bwd(dtype, device, shape):
    return (_rand(dtype, device, tuple(shape[:2]) + (3, 2), seed=2),
            _rand(dtype, device, shape)), {}


def _bytes_fwd(x, second, *rest):
    grid = second if isinstance(second, torch.Tensor) else x[:, :2, :1, :1]
    return tensor_bytes(x, grid) + x.element_size() * x.shape[0] * x.shape[1] * math.prod(
        grid.shape[2:] if isinstance(second, torch.Tensor) else tuple(second))


def _bytes_bwd(dy, x, *rest):
    return tensor_bytes(dy) + 2 * tensor_bytes(x)


_SHAPES = ((2, 3, 5, 7), (1, 2, 4, 6))
_BENCH = ((16, 64, 64, 64),)
_DT = (torch.float32,)
_TOL = {torch.float32: (1e-4, 1e-5)}


def _entry(name, fn, ref, make, traffic) -> KernelSpec:
    return KernelSpec(name=name, fn=fn, ref=ref, make=make, shapes=_SHAPES, bench_shapes=_BENCH,
                      dtypes=_DT, tol=_TOL, bytes=traffic, family="sampling")


KERNELS = [
    _entry("bilinear_sample_fwd", bilinear_sample, bilinear_sample_ref, _make_sample,
           _bytes_fwd),
    _entry("bilinear_sample_bwd", bilinear_sample_backward, bilinear_sample_backward_ref,
           _make_sample_bwd, _bytes_bwd),
    _entry("bilinear_resize_fwd", bilinear_resize, bilinear_resize_ref, _make_resize,
           _bytes_fwd),
    _entry("bilinear_resize_bwd", bilinear_resize_backward, bilinear_resize_backward_ref,
           _make_resize_bwd, _bytes_bwd),
    _entry("adaptive_avg_pool_fwd", adaptive_avg_pool, adaptive_avg_pool_ref, _make_adaptive,
           _bytes_fwd),
    _entry("adaptive_avg_pool_bwd", adaptive_avg_pool_backward, adaptive_avg_pool_backward_ref,
           _make_adaptive_bwd, _bytes_bwd),
]
