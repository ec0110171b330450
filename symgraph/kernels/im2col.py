"""Sliding blocks: ``im2col`` (image to columns) and ``col2im`` (columns summed back).

A geometry ``(kernel, stride, dilate, pad)`` over 1, 2 or 3 spatial axes is padded to three
(missing axes have size 1, kernel 1, stride 1, pad 0), so one kernel serves every rank.
With ``K = prod(kernel)`` and ``L`` the number of block positions (the convolution output's
spatial size):

- im2col: ``col[n, c*K + k, l] = x[n, c, l*stride - pad + k*dilate]`` (0 outside the image);
  a gather, one program per block of column elements.
- col2im: its adjoint. Written as a gather too: each image element sums, in fp32, the column
  entries of the kernel offsets whose block position is a whole step away, so no atomics.

Bytes moved: im2col reads at most and writes the column array once; col2im reads the column
array and writes the image once.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
import triton.language as tl

from .runtime import block_for, cdiv, device_meta, kernel
from .table import KernelSpec, tensor_bytes


def _block(n: int, device: torch.device) -> int:
    return block_for(n, cap=1024 if device.type == "cuda" else 256)


def _geometry(spatial, kernel_, stride, dilate, pad) -> tuple[list, list]:
    """Image sizes, then kernel/stride/dilate/pad/output sizes, padded to 3 spatial axes."""
    lead = 3 - len(spatial)
    image = [1] * lead + list(spatial)
    k, s, d, p = ([1] * lead + list(kernel_), [1] * lead + list(stride),
                  [1] * lead + list(dilate), [0] * lead + list(pad))
    out = [(image[i] + 2 * p[i] - (d[i] * (k[i] - 1) + 1)) // s[i] + 1 for i in range(3)]
    return image, k + s + d + p + out


@kernel
def _im2col_kernel(x, col, g, total, BLOCK: tl.constexpr):
    """col[n, c*K + k, l] = x[n, c, pos(l, k)] or 0; ``g`` holds the 3-D geometry."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    D, H, W = tl.load(g + 0), tl.load(g + 1), tl.load(g + 2)
    KD, KH, KW = tl.load(g + 3), tl.load(g + 4), tl.load(g + 5)
    OD, OH, OW = tl.load(g + 15), tl.load(g + 16), tl.load(g + 17)
    L = OD * OH * OW
    K = KD * KH * KW
    lpos = offs % L
    row = offs // L
    k = row % K
    nc = row // K  # n * C + c
    od, oh, ow = lpos // (OH * OW), (lpos // OW) % OH, lpos % OW
    kd, kh, kw = k // (KH * KW), (k // KW) % KH, k % KW
    i_d = od * tl.load(g + 6) - tl.load(g + 12) + kd * tl.load(g + 9)
    i_h = oh * tl.load(g + 7) - tl.load(g + 13) + kh * tl.load(g + 10)
    i_w = ow * tl.load(g + 8) - tl.load(g + 14) + kw * tl.load(g + 11)
    inside = (i_d >= 0) & (i_d < D) & (i_h >= 0) & (i_h < H) & (i_w >= 0) & (i_w < W)
    src = ((nc * D + i_d) * H + i_h) * W + i_w
    v = tl.load(x + src, mask=mask & inside, other=0.0)
    tl.store(col + offs, v, mask=mask)


