"""symgraph: MXNet 1.x's symbolic API on PyTorch tensors. Use it as ``import symgraph as mx``.

>>> import symgraph as mx
>>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4, name='fc')
>>> exe = net.simple_bind(mx.cpu(), data=(2, 3))
>>> [o.shape for o in exe.forward()]
[(2, 4)]
"""
from __future__ import annotations

from . import base, config, context, ndarray, ops, random, symbol  # noqa: F401 - ops fills the registry
from . import ndarray as nd
from . import symbol as sym
from .base import MXNetError
from .context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus
from .executor import Executor
from .symbol import AttrScope
from .symbol import naming as name

attribute = symbol.naming

__version__ = "0.1.0"

__all__ = ["AttrScope", "Context", "Executor", "MXNetError", "attribute", "base", "config",
           "context", "cpu", "cpu_pinned", "current_context", "gpu", "name", "nd", "ndarray",
           "num_gpus", "random", "sym", "symbol"]


def __getattr__(attr: str):
    if attr == "test_utils":  # imported on first use: it pulls in numpy testing helpers
        import importlib
        return importlib.import_module(".test_utils", __name__)
    raise AttributeError(f"module 'symgraph' has no attribute {attr!r}")
