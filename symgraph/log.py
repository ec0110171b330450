"""``mx.log``: MXNet's logger helper (a ``logging`` logger with MXNet's level letters).

>>> from symgraph import log
>>> log.get_logger("symgraph.doc", level=log.INFO).level == log.INFO
True
"""
from __future__ import annotations

import logging
import sys
from logging import CRITICAL, DEBUG, ERROR, INFO, NOTSET, WARNING  # noqa: F401 - MXNet's names

_LETTERS = {CRITICAL: "C", ERROR: "E", WARNING: "W", INFO: "I", DEBUG: "D"}


class _Formatter(logging.Formatter):
    """``I1125 19:31:02 123 file.py:10] message``, MXNet's (glog's) line layout."""

    def format(self, record: logging.LogRecord) -> str:
        head = (f"{_LETTERS.get(record.levelno, 'U')}{self.formatTime(record, '%m%d %H:%M:%S')} "
                f"{record.process} {record.filename}:{record.lineno}] ")
        return head + record.getMessage()


def get_logger(name=None, filename=None, filemode=None, level=WARNING) -> logging.Logger:
    """A logger writing to ``filename`` (or stderr) in MXNet's format, configured once."""
    logger = logging.getLogger(name)
    if name is not None and not getattr(logger, "_init_done", None):
        logger._init_done = True
        handler = logging.FileHandler(filename, filemode or "a") if filename \
            else logging.StreamHandler(sys.stderr)
        handler.setFormatter(_Formatter())
        logger.addHandler(handler)
    logger.setLevel(level)
    return logger


getLogger = get_logger  # MXNet's deprecated spelling
