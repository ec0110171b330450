"""Image resize as OpenCV's ``cv::resize`` computes it (MXNet's ``_image_resize`` calls it).

Data is (N, H, W, C) contiguous. Each output axis has a table of ``K`` source indices and
weights per output position (``resize_tables``: nearest K=1, bilinear K=2, bicubic K=4,
Lanczos-4 K=8;
half-pixel centres ``src = (dst + 0.5) * in / out - 0.5``, edge pixels repeated, OpenCV's
clamping rules), applied as a horizontal pass then a vertical one::

    h[n, y, ox, c]   = sum_j wx[ox, j] * x[n, y, ix[ox, j], c]
    out[n, oy, ox, c] = sum_i wy[oy, i] * h[n, iy[oy, i], ox, c]

uint8 images use OpenCV's fixed point: weights ``rint(w * 2048)`` of fp32 positions, integer
sums, and for bilinear the vertical step
``(((wy0 * (h0 >> 4)) >> 16) + ((wy1 * (h1 >> 4)) >> 16) + 2) >> 2``, for bicubic and
Lanczos ``clip((sum + 2**21) >> 22, 0, 255)``; nearest copies. A bilinear column outside the image
takes weights (1, 0) on the edge pixel, a row outside keeps its split weights (OpenCV clamps
only the horizontal table), which the truncating vertical step can make 1 lower. With these
rules nearest, bilinear and Lanczos uint8 outputs equal ``cv2.resize``'s bit for bit.
Area resizes (interp 3) are not here: ``_image_resize`` calls ``cv2.resize`` for them.

uint8 bicubic is the exception: ``cv2.resize`` hands it to Intel IPP (``ippiResizeCubic``,
B=0, C=0.75), whose arithmetic is not published: its outputs lie within 1 level of the
exact real-valued result, rounding differently on ~0.7% of pixels (values within ~0.1 of a
half), so no table here reproduces them; and OpenCV's own path (IPP off) rounds the columns
its SIMD loop covers in fp32 and the rest in integers, which depends on the SIMD width. The
fixed-point rule above is that own path's integer arithmetic, within 1 level of IPP; the
``_image_resize`` CPU forward calls ``cv2.resize`` for uint8 bicubic instead.

Float images compute in fp32 (fp64 for fp64 images). OpenCV gives float bilinear and fp32
bicubic resizes to IPP, which places samples in fp64, so those tables are built in fp64
(within 3e-4 of ``cv2.resize`` at 255); fp64 bicubic and Lanczos run OpenCV's fp32 tables. One lane
per output element reads ``KX * KY`` inputs: bytes moved are the output plus ``KX * KY``
reads of it (cached).
"""
from __future__ import annotations

import functools
import math

import torch
import triton.language as tl

from .runtime import block_for, cdiv, device_cached, fp32, kernel
from .table import KernelSpec, tensor_bytes

_SCALE = 2048  # OpenCV's INTER_RESIZE_COEF_SCALE (11 fractional bits)


