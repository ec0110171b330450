"""LayerNorm, L2Normalization and BatchNorm forward and backward (Triton tutorial 05).

Data is viewed as ``(outer, C, inner)`` around the normalised axis (see ``kernels/reduce.py``):
a *row* is one ``(o, i)`` pair (``M = outer * inner`` rows of ``C`` elements), a *column* is
one channel ``c``. Statistics are fp32 (fp64 for fp64 data) and combine per-block mean and
squared deviation with Chan's parallel Welford update, so one pass gives mean and biased
variance without cancellation::

    n = n_a + n_b   mean = mean_a + d * n_b / n   m2 = m2_a + m2_b + d^2 * n_a * n_b / n

LayerNorm (per row; ``xhat = (x - mean) / std``, ``g = dy * gamma``, means over the row)::

    std = sqrt(var + eps)   y = xhat * gamma + beta
    dx = (g - mean(g) - xhat * mean(g * xhat)) / std
    dgamma = sum_rows(dy * xhat)   dbeta = sum_rows(dy)          (column sums)

L2Normalization (per row): ``norm = sqrt(sum(x^2) + eps)``, ``y = x / norm`` (its gradient
is built from other ops).

BatchNorm (per column; ``invstd = 1 / sqrt(var + eps)``, ``xhat = (x - mean) * invstd``,
``scale = invstd * gamma``, or ``invstd`` with ``fix_gamma``)::

    training: mean, var = column statistics; moving = moving * momentum + stat * (1 - momentum)
    otherwise: mean, var = moving_mean, moving_var
    y = (x - mean) * scale + beta
    dbeta = sum(dy)   dgamma = sum(dy * xhat)   (reported 0 with fix_gamma)
    dx = scale * (dy - dbeta / M - xhat * dgamma / M)    (dx = scale * dy: use_global_stats)

Bytes moved: LayerNorm forward reads x twice and writes y (+2 floats per row); its dx
kernel reads dy and x twice, the column-sum kernel once more; BatchNorm reads x twice
(statistics, normalise) and writes y; its backward reads dy and x twice and writes dx.
"""
from __future__ import annotations

import math

import torch
import triton.language as tl

from .reduce import SUM, acc_type, check_out, launch_opts, row_block, row_layout
from .runtime import cdiv, kernel
from .table import KernelSpec, tensor_bytes


def _tiles(device: torch.device) -> tuple[int, int, int]:
    """(BLOCK_M, BLOCK_C, elementwise BLOCK) for column and flat kernels."""
    return (32, 64, 1024) if device.type == "cuda" else (16, 16, 128)


@kernel
def _layer_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, std_ptr, N, INNER, eps,
                           ACC: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = (row // INNER) * N * INNER + row % INNER
    cnt = tl.full((), 0.0, ACC)
    mu = tl.full((), 0.0, ACC)
    m2 = tl.full((), 0.0, ACC)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + cols * INNER, mask=cols < N, other=0.0).to(ACC)
        nb = tl.minimum(N - start, BLOCK).to(ACC)
        mb = tl.reduce(x, 0, SUM) / nb
        d = tl.where(cols < N, x - mb, 0.0)
        delta = mb - mu
        tot = cnt + nb
        mu += delta * nb / tot
        m2 += tl.reduce(d * d, 0, SUM) + delta * delta * cnt * nb / tot
        cnt = tot
    std = tl.sqrt(m2 / N + eps)
    tl.store(mean_ptr + row, mu.to(mean_ptr.dtype.element_ty))
    tl.store(std_ptr + row, std.to(std_ptr.dtype.element_ty))
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + cols * INNER, mask=cols < N, other=0.0).to(ACC)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(ACC)
        b = tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(ACC)
        y = (x - mu) / std * w + b
        tl.store(y_ptr + base + cols * INNER, y.to(y_ptr.dtype.element_ty), mask=cols < N)


def _stat_shape(shape: tuple, axis: int) -> tuple:
    return tuple(1 if i == axis % len(shape) else d for i, d in enumerate(shape))


