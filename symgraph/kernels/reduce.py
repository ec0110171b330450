"""Reductions over one axis of a ``(outer, n, inner)`` view, and shared row helpers.

Every kernel here and in ``softmax.py``/``norm.py`` sees its input as ``(outer, n, inner)``
(contiguous): a *row* is one ``(o, i)`` pair, its ``n`` elements lie ``inner`` apart starting
at ``o * n * inner + i``. Reducing one axis of a contiguous tensor therefore needs no copy;
reducing several axes that are not adjacent moves them last first (one copy). Rows longer
than a block are handled by looping over blocks; accumulation is fp32 (fp64 for fp64
data). One program per row (a few long rows are split into parts reduced by a second
launch); where ``inner`` is wide (axis 0 of a matrix) the column kernel reads tiles of
adjacent rows instead, and splits the reduced axis across programs.

Reductions (``r`` the row)::

    sum = sum(r)   mean = sum(r) / n   max/min   prod   argmax/argmin = first extreme index

Their gradients are built from other ops (``_reduce_bcast`` broadcasts the output gradient
back), so there is no backward kernel here.

Bytes moved by one launch: the input read once, the output (one value per row) written once.

Note on the interpreter: ``tl.sum``/``tl.max``/``tl.zeros`` are ``@triton.jit`` helpers that
Triton's interpreter can only call when ``TRITON_INTERPRET=1`` was set before triton was
imported; the kernels call ``tl.reduce`` with Triton's own combine functions instead (the
interpreter runs those with numpy; compiled code is identical to ``tl.sum``/``tl.max``).
"""
from __future__ import annotations

import math

import torch
import triton.language as tl

from .philox import device
from .runtime import block_for, kernel
from .table import KernelSpec, tensor_bytes

SUM = tl.standard._sum_combine
MAX = tl.standard._elementwise_max
MIN = tl.standard._elementwise_min
PROD = tl.standard._prod_combine
ARGMAX = tl.standard._argmax_combine_tie_break_left
ARGMIN = tl.standard._argmin_combine_tie_break_left


def row_layout(shape: tuple, axis: int) -> tuple[int, int, int]:
    """``(outer, n, inner)`` of a contiguous tensor of ``shape`` reduced along ``axis``."""
    axis = axis % len(shape) if shape else 0
    return math.prod(shape[:axis]), (shape[axis] if shape else 1), math.prod(shape[axis + 1:])


def acc_type(*dtypes: torch.dtype):
    """The accumulation dtype: fp64 when any dtype is fp64, fp32 otherwise."""
    return tl.float64 if torch.float64 in dtypes else tl.float32


def row_block(n: int, device: torch.device) -> int:
    """Block size for rows of ``n``: small on CPU so tests exercise the block loop."""
    return block_for(n, cap=4096, floor=16) if device.type == "cuda" else 32


def launch_opts(block: int, device: torch.device) -> dict:
    """``num_warps`` for a row kernel (compiled launches only)."""
    if device.type != "cuda":
        return {}
    return {"num_warps": 4 if block <= 1024 else (8 if block <= 4096 else 16)}


def check_out(out, shape: tuple, dtype: torch.dtype, device: torch.device,
              what: str = "out") -> torch.Tensor:
    """A given ``out=`` tensor after checking it, or a new one."""
    if out is None:
        return torch.empty(shape, dtype=dtype, device=device)
    if tuple(out.shape) != tuple(shape) or out.dtype != dtype or not out.is_contiguous():
        raise ValueError(f"{what} must be contiguous {dtype} of shape {tuple(shape)}, got "
                         f"{out.dtype} {tuple(out.shape)}")
    return out

# ---------------------------------------------------------------- value reductions

OPS = ("sum", "mean", "max", "min", "prod")


