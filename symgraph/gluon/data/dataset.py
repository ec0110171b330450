"""Datasets (``mx.gluon.data.dataset``, MXNet 1.9.1): indexable collections of samples.

A dataset has ``__getitem__`` and ``__len__``; numpy arrays, NDArrays and lists serve as
datasets directly. :class:`Dataset` adds the views MXNet offers: ``transform``,
``transform_first``, ``filter``, ``shard``, ``take`` and ``sample``.

>>> from symgraph.gluon.data import SimpleDataset
>>> data = SimpleDataset(list(range(10)))
>>> list(data.transform(lambda x: x * 10).take(3))
[0, 10, 20]
>>> list(data.shard(3, 0)), list(data.shard(3, 2))
([0, 1, 2, 3], [7, 8, 9])
"""
from __future__ import annotations

import os

from ...base import AttrError, MXNetError

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "RecordFileDataset"]


class Dataset:
    """Abstract dataset: subclasses define ``__getitem__`` (the i-th sample) and
    ``__len__``.

    Examples
    --------
    >>> class Squares(Dataset):
    ...     def __getitem__(self, idx):
    ...         return idx * idx
    ...     def __len__(self):
    ...         return 4
    >>> list(Squares().filter(lambda x: x > 1))
    [4, 9]
    """

    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def __iter__(self):
        # bounded by len(): a __getitem__ that never raises IndexError (MXNet's iteration
        # relies on one) would otherwise loop forever in filter() or list()
        for idx in range(len(self)):
            yield self[idx]

    def filter(self, fn) -> Dataset:
        """The samples for which ``fn(sample)`` is true (decided once, now).

        >>> list(SimpleDataset([1, 2, 3, 4]).filter(lambda x: x % 2 == 0))
        [2, 4]
        """
        from .sampler import FilterSampler
        return _SampledDataset(self, FilterSampler(fn, self))

    def shard(self, num_shards: int, index: int) -> Dataset:
        """Contiguous part ``index`` of ``num_shards`` (the first ``len % num_shards``
        parts hold one sample more). Shard before shuffling in distributed training.

        >>> [len(SimpleDataset(list(range(9))).shard(4, i)) for i in range(4)]
        [3, 2, 2, 2]
        """
        if num_shards <= 0:
            raise AttrError(f"Number of shards must be greater than 0, got {num_shards}")
        if not 0 <= index < num_shards:
            raise AttrError(f"Shard index out of bound: {index} out of {num_shards}")
        base, rest = divmod(len(self), num_shards)
        start = base * index + min(index, rest)
        from .sampler import SequentialSampler
        return _SampledDataset(self, SequentialSampler(base + (index < rest), start))

    def take(self, count: int | None) -> Dataset:
        """The first ``count`` samples (all of them when ``count`` is None or larger).

        >>> len(SimpleDataset([1, 2, 3]).take(10))
        3
        """
        if count is None or count > len(self):
            count = len(self)
        from .sampler import SequentialSampler
        return _SampledDataset(self, SequentialSampler(count))

    def sample(self, sampler) -> Dataset:
        """The samples at the indices ``sampler`` yields (a :class:`Sampler`).

        >>> from symgraph.gluon.data import SequentialSampler
        >>> list(SimpleDataset('abcd').sample(SequentialSampler(2, 1)))
        ['b', 'c']
        """
        from .sampler import Sampler
        if not isinstance(sampler, Sampler):
            raise TypeError(f"Invalid sampler type: {type(sampler)}. Expected "
                            "gluon.data.Sampler instead.")
        return _SampledDataset(self, sampler)

    def transform(self, fn, lazy: bool = True) -> Dataset:
        """Each sample passed through ``fn`` (a tuple sample is passed as ``fn(*sample)``);
        on access when ``lazy``, else all at once now (wrong for random ``fn``).

        >>> list(SimpleDataset([(1, 'a'), (2, 'b')]).transform(lambda x, y: y * x))
        ['a', 'bb']
        """
        trans = _LazyTransformDataset(self, fn)
        if lazy:
            return trans
        return SimpleDataset([sample for sample in trans])

    def transform_first(self, fn, lazy: bool = True) -> Dataset:
        """Each sample with its first element passed through ``fn`` (data transformed,
        label kept).

        >>> list(SimpleDataset([(1, 'a'), (2, 'b')]).transform_first(lambda x: -x))
        [(-1, 'a'), (-2, 'b')]
        """
        return self.transform(_TransformFirstClosure(fn), lazy)


