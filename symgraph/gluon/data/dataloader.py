"""``DataLoader`` (``mx.gluon.data.dataloader``, MXNet 1.9.1): mini-batches from a dataset.

Batches come in sampler order from one of three engines:

- ``num_workers=0``: the calling thread builds each batch when it is asked for;
- ``num_workers>0``: ``torch.utils.data.DataLoader`` worker processes (forked, as MXNet's
  ``multiprocessing.Pool``) run ``dataset[i]`` and ``batchify_fn``; NDArrays come back
  through shared memory (their tensors ride torch's shared-memory reductions), an
  exception in a worker is raised again in the parent with the worker's traceback, a dead
  worker or a batch slower than ``timeout`` raises :class:`DataLoaderError`;
- ``num_workers>0, thread_pool=True``: a pool of threads in this process.

>>> import numpy as np
>>> from symgraph.gluon.data import ArrayDataset, DataLoader
>>> data = ArrayDataset(np.arange(10).reshape(5, 2), np.arange(5))
>>> [(x.shape, y.asnumpy().tolist()) for x, y in DataLoader(data, batch_size=2)]
[((2, 2), [0, 1]), ((2, 2), [2, 3]), ((1, 2), [4])]
"""
from __future__ import annotations

import collections
import concurrent.futures
import math
import multiprocessing
import sys
import warnings

import numpy as np

from ... import context
from ...base import AttrError, MXNetError, ShapeError
from . import sampler as _sampler

__all__ = ["DataLoader", "DataLoaderError", "default_batchify_fn", "default_mp_batchify_fn"]


class DataLoaderError(MXNetError, multiprocessing.TimeoutError):
    """A DataLoader worker died or took longer than ``timeout`` to deliver a batch (a
    ``multiprocessing.TimeoutError``, as MXNet raises for the latter)."""


def default_batchify_fn(data):
    """Stack a list of samples into a batch: NDArrays with ``nd.stack``, tuples element by
    element (a list of batches), anything else through ``numpy.asarray`` into an NDArray of
    the same dtype.

    >>> import symgraph as mx
    >>> batch = default_batchify_fn([(mx.nd.ones((2,)), 1), (mx.nd.zeros((2,)), 0)])
    >>> batch[0].shape, batch[1].asnumpy().tolist()
    ((2, 2), [1, 0])
    """
    from ... import ndarray as nd
    if isinstance(data[0], nd.NDArray):
        return nd.stack(*data)
    if isinstance(data[0], tuple):
        return [default_batchify_fn(list(column)) for column in zip(*data)]
    data = _numpy_batch(data)
    return nd.array(data, dtype=data.dtype)


def _numpy_batch(data) -> np.ndarray:
    """Samples (numbers, numpy arrays) stacked by numpy, unequal shapes a ShapeError."""
    try:
        return np.asarray(data)
    except ValueError as err:
        shapes = sorted({np.shape(sample) for sample in data})
        raise ShapeError(f"batchify: samples of different shapes {shapes} cannot be "
                         "stacked; pass a batchify_fn that pads them") from err


def default_mp_batchify_fn(data):
    """:func:`default_batchify_fn` writing each batch into shared memory (context
    ``cpu_shared``) when it runs in a worker process, so handing it to the parent copies
    nothing.

    >>> import numpy as np
    >>> default_mp_batchify_fn([np.ones(2), np.zeros(2)]).context
    cpu_shared(0)
    """
    import torch

    from ... import ndarray as nd
    shared = context.Context("cpu_shared", 0)
    if isinstance(data[0], nd.NDArray):
        out = nd.stack(*data)._t.to("cpu")  # nd.stack names mismatching shapes
    elif isinstance(data[0], tuple):
        return [default_mp_batchify_fn(list(column)) for column in zip(*data)]
    else:
        data = _numpy_batch(data)
        out = nd.array(data, dtype=data.dtype)._t
    if torch.utils.data.get_worker_info() is not None:
        out.share_memory_()
    result = nd.NDArray(out)
    result._ctx = shared
    return result


def _as_in_context(data, ctx):
    """NDArrays of a (nested) batch moved to ``ctx``; lists and tuples become lists."""
    from ...ndarray import NDArray
    if isinstance(data, NDArray):
        return data.as_in_context(ctx)
    if isinstance(data, (list, tuple)):
        return [_as_in_context(d, ctx) for d in data]
    return data