@kernel
def _reduce_rows_kernel(x_ptr, y_ptr, N, INNER, CHUNK, scale, OP: tl.constexpr,
                        IDENT: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr):
    """``op`` of elements [split * CHUNK, (split + 1) * CHUNK) of each row (program (row,
    split)) times ``scale``, into ``y[row * splits + split]``."""
    row = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1).to(tl.int64)
    base = (row // INNER) * N * INNER + row % INNER
    ident = IDENT
    acc = tl.full((), ident, ACC)
    vec = tl.full((BLOCK,), 1.0, ACC)  # prod: elementwise running product, reduced once
    stop = tl.minimum((split + 1) * CHUNK, N)
    for start in range(split * CHUNK, stop, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + cols * INNER, mask=cols < stop, other=ident).to(ACC)
        if OP == "max":
            acc = tl.maximum(acc, tl.reduce(x, 0, MAX))
        elif OP == "min":
            acc = tl.minimum(acc, tl.reduce(x, 0, MIN))
        elif OP == "prod":
            vec = vec * x
        else:
            acc += tl.reduce(x, 0, SUM)
    if OP == "prod":
        acc = tl.reduce(vec, 0, PROD)
    tl.store(y_ptr + row * tl.num_programs(1) + split, (acc * scale).to(y_ptr.dtype.element_ty))


def _plan(shape: tuple, axes: tuple[int, ...]):
    """(permutation or None, outer, n, inner) viewing ``axes`` as one reduced axis."""
    axes = tuple(sorted(a % len(shape) for a in axes))
    if axes == tuple(range(axes[0], axes[-1] + 1)):  # adjacent: no copy
        return None, math.prod(shape[:axes[0]]), math.prod(shape[axes[0]:axes[-1] + 1]), \
            math.prod(shape[axes[-1] + 1:])
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return kept + axes, math.prod(shape[i] for i in kept), math.prod(shape[a] for a in axes), 1


def _reduced(shape: tuple, axes, keepdims: bool) -> tuple:
    axes = {a % len(shape) for a in axes}
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def reduce(x: torch.Tensor, axes: tuple[int, ...], op: str = "sum", keepdims: bool = False,
           out: torch.Tensor | None = None) -> torch.Tensor:
    """Check, allocate, launch: ``op`` (sum/mean/max/min/prod) of ``x`` over ``axes``."""
    if op not in OPS or not x.dtype.is_floating_point or not axes or x.numel() == 0:
        raise ValueError(f"reduce: op {op!r} over axes {axes} of {x.dtype} "
                         f"{tuple(x.shape)} is not supported (ops {OPS}, float data)")
    y = check_out(out, _reduced(tuple(x.shape), axes, keepdims), x.dtype, x.device)
    perm, outer, n, inner = _plan(tuple(x.shape), tuple(axes))
    x = x.permute(perm).contiguous() if perm else x.contiguous()
    if inner >= COLUMN_MIN_INNER:
        _reduce_columns(x, y, outer, n, inner, op)
    else:
        _reduce_rows(x, y, outer * inner, n, inner, op)
    return y


def row_splits(rows: int, n: int, device: torch.device) -> int:
    """Parts of each row: few long rows (a (4, 1M) sum) are split across programs, so the
    launch fills a GPU (~4 programs per SM, parts of 16K elements at least); under the
    interpreter rows of more than 64 are cut in two, so tests exercise the split."""
    if device.type != "cuda":
        return 2 if n > 64 else 1
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    return max(1, min(-(-4 * sms // max(rows, 1)), n // 16384))


def _reduce_rows(x: torch.Tensor, y: torch.Tensor, rows: int, n: int, inner: int,
                 op: str) -> None:
    """``op`` over each of ``rows`` rows of ``n`` (``inner`` apart), into ``y``; long rows
    in parts, reduced by a second launch of the same kernel."""
    splits = row_splits(rows, n, x.device)
    chunk = -(-n // splits)
    splits = -(-n // chunk)
    final = 1.0 / n if op == "mean" else 1.0
    block = row_block(min(n, chunk), x.device)
    meta = {**_op_meta(op, x), "BLOCK": block, **launch_opts(block, x.device)}
    if splits == 1:
        _reduce_rows_kernel[(rows, 1)](x, y, n, inner, n, final, **meta)
        return
    parts = torch.empty((rows, splits), device=x.device,
                        dtype=torch.float64 if x.dtype == torch.float64 else torch.float32)
    _reduce_rows_kernel[(rows, splits)](x, parts, n, inner, chunk, 1.0, **meta)
    small = row_block(splits, x.device)
    _reduce_rows_kernel[(rows, 1)](parts, y, splits, 1, splits, final, **{
        **meta, "BLOCK": small, **launch_opts(small, x.device)})


def _op_meta(op: str, x: torch.Tensor) -> dict:
    """The reduction kernels' op constexprs: the partial op, its identity, accumulation."""
    return {"OP": _PARTIAL[op], "IDENT": _IDENT[op], "ACC": acc_type(x.dtype)}


# ---------------------------------------------------------------- column reductions
# A reduced axis with a contiguous inner part (axis 0 of a matrix, say) is read a tile of
# BLOCK_R rows x BLOCK_C adjacent columns at a time, so each load is coalesced; where that
# leaves too few programs to fill the GPU the reduced axis is split, each part writes a
# partial result, and a second launch of the same kernel reduces the parts.

COLUMN_MIN_INNER = 16  # inner extents from which the column kernel is used
_PARTIAL = {"sum": "sum", "mean": "sum", "max": "max", "min": "min", "prod": "prod"}
# each op's identity: what masked lanes read
_IDENT = {"sum": 0.0, "mean": 0.0, "max": float("-inf"), "min": float("inf"), "prod": 1.0}


@kernel
def _reduce_cols_kernel(x_ptr, y_ptr, N, INNER, CHUNK, scale, OP: tl.constexpr,
                        IDENT: tl.constexpr, ACC: tl.constexpr, BLOCK_R: tl.constexpr,
                        BLOCK_C: tl.constexpr):
    """``y[split, o, c] = op over rows [split * CHUNK, (split + 1) * CHUNK) of x[o, :, c]``
    (times ``scale``) for a BLOCK_C run of columns c; program (o * column blocks + block,
    split)."""
    col_blocks = (INNER + BLOCK_C - 1) // BLOCK_C
    o = tl.program_id(0).to(tl.int64) // col_blocks
    cols = (tl.program_id(0) % col_blocks) * BLOCK_C + tl.arange(0, BLOCK_C)
    split = tl.program_id(1).to(tl.int64)
    ident = IDENT
    acc = tl.full((BLOCK_R, BLOCK_C), ident, ACC)
    base = x_ptr + o * N * INNER
    stop = tl.minimum((split + 1) * CHUNK, N)
    for start in range(split * CHUNK, stop, BLOCK_R):
        rows = start + tl.arange(0, BLOCK_R)
        ok = (rows[:, None] < stop) & (cols[None, :] < INNER)
        x = tl.load(base + rows[:, None] * INNER + cols[None, :], mask=ok,
                    other=ident).to(ACC)
        if OP == "max":
            acc = tl.maximum(acc, x)
        elif OP == "min":
            acc = tl.minimum(acc, x)
        elif OP == "prod":
            acc = acc * x
        else:
            acc += x
    if OP == "max":
        col = tl.reduce(acc, 0, MAX)
    elif OP == "min":
        col = tl.reduce(acc, 0, MIN)
    elif OP == "prod":
        col = tl.reduce(acc, 0, PROD)
    else:
        col = tl.reduce(acc, 0, SUM)
    out = y_ptr + (split * tl.num_programs(0) // col_blocks + o) * INNER + cols
    tl.store(out, (col * scale).to(y_ptr.dtype.element_ty), mask=cols < INNER)


def _column_splits(programs: int, n: int, device: torch.device) -> int:
    """Parts of the reduced axis: enough programs to fill a GPU (~4 per SM), each part at
    least 256 rows; under the interpreter parts of 8 rows, so tests exercise the split."""
    if device.type != "cuda":
        return max(1, min(n // 8, 4))
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    return max(1, min(-(-4 * sms // max(programs, 1)), n // 256))


def _reduce_columns(x: torch.Tensor, y: torch.Tensor, outer: int, n: int, inner: int,
                    op: str) -> None:
    """``op`` over the middle axis of ``x`` viewed as (outer, n, inner), into ``y``."""
    cuda = x.device.type == "cuda"
    block_c = min(block_for(inner, cap=64 if cuda else 16, floor=16), 64)
    block_r = 32 if cuda else 8
    programs = outer * -(-inner // block_c)
    splits = _column_splits(programs, n, x.device)
    chunk = -(-n // splits)
    splits = -(-n // chunk)
    final = 1.0 / n if op == "mean" else 1.0
    meta = {**_op_meta(op, x), "BLOCK_R": block_r, "BLOCK_C": block_c,
            **({"num_warps": 4} if cuda else {})}
    if splits == 1:
        _reduce_cols_kernel[(programs, 1)](x, y, n, inner, chunk, final, **meta)
        return
    parts = torch.empty((splits, outer, inner), device=x.device,
                        dtype=torch.float64 if x.dtype == torch.float64 else torch.float32)
    _reduce_cols_kernel[(programs, splits)](x, parts, n, inner, chunk, 1.0, **meta)
    # the parts reduced as (1, splits, outer * inner): one more launch of the same kernel
    total = outer * inner
    _reduce_cols_kernel[(-(-total // block_c), 1)](parts, y, splits, total, splits, final,
                                                   **meta)


def reduce_ref(x, axes, op="sum", keepdims=False):
    """Reference: one torch reduction (reads x once, writes the result)."""
    if op == "prod":
        for a in sorted((a % x.dim() for a in axes), reverse=True):
            x = torch.prod(x, dim=a, keepdim=keepdims)
        return x
    fn = {"sum": torch.sum, "mean": torch.mean, "max": torch.amax, "min": torch.amin}[op]
    return fn(x, dim=tuple(axes), keepdim=keepdims)


# ---------------------------------------------------------------- argmax / argmin

@device
def _arg_update(x, lane, start, best, best_i, LARGEST: tl.constexpr):
    """(best, its index) after a block ``x`` (axis 0) whose lanes start at ``start``: the
    block's first extreme replaces the running one only if strictly better."""
    if LARGEST:
        v, i = tl.reduce((x, lane), 0, ARGMAX)
        better = v > best
    else:
        v, i = tl.reduce((x, lane), 0, ARGMIN)
        better = v < best
    return tl.where(better, v, best), tl.where(better, start + i.to(tl.int64), best_i)


@kernel
def _arg_reduce_rows_kernel(x_ptr, y_ptr, N, INNER, LARGEST: tl.constexpr, ACC: tl.constexpr,
                            BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = (row // INNER) * N * INNER + row % INNER
    ident = float("-inf") if LARGEST else float("inf")
    best = tl.full((), ident, ACC)
    best_i = tl.full((), 0, tl.int64)
    for start in range(0, N, BLOCK):
        lane = tl.arange(0, BLOCK)  # block-relative indices (what the interpreter returns)
        x = tl.load(x_ptr + base + (start + lane) * INNER, mask=start + lane < N,
                    other=ident).to(ACC)
        best, best_i = _arg_update(x, lane, start, best, best_i, LARGEST)
    # through fp32: the interpreter casts int64 straight to bf16 bitwise
    tl.store(y_ptr + row, best_i.to(tl.float32).to(y_ptr.dtype.element_ty))


def arg_reduce(x: torch.Tensor, axis: int | None = None, largest: bool = True,
               keepdims: bool = False, out: torch.Tensor | None = None) -> torch.Tensor:
    """Check, allocate, launch: first index of the max (min) along ``axis`` in x's dtype."""
    if not x.dtype.is_floating_point or x.numel() == 0:
        raise ValueError(f"arg_reduce needs non-empty float data, got {x.dtype} "
                         f"{tuple(x.shape)}")
    x = x.contiguous()
    if axis is None:
        shape, (outer, n, inner) = (1,) * x.dim() if keepdims else (), (1, x.numel(), 1)
    else:
        shape = _reduced(tuple(x.shape), (axis,), keepdims)
        outer, n, inner = row_layout(tuple(x.shape), axis)
    y = check_out(out, shape, x.dtype, x.device)
    if inner >= COLUMN_MIN_INNER:
        _arg_reduce_columns(x, y, outer, n, inner, largest)
        return y
    block = row_block(n, x.device)
    _arg_reduce_rows_kernel[(outer * inner,)](x, y, n, inner, LARGEST=largest,
                                              ACC=acc_type(x.dtype), BLOCK=block,
                                              **launch_opts(block, x.device))
    return y


@kernel
def _arg_cols_kernel(x_ptr, v_ptr, i_ptr, y_ptr, N, INNER, CHUNK, LARGEST: tl.constexpr,
                     PARTS: tl.constexpr, ACC: tl.constexpr, BLOCK_R: tl.constexpr,
                     BLOCK_C: tl.constexpr):
    """First index of the max (min) over rows [split * CHUNK, (split + 1) * CHUNK) for a
    BLOCK_C run of columns: into ``y`` (as its dtype) or, with PARTS, the part's value and
    index into ``v``/``i`` (program (o * column blocks + block, split))."""
    col_blocks = (INNER + BLOCK_C - 1) // BLOCK_C
    o = tl.program_id(0).to(tl.int64) // col_blocks
    cols = (tl.program_id(0) % col_blocks) * BLOCK_C + tl.arange(0, BLOCK_C)
    split = tl.program_id(1).to(tl.int64)
    ident = float("-inf") if LARGEST else float("inf")
    best = tl.full((BLOCK_C,), ident, ACC)
    best_i = tl.full((BLOCK_C,), 0, tl.int64)
    stop = tl.minimum((split + 1) * CHUNK, N)
    lane = tl.arange(0, BLOCK_R)[:, None] + tl.arange(0, BLOCK_C)[None, :] * 0
    for start in range(split * CHUNK, stop, BLOCK_R):
        ok = (start + lane < stop) & (cols[None, :] < INNER)
        x = tl.load(x_ptr + o * N * INNER + (start + lane) * INNER + cols[None, :], mask=ok,
                    other=ident).to(ACC)
        best, best_i = _arg_update(x, lane, start, best, best_i, LARGEST)
    at = (split * (tl.num_programs(0) // col_blocks) + o) * INNER + cols
    if PARTS:
        tl.store(v_ptr + at, best, mask=cols < INNER)
        tl.store(i_ptr + at, best_i, mask=cols < INNER)
    else:  # through fp32: the interpreter casts int64 straight to bf16 bitwise
        tl.store(y_ptr + at, best_i.to(tl.float32).to(y_ptr.dtype.element_ty),
                 mask=cols < INNER)


@kernel
def _arg_parts_kernel(v_ptr, i_ptr, y_ptr, SPLITS, M, LARGEST: tl.constexpr,
                      ACC: tl.constexpr, BLOCK: tl.constexpr):
    """The best of the parts' (value, index) for each of M outputs (the earliest part
    wins a tie: its indices are smaller)."""
    at = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ident = float("-inf") if LARGEST else float("inf")
    best = tl.full((BLOCK,), ident, ACC)
    best_i = tl.full((BLOCK,), 0, tl.int64)
    for part in range(0, SPLITS):
        v = tl.load(v_ptr + part * M + at, mask=at < M, other=ident)
        i = tl.load(i_ptr + part * M + at, mask=at < M, other=0)
        better = (v > best) if LARGEST else (v < best)
        best_i = tl.where(better, i, best_i)
        best = tl.where(better, v, best)
    tl.store(y_ptr + at, best_i.to(tl.float32).to(y_ptr.dtype.element_ty), mask=at < M)


def _arg_reduce_columns(x: torch.Tensor, y: torch.Tensor, outer: int, n: int, inner: int,
                        largest: bool) -> None:
    """arg max/min over the middle axis of ``x`` viewed as (outer, n, inner), into ``y``."""
    cuda = x.device.type == "cuda"
    block_c, block_r = (64, 32) if cuda else (16, 8)
    programs = outer * -(-inner // block_c)
    splits = _column_splits(programs, n, x.device)
    chunk = -(-n // splits)
    splits = -(-n // chunk)
    acc = acc_type(x.dtype)
    opts = {"num_warps": 4} if cuda else {}
    if splits == 1:
        _arg_cols_kernel[(programs, 1)](x, y, y, y, n, inner, chunk, LARGEST=largest,
                                        PARTS=False, ACC=acc, BLOCK_R=block_r,
                                        BLOCK_C=block_c, **opts)
        return
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    values = torch.empty((splits, outer * inner), device=x.device, dtype=dtype)
    index = torch.empty((splits, outer * inner), device=x.device, dtype=torch.int64)
    _arg_cols_kernel[(programs, splits)](x, values, index, y, n, inner, chunk, LARGEST=largest,
                                         PARTS=True, ACC=acc, BLOCK_R=block_r,
                                         BLOCK_C=block_c, **opts)
    block = 256 if cuda else 32
    _arg_parts_kernel[(-(-(outer * inner) // block),)](values, index, y, splits, outer * inner,
                                                       LARGEST=largest, ACC=acc, BLOCK=block,
                                                       **opts)


def arg_reduce_ref(x, axis=None, largest=True, keepdims=False):
    """Reference: one torch argmax/argmin (reads x once), cast to x's dtype."""
    fn = torch.argmax if largest else torch.argmin
    return fn(x, dim=axis, keepdim=keepdims).to(x.dtype)


# ---------------------------------------------------------------- cumsum

@kernel
def _cumsum_rows_kernel(x_ptr, y_ptr, N, INNER, REVERSE: tl.constexpr, ACC: tl.constexpr,
                        BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = (row // INNER) * N * INNER + row % INNER
    carry = tl.full((), 0, ACC)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        idx = N - 1 - cols if REVERSE else cols  # reverse: the scan runs from the row's end
        x = tl.load(x_ptr + base + idx * INNER, mask=cols < N, other=0).to(ACC)
        tl.store(y_ptr + base + idx * INNER,
                 (tl.associative_scan(x, 0, SUM) + carry).to(y_ptr.dtype.element_ty),
                 mask=cols < N)
        carry += tl.reduce(x, 0, SUM)


def _scan_acc(*dtypes: torch.dtype):
    """Accumulate floats in fp32 (fp64 for fp64), integers in int64."""
    if all(d.is_floating_point for d in dtypes):
        return acc_type(*dtypes)
    return tl.float64 if torch.float64 in dtypes else tl.int64


def cumsum(x: torch.Tensor, axis: int, dtype: torch.dtype | None = None, reverse: bool = False,
           out: torch.Tensor | None = None) -> torch.Tensor:
    """Check, allocate, launch: running sums of ``x`` along ``axis`` (from the end when
    ``reverse``) in ``dtype`` (x's by default). Bytes: x read once, the result written once."""
    dtype = dtype or x.dtype
    if x.dim() == 0 or dtype == torch.bool:
        raise ValueError(f"cumsum needs data with an axis and a numeric dtype, got {x.dtype} "
                         f"{tuple(x.shape)} -> {dtype}")
    y = check_out(out, tuple(x.shape), dtype, x.device)
    if x.numel() == 0:
        return y
    x = x.contiguous()
    outer, n, inner = row_layout(tuple(x.shape), axis)
    block = row_block(n, x.device)
    _cumsum_rows_kernel[(outer * inner,)](x, y, n, inner, REVERSE=reverse,
                                          ACC=_scan_acc(x.dtype, dtype), BLOCK=block,
                                          **launch_opts(block, x.device))
    return y


def cumsum_ref(x, axis, dtype=None, reverse=False):
    """Reference: one torch cumsum (flipped twice when ``reverse``)."""
    x = x.to(dtype or x.dtype)
    if reverse:
        return torch.flip(torch.cumsum(torch.flip(x, (axis,)), axis), (axis,))
    return torch.cumsum(x, axis)


# ---------------------------------------------------------------- histogram

@kernel
def _uniform_edges_kernel(e_ptr, NBINS, LO, HI, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    for start in range(0, NBINS + 1, BLOCK):
        k = (start + i).to(tl.float64)  # MXNet: (hi * k + (n - k) * lo) / n in double
        edge = (HI * k + (NBINS - k) * LO) / NBINS
        tl.store(e_ptr + start + i, edge.to(e_ptr.dtype.element_ty), mask=start + i <= NBINS)


@kernel
def _histogram_kernel(x_ptr, e_ptr, c_ptr, N, NBINS, UNIFORM: tl.constexpr, ACC: tl.constexpr,
                      BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    live = offs < N
    x = tl.load(x_ptr + offs, mask=live, other=0).to(ACC)
    lo = tl.load(e_ptr).to(ACC)
    hi = tl.load(e_ptr + NBINS).to(ACC)
    if UNIFORM:  # a guess from the spacing, corrected by the stored edges (numpy's rule)
        guess = tl.minimum(((x - lo) * NBINS / (hi - lo)).to(tl.int32), NBINS - 1)
        guess = tl.minimum(tl.maximum(guess, 0), NBINS - 1)
        guess -= (x < tl.load(e_ptr + guess).to(ACC)).to(tl.int32)
        guess = tl.maximum(guess, 0)
        up = (x >= tl.load(e_ptr + guess + 1).to(ACC)) & (guess != NBINS - 1)
        idx = guess + up.to(tl.int32)
    else:  # the number of inner edges at or below x
        idx = tl.full((BLOCK,), 0, tl.int32)
        for j in range(1, NBINS):
            idx += (x >= tl.load(e_ptr + j).to(ACC)).to(tl.int32)
    inside = live & (x >= lo) & (x <= hi)
    tl.atomic_add(c_ptr + idx, tl.full((BLOCK,), 1, tl.int64), mask=inside)


def histogram(x: torch.Tensor, bins: int | torch.Tensor, lo: float = 0.0, hi: float = 1.0,
              out: tuple | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Check, allocate, launch: int64 counts of ``x`` in ``bins`` equal bins over
    ``[lo, hi]``, or between the given sorted edges (a tensor), and the edges (x's dtype).
    Bin ``i`` holds ``e[i] <= x < e[i + 1]``, the last bin also ``x == e[-1]``; values
    outside are not counted. Bytes: x read once, the edges written (and read per element)."""
    uniform = not isinstance(bins, torch.Tensor)
    nbins = int(bins) if uniform else bins.numel() - 1
    if nbins < 1 or not x.dtype.is_floating_point:
        raise ValueError(f"histogram needs float data and at least one bin, got {x.dtype} "
                         f"and {nbins} bins")
    counts, edges = out if out is not None else (None, None)
    counts = check_out(counts, (nbins,), torch.int64, x.device, "counts")
    edges = check_out(edges, (nbins + 1,), x.dtype, x.device, "edges")
    counts.zero_()
    if uniform:
        _uniform_edges_kernel[(1,)](edges, nbins, float(lo), float(hi), BLOCK=32)
    else:
        edges.copy_(bins.reshape(-1))
    x = x.contiguous().reshape(-1)
    block = 128 if x.device.type == "cuda" else 32
    if x.numel():
        _histogram_kernel[(-(-x.numel() // block),)](x, edges, counts, x.numel(), nbins,
                                                     UNIFORM=uniform, ACC=acc_type(x.dtype),
                                                     BLOCK=block)
    return counts, edges


def histogram_ref(x, bins, lo=0.0, hi=1.0):
    """Reference: numpy's rule with torch (edges as MXNet computes them)."""
    if isinstance(bins, torch.Tensor):
        edges = bins.reshape(-1).to(x.dtype)
    else:
        k = torch.arange(bins + 1, dtype=torch.float64)
        edges = ((hi * k + (bins - k) * lo) / bins).to(x.dtype).to(x.device)
    n = edges.numel() - 1
    flat = x.reshape(-1)
    idx = torch.searchsorted(edges, flat, right=True) - 1
    idx = torch.where(flat == edges[-1], n - 1, idx)
    inside = (flat >= edges[0]) & (flat <= edges[-1])
    return torch.bincount(idx[inside], minlength=n).to(torch.int64), edges


def _make_histogram(uniform: bool):
    def make(dtype, device, shape):
        gen = torch.Generator().manual_seed(0)
        x = (torch.randn(shape, generator=gen) * 2).to(device=device, dtype=dtype)
        if uniform:
            return (x, 7), {"lo": -2.5, "hi": 2.5}
        edges = torch.tensor([-3.0, -1.0, 0.5, 0.75, 2.0, 50.0], dtype=dtype, device=device)
        return (x, edges), {}
    return make


# ---------------------------------------------------------------- table entries

def _make(axes, op=None, **kw):
    def make(dtype, device, shape):
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(shape, generator=gen)
        if op == "prod":
            x = x.abs() * 0.5 + 0.75  # products of ~100 factors stay in range
        x = x.to(device=device, dtype=dtype)
        return (x,), ({"axes": axes, "op": op, **kw} if op else kw)
    return make


_ALL = (torch.float32, torch.float16, torch.bfloat16)
_BENCH = ((4096, 4096), (1024, 16384), (512, 32768))
_TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (2e-3, 2e-3),
        torch.bfloat16: (1.6e-2, 1e-2)}
_io = {"bytes": lambda x, *a, **kw: tensor_bytes(x)}


def _spec(name, fn, ref, make, shapes, dtypes=_ALL, bench=_BENCH):
    return KernelSpec(name=name, fn=fn, ref=ref, make=make, shapes=shapes, bench_shapes=bench,
                      dtypes=dtypes, tol=_TOL, family="reduce", **_io)


KERNELS = [
    # prod in half precision: torch multiplies in the storage dtype, so only fp32 compares
    *(_spec(f"reduce_{op}_last", reduce, reduce_ref, _make((-1,), op), ((3, 37), (5, 129)),
            dtypes=_ALL if op != "prod" else (torch.float32,)) for op in OPS),
    *(_spec(f"reduce_{op}_middle_keepdims", reduce, reduce_ref,
            _make((1,), op, keepdims=True), ((7, 13, 3),), dtypes=(torch.float32,))
      for op in OPS),
    *(_spec(f"reduce_{op}_split_axes", reduce, reduce_ref, _make((0, 2), op),
            ((3, 4, 5), (5, 2, 7)), dtypes=(torch.float32,),
            bench=((64, 4096, 64), (256, 256, 256))) for op in OPS),
    # axis 0 (and a middle axis) with a contiguous inner part: the column kernel, split
    *(_spec(f"reduce_{op}_columns", reduce, reduce_ref, _make((0,), op), ((40, 37), (9, 16)),
            dtypes=_ALL if op in ("sum", "max") else (torch.float32,),
            bench=((16384, 1024), (32768, 512), (4096, 4096))) for op in OPS),
    _spec("reduce_mean_middle_columns", reduce, reduce_ref, _make((1,), "mean"),
          ((3, 50, 20),), dtypes=(torch.float32,), bench=((64, 4096, 256),)),
    _spec("argmax_last", arg_reduce, arg_reduce_ref, _make(None, axis=-1),
          ((3, 37), (5, 129))),
    _spec("argmin_axis0_keepdims", arg_reduce, arg_reduce_ref,
          _make(None, axis=0, largest=False, keepdims=True), ((37, 3), (7, 13, 3)),
          dtypes=(torch.float32,)),
    _spec("argmin_columns", arg_reduce, arg_reduce_ref, _make(None, axis=0, largest=False),
          ((40, 37), (9, 16)), bench=((16384, 1024), (32768, 512))),
    _spec("argmax_middle_columns", arg_reduce, arg_reduce_ref, _make(None, axis=1),
          ((3, 50, 20),), dtypes=(torch.float32,)),
    _spec("cumsum_last", cumsum, cumsum_ref, _make(None, axis=-1), ((3, 37), (5, 129))),
    KernelSpec(name="histogram_uniform", fn=histogram, ref=histogram_ref,
               make=_make_histogram(True), shapes=((37,), (5, 129)), bench_shapes=((1 << 24,),),
               family="reduce", **_io),
    KernelSpec(name="histogram_edges", fn=histogram, ref=histogram_ref,
               make=_make_histogram(False), shapes=((37,), (3, 41)), bench_shapes=((1 << 24,),),
               family="reduce", **_io),
    _spec("cumsum_reverse_middle", cumsum, cumsum_ref, _make(None, axis=1, reverse=True),
          ((7, 45, 3),), dtypes=(torch.float32,)),
]
