"""``MXDataIter``: MXNet's wrapper of its C++ iterators, over symgraph's Python ones.

MXNet builds ``MNISTIter``, ``CSVIter``, ``ImageRecordIter``... in C++ and hands Python an
``MXDataIter`` around the handle. symgraph implements ``MNISTIter`` and ``CSVIter`` in
Python as :class:`NativeIter` objects (the handle) behind the same ``MXDataIter`` front, so
batches, ``first_batch``, ``provide_data`` and reset behave as MXNet's. The RecordIO image
iterators (``image_record.py``) and ``LibSVMIter`` (``libsvm.py``) are such handles too.
"""
from __future__ import annotations

import logging

import numpy as np
import torch

from ..base import MXNetError, unsupported
from ..ndarray import NDArray
from .io import DataBatch, DataDesc, DataIter

__all__ = ["BatchLoader", "MXDataIter", "NativeIter", "RowCursor"]


class NativeIter:
    """What ``MXDataIter`` drives (MXNet's C++ ``IIterator<DataBatch>``): move with
    ``before_first``/``next``, read the current batch with ``data``, ``label``, ``index``
    and ``pad``."""

    def before_first(self) -> None:
        raise NotImplementedError()

    def next(self) -> bool:
        raise NotImplementedError()

    def data(self) -> NDArray:
        raise NotImplementedError()

    def label(self) -> NDArray:
        raise NotImplementedError()

    def index(self) -> np.ndarray | None:
        return None

    def pad(self) -> int:
        return 0


class MXDataIter(DataIter):
    """A data iterator over a native iterator (MXNet's wrapper of a C++ iterator handle).

    The first batch is read at construction to learn ``provide_data``/``provide_label``
    and is handed out by the first ``next``.

    Parameters
    ----------
    handle : NativeIter
        The iterator to drive (MXNet: a C++ ``DataIterHandle``, which symgraph has not).
    data_name, label_name : str
    """

    def __init__(self, handle, data_name: str = "data", label_name: str = "softmax_label",
                 **_):
        super().__init__()
        if not isinstance(handle, NativeIter):
            raise unsupported("MXDataIter over a C++ iterator handle",
                              "symgraph has no C++ data iterators; its mx.io iterators "
                              "are implemented in Python")
        self.handle = handle
        self._debug_skip_load = False
        self._debug_at_begin = True
        self.first_batch = None
        self.first_batch = self.next()
        data, label = self.first_batch.data[0], self.first_batch.label[0]
        self.provide_data = [DataDesc(data_name, data.shape, data.dtype)]
        self.provide_label = [DataDesc(label_name, label.shape, label.dtype)]
        self.batch_size = data.shape[0]

    def debug_skip_load(self) -> None:
        """From now on return the first batch again and again (to time without I/O)."""
        self._debug_skip_load = True
        logging.info("Set debug_skip_load to be true, will simply return first batch")

    def reset(self) -> None:
        self._debug_at_begin = True
        self.first_batch = None
        self.handle.before_first()

    def next(self) -> DataBatch:
        if self._debug_skip_load and not self._debug_at_begin:
            return self._current()
        if self.first_batch is not None:
            batch, self.first_batch = self.first_batch, None
            return batch
        self._debug_at_begin = False
        if self.handle.next():
            return self._current()
        raise StopIteration

    def _current(self) -> DataBatch:
        return DataBatch(data=[self.getdata()], label=[self.getlabel()], pad=self.getpad(),
                         index=self.getindex())

    def iter_next(self) -> bool:
        if self.first_batch is not None:
            return True
        return bool(self.handle.next())

    def getdata(self) -> NDArray:
        return self.handle.data()

    def getlabel(self) -> NDArray:
        return self.handle.label()

    def getindex(self) -> np.ndarray | None:
        return self.handle.index()

    def getpad(self) -> int:
        return self.handle.pad()


