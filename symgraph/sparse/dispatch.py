"""Running an operator on values of any storage type: its sparse kernel where its storage
rule (``OpDef.storage``) has one for the inputs' storage types, else its dense forward on
dense copies of the sparse inputs (MXNet's *storage fallback*).

A fallback that would materialise more than ``Config.sparse_fallback_limit`` elements raises
:class:`~symgraph.base.StorageFallbackError` naming the operator, the input and its shape,
rather than silently allocating a huge dense array (a 1M-row embedding's gradient).
MXNet logs each fallback once (``MXNET_STORAGE_FALLBACK_LOG_VERBOSE``); so does this module.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Sequence

import torch

from .. import config
from ..base import StorageFallbackError
from ..ops.base import OpDef
from .formats import CSR, DEFAULT, RowSparse, Value, stype_of, to_dense

_LOG = logging.getLogger("symgraph.sparse")
_LOGGED: set[tuple] = set()


def output_stypes(op: OpDef, p, stypes: Sequence[str]) -> list[str] | None:
    """The outputs' storage types when ``op`` has a sparse kernel for ``stypes``, else None."""
    rule = op.storage
    if rule is None:
        return None
    return rule.infer(p, list(stypes))


def needs_dispatch(op: OpDef, stypes: Sequence[str]) -> bool:
    """Whether a call with inputs of ``stypes`` leaves the plain dense path."""
    return op.storage is not None or any(s != DEFAULT for s in stypes)


def check_fallback(shape: tuple, stype: str, where: str) -> None:
    """Raise :class:`StorageFallbackError` when densifying a ``stype`` array of ``shape``
    would exceed the fallback limit."""
    size = math.prod(shape)
    limit = config.get().sparse_fallback_limit
    if limit and size > limit:
        raise StorageFallbackError(
            f"{where}: no sparse kernel for these storage types, and running it densely "
            f"would materialise a {stype} input of shape {tuple(shape)} as a dense array of "
            f"{size} elements (limit {limit}: SYMGRAPH_SPARSE_FALLBACK_LIMIT); cast it with "
            "tostype('default') explicitly if that is intended")


def densify(value: Value, where: str) -> torch.Tensor:
    """``value`` as a dense tensor, refusing copies beyond the fallback limit."""
    if isinstance(value, torch.Tensor):
        return value
    check_fallback(tuple(value.shape), value.stype, where)
    return to_dense(value)


def log_fallback(op: OpDef, where: str, stypes: Sequence[str]) -> None:
    """Log a storage fallback of ``op`` on ``stypes`` once (as MXNet does)."""
    key = (op.name, tuple(stypes))
    if key in _LOGGED or not config.env("MXNET_STORAGE_FALLBACK_LOG_VERBOSE"):
        return
    _LOGGED.add(key)
    _LOG.info("storage type fallback: %s runs on dense copies of its inputs (input storage "
              "types %s); set MXNET_STORAGE_FALLBACK_LOG_VERBOSE=0 to silence", where,
              list(stypes))


def run(op: OpDef, p, values: Sequence[Value], n_reg: int, rt, where: str) -> list[Value]:
    """Outputs of ``op`` on ``values`` (inputs then aux), sparse kernel or fallback."""
    stypes = [stype_of(v) for v in values]
    out_stypes = output_stypes(op, p, stypes)
    ins, aux = list(values[:n_reg]), list(values[n_reg:])
    if out_stypes is not None:
        forward = op.storage.forward
        if forward is None:
            return _on_stored_values(op, p, ins, aux, rt)
        return list(forward(p, ins, aux, rt))
    if any(s != DEFAULT for s in stypes):
        log_fallback(op, where, stypes)
    ins = [densify(v, where) for v in ins]
    aux = [densify(v, where) for v in aux]
    return list(op.forward(p, ins, aux, rt))


def _on_stored_values(op: OpDef, p, ins: list, aux: list, rt) -> list[Value]:
    """A zero-preserving elementwise op on its one sparse input: the dense forward on the
    stored values, the aux arrays (indices, indptr) shared."""
    sparse = next(v for v in ins if isinstance(v, RowSparse | CSR))
    outs = op.forward(p, [v.data if isinstance(v, RowSparse | CSR) else v for v in ins], aux, rt)
    return [sparse._replace(data=o) for o in outs]
