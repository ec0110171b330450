"""``mx.gluon``: Parameters, Blocks executed through bound symbolic graphs, and Trainer.

Submodules load on first use (no work at import time).
"""
from __future__ import annotations

_LAZY = {
    "parameter": "parameter", "utils": "utils", "trainer": "trainer", "block": "block",
    "nn": "nn", "rnn": "rnn", "loss": "loss",
}
# names re-exported from submodules, as ``mxnet.gluon`` does
_NAMES = {
    "Parameter": "parameter", "Constant": "parameter", "ParameterDict": "parameter",
    "DeferredInitializationError": "parameter", "Trainer": "trainer", "Block": "block",
    "HybridBlock": "block", "SymbolBlock": "block",
}


def __getattr__(attr: str):
    import importlib
    if attr in _LAZY:
        module = importlib.import_module(f".{_LAZY[attr]}", __name__)
        globals()[attr] = module
        return module
    if attr in _NAMES:
        value = getattr(importlib.import_module(f".{_NAMES[attr]}", __name__), attr)
        globals()[attr] = value
        return value
    raise AttributeError(f"module 'symgraph.gluon' has no attribute {attr!r}")
