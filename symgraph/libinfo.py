"""``mx.libinfo``: where MXNet's shared library lives. symgraph has no C++ library: the
paths are empty and ``find_lib_path`` says so.

>>> from symgraph import libinfo
>>> libinfo.__version__
'1.9.1'
>>> libinfo.find_include_path()
''
"""
from __future__ import annotations

from .base import unsupported

__version__ = "1.9.1"  # the MXNet release whose behaviour symgraph implements


def find_lib_path(prefix: str = "libmxnet") -> list[str]:
    """MXNet's library path: there is none (symgraph is pure Python on PyTorch)."""
    raise unsupported("mx.libinfo.find_lib_path", f"symgraph has no {prefix} shared library")


def find_include_path() -> str:
    """MXNet's C++ headers: none."""
    return ""


def find_conf_path(prefix: str = "tvmop") -> str:
    """MXNet's TVM op configuration: none."""
    return ""
