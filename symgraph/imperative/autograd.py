"""``mx.autograd``: recording calls of bound executors, and differentiating through them.

:func:`record` installs the recorder of :mod:`symgraph.imperative.recorded` in this thread's
``symgraph.ndarray.hooks.STATE``: NDArray operations on arrays that take part in
differentiation then run as registered operators through cached one-node graphs, and every
graph call (a block's, or those) leaves a tape node (:mod:`symgraph.imperative.tape`) or
joins a deferred chain (:mod:`symgraph.imperative.deferred`). :func:`backward` runs the
heads' chains and walks the tape: the gradients of arrays marked with
``attach_grad``/:func:`mark_variables` are written, and parameters' gradients land straight
in their grad arrays (a block's executor is bound with them). Values are computed when an
operation is called (MXNet's imperative semantics); the backward never recomputes a forward.
Recording state is per thread, as in MXNet.

``grad(create_graph=True)`` differentiates the recording composed as one Symbol
(:func:`get_symbol`) and runs the gradient graph (which recomputes the forward inside it) as
a recorded call, so gradients can be differentiated again.

>>> import symgraph as mx
>>> x = mx.nd.array([2.0])
>>> x.attach_grad()
>>> with mx.autograd.record():
...     y = x * x
>>> y.backward()
>>> x.grad.asnumpy()
array([4.], dtype=float32)
"""
from __future__ import annotations

from array import array  # noqa: F401 - MXNet's names

import torch

from ..base import (  # noqa: F401 - MXNet's names
    MXCallbackList,
    MXNetError,
    c_array,
    c_array_buf,
    c_handle_array,
    check_call,
    string_types,
)
from ..compiler.autodiff import build_gradients
from ..compiler.composite import expand
from ..ndarray import hooks as _hooks
from ..ndarray.ndarray import NDArray
from ..ndarray.sparse_array import value_of, wrap
from ..sparse import formats
from ..symbol import Group
from ..symbol.graph import IndexedGraph, dfs_post_order
from ..symbol.op_api import invoke as _symbol_op
from ..symbol.symbol import Symbol
from . import deferred, tape
from .cached_graph import CachedGraph
from .recorded import RECORDER
from .tape import get_symbol, mark_variables

__all__ = ["Function", "backward", "get_symbol", "grad", "is_recording", "is_training",
           "mark_variables", "pause", "predict_mode", "record", "set_recording",
           "set_training", "train_mode"]


def set_recording(is_recording: bool) -> bool:
    """Turn recording on or off in this thread; returns the previous state."""
    state = _hooks.STATE
    prev = state.recorder is not None
    state.recorder = RECORDER if is_recording else None
    return prev


def set_training(train_mode: bool) -> bool:
    """Turn training mode (dropout active, batch statistics) on or off; returns the previous."""
    state = _hooks.STATE
    prev, state.training = state.training, bool(train_mode)
    return prev


def is_recording() -> bool:
    """Whether operations are being recorded for a backward pass."""
    return _hooks.STATE.recorder is not None


def is_training() -> bool:
    """Whether operations run in training mode."""
    return _hooks.STATE.training


def record(train_mode: bool = True) -> _hooks.Scope:
    """Record operations in the ``with`` block for :func:`backward` (training mode by
    default)."""
    return _hooks.Scope(RECORDER, train_mode)


def pause(train_mode: bool = False) -> _hooks.Scope:
    """Stop recording inside a :func:`record` block."""
    return _hooks.Scope(None, train_mode)


def train_mode() -> _hooks.Scope:
    """Training mode without changing recording."""
    return _hooks.Scope(training=True)


def predict_mode() -> _hooks.Scope:
    """Prediction mode without changing recording."""
    return _hooks.Scope(training=False)


