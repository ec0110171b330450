"""symgraph: MXNet 1.x's symbolic API on PyTorch tensors. Use it as ``import symgraph as mx``.

>>> import symgraph as mx
>>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4, name='fc')
>>> exe = net.simple_bind(mx.cpu(), data=(2, 3))
>>> [o.shape for o in exe.forward()]
[(2, 4)]
"""
from __future__ import annotations

from . import (  # noqa: F401 - ops fills the registry; imperative installs NDArray's hooks
    base,
    config,
    context,
    imperative,
    ndarray,
    ops,
    random,
    symbol,
)
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


# MXNet's submodule names -> symgraph modules, imported on first use (no work at import)
_LAZY = {
    "test_utils": "test_utils", "init": "initializer", "initializer": "initializer",
    "optimizer": "optimizer", "lr_scheduler": "lr_scheduler", "metric": "metric",
    "io": "io", "callback": "callback", "monitor": "monitor", "kv": "kvstore",
    "kvstore": "kvstore", "executor_manager": "executor_manager", "model": "model",
    "mod": "module", "module": "module", "rnn": "rnn", "gluon": "gluon",
    "autograd": "imperative.autograd", "util": "util", "runtime": "runtime", "engine": "engine",
    "log": "log", "registry": "registry", "error": "error", "libinfo": "libinfo",
    "mon": "monitor", "rnd": "random", "contrib": "contrib", "operator": "operator",
    "recordio": "recordio", "onnx": "onnx",
    "image": "image", "img": "image",
    "viz": "visualization", "visualization": "visualization", "profiler": "profiler",
}
# MXNet's top-level re-exports of mx.util
_FROM_UTIL = ("is_np_array", "is_np_shape", "np_array", "np_shape", "set_np_shape", "use_np",
              "use_np_array", "use_np_shape")


def __getattr__(attr: str):
    import importlib
    if attr in _LAZY:
        module = importlib.import_module(f".{_LAZY[attr]}", __name__)
        globals()[attr] = module
        return module
    if attr in _FROM_UTIL:
        return getattr(importlib.import_module(".util", __name__), attr)
    unsupported = importlib.import_module(".unsupported", __name__)
    if attr in unsupported.MODULES or attr in unsupported.ALIASES:
        return unsupported.module(attr)
    raise AttributeError(f"module 'symgraph' has no attribute {attr!r}")


def _serve_mxnet_role() -> None:
    """MXNet's launch contract: a process started as DMLC_ROLE=scheduler or server stops
    here, as MXNet's import does, serving until the workers are done (a worker or a plain
    process returns at once; see symgraph.distributed)."""
    from . import config as _config
    if _config.env("DMLC_ROLE") in ("scheduler", "server"):
        from .distributed import serve_role
        serve_role()


_serve_mxnet_role()
