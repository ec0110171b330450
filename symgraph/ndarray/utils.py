"""Creating arrays: ``array``, ``zeros``, ``ones``, ``empty``, ``full``, ``arange``."""
from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from .. import profiler as _profiler
from ..base import ShapeError, dtype_name, names_from, to_torch_dtype
from ..context import Context, current_context
from . import _math
from .ndarray import NDArray


def _on(arr: NDArray, ctx: Context | None) -> NDArray:
    """``arr`` labelled with the context it was made for (cpu(1) is a CPU tensor too)."""
    arr._ctx = ctx if ctx is not None else current_context()
    return arr


def _device(ctx: Context | None) -> torch.device:
    return (ctx if ctx is not None else current_context()).torch_device


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def array(source_array, ctx: Context | None = None, dtype=None) -> NDArray:
    """A new array holding a copy of ``source_array``.

    The dtype is ``dtype`` if given, else the source's dtype for an NDArray or a torch
    tensor, else float32: MXNet turns numpy float64 and int64 data into float32.

    Parameters
    ----------
    source_array : array_like, NDArray or torch.Tensor
        The data (nested lists, numpy arrays, scalars...).
    ctx : Context, optional
        Device of the new array (the current context by default).
    dtype : str or numpy dtype, optional
        Element type.

    Examples
    --------
    >>> from symgraph import ndarray as nd
    >>> import numpy as np
    >>> nd.array(np.arange(3.0)).dtype
    <class 'numpy.float32'>
    >>> nd.array([1, 2], dtype='int64')
    <BLANKLINE>
    [1 2]
    <NDArray 2 @cpu(0)>
    >>> nd.array(nd.array([1, 2], dtype='int32')).dtype
    <class 'numpy.int32'>
    """
    if getattr(source_array, "_is_sparse", False) or hasattr(source_array, "tocsr"):
        from . import sparse  # MXNet: a sparse source (or scipy matrix) stays sparse
        return sparse.array(source_array, ctx=ctx, dtype=dtype)
    device = _device(ctx)
    if isinstance(source_array, (NDArray, torch.Tensor)):
        src = source_array._t if isinstance(source_array, NDArray) else source_array
        target = src.dtype if dtype is None else to_torch_dtype(dtype)
        return _on(NDArray(src.detach().to(device=device, dtype=target, copy=True)), ctx)
    target = to_torch_dtype(dtype)
    name = dtype_name(target)
    try:
        data = np.asarray(source_array)
        if data.dtype == object:
            raise TypeError("object arrays")
        data = np.array(data, dtype=np.float32 if name == "bfloat16" else name)
    except (TypeError, ValueError) as err:
        raise TypeError(f"source_array must be array like object, got {type(source_array)}") \
            from err
    return _on(NDArray(torch.from_numpy(data).to(device=device, dtype=target)), ctx)


def empty(shape, ctx: Context | None = None, dtype=None, stype: str | None = None) -> NDArray:
    """An uninitialised array of ``shape`` (float32 by default); a sparse ``stype`` gives an
    array with nothing stored.

    >>> from symgraph import ndarray as nd
    >>> nd.empty((2, 3)).shape
    (2, 3)
    >>> nd.empty((2, 3), stype='csr').stype
    'csr'
    """
    if stype not in (None, "default"):
        from . import sparse
        return sparse.empty(stype, shape, ctx=ctx, dtype=dtype)
    return _on(NDArray(torch.empty(_shape(shape), dtype=to_torch_dtype(dtype),
                              device=_device(ctx))), ctx)


def _filled(shape, ctx, dtype, value: float, out: NDArray | None) -> NDArray:
    from ..util import is_np_shape
    if not is_np_shape() and (not _shape(shape) or 0 in _shape(shape)):
        # legacy shapes read 0 as "unknown" and () as "no shape": MXNet's _zeros/_ones fail
        raise ShapeError(f"Operator _{'zeros' if value == 0 else 'ones'} inferring shapes "
                         f"failed: shape {_shape(shape)} has an unknown (0) dimension; "
                         "zero-size and 0-d arrays need `with mx.np_shape(True)`")
    if out is not None:  # MXNet's out=: fill the given array (its shape must match)
        if tuple(out.shape) != _shape(shape):
            raise ShapeError(f"out= array has shape {out.shape}, requested {_shape(shape)}")
        out._t.fill_(value)
        return out
    return _on(NDArray(torch.full(_shape(shape), value, dtype=to_torch_dtype(dtype),
                                  device=_device(ctx))), ctx)


