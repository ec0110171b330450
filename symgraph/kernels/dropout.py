"""Dropout and rrelu from a counter-based RNG: Philox-4x32-10 on (element index, 64-bit seed).

Element ``k`` is kept when ``u(seed, k) < 1 - p``, where ``u`` is the first Philox output
word mapped to [0, 1) as ``tl.rand`` maps it (``kernels/philox.py``: same constants and
rounds as ``triton.language.random``, whose jitted helpers cannot be called under this
runtime's CPU interpreter). The mask is MXNet's scaled mask:
0 or ``1 / (1 - p)``; ``out = x * mask`` and the gradient is ``dy * mask``. A seed
reproduces the mask exactly, on any grid.

The torch reference cannot reproduce Philox streams, so its table entry derives the
expectation from the kernel's own mask: the reference re-runs the kernel with the same seed
(reproducibility), checks that every mask value is 0 or ``1 / (1 - p)`` and that the kept
fraction is within 5 standard deviations of ``1 - p``, and returns ``x * mask`` computed in
torch; the table test then compares output and mask exactly.

The same kernel draws rrelu's slopes (LeakyReLU ``act_type='rrelu'``): ``mask = lower +
u(seed, k) * (upper - lower)`` and ``out = x > 0 ? x : x * mask``; its reference checks the
slopes the same way.

Bytes moved: forward reads x, writes out and mask; backward reads dy and mask, writes dx.
"""
from __future__ import annotations

import math

import torch
import triton.language as tl

from .philox import philox, seed_arg, seed_key, uniform
from .runtime import block_for, cdiv, kernel
from .table import KernelSpec, tensor_bytes


@kernel
def _dropout_kernel(x, mask, out, n, seed, keep, scale, HAS_X: tl.constexpr,
                    RRELU: tl.constexpr, BLOCK: tl.constexpr):
    """Dropout: mask[k] = scale if u(seed, k) < keep else 0, out[k] = x[k] * mask[k].
    RRELU: mask[k] = keep + u(seed, k) * scale (a slope), out[k] = x > 0 ? x : x * mask."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < n
    c0 = (offs & 0xFFFFFFFF).to(tl.uint32)
    c1 = (offs >> 32).to(tl.uint32)
    k0, k1 = seed_key(seed, offs)
    w, _, _, _ = philox(c0, c1, c0 * 0, c0 * 0, k0, k1)
    u = uniform(w)
    if RRELU:
        m = (keep + u * scale).to(mask.dtype.element_ty)
        tl.store(mask + offs, m, mask=valid)
        v = tl.load(x + offs, mask=valid, other=0.0).to(tl.float32)
        y = tl.where(v > 0, v, v * m.to(tl.float32))  # the stored (rounded) slope
        tl.store(out + offs, y.to(out.dtype.element_ty), mask=valid)
    else:
        m = tl.where(u < keep, scale, 0.0)
        tl.store(mask + offs, m.to(mask.dtype.element_ty), mask=valid)
        if HAS_X:
            v = tl.load(x + offs, mask=valid, other=0.0).to(tl.float32)
            tl.store(out + offs, (v * m).to(out.dtype.element_ty), mask=valid)


@kernel
def _mul_kernel(a, b, out, n, BLOCK: tl.constexpr):
    """out = a * b (dropout apply/backward with a given mask)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < n
    v = tl.load(a + offs, mask=valid).to(tl.float32) * tl.load(b + offs, mask=valid)
    tl.store(out + offs, v.to(out.dtype.element_ty), mask=valid)


def _block(n: int, device: torch.device) -> int:
    return block_for(n, cap=1024 if device.type == "cuda" else 256)


def _scale(p: float) -> tuple[float, float]:
    keep = 1.0 - p
    return keep, (1.0 / keep if keep > 0 else float("inf"))


def dropout_mask(shape, p: float, seed, dtype=torch.float32, device=None,
                 out=None) -> torch.Tensor:
    """The scaled mask alone (for shared-draw ``axes``, broadcast afterwards)."""
    mask = out if out is not None else torch.empty(tuple(shape), dtype=dtype, device=device)
    n = mask.numel()
    keep, scale = _scale(p)
    block = _block(n, mask.device)
    _dropout_kernel[(cdiv(n, block),)](mask, mask, mask, n, seed_arg(seed, mask.device),
                                       keep, scale, HAS_X=False, RRELU=False, BLOCK=block)
    return mask


def dropout(x: torch.Tensor, p: float, seed, out=None) -> tuple:
    """``(x * mask, mask)`` with the mask drawn from ``seed`` (an ``int`` or a one-element
    int64 tensor on x's device); one pass over x."""
    x = x.contiguous()
    y, mask = out if out is not None else (torch.empty_like(x), torch.empty_like(x))
    n = x.numel()
    keep, scale = _scale(p)
    block = _block(n, x.device)
    _dropout_kernel[(cdiv(n, block),)](x, mask, y, n, seed_arg(seed, x.device), keep, scale,
                                       HAS_X=True, RRELU=False, BLOCK=block)
    return y, mask


