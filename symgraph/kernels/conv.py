"""Convolutions as implicit GEMMs (the launcher and autotuning of ``kernels/gemm.py``).

Convolution (1-, 2- and 3-D; lower ranks are 3-D with unit leading axes) as implicit GEMM,
the input patch gathered inside the kernel (no im2col buffer). With ``o`` an output position,
``i = o * stride - pad + kk * dilate`` the input position read by kernel tap ``kk``:

    forward     y[n, f, o]  = sum_{c, kk} x[n, c, i] * w[f, c, kk]     M=N*O, N=F/g, K=C/g*KK
    data grad   dx[n, c, i] = sum_{f, kk} dy[n, f, o] * w[f, c, kk]    M=N*I, N=C/g, K=F/g*KK
                              over the (o, kk) with o * stride = i + pad - kk * dilate
    weight grad dw[f, c, kk] = sum_{n, o} dy[n, f, o] * x[n, c, i]     M=F/g, N=C/g*KK, K=N*O
    bias grad   db[f]       = sum_{n, o} dy[n, f, o]

Deconvolution (weight (C, F/g, *kernel)) is the data gradient of the convolution whose weight
it holds, so its forward is the data-grad kernel (output size ``stride*(d-1)+dk-2*pad+adj``)
and its backward is the convolution forward (dx) and the weight-grad kernel with the roles of
data and output gradient swapped (dw).
"""
from __future__ import annotations

import functools
import math

import torch
import triton.language as tl

from .gemm import _add_combine, _check_out, _launch, _randn, _upcast
from .runtime import cdiv, kernel, on_cpu
from .table import KernelSpec, tensor_bytes


