"""Monitor: statistics of op outputs, weights and gradients while training (``mx.monitor``)."""
from __future__ import annotations

import logging
import re
from collections.abc import Callable
from math import sqrt

from . import ndarray  # noqa: F401 - MXNet's name in this module
from .base import py_str  # noqa: F401 - MXNet's name in this module
from .ndarray import NDArray


def _norm_stat(x: NDArray) -> NDArray:
    """MXNet's default statistic: ``norm(x) / sqrt(x.size)``, an NDArray of shape (1,)."""
    return x.norm() / sqrt(x.size)


class Monitor:
    """Collect ``stat_func`` of every tensor whose name matches ``pattern``, every
    ``interval`` batches.

    Parameters
    ----------
    interval : int
        Batches between collections.
    stat_func : callable, optional
        NDArray -> NDArray (or list of NDArrays); default ``norm(x)/sqrt(x.size)``.
    pattern : str
        Regular expression matched (``re.match``) against tensor names, e.g.
        ``'.*weight|.*output'``.
    sort : bool
        Sort the results by name.
    monitor_all : bool
        Monitor op inputs as well as outputs.

    >>> import symgraph as mx
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
    >>> exe = net.simple_bind(mx.cpu(), data=(1, 2))
    >>> mon = Monitor(1, pattern='fc.*'); mon.install(exe)
    >>> mon.tic(); _ = exe.forward(); [name for _, name, _ in mon.toc()]
    ['fc_output', 'fc_weight', 'fc_bias']
    """

    def __init__(self, interval: int, stat_func: Callable | None = None, pattern: str = ".*",
                 sort: bool = False, monitor_all: bool = False):
        self.stat_func = _norm_stat if stat_func is None else stat_func
        self.interval = interval
        self.activated = False
        self.queue: list = []
        self.step = 0
        self.exes: list = []
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all

    def stat_helper(self, name: str, array: NDArray) -> None:
        """The executor callback: record ``stat_func(array)`` while activated."""
        if not self.activated or not self.re_prog.match(name):
            return
        self.queue.append((self.step, name, self.stat_func(array)))

    def install(self, exe) -> None:
        """Install on an executor (several may be installed)."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def tic(self) -> None:
        """Start collecting for this batch if it is due; call before ``forward``."""
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self) -> list[tuple[int, str, str]]:
        """Stop collecting; add the arguments and aux states; return ``(step, name, stat)``
        with each stat as MXNet prints it (values joined by tabs, a trailing tab)."""
        if not self.activated:
            return []
        for exe in self.exes:
            for name, array in zip(exe._symbol.list_arguments(), exe.arg_arrays):
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
            for name, array in zip(exe._symbol.list_auxiliary_states(), exe.aux_arrays):
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda x: x[1])
        res = []
        for n, k, v_list in self.queue:
            if isinstance(v_list, NDArray):
                v_list = [v_list]
            assert isinstance(v_list, list)
            s = ""
            for v in v_list:
                assert isinstance(v, NDArray)
                s += (str(v.asscalar()) if v.shape == (1,) else str(v.asnumpy())) + "\t"
            res.append((n, k, s))
        self.queue = []
        return res

    def toc_print(self) -> None:
        """``toc`` and log each result as ``Batch: {step:7d} {name:30s} {stat}``."""
        for n, k, v in self.toc():
            logging.info(f"Batch: {n:7d} {k:30s} {v:s}")  # MXNet formats eagerly, too