@kernel
def _col2im_kernel(col, x, g, total, BLOCK: tl.constexpr):
    """x[n, c, p] = sum over kernel offsets k whose block position l lands on p of
    col[n, c*K + k, l]."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    D, H, W = tl.load(g + 0), tl.load(g + 1), tl.load(g + 2)
    KD, KH, KW = tl.load(g + 3), tl.load(g + 4), tl.load(g + 5)
    SD, SH, SW = tl.load(g + 6), tl.load(g + 7), tl.load(g + 8)
    OD, OH, OW = tl.load(g + 15), tl.load(g + 16), tl.load(g + 17)
    K = KD * KH * KW
    i_w = offs % W
    i_h = (offs // W) % H
    i_d = (offs // (W * H)) % D
    nc = offs // (W * H * D)
    acc = tl.full([BLOCK], 0.0, tl.float32)
    for k in range(K):
        kd, kh, kw = k // (KH * KW), (k // KW) % KH, k % KW
        td = i_d + tl.load(g + 12) - kd * tl.load(g + 9)
        th = i_h + tl.load(g + 13) - kh * tl.load(g + 10)
        tw = i_w + tl.load(g + 14) - kw * tl.load(g + 11)
        od, oh, ow = td // SD, th // SH, tw // SW
        hit = (td >= 0) & (th >= 0) & (tw >= 0) & (od * SD == td) & (oh * SH == th)
        hit = hit & (ow * SW == tw) & (od < OD) & (oh < OH) & (ow < OW)
        src = (nc * K + k) * (OD * OH * OW) + (od * OH + oh) * OW + ow
        acc += tl.load(col + src, mask=mask & hit, other=0.0).to(tl.float32)
    tl.store(x + offs, acc.to(x.dtype.element_ty), mask=mask)


def im2col(x: torch.Tensor, kernel_: Sequence[int], stride: Sequence[int],
           dilate: Sequence[int], pad: Sequence[int], out=None) -> torch.Tensor:
    """The ``(N, C*K, L)`` columns of the sliding blocks of ``x`` (``(N, C, *spatial)``)."""
    x = x.contiguous()
    n, c = x.shape[:2]
    _, geo = _geometry(x.shape[2:], kernel_, stride, dilate, pad)
    shape = (n, c * math.prod(kernel_), math.prod(geo[12:15]))
    col = out if out is not None else torch.empty(shape, dtype=x.dtype, device=x.device)
    total = col.numel()
    if total:
        image, _ = _geometry(x.shape[2:], kernel_, stride, dilate, pad)
        g = device_meta(image + geo, x.device)
        block = _block(total, x.device)
        _im2col_kernel[(cdiv(total, block),)](x, col, g, total, BLOCK=block)
    return col


def _patches(kernel_, stride, dilate, out_sizes):
    """Per kernel offset, the slice of the padded image its block positions read."""
    for k in torch.cartesian_prod(*[torch.arange(n) for n in kernel_]).reshape(
            -1, len(kernel_)).tolist():
        yield tuple(slice(k[i] * dilate[i], k[i] * dilate[i] + stride[i] * (out_sizes[i] - 1)
                          + 1, stride[i]) for i in range(len(kernel_)))


def _out_sizes(spatial, kernel_, stride, dilate, pad) -> list[int]:
    return [(spatial[i] + 2 * pad[i] - (dilate[i] * (kernel_[i] - 1) + 1)) // stride[i] + 1
            for i in range(len(kernel_))]


def im2col_ref(x: torch.Tensor, kernel_, stride, dilate, pad) -> torch.Tensor:
    """Reference: one strided slice of the zero-padded image per kernel offset, stacked."""
    n, c = x.shape[:2]
    xp = F.pad(x, [q for p in reversed(pad) for q in (p, p)])
    outs = _out_sizes(x.shape[2:], kernel_, stride, dilate, pad)
    cols = [xp[(slice(None), slice(None)) + box] for box in _patches(kernel_, stride, dilate,
                                                                       outs)]
    return torch.stack(cols, 2).reshape(n, c * math.prod(kernel_), math.prod(outs))


def col2im(col: torch.Tensor, output_size: Sequence[int], kernel_: Sequence[int],
           stride: Sequence[int], dilate: Sequence[int], pad: Sequence[int],
           out=None) -> torch.Tensor:
    """The image ``(N, C, *output_size)`` each of whose elements sums the column entries
    that ``im2col`` would have read from it."""
    col = col.contiguous()
    n, c = col.shape[0], col.shape[1] // math.prod(kernel_)
    shape = (n, c) + tuple(output_size)
    x = out if out is not None else torch.empty(shape, dtype=col.dtype, device=col.device)
    total = x.numel()
    if total:
        image, geo = _geometry(output_size, kernel_, stride, dilate, pad)
        g = device_meta(image + geo, col.device)
        block = _block(total, col.device)
        _col2im_kernel[(cdiv(total, block),)](col, x, g, total, BLOCK=block)
    return x


def col2im_ref(col: torch.Tensor, output_size, kernel_, stride, dilate, pad) -> torch.Tensor:
    """Reference: each kernel offset's columns added into its slice of a padded image."""
    n, c = col.shape[0], col.shape[1] // math.prod(kernel_)
    outs = _out_sizes(output_size, kernel_, stride, dilate, pad)
    padded = [s + 2 * p for s, p in zip(output_size, pad)]
    acc = torch.float32 if col.dtype in (torch.float16, torch.bfloat16) else col.dtype
    xp = torch.zeros((n, c, *padded), dtype=acc, device=col.device)
    parts = col.to(acc).reshape(n, c, math.prod(kernel_), *outs)
    for k, box in enumerate(_patches(kernel_, stride, dilate, outs)):
        xp[(slice(None), slice(None)) + box] += parts[:, :, k]
    crop = tuple(slice(p, p + s) for p, s in zip(pad, output_size))
    return xp[(slice(None), slice(None)) + crop].to(col.dtype).contiguous()


# ---------------------------------------------------------------- table entries

def _rand(dtype, device, shape, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(tuple(shape), generator=gen).to(device=device, dtype=dtype)


def _geometry_for(shape) -> tuple:
    """kernel, stride, dilate, pad for an image of ``shape`` (1-3 spatial axes)."""
    rank = len(shape) - 2
    return ((3, 2, 2)[:rank], (2, 1, 1)[:rank], (1, 2, 1)[:rank], (1, 0, 1)[:rank])


def _make_im2col(dtype, device, shape):
    return (_rand(dtype, device, shape),) + _geometry_for(shape), {}


def _make_col2im(dtype, device, shape):
    geo = _geometry_for(shape)
    outs = _out_sizes(shape[2:], *geo)
    col = _rand(dtype, device, (shape[0], shape[1] * math.prod(geo[0]), math.prod(outs)))
    return (col, tuple(shape[2:])) + geo, {}


_SHAPES = ((2, 3, 11), (1, 2, 7, 9), (1, 2, 4, 5, 6))
_DT = (torch.float32, torch.float16, torch.bfloat16)
_EXACT = {torch.float32: (0, 0), torch.float16: (0, 0), torch.bfloat16: (0, 0)}
_SUMS = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-3, 1e-3), torch.bfloat16: (1e-2, 1e-2)}

KERNELS = [
    KernelSpec(name="im2col", fn=im2col, ref=im2col_ref, make=_make_im2col, shapes=_SHAPES,
               bench_shapes=((32, 64, 56, 56),), dtypes=_DT, tol=_EXACT, family="im2col",
               bytes=lambda x, k, *a: tensor_bytes(x) * (1 + math.prod(k))),
    KernelSpec(name="col2im", fn=col2im, ref=col2im_ref, make=_make_col2im, shapes=_SHAPES,
               bench_shapes=((32, 64, 56, 56),), dtypes=_DT, tol=_SUMS, family="im2col",
               bytes=lambda col, size, *a: tensor_bytes(col) * 2),
]
