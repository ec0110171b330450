"""``mx.error``: MXNet's error types. Errors symgraph raises derive from
:class:`~symgraph.base.MXNetError`; ``InternalError`` marks a broken internal invariant.

>>> from symgraph import error
>>> issubclass(error.InternalError, error.MXNetError)
True
"""
from __future__ import annotations

from .base import MXNetError
from .base import register_error as register  # MXNet's name here for the error registry


class InternalError(MXNetError):
    """An internal invariant of the framework failed (a bug, not bad input)."""


__all__ = ["InternalError", "MXNetError", "register"]
