"""The operator registry: importing this package registers every operator in :data:`OPS`."""
from __future__ import annotations

from . import (  # noqa: F401 - imported to register their ops
    activation,
    broadcast,
    elementwise,
    fully_connected,
    matmul,
    reduce,
    shape,
    softmax_output,
)
from .base import OPS, Case, OpDef, canonical_ops, get_op, register

__all__ = ["OPS", "Case", "OpDef", "canonical_ops", "get_op", "register"]
