"""``mx.gluon.utils``: splitting batches over contexts, global-norm clipping, file checks.

>>> import symgraph as mx
>>> x = mx.nd.arange(6).reshape((3, 2))
>>> [s.shape for s in split_data(x, 2, even_split=False)]
[(2, 2), (1, 2)]
"""
from __future__ import annotations

import hashlib
import os
import warnings
import weakref
from collections import OrderedDict

import numpy as np
import torch

from .. import ndarray  # noqa: F401 - MXNet's names
from ..base import MXNetError
from ..context import Context
from ..ndarray import NDArray
from ..ndarray import array as _nd_array
from ..ndarray.sparse_array import value_of
from ..util import is_np_array, is_np_shape  # noqa: F401 - MXNet's names

__all__ = ["split_data", "split_and_load", "clip_global_norm", "check_sha1", "download",
           "replace_file", "DownloadError", "HookHandle"]


class DownloadError(MXNetError):
    """``download`` needs the network, which symgraph does not use (see docs/compat.md)."""


def split_data(data: NDArray, num_slice: int, batch_axis: int = 0,
               even_split: bool = True) -> list[NDArray]:
    """Split ``data`` into ``num_slice`` slices along ``batch_axis``.

    The first ``size % num_slice`` slices get one extra element when ``even_split`` is
    False. Slices along axis 0 are views of ``data`` (as MXNet's ``data[a:b]``); along
    other axes they are copies (MXNet's ``slice_axis``).

    Parameters
    ----------
    data : NDArray
        A batch of data.
    num_slice : int
        Number of slices.
    batch_axis : int, default 0
        The axis to split.
    even_split : bool, default True
        Raise ``ValueError`` when ``num_slice`` does not divide the axis.

    Returns
    -------
    list of NDArray
        A list even when ``num_slice`` is 1.

    Examples
    --------
    >>> import symgraph as mx
    >>> x = mx.nd.arange(8).reshape((2, 4))
    >>> [s.asnumpy().tolist() for s in split_data(x, 2, batch_axis=1)]
    [[[0.0, 1.0], [4.0, 5.0]], [[2.0, 3.0], [6.0, 7.0]]]
    >>> split_data(x, 3, batch_axis=1)
    Traceback (most recent call last):
    ...
    ValueError: data with shape (2, 4) cannot be evenly split into 3 slices along axis 1. \
Use a batch size that's multiple of 3 or set even_split=False to allow uneven partitioning \
of data.
    """
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError(
            f"data with shape {data.shape} cannot be evenly split into {num_slice} slices "
            f"along axis {batch_axis}. Use a batch size that's multiple of {num_slice} or set "
            "even_split=False to allow uneven partitioning of data.")
    n_each, extras = divmod(size, num_slice)
    sizes = [0] + extras * [n_each + 1] + (num_slice - extras) * [n_each]
    points = np.cumsum(sizes).tolist()
    if batch_axis == 0:
        slices = [data[points[i]:points[i + 1]] for i in range(num_slice)]
    else:
        slices = [NDArray(data._t.narrow(batch_axis, points[i], points[i + 1] - points[i])
                          .clone()) for i in range(num_slice)]
    for piece in slices:
        piece._ctx = data.context
    return slices


def split_and_load(data, ctx_list: list[Context], batch_axis: int = 0,
                   even_split: bool = True) -> list[NDArray]:
    """Split ``data`` into ``len(ctx_list)`` slices and copy each to its context.

    ``data`` that is not an NDArray is first converted with ``mx.nd.array`` (float32).

    >>> import symgraph as mx
    >>> parts = split_and_load([[1, 2], [3, 4]], [mx.cpu(0), mx.cpu(1)])
    >>> [p.asnumpy().tolist() for p in parts]
    [[[1.0, 2.0]], [[3.0, 4.0]]]
    """
    if not isinstance(data, NDArray):
        data = _nd_array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [s.as_in_context(ctx) for s, ctx in zip(slices, ctx_list)]


def clip_global_norm(arrays: list[NDArray], max_norm: float, check_isfinite: bool = True):
    """Rescale ``arrays`` in place so that their joint 2-norm is at most ``max_norm``.

    Returns the norm before clipping: a float when ``check_isfinite`` (which warns on a
    nan or inf norm), else an NDArray of shape ``(1,)``.

    >>> import symgraph as mx
    >>> a, b = mx.nd.array([3.0]), mx.nd.array([4.0])
    >>> print(clip_global_norm([a, b], 1.0))
    5.0
    >>> a.asnumpy(), b.asnumpy()
    (array([0.6], dtype=float32), array([0.8], dtype=float32))
    """
    _require(len(arrays) > 0)
    # a sparse array's stored values are all its nonzero ones: no dense copy is made
    values = [value_of(a) for a in arrays]
    stored = [v if isinstance(v, torch.Tensor) else v.data for v in values]
    squares = [(t.reshape(-1) * t.reshape(-1)).sum().to(stored[0].device) for t in stored]
    total = torch.stack(squares).sum().sqrt().reshape(1)
    total_norm = NDArray(total)
    total_norm._ctx = arrays[0].context
    if check_isfinite and not np.isfinite(total_norm.asscalar()):
        warnings.warn(UserWarning('nan or inf is detected. Clipping results will be undefined.'),
                      stacklevel=2)
    scale = torch.clamp(max_norm / (total + 1e-8), max=1.0)
    for arr, v, t in zip(arrays, values, stored):
        scaled = scale.to(device=t.device, dtype=t.dtype)
        if arr._is_sparse:  # a sparse value is replaced, never written in place
            arr._assign(v._replace(data=t * scaled))
        else:
            t.mul_(scaled)
    if check_isfinite:
        return total_norm.asscalar()
    return total_norm


