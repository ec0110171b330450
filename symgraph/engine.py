"""``mx.engine``: MXNet's bulk-execution knob. symgraph runs a bound plan as one prepared
step list already, so the bulk size is recorded (and returned, as MXNet does) but changes
nothing.

>>> from symgraph import engine
>>> previous = engine.set_bulk_size(30)
>>> with engine.bulk(10):
...     engine.set_bulk_size(10)
10
>>> engine.set_bulk_size(previous)
30
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

_state = {"bulk_size": 15}  # MXNet's default (MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN)


def set_bulk_size(size: int) -> int:
    """Set the bulk size; returns the previous one."""
    previous, _state["bulk_size"] = _state["bulk_size"], int(size)
    return previous


@contextlib.contextmanager
def bulk(size: int) -> Iterator[None]:
    """Run a block with bulk size ``size``, restoring the previous size afterwards."""
    previous = set_bulk_size(size)
    try:
        yield
    finally:
        set_bulk_size(previous)
