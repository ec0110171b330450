"""Softmax, log-softmax, the SoftmaxOutput gradient and softmax_cross_entropy, by rows.

Rows are ``(outer, n, inner)`` views (see ``kernels/reduce.py``). With ``z = x / T``::

    softmax      y = exp(z - m) / s           m = max(z), s = sum(exp(z - m))
    log_softmax  y = z - m - log(s)

computed online (Triton tutorial 02, blocked): one pass keeps the running max ``m`` and
rescales the running sum ``s`` by ``exp(m_old - m_new)``; a second pass writes ``y``. With a
``length`` per row only the first ``length`` entries take part and the rest are 0.

Backward from the output (``dy`` the output gradient)::

    softmax      dx = y * (dy - sum(dy * y)) / T
    log_softmax  dx = (dy - exp(y) * sum(dy)) / T

SoftmaxOutput's data gradient, with ``p`` its output, ``C`` the classes, ``a`` the
smoothing and ``t = 1 - a`` at ``label`` and ``a / (C - 1)`` elsewhere (or ``t`` a
probability row of the label's data when the label has the data's shape)::

    dx = (p - t) * keep * grad_scale / norm    keep = label != ignore_label (use_ignore)

``norm`` is 1, the batch size or the kept-row count (counted by an ``atomic_add`` kernel
first), times the positions per sample for ``multi_output`` (not for ``valid``).

softmax_cross_entropy (``x`` (R, N), integer labels, head gradient ``dy`` of shape (1,))::

    loss = -sum_i log(softmax(x)[i, label_i])     dx = (softmax(x) - one_hot(label)) * dy

the loss as a softmax then one program gathering and summing the picked logs; the gradient
as one fused row kernel (max/sum pass, then the write).

Few long rows are cut into parts (two launches each way; see "few long rows" below).

Bytes moved: forward reads x twice (once when a row fits one block on GPU, from cache) and
writes y; backward reads dy and y twice and writes dx; SoftmaxOutput reads p and the labels
and writes dx.
"""
from __future__ import annotations

import math

import torch
import triton.language as tl

from .reduce import (
    COLUMN_MIN_INNER,
    MAX,
    SUM,
    acc_type,
    check_out,
    launch_opts,
    row_block,
    row_layout,
    row_splits,
)
from .runtime import block_for, cdiv, kernel
from .table import KernelSpec, tensor_bytes


@kernel
def _softmax_fwd_kernel(x_ptr, y_ptr, len_ptr, N, INNER, temp, LOG: tl.constexpr,
                        HAS_LEN: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
                        COLS: tl.constexpr):
    """Softmax over the middle axis of (outer, N, INNER) for COLS adjacent rows (o, i) at
    once: BLOCK x COLS tiles, so that with a wide INNER (axis 0 of a matrix) each load is
    coalesced; COLS = 1 for the last axis."""
    col_blocks = (INNER + COLS - 1) // COLS
    pid = tl.program_id(0).to(tl.int64)
    cols = (pid % col_blocks) * COLS + tl.arange(0, COLS)
    row = (pid // col_blocks) * INNER + cols  # the (o, i) rows of this program
    base = (pid // col_blocks) * N * INNER + cols
    live = cols < INNER
    n = tl.full((COLS,), 0, tl.int64) + N
    if HAS_LEN:
        n = tl.minimum(tl.load(len_ptr + row, mask=live, other=0).to(tl.int64), N)
    m = tl.full((COLS,), float("-inf"), ACC)
    s = tl.full((COLS,), 0.0, ACC)
    for start in range(0, N, BLOCK):
        k = start + tl.arange(0, BLOCK)
        ok = (k[:, None] < N) & live[None, :]
        x = tl.load(x_ptr + base[None, :] + k[:, None] * INNER, mask=ok, other=0.0).to(ACC)
        z = tl.where(k[:, None] < n[None, :], x / temp, float("-inf"))
        m_new = tl.maximum(m, tl.reduce(z, 0, MAX))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - m_safe) + tl.reduce(tl.exp(z - m_safe[None, :]), 0, SUM)
        m = m_new
    for start in range(0, N, BLOCK):
        k = start + tl.arange(0, BLOCK)
        ok = (k[:, None] < N) & live[None, :]
        x = tl.load(x_ptr + base[None, :] + k[:, None] * INNER, mask=ok, other=0.0).to(ACC)
        z = x / temp
        if LOG:
            y = z - m[None, :] - tl.log(s)[None, :]
        else:
            y = tl.exp(z - m[None, :]) / s[None, :]
        y = tl.where(k[:, None] < n[None, :], y, 0.0)
        tl.store(y_ptr + base[None, :] + k[:, None] * INNER, y.to(y_ptr.dtype.element_ty),
                 mask=ok)


# ---------------------------------------------------------------- few long rows, in parts
# A few long rows (a (4, 1M) softmax) would leave most of a GPU idle with one program per
# row: each row is cut into parts (``reduce.row_splits``). The forward's first launch
# writes every part's (max, sum of exp(z - max)); the second combines a row's parts
# (max of maxes, sums rescaled) and writes its part of y. The backward's first launch
# writes each part's sum of dy * y (of dy for log-softmax); the second adds them and
# writes its part of dx. Same bytes as the one-launch kernels, all SMs busy.

@kernel
def _softmax_part_kernel(x_ptr, st_ptr, len_ptr, N, CHUNK, temp, HAS_LEN: tl.constexpr,
                         ACC: tl.constexpr, BLOCK: tl.constexpr):
    """st[r, j] = (max, sum of exp(z - max)) of z = x[r] / temp over part j of row r."""
    r = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1)
    lo = j * CHUNK
    hi = tl.minimum(N, lo + CHUNK)
    n = N
    if HAS_LEN:
        n = tl.minimum(tl.load(len_ptr + r).to(tl.int64), N)
    m = tl.full((), float("-inf"), ACC)
    s = tl.full((), 0.0, ACC)
    for start in range(lo, hi, BLOCK):
        k = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + r * N + k, mask=k < hi, other=0.0).to(ACC)
        z = tl.where((k < n) & (k < hi), x / temp, float("-inf"))
        m_new = tl.maximum(m, tl.reduce(z, 0, MAX))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - m_safe) + tl.reduce(tl.exp(z - m_safe), 0, SUM)
        m = m_new
    at = (r * tl.num_programs(1) + j) * 2
    tl.store(st_ptr + at, m)
    tl.store(st_ptr + at + 1, s)


