"""Callbacks for ``fit`` (MXNet 1.9.1's ``mx.callback``).

Batch-end callbacks receive a ``BatchEndParam``-like object (``epoch``, ``nbatch``,
``eval_metric``, ``locals``); epoch-end callbacks receive ``(epoch, symbol, arg_params,
aux_params)``. Messages go to the root ``logging`` logger at INFO, as in MXNet.

>>> from types import SimpleNamespace
>>> import symgraph as mx
>>> cb = mx.callback.ProgressBar(total=4, length=8)
>>> cb(SimpleNamespace(epoch=0, nbatch=2, eval_metric=None, locals=None))
"""
from __future__ import annotations

import logging
import math
import time
from collections import namedtuple
from collections.abc import Callable

from .training.model_io import save_checkpoint

# what batch-end callbacks receive (MXNet's mx.model.BatchEndParam, re-exported there)
BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])


def module_checkpoint(mod, prefix: str, period: int = 1,
                      save_optimizer_states: bool = False) -> Callable:
    """Epoch-end callback calling ``mod.save_checkpoint(prefix, epoch + 1, ...)`` every
    ``period`` epochs."""
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def do_checkpoint(prefix: str, period: int = 1) -> Callable:
    """Epoch-end callback saving ``prefix-symbol.json`` and ``prefix-%04d.params``.

    Calls this module's ``save_checkpoint(prefix, epoch + 1, sym, arg, aux)`` (MXNet's
    ``mx.model.save_checkpoint``, looked up when called) every ``period`` epochs.

    >>> cb = do_checkpoint('/tmp/never', period=2)
    >>> cb(0, None, {}, {})  # epoch 1 of every 2: nothing saved
    """
    period = int(max(1, period))

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def log_train_metric(period: int, auto_reset: bool = False) -> Callable:
    """Batch-end callback logging ``Iter[e] Batch[n] Train-name=value`` every ``period``."""
    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch,
                             name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer:
    """Log throughput and the training metric every ``frequent`` batches.

    Parameters
    ----------
    batch_size : int
    frequent : int
        Batches between logs.
    auto_reset : bool
        Reset the metric's local statistics after each log (the log then covers
        ``Batch [n-frequent-n]``); otherwise the log covers ``Batch [0-n]``.

    >>> from types import SimpleNamespace
    >>> speed = Speedometer(batch_size=32, frequent=2)
    >>> for n in range(3):
    ...     speed(SimpleNamespace(epoch=0, nbatch=n, eval_metric=None, locals=None))
    """

    def __init__(self, batch_size: int, frequent: int = 50, auto_reset: bool = True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.init = False
        self.tic = 0
        self.last_count = 0
        self.auto_reset = auto_reset

    def __call__(self, param) -> None:
        count = param.nbatch
        if self.last_count > count:
            self.init = False  # a new epoch started
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        try:
            speed = self.frequent * self.batch_size / (time.time() - self.tic)
        except ZeroDivisionError:
            speed = float("inf")
        if param.eval_metric is None:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count,
                         speed)
        else:
            name_value = param.eval_metric.get_name_value()
            values = sum(name_value, ())
            if self.auto_reset:
                param.eval_metric.reset_local()
                msg = "Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec"
                msg += "\t%s=%f" * len(name_value)
                logging.info(msg, param.epoch, count - self.frequent, count, speed, *values)
            else:
                msg = "Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec"
                msg += "\t%s=%f" * len(name_value)
                logging.info(msg, param.epoch, count, speed, *values)
        self.tic = time.time()


class ProgressBar:
    """Log a text progress bar ``[====----] 50%`` of ``total`` batches.

    >>> from types import SimpleNamespace
    >>> ProgressBar(total=10)(SimpleNamespace(epoch=0, nbatch=5, eval_metric=None))
    """

    def __init__(self, total: int, length: int = 80):
        self.bar_len = length
        self.total = total

    def __call__(self, param) -> None:
        count = param.nbatch
        filled_len = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        prog_bar = "=" * filled_len + "-" * (self.bar_len - filled_len)
        logging.info("[%s] %s%s\r", prog_bar, percents, "%")


class LogValidationMetricsCallback:
    """Log ``Epoch[e] Validation-name=value`` for each validation metric.

    >>> from types import SimpleNamespace
    >>> LogValidationMetricsCallback()(SimpleNamespace(epoch=0, eval_metric=None))
    """

    def __call__(self, param) -> None:
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)


class TqdmProgress:
    """Batch-end callback drawing a tqdm progress bar per epoch, with the metric as postfix.

    Not in MXNet. A new bar opens when ``nbatch`` goes back (a new epoch); with ``total``
    the bar shows an ETA and closes at the epoch's last batch, so the epoch's summary lines
    print below it. Call ``close()`` after ``fit``.

    Parameters
    ----------
    total : int, optional
        Batches per epoch, if known.
    **tqdm_kwargs
        Passed to ``tqdm.tqdm`` (e.g. ``disable=True``, ``file=...``).

    >>> from types import SimpleNamespace
    >>> bar = TqdmProgress(total=2, disable=True)
    >>> for n in range(2):
    ...     bar(SimpleNamespace(epoch=0, nbatch=n, eval_metric=None, locals=None))
    >>> bar.close()
    """

    def __init__(self, total: int | None = None, **tqdm_kwargs):
        self.total = total
        self.tqdm_kwargs = tqdm_kwargs
        self._bar = None
        self._last = -1

    def __call__(self, param) -> None:
        from tqdm import tqdm  # only when a bar is actually drawn
        if self._bar is None or param.nbatch < self._last:
            self.close()
            self._bar = tqdm(total=self.total, desc=f"Epoch[{param.epoch}]",
                             **self.tqdm_kwargs)
            self._last = -1
        self._bar.update(param.nbatch - self._last)
        self._last = param.nbatch
        if param.eval_metric is not None:
            self._bar.set_postfix({str(k): f"{v:.4f}" for k, v in
                                   param.eval_metric.get_name_value()}, refresh=False)
        if self.total is not None and param.nbatch + 1 >= self.total:
            self.close()  # the epoch's last batch: what fit logs next gets its own line

    def close(self) -> None:
        """Close the current bar."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
