"""Image resize as OpenCV's ``cv::resize`` computes it (MXNet's ``_image_resize`` calls it).

Data is (N, H, W, C) contiguous. Each output axis has a table of ``K`` source indices and
weights per output position (``resize_tables``: nearest K=1, bilinear K=2, bicubic K=4;
half-pixel centres ``src = (dst + 0.5) * in / out - 0.5``, edge pixels repeated, OpenCV's
clamping rules), applied as a horizontal pass then a vertical one::

    h[n, y, ox, c]   = sum_j wx[ox, j] * x[n, y, ix[ox, j], c]
    out[n, oy, ox, c] = sum_i wy[oy, i] * h[n, iy[oy, i], ox, c]

Float images compute in fp32 (fp64 for fp64 images). uint8 images use OpenCV's fixed point:
weights ``rint(w * 2048)``, integer sums, and for bilinear the vertical step
``(((wy0 * (h0 >> 4)) >> 16) + ((wy1 * (h1 >> 4)) >> 16) + 2) >> 2``, for bicubic
``clip((sum + 2**21) >> 22, 0, 255)``; nearest copies. One lane per output element reads
``KX * KY`` inputs: bytes moved are the output plus ``KX * KY`` reads of it (cached).
"""
from __future__ import annotations

import functools

import torch
import triton.language as tl

from .runtime import block_for, cdiv, kernel
from .table import KernelSpec, tensor_bytes

_TAPS = {0: 1, 1: 2, 2: 4}
_SCALE = 2048  # OpenCV's INTER_RESIZE_COEF_SCALE (11 fractional bits)


@kernel
def _resize_kernel(x, out, yi, yw, xi, xw, H, W, C, OH, OW, total, KY: tl.constexpr,
                   KX: tl.constexpr, MODE: tl.constexpr, F64: tl.constexpr,
                   BLOCK: tl.constexpr):
    """MODE 0: float weights; 1: uint8 bilinear fixed point; 2: uint8 bicubic fixed point."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    c = offs % C
    ox = (offs // C) % OW
    oy = (offs // (C * OW)) % OH
    base = offs // (C * OW * OH) * H * W * C + c
    if MODE == 0:
        acc = tl.full([BLOCK], 0.0, tl.float64 if F64 else tl.float32)
    else:
        acc = tl.full([BLOCK], 0, tl.int64)
    for i in tl.static_range(KY):
        iy = tl.load(yi + oy * KY + i, mask=mask, other=0).to(tl.int64)
        wy = tl.load(yw + oy * KY + i, mask=mask, other=0)
        h = acc * 0
        for j in tl.static_range(KX):
            ix = tl.load(xi + ox * KX + j, mask=mask, other=0).to(tl.int64)
            wx = tl.load(xw + ox * KX + j, mask=mask, other=0)
            v = tl.load(x + base + (iy * W + ix) * C, mask=mask, other=0)
            h += v.to(acc.dtype) * wx.to(acc.dtype)
        if MODE == 1:
            acc += (wy.to(tl.int64) * (h >> 4)) >> 16
        else:
            acc += h * wy.to(acc.dtype)
    if MODE == 1:
        acc = (acc + 2) >> 2
    elif MODE == 2:
        acc = tl.minimum(tl.maximum((acc + (1 << 21)) >> 22, 0), 255)
    tl.store(out + offs, acc.to(out.dtype.element_ty), mask=mask)


@functools.lru_cache(maxsize=256)
def _axis_table(size: int, out_size: int, interp: int, fixed: bool):
    """(indices (out, K) int32, weights (out, K): fp32, or int32 for fixed point)."""
    scale = 1.0 / (out_size / size)  # OpenCV: 1 / inv_scale, in double
    dst = torch.arange(out_size, dtype=torch.float64)
    if interp == 0:
        idx = torch.clamp(torch.floor(dst * scale), max=size - 1).to(torch.int64)[:, None]
        return idx.to(torch.int32), torch.ones(out_size, 1, dtype=torch.int32 if fixed else
                                               torch.float32) * (_SCALE ** 2 if fixed else 1)
    f = ((dst + 0.5) * scale - 0.5).to(torch.float32)
    start = torch.floor(f)
    f = f - start
    start = start.to(torch.int64)
    if interp == 1:
        low, high = start < 0, start >= size - 1
        f = torch.where(low | high, torch.zeros_like(f), f)
        start = torch.where(low, 0, torch.where(high, size - 1, start))
        weights = torch.stack([1.0 - f, f], 1)
    else:
        weights = _cubic(f)
        start = start - 1
    idx = torch.clamp(start[:, None] + torch.arange(weights.shape[1]), 0, size - 1)
    if fixed:
        weights = torch.round(weights * _SCALE).to(torch.int32)  # round half to even
    return idx.to(torch.int32), weights


def _cubic(x: torch.Tensor) -> torch.Tensor:
    """OpenCV's bicubic weights (A = -0.75) for fractional offsets ``x`` (fp32 math)."""
    a = -0.75
    w0 = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a
    w1 = ((a + 2) * x - (a + 3)) * x * x + 1
    w2 = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1
    return torch.stack([w0, w1, w2, 1.0 - w0 - w1 - w2], 1)


