"""Random arrays: ``nd.random.uniform`` and ``nd.random.normal``.

Every draw uses :func:`symgraph.random.generator` for the target context, so
``mx.random.seed`` makes the results reproducible.
"""
from __future__ import annotations

import numbers

import torch

from .. import random as _random
from ..base import DTypeError, dtype_name, to_torch_dtype
from ..context import Context, current_context
from .ndarray import NDArray

_FLOAT_NAMES = ("float16", "float32", "float64")


def _out_shape(shape, default: tuple) -> tuple[int, ...]:
    if shape is None:
        return default
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def _float_dtype(dtype, op: str) -> torch.dtype:
    name = dtype_name(dtype)
    if name not in _FLOAT_NAMES:
        raise DTypeError(f"Invalid Input: {name!r} for dtype of {op}, valid values are "
                         f"{', '.join(_FLOAT_NAMES)}")
    return to_torch_dtype(name)


def _sample(op: str, params: tuple, shape, dtype, ctx: Context | None,
            out: NDArray | None) -> NDArray:
    """Draw standard samples and scale them by ``params`` (scalars or NDArrays)."""
    a, b = params
    per_element = isinstance(a, NDArray) or isinstance(b, NDArray)
    if per_element and not (isinstance(a, NDArray) and isinstance(b, NDArray)):
        raise TypeError(f"{op}: the distribution parameters must be both scalars or both "
                        "NDArrays")
    if out is not None:
        shape, target, ctx = out.shape, out._t.dtype, out.context
    else:
        base = a.shape if per_element else ()
        shape = base + _out_shape(shape, () if per_element else (1,))
        target = _float_dtype(a.dtype if per_element and dtype is None else dtype, op)
        ctx = a.context if per_element else (ctx or current_context())
    gen = _random.generator(ctx)
    draw = torch.empty(shape, dtype=target, device=ctx.torch_device)
    if per_element:
        lead = a.shape + (1,) * (len(shape) - a.ndim)
        a_t, b_t = a._t.reshape(lead).to(target), b._t.reshape(lead).to(target)
        if op == "uniform":
            draw = a_t + (b_t - a_t) * draw.uniform_(0.0, 1.0, generator=gen)
        else:
            draw = a_t + b_t * draw.normal_(0.0, 1.0, generator=gen)
    elif op == "uniform":
        draw.uniform_(float(a), float(b), generator=gen)
    else:
        draw.normal_(float(a), float(b), generator=gen)
    if out is None:
        return NDArray(draw)
    out._t.copy_(draw)
    return out


def uniform(low=0.0, high=1.0, shape=None, dtype=None, ctx: Context | None = None,
            out: NDArray | None = None, **kwargs) -> NDArray:
    """Samples from the uniform distribution on ``[low, high)``.

    Parameters
    ----------
    low, high : float or NDArray
        Bounds; NDArrays give one distribution per element and an output of shape
        ``low.shape + shape``.
    shape : int or tuple, optional
        Sample shape (``(1,)`` for scalar bounds when not given).
    dtype : {'float32', 'float16', 'float64'}, optional
    ctx : Context, optional
        Device (the current context by default).
    out : NDArray, optional
        Array to fill; its shape and dtype win.

    Examples
    --------
    >>> from symgraph import ndarray as nd
    >>> x = nd.random.uniform(-1, 1, shape=(2, 3))
    >>> x.shape, bool((x.abs() <= 1).min())
    ((2, 3), True)
    >>> nd.random.uniform(nd.array([0, 10]), nd.array([1, 11]), shape=3).shape
    (2, 3)
    """
    return _sample("uniform", (low, high), shape, dtype, ctx, out)


def normal(loc=0.0, scale=1.0, shape=None, dtype=None, ctx: Context | None = None,
           out: NDArray | None = None, **kwargs) -> NDArray:
    """Samples from the normal distribution with mean ``loc`` and deviation ``scale``.

    Arguments are as for :func:`uniform`.

    Examples
    --------
    >>> from symgraph import ndarray as nd
    >>> bool(nd.random.normal(0, 1, shape=(1000,)).mean().abs() < 0.2)
    True
    >>> nd.random.normal(dtype='int32')
    Traceback (most recent call last):
    ...
    symgraph.base.DTypeError: Invalid Input: 'int32' for dtype of normal, valid values are \
float16, float32, float64
    """
    return _sample("normal", (loc, scale), shape, dtype, ctx, out)
