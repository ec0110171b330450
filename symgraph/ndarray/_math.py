"""Tensor-level rules that MXNet 1.x's NDArray operators follow.

MXNet keeps the input dtype through every operator (an int32 array divided by 2.0 stays
int32; a comparison returns 0/1 in the input dtype), casts scalars to the array dtype
before computing, refuses to mix dtypes, and gives full reductions shape ``(1,)``.
The NDArray class and the free functions call these helpers on plain tensors.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence

import torch

from .. import profiler as _profiler
from ..base import TORCH_TO_NAME, DTypeError, ShapeError
from ..ops.elementwise import mxnet_div, mxnet_mod, round_half_away

FLOATS = (torch.float16, torch.float32, torch.float64, torch.bfloat16)


def is_float(dtype: torch.dtype) -> bool:
    """Whether ``dtype`` is a floating point dtype."""
    return dtype in FLOATS


def dtype_str(dtype: torch.dtype) -> str:
    """MXNet's name of a torch dtype, for messages."""
    return TORCH_TO_NAME.get(dtype, str(dtype))


def scalar_like(value, like: torch.Tensor) -> torch.Tensor:
    """A 0-d tensor holding ``value`` cast to ``like``'s dtype the way MXNet casts scalars."""
    if isinstance(value, bool) or like.dtype == torch.bool:
        return torch.tensor(bool(value), device=like.device).to(like.dtype)
    if is_float(like.dtype):
        return torch.tensor(float(value), dtype=torch.float64, device=like.device).to(like.dtype)
    # C++'s static_cast<int>(double) truncates; unsigned types wrap around.
    return torch.tensor(math.trunc(value), dtype=torch.int64, device=like.device).to(like.dtype)


def _compare(fn: Callable) -> Callable:
    return lambda a, b: fn(a, b).to(a.dtype)


BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": mxnet_div,
    "mod": mxnet_mod,
    "pow": torch.pow,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "eq": _compare(torch.eq),
    "ne": _compare(torch.ne),
    "gt": _compare(torch.gt),
    "ge": _compare(torch.ge),
    "lt": _compare(torch.lt),
    "le": _compare(torch.le),
}


def is_scalar(value) -> bool:
    """Whether ``value`` is a Python or numpy number (MXNet's ``numeric_types``)."""
    return isinstance(value, numbers.Number)


def binary(name: str, lhs: torch.Tensor, rhs, reflected: bool = False) -> torch.Tensor:
    """Apply binary op ``name`` to a tensor and a tensor or scalar, MXNet-style.

    Scalars are cast to the tensor's dtype; two tensors must share a dtype and be
    broadcastable (numpy rules). ``reflected`` swaps the operands (``2 - x``).
    """
    scalar = not isinstance(rhs, torch.Tensor)
    if scalar:
        rhs = scalar_like(rhs, lhs)
    elif rhs.dtype != lhs.dtype:
        raise DTypeError(f"Incompatible dtypes in {name}: lhs is {dtype_str(lhs.dtype)}, "
                         f"rhs is {dtype_str(rhs.dtype)}; MXNet does not promote, use astype")
    elif lhs.shape != rhs.shape:
        check_broadcast(name, tuple(lhs.shape), tuple(rhs.shape))
    if reflected:
        lhs, rhs = rhs, lhs
    if _profiler.ACTIVE.imperative:
        return _profiler.call_imperative(_profiler.arithmetic_name(name, scalar, reflected),
                                         BINARY[name], lhs, rhs, device=lhs.device)
    return BINARY[name](lhs, rhs)


def check_broadcast(name: str, lshape: tuple, rshape: tuple) -> tuple:
    """The broadcast shape of two shapes; ShapeError quoting both when they do not broadcast."""
    try:
        return tuple(torch.broadcast_shapes(lshape, rshape))
    except RuntimeError as err:
        raise ShapeError(f"{name}: operands could not be broadcast together with shapes "
                         f"{lshape} {rshape}") from err


def _relu(t: torch.Tensor) -> torch.Tensor:
    return torch.clamp_min(t, 0) if t.dtype != torch.uint8 else t.clone()


def _fix(t: torch.Tensor) -> torch.Tensor:
    return torch.trunc(t) if is_float(t.dtype) else t.clone()


def _rint(t: torch.Tensor) -> torch.Tensor:
    # MXNet's rint sends halves down: rint(1.5) = 1, rint(-0.5) = -1 (not numpy's to-even).
    low, high = torch.floor(t), torch.ceil(t)
    return torch.where(t - low <= high - t, low, high)


def _round_half_away(t: torch.Tensor) -> torch.Tensor:
    # MXNet's round rounds halves away from zero (the op's own function: one implementation)
    return round_half_away(t) if is_float(t.dtype) else t.clone()


