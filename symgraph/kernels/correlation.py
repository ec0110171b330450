"""Correlation (FlowNet's correlation layer) forward and backward.

With both inputs zero-padded by ``pad``, ``k = kernel_size``, ``d = max_displacement``,
``R = d // stride2`` and ``G = 2R + 1``, output channel ``t`` is the displacement
``(dy, dx) = ((t // G - R) * stride2, (t % G - R) * stride2)`` and, for output pixel (i, j)
with ``y1 = i * stride1 + d`` (x1 alike)::

    out[n, t, i, j] = sum_{h, w < k, c} f(p1[n, c, y1 + h, x1 + w],
                                          p2[n, c, y1 + dy + h, x1 + dx + w]) / (k * k * C)

``f(a, b) = a * b`` (``is_multiply``) or ``|a - b|``. The output is
``ceil((H + 2 pad - 2 (d + (k - 1) / 2)) / stride1)`` high (width alike).

Backward, one lane per output element: ``d p1 += dy * p2`` and ``d p2 += dy * p1``
(``|a - b|``: ``+-dy * sign``, ``a >= b`` counting as positive for p1), added atomically for
positions inside the unpadded input. Bytes moved: both inputs (cached: once) and the output.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
import triton.language as tl

from .runtime import block_for, cdiv, device_meta, kernel
from .sampling import _accumulator, _finish
from .table import KernelSpec, tensor_bytes


@kernel
def _corr_kernel(a, b, y, dy, da, db, n, geo, MULTIPLY: tl.constexpr, BACKWARD: tl.constexpr,
                 BLOCK: tl.constexpr):
    """One output element per lane: the k x k x C sum; backward scatters into da, db."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    C, H, W, T = tl.load(geo), tl.load(geo + 1), tl.load(geo + 2), tl.load(geo + 3)
    OH, OW, K, PAD = tl.load(geo + 4), tl.load(geo + 5), tl.load(geo + 6), tl.load(geo + 7)
    D, S1, S2, R = tl.load(geo + 8), tl.load(geo + 9), tl.load(geo + 10), tl.load(geo + 11)
    j = offs % OW
    t = offs // OW
    i = t % OH
    t = t // OH
    ch = t % T
    nb = t // T
    y1 = i * S1 + D - PAD
    x1 = j * S1 + D - PAD
    y2 = y1 + (ch // (2 * R + 1) - R) * S2
    x2 = x1 + (ch % (2 * R + 1) - R) * S2
    norm = (K * K * C).to(tl.float32)
    if BACKWARD:
        g = tl.load(dy + offs, mask=mask, other=0.0).to(tl.float32) / norm
    acc = (offs * 0).to(tl.float32)
    for h in range(0, K):
        for w in range(0, K):
            in1 = mask & (y1 + h >= 0) & (y1 + h < H) & (x1 + w >= 0) & (x1 + w < W)
            in2 = mask & (y2 + h >= 0) & (y2 + h < H) & (x2 + w >= 0) & (x2 + w < W)
            o1 = nb * C * H * W + (y1 + h) * W + x1 + w
            o2 = nb * C * H * W + (y2 + h) * W + x2 + w
            for c in range(0, C):
                v1 = tl.load(a + o1 + c * H * W, mask=in1, other=0.0).to(tl.float32)
                v2 = tl.load(b + o2 + c * H * W, mask=in2, other=0.0).to(tl.float32)
                if BACKWARD:
                    if MULTIPLY:
                        g1 = g * v2
                        g2 = g * v1
                    else:
                        g1 = tl.where(v1 >= v2, g, -g)
                        g2 = -g1
                    tl.atomic_add(da + o1 + c * H * W, g1, mask=in1)
                    tl.atomic_add(db + o2 + c * H * W, g2, mask=in2)
                elif MULTIPLY:
                    acc += v1 * v2
                else:
                    acc += tl.abs(v1 - v2)
    if not BACKWARD:
        tl.store(y + offs, (acc / norm).to(y.dtype.element_ty), mask=mask)


def corr_geometry(shape: tuple, k: int, d: int, s1: int, s2: int, pad: int) -> tuple:
    """(output channels, output height, output width) of MXNet's Correlation."""
    border = d + (k - 1) // 2
    oh = math.ceil((shape[2] + 2 * pad - 2 * border) / s1)
    ow = math.ceil((shape[3] + 2 * pad - 2 * border) / s1)
    grid = 2 * (d // s2) + 1
    return grid * grid, oh, ow


def _launch(a, b, p: tuple, multiply: bool, y, dy=None, grads=(None, None)) -> None:
    k, d, s1, s2, pad = p
    t, oh, ow = corr_geometry(tuple(a.shape), *p[:4], pad)
    geo = device_meta([*a.shape[1:], t, oh, ow, k, pad, d, s1, s2, d // s2], a.device)
    n = a.shape[0] * t * oh * ow
    if n:
        block = block_for(n, cap=128 if a.device.type == "cuda" else 64)
        _corr_kernel[(cdiv(n, block),)](a.contiguous(), b.contiguous(), y, dy, grads[0],
                                        grads[1], n, geo, MULTIPLY=multiply,
                                        BACKWARD=dy is not None, BLOCK=block)


def correlation(a: torch.Tensor, b: torch.Tensor, p: tuple, multiply: bool = True,
                out=None) -> torch.Tensor:
    """Correlation forward; ``p`` = (kernel_size, max_displacement, stride1, stride2, pad)."""
    shape = (a.shape[0],) + corr_geometry(tuple(a.shape), *p[:4], p[4])
    y = out if out is not None else torch.empty(shape, dtype=a.dtype, device=a.device)
    _launch(a, b, p, multiply, y)
    return y


def correlation_ref(a: torch.Tensor, b: torch.Tensor, p: tuple, multiply: bool = True):
    """Reference: per displacement, the channel sum of f over the overlap, box-summed by a
    k x k pooling with stride ``stride1``."""
    k, d, s1, s2, pad = p
    t, oh, ow = corr_geometry(tuple(a.shape), k, d, s1, s2, pad)
    pa, pb = F.pad(a, (pad,) * 4), F.pad(b, (pad,) * 4)
    rows, cols = (oh - 1) * s1 + k, (ow - 1) * s1 + k
    first = pa[:, :, d:d + rows, d:d + cols]
    radius, outs = d // s2, []
    for ch in range(t):
        oy, ox = (ch // (2 * radius + 1) - radius) * s2, (ch % (2 * radius + 1) - radius) * s2
        second = pb[:, :, d + oy:d + oy + rows, d + ox:d + ox + cols]
        diff = first - second
        # |a - b| as (a - b) * sign with sign(0) = +1: MXNet's gradient at ties
        e = first * second if multiply else diff * torch.where(diff >= 0, 1.0, -1.0).to(diff)
        e = e.sum(1, keepdim=True)
        outs.append(F.avg_pool2d(e, k, s1) * (k * k))
    return torch.cat(outs, 1) / (k * k * a.shape[1])


def correlation_backward(dy, a, b, p: tuple, multiply: bool = True, out=None):
    """Correlation gradients (da, db): one launch of fp32 atomics."""
    out = out if out is not None else (None, None)
    da = _accumulator(tuple(a.shape), a, out[0])
    db = _accumulator(tuple(b.shape), b, out[1])
    _launch(a, b, p, multiply, da, dy.contiguous(), (da, db))
    return _finish(da, a.dtype, out[0]), _finish(db, b.dtype, out[1])


def correlation_backward_ref(dy, a, b, p: tuple, multiply: bool = True):
    """Reference: autograd through :func:`correlation_ref`."""
    with torch.enable_grad():
        leaves = [a.detach().requires_grad_(True), b.detach().requires_grad_(True)]
        return torch.autograd.grad(correlation_ref(*leaves, p, multiply), leaves, dy)


def _rand(dtype, device, shape, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(tuple(shape), generator=gen).to(device=device, dtype=dtype)


def _params(shape) -> tuple:
    return (3, 2, 1, 1, 1) if shape[1] == 2 else (1, 4, 2, 2, 2)


def _make(dtype, device, shape):
    return (_rand(dtype, device, shape), _rand(dtype, device, shape, 1), _params(shape),
            shape[0] == 1), {}


def _make_bwd(dtype, device, shape):
    (a, b, p, mul), _ = _make(dtype, device, shape)
    dy = _rand(dtype, device, (shape[0],) + corr_geometry(shape, *p[:4], p[4]), 2)
    return (dy, a, b, p, mul), {}


def _entry(name, fn, ref, make, traffic) -> KernelSpec:
    return KernelSpec(name=name, fn=fn, ref=ref, make=make, shapes=((1, 2, 6, 7), (2, 3, 5, 8)),
                      bench_shapes=((4, 64, 48, 64),), dtypes=(torch.float32,),
                      tol={torch.float32: (1e-4, 1e-5)}, bytes=traffic, family="correlation")


KERNELS = [
    _entry("correlation_fwd", correlation, correlation_ref, _make,
           lambda a, b, *rest: 2 * tensor_bytes(a, b)),
    _entry("correlation_bwd", correlation_backward, correlation_backward_ref, _make_bwd,
           lambda dy, a, b, *rest: tensor_bytes(dy) + 2 * tensor_bytes(a, b)),
]
