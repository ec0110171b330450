"""NDArray arithmetic under ``autograd.record()``: the recorder that ``record()`` installs in
``symgraph.ndarray.hooks.STATE``. Each operation on an array that takes part in
differentiation runs as its registered operator through a cached one-node graph
(:class:`~symgraph.imperative.cached_graph.CachedGraph`), so ``backward`` differentiates it
like any graph, by the operator's own gradient rule; graph calls are deferred
(:mod:`symgraph.imperative.deferred`). Outside recording nothing here runs.

>>> import symgraph as mx
>>> from symgraph.imperative.recorded import RECORDER
>>> x = mx.nd.ones((2,))
>>> x.attach_grad()
>>> RECORDER.tracks(x), RECORDER.tracks(mx.nd.ones((2,)))
(True, False)
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import torch

from .. import config
from ..base import MXNetError
from ..ndarray import hooks
from ..ndarray.ndarray import NDArray
from ..ndarray.register import invoke
from ..symbol import Variable
from ..symbol.op_api import invoke as symbol_op
from . import deferred
from .cached_graph import CachedGraph
from .tape import Node, attach, is_tracked

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


def apply(op: str, inputs: list, **attrs):
    """Run operator ``op`` on NDArrays through its cached graph; its first output."""
    attrs = {k: v for k, v in attrs.items() if v is not None}
    key = (op, len(inputs), tuple(sorted((k, repr(v)) for k, v in attrs.items())))
    graph = _GRAPHS.get(key)
    if graph is None:
        names = [f"x{i}" for i in range(len(inputs))]
        sym = symbol_op(op, [Variable(n) for n in names], attrs, name=op.lower().strip("_"))
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
    """NDArray arithmetic ``name`` as its registered operator, or None (comparisons)."""
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
    aux = arrays[n_regular:]
    key = (op, n_regular, tuple(sorted(attrs.items())), tuple(id(a) for a in aux))
    graph = _GRAPHS.get(key)
    if graph is None:
        names = [f"x{i}" for i in range(len(arrays))]
        sym = symbol_op(op, [Variable(n) for n in names], dict(attrs),
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
    np_key = tuple(_np_index(k) for k in key) if isinstance(key, tuple) else _np_index(key)
    positions = np.arange(arr.size, dtype=np.int64).reshape(arr.shape)[np_key]
    index = NDArray(torch.from_numpy(np.ascontiguousarray(positions).reshape(-1))
                    .to(arr._t.device))
    flat = apply("Reshape", [arr], shape=(-1,))
    out = apply("take", [flat, index])
    return apply("Reshape", [out], shape=tuple(shape)) if tuple(shape) != out.shape else out


def _np_index(k):
    return k.asnumpy().astype(np.int64) if isinstance(k, NDArray) else k


def constant(arr, inputs: list) -> None:
    """Make ``arr`` a recorded output of ``inputs`` with a zero gradient to them."""
    def zeros(ograds: list) -> list:
        return [torch.zeros_like(a._t) for a in inputs]
    attach([arr], Node(inputs, 1, zeros, "constant"))


def call_graph(graph: CachedGraph, inputs: list, ctx) -> list:
    """A recorded call of ``graph``: deferred into a chain (``config.defer_recorded``; not a
    graph with an op hook, nor one reading sparse arrays, whose storage types a chain's
    dense values would lose), or run now leaving a tape node."""
    training = hooks.STATE.training
    if config.get().defer_recorded and not graph.hooked and \
            not any(x._is_sparse for x in inputs):
        return deferred.call(graph, inputs, ctx, training)
    return graph.run(inputs, ctx, training, graph.params(ctx), record=True)


class Recorder:
    """What ``autograd.record()`` installs in ``hooks.STATE.recorder`` (see
    :class:`symgraph.ndarray.hooks.Recorder`)."""

    @staticmethod
    def tracks(*arrays) -> bool:
        """Whether an operation on ``arrays`` must be recorded."""
        return any(is_tracked(a) for a in arrays)

    apply = staticmethod(apply)
    binary = staticmethod(binary)
    getitem = staticmethod(getitem)
    apply_op = staticmethod(apply_op)
    constant = staticmethod(constant)
    call_graph = staticmethod(call_graph)

    @staticmethod
    def invoke(op: str, args: tuple, kwargs: dict, out=None):
        """``nd.<op>(*args, **kwargs)`` recorded."""
        return invoke(op, args, kwargs, out)


RECORDER = Recorder()