@kernel
def _softmax_part_write_kernel(x_ptr, y_ptr, st_ptr, len_ptr, N, CHUNK, S, temp,
                               LOG: tl.constexpr, HAS_LEN: tl.constexpr, ACC: tl.constexpr,
                               BLOCK: tl.constexpr, SB: tl.constexpr):
    """Part j of row r of y from the row's part statistics (the row's max and sum)."""
    r = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1)
    parts = tl.arange(0, SB)
    ms = tl.load(st_ptr + (r * S + parts) * 2, mask=parts < S, other=float("-inf"))
    ss = tl.load(st_ptr + (r * S + parts) * 2 + 1, mask=parts < S, other=0.0)
    m = tl.reduce(ms, 0, MAX)
    m_safe = tl.where(m == float("-inf"), 0.0, m)
    total = tl.reduce(ss * tl.exp(ms - m_safe), 0, SUM)
    lo = j * CHUNK
    hi = tl.minimum(N, lo + CHUNK)
    n = N
    if HAS_LEN:
        n = tl.minimum(tl.load(len_ptr + r).to(tl.int64), N)
    for start in range(lo, hi, BLOCK):
        k = start + tl.arange(0, BLOCK)
        z = tl.load(x_ptr + r * N + k, mask=k < hi, other=0.0).to(ACC) / temp
        if LOG:
            y = z - m - tl.log(total)
        else:
            y = tl.exp(z - m) / total
        y = tl.where(k < n, y, 0.0)
        tl.store(y_ptr + r * N + k, y.to(y_ptr.dtype.element_ty), mask=k < hi)


@kernel
def _softmax_bwd_part_kernel(dy_ptr, y_ptr, part_ptr, N, CHUNK, LOG: tl.constexpr,
                             ACC: tl.constexpr, BLOCK: tl.constexpr):
    """part[r, j] = sum of dy * y (LOG: of dy) over part j of row r."""
    r = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1)
    lo = j * CHUNK
    hi = tl.minimum(N, lo + CHUNK)
    acc = tl.full((), 0.0, ACC)
    for start in range(lo, hi, BLOCK):
        k = start + tl.arange(0, BLOCK)
        dy = tl.load(dy_ptr + r * N + k, mask=k < hi, other=0.0).to(ACC)
        if LOG:
            acc += tl.reduce(dy, 0, SUM)
        else:
            acc += tl.reduce(dy * tl.load(y_ptr + r * N + k, mask=k < hi, other=0.0).to(ACC),
                             0, SUM)
    tl.store(part_ptr + r * tl.num_programs(1) + j, acc)