def dropout_ref(x: torch.Tensor, p: float, seed: int) -> tuple:
    """Expectation from the kernel's mask (see the module notes): checks the mask, then
    ``x * mask`` in torch (reads x and mask, writes out)."""
    _, mask = dropout(x, p, seed)
    keep, scale = _scale(p)
    kept_values = mask.float()[mask != 0]
    assert torch.allclose(kept_values, torch.full_like(kept_values, scale), rtol=1e-2), \
        "mask values must be 0 or 1 / (1 - p)"  # 1e-2: the scale rounded to bf16
    kept = float((mask != 0).float().mean())
    sd = math.sqrt(keep * (1 - keep) / mask.numel())
    assert abs(kept - keep) <= 5 * sd + 1e-9, (kept, keep)
    return (x.float() * mask.float()).to(x.dtype), mask


def rrelu(x: torch.Tensor, lower: float, upper: float, seed, out=None) -> tuple:
    """Randomized leaky ReLU: ``(x > 0 ? x : x * mask, mask)`` with slopes
    ``mask ~ U(lower, upper)`` drawn from ``seed``; one pass over x."""
    x = x.contiguous()
    y, mask = out if out is not None else (torch.empty_like(x), torch.empty_like(x))
    n = x.numel()
    if n:
        block = _block(n, x.device)
        _dropout_kernel[(cdiv(n, block),)](x, mask, y, n, seed_arg(seed, x.device),
                                           float(lower), float(upper) - float(lower),
                                           HAS_X=True, RRELU=True, BLOCK=block)
    return y, mask


def rrelu_ref(x: torch.Tensor, lower: float, upper: float, seed: int) -> tuple:
    """Expectation from the kernel's slopes (as :func:`dropout_ref`): checks that they
    reproduce, lie in [lower, upper] and spread over it, then ``where`` in torch."""
    _, mask = rrelu(x, lower, upper, seed)
    again = rrelu(x, lower, upper, seed)[1]
    assert torch.equal(mask, again), "rrelu slopes must reproduce from the seed"
    m = mask.float()
    slack = 1e-2 * max(abs(lower), abs(upper))  # the bounds rounded to half types
    assert bool((m >= lower - slack).all() and (m <= upper + slack).all()), "slopes in range"
    if m.numel() >= 64:
        assert abs(float(m.mean()) - (lower + upper) / 2) < 0.25 * (upper - lower)
    return torch.where(x > 0, x, x * mask), mask


def apply_mask(x: torch.Tensor, mask: torch.Tensor, out=None) -> torch.Tensor:
    """``x * mask`` (the dropout backward ``dy * mask`` too)."""
    out = out if out is not None else torch.empty_like(x)
    n = x.numel()
    block = _block(n, x.device)
    _mul_kernel[(cdiv(n, block),)](x.contiguous(), mask.contiguous(), out, n, BLOCK=block)
    return out


def apply_mask_ref(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Reference: reads x and mask, writes the product."""
    return (x.float() * mask.float()).to(x.dtype)


def _make(dtype, device, shape):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(tuple(shape), generator=gen).to(device=device, dtype=dtype)
    return (x, 0.3, 0x1234_5678_9ABC), {}


def _make_bwd(dtype, device, shape):
    (x, p, seed), _ = _make(dtype, device, shape)
    return (x, dropout_mask(shape, p, seed, dtype, device)), {}


def _make_rrelu(dtype, device, shape):
    (x, _, seed), _ = _make(dtype, device, shape)
    return (x, 0.125, 0.334, seed), {}


_SHAPES = ((3, 37), (5, 129), (2, 3, 7, 6))
_DT = (torch.float32, torch.float16, torch.bfloat16)
_TOL = {torch.float32: (1e-6, 1e-6), torch.float16: (1e-3, 1e-3), torch.bfloat16: (1e-2, 1e-2)}

KERNELS = [
    KernelSpec(name="dropout", fn=dropout, ref=dropout_ref, make=_make, shapes=_SHAPES,
               bench_shapes=((4096, 4096),), dtypes=_DT, tol=_TOL, family="dropout",
               bytes=lambda x, p, seed: 3 * tensor_bytes(x)),
    KernelSpec(name="dropout_backward", fn=apply_mask, ref=apply_mask_ref, make=_make_bwd,
               shapes=_SHAPES, bench_shapes=((4096, 4096),), dtypes=_DT, tol=_TOL,
               family="dropout", bytes=lambda x, m: 3 * tensor_bytes(x)),
    KernelSpec(name="rrelu", fn=rrelu, ref=rrelu_ref, make=_make_rrelu, shapes=_SHAPES,
               bench_shapes=((4096, 4096),), dtypes=_DT, tol=_TOL, family="dropout",
               bytes=lambda x, lo, hi, seed: 3 * tensor_bytes(x)),
]
