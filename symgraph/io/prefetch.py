"""PrefetchingIter: read the next batches of one or more iterators on a background thread."""
from __future__ import annotations

import queue
import threading

from .io import DataBatch, DataDesc, _CurrentBatchIter

_POLL_S = 0.05  # how often blocked puts/gets look at the stop flag and the worker's health


def _put(q: queue.Queue, item, stop: threading.Event) -> bool:
    """Put ``item`` unless ``stop`` is set first (so a stopped worker never blocks)."""
    while not stop.is_set():
        try:
            q.put(item, timeout=_POLL_S)
            return True
        except queue.Full:
            continue
    return False


def _worker(iters: list, q: queue.Queue, stop: threading.Event) -> None:
    """Fetch one batch from every iterator in lockstep until the end, an error or ``stop``."""
    try:
        while not stop.is_set():
            batches = []
            for it in iters:
                try:
                    batches.append(it.next())
                except StopIteration:
                    batches.append(None)
            if not _put(q, ("batches", batches), stop) or batches[0] is None:
                return
    except BaseException as err:  # handed to the consumer, re-raised there
        _put(q, ("error", err), stop)


def _renamed(descs, renames: dict) -> list:
    return [DataDesc(renames[x.name], x.shape, x.dtype) if isinstance(x, DataDesc)
            else DataDesc(*x) for x in descs]


class PrefetchingIter(_CurrentBatchIter):
    """Combine iterators and prefetch their next batches on a background thread.

    The thread starts on the first batch and stays at most one batch ahead (a bounded
    queue); ``reset`` and garbage collection stop it cleanly, and an exception raised by an
    underlying iterator is re-raised by ``next``.

    Parameters
    ----------
    iters : DataIter or list of DataIter
        Iterated in lockstep; their data and labels are concatenated.
    rename_data, rename_label : list of dict, optional
        Per iterator, old name -> new name for ``provide_data``/``provide_label``.

    >>> import numpy as np
    >>> from symgraph.io import NDArrayIter
    >>> a = NDArrayIter(np.zeros((4, 2)), batch_size=2)
    >>> b = NDArrayIter(np.ones((4, 3)), batch_size=2)
    >>> it = PrefetchingIter([a, b], rename_data=[{'data': 'a'}, {'data': 'b'}])
    >>> [d.name for d in it.provide_data], [len(batch.data) for batch in it]
    (['a', 'b'], [2, 2])
    """

    def __init__(self, iters, rename_data=None, rename_label=None):
        super().__init__()
        if not isinstance(iters, list):
            iters = [iters]
        self.n_iter = len(iters)
        assert self.n_iter > 0
        self.iters = iters
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0][1][0]
        self.current_batch = None
        self._queue: queue.Queue | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._finished = False

    @property
    def provide_data(self) -> list:
        if self.rename_data is None:
            return sum([i.provide_data for i in self.iters], [])
        return sum([_renamed(i.provide_data, r) for r, i in zip(self.rename_data, self.iters)],
                   [])

    @property
    def provide_label(self) -> list:
        if self.rename_label is None:
            return sum([i.provide_label for i in self.iters], [])
        return sum([_renamed(i.provide_label, r)
                    for r, i in zip(self.rename_label, self.iters)], [])

    def _start(self) -> None:
        self._stop = threading.Event()
        self._queue = queue.Queue(maxsize=1)
        self._thread = threading.Thread(target=_worker, args=(self.iters, self._queue, self._stop),
                                        name="PrefetchingIter", daemon=True)
        self._thread.start()

    def _shutdown(self) -> None:
        """Stop the worker and wait for it (it wakes within ``_POLL_S``)."""
        thread = getattr(self, "_thread", None)
        if thread is None:
            return
        self._stop.set()
        thread.join()
        self._thread = None
        self._queue = None

    def __del__(self):
        self._shutdown()

    def reset(self) -> None:
        self._shutdown()
        for i in self.iters:
            i.reset()
        self._finished = False

    def _take(self):
        """The worker's next item; an error if it died without saying why."""
        while True:
            try:
                return self._queue.get(timeout=_POLL_S)
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    raise RuntimeError("PrefetchingIter worker stopped unexpectedly") from None

    def iter_next(self) -> bool:
        if self._finished:
            return False
        if self._thread is None:
            self._start()
        kind, payload = self._take()
        if kind == "error":
            self._finished = True
            self._shutdown()
            raise payload
        if payload[0] is None:
            self._finished = True
            self._shutdown()
            assert all(b is None for b in payload), "Number of entry mismatches between iterators"
            return False
        for batch in payload:
            assert batch is not None and batch.pad == payload[0].pad, \
                "Number of entry mismatches between iterators"
        self.current_batch = DataBatch(
            sum([b.data for b in payload], []), sum([b.label for b in payload], []),
            payload[0].pad, payload[0].index,
            provide_data=self.provide_data, provide_label=self.provide_label)
        return True

    def next(self) -> DataBatch:
        if self.iter_next():
            return self.current_batch
        raise StopIteration
