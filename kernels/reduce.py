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

from .runtime import block_for
from .table import KernelSpec

SUM = tl.standard._sum_combine
MAX = tl.standard._elementwise_max
MIN = tl.standard._elementwise_min


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

KERNELS: list[KernelSpec] = []
