"""The import's op registry and the helpers its translations share."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import symgraph as mx

IMPORTERS: dict[str, Callable] = {}
BIG = 2 ** 31 - 1  # ONNX's "to the end" slice bounds are INT_MAX / INT64_MAX

# ONNX TensorProto element type -> MXNet dtype name
DTYPES = {1: "float32", 2: "uint8", 3: "int8", 6: "int32", 7: "int64", 9: "bool",
           10: "float16", 11: "float64"}


def imports(*op_types: str):
    """Register a translation for the ONNX ``op_types``."""
    def register(fn):
        for op in op_types:
            IMPORTERS[op] = fn
        return fn
    return register


def sym_op(name: str):
    return getattr(mx.sym, name, None) or getattr(mx.sym._internal, name)


def rank_of(g, n, name: str) -> int:
    shape = g.shape(name)
    if shape is None:
        raise n.fail(f"the rank of input {name!r} is unknown (run ONNX shape inference or "
                     "give the graph inputs static shapes)")
    return len(shape)


def static_shape(g, n, name: str) -> tuple:
    shape = g.shape(name)
    if shape is None or None in shape:
        raise n.fail(f"needs the static shape of {name!r}, which is unknown")
    return tuple(int(d) for d in shape)


def const_in(g, n, slot: int, what: str) -> np.ndarray | None:
    """The constant value of optional input ``slot`` (None when absent)."""
    if not n.has(slot):
        return None
    value = g.const(n.ins[slot])
    if value is None:
        raise n.fail(f"{what} (input {slot}) must be a constant or initializer")
    return value


def ints_in(g, n, slot: int, attr: str | None, what: str) -> list[int] | None:
    """An int list given as attribute ``attr`` (older opsets) or constant input ``slot``."""
    if attr is not None and attr in n.a:
        return [int(v) for v in n.a[attr]]
    value = const_in(g, n, slot, what)
    return None if value is None else [int(v) for v in np.ravel(value)]