def _rebuild_ndarray(tensor, device_type: str, device_id: int):
    from ...ndarray import NDArray
    out = NDArray(tensor)
    out._ctx = context.Context(device_type, device_id)
    return out


def _reduce_ndarray(arr):
    # the tensor is pickled by torch's reductions: its storage goes through shared memory
    ctx = arr.context
    return _rebuild_ndarray, (arr._t, ctx.device_type, ctx.device_id)


def _share_ndarrays_between_processes() -> None:
    """Send NDArrays between processes as torch tensors in shared memory, not as bytes."""
    from multiprocessing.reduction import ForkingPickler

    import torch.multiprocessing  # noqa: F401  (registers the tensor reductions)

    from ...ndarray import NDArray
    ForkingPickler.register(NDArray, _reduce_ndarray)


def _seed_worker(worker_id: int) -> None:
    """Give each worker its own stream of ``mx.nd.random`` numbers (torch seeds its own
    generator, numpy's and Python's per worker; forked copies of ours would all agree)."""
    import torch

    from ... import random as mx_random
    mx_random.generator(torch.device("cpu")).manual_seed(torch.initial_seed())


class _Fetch:
    """One batch from its indices; a class so the thread and process pools share it."""

    def __init__(self, dataset, batchify_fn):
        self.dataset = dataset
        self.batchify_fn = batchify_fn

    def __call__(self, indices):
        return self.batchify_fn([self.dataset[i] for i in indices])


class _ThreadIter:
    """In-order batches computed by a thread pool, ``prefetch`` requests ahead."""

    def __init__(self, pool, fetch: _Fetch, batch_sampler, prefetch: int, timeout: float):
        self._pool, self._fetch, self._timeout = pool, fetch, timeout
        self._batch_sampler = batch_sampler
        self._indices = iter(batch_sampler)
        self._pending: collections.deque = collections.deque()
        for _ in range(prefetch):
            self._push()

    def _push(self) -> None:
        indices = next(self._indices, None)
        if indices is not None:
            self._pending.append(self._pool.submit(self._fetch, indices))

    def __len__(self) -> int:
        return len(self._batch_sampler)

    def __iter__(self):
        return self

    def __next__(self):
        self._push()
        if not self._pending:
            raise StopIteration
        try:
            return self._pending.popleft().result(self._timeout)
        except concurrent.futures.TimeoutError:
            raise DataLoaderError(_timeout_message(self._timeout, threads=True)) from None


def _timeout_message(timeout: float, threads: bool) -> str:
    why = "a slow dataset or batchify_fn: raise `timeout`"
    if not threads:
        why += ", or too little shared memory (/dev/shm): lower `num_workers`"
    return f"DataLoader worker timed out after {timeout} seconds; likely {why}"


def _process_batches(batches, timeout: float):
    """Batches from a torch DataLoader iterator, its failures as DataLoaderError."""
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except RuntimeError as err:
            text = str(err)
            if text.startswith("DataLoader timed out"):
                raise DataLoaderError(_timeout_message(timeout, threads=False)) from err
            if text.startswith("DataLoader worker"):  # exited unexpectedly / killed
                raise DataLoaderError(f"{text}; see the worker's output above") from err
            raise
        yield batch


def _batch_sampler(dataset, batch_size, shuffle, sampler, last_batch, batch_sampler):
    """The batch sampler MXNet's DataLoader arguments describe."""
    if batch_sampler is not None:
        if batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise AttrError("batch_size, shuffle, sampler and last_batch must not be "
                            "specified if batch_sampler is specified.")
        return batch_sampler
    if batch_size is None:
        raise AttrError("batch_size must be specified unless batch_sampler is specified")
    if sampler is None:
        sampler = (_sampler.RandomSampler if shuffle else _sampler.SequentialSampler)(
            len(dataset))
    elif shuffle:
        raise AttrError("shuffle must not be specified if sampler is specified")
    return _sampler.BatchSampler(sampler, batch_size, last_batch or "keep")


