"""Pooling forward and backward (max, avg, sum, Lp) over 1, 2 or 3 spatial axes.

Every input is handled as a strided 5-D view ``(N, C, D, H, W)`` (1-D and 2-D pooling get
unit axes with kernel 1), so one kernel serves channel-first and channel-last layouts.
Window ``o`` of an axis covers ``[o*s - p, o*s - p + k)``; positions outside ``[0, d)`` are
skipped (padding never wins a max and adds nothing to a sum). The avg divisor per axis is
``min(start + k, d + p) - start`` with ``count_include_pad`` or ``min(start + k, d) -
max(start, 0)`` without, multiplied over axes; a divisor <= 0 gives 0 (NaN for 3-D pooling
when it is exactly 0), as the torch reference in ``symgraph/ops/pooling.py`` does.

Backward math, one program element per input element (a gather, no atomics): the windows
covering input ``i`` on an axis are ``o`` in ``[ceil((i + p - k + 1) / s), (i + p) // s]``
(at most ``ceil(k / s)`` of them), and

* max: ``dx[i] = sum dy[o]`` over windows whose first maximum (row-major) is ``i``; the
  forward kernel records that argmax per window;
* avg: ``dx[i] = sum dy[o] / divisor[o]``; sum: ``dx[i] = sum dy[o]``;
* Lp (p = 2, 3): ``dx[i] = x[i]**(p-1) * sum dy[o] / y[o]**(p-1)`` (0 where ``y[o] == 0``).

Bytes moved: forward reads each input element once per covering window (cached in practice:
counted once) and writes the output; backward reads dy (and y or argmax) and x, writes dx.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
import triton.language as tl

from .runtime import block_for, cdiv, device_meta, kernel
from .table import KernelSpec, tensor_bytes

_KINDS = {"max": 0, "avg": 1, "sum": 2, "lp": 3}


@dataclass(frozen=True)
class PoolGeometry:
    """Per spatial axis kernel, stride, pad and output size, plus what to compute."""

    kernel: tuple
    stride: tuple
    pad: tuple
    out: tuple
    kind: str = "max"
    count_include_pad: bool = True
    p_value: int = 2
    channel_last: bool = False


def _cf(t: torch.Tensor, g: PoolGeometry) -> torch.Tensor:
    """The channel-first 5-D view of an (N, C, *spatial) or channel-last tensor."""
    if g.channel_last:
        t = t.movedim(-1, 1)
    while t.dim() < 5:
        t = t.unsqueeze(2)
    return t


def _pad3(v: tuple, fill: int) -> list:
    return [fill] * (3 - len(v)) + list(v)


def _geo(x5: torch.Tensor, y5: torch.Tensor, g: PoolGeometry,
         x_strides: tuple | None = None) -> torch.Tensor:
    ks, ss, ps = _pad3(g.kernel, 1), _pad3(g.stride, 1), _pad3(g.pad, 0)
    nw = [cdiv(k, s) for k, s in zip(ks, ss)]
    vals = ([x5.shape[1]] + list(x5.shape[2:]) + list(y5.shape[2:]) + ks + ss + ps + nw
            + list(x_strides or x5.stride()) + list(y5.stride()))
    return device_meta(vals, x5.device)


@kernel
def _pool_fwd_kernel(x, y, arg, geo, n, KIND: tl.constexpr, INCLUDE_PAD: tl.constexpr,
                     P: tl.constexpr, NAN_EMPTY: tl.constexpr, WRITE_ARG: tl.constexpr,
                     BLOCK: tl.constexpr):
    """One output element per lane: loop over its window (fp32 accumulation)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    C, D, H, W = tl.load(geo + 0), tl.load(geo + 1), tl.load(geo + 2), tl.load(geo + 3)
    OD, OH, OW = tl.load(geo + 4), tl.load(geo + 5), tl.load(geo + 6)
    KD, KH, KW = tl.load(geo + 7), tl.load(geo + 8), tl.load(geo + 9)
    ow = offs % OW
    t = offs // OW
    oh = t % OH
    t = t // OH
    od = t % OD
    t = t // OD
    c = t % C
    b = t // C
    d0 = od * tl.load(geo + 10) - tl.load(geo + 13)
    h0 = oh * tl.load(geo + 11) - tl.load(geo + 14)
    w0 = ow * tl.load(geo + 12) - tl.load(geo + 15)
    base = b * tl.load(geo + 19) + c * tl.load(geo + 20)
    xsd, xsh, xsw = tl.load(geo + 21), tl.load(geo + 22), tl.load(geo + 23)
    acc = (offs * 0).to(tl.float32)
    if KIND == 0:
        acc = acc - float("inf")
    best = offs * 0 - 1
    for kd in range(0, KD):
        d = d0 + kd
        for kh in range(0, KH):
            h = h0 + kh
            for kw in range(0, KW):
                w = w0 + kw
                ok = mask & (d >= 0) & (d < D) & (h >= 0) & (h < H) & (w >= 0) & (w < W)
                v = tl.load(x + base + d * xsd + h * xsh + w * xsw, mask=ok,
                            other=0.0).to(tl.float32)
                if KIND == 0:
                    take = ok & (v > acc)
                    acc = tl.where(take, v, acc)
                    best = tl.where(take, (d * H + h) * W + w, best)
                elif KIND == 3 and P == 2:
                    acc += v * v
                elif KIND == 3:
                    acc += v * v * v
                else:
                    acc += v
    if KIND == 1:
        pd, ph, pw = tl.load(geo + 13), tl.load(geo + 14), tl.load(geo + 15)
        if INCLUDE_PAD:
            div = ((tl.minimum(d0 + KD, D + pd) - d0) * (tl.minimum(h0 + KH, H + ph) - h0)
                   * (tl.minimum(w0 + KW, W + pw) - w0))
        else:
            div = ((tl.minimum(d0 + KD, D) - tl.maximum(d0, 0))
                   * (tl.minimum(h0 + KH, H) - tl.maximum(h0, 0))
                   * (tl.minimum(w0 + KW, W) - tl.maximum(w0, 0)))
        acc = acc / tl.where(div > 0, div, 1).to(tl.float32)
        if NAN_EMPTY:
            acc = tl.where(div == 0, float("nan"), acc)
    if KIND == 3:
        if P == 2:
            acc = tl.sqrt(acc)
        else:
            acc = tl.where(acc < 0, -1.0, 1.0) * tl.exp(tl.log(tl.abs(acc)) / 3.0)
    yo = (b * tl.load(geo + 24) + c * tl.load(geo + 25) + od * tl.load(geo + 26)
          + oh * tl.load(geo + 27) + ow * tl.load(geo + 28))
    tl.store(y + yo, acc.to(y.dtype.element_ty), mask=mask)
    if WRITE_ARG:
        tl.store(arg + offs, best.to(tl.int32), mask=mask)