class RowCursor(NativeIter):
    """Which rows make each batch, as MXNet's C++ ``BatchLoader`` picks them.

    A short last batch is completed from the first rows (``round_batch``; the next epoch
    then starts after them and ``reset`` keeps its place) or left short (``pad`` says how
    many rows are missing either way). Subclasses copy the rows in ``take``.
    """

    def __init__(self, num_rows: int, batch_size: int, round_batch: bool = True):
        self._n, self.batch_size, self.round_batch = num_rows, batch_size, round_batch
        self._pos = self._overflow = self._pad = 0

    def before_first(self) -> None:
        if not self.round_batch or self._overflow == 0:
            self._pos = 0
        else:  # the overflow batch already started the next pass
            self._overflow = 0

    def take(self, rows: np.ndarray) -> None:
        """Make the rows ``rows`` (positions in the data) the current batch."""
        raise NotImplementedError()

    def next(self) -> bool:
        self._pad = 0
        if self._overflow:
            return False
        top = min(self.batch_size, self._n - self._pos)
        if top <= 0:
            return False
        rows = np.arange(self._pos, self._pos + top, dtype=np.int64)
        missing = self.batch_size - top
        if missing and self.round_batch:
            if missing > self._n:  # checked before anything moves
                raise MXNetError("number of input must be bigger than batch size")
            rows = np.concatenate([rows, np.arange(missing, dtype=np.int64)])
            self._pos, self._overflow = missing, missing
        else:
            self._pos += top
        self._pad = missing
        self.take(rows)
        return True

    def pad(self) -> int:
        return self._pad


class BatchLoader(RowCursor):
    """Dense batches of the rows of in-memory arrays (MXNet's C++ ``BatchLoader``); without
    ``round_batch`` a short last batch keeps the previous batch's rows in its tail."""

    def __init__(self, data: np.ndarray, label: np.ndarray, batch_size: int,
                 round_batch: bool = True):
        super().__init__(data.shape[0], batch_size, round_batch)
        self._src, self._lab = data, label
        self._data = np.zeros((batch_size,) + data.shape[1:], data.dtype)
        self._label = np.zeros((batch_size,) + label.shape[1:], label.dtype)
        self._index = np.zeros(batch_size, np.uint64)

    def take(self, rows: np.ndarray) -> None:
        count = rows.shape[0]
        self._data[:count] = self._src[rows]
        self._label[:count] = self._lab[rows]
        self._index[:count] = rows.astype(np.uint64)

    def data(self) -> NDArray:
        return NDArray(torch.from_numpy(self._data.copy()))

    def label(self) -> NDArray:
        return NDArray(torch.from_numpy(self._label.copy()))

    def index(self) -> np.ndarray:
        return self._index.copy()


def libstdcxx_shuffle(n: int, seed: int) -> np.ndarray:
    """The order ``std::shuffle`` (libstdc++ before GCC 10) with ``std::mt19937(seed)`` puts
    ``0..n-1`` in: MXNet's C++ iterators shuffle this way, so a seed gives MXNet's order.

    >>> libstdcxx_shuffle(6, 0).tolist()  # MXNet's MNISTIter(seed=0) order of 6 images
    [0, 2, 3, 5, 4, 1]
    """
    draws = _MT19937Draws(seed)
    order = list(range(n))
    for i in range(1, n):
        j = draws.uniform(i)
        order[i], order[j] = order[j], order[i]
    return np.asarray(order, dtype=np.int64)


class _MT19937Draws:
    """32-bit outputs of ``std::mt19937(seed)`` (numpy's legacy seeding is the same) and
    libstdc++'s ``uniform_int_distribution`` over them (rejection, then one division)."""

    _RANGE = 2 ** 32 - 1

    def __init__(self, seed: int):
        self._rs = np.random.RandomState(seed & 0xFFFFFFFF)
        self._buf: list[int] = []
        self._next = 0

    def raw(self) -> int:
        if self._next == len(self._buf):
            self._buf = self._rs.randint(0, 2 ** 32, size=4096, dtype=np.uint32).tolist()
            self._next = 0
        self._next += 1
        return self._buf[self._next - 1]

    def uniform(self, high: int) -> int:
        """A draw in ``[0, high]``."""
        scaling = self._RANGE // (high + 1)
        past = (high + 1) * scaling
        while True:
            value = self.raw()
            if value < past:
                return value // scaling
