"""NDArray arithmetic under ``autograd.record()``: each operation on an array that takes
part in differentiation runs as its registered operator through a cached one-node graph
(:class:`~symgraph.cached_graph.CachedGraph`), so ``backward`` differentiates it like any
graph, by the operator's own gradient rule. Outside recording these paths are not taken.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from .. import autograd
from ..base import MXNetError

# NDArray binary name -> (array op, scalar op, reflected scalar op), MXNet's choices
BINARY = {
    "add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
    "sub": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
    "mul": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
    "div": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
    "pow": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
    "mod": ("broadcast_mod", "_mod_scalar", "_rmod_scalar"),
}

# one-node graphs by (op, inputs, attributes), least recently used dropped: a scalar that
# changes every step makes a new graph each time
_GRAPHS: OrderedDict = OrderedDict()
_MAX_GRAPHS = 256


def recording(*arrays) -> bool:
    """Whether an operation on ``arrays`` must be recorded."""
    return autograd._STATE.recording and any(autograd.is_tracked(a) for a in arrays)


def apply(op: str, inputs: list, **attrs):
    """Run operator ``op`` on NDArrays through its cached graph; its first output."""
    from ..cached_graph import CachedGraph
    from ..symbol import Variable
    from ..symbol.op_api import invoke
    attrs = {k: v for k, v in attrs.items() if v is not None}
    key = (op, len(inputs), tuple(sorted((k, repr(v)) for k, v in attrs.items())))
    graph = _GRAPHS.get(key)
    if graph is None:
        names = [f"x{i}" for i in range(len(inputs))]
        sym = invoke(op, [Variable(n) for n in names], attrs, name=op.lower().strip("_"))
        graph = _GRAPHS[key] = CachedGraph(sym, names, lambda ctx: {}, f"operator {op}")
        if len(_GRAPHS) > _MAX_GRAPHS:
            _GRAPHS.popitem(last=False)
    else:
        _GRAPHS.move_to_end(key)
    ctxs = {x.context for x in inputs}
    if len(ctxs) > 1:
        raise MXNetError(f"{op}: operands are on different contexts {sorted(map(str, ctxs))}")
    return graph(list(inputs), inputs[0].context)[0]


def binary(name: str, lhs, rhs, reflected: bool):
    from .ndarray import NDArray
    if name not in BINARY:  # comparisons: no gradient, computed as plain values
        return None
    array_op, scalar_op, rscalar_op = BINARY[name]
    if isinstance(rhs, NDArray):
        return apply(array_op, [rhs, lhs] if reflected else [lhs, rhs])
    return apply(rscalar_op if reflected else scalar_op, [lhs], scalar=float(rhs))



def apply_op(op: str, attrs: dict, arrays: list, n_regular: int) -> list:
    """Run operator ``op`` (attribute strings ``attrs``) on ``arrays`` (inputs, then aux
    states) through its cached one-node graph, recording it; its visible outputs. Aux states
    are the graph's parameters, updated in place by a training forward as MXNet's
    imperative BatchNorm does (a graph per set of aux arrays)."""
    from ..cached_graph import CachedGraph
    from ..symbol import Variable
    from ..symbol.op_api import invoke
    aux = arrays[n_regular:]
    key = (op, n_regular, tuple(sorted(attrs.items())), tuple(id(a) for a in aux))
    graph = _GRAPHS.get(key)
    if graph is None:
        names = [f"x{i}" for i in range(len(arrays))]
        sym = invoke(op, [Variable(n) for n in names], dict(attrs),
                     name=op.lower().strip("_"))
        params = {n: (a, None, "null") for n, a in zip(names[n_regular:], aux)}
        graph = _GRAPHS[key] = CachedGraph(sym, names[:n_regular], lambda ctx: params,
                                           f"operator {op}")
        if len(_GRAPHS) > _MAX_GRAPHS:
            _GRAPHS.popitem(last=False)
    else:
        _GRAPHS.move_to_end(key)
    return graph(list(arrays[:n_regular]), arrays[0].context)


def getitem(arr, key, shape: tuple):
    """``arr[key]`` (any basic or advanced index) as recorded operators: the flat positions
    the key selects, computed by numpy's indexing of a position grid, gathered with
    ``take`` (whose gradient scatters back) and reshaped to ``shape``."""
    import torch

    from .ndarray import NDArray
    np_key = tuple(_np_index(k) for k in key) if isinstance(key, tuple) else _np_index(key)
    positions = np.arange(arr.size, dtype=np.int64).reshape(arr.shape)[np_key]
    index = NDArray(torch.from_numpy(np.ascontiguousarray(positions).reshape(-1))
                    .to(arr._t.device))
    flat = apply("Reshape", [arr], shape=(-1,))
    out = apply("take", [flat, index])
    return apply("Reshape", [out], shape=tuple(shape)) if tuple(shape) != out.shape else out


def _np_index(k):
    from .ndarray import NDArray
    return k.asnumpy().astype(np.int64) if isinstance(k, NDArray) else k
