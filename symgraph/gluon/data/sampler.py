"""Samplers: iterables of dataset indices (``mx.gluon.data.sampler``, MXNet 1.9.1).

A sampler yields indices into a dataset; :class:`BatchSampler` groups another sampler's
indices into mini-batches, handling a short last batch as ``'keep'``, ``'discard'`` or
``'rollover'`` (the remainder opens the next pass).

>>> from symgraph.gluon.data import SequentialSampler, BatchSampler
>>> list(BatchSampler(SequentialSampler(7), 3, 'keep'))
[[0, 1, 2], [3, 4, 5], [6]]
>>> list(BatchSampler(SequentialSampler(7), 3, 'discard'))
[[0, 1, 2], [3, 4, 5]]
"""
from __future__ import annotations

import numpy as np

from ...base import AttrError

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "FilterSampler", "BatchSampler"]

_LAST_BATCH = ("keep", "discard", "rollover")


class Sampler:
    """Base class of samplers: subclasses define ``__iter__`` and ``__len__``.

    >>> class Evens(Sampler):
    ...     def __iter__(self):
    ...         return iter([0, 2, 4])
    ...     def __len__(self):
    ...         return 3
    >>> list(Evens())
    [0, 2, 4]
    """

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """The indices ``start, start + 1, ..., start + length - 1`` in order.

    Parameters
    ----------
    length : int
        Number of indices.
    start : int, default 0
        First index.

    Examples
    --------
    >>> list(SequentialSampler(3, start=2))
    [2, 3, 4]
    """

    def __init__(self, length: int, start: int = 0):
        self._length = length
        self._start = start

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self) -> int:
        return self._length


class RandomSampler(Sampler):
    """The indices ``0 .. length - 1`` in a random order (numpy's global generator, as
    MXNet: ``np.random.seed`` makes it repeatable).

    Parameters
    ----------
    length : int
        Number of indices.

    Examples
    --------
    >>> sorted(int(i) for i in RandomSampler(4))
    [0, 1, 2, 3]
    """

    def __init__(self, length: int):
        self._length = length

    def __iter__(self):
        order = np.arange(self._length)
        np.random.shuffle(order)
        return iter(order)

    def __len__(self) -> int:
        return self._length


class FilterSampler(Sampler):
    """The indices of the samples of ``dataset`` for which ``fn(sample)`` is true
    (evaluated once, when the sampler is made).

    Parameters
    ----------
    fn : callable
        Predicate on one sample.
    dataset : Dataset
        The samples to filter.

    Examples
    --------
    >>> list(FilterSampler(lambda x: x % 2 == 1, [5, 6, 7]))
    [0, 2]
    """

    def __init__(self, fn, dataset):
        self._fn = fn
        self._dataset = dataset
        self._indices = [i for i, sample in enumerate(dataset) if fn(sample)]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self) -> int:
        return len(self._indices)


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices drawn from ``sampler``.

    Parameters
    ----------
    sampler : Sampler
        The source of indices.
    batch_size : int
        Size of a mini-batch.
    last_batch : {'keep', 'discard', 'rollover'}
        A short last batch is yielded (``keep``), dropped (``discard``), or kept back and
        completed by the first indices of the next pass (``rollover``).

    Examples
    --------
    >>> sampler = BatchSampler(SequentialSampler(5), 2, 'rollover')
    >>> list(sampler), len(sampler)
    ([[0, 1], [2, 3]], 3)
    >>> list(sampler)
    [[4, 0], [1, 2], [3, 4]]
    """

    def __init__(self, sampler, batch_size: int, last_batch: str = "keep"):
        if last_batch not in _LAST_BATCH:
            raise AttrError(f"last_batch must be one of 'keep', 'discard', or 'rollover', "
                            f"but got {last_batch!r}")
        if int(batch_size) < 1:
            raise AttrError(f"batch_size must be a positive integer, but got {batch_size!r}")
        self._sampler = sampler
        self._batch_size = int(batch_size)
        self._last_batch = last_batch
        self._prev: list = []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for index in self._sampler:
            batch.append(index)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self) -> int:
        size = self._batch_size
        if self._last_batch == "keep":
            return (len(self._sampler) + size - 1) // size
        if self._last_batch == "discard":
            return len(self._sampler) // size
        return (len(self._prev) + len(self._sampler)) // size
