"""DataDesc, DataBatch, the DataIter protocol, ResizeIter and NDArrayIter (MXNet 1.9.1)."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
import torch

from ..base import names_from
from ..ndarray import NDArray, array  # noqa: F401 - the doctests use array
from ..ndarray.sparse_array import CSRNDArray
from .utils import (
    _getdata_by_idx,
    _has_instance,
    _init_data,
    _slice_along_batch_axis,
    _take_rows,
)


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name, shape, dtype and layout of one input; a ``(name, shape)`` tuple for old code.

    >>> d = DataDesc('data', (32, 3, 8, 8))
    >>> d
    DataDesc[data,(32, 3, 8, 8),<class 'numpy.float32'>,NCHW]
    >>> d.name, d.shape, DataDesc.get_batch_axis('TNC')
    ('data', (32, 3, 8, 8), 1)
    """

    def __new__(cls, name: str, shape, dtype=np.float32, layout: str = "NCHW"):
        ret = super().__new__(cls, name, shape)
        ret.dtype = dtype
        ret.layout = layout
        return ret

    def __repr__(self) -> str:
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    @staticmethod
    def get_batch_axis(layout: str | None) -> int:
        """The position of 'N' in ``layout`` (0 when ``layout`` is None, -1 if absent)."""
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes, types) -> list[DataDesc]:
        """DataDescs from ``[(name, shape)]`` and optional ``[(name, dtype)]``.

        >>> DataDesc.get_list([('x', (2, 3))], [('x', np.int32)])
        [DataDesc[x,(2, 3),<class 'numpy.int32'>,NCHW]]
        """
        if types is not None:
            type_dict = dict(types)
            return [DataDesc(x[0], x[1], type_dict[x[0]]) for x in shapes]
        return [DataDesc(x[0], x[1]) for x in shapes]


class DataBatch:
    """One batch: lists of data and label arrays, ``pad`` (filler samples at the end),
    ``index``, ``bucket_key`` and optional ``provide_data``/``provide_label``.

    >>> b = DataBatch([array([[1, 2]])], [array([0])], pad=0)
    >>> print(b)
    DataBatch: data shapes: [(1, 2)] label shapes: [(1,)]
    >>> DataBatch(data=array([1]))
    Traceback (most recent call last):
    ...
    AssertionError: Data must be list of NDArrays
    """

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None,
                 provide_data=None, provide_label=None):
        if data is not None:
            assert isinstance(data, (list, tuple)), "Data must be list of NDArrays"
        if label is not None:
            assert isinstance(label, (list, tuple)), "Label must be list of NDArrays"
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self) -> str:
        data_shapes = [d.shape for d in self.data]
        label_shapes = [lb.shape for lb in self.label] if self.label else None
        return (f"{self.__class__.__name__}: data shapes: {data_shapes} "
                f"label shapes: {label_shapes}")


class DataIter:
    """Base class of data iterators: ``iter_next`` + ``getdata``/``getlabel``/``getpad``.

    >>> class Two(DataIter):
    ...     def __init__(self):
    ...         super().__init__(batch_size=1); self.n = 0
    ...     def iter_next(self):
    ...         self.n += 1; return self.n <= 2
    ...     def getdata(self): return [array([self.n])]
    ...     def getpad(self): return 0
    >>> [b.data[0].asnumpy().tolist() for b in Two()]
    [[1.0], [2.0]]
    """

    def __init__(self, batch_size: int = 0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self) -> None:
        """Go back to the start of the data."""

    def next(self) -> DataBatch:
        """The next batch; raises ``StopIteration`` at the end."""
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    def __next__(self) -> DataBatch:
        return self.next()

    def iter_next(self) -> bool:
        """Move to the next batch; False at the end."""

    def getdata(self):
        """The data arrays of the current batch."""

    def getlabel(self):
        """The label arrays of the current batch."""

    def getindex(self):
        """The sample indices of the current batch (None if unknown)."""
        return None

    def getpad(self):
        """How many samples at the end of the current batch are padding."""


class _CurrentBatchIter(DataIter):
    """An iterator whose getters read the batch its ``iter_next`` stored."""

    current_batch: DataBatch | None = None

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


class ResizeIter(_CurrentBatchIter):
    """Make ``data_iter`` yield exactly ``size`` batches per epoch, wrapping around.

    >>> base = NDArrayIter(np.arange(3), batch_size=1)
    >>> len(list(ResizeIter(base, 5)))
    5
    """

    def __init__(self, data_iter: DataIter, size: int, reset_internal: bool = True):
        super().__init__()
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self) -> None:
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self) -> bool:
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True