class DataLoader:
    """Loads mini-batches of ``dataset`` (MXNet 1.9.1's ``gluon.data.DataLoader``).

    Parameters
    ----------
    dataset : Dataset
        The samples (numpy arrays, NDArrays and lists work as datasets too).
    batch_size : int
        Size of a mini-batch.
    shuffle : bool
        Visit the samples in a random order (numpy's generator).
    sampler : Sampler
        The sample order; not together with ``shuffle``.
    last_batch : {'keep', 'discard', 'rollover'}
        What to do with a short last batch (see :class:`BatchSampler`); default 'keep'.
    batch_sampler : Sampler
        Yields the index lists of batches; excludes the four arguments above.
    batchify_fn : callable
        Turns a list of samples into a batch; :func:`default_batchify_fn`
        (:func:`default_mp_batchify_fn` with workers) by default.
    num_workers : int
        Worker processes (threads with ``thread_pool``); 0 builds batches in this thread.
    pin_memory : bool
        Hand out batches on ``cpu_pinned(pin_device_id)``.
    pin_device_id : int
        Device id of the pinned context.
    prefetch : int
        Batches requested ahead of the one being read (default ``2 * num_workers``).
    thread_pool : bool
        Use threads instead of processes for the workers.
    timeout : float
        Seconds a worker may take for one batch before :class:`DataLoaderError`.
    auto_reload : bool
        Start fetching the next epoch as soon as one ends (and at construction).
    try_nopython : bool, optional
        MXNet 2.0's option, accepted and ignored.

    Examples
    --------
    >>> import numpy as np
    >>> loader = DataLoader(np.arange(5), batch_size=2, last_batch='discard')
    >>> [b.asnumpy().tolist() for b in loader], len(loader)
    ([[0, 1], [2, 3]], 2)
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None,
                 last_batch=None, batch_sampler=None, batchify_fn=None,
                 num_workers=0, pin_memory=False, pin_device_id=0,
                 prefetch=None, thread_pool=False, timeout=120, auto_reload=False,
                 try_nopython=None):
        if not timeout > 0:
            raise AttrError(f"timeout must be positive, given {timeout}")
        self._dataset = dataset
        self._pin_memory, self._pin_device_id = pin_memory, pin_device_id
        self._thread_pool, self._timeout = thread_pool, timeout
        self._batch_sampler = _batch_sampler(dataset, batch_size, shuffle, sampler,
                                             last_batch, batch_sampler)
        self._num_workers = max(0, num_workers)
        self._prefetch = max(0, int(prefetch) if prefetch is not None
                             else 2 * self._num_workers)
        if batchify_fn is None:
            batchify_fn = default_mp_batchify_fn if num_workers > 0 else default_batchify_fn
        self._batchify_fn = batchify_fn
        self._worker_pool = None
        if self._num_workers > 0 and thread_pool:
            self._worker_pool = concurrent.futures.ThreadPoolExecutor(self._num_workers)
        elif self._num_workers > 0:
            _share_ndarrays_between_processes()
        self._iter = None
        self.auto_reload = auto_reload
        if auto_reload:
            self.refresh()

    def __iter__(self):
        if self._iter is None:
            self.refresh()
        batches, self._iter = self._iter, None  # one prefetched pass serves one loop
        for batch in batches:
            if self._pin_memory:
                batch = _as_in_context(batch, context.cpu_pinned(self._pin_device_id))
            yield batch
        if self._iter is None and self.auto_reload:
            self.refresh()

    def _prefetch_iter(self):
        fetch = _Fetch(self._dataset, self._batchify_fn)
        if self._num_workers == 0:
            return (fetch(indices) for indices in self._batch_sampler)
        if self._thread_pool:
            return _ThreadIter(self._worker_pool, fetch, self._batch_sampler,
                               self._prefetch, self._timeout)
        with warnings.catch_warnings():  # torch's advice on worker counts; MXNet gives none
            warnings.filterwarnings("ignore", message="This DataLoader will create")
            batches = iter(self._torch_loader())
        return _process_batches(batches, self._timeout)

    def _torch_loader(self):
        """A torch DataLoader over this one's batch sampler and batchify function."""
        import torch.utils.data
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
        return torch.utils.data.DataLoader(
            self._dataset, batch_sampler=self._batch_sampler, collate_fn=self._batchify_fn,
            num_workers=self._num_workers, timeout=self._timeout,
            prefetch_factor=max(1, math.ceil(self._prefetch / self._num_workers)),
            multiprocessing_context=method, worker_init_fn=_seed_worker)

    def __len__(self) -> int:
        return len(self._batch_sampler)

    def __del__(self):
        pool = getattr(self, "_worker_pool", None)
        if pool is not None and not sys.is_finalizing():
            pool.shutdown(wait=False, cancel_futures=True)

    def refresh(self) -> None:
        """Start a new pass (its prefetching begins now)."""
        self._iter = self._prefetch_iter()

    def clean(self) -> None:
        """Drop the prefetched pass; the next ``iter`` starts a new one."""
        self._iter = None