def layer_norm_fwd(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, axis: int = -1,
                   eps: float = 1e-5, out=None):
    """Check, allocate, launch: LayerNorm over ``axis``; returns (out, mean, std)."""
    x, gamma, beta = x.contiguous(), gamma.contiguous(), beta.contiguous()
    outer, n, inner = row_layout(tuple(x.shape), axis)
    if gamma.numel() != n or beta.numel() != n:
        raise ValueError(f"gamma/beta of shapes {tuple(gamma.shape)}/{tuple(beta.shape)} "
                         f"do not match axis {axis} of data shape {tuple(x.shape)}")
    stat = _stat_shape(tuple(x.shape), axis)
    outs = out if out is not None else (None, None, None)
    y = check_out(outs[0], tuple(x.shape), x.dtype, x.device, "out[0]")
    mean = check_out(outs[1], stat, x.dtype, x.device, "out[1]")
    std = check_out(outs[2], stat, x.dtype, x.device, "out[2]")
    if x.numel():
        block = row_block(n, x.device)
        _layer_norm_fwd_kernel[(outer * inner,)](
            x, y, gamma, beta, mean, std, n, inner, float(eps), ACC=acc_type(x.dtype),
            BLOCK=block, **launch_opts(block, x.device))
    return y, mean, std


def layer_norm_fwd_ref(x, gamma, beta, axis=-1, eps=1e-5):
    """Reference: eager torch reads x ~4 times (mean, var, normalise, affine)."""
    xw = x.double() if x.dtype == torch.float64 else x.float()
    mean = xw.mean(axis, keepdim=True)
    std = torch.sqrt(((xw - mean) ** 2).mean(axis, keepdim=True) + eps)
    view = [1] * x.dim()
    view[axis] = -1
    y = (xw - mean) / std * gamma.to(xw.dtype).view(view) + beta.to(xw.dtype).view(view)
    return y.to(x.dtype), mean.to(x.dtype), std.to(x.dtype)