class SimpleDataset(Dataset):
    """A dataset over any object with ``len()`` and ``[]`` (a list, an array).

    Parameters
    ----------
    data : dataset-like
        The samples.

    Examples
    --------
    >>> SimpleDataset([3, 4, 5])[1]
    4
    """

    def __init__(self, data):
        self._data = data

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    """Samples transformed on access."""

    def __init__(self, data, fn):
        self._data = data
        self._fn = fn

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _TransformFirstClosure:
    """``fn`` applied to the first element; a class, not a closure, so it pickles."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, x, *args):
        if args:
            return (self._fn(x),) + args
        return self._fn(x)


class _SampledDataset(Dataset):
    """The samples of ``dataset`` at the indices a sampler gave (listed once)."""

    def __init__(self, dataset, sampler):
        self._dataset = dataset
        self._sampler = sampler
        self._indices = list(iter(sampler))

    def __len__(self) -> int:
        return len(self._indices)

    def __getitem__(self, idx):
        return self._dataset[self._indices[idx]]


class ArrayDataset(Dataset):
    """Several dataset-like objects of one length zipped: sample ``i`` is
    ``(x1[i], x2[i], ...)`` (just ``x1[i]`` for one). A 1-D NDArray is held as numpy, so
    its samples are scalars, as in MXNet.

    Parameters
    ----------
    *args : dataset-like
        Arrays, lists or datasets of equal length.

    Examples
    --------
    >>> import numpy as np
    >>> data = ArrayDataset(np.arange(6).reshape(3, 2), [7, 8, 9])
    >>> data[2]
    (array([4, 5]), 9)
    """

    def __init__(self, *args):
        from ...ndarray import NDArray
        if not args:
            raise AttrError("ArrayDataset needs at least 1 array")
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise AttrError(f"All arrays must have the same length; array[0] has length "
                                f"{self._length} while array[{i}] has {len(data)}.")
            if isinstance(data, NDArray) and data.ndim == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self) -> int:
        return self._length


class RecordFileDataset(Dataset):
    """The raw records of a RecordIO file (``x.rec`` with its index ``x.idx``), in index
    order. Each worker process reopens the file on first use, so forked DataLoader
    workers never share a file offset.

    Parameters
    ----------
    filename : str
        Path of the ``.rec`` file; the ``.idx`` file beside it has the same stem.

    Examples
    --------
    >>> import os, tempfile
    >>> import symgraph as mx
    >>> path = os.path.join(tempfile.mkdtemp(), 'x.rec')
    >>> rec = mx.recordio.MXIndexedRecordIO(path[:-4] + '.idx', path, 'w')
    >>> for i in range(3):
    ...     rec.write_idx(i, b'record %d' % i)
    >>> rec.close()
    >>> RecordFileDataset(path)[1]
    b'record 1'
    """

    def __init__(self, filename: str):
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self.filename = filename
        for path in (self.filename, self.idx_file):
            if not os.path.isfile(path):
                raise MXNetError(f"RecordFileDataset: {path!r} does not exist (a .rec file "
                                 "needs the .idx file of the same name beside it)")
        self._pid = None
        self._open()

    def _open(self) -> None:
        from ... import recordio
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")
        self._pid = os.getpid()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_record"] = None  # reopened where it is unpickled
        return state

    def _records(self):
        if self._pid != os.getpid() or self._record is None:
            self._open()
        return self._record

    def __getitem__(self, idx):
        record = self._records()
        return record.read_idx(record.keys[idx])

    def __len__(self) -> int:
        return len(self._records().keys)


class _DownloadedDataset(Dataset):
    """Base of the vision datasets: samples ``(data[i], label[i])``, through ``transform``
    when one is given; ``_get_data`` fills ``_data`` and ``_label`` from files in
    ``root``."""

    def __init__(self, root: str, transform):
        self._transform = transform
        self._data = None
        self._label = None
        self._root = os.path.expanduser(root)
        self._get_data()

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self) -> int:
        return len(self._label)

    def _get_data(self):
        raise NotImplementedError
