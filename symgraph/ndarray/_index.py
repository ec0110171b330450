"""Indexing with MXNet 1.x's rules on plain tensors.

MXNet returns a view for a key that selects a contiguous block (``a[1]``, ``a[1:3]``,
``a[0, 1]``) and a copy otherwise (``a[:, 1]``, ``a[::2]``, array indices). A key made
only of integers gives shape ``(1,)``, not a 0-d array. Array indices are cast to
integers, so a 0/1 array indexes rows 0 and 1 rather than masking.
"""
from __future__ import annotations

import numbers

import numpy as np
import torch

from ..base import ShapeError


def _convert(k, device: torch.device):
    """One key element to an int, slice, None, Ellipsis or int64 tensor."""
    if k is None or k is Ellipsis or isinstance(k, slice):
        return k
    if isinstance(k, (bool, np.bool_)):
        return int(k)
    if isinstance(k, numbers.Integral):
        return int(k)
    if isinstance(k, torch.Tensor):
        return k.to(device=device, dtype=torch.int64)
    if isinstance(k, (np.ndarray, list, tuple)):  # a tuple inside the key is a sequence
        arr = np.asarray(k)
        if arr.dtype == object or not (arr.size == 0 or np.issubdtype(arr.dtype, np.number)
                                       or arr.dtype == np.bool_):
            raise IndexError(f"NDArray does not support indexing with {k!r}")
        return torch.from_numpy(arr.astype(np.int64)).to(device)
    raise IndexError(f"NDArray does not support indexing with key {k!r} of type {type(k)}")


def normalize(key, device: torch.device) -> tuple:
    """A key as a tuple of ints, slices, None, Ellipsis and int64 tensors."""
    if not isinstance(key, tuple):
        key = (key,)
    return tuple(_convert(k, device) for k in key)


def _expand_ellipsis(key: tuple, ndim: int) -> tuple:
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if Ellipsis not in key:
        return key + (slice(None),) * max(ndim - used, 0)
    at = key.index(Ellipsis)
    return key[:at] + (slice(None),) * max(ndim - used, 0) + key[at + 1:]


def _positive_steps(key: tuple, shape: tuple) -> tuple[tuple, list[int]]:
    """Replace negative-step slices by the same elements in forward order.

    Returns the new key and the result dims to flip afterwards (torch has no negative steps).
    """
    key = _expand_ellipsis(key, len(shape))
    out, flips, src, res = [], [], 0, 0
    for k in key:
        if k is None:
            out.append(k)
            res += 1
            continue
        if isinstance(k, slice) and k.step is not None and k.step < 0:
            picked = range(*k.indices(shape[src]))
            k = slice(picked[-1], picked[0] + 1, -k.step) if picked else slice(0, 0)
            flips.append(res)
        res += 0 if isinstance(k, int) else 1
        src += 1
        out.append(k)
    return tuple(out), flips


def _flipped_steps(key: tuple, shape: tuple) -> tuple[tuple, list[int]]:
    """For a key with array indices: the source dims to flip and the key that selects the
    same elements from the flipped tensor with positive-step slices (slices stay slices, so
    they do not broadcast with the arrays, as in numpy)."""
    out, dims, src = [], [], 0
    for k in _expand_ellipsis(key, len(shape)):
        if isinstance(k, slice) and k.step is not None and k.step < 0:
            n = shape[src]
            picked = range(*k.indices(n))
            k = slice(n - 1 - picked[0], n - picked[-1], -k.step) if picked else slice(0, 0)
            dims.append(src)
        src += k is not None
        out.append(k)
    return tuple(out), dims


def _has_tensor(key: tuple) -> bool:
    return any(isinstance(k, torch.Tensor) for k in key)


def _has_negative_step(key: tuple) -> bool:
    return any(isinstance(k, slice) and k.step is not None and k.step < 0 for k in key)


def getitem(t: torch.Tensor, key) -> torch.Tensor:
    """``t[key]`` with MXNet's view/copy and shape rules."""
    key = normalize(key, t.device)
    if _has_tensor(key):
        if _has_negative_step(key):
            key, dims = _flipped_steps(key, tuple(t.shape))
            t = t.flip(dims)
        out = t[key]
    else:
        pos, flips = _positive_steps(key, tuple(t.shape))
        out = t[pos]
        if flips:
            out = out.flip(flips)
        elif not (out.is_contiguous() and t.is_contiguous()):
            out = out.clone()
    return out.reshape(1) if out.dim() == 0 else out


def setitem(t: torch.Tensor, key, value: torch.Tensor) -> None:
    """``t[key] = value`` in place, broadcasting ``value`` to the selected region."""
    key = normalize(key, t.device)
    if _has_tensor(key):
        target, dims = t, []
        if _has_negative_step(key):  # write into a flipped copy, then copy it back
            key, dims = _flipped_steps(key, tuple(t.shape))
            target = t.flip(dims)
        try:
            target[key] = value
        except RuntimeError as err:
            raise ShapeError(f"cannot assign a value of shape {tuple(value.shape)} to the "
                             f"region selected by an array index: {err}") from err
        if dims:
            t.copy_(target.flip(dims))
        return
    pos, flips = _positive_steps(key, tuple(t.shape))
    view = t[pos]
    if view.dim() == 0:  # MXNet's result shape for an all-integer key is (1,)
        view = view.reshape(1)
    value = _broadcast(value, tuple(view.shape))
    view.copy_(value.flip(flips) if flips else value)


def _broadcast(value: torch.Tensor, shape: tuple) -> torch.Tensor:
    while value.dim() > len(shape) and value.shape[0] == 1:  # numpy drops leading 1-dims too
        value = value[0]
    try:
        return torch.broadcast_to(value, shape)
    except RuntimeError as err:
        raise ShapeError(f"cannot assign a value of shape {tuple(value.shape)} to a region "
                         f"of shape {shape}") from err


def slice_is_contiguous(slc_key, shape) -> bool:
    """Whether slicing a C-contiguous array of ``shape`` with ``slc_key`` (one slice per
    axis) gives a C-contiguous result (then MXNet's result shares the memory)."""
    assert len(slc_key) == len(shape)
    strides, stride = [], 1
    for n in reversed(shape):
        strides.append(stride)
        stride *= n
    expected, contiguous = 1, True
    for slc, n, st in zip(reversed(slc_key), reversed(shape), strides):
        start, stop, step = slc.indices(n)
        length = len(range(start, stop, step))
        if length == 0:
            return True
        if length > 1 and st * step != expected:
            contiguous = False
        expected *= length
    return contiguous or expected <= 1