@kernel
def _conv_fwd_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K, D, H, W, OD, OH, OW,
                     KD, KH, KW, sxn, sxc, sxd, sxh, sxw, std, sth, stw, pd, ph, pw,
                     dld, dlh, dlw, CG,
                     HAS_BIAS: tl.constexpr, FP64: tl.constexpr,
                     SUMK: tl.constexpr, IEEE: tl.constexpr,
                     UPCAST: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr):
    """Tile of y (rows: output positions n,od,oh,ow; cols: filters of group axis 1)."""
    pid, g = tl.program_id(0), tl.program_id(1)
    n_tiles = (N + BLOCK_N - 1) // BLOCK_N
    rm = (pid // n_tiles) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (pid % n_tiles) * BLOCK_N + tl.arange(0, BLOCK_N)
    ow, t = rm % OW, rm // OW
    oh, t = t % OH, t // OH
    od, nb = t % OD, t // OD
    x_row = x_ptr + nb * sxn + g * CG * sxc
    acc = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float64 if FP64 else tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        kw, u = rk % KW, rk // KW  # not `t`: a loop-carried name must keep its shape
        kh, u = u % KH, u // KH
        kd, c = u % KD, u // KD
        i_d = od[:, None] * std - pd + kd[None, :] * dld
        i_h = oh[:, None] * sth - ph + kh[None, :] * dlh
        i_w = ow[:, None] * stw - pw + kw[None, :] * dlw
        ok = (rm[:, None] < M) & (rk[None, :] < K) & (i_d >= 0) & (i_d < D) & (i_h >= 0) \
            & (i_h < H) & (i_w >= 0) & (i_w < W)
        a = tl.load(x_row[:, None] + c[None, :] * sxc + i_d * sxd + i_h * sxh + i_w * sxw,
                    mask=ok, other=0.0)
        b = tl.load(w_ptr + (g * N + rn[None, :]) * K + rk[:, None],
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        if UPCAST:
            a, b = a.to(tl.float32), b.to(tl.float32)
        if SUMK:  # fp64 on CUDA: products summed over K (fp64 tl.dot fails to compile)
            acc += tl.reduce(a[:, :, None] * b[None, :, :], 1, _add_combine)
        elif IEEE:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + g * N + rn, mask=rn < N, other=0.0).to(acc.dtype)[None, :]
    osp = OD * OH * OW
    y_off = (nb * (tl.num_programs(1) * N) + g * N)[:, None] * osp + rn[None, :] * osp \
        + (rm % osp)[:, None]
    tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@kernel
def _conv_dgrad_kernel(dy_ptr, w_ptr, bias_ptr, dx_ptr, M, N, K, D, H, W, OD, OH, OW,
                       KD, KH, KW, syn, syc, syd, syh, syw, std, sth, stw, pd, ph, pw,
                       dld, dlh, dlw, FG,
                       HAS_BIAS: tl.constexpr, FP64: tl.constexpr,
                       SUMK: tl.constexpr, IEEE: tl.constexpr,
                       UPCAST: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr):
    """Tile of dx (rows: input positions n,id,ih,iw; cols: channels of group axis 1)."""
    pid, g = tl.program_id(0), tl.program_id(1)
    n_tiles = (N + BLOCK_N - 1) // BLOCK_N
    rm = (pid // n_tiles) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (pid % n_tiles) * BLOCK_N + tl.arange(0, BLOCK_N)
    iw, t = rm % W, rm // W
    ih, t = t % H, t // H
    i_d, nb = t % D, t // D
    kk_n = KD * KH * KW
    dy_row = dy_ptr + nb * syn + g * FG * syc
    acc = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float64 if FP64 else tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        kw, u = rk % KW, rk // KW  # not `t`: a loop-carried name must keep its shape
        kh, u = u % KH, u // KH
        kd, f = u % KD, u // KD
        # o * stride = i + pad - kk * dilate; clamp before // and % (C vs numpy semantics)
        nd = i_d[:, None] + pd - kd[None, :] * dld
        nh = ih[:, None] + ph - kh[None, :] * dlh
        nw = iw[:, None] + pw - kw[None, :] * dlw
        ok = (rm[:, None] < M) & (rk[None, :] < K) & (nd >= 0) & (nh >= 0) & (nw >= 0)
        nd, nh, nw = tl.where(ok, nd, 0), tl.where(ok, nh, 0), tl.where(ok, nw, 0)
        ok = ok & (nd % std == 0) & (nh % sth == 0) & (nw % stw == 0) & (nd // std < OD) \
            & (nh // sth < OH) & (nw // stw < OW)
        a = tl.load(dy_row[:, None] + f[None, :] * syc + (nd // std) * syd + (nh // sth) * syh
                    + (nw // stw) * syw, mask=ok, other=0.0)
        b = tl.load(w_ptr + ((g * FG + f[:, None]) * N + rn[None, :]) * kk_n
                    + (rk % kk_n)[:, None], mask=(rk[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        if UPCAST:
            a, b = a.to(tl.float32), b.to(tl.float32)
        if SUMK:  # fp64 on CUDA: products summed over K (fp64 tl.dot fails to compile)
            acc += tl.reduce(a[:, :, None] * b[None, :, :], 1, _add_combine)
        elif IEEE:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + g * N + rn, mask=rn < N, other=0.0).to(acc.dtype)[None, :]
    sp = D * H * W
    dx_off = (nb * (tl.num_programs(1) * N) + g * N)[:, None] * sp + rn[None, :] * sp \
        + (rm % sp)[:, None]
    tl.store(dx_ptr + dx_off, acc.to(dx_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@kernel
def _conv_wgrad_kernel(dy_ptr, x_ptr, dw_ptr, M, N, K, D, H, W, OD, OH, OW,
                       KD, KH, KW, syn, syc, sxn, sxc, sxd, sxh, sxw, std, sth, stw,
                       pd, ph, pw, dld, dlh, dlw, CG,
                       FP64: tl.constexpr,
                       SUMK: tl.constexpr, IEEE: tl.constexpr, UPCAST: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Tile of dw (rows: filters of group axis 1; cols: c,kd,kh,kw); K runs over n,o."""
    pid, g = tl.program_id(0), tl.program_id(1)
    n_tiles = (N + BLOCK_N - 1) // BLOCK_N
    rm = (pid // n_tiles) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (pid % n_tiles) * BLOCK_N + tl.arange(0, BLOCK_N)
    kw, t = rn % KW, rn // KW
    kh, t = t % KH, t // KH
    kd, c = t % KD, t // KD
    osp = OD * OH * OW
    acc = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float64 if FP64 else tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        ow, u = rk % OW, rk // OW  # not `t`: a loop-carried name must keep its shape
        oh, u = u % OH, u // OH
        od, nb = u % OD, u // OD
        a = tl.load(dy_ptr + nb[None, :] * syn + (g * M + rm[:, None]) * syc
                    + (rk % osp)[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K),
                    other=0.0)
        i_d = od[:, None] * std - pd + kd[None, :] * dld
        i_h = oh[:, None] * sth - ph + kh[None, :] * dlh
        i_w = ow[:, None] * stw - pw + kw[None, :] * dlw
        ok = (rk[:, None] < K) & (rn[None, :] < N) & (i_d >= 0) & (i_d < D) & (i_h >= 0) \
            & (i_h < H) & (i_w >= 0) & (i_w < W)
        b = tl.load(x_ptr + nb[:, None] * sxn + (g * CG + c[None, :]) * sxc + i_d * sxd
                    + i_h * sxh + i_w * sxw, mask=ok, other=0.0)
        if UPCAST:
            a, b = a.to(tl.float32), b.to(tl.float32)
        if SUMK:  # fp64 on CUDA: products summed over K (fp64 tl.dot fails to compile)
            acc += tl.reduce(a[:, :, None] * b[None, :, :], 1, _add_combine)
        elif IEEE:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    tl.store(dw_ptr + (g * M + rm[:, None]) * N + rn[None, :], acc.to(dw_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@kernel
def _bias_grad_kernel(dy_ptr, db_ptr, NB, S, syn, syc, FP64: tl.constexpr,
                      BLOCK: tl.constexpr):
    """``db[f] = sum_{n, s} dy[n, f, s]``; one program per channel f."""
    f = tl.program_id(0)
    acc = tl.full((BLOCK,), 0.0, tl.float64 if FP64 else tl.float32)
    for nb in range(0, NB):
        for s0 in range(0, S, BLOCK):
            rs = s0 + tl.arange(0, BLOCK)
            acc += tl.load(dy_ptr + nb * syn + f * syc + rs, mask=rs < S, other=0.0).to(acc.dtype)
    tl.store(db_ptr + f, tl.reduce(acc, 0, _add_combine).to(db_ptr.dtype.element_ty))


def _geom(nd: int, stride, pad, dilate) -> tuple[tuple, tuple, tuple]:
    """Stride, pad, dilate as 3-tuples (unit/zero leading axes for 1-D and 2-D)."""
    def full(v, fill):
        v = (fill,) * nd if v is None or len(v) == 0 else tuple(v)
        if len(v) != nd:
            raise ValueError(f"expected {nd} values, got {v}")
        return (fill,) * (3 - nd) + v
    return full(stride, 1), full(pad, 0), full(dilate, 1)


def _as5d(t: torch.Tensor) -> torch.Tensor:
    """(N, C, *spatial) as an (N, C, D, H, W) view."""
    while t.dim() < 5:
        t = t.unsqueeze(2)
    return t


def _meta(t: torch.Tensor, bias=None) -> dict:
    """Constexpr flags for a conv launch (bias=False: the kernel has no HAS_BIAS)."""
    meta = {"FP64": t.dtype == torch.float64,
            "IEEE": t.dtype in (torch.float32, torch.float64), "UPCAST": _upcast(t)}
    if bias is not False:
        meta["HAS_BIAS"] = bias is not None
    return meta


def _check_conv(x, w, groups, what="conv") -> int:
    """Rank, dtype and group checks; returns the number of spatial axes."""
    nd = x.dim() - 2
    if nd not in (1, 2, 3) or w.dim() != x.dim() or x.dtype != w.dtype or groups < 1 \
            or x.shape[1] % groups or w.shape[0] % groups:
        raise ValueError(f"{what}: bad operands {tuple(x.shape)} {x.dtype}, weight "
                         f"{tuple(w.shape)} {w.dtype}, groups {groups}")
    return nd


def _grid(m, n, groups):
    """Tiles of an M x N output per group (axis 1)."""
    return lambda cfg: (cdiv(m, cfg["BLOCK_M"]) * cdiv(n, cfg["BLOCK_N"]), groups)


def conv_nd(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None, stride=None,
            pad=None, dilate=None, groups: int = 1, out=None) -> torch.Tensor:
    """Convolution of x (N, C, *sp) with w (F, C/groups, *kernel) (+ bias (F,)), 1-3 D."""
    nd = _check_conv(x, w, groups)
    st, pd, dl = _geom(nd, stride, pad, dilate)
    x5, w5 = _as5d(x), _as5d(w).contiguous()
    ks = w5.shape[2:]
    osz = tuple((d + 2 * p - (1 + (k - 1) * di)) // s + 1
                for d, p, k, di, s in zip(x5.shape[2:], pd, ks, dl, st))
    y = _check_out(out, (x.shape[0], w.shape[0]) + osz[3 - nd:], x)
    if y.numel() == 0:
        return y
    if not y.is_contiguous():
        raise ValueError("conv_nd: out must be contiguous")
    m, n, k = x.shape[0] * osz[0] * osz[1] * osz[2], w.shape[0] // groups, w5[0].numel()
    args = (x5, w5, x5 if bias is None else bias, y, m, n, k, *x5.shape[2:], *osz, *ks,
            *x5.stride(), *st, *pd, *dl, x.shape[1] // groups)
    _launch(_conv_fwd_kernel, _grid(m, n, groups), ("M", "N", "K"), args, _meta(x, bias))
    return y


def conv_nd_ref(x, w, bias=None, stride=None, pad=None, dilate=None, groups=1):
    """Reference: 2*N*F*prod(out)*C/g*prod(kernel) FLOPs; reads x, w, bias, writes y."""
    nd = x.dim() - 2
    st, pd, dl = (g[3 - nd:] for g in _geom(nd, stride, pad, dilate))
    conv = (torch.nn.functional.conv1d, torch.nn.functional.conv2d,
            torch.nn.functional.conv3d)[nd - 1]
    return conv(x, w, bias, st, pd, dl, groups)


def _dgrad(dy, w, bias, dx, geom, groups) -> torch.Tensor:
    """Launch the data-gradient kernel: dx (N, G*CG, *sp) from dy (N, F, *o), w (F, CG, *k)."""
    st, pd, dl = geom
    dy5, w5, dx5 = _as5d(dy), _as5d(w).contiguous(), _as5d(dx)
    if dx.numel() == 0:
        return dx
    if not dx.is_contiguous():
        raise ValueError("out must be contiguous")
    fg, cg = w.shape[0] // groups, w.shape[1]
    m, k = dx5.shape[0] * dx5[0, 0].numel(), fg * w5[0, 0].numel()
    args = (dy5, w5, dy5 if bias is None else bias, dx5, m, cg, k, *dx5.shape[2:],
            *dy5.shape[2:], *w5.shape[2:], *dy5.stride(), *st, *pd, *dl, fg)
    _launch(_conv_dgrad_kernel, _grid(m, cg, groups), ("M", "N", "K"), args, _meta(dy, bias))
    return dx


def conv_data_grad(dy: torch.Tensor, w: torch.Tensor, in_spatial: tuple, stride=None,
                   pad=None, dilate=None, groups: int = 1, out=None) -> torch.Tensor:
    """Gradient of :func:`conv_nd` w.r.t. x of spatial size ``in_spatial`` (implicit GEMM)."""
    nd = _check_conv(dy, w, groups, "conv_data_grad")
    dx = _check_out(out, (dy.shape[0], w.shape[1] * groups) + tuple(in_spatial), dy)
    return _dgrad(dy, w, None, dx, _geom(nd, stride, pad, dilate), groups)


def conv_data_grad_ref(dy, w, in_spatial, stride=None, pad=None, dilate=None, groups=1):
    """Reference: the FLOPs of the forward; reads dy, w, writes dx."""
    nd = dy.dim() - 2
    st, pd, dl = (list(g[3 - nd:]) for g in _geom(nd, stride, pad, dilate))
    x = dy.new_empty((dy.shape[0], w.shape[1] * groups) + tuple(in_spatial))
    return torch.ops.aten.convolution_backward(dy, x, w, None, st, pd, dl, False, [0] * nd,
                                               groups, [True, False, False])[0]


def conv_weight_grad(dy: torch.Tensor, x: torch.Tensor, kernel_size: tuple, stride=None,
                     pad=None, dilate=None, groups: int = 1, out=None) -> torch.Tensor:
    """Gradient of :func:`conv_nd` w.r.t. w (F, C/groups, *kernel) (implicit GEMM over n, o)."""
    nd = x.dim() - 2
    st, pd, dl = _geom(nd, stride, pad, dilate)
    cg, fg = x.shape[1] // groups, dy.shape[1] // groups
    dw = _check_out(out, (dy.shape[1], cg) + tuple(kernel_size), x)
    if dw.numel() == 0:
        return dw
    if not dw.is_contiguous():
        raise ValueError("conv_weight_grad: out must be contiguous")
    dy5, x5 = _as5d(dy), _as5d(x)
    if not dy5[0, 0].is_contiguous():
        dy5 = dy5.contiguous()  # the kernel walks output positions linearly
    ks = _as5d(dw).shape[2:]
    n, k = cg * ks[0] * ks[1] * ks[2], dy.shape[0] * dy5[0, 0].numel()
    args = (dy5, x5, dw, fg, n, k, *x5.shape[2:], *dy5.shape[2:], *ks, *dy5.stride()[:2],
            *x5.stride(), *st, *pd, *dl, cg)
    _launch(_conv_wgrad_kernel, _grid(fg, n, groups), ("M", "N", "K"), args, _meta(x, False))
    return dw


def conv_weight_grad_ref(dy, x, kernel_size, stride=None, pad=None, dilate=None, groups=1):
    """Reference: the FLOPs of the forward; reads dy, x, writes dw."""
    nd = x.dim() - 2
    st, pd, dl = (list(g[3 - nd:]) for g in _geom(nd, stride, pad, dilate))
    w = x.new_empty((dy.shape[1], x.shape[1] // groups) + tuple(kernel_size))
    return torch.ops.aten.convolution_backward(dy, x, w, None, st, pd, dl, False, [0] * nd,
                                               groups, [False, True, False])[1]


def conv_bias_grad(dy: torch.Tensor, out=None) -> torch.Tensor:
    """``dy.sum(every axis but 1)``: the bias gradient of a convolution."""
    db = _check_out(out, (dy.shape[1],), dy)
    dy3 = dy.reshape(dy.shape[0], dy.shape[1], -1)
    if not dy3[0, 0].is_contiguous():
        dy3 = dy3.contiguous()
    if db.numel():
        _bias_grad_kernel[(dy.shape[1],)](dy3, db, dy3.shape[0], dy3.shape[2],
                                          *dy3.stride()[:2], FP64=dy.dtype == torch.float64,
                                          BLOCK=128 if on_cpu(dy) else 1024)
    return db


def conv_bias_grad_ref(dy):
    """Reference: reads dy once, writes F values."""
    return dy.sum(dim=[d for d in range(dy.dim()) if d != 1])


def conv_transpose_nd(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None,
                      stride=None, pad=None, dilate=None, groups: int = 1, adj=None,
                      out=None) -> torch.Tensor:
    """Deconvolution of x (N, C, *sp) with w (C, F/groups, *kernel): a conv data gradient."""
    nd = _check_conv(x, w, groups, "conv_transpose_nd")
    st, pd, dl = _geom(nd, stride, pad, dilate)
    adj = (0,) * nd if not adj else tuple(adj)
    ks = w.shape[2:]
    osz = tuple(s * (d - 1) + 1 + (k - 1) * di - 2 * p + a for s, d, k, di, p, a in
                zip(st[3 - nd:], x.shape[2:], ks, dl[3 - nd:], pd[3 - nd:], adj))
    y = _check_out(out, (x.shape[0], w.shape[1] * groups) + osz, x)
    return _dgrad(x, w, bias, y, (st, pd, dl), groups)


def conv_transpose_nd_ref(x, w, bias=None, stride=None, pad=None, dilate=None, groups=1,
                          adj=None):
    """Reference: the FLOPs of the convolution it transposes; reads x, w, bias, writes y."""
    nd = x.dim() - 2
    st, pd, dl = (g[3 - nd:] for g in _geom(nd, stride, pad, dilate))
    fn = (torch.nn.functional.conv_transpose1d, torch.nn.functional.conv_transpose2d,
          torch.nn.functional.conv_transpose3d)[nd - 1]
    return fn(x, w, bias, st, pd, tuple(adj) if adj else 0, groups, dl)


# ---------------------------------------------------------------- table entries

def _make_conv(dtype, device, shape, *, kernel, stride, pad, dilate, groups, role="fwd"):
    """Operands for one conv-family wrapper (role: fwd, dgrad, wgrad, bgrad, transpose)."""
    gen = torch.Generator().manual_seed(4)
    nb, c, f, *sp = shape
    x = _randn(gen, (nb, c, *sp), dtype, device)
    geom = (stride, pad, dilate, groups)
    if role == "transpose":
        w = _randn(gen, (c, f // groups, *kernel), dtype, device)
        adj = tuple(s - 1 for s in stride)
        return (x, w, _randn(gen, (f,), dtype, device), *geom, adj), {}
    w = _randn(gen, (f, c // groups, *kernel), dtype, device)
    if role == "fwd":
        return (x, w, _randn(gen, (f,), dtype, device), *geom), {}
    dy = _randn(gen, conv_nd_ref(x.float(), w.float(), None, *geom).shape, dtype, device)
    if role == "dgrad":
        return (dy, w, tuple(sp), *geom), {}
    if role == "wgrad":
        return (dy, x, tuple(kernel), *geom), {}
    return (dy,), {}


def _conv_flops(x, w, bias, stride, pad, dilate, groups):
    """2 * N * F * prod(out) * C/g * prod(kernel)."""
    out = [(d + 2 * p - (1 + (k - 1) * di)) // s + 1 for d, p, k, di, s in
           zip(x.shape[2:], pad, w.shape[2:], dilate, stride)]
    return 2 * x.shape[0] * w.shape[0] * math.prod(out) * w[0].numel()


def _dgrad_flops(dy, w, *rest):
    """The forward's FLOPs: 2 * dy.numel() * C/g * prod(kernel)."""
    return 2 * dy.numel() * w[0].numel()


def _wgrad_flops(dy, x, kernel_size, stride, pad, dilate, groups):
    """The forward's FLOPs: 2 * dy.numel() * C/g * prod(kernel)."""
    return 2 * dy.numel() * (x.shape[1] // groups) * math.prod(kernel_size)


def _conv_entry(name, fn, ref, role, shapes, bench, geom, flops=_conv_flops, dtypes=None):
    """A conv-family table entry with its geometry bound into ``make``."""
    return KernelSpec(name=name, fn=fn, ref=ref, shapes=shapes, bench_shapes=bench,
                      make=functools.partial(_make_conv, role=role, **geom), tol=_CONV_TOL,
                      dtypes=dtypes or (torch.float32, torch.bfloat16), flops=flops,
                      family="gemm")


_CONV_TOL = {torch.float32: (1e-4, 1e-4), torch.float16: (1e-2, 1e-2),
             torch.bfloat16: (3e-2, 3e-2)}
_G2D = {"kernel": (3, 3), "stride": (2, 1), "pad": (1, 1), "dilate": (1, 1), "groups": 1}
_G1D = {"kernel": (3,), "stride": (1,), "pad": (2,), "dilate": (2,), "groups": 2}
_G3D = {"kernel": (2, 3, 2), "stride": (1, 2, 1), "pad": (1, 0, 1), "dilate": (1, 1, 1),
        "groups": 1}
_GR = {"kernel": (3, 3), "stride": (1, 1), "pad": (1, 1), "dilate": (1, 1), "groups": 1}
_S2D = ((2, 3, 5, 7, 6), (1, 4, 6, 9, 5))
_B2D = ((64, 64, 64, 56, 56), (32, 256, 256, 14, 14))

KERNELS = [
    _conv_entry("conv2d", conv_nd, conv_nd_ref, "fwd", _S2D, _B2D, _G2D),
    _conv_entry("conv2d_resnet", conv_nd, conv_nd_ref, "fwd", ((2, 3, 4, 6, 5),), _B2D, _GR),
    _conv_entry("conv1d_grouped_dilated", conv_nd, conv_nd_ref, "fwd", ((2, 4, 6, 13),),
                ((32, 256, 256, 1024),), _G1D),
    _conv_entry("conv3d", conv_nd, conv_nd_ref, "fwd", ((1, 2, 3, 4, 5, 3),),
                ((8, 32, 32, 16, 28, 28),), _G3D, dtypes=(torch.float32,)),
    _conv_entry("conv2d_data_grad", conv_data_grad, conv_data_grad_ref, "dgrad", _S2D, _B2D,
                _G2D, flops=_dgrad_flops),
    _conv_entry("conv1d_data_grad", conv_data_grad, conv_data_grad_ref, "dgrad",
                ((2, 4, 6, 13),), ((32, 256, 256, 1024),), _G1D, flops=_dgrad_flops),
    _conv_entry("conv2d_weight_grad", conv_weight_grad, conv_weight_grad_ref, "wgrad", _S2D,
                _B2D, _G2D, flops=_wgrad_flops),
    _conv_entry("conv3d_weight_grad", conv_weight_grad, conv_weight_grad_ref, "wgrad",
                ((1, 2, 3, 4, 5, 3),), ((8, 32, 32, 16, 28, 28),), _G3D, flops=_wgrad_flops,
                dtypes=(torch.float32,)),
    KernelSpec(name="conv_bias_grad", fn=conv_bias_grad, ref=conv_bias_grad_ref,
               make=functools.partial(_make_conv, role="bgrad", **_G2D), shapes=_S2D,
               bench_shapes=_B2D, dtypes=(torch.float32, torch.bfloat16), tol=_CONV_TOL,
               bytes=lambda dy: tensor_bytes(dy), family="gemm"),
    _conv_entry("conv_transpose2d", conv_transpose_nd, conv_transpose_nd_ref, "transpose",
                ((2, 3, 5, 4, 3), (1, 4, 2, 5, 6)), ((64, 64, 64, 28, 28),), _G2D,
                flops=lambda x, w, *rest: 2 * x.numel() * w[0].numel()),
]
