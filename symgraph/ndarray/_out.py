"""MXNet's ``out=`` argument: results written into given arrays (dense or sparse)."""
from __future__ import annotations

from ..base import MXNetError, ShapeError


def _accepts_out(method):
    """MXNet's ``out=`` on a reduction method (numpy's ``np.argmax(x, axis=1)`` passes
    ``out=None``): the result is written into ``out``, which is returned."""
    def call(self, *args, out=None, **kwargs):
        result = method(self, *args, **kwargs)
        if out is None:
            return result
        return write_out(result, out)

    call.__name__ = call.__qualname__ = method.__name__
    call.__doc__, call.__wrapped__ = method.__doc__, method
    return call


def write_out(results, out):
    """Copy ``results`` (an NDArray or a list) into ``out`` (the same); returns ``out``."""
    results = [results] if hasattr(results, "_is_sparse") else list(results)
    targets = [out] if hasattr(out, "_is_sparse") else list(out)
    if len(targets) != len(results):
        raise MXNetError(f"out= gives {len(targets)} arrays for {len(results)} outputs")
    for target, value in zip(targets, results):
        if tuple(target.shape) != tuple(value.shape):
            raise ShapeError(f"out= array has shape {target.shape}, the result has shape "
                             f"{value.shape}")
        if target._is_sparse:  # a sparse array takes the value over in its own storage
            target._assign(value._value if value._is_sparse else value._t)
        else:
            target._t.copy_(value._t)
    return out