# name -> (function, needs a float input). Integer inputs of float-only functions are
# computed in float64 and cast back, which truncates: MXNet's exp([1, 2] int32) is [2, 7].
UNARY: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], bool]] = {
    "exp": (torch.exp, True),
    "expm1": (torch.expm1, True),
    "log": (torch.log, True),
    "log1p": (torch.log1p, True),
    "log2": (torch.log2, True),
    "log10": (torch.log10, True),
    "sqrt": (torch.sqrt, True),
    "rsqrt": (torch.rsqrt, True),
    "square": (lambda t: t * t, False),
    "abs": (torch.abs, False),
    "sign": (torch.sign, False),
    "negative": (torch.neg, False),
    "reciprocal": (torch.reciprocal, True),
    "relu": (_relu, False),
    "sigmoid": (torch.sigmoid, True),
    "tanh": (torch.tanh, True),
    "sin": (torch.sin, True),
    "cos": (torch.cos, True),
    "floor": (torch.floor, True),
    "ceil": (torch.ceil, True),
    "round": (_round_half_away, False),
    "rint": (_rint, True),
    "fix": (_fix, False),
}


def unary(name: str, t: torch.Tensor) -> torch.Tensor:
    """Apply elementwise function ``name``, keeping ``t``'s dtype as MXNet does."""
    fn, needs_float = UNARY[name]
    if _profiler.ACTIVE.imperative:
        return _profiler.call_imperative(name, _unary_cast, fn, needs_float, t, device=t.device)
    return _unary_cast(fn, needs_float, t)


def _unary_cast(fn, needs_float: bool, t: torch.Tensor) -> torch.Tensor:
    if needs_float and not is_float(t.dtype):
        return fn(t.to(torch.float64)).to(t.dtype)
    return fn(t)


def clip(t: torch.Tensor, a_min, a_max) -> torch.Tensor:
    """Clamp to ``[a_min, a_max]`` with the bounds cast to ``t``'s dtype."""
    return torch.clamp(t, scalar_like(a_min, t), scalar_like(a_max, t))


def norm_axes(axis, ndim: int, exclude: bool = False) -> tuple[int, ...]:
    """Normalise MXNet's ``axis`` argument (None, int, tuple; () means all) to sorted axes."""
    if axis is None or (isinstance(axis, Sequence) and len(axis) == 0):
        axes = tuple(range(ndim))
        return () if exclude else axes
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    out = []
    for ax in axes:
        if not -ndim <= ax < ndim:
            raise ShapeError(f"axis {ax} is out of bounds for an array of dimension {ndim}")
        out.append(int(ax) % ndim)
    if exclude:
        return tuple(i for i in range(ndim) if i not in out)
    return tuple(sorted(set(out)))


def _sum(t, axes, keepdims):
    return torch.sum(t, dim=axes, keepdim=keepdims).to(t.dtype)


def _mean(t, axes, keepdims):
    if is_float(t.dtype):
        return torch.mean(t, dim=axes, keepdim=keepdims)
    count = math.prod(t.shape[a] for a in axes)
    total = torch.sum(t.to(torch.float64), dim=axes, keepdim=keepdims)
    return (total / count).to(t.dtype)


def _prod(t, axes, keepdims):
    out = t
    for ax in sorted(axes, reverse=True):
        out = torch.prod(out, dim=ax, keepdim=keepdims)
    return out.to(t.dtype)


def _max(t, axes, keepdims):
    return torch.amax(t, dim=axes, keepdim=keepdims)


def _min(t, axes, keepdims):
    return torch.amin(t, dim=axes, keepdim=keepdims)


def _norm(t, axes, keepdims):
    squares = t.to(torch.float64) if not is_float(t.dtype) else t * 1
    return torch.sqrt(torch.sum(squares * squares, dim=axes, keepdim=keepdims)).to(t.dtype)


REDUCE = {"sum": _sum, "mean": _mean, "prod": _prod, "max": _max, "min": _min, "norm": _norm}


def reduce(name: str, t: torch.Tensor, axis=None, keepdims: bool = False,
           exclude: bool = False) -> torch.Tensor:
    """Reduce over ``axis``; a result with no dimensions gets shape ``(1,)`` as in MXNet."""
    axes = norm_axes(axis, t.dim(), exclude)
    if name in ("max", "min") and t.numel() == 0:
        raise ShapeError(f"{name}: Reduction input's size should > 0, got shape "
                         f"{tuple(t.shape)}")
    if not axes:  # exclude=True over every axis, or a 0-d input: nothing to reduce
        out = t.clone()
    else:
        out = REDUCE[name](t, axes, keepdims)
    return out.reshape(1) if out.dim() == 0 else out


def arg_reduce(name: str, t: torch.Tensor, axis=None, keepdims: bool = False) -> torch.Tensor:
    """argmax/argmin; indices come back in the input dtype (float32 for float32 input)."""
    fn = torch.argmax if name == "argmax" else torch.argmin
    if axis is None:
        out = fn(t.reshape(-1))
        out = out.reshape((1,) * t.dim()) if keepdims and t.dim() else out
    else:
        (ax,) = norm_axes(int(axis), t.dim())
        out = fn(t, dim=ax, keepdim=keepdims)
    out = out.to(t.dtype)
    return out.reshape(1) if out.dim() == 0 else out


