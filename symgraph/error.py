"""``mx.error``: MXNet's error types. Errors symgraph raises derive from
:class:`~symgraph.base.MXNetError`; ``InternalError`` marks a broken internal invariant.

>>> from symgraph import error
>>> issubclass(error.InternalError, error.MXNetError)
True
"""
from __future__ import annotations

from .base import MXNetError


class InternalError(MXNetError):
    """An internal invariant of the framework failed (a bug, not bad input)."""


__all__ = ["InternalError", "MXNetError"]