@kernel
def _pool_bwd_kernel(dy, y, arg, x, dx, geo, n, KIND: tl.constexpr, INCLUDE_PAD: tl.constexpr,
                     P: tl.constexpr, BLOCK: tl.constexpr):
    """One input element per lane: gather the gradient of every window covering it."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    C, D, H, W = tl.load(geo + 0), tl.load(geo + 1), tl.load(geo + 2), tl.load(geo + 3)
    OD, OH, OW = tl.load(geo + 4), tl.load(geo + 5), tl.load(geo + 6)
    KD, KH, KW = tl.load(geo + 7), tl.load(geo + 8), tl.load(geo + 9)
    SD, SH, SW = tl.load(geo + 10), tl.load(geo + 11), tl.load(geo + 12)
    PD, PH, PW = tl.load(geo + 13), tl.load(geo + 14), tl.load(geo + 15)
    w = offs % W
    t = offs // W
    h = t % H
    t = t // H
    d = t % D
    t = t // D
    c = t % C
    b = t // C
    lo_d = tl.where(d + PD - KD + 1 > 0, (d + PD - KD + SD) // SD, 0)
    lo_h = tl.where(h + PH - KH + 1 > 0, (h + PH - KH + SH) // SH, 0)
    lo_w = tl.where(w + PW - KW + 1 > 0, (w + PW - KW + SW) // SW, 0)
    hi_d = tl.minimum(OD - 1, (d + PD) // SD)
    hi_h = tl.minimum(OH - 1, (h + PH) // SH)
    hi_w = tl.minimum(OW - 1, (w + PW) // SW)
    me = (d * H + h) * W + w
    ybase = b * tl.load(geo + 24) + c * tl.load(geo + 25)
    acc = (offs * 0).to(tl.float32)
    for jd in range(0, tl.load(geo + 16)):
        od = lo_d + jd
        for jh in range(0, tl.load(geo + 17)):
            oh = lo_h + jh
            for jw in range(0, tl.load(geo + 18)):
                ow = lo_w + jw
                ok = mask & (od <= hi_d) & (oh <= hi_h) & (ow <= hi_w)
                yo = ybase + od * tl.load(geo + 26) + oh * tl.load(geo + 27) \
                    + ow * tl.load(geo + 28)
                g = tl.load(dy + yo, mask=ok, other=0.0).to(tl.float32)
                if KIND == 0:
                    a = tl.load(arg + ((b * C + c) * OD + od) * OH * OW + oh * OW + ow,
                                mask=ok, other=-1)
                    g = tl.where(a == me, g, 0.0)
                elif KIND == 1:
                    d0, h0, w0 = od * SD - PD, oh * SH - PH, ow * SW - PW
                    if INCLUDE_PAD:
                        div = ((tl.minimum(d0 + KD, D + PD) - d0)
                               * (tl.minimum(h0 + KH, H + PH) - h0)
                               * (tl.minimum(w0 + KW, W + PW) - w0))
                    else:
                        div = ((tl.minimum(d0 + KD, D) - tl.maximum(d0, 0))
                               * (tl.minimum(h0 + KH, H) - tl.maximum(h0, 0))
                               * (tl.minimum(w0 + KW, W) - tl.maximum(w0, 0)))
                    g = g / tl.where(div > 0, div, 1).to(tl.float32)
                elif KIND == 3:
                    yv = tl.load(y + yo, mask=ok, other=1.0).to(tl.float32)
                    if P == 2:
                        g = tl.where(yv == 0, 0.0, g / tl.where(yv == 0, 1.0, yv))
                    else:
                        g = tl.where(yv == 0, 0.0, g / tl.where(yv == 0, 1.0, yv * yv))
                acc += g
    xo = (b * tl.load(geo + 19) + c * tl.load(geo + 20) + d * tl.load(geo + 21)
          + h * tl.load(geo + 22) + w * tl.load(geo + 23))
    if KIND == 3:
        xv = tl.load(x + xo, mask=mask, other=0.0).to(tl.float32)
        if P == 2:
            acc = acc * xv
        else:
            acc = acc * xv * xv
    tl.store(dx + xo, acc.to(dx.dtype.element_ty), mask=mask)


def _kind(g: PoolGeometry) -> tuple[int, int]:
    if g.kind == "lp" and g.p_value == 1:
        return _KINDS["sum"], 1
    return _KINDS[g.kind], g.p_value if g.kind == "lp" else 1


def _out_shape(x: torch.Tensor, g: PoolGeometry) -> tuple:
    if g.channel_last:
        return (x.shape[0],) + tuple(g.out) + (x.shape[-1],)
    return tuple(x.shape[:2]) + tuple(g.out)


def _block(n: int, device: torch.device) -> int:
    return block_for(n, cap=256 if device.type == "cuda" else 128)


def _launch_fwd(x: torch.Tensor, g: PoolGeometry, y: torch.Tensor, arg=None) -> None:
    x5, y5 = _cf(x, g), _cf(y, g)
    kind, p = _kind(g)
    n = y.numel()
    block = _block(n, x.device)
    _pool_fwd_kernel[(cdiv(n, block),)](
        x5, y5, y5 if arg is None else arg, _geo(x5, y5, g), n, KIND=kind,
        INCLUDE_PAD=g.count_include_pad, P=p, NAN_EMPTY=len(g.kernel) == 3,
        WRITE_ARG=arg is not None, BLOCK=block)


def pool_fwd(x: torch.Tensor, g: PoolGeometry, out=None) -> torch.Tensor:
    """Pooling forward of ``x`` ((N, C, *spatial) or channel-last) for geometry ``g``."""
    shape = _out_shape(x, g)
    y = out if out is not None else torch.empty(shape, dtype=x.dtype, device=x.device)
    if tuple(y.shape) != shape:
        raise ValueError(f"out must have shape {shape}, got {tuple(y.shape)}")
    if y.numel():
        _launch_fwd(x, g, y)
    return y


def pool_bwd(dy: torch.Tensor, x: torch.Tensor, g: PoolGeometry, out=None) -> torch.Tensor:
    """Pooling data gradient: a forward (argmax for max, y for Lp) then one gather kernel."""
    dx = out if out is not None else torch.empty(x.shape, dtype=dy.dtype, device=x.device)
    if tuple(dx.shape) != tuple(x.shape):
        raise ValueError(f"out must have shape {tuple(x.shape)}, got {tuple(dx.shape)}")
    kind, p = _kind(g)
    dy = dy.contiguous()  # y and argmax are written contiguous: one set of output strides
    y = arg = dy
    if kind == 0:
        y = torch.empty(dy.shape, dtype=x.dtype, device=x.device)
        arg = torch.empty(_cf(dy, g).shape, dtype=torch.int32, device=x.device)
        _launch_fwd(x, g, y, arg)
    elif kind == 3:
        y = pool_fwd(x, g)
    dy5, y5, x5, dx5 = _cf(dy, g), _cf(y, g), _cf(x, g), _cf(dx, g)
    geo = _geo(x5, dy5, g, dx5.stride())  # x is read with dx's strides
    n = x.numel()
    block = _block(n, x.device)
    _pool_bwd_kernel[(cdiv(n, block),)](dy5, y5, arg, x5, dx5, geo, n, KIND=kind,
                                        INCLUDE_PAD=g.count_include_pad, P=p, BLOCK=block)
    return dx


def pool_fwd_ref(x: torch.Tensor, g: PoolGeometry) -> torch.Tensor:
    """Reference: torch pooling on the padded input (reads x, writes y)."""
    x5 = _cf(x, g).float()
    spatial, nd = tuple(x5.shape[2:]), len(g.kernel)
    ks, ss, ps = _pad3(g.kernel, 1), _pad3(g.stride, 1), _pad3(g.pad, 0)
    outs = _pad3(tuple(g.out), 1)
    right = [max(0, (o - 1) * s - q + k - d) for d, k, s, q, o in zip(spatial, ks, ss, ps, outs)]
    widths = [w for q, r in zip(reversed(ps), reversed(right)) for w in (q, r)]
    kind, p = _kind(g)
    if kind == 0:
        y = F.max_pool3d(F.pad(x5, widths, value=-float("inf")), ks, ss)
    else:
        base = x5 ** p if kind == 3 else x5
        y = F.avg_pool3d(F.pad(base, widths), ks, ss) * math.prod(ks)
    y = y[:, :, :outs[0], :outs[1], :outs[2]]
    if kind == 1:
        div = torch.ones((), device=x5.device)
        for d, k, s, q, o in zip(spatial, ks, ss, ps, outs):
            start = torch.arange(o, device=x5.device) * s - q
            size = (torch.clamp(start + k, max=d + q) - start if g.count_include_pad
                    else torch.clamp(start + k, max=d) - torch.clamp(start, min=0))
            div = div[..., None] * size.float()
        y = y / torch.where(div > 0, div, torch.ones_like(div))
        if nd == 3:
            y = torch.where(div == 0, torch.full_like(y, float("nan")), y)
    elif kind == 3:
        y = torch.sqrt(y) if p == 2 else torch.sign(y) * y.abs() ** (1.0 / 3.0)
    y = y.reshape(y.shape[:2] + tuple(g.out))
    return (y.movedim(1, -1) if g.channel_last else y).contiguous().to(x.dtype)


def pool_bwd_ref(dy: torch.Tensor, x: torch.Tensor, g: PoolGeometry) -> torch.Tensor:
    """Reference: autograd through :func:`pool_fwd_ref` (Lp: MXNet's lp_grad rule)."""
    kind, p = _kind(g)
    with torch.enable_grad():
        xg = x.detach().float().requires_grad_(True)
        if kind == 3:
            y = pool_fwd_ref(x.float(), g)
            scaled = torch.where(y == 0, torch.zeros_like(y), dy.float() / y ** (p - 1))
            gs = PoolGeometry(g.kernel, g.stride, g.pad, g.out, "sum", True, 1, g.channel_last)
            (dx,) = torch.autograd.grad(pool_fwd_ref(xg, gs), xg, scaled)
            return (x.float() ** (p - 1) * dx).to(dy.dtype)
        (dx,) = torch.autograd.grad(pool_fwd_ref(xg, g), xg, dy.float())
    return dx.to(dy.dtype)


def _geometry_for(shape: tuple, kind: str) -> PoolGeometry:
    """A test geometry per rank: kernel 3 stride 2 pad 1 (full for max, valid otherwise)."""
    nd = len(shape) - 2
    ks, ss, ps = (3,) * nd, (2,) * nd, (1,) * nd
    full = kind == "max"
    outs = tuple((1 + -(-(d + 2 - 3) // 2)) if full else 1 + (d + 2 - 3) // 2
                 for d in shape[2:])
    return PoolGeometry(ks, ss, ps, outs, kind, count_include_pad=kind != "avg", p_value=2)


def _make_fwd(kind):
    def make(dtype, device, shape):
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(shape, generator=gen).to(device=device, dtype=dtype)
        if kind == "lp":
            x = x.abs() + 0.5
        return (x, _geometry_for(shape, kind)), {}
    return make


def _make_bwd(kind):
    def make(dtype, device, shape):
        (x, g), _ = _make_fwd(kind)(dtype, device, shape)
        gen = torch.Generator().manual_seed(1)
        dy = torch.randn(_out_shape(x, g), generator=gen).to(device=device, dtype=dtype)
        return (dy, x, g), {}
    return make


_SHAPES = ((2, 3, 9), (2, 3, 7, 6), (1, 5, 4, 11))
_BENCH = ((32, 64, 112, 112),)
_DT = (torch.float32, torch.float16, torch.bfloat16)
_TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2)}


def _entry(name, fn, ref, make, traffic) -> KernelSpec:
    return KernelSpec(name=name, fn=fn, ref=ref, make=make, shapes=_SHAPES, bench_shapes=_BENCH,
                      dtypes=_DT, tol=_TOL, bytes=traffic, family="pool")


def _fwd_bytes(x, g):
    return tensor_bytes(x) + x.element_size() * x.shape[0] * x.shape[1] * math.prod(g.out)


def _bwd_bytes(dy, x, g):
    return 2 * tensor_bytes(dy) + 2 * tensor_bytes(x)


KERNELS = [_entry(f"pool_{k}_fwd", pool_fwd, pool_fwd_ref, _make_fwd(k), _fwd_bytes)
           for k in ("max", "avg", "sum", "lp")]
KERNELS += [_entry(f"pool_{k}_bwd", pool_bwd, pool_bwd_ref, _make_bwd(k), _bwd_bytes)
            for k in ("max", "avg", "sum", "lp")]