@kernel
def _softmax_bwd_part_write_kernel(dy_ptr, y_ptr, dx_ptr, part_ptr, N, CHUNK, S, temp,
                                   LOG: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
                                   SB: tl.constexpr):
    """Part j of row r of dx from the sum of the row's parts."""
    r = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1)
    parts = tl.arange(0, SB)
    acc = tl.reduce(tl.load(part_ptr + r * S + parts, mask=parts < S, other=0.0), 0, SUM)
    lo = j * CHUNK
    hi = tl.minimum(N, lo + CHUNK)
    for start in range(lo, hi, BLOCK):
        k = start + tl.arange(0, BLOCK)
        dy = tl.load(dy_ptr + r * N + k, mask=k < hi, other=0.0).to(ACC)
        y = tl.load(y_ptr + r * N + k, mask=k < hi, other=0.0).to(ACC)
        if LOG:
            dx = dy - tl.exp(y) * acc
        else:
            dx = y * (dy - acc)
        tl.store(dx_ptr + r * N + k, (dx / temp).to(dx_ptr.dtype.element_ty), mask=k < hi)


def _parts(rows: int, n: int, inner: int, device: torch.device) -> tuple[int, int]:
    """(parts, part length) of each row; one part unless few long last-axis rows."""
    splits = row_splits(rows, n, device) if inner == 1 else 1
    chunk = -(-n // splits)
    return -(-n // chunk), chunk


def _softmax_fwd_parts(x, y, length, rows: int, n: int, parts: int, chunk: int, temp: float,
                       log: bool, acc) -> None:
    stats = torch.empty((rows, parts, 2), device=x.device,
                        dtype=torch.float64 if acc == tl.float64 else torch.float32)
    block = row_block(chunk, x.device)
    flags = {"HAS_LEN": length is not None, "ACC": acc, "BLOCK": block,
             **launch_opts(block, x.device)}
    lens = length if length is not None else x
    _softmax_part_kernel[(rows, parts)](x, stats, lens, n, chunk, temp, **flags)
    _softmax_part_write_kernel[(rows, parts)](x, y, stats, lens, n, chunk, parts, temp,
                                              LOG=log, SB=block_for(parts, floor=2), **flags)


def _softmax_bwd_parts(dy, y, dx, rows: int, n: int, parts: int, chunk: int, temp: float,
                       log: bool, acc) -> None:
    sums = torch.empty((rows, parts), device=y.device,
                       dtype=torch.float64 if acc == tl.float64 else torch.float32)
    block = row_block(chunk, y.device)
    flags = {"LOG": log, "ACC": acc, "BLOCK": block, **launch_opts(block, y.device)}
    _softmax_bwd_part_kernel[(rows, parts)](dy, y, sums, n, chunk, **flags)
    _softmax_bwd_part_write_kernel[(rows, parts)](dy, y, dx, sums, n, chunk, parts, temp,
                                                  SB=block_for(parts, floor=2), **flags)


def _tiles(n: int, inner: int, device: torch.device) -> tuple[int, int]:
    """(BLOCK, COLS) of the softmax kernels: COLS adjacent rows per program where the
    reduced axis has a wide inner part (coalesced tiles), else one row and a long block."""
    if inner < COLUMN_MIN_INNER:
        return row_block(n, device), 1
    cols = 64 if device.type == "cuda" else 16
    return (32 if device.type == "cuda" else 8), min(cols, block_for(inner, cap=cols, floor=16))


def softmax_fwd(x: torch.Tensor, axis: int = -1, temperature: float | None = None,
                length: torch.Tensor | None = None, log: bool = False,
                dtype: torch.dtype | None = None, out: torch.Tensor | None = None):
    """Check, allocate, launch: (log-)softmax of ``x`` along ``axis``; ``length`` masks rows."""
    x = x.contiguous()
    dtype = dtype or x.dtype
    y = check_out(out, tuple(x.shape), dtype, x.device)
    if x.numel() == 0:
        return y
    outer, n, inner = row_layout(tuple(x.shape), axis)
    if length is not None:
        length = length.contiguous()
        if length.numel() != outer * inner:
            raise ValueError(f"length has {length.numel()} entries for {outer * inner} rows "
                             f"of data of shape {tuple(x.shape)} along axis {axis}")
    temp = 1.0 if temperature is None else float(temperature)
    parts, chunk = _parts(outer * inner, n, inner, x.device)
    if parts > 1:
        _softmax_fwd_parts(x, y, length, outer, n, parts, chunk, temp, log,
                           acc_type(x.dtype, dtype))
        return y
    block, cols = _tiles(n, inner, x.device)
    _softmax_fwd_kernel[(outer * cdiv(inner, cols),)](
        x, y, length if length is not None else x, n, inner,
        1.0 if temperature is None else float(temperature), LOG=log,
        HAS_LEN=length is not None, ACC=acc_type(x.dtype, dtype), BLOCK=block, COLS=cols,
        **launch_opts(block * cols, x.device))
    return y


def softmax_fwd_ref(x, axis=-1, temperature=None, length=None, log=False, dtype=None):
    """Reference: 4 passes over x in eager torch (max, exp-sum, normalise, cast)."""
    dtype = dtype or x.dtype
    z = x.to(torch.float64 if torch.float64 in (x.dtype, dtype) else torch.float32)
    if temperature is not None:
        z = z / temperature
    if length is None:
        return (torch.log_softmax(z, axis) if log else torch.softmax(z, axis)).to(dtype)
    ax = axis % x.dim()
    pos = torch.arange(x.shape[ax], device=x.device).view([-1] + [1] * (x.dim() - 1 - ax))
    keep = pos < length.long().reshape([1 if i == ax else d for i, d in enumerate(x.shape)])
    y = torch.softmax(z.masked_fill(~keep, float("-inf")), ax)
    return y.masked_fill(~keep, 0.0).to(dtype)


@kernel
def _softmax_bwd_kernel(dy_ptr, y_ptr, dx_ptr, N, INNER, temp, LOG: tl.constexpr,
                        ACC: tl.constexpr, BLOCK: tl.constexpr, COLS: tl.constexpr):
    """The (log-)softmax data gradient for COLS adjacent rows, tiled as the forward."""
    col_blocks = (INNER + COLS - 1) // COLS
    pid = tl.program_id(0).to(tl.int64)
    cols = (pid % col_blocks) * COLS + tl.arange(0, COLS)
    base = (pid // col_blocks) * N * INNER + cols
    live = cols < INNER
    acc = tl.full((COLS,), 0.0, ACC)
    for start in range(0, N, BLOCK):
        k = start + tl.arange(0, BLOCK)
        offs = base[None, :] + k[:, None] * INNER
        mask = (k[:, None] < N) & live[None, :]
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(ACC)
        if LOG:
            acc += tl.reduce(dy, 0, SUM)
        else:
            acc += tl.reduce(dy * tl.load(y_ptr + offs, mask=mask, other=0.0).to(ACC), 0, SUM)
    for start in range(0, N, BLOCK):
        k = start + tl.arange(0, BLOCK)
        offs = base[None, :] + k[:, None] * INNER
        mask = (k[:, None] < N) & live[None, :]
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(ACC)
        y = tl.load(y_ptr + offs, mask=mask, other=0.0).to(ACC)
        if LOG:
            dx = dy - tl.exp(y) * acc[None, :]
        else:
            dx = y * (dy - acc[None, :])
        tl.store(dx_ptr + offs, (dx / temp).to(dx_ptr.dtype.element_ty), mask=mask)


def softmax_bwd(dy: torch.Tensor, y: torch.Tensor, axis: int = -1,
                temperature: float | None = None, log: bool = False,
                dtype: torch.dtype | None = None, out: torch.Tensor | None = None):
    """Check, allocate, launch: the data gradient of (log-)softmax from its output ``y``."""
    if dy.shape != y.shape:
        raise ValueError(f"ograd shape {tuple(dy.shape)} differs from output shape "
                         f"{tuple(y.shape)}")
    dy, y = dy.contiguous(), y.contiguous()
    dtype = dtype or y.dtype
    dx = check_out(out, tuple(y.shape), dtype, y.device)
    if y.numel() == 0:
        return dx
    outer, n, inner = row_layout(tuple(y.shape), axis)
    parts, chunk = _parts(outer * inner, n, inner, y.device)
    if parts > 1:
        _softmax_bwd_parts(dy, y, dx, outer, n, parts, chunk,
                           1.0 if temperature is None else float(temperature), log,
                           acc_type(dy.dtype, y.dtype, dtype))
        return dx
    block, cols = _tiles(n, inner, y.device)
    _softmax_bwd_kernel[(outer * cdiv(inner, cols),)](
        dy, y, dx, n, inner, 1.0 if temperature is None else float(temperature), LOG=log,
        ACC=acc_type(dy.dtype, y.dtype, dtype), BLOCK=block, COLS=cols,
        **launch_opts(block * cols, y.device))
    return dx


def softmax_bwd_ref(dy, y, axis=-1, temperature=None, log=False, dtype=None):
    """Reference: reads dy and y twice, writes dx (plus eager temporaries)."""
    wide = torch.float64 if torch.float64 in (dy.dtype, y.dtype, dtype) else torch.float32
    dy, yw = dy.to(wide), y.to(wide)
    if log:
        dx = dy - torch.exp(yw) * dy.sum(axis, keepdim=True)
    else:
        dx = yw * (dy - (dy * yw).sum(axis, keepdim=True))
    return (dx / (temperature or 1.0)).to(dtype or y.dtype)


# ---------------------------------------------------------------- SoftmaxOutput gradient

@kernel
def _count_kept_kernel(lab_ptr, cnt_ptr, R, ignore, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    lab = tl.load(lab_ptr + offs, mask=offs < R, other=ignore)
    kept = tl.where(lab != ignore, 1.0, 0.0)
    tl.atomic_add(cnt_ptr, tl.reduce(kept, 0, SUM))


@kernel
def _softmax_output_bwd_kernel(p_ptr, lab_ptr, cnt_ptr, dx_ptr, N, INNER, scale, ignore,
                               on, off, PROB: tl.constexpr, USE_IGNORE: tl.constexpr,
                               VALID: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = (row // INNER) * N * INNER + row % INNER
    if VALID:
        scale = scale / tl.maximum(tl.load(cnt_ptr), 1.0)
    if not PROB:
        lab = tl.load(lab_ptr + row)
        idx = tl.minimum(tl.maximum(lab.to(tl.int64), 0), N - 1)
        if USE_IGNORE:
            scale = tl.where(lab != ignore, scale, 0.0)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        offs = base + cols * INNER
        p = tl.load(p_ptr + offs, mask=cols < N, other=0.0).to(ACC)
        if PROB:
            t = tl.load(lab_ptr + offs, mask=cols < N, other=0.0).to(ACC)
        else:
            t = tl.where(cols == idx, on, off)
        tl.store(dx_ptr + offs, ((p - t) * scale).to(dx_ptr.dtype.element_ty), mask=cols < N)


def _so_layout(shape: tuple, multi_output: bool, preserve_shape: bool) -> tuple:
    if multi_output:
        return shape[0], shape[1], math.prod(shape[2:])
    if preserve_shape:
        return math.prod(shape[:-1]), shape[-1], 1
    return shape[0], math.prod(shape[1:]), 1


def softmax_output_bwd(p: torch.Tensor, label: torch.Tensor, grad_scale: float = 1.0,
                       ignore_label: float = -1.0, use_ignore: bool = False,
                       multi_output: bool = False, preserve_shape: bool = False,
                       normalization: str = "null", smooth_alpha: float = 0.0, out=None):
    """Check, allocate, launch: SoftmaxOutput's data gradient from its output ``p``."""
    p, label = p.contiguous(), label.contiguous()
    dx = check_out(out, tuple(p.shape), p.dtype, p.device)
    outer, n, inner = _so_layout(tuple(p.shape), multi_output, preserve_shape)
    rows = outer * inner
    prob = tuple(label.shape) == tuple(p.shape)
    if not prob and label.numel() != rows:
        raise ValueError(f"label shape {tuple(label.shape)} does not match {rows} rows of "
                         f"output shape {tuple(p.shape)}")
    if p.numel() == 0:
        return dx
    norm = {"batch": float(p.shape[0])}.get(normalization, 1.0)
    count = torch.zeros(1, dtype=torch.float32, device=p.device)
    valid_count = normalization == "valid" and use_ignore and not prob
    if valid_count:
        block = 1024 if p.device.type == "cuda" else 64
        _count_kept_kernel[(cdiv(rows, block),)](label, count, rows, float(ignore_label),
                                                 BLOCK=block)
    elif normalization == "valid":
        norm = float(max(rows, 1))
    if multi_output and normalization != "valid":
        norm *= rows / p.shape[0]
    block = row_block(n, p.device)
    _softmax_output_bwd_kernel[(rows,)](
        p, label, count, dx, n, inner, grad_scale / norm, float(ignore_label),
        1.0 - smooth_alpha, smooth_alpha / max(n - 1, 1), PROB=prob,
        USE_IGNORE=use_ignore and not prob, VALID=valid_count, ACC=acc_type(p.dtype),
        BLOCK=block, **launch_opts(block, p.device))
    return dx


def softmax_output_bwd_ref(p, label, grad_scale=1.0, ignore_label=-1.0, use_ignore=False,
                           multi_output=False, preserve_shape=False, normalization="null",
                           smooth_alpha=0.0):
    """Reference: reads p and labels, builds a one-hot target, writes dx (3 full passes)."""
    outer, n, inner = _so_layout(tuple(p.shape), multi_output, preserve_shape)
    p2 = p.reshape(outer, n, inner).movedim(1, -1).reshape(-1, n).double()
    if tuple(label.shape) == tuple(p.shape):
        t = label.reshape(outer, n, inner).movedim(1, -1).reshape(-1, n).double()
        keep = torch.ones(t.shape[0], dtype=torch.bool, device=p.device)
    else:
        lab = label.reshape(-1)
        t = torch.full_like(p2, smooth_alpha / max(n - 1, 1))
        t.scatter_(1, lab.long().clamp(0, n - 1)[:, None], 1.0 - smooth_alpha)
        keep = lab != ignore_label if use_ignore else torch.ones_like(lab, dtype=torch.bool)
    norm = {"batch": float(p.shape[0]), "valid": float(max(int(keep.sum()), 1))}.get(
        normalization, 1.0)
    if multi_output and normalization != "valid":
        norm *= p2.shape[0] / p.shape[0]
    dx = (p2 - t) * keep[:, None] * (grad_scale / norm)
    return dx.reshape(outer, inner, n).movedim(-1, 1).reshape(p.shape).to(p.dtype).contiguous()


# ---------------------------------------------------------------- softmax_cross_entropy

@kernel
def _ce_loss_kernel(p_ptr, lab_ptr, out_ptr, R, N, ACC: tl.constexpr, BLOCK: tl.constexpr):
    """out[0] = -sum_i log(p_flat[clamp(i * N + label[i])]), one program over the rows."""
    acc = tl.full((), 0.0, ACC)
    for start in range(0, R, BLOCK):
        rows = start + tl.arange(0, BLOCK)
        mask = rows < R
        lab = tl.load(lab_ptr + rows, mask=mask, other=0).to(tl.int64)
        at = tl.minimum(tl.maximum(rows.to(tl.int64) * N + lab, 0), R * N - 1)
        p = tl.load(p_ptr + at, mask=mask, other=1.0).to(ACC)
        acc += tl.reduce(tl.where(mask, -tl.log(p), 0.0), 0, SUM)
    tl.store(out_ptr, acc.to(out_ptr.dtype.element_ty))


def softmax_ce_loss(x: torch.Tensor, label: torch.Tensor, out=None) -> torch.Tensor:
    """Check, allocate, launch: ``-sum_i log(softmax(x)[i, label[i]])`` of (R, N) data as a
    (1,) tensor; MXNet's flat pick ``i * N + label`` (clamped to the array) for bad labels."""
    if x.dim() != 2 or label.numel() != x.shape[0]:
        raise ValueError(f"softmax_ce_loss needs (R, N) data and R labels, got data "
                         f"{tuple(x.shape)} and label {tuple(label.shape)}")
    loss = check_out(out, (1,), x.dtype, x.device)
    y = softmax_fwd(x, axis=1, dtype=torch.float64 if x.dtype == torch.float64 else
                    torch.float32)
    block = 1024 if x.device.type == "cuda" else 32
    _ce_loss_kernel[(1,)](y, label.contiguous(), loss, x.shape[0], x.shape[1],
                          ACC=acc_type(x.dtype), BLOCK=block)
    return loss


def softmax_ce_loss_ref(x, label):
    """Reference: softmax (4 passes over x), a gather, a log and a sum."""
    r, n = x.shape
    y = torch.softmax(x.to(torch.float64 if x.dtype == torch.float64 else torch.float32), 1)
    at = (torch.arange(r, device=x.device) * n + label.to(torch.int64)).clamp(0, r * n - 1)
    return (-torch.log(y.reshape(-1)[at]).sum()).reshape(1).to(x.dtype)


@kernel
def _ce_bwd_kernel(x_ptr, lab_ptr, dy_ptr, dx_ptr, N, ACC: tl.constexpr, BLOCK: tl.constexpr):
    """dx[row] = (softmax(x[row]) - one_hot(label[row])) * dy[0]; online max/sum pass."""
    row = tl.program_id(0).to(tl.int64)
    base = row * N
    m = tl.full((), float("-inf"), ACC)
    s = tl.full((), 0.0, ACC)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + cols, mask=cols < N, other=float("-inf")).to(ACC)
        m_new = tl.maximum(m, tl.reduce(x, 0, MAX))
        s = s * tl.exp(m - m_new) + tl.reduce(tl.exp(x - m_new), 0, SUM)
        m = m_new
    lab = tl.load(lab_ptr + row).to(tl.int64)
    dy = tl.load(dy_ptr).to(ACC)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + cols, mask=cols < N, other=0.0).to(ACC)
        t = tl.where(cols == lab, 1.0, 0.0)
        dx = (tl.exp(x - m) / s - t) * dy
        tl.store(dx_ptr + base + cols, dx.to(dx_ptr.dtype.element_ty), mask=cols < N)


def softmax_ce_bwd(dy: torch.Tensor, x: torch.Tensor, label: torch.Tensor,
                   out=None) -> torch.Tensor:
    """Check, allocate, launch: the data gradient of :func:`softmax_ce_loss` (an out-of-range
    label gives a zero one-hot row, as in MXNet)."""
    if x.dim() != 2 or label.numel() != x.shape[0] or dy.numel() != 1:
        raise ValueError(f"softmax_ce_bwd needs (R, N) data, R labels and one head gradient, "
                         f"got {tuple(x.shape)}, {tuple(label.shape)}, {tuple(dy.shape)}")
    x = x.contiguous()
    dx = check_out(out, tuple(x.shape), x.dtype, x.device)
    if x.numel():
        block = row_block(x.shape[1], x.device)
        _ce_bwd_kernel[(x.shape[0],)](x, label.contiguous(), dy.contiguous(), dx, x.shape[1],
                                      ACC=acc_type(x.dtype), BLOCK=block,
                                      **launch_opts(block, x.device))
    return dx


def softmax_ce_bwd_ref(dy, x, label):
    """Reference: softmax, a one-hot comparison, a subtraction and a scale (5 passes)."""
    wide = torch.float64 if x.dtype == torch.float64 else torch.float32
    hot = label.to(torch.int64)[:, None] == torch.arange(x.shape[1], device=x.device)
    return ((torch.softmax(x.to(wide), 1) - hot.to(wide)) * dy.to(wide).reshape(())).to(x.dtype)


# ---------------------------------------------------------------- table entries

def _make_softmax(axis=-1, temperature=None, log=False, with_length=False):
    def make(dtype, device, shape):
        gen = torch.Generator().manual_seed(0)
        x = (torch.randn(shape, generator=gen) * 3).to(device=device, dtype=dtype)
        kw = {"axis": axis, "temperature": temperature, "log": log}
        if with_length:
            rows = [d for i, d in enumerate(shape) if i != axis % len(shape)]
            kw["length"] = torch.randint(0, shape[axis] + 2, rows, generator=gen).to(
                device=device, dtype=torch.int32)
        return (x,), kw
    return make


def _make_softmax_bwd(axis=-1, temperature=None, log=False):
    def make(dtype, device, shape):
        gen = torch.Generator().manual_seed(0)
        z = torch.randn(shape, generator=gen)
        y = torch.log_softmax(z, axis) if log else torch.softmax(z, axis)
        dy = torch.randn(shape, generator=gen)
        return (dy.to(device=device, dtype=dtype), y.to(device=device, dtype=dtype)), {
            "axis": axis, "temperature": temperature, "log": log}
    return make


def _make_so(prob=False, **attrs):
    def make(dtype, device, shape):
        gen = torch.Generator().manual_seed(0)
        outer, n, inner = _so_layout(shape, attrs.get("multi_output", False),
                                     attrs.get("preserve_shape", False))
        p = torch.softmax(torch.randn(shape, generator=gen), dim=-1)
        if prob:
            label = torch.softmax(torch.randn(shape, generator=gen), dim=-1)
        else:
            lab_shape = (shape[0],) + tuple(shape[2:]) if attrs.get("multi_output") else (
                tuple(shape[:-1]) if attrs.get("preserve_shape") else (shape[0],))
            label = torch.randint(0, n, lab_shape, generator=gen).float()
        return (p.to(device=device, dtype=dtype), label.to(device=device, dtype=dtype)), attrs
    return make


def _make_ce(dtype, device, shape):
    gen = torch.Generator().manual_seed(0)
    x = (torch.randn(shape, generator=gen) * 3).to(device=device, dtype=dtype)
    label = torch.randint(-1, shape[1] + 1, shape[:1], generator=gen).float().to(device)
    return (x, label), {}


def _make_ce_bwd(dtype, device, shape):
    (x, label), _ = _make_ce(dtype, device, shape)
    return (torch.full((1,), 0.75, dtype=dtype, device=device), x, label), {}


_ALL = (torch.float32, torch.float16, torch.bfloat16)
_BENCH = ((4096, 4096), (1024, 16384), (512, 32768))
_TOL = {torch.float32: (1e-5, 1e-6), torch.float16: (2e-3, 2e-3),
        torch.bfloat16: (1.6e-2, 1e-2)}
_io = {"bytes": lambda x, **kw: tensor_bytes(x, x)}
_io3 = {"bytes": lambda dy, y, **kw: tensor_bytes(dy, y, y)}
_io_so = {"bytes": lambda p, label, **kw: tensor_bytes(p, label, p)}


def _spec(name, fn, ref, make, shapes, io, dtypes=_ALL):
    return KernelSpec(name=name, fn=fn, ref=ref, make=make, shapes=shapes,
                      bench_shapes=_BENCH, dtypes=dtypes, tol=_TOL, family="softmax", **io)


KERNELS = [
    _spec("softmax_fwd", softmax_fwd, softmax_fwd_ref, _make_softmax(),
          ((3, 37), (5, 129), (1, 1)), _io),
    _spec("softmax_fwd_axis1_temperature", softmax_fwd, softmax_fwd_ref,
          _make_softmax(axis=1, temperature=2.0), ((7, 13, 3), (2, 37, 5)), _io),
    _spec("log_softmax_fwd", softmax_fwd, softmax_fwd_ref, _make_softmax(log=True),
          ((3, 37), (5, 129)), _io),
    _spec("softmax_fwd_length", softmax_fwd, softmax_fwd_ref, _make_softmax(with_length=True),
          ((6, 37), (3, 5, 7), (4, 100)), _io, dtypes=(torch.float32,)),
    _spec("softmax_bwd", softmax_bwd, softmax_bwd_ref, _make_softmax_bwd(temperature=0.5),
          ((3, 37), (5, 129)), _io3),
    _spec("log_softmax_bwd_axis0", softmax_bwd, softmax_bwd_ref,
          _make_softmax_bwd(axis=0, log=True), ((37, 3), (7, 13, 3), (40, 37)), _io3),
    # few long rows: each row in parts (the interpreter cuts rows of more than 64 in two)
    KernelSpec(name="log_softmax_fwd_long_rows", fn=softmax_fwd, ref=softmax_fwd_ref,
               make=_make_softmax(log=True), shapes=((2, 300),),
               bench_shapes=((4, 1 << 20), (16, 1 << 18)), dtypes=_ALL, tol=_TOL,
               family="softmax", **_io),
    KernelSpec(name="softmax_bwd_long_rows", fn=softmax_bwd, ref=softmax_bwd_ref,
               make=_make_softmax_bwd(), shapes=((2, 300),),
               bench_shapes=((4, 1 << 20), (16, 1 << 18)), dtypes=_ALL, tol=_TOL,
               family="softmax", **_io3),
    # a wide inner part: the column tiles (COLS adjacent rows per program)
    _spec("softmax_fwd_columns", softmax_fwd, softmax_fwd_ref, _make_softmax(axis=0),
          ((40, 37), (9, 16)), _io),
    _spec("softmax_fwd_middle_columns_length", softmax_fwd, softmax_fwd_ref,
          _make_softmax(axis=1, with_length=True), ((3, 11, 20),), _io,
          dtypes=(torch.float32,)),
    _spec("softmax_bwd_columns", softmax_bwd, softmax_bwd_ref,
          _make_softmax_bwd(axis=0, temperature=0.5), ((40, 37),), _io3),
    _spec("softmax_output_bwd", softmax_output_bwd, softmax_output_bwd_ref,
          _make_so(grad_scale=0.5, normalization="batch", smooth_alpha=0.1),
          ((5, 37), (3, 129)), _io_so),
    _spec("softmax_output_bwd_ignore_valid", softmax_output_bwd, softmax_output_bwd_ref,
          _make_so(use_ignore=True, ignore_label=1.0, normalization="valid"),
          ((9, 3), (5, 37)), _io_so, dtypes=(torch.float32,)),
    _spec("softmax_output_bwd_multi", softmax_output_bwd, softmax_output_bwd_ref,
          _make_so(multi_output=True), ((2, 5, 7), (3, 4, 2, 3)), _io_so,
          dtypes=(torch.float32,)),
    _spec("softmax_output_bwd_preserve_prob", softmax_output_bwd, softmax_output_bwd_ref,
          _make_so(prob=True, preserve_shape=True), ((2, 3, 37),), _io_so,
          dtypes=(torch.float32,)),
    _spec("softmax_cross_entropy", softmax_ce_loss, softmax_ce_loss_ref, _make_ce,
          ((5, 37), (3, 129), (9, 1)), {"bytes": lambda x, lab: tensor_bytes(x, x, x, lab)}),
    _spec("softmax_cross_entropy_bwd", softmax_ce_bwd, softmax_ce_bwd_ref, _make_ce_bwd,
          ((5, 37), (3, 129), (9, 1)), {"bytes": lambda dy, x, lab: tensor_bytes(x, x, x, lab)}),
]
