"""Row reductions over the last axis of a ``(outer, n, inner)`` view, and shared row helpers.

Every kernel here and in ``softmax.py``/``norm.py`` sees its input as ``(outer, n, inner)``
(contiguous): a *row* is one ``(o, i)`` pair, its ``n`` elements lie ``inner`` apart starting
at ``o * n * inner + i``. Reducing one axis of a contiguous tensor therefore needs no copy;
reducing several axes that are not adjacent moves them last first (one copy). Rows longer
than a block are handled by looping over blocks; accumulation is fp32 (fp64 for fp64
data). One program per row.

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
def _reduce_rows_kernel(x_ptr, y_ptr, N, INNER, OP: tl.constexpr, ACC: tl.constexpr,
                        BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = (row // INNER) * N * INNER + row % INNER
    if OP == "max":
        ident = float("-inf")
    elif OP == "min":
        ident = float("inf")
    elif OP == "prod":
        ident = 1.0
    else:
        ident = 0.0
    acc = tl.full((), ident, ACC)
    vec = tl.full((BLOCK,), 1.0, ACC)  # prod: elementwise running product, reduced once
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + cols * INNER, mask=cols < N, other=ident).to(ACC)
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
    if OP == "mean":
        acc = acc / N
    tl.store(y_ptr + row, acc.to(y_ptr.dtype.element_ty))


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
    block = row_block(n, x.device)
    _reduce_rows_kernel[(outer * inner,)](x, y, n, inner, OP=op, ACC=acc_type(x.dtype),
                                          BLOCK=block, **launch_opts(block, x.device))
    return y


def reduce_ref(x, axes, op="sum", keepdims=False):
    """Reference: one torch reduction (reads x once, writes the result)."""
    if op == "prod":
        for a in sorted((a % x.dim() for a in axes), reverse=True):
            x = torch.prod(x, dim=a, keepdim=keepdims)
        return x
    fn = {"sum": torch.sum, "mean": torch.mean, "max": torch.amax, "min": torch.amin}[op]
    return fn(x, dim=tuple(axes), keepdim=keepdims)


# ---------------------------------------------------------------- argmax / argmin

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
        if LARGEST:
            v, i = tl.reduce((x, lane), 0, ARGMAX)
            better = v > best
        else:
            v, i = tl.reduce((x, lane), 0, ARGMIN)
            better = v < best
        best_i = tl.where(better, start + i.to(tl.int64), best_i)
        best = tl.where(better, v, best)
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
    block = row_block(n, x.device)
    _arg_reduce_rows_kernel[(outer * inner,)](x, y, n, inner, LARGEST=largest,
                                              ACC=acc_type(x.dtype), BLOCK=block,
                                              **launch_opts(block, x.device))
    return y


def arg_reduce_ref(x, axis=None, largest=True, keepdims=False):
    """Reference: one torch argmax/argmin (reads x once), cast to x's dtype."""
    fn = torch.argmax if largest else torch.argmin
    return fn(x, dim=axis, keepdim=keepdims).to(x.dtype)


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
    _spec("argmax_last", arg_reduce, arg_reduce_ref, _make(None, axis=-1),
          ((3, 37), (5, 129))),
    _spec("argmin_axis0_keepdims", arg_reduce, arg_reduce_ref,
          _make(None, axis=0, largest=False, keepdims=True), ((37, 3), (7, 13, 3)),
          dtypes=(torch.float32,)),
]