def resize_tables(x: torch.Tensor, oh: int, ow: int, interp: int):
    """The (yi, yw, xi, xw) tables on x's device, and the kernel mode."""
    if interp not in _TAPS:
        raise ValueError(f"resize: interp={interp} is not supported (0, 1 and 2 are)")
    fixed = x.dtype == torch.uint8 and interp != 0
    tabs = _axis_table(x.shape[1], oh, interp, fixed) + _axis_table(x.shape[2], ow, interp,
                                                                      fixed)
    mode = 0 if not fixed else (1 if interp == 1 else 2)
    return [t.to(x.device) for t in tabs], mode


def image_resize(x: torch.Tensor, oh: int, ow: int, interp: int = 1,
                 out: torch.Tensor | None = None) -> torch.Tensor:
    """Resize (N, H, W, C) images to (N, oh, ow, C) (check, allocate, launch)."""
    x = x.contiguous()
    (yi, yw, xi, xw), mode = resize_tables(x, oh, ow, interp)
    if out is None:
        out = torch.empty((x.shape[0], oh, ow, x.shape[3]), dtype=x.dtype, device=x.device)
    total = out.numel()
    if total == 0:
        return out
    block = block_for(total, cap=1024 if x.is_cuda else 256)
    _resize_kernel[(cdiv(total, block),)](
        x, out, yi, yw, xi, xw, x.shape[1], x.shape[2], x.shape[3], oh, ow, total,
        KY=yi.shape[1], KX=xi.shape[1], MODE=mode, F64=x.dtype == torch.float64, BLOCK=block)
    return out


def image_resize_ref(x: torch.Tensor, oh: int, ow: int, interp: int = 1) -> torch.Tensor:
    """Torch reference of :func:`image_resize` (same tables and integer arithmetic)."""
    (yi, yw, xi, xw), mode = resize_tables(x, oh, ow, interp)
    acc = torch.int64 if mode else (torch.float64 if x.dtype == torch.float64 else
                                    torch.float32)
    xs = x.to(acc)
    # (N, H, OW, KX, C) weighted and summed over the taps, then the same along H
    h = (xs[:, :, xi.long(), :] * xw.to(acc)[None, None, :, :, None]).sum(3)
    rows = h[:, yi.long(), :, :]  # (N, OH, KY, OW, C)
    wy = yw.to(acc)[None, :, :, None, None]
    if mode == 1:
        return (((wy * (rows >> 4)) >> 16).sum(2) + 2 >> 2).to(x.dtype)
    total = (rows * wy).sum(2)
    if mode == 2:
        total = torch.clamp((total + (1 << 21)) >> 22, 0, 255)
    return total.to(x.dtype)


def _make(interp: int):
    def make(dtype, device, shape):
        n, h, w, c, oh, ow = shape
        g = torch.Generator().manual_seed(0)
        if dtype == torch.uint8:
            x = torch.randint(0, 256, (n, h, w, c), generator=g, dtype=torch.uint8)
        else:
            x = torch.rand((n, h, w, c), generator=g, dtype=dtype) * 255
        return (x.to(device), oh, ow, interp), {}
    return make


_TOL = {torch.float32: (1e-5, 1e-4), torch.float64: (1e-12, 1e-10)}

KERNELS = [
    KernelSpec(name=f"image_resize_{kind}", fn=image_resize, ref=image_resize_ref,
               make=_make(interp), shapes=((1, 5, 7, 3, 3, 4), (2, 4, 3, 1, 9, 5),
                                           (1, 6, 6, 3, 3, 3)),
               bench_shapes=((32, 300, 200, 3, 224, 224),),
               # uint8 (fixed point) runs in tests/kernels/test_ops_image_triton.py: the table
               # test poisons integer outputs with -12345, which uint8 cannot hold
               dtypes=(torch.float32, torch.float64), tol=_TOL,
               bytes=lambda x, oh, ow, interp: tensor_bytes(x) + x.shape[0] * oh * ow *
               x.shape[3] * x.element_size(), family="image")
    for kind, interp in (("nearest", 0), ("bilinear", 1), ("bicubic", 2))
]
