"""Typed errors (MXNet's ``MXNetError`` is the base) and dtype names."""
from __future__ import annotations

import numpy as np
import torch


class MXNetError(RuntimeError):
    """Base class of every error symgraph raises on bad input (MXNet's name)."""


SymgraphError = MXNetError


class ShapeError(MXNetError, ValueError):
    """Shapes are inconsistent, missing or cannot be inferred."""


class DTypeError(MXNetError, TypeError):
    """A dtype is unknown or inconsistent."""


class AttrError(MXNetError, ValueError):
    """An operator attribute is unknown, missing or has an invalid value."""


class OpNotFoundError(MXNetError, KeyError):
    """No operator is registered under the given name."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class GraphError(MXNetError, ValueError):
    """A graph is malformed: cycles, duplicate names, bad JSON, dangling inputs."""


class BindError(MXNetError, ValueError):
    """Arrays given at bind time do not match the symbol (count, shape, dtype, grad_req)."""


class UnsupportedError(MXNetError, NotImplementedError):
    """A part of MXNet 1.9.1 that symgraph does not provide; the message says what and why
    (sparse storage, custom operators, a GPU-only feature, an operator not yet written)."""


class OpNotImplementedError(OpNotFoundError, UnsupportedError):
    """An operator MXNet 1.9.1 has and symgraph does not implement yet."""


def unsupported(what: str, why: str) -> UnsupportedError:
    """The error for an MXNet feature symgraph leaves out, e.g.
    ``raise unsupported("nd.sparse", "sparse storage is not implemented (dense only)")``.

    >>> str(unsupported("mx.rtc", "runtime CUDA compilation needs MXNet's C++ engine"))
    'mx.rtc is not supported by symgraph: runtime CUDA compilation needs MXNet's C++ engine'
    """
    return UnsupportedError(f"{what} is not supported by symgraph: {why}")


# MXNet's type flags (mshadow::TypeFlag) in the order MXNet numbers them.
_DTYPES: list[tuple[str, int, torch.dtype]] = [
    ("float32", 0, torch.float32),
    ("float64", 1, torch.float64),
    ("float16", 2, torch.float16),
    ("uint8", 3, torch.uint8),
    ("int32", 4, torch.int32),
    ("int8", 5, torch.int8),
    ("int64", 6, torch.int64),
    ("bool", 7, torch.bool),
    ("int16", 8, torch.int16),
    ("bfloat16", 12, torch.bfloat16),
]
NAME_TO_TORCH = {n: t for n, _, t in _DTYPES}
TORCH_TO_NAME = {t: n for n, _, t in _DTYPES}
FLAG_TO_NAME = {f: n for n, f, _ in _DTYPES}
NAME_TO_FLAG = {n: f for n, f, _ in _DTYPES}


def dtype_name(dtype) -> str:
    """Normalise a dtype given as a name, numpy dtype/type or torch dtype to MXNet's name.

    >>> dtype_name(np.float32), dtype_name('float16'), dtype_name(torch.int64)
    ('float32', 'float16', 'int64')
    """
    if isinstance(dtype, torch.dtype):
        if dtype in TORCH_TO_NAME:
            return TORCH_TO_NAME[dtype]
        raise DTypeError(f"dtype {dtype} is not supported")
    if dtype is None:
        return "float32"
    try:
        name = np.dtype(dtype).name
    except TypeError as err:
        raise DTypeError(f"Unknown dtype {dtype!r}") from err
    if name not in NAME_TO_TORCH:
        raise DTypeError(f"dtype {name} is not supported; use one of {sorted(NAME_TO_TORCH)}")
    return name


def to_torch_dtype(dtype) -> torch.dtype:
    """MXNet/numpy dtype to torch dtype."""
    return NAME_TO_TORCH[dtype_name(dtype)]


def to_numpy_dtype(dtype) -> type:
    """Any dtype spelling to the numpy scalar type MXNet's ``.dtype`` returns."""
    name = dtype_name(dtype)
    if name == "bfloat16":
        raise DTypeError("bfloat16 has no numpy dtype")
    return np.dtype(name).type