def infer_reshape(src: tuple, target: Sequence[int], reverse: bool = False) -> tuple:
    """The shape MXNet's ``reshape`` gives, with special codes 0, -1, -2, -3 and -4.

    >>> infer_reshape((2, 3, 4), (-4, 1, 2, -3))
    (1, 2, 12)
    >>> infer_reshape((10, 5, 4), (-1, 0), reverse=True)
    (50, 4)
    """
    src_dims = list(reversed(src)) if reverse else list(src)
    spec = [int(d) for d in (reversed(target) if reverse else target)]
    out: list[int] = []
    infer_at, s, i = -1, 0, 0

    def take() -> int:
        nonlocal s
        if s >= len(src_dims):
            raise ShapeError(f"Cannot reshape {tuple(src)} into {tuple(target)}: "
                             f"the special codes consume more dimensions than the input has")
        s += 1
        return src_dims[s - 1]

    while i < len(spec):
        code = spec[i]
        if code == 0:
            out.append(take())
        elif code == -1:
            if infer_at >= 0:
                raise ShapeError(f"Cannot reshape {tuple(src)} into {tuple(target)}: "
                                 "only one dim can be inferred (-1)")
            infer_at = len(out)
            out.append(1)
            s += 1
        elif code == -2:
            out.extend(src_dims[s:])
            s = len(src_dims)
        elif code == -3:
            out.append(take() * take())
        elif code == -4:
            out.extend(_split_dim(take(), spec[i + 1:i + 3], src, target))
            i += 2
        elif code > 0:
            out.append(code)
            s += 1
        else:
            raise ShapeError(f"Invalid reshape code {code} in {tuple(target)}")
        i += 1
    if infer_at >= 0:
        known = math.prod(out)
        out[infer_at] = math.prod(src) // known if known else 0
    return tuple(reversed(out)) if reverse else tuple(out)


def _split_dim(d0: int, pair: Sequence[int], src: tuple, target: Sequence[int]) -> list[int]:
    if len(pair) != 2:
        raise ShapeError(f"Cannot reshape {tuple(src)} into {tuple(target)}: "
                         "-4 must be followed by two dims")
    d1, d2 = pair
    if d1 == -1 and d2 == -1:
        raise ShapeError("Split dims cannot both be -1.")
    d1 = d0 // d2 if d1 == -1 else d1
    d2 = d0 // d1 if d2 == -1 else d2
    if d1 * d2 != d0:
        raise ShapeError(f"Split dims {d1}, {d2} do not divide original dim {d0}")
    return [d1, d2]


def _dot_halves(shape: tuple, contract_first: bool) -> tuple[tuple, int]:
    """(kept dims, contracted size) of one dot operand as MXNet flattens it to 2-D."""
    if contract_first:
        return tuple(shape[1:]), shape[0]
    return tuple(shape[:-1]), shape[-1]


def dot(a: torch.Tensor, b: torch.Tensor, transpose_a: bool = False,
        transpose_b: bool = False) -> torch.Tensor:
    """MXNet's ``dot``: contract the last axis of ``a`` with the first of ``b``.

    ``transpose_a`` contracts ``a``'s first axis instead, ``transpose_b`` ``b``'s last.
    """
    if a.dtype != b.dtype:
        raise DTypeError(f"dot: dtypes differ, lhs {dtype_str(a.dtype)}, rhs {dtype_str(b.dtype)}")
    lshape, rshape = tuple(a.shape), tuple(b.shape)
    if a.dim() == 0 or b.dim() == 0:
        raise ShapeError(f"dot does not support 0-d operands: {lshape} X {rshape}")
    if a.dim() == 1 and b.dim() == 1 and (transpose_a or transpose_b):
        raise ShapeError("dot does not support transposed 1-D operands")
    lkeep, lk = _dot_halves(lshape, transpose_a)
    rkeep, rk = _dot_halves(rshape, not transpose_b)
    if lk != rk:
        raise ShapeError(f"dot shape error: {lshape} X {rshape} "
                         f"(contracted sizes {lk} vs. {rk})")
    lhs = a.reshape(lk, -1).t() if transpose_a else a.reshape(-1, lk)
    rhs = b.reshape(-1, rk).t() if transpose_b else b.reshape(rk, -1)
    if is_float(a.dtype):
        out = lhs @ rhs
    else:  # torch's CPU matmul has no integer kernels for every dtype; use int64
        out = (lhs.to(torch.int64) @ rhs.to(torch.int64)).to(a.dtype)
    oshape = (lkeep if a.dim() > 1 else ()) + (rkeep if b.dim() > 1 else ())
    return out.reshape(oshape or (1,))