def part_rows(num: int, num_parts: int, part_index: int) -> torch.Tensor:
    """Row indices of part ``part_index`` of ``num_parts`` equal contiguous parts of ``num``
    rows (``ceil(num / num_parts)`` each; the last parts wrap around to the first rows).

    >>> part_rows(5, 2, 1).tolist()
    [3, 4, 0]
    >>> part_rows(5, 2, 2)
    Traceback (most recent call last):
    ...
    ValueError: part_index=2 must be in [0, num_parts=2)
    """
    if not isinstance(num_parts, int) or num_parts < 1:
        raise ValueError(f"num_parts={num_parts!r} must be a positive integer")
    if not isinstance(part_index, int) or not 0 <= part_index < num_parts:
        raise ValueError(f"part_index={part_index!r} must be in [0, num_parts={num_parts})")
    if num < 1:
        raise ValueError(f"cannot split {num} samples into {num_parts} parts")
    size = -(-num // num_parts)
    return torch.arange(part_index * size, (part_index + 1) * size) % num


def _batch_shape(shape: tuple, batch_axis: int, batch_size: int) -> tuple:
    return tuple(list(shape[:batch_axis]) + [batch_size] + list(shape[batch_axis + 1:]))


class NDArrayIter(DataIter):
    """Iterate over in-memory arrays in batches (MXNet 1.9.1's ``mx.io.NDArrayIter``).

    Parameters
    ----------
    data, label : array, list of arrays or dict of name -> array
        A single array is named ``data_name``/``label_name``; a list of several is named
        ``_0_data``, ``_1_data``...; the sources are ordered by name (dicts too).
    batch_size : int
    shuffle : bool
        Permute the samples at every reset, drawing from numpy's global RNG
        (``np.random.seed``) exactly as MXNet does, so a seed gives MXNet's order.
    last_batch_handle : {'pad', 'discard', 'roll_over'}
        'pad' fills the last batch from the start (``getpad`` says how many);
        'discard' drops it; 'roll_over' keeps it and completes it with the first samples
        of the next epoch after ``reset``.
    data_name, label_name : str
    layout : str
        Where 'N' is, the batch axis.
    num_parts, part_index : int
        symgraph's addition for distributed training (as MXNet's record iterators): iterate
        over part ``part_index`` of ``num_parts`` contiguous parts of the samples, typically
        ``num_parts=kv.num_workers, part_index=kv.rank``. Every part has
        ``ceil(n / num_parts)`` samples (the last parts wrap around to the first samples),
        so every worker makes the same number of batches, as ``dist_sync`` needs.

    >>> it = NDArrayIter(np.arange(5), batch_size=2, num_parts=2, part_index=1)
    >>> [b.data[0].asnumpy().tolist() for b in it]
    [[3.0, 4.0], [0.0, 3.0]]
    >>> it = NDArrayIter(np.arange(5), batch_size=2, last_batch_handle='roll_over')
    >>> [b.data[0].asnumpy().tolist() for b in it]
    [[0.0, 1.0], [2.0, 3.0]]
    >>> it.reset(); [(b.data[0].asnumpy().tolist(), b.pad) for b in it]
    [([4.0, 0.0], 1), ([1.0, 2.0], 0), ([3.0, 4.0], 0)]
    """

    def __init__(self, data, label=None, batch_size: int = 1, shuffle: bool = False,
                 last_batch_handle: str = "pad", data_name: str = "data",
                 label_name: str = "softmax_label", layout: str = "NCHW", num_parts: int = 1,
                 part_index: int = 0):
        super().__init__(batch_size)
        self.data = _init_data(data, allow_empty=False, default_name=data_name)
        self.label = _init_data(label, allow_empty=True, default_name=label_name)
        if last_batch_handle != "discard" and (_has_instance(self.data, CSRNDArray)
                                               or _has_instance(self.label, CSRNDArray)):
            raise NotImplementedError("`NDArrayIter` only supports ``CSRNDArray`` with "
                                      "`last_batch_handle` set to `discard`.")
        if num_parts != 1 or part_index != 0:
            axis = layout.find("N")
            rows = part_rows(self.data[0][1].shape[axis], num_parts, part_index)
            self.data, self.label = ([(k, _take_rows(v, rows, axis)) for k, v in source]
                                     for source in (self.data, self.label))
        self.idx = np.arange(self.data[0][1].shape[0])
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.batch_size = batch_size
        self.cursor = -self.batch_size
        self.num_data = self.idx.shape[0]
        self.layout = layout
        self._cache_data = None
        self._cache_label = None
        self.reset()
        self.data_list = [x[1] for x in self.data] + [x[1] for x in self.label]
        self.num_source = len(self.data_list)

    def _descs(self, source) -> list[DataDesc]:
        axis = self.layout.find("N")
        return [DataDesc(k, _batch_shape(v.shape, axis, self.batch_size), v.dtype,
                         layout=self.layout) for k, v in source]

    @property
    def provide_data(self) -> list[DataDesc]:
        """DataDescs of the data sources, with the batch size on the batch axis."""
        return self._descs(self.data)

    @property
    def provide_label(self) -> list[DataDesc]:
        """DataDescs of the label sources."""
        return self._descs(self.label)

    def hard_reset(self) -> None:
        """Reset, dropping any roll-over cache."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None

    def reset(self) -> None:
        """Back to the start; with 'roll_over' the cached partial batch comes first."""
        if self.shuffle:
            self._shuffle_data()
        if (self.last_batch_handle == "roll_over"
                and self.num_data - self.batch_size < self.cursor < self.num_data):
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self) -> bool:
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self) -> DataBatch:
        if not self.iter_next():
            raise StopIteration
        data = self.getdata()
        label = self.getlabel()
        # a short batch ('discard', or 'roll_over' keeping it for the next epoch) ends it
        if data[0].shape[self.layout.find("N")] != self.batch_size:
            self._cache_data = data
            self._cache_label = label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    def _getdata(self, data_source, start=None, end=None) -> list[NDArray]:
        assert start is not None or end is not None, "should at least specify start or end"
        start = start if start is not None else 0
        if end is None:
            end = data_source[0][1].shape[0] if data_source else 0
        axis = self.layout.find("N")
        # a copy, like MXNet 1.9.1's slice_axis: a batch never aliases the source arrays
        # (narrow + clone: torch's narrow_copy is ~2x slower on large CPU batches); the
        # batch of a sparse source is dense, as slice_axis's storage fallback makes it
        return [_slice_along_batch_axis(x[1], slice(start, min(end, x[1].shape[axis])), axis)
                for x in data_source]

    def _concat(self, first_data, second_data) -> list[NDArray]:
        if not first_data or not second_data:
            return first_data if first_data else second_data
        assert len(first_data) == len(second_data), "data source should contain the same size"
        axis = self.layout.find("N")
        return [NDArray(torch.cat([a._t, b._t], dim=axis))
                for a, b in zip(first_data, second_data)]

    @staticmethod
    def _tile(data, repeats: int) -> list[NDArray]:
        return [NDArray(d._t.repeat(repeats, *([1] * (d.ndim - 1)))) for d in data]

    def _batchify(self, data_source) -> list[NDArray]:
        cursor = self.cursor
        if 0 <= cursor and cursor + self.batch_size <= self.num_data:  # a whole batch
            return self._getdata(data_source, cursor, cursor + self.batch_size)
        assert self.cursor < self.num_data, "DataIter needs reset."
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            assert self._cache_data is not None or self._cache_label is not None, \
                "next epoch should have cached data"
            cache_data = self._cache_data if self._cache_data is not None else self._cache_label
            second_data = self._getdata(data_source, end=self.cursor + self.batch_size)
            if self._cache_data is not None:
                self._cache_data = None
            else:
                self._cache_label = None
            return self._concat(cache_data, second_data)
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            pad = self.batch_size - self.num_data + self.cursor
            first_data = self._getdata(data_source, start=self.cursor)
            if pad > self.num_data:
                second_data = self._tile(self._getdata(data_source, end=self.num_data),
                                         pad // self.num_data)
                if pad % self.num_data != 0:
                    second_data = self._concat(
                        second_data, self._getdata(data_source, end=pad % self.num_data))
            else:
                second_data = self._getdata(data_source, end=pad)
            return self._concat(first_data, second_data)
        end_idx = min(self.cursor + self.batch_size, self.num_data)
        return self._getdata(data_source, self.cursor, end_idx)

    def getdata(self) -> list[NDArray]:
        return self._batchify(self.data)

    def getlabel(self) -> list[NDArray]:
        return self._batchify(self.label)

    def getpad(self) -> int:
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0

    def _shuffle_data(self) -> None:
        # MXNet permutes the already-permuted arrays by the cumulative index; so do we
        np.random.shuffle(self.idx)
        self.data = _getdata_by_idx(self.data, self.idx)
        self.label = _getdata_by_idx(self.label, self.idx)


# names MXNet's mxnet/io/io.py defines that symgraph's package holds
__getattr__ = names_from(__name__, 'symgraph.io', (
    'MXDataIter', 'PrefetchingIter',
))
