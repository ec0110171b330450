"""MultiBox (SSD) kernels: the anchor boxes of MultiBoxPrior.

Anchors depend only on the feature map's size: each is written from its flat index, in fp32
arithmetic as MXNet computes them, with the per-anchor half sizes in a small table.

Bytes moved: writes H * W * A * 4 values, reads the (A, 2) table.
"""
from __future__ import annotations

import torch
import triton.language as tl

from .reduce import check_out
from .runtime import block_for, cdiv, kernel
from .table import KernelSpec

# ---------------------------------------------------------------- MultiBoxPrior

@kernel
def _prior_kernel(half, out, h, w, a, step_y, step_x, off_y, off_x, total, CLIP: tl.constexpr,
                  BLOCK: tl.constexpr):
    """out[(r * w + c) * a + k] = the k-th anchor (half sizes ``half[k]``) centred on cell
    (r, c), in fp32 as MXNet computes it."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    k = offs % a
    c = (offs // a) % w
    r = offs // (a * w)
    cy = (r.to(tl.float32) + off_y) * step_y
    cx = (c.to(tl.float32) + off_x) * step_x
    hw = tl.load(half + 2 * k, mask=mask, other=0)
    hh = tl.load(half + 2 * k + 1, mask=mask, other=0)
    box = (cx - hw, cy - hh, cx + hw, cy + hh)
    for i in tl.static_range(4):
        v = box[i]
        if CLIP:
            v = tl.minimum(tl.maximum(v, 0.0), 1.0)
        tl.store(out + offs * 4 + i, v.to(out.dtype.element_ty), mask=mask)


def prior_geometry(h: int, w: int, sizes, ratios, steps) -> tuple:
    """(half sizes (A, 2) as float32, step_y, step_x) of MultiBoxPrior: the first ratio
    with every size, then every other ratio with the first size (fp32 math, as MXNet)."""
    pairs = [(s, ratios[0]) for s in sizes] + [(sizes[0], r) for r in ratios[1:]]
    size, ratio = (torch.tensor(v, dtype=torch.float32) for v in zip(*pairs))
    root = torch.sqrt(ratio)
    half = torch.stack([size * h / w * root / 2, size / root / 2], -1)
    if steps[0] <= 0 or steps[1] <= 0:
        steps = (1.0 / torch.tensor(h, dtype=torch.float32), 1.0 / torch.tensor(
            w, dtype=torch.float32))
    return half, float(torch.tensor(steps[0], dtype=torch.float32)), float(
        torch.tensor(steps[1], dtype=torch.float32))


def multibox_prior(data: torch.Tensor, sizes=(1.0,), ratios=(1.0,), clip: bool = False,
                   steps=(-1.0, -1.0), offsets=(0.5, 0.5), out=None) -> torch.Tensor:
    """Check, allocate, launch: the (1, H * W * A, 4) anchors of NCHW ``data``."""
    h, w = data.shape[2], data.shape[3]
    half, sy, sx = prior_geometry(h, w, sizes, ratios, steps)
    a = half.shape[0]
    result = check_out(out, (1, h * w * a, 4), data.dtype, data.device)
    total = h * w * a
    if total:
        block = block_for(total, cap=1024 if data.device.type == "cuda" else 32)
        _prior_kernel[(cdiv(total, block),)](half.to(data.device), result,
                                             h, w, a, sy, sx, float(offsets[0]),
                                             float(offsets[1]), total, CLIP=clip, BLOCK=block)
    return result


def multibox_prior_ref(data: torch.Tensor, sizes=(1.0,), ratios=(1.0,), clip: bool = False,
                       steps=(-1.0, -1.0), offsets=(0.5, 0.5)) -> torch.Tensor:
    """Reference: fp32 grids of centres plus the half sizes (writes H * W * A * 4 values)."""
    h, w = data.shape[2], data.shape[3]
    half, sy, sx = prior_geometry(h, w, sizes, ratios, steps)
    half = half.to(data.device)
    f32 = torch.float32
    cy = (torch.arange(h, device=data.device, dtype=f32) + offsets[0]) * sy
    cx = (torch.arange(w, device=data.device, dtype=f32) + offsets[1]) * sx
    cy = cy.reshape(h, 1, 1).expand(h, w, len(half))
    cx = cx.reshape(1, w, 1).expand(h, w, len(half))
    box = torch.stack([cx - half[:, 0], cy - half[:, 1], cx + half[:, 0], cy + half[:, 1]], -1)
    if clip:
        box = box.clamp(0.0, 1.0)
    return box.reshape(1, -1, 4).to(data.dtype)


def _make_prior(dtype, device, shape):
    return (torch.zeros(shape, dtype=dtype, device=device),), {
        "sizes": (0.5, 0.3), "ratios": (1.0, 2.0, 0.5), "clip": True, "offsets": (0.4, 0.6)}


KERNELS = [
    KernelSpec(name="multibox_prior", fn=multibox_prior, ref=multibox_prior_ref,
               make=_make_prior, shapes=((1, 2, 3, 5),), bench_shapes=((1, 1, 64, 64),),
               dtypes=(torch.float32, torch.float16),
               bytes=lambda d, **k: 4 * 4 * 5 * d.shape[2] * d.shape[3], family="multibox"),
]
