"""``mx.gluon``: Parameters, Blocks executed through bound symbolic graphs, and Trainer.

Submodules load on first use (no work at import time). ``data``, ``model_zoo`` and
``contrib`` are symgraph's packages where they exist, else the raising stand-ins of
:mod:`symgraph.unsupported` (importing works, using them raises ``UnsupportedError``).
"""
from __future__ import annotations

_LAZY = {
    "parameter": "parameter", "utils": "utils", "trainer": "trainer", "block": "block",
    "nn": "nn", "rnn": "rnn", "loss": "loss",
}
# names re-exported from submodules, as ``mxnet.gluon`` does
_NAMES = {
    "Parameter": "parameter", "Constant": "parameter", "ParameterDict": "parameter",
    "DeferredInitializationError": "parameter", "tensor_types": "parameter",
    "Trainer": "trainer", "Block": "block", "HybridBlock": "block", "SymbolBlock": "block",
}
_MAYBE_LEFT_OUT = ("data", "model_zoo", "contrib")


def __getattr__(attr: str):
    import importlib
    if attr in _LAZY:
        value = importlib.import_module(f".{_LAZY[attr]}", __name__)
    elif attr in _NAMES:
        value = getattr(importlib.import_module(f".{_NAMES[attr]}", __name__), attr)
    elif attr in _MAYBE_LEFT_OUT:
        value = _package_or_stand_in(attr)
    else:
        raise AttributeError(f"module 'symgraph.gluon' has no attribute {attr!r}")
    globals()[attr] = value
    return value


def _package_or_stand_in(attr: str):
    import importlib
    try:
        return importlib.import_module(f".{attr}", __name__)
    except ModuleNotFoundError as err:
        if err.name != f"{__name__}.{attr}":
            raise  # the package exists and failed importing something else
    from .. import unsupported
    return unsupported.module(f"gluon.{attr}")