@kernel
def _resize_kernel(x, out, yi, yw, xi, xw, H, W, C, OH, OW, total, post, KY: tl.constexpr,
                   KX: tl.constexpr, MODE: tl.constexpr, F64: tl.constexpr,
                   BLOCK: tl.constexpr):
    """MODE 0: float weights, times ``post``; 1: uint8 bilinear fixed point; 2: uint8
    bicubic/Lanczos fixed point; 3: uint8 area, fp32 sums times ``post`` rounded half to
    even (the sums are sequential mul-then-add: launched without fp fusion)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    c = offs % C
    ox = (offs // C) % OW
    oy = (offs // (C * OW)) % OH
    base = offs // (C * OW * OH) * H * W * C + c
    if MODE == 0 or MODE == 3:
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
    elif MODE == 3:
        v = acc * post
        r = tl.floor(v + 0.5)
        odd = (r * 0.5 - tl.floor(r * 0.5)) != 0
        r = tl.where((r - v == 0.5) & odd, r - 1, r)
        acc = tl.minimum(tl.maximum(r, 0.0), 255.0)
    else:
        acc = acc * post
    tl.store(out + offs, acc.to(out.dtype.element_ty), mask=mask)


@functools.lru_cache(maxsize=256)
def _axis_table(size: int, out_size: int, interp: int, fixed: bool, rows: bool = False,
                precise: bool = False):
    """(indices (out, K) int32, weights (out, K): fp32, or int32 for fixed point).

    OpenCV clamps a bilinear column's source position into the image (weights 1, 0) but
    not a row's: rows outside keep their split weights on the repeated edge row, which the
    fixed-point vertical step truncates twice (``rows=True``). ``precise``: positions and
    weights in fp64 (IPP's float resizes), else in fp32 as OpenCV's own code.
    """
    scale = 1.0 / (out_size / size)  # OpenCV: 1 / inv_scale, in double
    dst = torch.arange(out_size, dtype=torch.float64)
    if interp == 0:
        idx = torch.clamp(torch.floor(dst * scale), max=size - 1).to(torch.int64)[:, None]
        return idx.to(torch.int32), torch.ones(out_size, 1, dtype=torch.int32 if fixed else
                                               torch.float32) * (_SCALE ** 2 if fixed else 1)
    if interp == 3:  # OpenCV's area upscale: bilinear weights from pixel-box overlaps
        start = torch.floor(dst * scale)
        f = ((dst + 1) - (start + 1) * (out_size / size)).to(torch.float32)
        f = torch.where(f <= 0, torch.zeros_like(f), f - torch.floor(f))
    else:
        f = ((dst + 0.5) * scale - 0.5).to(torch.float64 if precise else torch.float32)
        start = torch.floor(f)
        f = f - start
    start = start.to(torch.int64)
    if interp in (1, 3):
        if not rows:
            low, high = start < 0, start >= size - 1
            f = torch.where(low | high, torch.zeros_like(f), f)
            start = torch.where(low, 0, torch.where(high, size - 1, start))
        weights = torch.stack([1.0 - f, f], 1)
    else:
        weights = _cubic(f) if interp == 2 else _lanczos4(f)
        start = start - (weights.shape[1] // 2 - 1)
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


def _lanczos4(x: torch.Tensor) -> torch.Tensor:
    """OpenCV's Lanczos-4 weights of offsets ``x``: each in fp64 rounded to x's precision,
    then normalised by their sequential sum in that precision (a tap at distance < 1e-6
    takes 1e30, so the normalised row is one-hot)."""
    y0 = -(x.double() + 3) * math.pi * 0.25
    s0, c0 = torch.sin(y0), torch.cos(y0)
    cols = []
    for i, (a, b) in enumerate(_LANCZOS_CS):
        d = x + 3 - i  # in x's precision, as OpenCV's float
        y = -d.double() * math.pi * 0.25
        w = ((a * s0 + b * c0) / (y * y)).to(x.dtype)
        cols.append(torch.where(d.abs() >= 1e-6, w, torch.full_like(w, 1e30)))
    total = cols[0]
    for w in cols[1:]:
        total = total + w
    return torch.stack(cols, 1) * (1.0 / total)[:, None]


_S45 = 0.70710678118654752440084436210485
_LANCZOS_CS = ((1, 0), (-_S45, -_S45), (0, 1), (_S45, -_S45), (-1, 0), (_S45, _S45), (0, -1),
               (-_S45, _S45))


def resize_tables(x: torch.Tensor, oh: int, ow: int, interp: int):
    """The (yi, yw, xi, xw) tables on x's device (built and copied once per geometry), the
    kernel mode and the output scale."""
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError(f"resize: interp={interp} is not supported (0 to 4 are)")
    h, w = x.shape[1], x.shape[2]
    tabs, mode, post = _host_tables(h, w, oh, ow, interp, x.dtype)
    return list(device_cached(("resize", h, w, oh, ow, interp, x.dtype), lambda: tabs,
                              x.device)), mode, post


@functools.lru_cache(maxsize=256)
def _host_tables(h: int, w: int, oh: int, ow: int, interp: int, dtype: torch.dtype):
    if interp == 3:
        return _area_tables(h, w, oh, ow, dtype == torch.uint8)
    fixed = dtype == torch.uint8 and interp != 0
    # OpenCV hands float bilinear and fp32 bicubic resizes to IPP, which places its
    # samples in fp64; fp64 bicubic, Lanczos and uint8 run OpenCV's own fp32 tables
    precise = dtype.is_floating_point and (interp == 1 or (interp == 2 and
                                                           dtype == torch.float32))
    tabs = (_axis_table(h, oh, interp, fixed, True, precise)
            + _axis_table(w, ow, interp, fixed, False, precise))
    return tabs, 0 if not fixed else (1 if interp == 1 else 2), 1.0


def _area_tables(h: int, w: int, oh: int, ow: int, uint8: bool):
    """OpenCV's INTER_AREA as tables: bilinear-like when either axis grows, a box sum
    times ``1 / area`` (fp32) for whole-number shrink factors (2x2 on uint8 rounds half up,
    as the fixed-point bilinear does), else each source pixel weighted by its overlap."""
    sy, sx = 1.0 / (oh / h), 1.0 / (ow / w)
    if sx < 1 or sy < 1:
        return (_axis_table(h, oh, 3, uint8, True) + _axis_table(w, ow, 3, uint8)), \
            int(uint8), 1.0
    iy, ix = round(sy), round(sx)
    if abs(sy - iy) < 2.220446049250313e-16 and abs(sx - ix) < 2.220446049250313e-16:
        if uint8 and iy == ix == 2:
            return (_axis_table(h, oh, 1, True, True) + _axis_table(w, ow, 1, True)), 1, 1.0
        return (_box_table(oh, iy) + _box_table(ow, ix)), 3 if uint8 else 0, \
            fp32(1.0 / (ix * iy))
    return (_overlap_table(h, oh, sy) + _overlap_table(w, ow, sx)), 3 if uint8 else 0, 1.0


def _box_table(out_size: int, k: int):
    """Source pixels ``k * o .. k * o + k - 1`` of output ``o``, unit weights."""
    idx = torch.arange(out_size)[:, None] * k + torch.arange(k)
    return idx.to(torch.int32), torch.ones(out_size, k, dtype=torch.float32)


@functools.lru_cache(maxsize=256)
def _overlap_table(size: int, out_size: int, scale: float):
    """OpenCV's area-decimation weights: the overlap of each source pixel with output
    ``o``'s box ``[o * scale, (o + 1) * scale)`` over the box width (overlaps under 1e-3
    dropped), padded with zero weights to the widest row."""
    rows = []
    for o in range(out_size):
        lo, hi = o * scale, o * scale + scale
        width = min(scale, size - lo)
        last = min(math.floor(hi), size - 1)
        first = min(math.ceil(lo), last)
        row = [(first - 1, (first - lo) / width)] if first - lo > 1e-3 else []
        row += [(i, 1.0 / width) for i in range(first, last)]
        if hi - last > 1e-3:
            row.append((last, min(hi - last, 1.0, width) / width))
        rows.append(row)
    k = max(len(r) for r in rows)
    idx = [[i for i, _ in r] + [r[-1][0]] * (k - len(r)) for r in rows]
    wts = [[a for _, a in r] + [0.0] * (k - len(r)) for r in rows]
    return torch.tensor(idx, dtype=torch.int32), torch.tensor(wts, dtype=torch.float32)


def image_resize(x: torch.Tensor, oh: int, ow: int, interp: int = 1,
                 out: torch.Tensor | None = None) -> torch.Tensor:
    """Resize (N, H, W, C) images to (N, oh, ow, C) (check, allocate, launch)."""
    x = x.contiguous()
    (yi, yw, xi, xw), mode, post = resize_tables(x, oh, ow, interp)
    if out is None:
        out = torch.empty((x.shape[0], oh, ow, x.shape[3]), dtype=x.dtype, device=x.device)
    total = out.numel()
    if total == 0:
        return out
    block = block_for(total, cap=1024 if x.is_cuda else 256)
    _resize_kernel[(cdiv(total, block),)](
        x, out, yi, yw, xi, xw, x.shape[1], x.shape[2], x.shape[3], oh, ow, total, post,
        KY=yi.shape[1], KX=xi.shape[1], MODE=mode, F64=x.dtype == torch.float64, BLOCK=block,
        enable_fp_fusion=False)
    return out


def image_resize_ref(x: torch.Tensor, oh: int, ow: int, interp: int = 1) -> torch.Tensor:
    """Torch reference of :func:`image_resize` (same tables, sums in the same order)."""
    (yi, yw, xi, xw), mode, post = resize_tables(x, oh, ow, interp)
    acc = torch.int64 if mode in (1, 2) else (torch.float64 if x.dtype == torch.float64 else
                                              torch.float32)
    xs, xw, yw = x.to(acc), xw.to(acc), yw.to(acc)
    h = 0  # (N, H, OW, C): the taps of each output column, summed in order
    for j in range(xi.shape[1]):
        h = h + xs[:, :, xi[:, j].long(), :] * xw[None, None, :, j, None]
    total = 0  # (N, OH, OW, C): the same along H
    for i in range(yi.shape[1]):
        row, wy = h[:, yi[:, i].long()], yw[None, :, i, None, None]
        total = total + ((wy * (row >> 4)) >> 16 if mode == 1 else row * wy)
    if mode == 1:
        return ((total + 2) >> 2).to(x.dtype)
    if mode == 2:
        return torch.clamp((total + (1 << 21)) >> 22, 0, 255).to(x.dtype)
    total = total * post
    if mode == 3:
        total = torch.clamp(torch.round(total), 0, 255)  # round half to even
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
    for kind, interp in (("nearest", 0), ("bilinear", 1), ("bicubic", 2), ("area", 3),
                         ("lanczos", 4))
]