def check_sha1(filename: str, sha1_hash: str) -> bool:
    """Whether the SHA-1 of the file's content is ``sha1_hash`` (hex digits)."""
    sha1 = hashlib.sha1()
    with open(filename, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            sha1.update(chunk)
    return sha1.hexdigest() == sha1_hash


def replace_file(src: str, dst: str) -> None:
    """Atomically move ``src`` to ``dst`` (``os.replace``)."""
    os.replace(src, dst)


def _download_target(url: str, path: str | None) -> str:
    """The file name ``download`` writes to, as MXNet builds it."""
    if path is None:
        fname = url.split('/')[-1]
        if not fname:
            raise AssertionError(
                "Can't construct file-name from this URL. "
                "Please set the `path` option manually.")
        return fname
    path = os.path.expanduser(path)
    return os.path.join(path, url.split('/')[-1]) if os.path.isdir(path) else path


def download(url: str, path: str | None = None, overwrite: bool = False,
             sha1_hash: str | None = None, retries: int = 5, verify_ssl: bool = True) -> str:
    """The local path of ``url``'s file, if it is already there (symgraph never downloads).

    As MXNet, an existing file is reused unless ``overwrite`` or its SHA-1 differs from
    ``sha1_hash``; where MXNet would then fetch the URL, a :class:`DownloadError` says
    where to put the file.

    >>> download('https://example.com/model.params', path='/nonexistent/model.params')
    Traceback (most recent call last):
    ...
    symgraph.gluon.utils.DownloadError: symgraph does not download files: fetch \
https://example.com/model.params yourself and save it as /nonexistent/model.params \
(see docs/compat.md)
    """
    fname = _download_target(url, path)
    if retries < 0:
        raise AssertionError(
            f"Number of retries should be at least 0, currently it's {retries}")
    if not (overwrite or not os.path.exists(fname)
            or (sha1_hash and not check_sha1(fname, sha1_hash))):
        return fname
    raise DownloadError(f"symgraph does not download files: fetch {url} yourself and save "
                        f"it as {fname} (see docs/compat.md)")


def _require(condition, message: str = "") -> None:
    """MXNet's argument checks raise ``AssertionError``; this one stays under ``python -O``
    and pytest's assertion rewriting."""
    if not condition:
        raise AssertionError(message)


def _indent(s_: str, num_spaces: int) -> str:
    """Indent every line of ``s_`` but the first by ``num_spaces``."""
    lines = s_.split('\n')
    if len(lines) == 1:
        return s_
    return '\n'.join([lines[0]] + [(num_spaces * ' ') + line for line in lines[1:]])


def _brief_print_list(lst, limit: int = 7) -> str:
    """At most ``limit`` quoted elements of ``lst``, with ``...`` in the middle."""
    lst = list(lst)
    if len(lst) > limit:
        return _brief_print_list(lst[:limit // 2], limit) + ', ..., ' + \
            _brief_print_list(lst[-limit // 2:], limit)
    return ', '.join([f"'{i}'" for i in lst])


def shape_is_known(shape) -> bool:
    """Whether every dimension of ``shape`` is known (MXNet 1.x legacy shapes: 0 = unknown)."""
    if shape is None:
        return False
    if len(shape) == 0:
        return False
    for dim in shape:
        if dim == 0:
            return False
        if dim < 0:
            raise AssertionError(
                f"shape dimension size cannot be less than 0, while received {dim}")
    return True


# bumped whenever a block's hooks change anywhere: blocks recheck whether hooks concern them
HOOKS_VERSION = [0]


class HookDict(OrderedDict):
    """A block's forward hooks (id -> hook); changes bump :data:`HOOKS_VERSION`."""

    def __setitem__(self, key, value) -> None:
        HOOKS_VERSION[0] += 1
        super().__setitem__(key, value)

    def __delitem__(self, key) -> None:
        HOOKS_VERSION[0] += 1
        super().__delitem__(key)


class HookHandle:
    """A handle that attaches a hook to a hook dictionary and detaches it again.

    Examples
    --------
    >>> hooks = {}
    >>> handle = HookHandle()
    >>> handle.attach(hooks, print)
    >>> len(hooks)
    1
    >>> with handle:
    ...     pass
    >>> len(hooks)
    0
    >>> handle.attach(hooks, print)
    Traceback (most recent call last):
    ...
    AssertionError: The same handle cannot be attached twice.
    """

    def __init__(self):
        self._hooks_dict_ref = None
        self._id = None

    def attach(self, hooks_dict: dict, hook) -> None:
        """Add ``hook`` to ``hooks_dict`` (kept weakly: a dropped block takes its hooks)."""
        if self._hooks_dict_ref is not None:
            raise AssertionError("The same handle cannot be attached twice.")
        self._id = id(hook)
        hooks_dict[self._id] = hook
        self._hooks_dict_ref = weakref.ref(hooks_dict) if _weakrefable(hooks_dict) \
            else (lambda: hooks_dict)

    def detach(self) -> None:
        """Remove the hook (nothing happens when it is gone already)."""
        hooks_dict = self._hooks_dict_ref() if self._hooks_dict_ref is not None else None
        if hooks_dict is not None and self._id in hooks_dict:
            del hooks_dict[self._id]

    def __getstate__(self) -> tuple:
        return (self._hooks_dict_ref() if self._hooks_dict_ref is not None else None,
                self._id)

    def __setstate__(self, state: tuple) -> None:
        hooks_dict, self._id = state
        self._hooks_dict_ref = None if hooks_dict is None else \
            (weakref.ref(hooks_dict) if _weakrefable(hooks_dict) else (lambda: hooks_dict))

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.detach()


def _weakrefable(obj) -> bool:
    try:
        weakref.ref(obj)
    except TypeError:  # a plain dict
        return False
    return True