def zeros(shape, ctx: Context | None = None, dtype=None, stype: str | None = None, *,
          out: NDArray | None = None, **kwargs) -> NDArray:
    """An array of zeros (float32 by default); ``shape`` may be an int; a sparse ``stype``
    gives an array with nothing stored (:func:`symgraph.ndarray.sparse.zeros`).

    >>> from symgraph import ndarray as nd
    >>> nd.zeros(3, dtype='int32')
    <BLANKLINE>
    [0 0 0]
    <NDArray 3 @cpu(0)>
    >>> nd.zeros((4, 2), stype='row_sparse').indices.shape
    (0,)
    """
    if stype not in (None, "default"):
        from . import sparse
        return sparse.zeros(stype, shape, ctx=ctx, dtype=dtype, out=out)
    if _profiler.ACTIVE.imperative:
        return _profiler.call_imperative("_zeros", _filled, shape, ctx, dtype, 0, out)
    return _filled(shape, ctx, dtype, 0, out)


def ones(shape, ctx: Context | None = None, dtype=None, out: NDArray | None = None,
         **kwargs) -> NDArray:
    """An array of ones (float32 by default).

    >>> from symgraph import ndarray as nd
    >>> nd.ones((1, 2))
    <BLANKLINE>
    [[1. 1.]]
    <NDArray 1x2 @cpu(0)>
    """
    if _profiler.ACTIVE.imperative:
        return _profiler.call_imperative("_ones", _filled, shape, ctx, dtype, 1, out)
    return _filled(shape, ctx, dtype, 1, out)


def full(shape, val, ctx: Context | None = None, dtype=None,
         out: NDArray | None = None) -> NDArray:
    """An array filled with ``val`` cast to ``dtype`` (written into ``out`` if given).

    >>> from symgraph import ndarray as nd
    >>> nd.full((2,), 2.7, dtype='int32')
    <BLANKLINE>
    [2 2]
    <NDArray 2 @cpu(0)>
    """
    if out is None:
        out = empty(shape, ctx, dtype)
    out._t.copy_(_math.scalar_like(val, out._t))
    return out


def arange(start, stop=None, step=1.0, repeat: int = 1, infer_range=None,
           ctx: Context | None = None, dtype=None) -> NDArray:
    """Evenly spaced values in ``[start, stop)``, each repeated ``repeat`` times.

    Values are computed as MXNet does, ``start + i * step`` in the target dtype.

    >>> from symgraph import ndarray as nd
    >>> nd.arange(3, repeat=2)
    <BLANKLINE>
    [0. 0. 1. 1. 2. 2.]
    <NDArray 6 @cpu(0)>
    >>> nd.arange(2, 5, 0.5).asnumpy()
    array([2. , 2.5, 3. , 3.5, 4. , 4.5], dtype=float32)
    >>> nd.arange(5, 1)
    Traceback (most recent call last):
    ...
    symgraph.base.ShapeError: Invalid range (start, stop, step) = (5, 1, 1.0)
    """
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ShapeError(f"Range does not support step=0, received {step}")
    if (step > 0 and not start < stop) or (step < 0 and not start > stop):
        raise ShapeError(f"Invalid range (start, stop, step) = ({start}, {stop}, {step})")
    count = math.ceil((stop - start) / step)
    device, target = _device(ctx), to_torch_dtype(dtype)
    index = torch.arange(count, device=device).to(target)
    ref = torch.empty((), dtype=target, device=device)
    values = _math.scalar_like(start, ref) + index * _math.scalar_like(step, ref)
    if repeat != 1:
        values = values.repeat_interleave(int(repeat))
    return _on(NDArray(values), ctx)


def waitall() -> None:
    """Wait until all pending device work is done (a no-op without CUDA)."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


# names MXNet's mxnet/ndarray/utils.py defines that symgraph's package holds
__getattr__ = names_from(__name__, 'symgraph.ndarray', (
    'load', 'load_frombuffer', 'save',
))