def backward(heads, head_grads=None, retain_graph: bool = False,
             train_mode: bool = True) -> None:
    """Gradients of ``heads`` (recorded NDArrays) with respect to every marked variable and
    parameter they depend on; ``head_grads`` default to ones."""
    heads, head_grads = tape.heads_and_grads(heads, head_grads)
    if not retain_graph and deferred.run_heads(heads, head_grads):
        return  # the whole pass ran with the heads' chain
    tape.run(heads, head_grads, retain_graph)


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph: bool = False,
         train_mode: bool = True):
    """Gradients of ``heads`` with respect to ``variables``, returned (not written): a list,
    one per variable, even for one NDArray (as MXNet 1.9.1 returns them). With
    ``create_graph`` they are recorded, so they can be differentiated again.

    Examples
    --------
    >>> import symgraph as mx
    >>> x = mx.nd.array([3.0])
    >>> x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = x * x * x
    >>> dx = mx.autograd.grad(y, x, create_graph=True)[0]  # 3 x**2
    >>> dx.asnumpy()
    array([27.], dtype=float32)
    >>> dx.backward()  # 6 x
    >>> x.grad.asnumpy()
    array([18.], dtype=float32)
    """
    variables = [variables] if isinstance(variables, NDArray) else list(variables)
    if not variables:
        raise AssertionError("variables cannot be an empty list.")
    if create_graph:
        return _recorded_grad(heads, variables, head_grads, train_mode)
    saved = [(getattr(v, "_ag_grad", None), getattr(v, "_ag_req", None)) for v in variables]
    outs = [NDArray(torch.zeros_like(v._t)) for v in variables]
    for v, out in zip(variables, outs):
        if v._ag_grad is None:
            raise MXNetError("autograd.grad: every variable must have attach_grad() called "
                             "on it (or be marked with mark_variables)")
        v._ag_grad, v._ag_req = out, "write"
    try:
        backward(heads, head_grads, retain_graph=bool(retain_graph), train_mode=train_mode)
    finally:
        for v, (g, req) in zip(variables, saved):
            v._ag_grad, v._ag_req = g, req
    return outs


def _recorded_grad(heads, variables: list, head_grads, train_mode: bool) -> list:
    """``grad(create_graph=True)``: the gradient graph of the recorded computation (the
    forward recomputed inside it) run as a recorded call, so its outputs can be
    differentiated again. Random operators draw anew in the recomputed forward."""
    heads, head_grads = tape.heads_and_grads(heads, head_grads)
    outs, leaves = tape.recorded_symbols(heads)
    ig = Group(outs)._graph()
    expanded = expand(ig.heads)  # composite ops differentiate through their decomposition
    if expanded is not ig.heads:
        ig = IndexedGraph(expanded)
    wanted = []
    for k, v in enumerate(variables):
        if id(v) not in leaves:
            raise MXNetError(f"autograd.grad: cannot differentiate with respect to variable {k}: "
                             "it is unreachable from the heads")
        wanted.append(ig.node_id[id(leaves[id(v)][0]._outputs[0][0])])
    built = build_gradients(ig, wanted)
    _rename_created(ig, built)
    grads = [Symbol([built.grads[n]]) if built.grads[n] is not None else
             _symbol_op("zeros_like", [leaves[id(v)][0]], {}) for n, v in zip(wanted, variables)]
    symbol = Group(grads)
    arrays = {var.name: arr for var, arr in leaves.values()}
    for h, g, node in zip(heads, head_grads, built.head_grads):
        arrays[node.name] = g if g is not None else NDArray(torch.ones_like(h._t))
    names = symbol.list_arguments()
    aux = {n: (arrays[n], None, "null") for n in symbol.list_auxiliary_states()}
    graph = CachedGraph(symbol, names, lambda ctx: aux, "autograd.grad(create_graph=True)")
    inputs = [arrays[n] for n in names]
    with record(train_mode):
        return graph(inputs, inputs[0].context)


def _rename_created(ig, built) -> None:
    """Prefix the nodes a gradient pass created with ``grad_``: differentiating the gradient
    graph again names its nodes (and head-gradient variables) as the first pass did."""
    forward = set(map(id, ig.nodes))
    for node in dfs_post_order([e for e in built.grads.values() if e is not None]):
        if id(node) not in forward:
            node.name = f"grad_{node.name}"


class Function:
    """MXNet's custom differentiable function (``forward``/``backward`` in NDArrays)."""

    def __init__(self):
        self._saved: tuple = ()

    def save_for_backward(self, *args) -> None:
        self._saved = args

    @property
    def saved_tensors(self) -> tuple:
        return self._saved

    def forward(self, *inputs):
        raise NotImplementedError

    def backward(self, *output_grads):
        raise NotImplementedError

    def __call__(self, *inputs):
        with pause():
            outputs = self.forward(*inputs)
        single = isinstance(outputs, NDArray)
        outs = [outputs] if single else list(outputs)
        if is_recording() and any(tape.is_tracked(x) for x in inputs):
            def run_backward(ograds: list) -> list:
                # its own copies: user code may change them in place, and the gradients
                # handed in can be shared (default head gradients, executor buffers)
                grads = [NDArray(torch.zeros_like(o._t)) if g is None else
                         wrap(formats.clone(g)) for o, g in zip(outs, ograds)]
                with pause():
                    got = self.backward(*grads)
                got = [got] if isinstance(got, NDArray) else list(got)
                if len(got) != len(inputs):
                    raise MXNetError(f"{type(self).__name__}.backward returned {len(got)} "
                                     f"gradients for {len(inputs)} inputs")
                return [value_of(g) for g in got]
            tape.attach(outs, tape.Node(inputs, len(outs), run_backward, type(self).__name__))
        return outputs


_hooks.install_backward(backward)