@kernel
def _layer_norm_bwd_dx_kernel(dy_ptr, x_ptr, w_ptr, mean_ptr, std_ptr, dx_ptr, N, INNER,
                              ACC: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = (row // INNER) * N * INNER + row % INNER
    mu = tl.load(mean_ptr + row).to(ACC)
    std = tl.load(std_ptr + row).to(ACC)
    sg = tl.full((), 0.0, ACC)
    sgx = tl.full((), 0.0, ACC)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        offs = base + cols * INNER
        g = tl.load(dy_ptr + offs, mask=cols < N, other=0.0).to(ACC) * tl.load(
            w_ptr + cols, mask=cols < N, other=0.0).to(ACC)
        xhat = (tl.load(x_ptr + offs, mask=cols < N, other=0.0).to(ACC) - mu) / std
        sg += tl.reduce(g, 0, SUM)
        sgx += tl.reduce(g * xhat, 0, SUM)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        offs = base + cols * INNER
        g = tl.load(dy_ptr + offs, mask=cols < N, other=0.0).to(ACC) * tl.load(
            w_ptr + cols, mask=cols < N, other=0.0).to(ACC)
        xhat = (tl.load(x_ptr + offs, mask=cols < N, other=0.0).to(ACC) - mu) / std
        dx = (g - sg / N - xhat * (sgx / N)) / std
        tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=cols < N)


@kernel
def _column_grad_sums_kernel(dy_ptr, x_ptr, mean_ptr, s_ptr, dg_ptr, db_ptr, dgz_ptr, M, C,
                             INNER, ROW_STATS: tl.constexpr, INV: tl.constexpr,
                             ZERO_DG: tl.constexpr, ACC: tl.constexpr,
                             BLOCK_M: tl.constexpr, BLOCK_C: tl.constexpr):
    c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = c < C
    if not ROW_STATS:
        mu_c = tl.load(mean_ptr + c, mask=cmask, other=0.0).to(ACC)
        s_c = tl.load(s_ptr + c, mask=cmask, other=1.0).to(ACC)
    acc_g = tl.full((BLOCK_C,), 0.0, ACC)
    acc_b = tl.full((BLOCK_C,), 0.0, ACC)
    for r0 in range(0, M, BLOCK_M):
        r = (r0 + tl.arange(0, BLOCK_M)).to(tl.int64)
        offs = ((r // INNER) * C * INNER + r % INNER)[:, None] + c[None, :] * INNER
        mask = (r < M)[:, None] & cmask[None, :]
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(ACC)
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(ACC)
        if ROW_STATS:
            mu = tl.load(mean_ptr + r, mask=r < M, other=0.0).to(ACC)[:, None]
            s = tl.load(s_ptr + r, mask=r < M, other=1.0).to(ACC)[:, None]
        else:
            mu = mu_c[None, :]
            s = s_c[None, :]
        if INV:
            xhat = (x - mu) * s
        else:
            xhat = (x - mu) / s
        acc_g += tl.reduce(dy * xhat, 0, SUM)
        acc_b += tl.reduce(dy, 0, SUM)
    tl.store(dg_ptr + c, acc_g.to(dg_ptr.dtype.element_ty), mask=cmask)
    tl.store(db_ptr + c, acc_b.to(db_ptr.dtype.element_ty), mask=cmask)
    if ZERO_DG:
        tl.store(dgz_ptr + c, tl.full((BLOCK_C,), 0.0, ACC).to(dgz_ptr.dtype.element_ty),
                 mask=cmask)


def _column_sums(dy, x, mean, s, dg, db, layout, row_stats, inv, dgz=None):
    """Launch the column-sum kernel: dg = sum(dy * xhat), db = sum(dy) per column."""
    outer, c, inner = layout
    block_m, block_c, _ = _tiles(x.device)
    _column_grad_sums_kernel[(cdiv(c, block_c),)](
        dy, x, mean, s, dg, db, dgz if dgz is not None else dg, outer * inner, c, inner,
        ROW_STATS=row_stats, INV=inv, ZERO_DG=dgz is not None,
        ACC=acc_type(x.dtype, mean.dtype), BLOCK_M=block_m, BLOCK_C=block_c)


def layer_norm_bwd(dy: torch.Tensor, x: torch.Tensor, gamma: torch.Tensor, mean: torch.Tensor,
                   std: torch.Tensor, axis: int = -1, out=None):
    """Check, allocate, launch: LayerNorm's (dx, dgamma, dbeta) from the saved mean and std."""
    dy, x, gamma = dy.contiguous(), x.contiguous(), gamma.contiguous()
    mean, std = mean.contiguous(), std.contiguous()
    layout = row_layout(tuple(x.shape), axis)
    outer, n, inner = layout
    if dy.shape != x.shape or mean.numel() != outer * inner or std.numel() != outer * inner:
        raise ValueError(f"LayerNorm backward: ograd {tuple(dy.shape)}, data "
                         f"{tuple(x.shape)}, mean {tuple(mean.shape)}, std {tuple(std.shape)}")
    outs = out if out is not None else (None, None, None)
    dx = check_out(outs[0], tuple(x.shape), x.dtype, x.device, "out[0]")
    dg = check_out(outs[1], (n,), x.dtype, x.device, "out[1]")
    db = check_out(outs[2], (n,), x.dtype, x.device, "out[2]")
    if x.numel():
        block = row_block(n, x.device)
        _layer_norm_bwd_dx_kernel[(outer * inner,)](
            dy, x, gamma, mean, std, dx, n, inner, ACC=acc_type(x.dtype), BLOCK=block,
            **launch_opts(block, x.device))
        _column_sums(dy, x, mean, std, dg, db, layout, row_stats=True, inv=False)
    return dx, dg, db


def layer_norm_bwd_ref(dy, x, gamma, mean, std, axis=-1):
    """Reference: eager torch reads dy and x ~3 times each."""
    wide = torch.float64 if x.dtype == torch.float64 else torch.float32
    dy, xw, gamma, mean, std = (t.to(wide) for t in (dy, x, gamma, mean, std))
    ax = axis % x.dim()
    view = [1] * x.dim()
    view[ax] = -1
    xhat = (xw - mean) / std
    g = dy * gamma.view(view)
    dx = (g - g.mean(ax, keepdim=True) - xhat * (g * xhat).mean(ax, keepdim=True)) / std
    red = [i for i in range(x.dim()) if i != ax]
    return dx.to(x.dtype), (dy * xhat).sum(red).to(x.dtype), dy.sum(red).to(x.dtype)


# ---------------------------------------------------------------- L2Normalization

@kernel
def _l2_norm_fwd_kernel(x_ptr, y_ptr, norm_ptr, N, INNER, eps, ACC: tl.constexpr,
                        BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = (row // INNER) * N * INNER + row % INNER
    ss = tl.full((), 0.0, ACC)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + cols * INNER, mask=cols < N, other=0.0).to(ACC)
        ss += tl.reduce(x * x, 0, SUM)
    norm = tl.sqrt(ss + eps)
    tl.store(norm_ptr + row, norm.to(norm_ptr.dtype.element_ty))
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + cols * INNER, mask=cols < N, other=0.0).to(ACC)
        tl.store(y_ptr + base + cols * INNER, (x / norm).to(y_ptr.dtype.element_ty),
                 mask=cols < N)


def _l2_layout(shape: tuple, mode: str) -> tuple[int, int, int]:
    if mode == "instance":
        return shape[0], math.prod(shape[1:]), 1
    if mode == "channel":
        return shape[0], shape[1], math.prod(shape[2:])
    return shape[0] * shape[1], math.prod(shape[2:]), 1


def _l2_norm_shape(shape: tuple, mode: str) -> tuple:
    keep = {"instance": 1, "channel": None, "spatial": 2}[mode]
    if keep is None:
        return tuple(1 if i == 1 else d for i, d in enumerate(shape))
    return tuple(d if i < keep else 1 for i, d in enumerate(shape))


def l2_normalization(x: torch.Tensor, mode: str = "instance", eps: float = 1e-10, out=None):
    """Check, allocate, launch: ``x / sqrt(sum(x^2) + eps)``; returns (out, norm)."""
    x = x.contiguous()
    if mode != "instance" and x.dim() < 3:
        raise ValueError(f"L2Normalization mode {mode!r} needs 3-D or larger data, got "
                         f"shape {tuple(x.shape)}")
    outer, n, inner = _l2_layout(tuple(x.shape), mode)
    outs = out if out is not None else (None, None)
    y = check_out(outs[0], tuple(x.shape), x.dtype, x.device, "out[0]")
    norm = check_out(outs[1], _l2_norm_shape(tuple(x.shape), mode), x.dtype, x.device,
                     "out[1]")
    if x.numel():
        block = row_block(n, x.device)
        _l2_norm_fwd_kernel[(outer * inner,)](x, y, norm, n, inner, float(eps),
                                              ACC=acc_type(x.dtype), BLOCK=block,
                                              **launch_opts(block, x.device))
    return y, norm


def l2_normalization_ref(x, mode="instance", eps=1e-10):
    """Reference: reads x twice (square-sum, divide), writes out and the norms."""
    axes = {"instance": tuple(range(1, x.dim())), "channel": (1,),
            "spatial": tuple(range(2, x.dim()))}[mode]
    xw = x.double() if x.dtype == torch.float64 else x.float()
    sq = (xw * xw).sum(dim=axes, keepdim=True) if axes else xw * xw
    norm = torch.sqrt(sq + eps)
    return (xw / norm).to(x.dtype), norm.to(x.dtype)


# ---------------------------------------------------------------- BatchNorm

@kernel
def _bn_stats_kernel(x_ptr, mean_ptr, istd_ptr, mm_ptr, mv_ptr, gamma_ptr, M, C, INNER,
                     momentum, eps, TRAIN: tl.constexpr, RESET_GAMMA: tl.constexpr,
                     ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_C: tl.constexpr):
    c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = c < C
    if TRAIN:
        cnt = tl.full((), 0.0, ACC)
        mu = tl.full((BLOCK_C,), 0.0, ACC)
        m2 = tl.full((BLOCK_C,), 0.0, ACC)
        for r0 in range(0, M, BLOCK_M):
            r = (r0 + tl.arange(0, BLOCK_M)).to(tl.int64)
            offs = ((r // INNER) * C * INNER + r % INNER)[:, None] + c[None, :] * INNER
            mask = (r < M)[:, None] & cmask[None, :]
            x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(ACC)
            nb = tl.minimum(M - r0, BLOCK_M).to(ACC)
            mb = tl.reduce(x, 0, SUM) / nb
            d = tl.where(mask, x - mb[None, :], 0.0)
            delta = mb - mu
            tot = cnt + nb
            mu += delta * nb / tot
            m2 += tl.reduce(d * d, 0, SUM) + delta * delta * cnt * nb / tot
            cnt = tot
        var = m2 / M
        mm = tl.load(mm_ptr + c, mask=cmask, other=0.0).to(ACC)
        mv = tl.load(mv_ptr + c, mask=cmask, other=0.0).to(ACC)
        tl.store(mm_ptr + c, (mm * momentum + mu * (1.0 - momentum)).to(
            mm_ptr.dtype.element_ty), mask=cmask)
        tl.store(mv_ptr + c, (mv * momentum + var * (1.0 - momentum)).to(
            mv_ptr.dtype.element_ty), mask=cmask)
    else:
        mu = tl.load(mm_ptr + c, mask=cmask, other=0.0).to(ACC)
        var = tl.load(mv_ptr + c, mask=cmask, other=1.0).to(ACC)
    tl.store(mean_ptr + c, mu.to(mean_ptr.dtype.element_ty), mask=cmask)
    tl.store(istd_ptr + c, (1.0 / tl.sqrt(var + eps)).to(istd_ptr.dtype.element_ty),
             mask=cmask)
    if RESET_GAMMA:
        tl.store(gamma_ptr + c, tl.full((BLOCK_C,), 1.0, ACC).to(gamma_ptr.dtype.element_ty),
                 mask=cmask)


@kernel
def _bn_fwd_kernel(x_ptr, y_ptr, mean_ptr, istd_ptr, gamma_ptr, beta_ptr, n, C, INNER,
                   FIX_GAMMA: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = (offs // INNER) % C
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(ACC)
    scale = tl.load(istd_ptr + c, mask=mask, other=0.0).to(ACC)
    if not FIX_GAMMA:
        scale = scale * tl.load(gamma_ptr + c, mask=mask, other=0.0).to(ACC)
    y = (x - tl.load(mean_ptr + c, mask=mask, other=0.0).to(ACC)) * scale + tl.load(
        beta_ptr + c, mask=mask, other=0.0).to(ACC)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def batch_norm_fwd(x, gamma, beta, moving_mean, moving_var, axis=1, eps=1e-3, momentum=0.9,
                   fix_gamma=True, training=True, reset_gamma=None, out=None):
    """Check, allocate, launch: BatchNorm forward; returns (out, mean, invstd).

    Training updates ``moving_mean``/``moving_var`` in place; ``reset_gamma`` (default
    ``fix_gamma``) writes ones into ``gamma`` as MXNet does.
    """
    x = x.contiguous()
    layout = row_layout(tuple(x.shape), axis)
    outer, c, inner = layout
    for name, t in (("gamma", gamma), ("beta", beta), ("moving_mean", moving_mean),
                    ("moving_var", moving_var)):
        if t.numel() != c or not t.is_contiguous():
            raise ValueError(f"BatchNorm {name} of shape {tuple(t.shape)} does not match "
                             f"axis {axis} of data shape {tuple(x.shape)}")
    sd = moving_mean.dtype
    outs = out if out is not None else (None, None, None)
    y = check_out(outs[0], tuple(x.shape), x.dtype, x.device, "out[0]")
    mean = check_out(outs[1], (c,), sd, x.device, "out[1]")
    istd = check_out(outs[2], (c,), sd, x.device, "out[2]")
    block_m, block_c, block = _tiles(x.device)
    acc = acc_type(x.dtype, sd)
    reset = fix_gamma if reset_gamma is None else reset_gamma
    _bn_stats_kernel[(cdiv(c, block_c),)](
        x, mean, istd, moving_mean, moving_var, gamma, outer * inner, c, inner,
        float(momentum), float(eps), TRAIN=training, RESET_GAMMA=reset, ACC=acc,
        BLOCK_M=block_m, BLOCK_C=block_c)
    if x.numel():
        _bn_fwd_kernel[(cdiv(x.numel(), block),)](x, y, mean, istd, gamma, beta, x.numel(),
                                                  c, inner, FIX_GAMMA=fix_gamma, ACC=acc,
                                                  BLOCK=block)
    return y, mean, istd


def batch_norm_fwd_ref(x, gamma, beta, moving_mean, moving_var, axis=1, eps=1e-3,
                       momentum=0.9, fix_gamma=True, training=True, reset_gamma=None):
    """Reference: eager torch reads x ~4 times (mean, var, normalise, affine)."""
    ax = axis % x.dim()
    red = [i for i in range(x.dim()) if i != ax]
    view = [1] * x.dim()
    view[ax] = -1
    if fix_gamma if reset_gamma is None else reset_gamma:
        gamma.fill_(1)
    xc = x.to(moving_mean.dtype)
    if training:
        mean, var = xc.mean(red), xc.var(red, unbiased=False)
        moving_mean.mul_(momentum).add_(mean, alpha=1.0 - momentum)
        moving_var.mul_(momentum).add_(var, alpha=1.0 - momentum)
    else:
        mean, var = moving_mean.clone(), moving_var
    invstd = torch.rsqrt(var + eps)
    scale = invstd if fix_gamma else invstd * gamma
    y = (xc - mean.view(view)) * scale.view(view) + beta.view(view)
    return y.to(x.dtype), mean, invstd


@kernel
def _bn_bwd_dx_kernel(dy_ptr, x_ptr, mean_ptr, istd_ptr, gamma_ptr, dg_ptr, db_ptr, dx_ptr,
                      n, C, INNER, M, FIX_GAMMA: tl.constexpr, GLOBAL: tl.constexpr,
                      ACC: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = (offs // INNER) % C
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(ACC)
    istd = tl.load(istd_ptr + c, mask=mask, other=0.0).to(ACC)
    scale = istd
    if not FIX_GAMMA:
        scale = istd * tl.load(gamma_ptr + c, mask=mask, other=0.0).to(ACC)
    if GLOBAL:
        dx = dy * scale
    else:
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(ACC)
        xhat = (x - tl.load(mean_ptr + c, mask=mask, other=0.0).to(ACC)) * istd
        db = tl.load(db_ptr + c, mask=mask, other=0.0).to(ACC)
        dg = tl.load(dg_ptr + c, mask=mask, other=0.0).to(ACC)
        dx = scale * (dy - db / M - xhat * (dg / M))
    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


def batch_norm_bwd(dy, x, gamma, mean, invstd, axis=1, fix_gamma=True,
                   use_global_stats=False, out=None):
    """Check, allocate, launch: BatchNorm's (dx, dgamma, dbeta) from the saved statistics."""
    dy, x = dy.contiguous(), x.contiguous()
    layout = row_layout(tuple(x.shape), axis)
    outer, c, inner = layout
    if dy.shape != x.shape or mean.numel() != c or invstd.numel() != c or gamma.numel() != c:
        raise ValueError(f"BatchNorm backward: ograd {tuple(dy.shape)}, data {tuple(x.shape)}"
                         f", mean {tuple(mean.shape)}, invstd {tuple(invstd.shape)}")
    sd = mean.dtype
    outs = out if out is not None else (None, None, None)
    dx = check_out(outs[0], tuple(x.shape), x.dtype, x.device, "out[0]")
    dg_out = check_out(outs[1], (c,), sd, x.device, "out[1]")
    db = check_out(outs[2], (c,), sd, x.device, "out[2]")
    dg = torch.empty_like(dg_out) if fix_gamma else dg_out
    _column_sums(dy, x, mean, invstd, dg, db, layout, row_stats=False, inv=True,
                 dgz=dg_out if fix_gamma else None)
    block = _tiles(x.device)[2]
    if x.numel():
        _bn_bwd_dx_kernel[(cdiv(x.numel(), block),)](
            dy, x, mean, invstd, gamma, dg, db, dx, x.numel(), c, inner,
            float(max(outer * inner, 1)), FIX_GAMMA=fix_gamma, GLOBAL=use_global_stats,
            ACC=acc_type(x.dtype, sd), BLOCK=block)
    return dx, dg_out, db


def batch_norm_bwd_ref(dy, x, gamma, mean, invstd, axis=1, fix_gamma=True,
                       use_global_stats=False):
    """Reference: eager torch reads dy and x ~3 times each."""
    ax = axis % x.dim()
    red = [i for i in range(x.dim()) if i != ax]
    view = [1] * x.dim()
    view[ax] = -1
    dyc = dy.to(mean.dtype)
    xhat = (x.to(mean.dtype) - mean.view(view)) * invstd.view(view)
    dbeta, dgamma = dyc.sum(red), (dyc * xhat).sum(red)
    scale = invstd if fix_gamma else invstd * gamma
    if use_global_stats:
        dx = dyc * scale.view(view)
    else:
        m = x.numel() // x.shape[ax]
        dx = scale.view(view) * (dyc - (dbeta / m).view(view) - xhat * (dgamma / m).view(view))
    return dx.to(x.dtype), torch.zeros_like(dgamma) if fix_gamma else dgamma, dbeta


# ---------------------------------------------------------------- table entries

def _gen():
    return torch.Generator().manual_seed(0)


def _rand(shape, gen, dtype, device, scale=1.0, shift=0.0):
    return (torch.randn(shape, generator=gen) * scale + shift).to(device=device, dtype=dtype)


def _make_ln(axis=-1, backward=False):
    def make(dtype, device, shape):
        gen = _gen()
        x = _rand(shape, gen, dtype, device, 2.0, 0.5)
        gamma = _rand((shape[axis],), gen, dtype, device)
        beta = _rand((shape[axis],), gen, dtype, device)
        if not backward:
            return (x, gamma, beta), {"axis": axis, "eps": 1e-5}
        _, mean, std = layer_norm_fwd_ref(x, gamma, beta, axis)
        return (_rand(shape, gen, dtype, device), x, gamma, mean, std), {"axis": axis}
    return make


def _make_l2(mode):
    def make(dtype, device, shape):
        return (_rand(shape, _gen(), dtype, device),), {"mode": mode, "eps": 1e-6}
    return make


def _make_bn(axis=1, backward=False, **attrs):
    def make(dtype, device, shape):
        gen = _gen()
        sd = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
        c = shape[axis]
        x = _rand(shape, gen, dtype, device, 2.0, 1.0)
        gamma, beta = _rand((c,), gen, sd, device), _rand((c,), gen, sd, device)
        if backward:
            mean = _rand((c,), gen, sd, device)
            istd = torch.rand((c,), generator=gen).to(device=device, dtype=sd) + 0.5
            return (_rand(shape, gen, dtype, device), x, gamma, mean, istd), {
                "axis": axis, **attrs}
        mm = _rand((c,), gen, sd, device)
        mv = torch.rand((c,), generator=gen).to(device=device, dtype=sd) + 0.5
        return (x, gamma, beta, mm, mv), {"axis": axis, **attrs}
    return make


_ALL = (torch.float32, torch.float16, torch.bfloat16)
_BENCH = ((4096, 4096), (1024, 16384), (512, 32768))
_BN_BENCH = ((256, 64, 32, 32), (64, 256, 32, 32))
_TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (4e-3, 4e-3),
        torch.bfloat16: (3e-2, 3e-2)}


def _spec(name, fn, ref, make, shapes, nbytes, dtypes=_ALL, bench=_BENCH):
    return KernelSpec(name=name, fn=fn, ref=ref, make=make, shapes=shapes, bench_shapes=bench,
                      dtypes=dtypes, tol=_TOL, bytes=nbytes, family="norm")


def _rw(k_read, k_write):
    """Bytes of a launch reading its first argument's size k_read times, writing k_write."""
    return lambda x, *a, **kw: tensor_bytes(x) * (k_read + k_write)


KERNELS = [
    _spec("layer_norm_fwd", layer_norm_fwd, layer_norm_fwd_ref, _make_ln(),
          ((3, 37), (5, 129)), _rw(1, 1)),
    _spec("layer_norm_fwd_axis1", layer_norm_fwd, layer_norm_fwd_ref, _make_ln(axis=1),
          ((7, 13, 3), (2, 37, 1)), _rw(1, 1), dtypes=(torch.float32,)),
    _spec("layer_norm_bwd", layer_norm_bwd, layer_norm_bwd_ref, _make_ln(backward=True),
          ((3, 37), (5, 129)), _rw(2, 1)),
    _spec("layer_norm_bwd_axis0", layer_norm_bwd, layer_norm_bwd_ref,
          _make_ln(axis=0, backward=True), ((13, 7, 3),), _rw(2, 1), dtypes=(torch.float32,)),
    _spec("l2_normalization_instance", l2_normalization, l2_normalization_ref,
          _make_l2("instance"), ((3, 37), (2, 5, 13), (4,)), _rw(1, 1)),
    _spec("l2_normalization_channel", l2_normalization, l2_normalization_ref,
          _make_l2("channel"), ((2, 37, 3), (3, 5, 2, 3)), _rw(1, 1), dtypes=(torch.float32,)),
    _spec("l2_normalization_spatial", l2_normalization, l2_normalization_ref,
          _make_l2("spatial"), ((2, 3, 5, 7),), _rw(1, 1), dtypes=(torch.float32,)),
    _spec("batch_norm_fwd_train", batch_norm_fwd, batch_norm_fwd_ref,
          _make_bn(fix_gamma=False), ((5, 3, 7), (3, 37, 2, 3)), _rw(2, 1),
          dtypes=(torch.float32, torch.float16), bench=_BN_BENCH),
    _spec("batch_norm_fwd_train_fix_gamma_last_axis", batch_norm_fwd, batch_norm_fwd_ref,
          _make_bn(axis=-1), ((37, 5),), _rw(2, 1), dtypes=(torch.float32,),
          bench=((16384, 1024),)),
    _spec("batch_norm_fwd_inference", batch_norm_fwd, batch_norm_fwd_ref,
          _make_bn(fix_gamma=False, training=False), ((4, 3, 5),), _rw(1, 1),
          dtypes=(torch.float32, torch.float16), bench=_BN_BENCH),
    _spec("batch_norm_bwd", batch_norm_bwd, batch_norm_bwd_ref, _make_bn(
          backward=True, fix_gamma=False), ((5, 3, 7), (3, 37, 2, 3)), _rw(4, 1),
          dtypes=(torch.float32, torch.float16), bench=_BN_BENCH),
    _spec("batch_norm_bwd_fix_gamma_global", batch_norm_bwd, batch_norm_bwd_ref, _make_bn(
          backward=True, use_global_stats=True), ((4, 3, 5),), _rw(3, 1),
          dtypes=(torch.float32,), bench=_BN_BENCH),
]
