"""MXNet's Python-level ``nd`` functions that are not single operators: ``concatenate``,
``moveaxis``, ``onehot_encode``, ``true_divide``, ``logical_and/or/xor``, ``linspace``,
``eye``, ``histogram``, ``split_v2``, DLPack and numpy zero-copy exchange,
and the indexing helpers MXNet exports (``CachedOp`` is in :mod:`symgraph.imperative`).

>>> from symgraph import ndarray as nd
>>> nd.moveaxis(nd.zeros((2, 3, 4)), 0, -1).shape
(3, 4, 2)
>>> nd.concatenate([nd.ones((1, 2)), nd.zeros((2, 2))]).shape
(3, 2)
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np
import torch
import torch.utils.dlpack

from ..base import MXNetError, ShapeError
from .ndarray import NDArray, py_slice
from .op import divide
from .register import invoke, write_out

# MXNet's indexing dispatch codes
_NDARRAY_UNSUPPORTED_INDEXING = -1
_NDARRAY_BASIC_INDEXING = 0
_NDARRAY_ADVANCED_INDEXING = 1
_NDARRAY_EMPTY_TUPLE_INDEXING = 2


def concatenate(arrays, axis: int = 0, always_copy: bool = True) -> NDArray:
    """Join a list of arrays along ``axis`` (all other dims and the dtype must agree)."""
    if not isinstance(arrays, list) or not arrays or not isinstance(arrays[0], NDArray):
        raise MXNetError("concatenate takes a non-empty list of NDArrays")
    if not always_copy and len(arrays) == 1:
        return arrays[0]
    return invoke("concat", tuple(arrays), {"dim": axis})


def moveaxis(tensor: NDArray, source, destination) -> NDArray:
    """Move axes ``source`` to positions ``destination`` (others keep their order)."""
    ndim = tensor.ndim
    src, dst = _axes(source, ndim, "source"), _axes(destination, ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of "
                         "elements")
    order = [a for a in range(ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return invoke("transpose", (tensor,), {"axes": tuple(order)})


def _axes(axes, ndim: int, what: str) -> list[int]:
    """Axes normalised into ``[0, ndim)``; out-of-range or repeated axes raise ValueError."""
    axes = [axes] if isinstance(axes, numbers.Integral) else list(axes)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"moveaxis: {what} axis {a} is out of bounds for {ndim} dims")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"moveaxis: repeated axis in {what} {axes}")
    return out


def onehot_encode(indices: NDArray, out: NDArray) -> NDArray:
    """One-hot rows of ``indices`` written into ``out`` (its width is the depth)."""
    encoded = invoke("one_hot", (indices,), {"depth": out.shape[1], "dtype": out.dtype})
    return write_out(encoded, out)


def true_divide(lhs, rhs) -> NDArray:
    """``lhs / rhs`` (MXNet's alias of ``divide``)."""
    return divide(lhs, rhs)


def _logical(name: str, lhs, rhs):
    if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
        return invoke(f"broadcast_logical_{name}", (lhs, rhs), {})
    if isinstance(lhs, NDArray) or isinstance(rhs, NDArray):
        return invoke(f"_logical_{name}_scalar", (lhs if isinstance(lhs, NDArray) else rhs,),
                      {"scalar": rhs if isinstance(lhs, NDArray) else lhs})
    return float(bool(lhs) and bool(rhs) if name == "and" else bool(lhs) or bool(rhs)
                 if name == "or" else bool(lhs) != bool(rhs))


def logical_and(lhs, rhs):
    """Elementwise logical and (1/0 in the operands' dtype)."""
    return _logical("and", lhs, rhs)


def logical_or(lhs, rhs):
    """Elementwise logical or."""
    return _logical("or", lhs, rhs)


def logical_xor(lhs, rhs):
    """Elementwise logical xor."""
    return _logical("xor", lhs, rhs)


def linspace(start, stop, num, endpoint=True, ctx=None, dtype="float32") -> NDArray:
    """``num`` evenly spaced values (operator ``_linspace``)."""
    return invoke("_linspace", (), {"start": start, "stop": stop, "num": num,
                                    "endpoint": endpoint, "ctx": ctx, "dtype": dtype})


def eye(N, M=0, k=0, ctx=None, dtype="float32", **kwargs) -> NDArray:
    """An ``N x M`` array with ones on diagonal ``k`` (operator ``_eye``)."""
    return invoke("_eye", (), {"N": N, "M": M, "k": k, "ctx": ctx, "dtype": dtype, **kwargs})


def histogram(a: NDArray, bins=10, range=None):
    """Histogram counts and bin edges (operator ``_histogram``): ``bins`` is a count (with
    ``range``) or an NDArray of edges."""
    if isinstance(bins, NDArray):
        return invoke("_histogram", (a, bins), {})
    if range is None:
        raise ValueError("range cannot be None when bins is an integer")
    return invoke("_histogram", (a,), {"bin_cnt": bins, "range": range})


def split_v2(ary: NDArray, indices_or_sections, axis=0, squeeze_axis=False):
    """Split into equal sections or at the given indices (operator ``_split_v2``)."""
    if isinstance(indices_or_sections, numbers.Integral):
        extra = {"sections": indices_or_sections, "indices": ()}
    else:
        extra = {"sections": 0, "indices": (0, *indices_or_sections)}
    return invoke("_split_v2", (ary,), {"axis": axis, "squeeze_axis": squeeze_axis, **extra})


def to_dlpack_for_read(data: NDArray):
    """A DLPack capsule sharing ``data``'s memory (read access)."""
    return torch.utils.dlpack.to_dlpack(data._t)


to_dlpack_for_write = to_dlpack_for_read


def from_dlpack(dlpack) -> NDArray:
    """An NDArray sharing the memory of a DLPack capsule (or of an object with
    ``__dlpack__``)."""
    return NDArray(torch.utils.dlpack.from_dlpack(dlpack))


def from_numpy(ndarray: np.ndarray, zero_copy: bool = True, array_cls=NDArray) -> NDArray:
    """An NDArray over a C-contiguous numpy array's memory, which becomes read-only for
    numpy (as in MXNet: the NDArray owns it now); ``zero_copy=False`` copies."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy takes a numpy.ndarray, got {type(ndarray).__name__}")
    if zero_copy and not ndarray.flags["C_CONTIGUOUS"]:
        raise ValueError("Only c-contiguous arrays are supported for zero-copy")
    if not zero_copy:
        return array_cls(torch.from_numpy(ndarray.copy()))
    with warnings.catch_warnings():  # a read-only source (handed over before) stays shared
        warnings.simplefilter("ignore", UserWarning)
        out = array_cls(torch.from_numpy(ndarray))
    ndarray.setflags(write=False)  # MXNet hands the memory to the NDArray: numpy may only read
    return out


def imdecode(str_img, clip_rect=(0, 0, 0, 0), out=None, index=0, channels=3, mean=None):
    """Decode an image (operator ``_imdecode``; the image pipeline is another issue)."""
    return invoke("_imdecode", (), {"index": index, "x0": clip_rect[0], "y0": clip_rect[1],
                                    "x1": clip_rect[2], "y1": clip_rect[3],
                                    "c": channels}, out)


def get_indexing_dispatch_code(key) -> int:
    """Basic (ints, slices, None), advanced (arrays, lists) or empty-tuple indexing."""
    for idx in key:
        if isinstance(idx, NDArray | np.ndarray | list | tuple | range):
            if isinstance(idx, tuple) and not idx:
                return _NDARRAY_EMPTY_TUPLE_INDEXING
            return _NDARRAY_ADVANCED_INDEXING
        if not (isinstance(idx, py_slice | numbers.Integral) or idx is None):
            raise ValueError(f"NDArray does not support slicing with key {idx} of type "
                             f"{type(idx)}.")
    return _NDARRAY_BASIC_INDEXING


def indexing_key_expand_implicit_axes(key, shape):
    """``key`` with its ellipsis (or missing trailing axes) spelled out as ``slice(None)``;
    returns ``(expanded key, 0)``."""
    key = key if isinstance(key, tuple) else (key,)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("Cannot use more than one ellipsis (`...`) for indexing")
    rest = [k for k in key if k is not Ellipsis]
    at = next((i for i, k in enumerate(key) if k is Ellipsis), len(rest))
    fill = len(shape) + sum(1 for k in rest if k is None) - len(rest)
    return tuple(rest[:at]) + (slice(None),) * fill + tuple(rest[at:]), 0


def get_oshape_of_gather_nd_op(dshape, ishape) -> tuple[int, ...]:
    """Output shape of ``gather_nd`` for data ``dshape`` and indices ``ishape``."""
    if len(ishape) < 1 or ishape[0] > len(dshape):
        raise ShapeError(f"gather_nd: indices shape {ishape} does not fit data {dshape}")
    return tuple(ishape[1:]) + tuple(dshape[ishape[0]:])
