"""``mx.autograd``: recording calls of bound executors, and differentiating through them.

Under :func:`record`, every differentiable computation runs through a bound executor (a
block's graph, or a one-operator graph for NDArray arithmetic) and leaves a tape
:class:`Node` behind: the executor, the arrays it read and how many outputs it made. Each
output NDArray points at its node (``_ag_node``). :func:`backward` walks the nodes that the
heads depend on in reverse order of recording, runs each executor's backward with the
gradients of its outputs, hands input gradients to the nodes that produced those inputs,
and writes the gradients of arrays marked with ``attach_grad``/:func:`mark_variables`.
Parameters' gradients land straight in their grad arrays: a block's executor is bound with
them. Values are computed when an operation is called (MXNet's imperative semantics); the
backward never recomputes a forward. Recording state is per thread, as in MXNet.

A node keeps the graph it ran, so :func:`get_symbol` composes the recording into one Symbol;
``grad(create_graph=True)`` differentiates that Symbol as a graph and runs the gradient
graph (which recomputes the forward inside it) as a recorded call, so gradients can be
differentiated again.
"""
from __future__ import annotations

import threading
from array import array  # noqa: F401 - MXNet's names
from collections.abc import Callable, Sequence

import torch

from .base import (  # noqa: F401 - MXNet's names
    MXCallbackList,
    MXNetError,
    c_array,
    c_array_buf,
    c_handle_array,
    check_call,
    string_types,
)

__all__ = ["Function", "backward", "get_symbol", "grad", "is_recording", "is_training",
           "mark_variables", "pause", "predict_mode", "record", "set_recording",
           "set_training", "train_mode"]


def __getattr__(name: str):
    """``NDArray`` and ``Symbol``, as MXNet's module has them (imported on first use: both
    modules import this one)."""
    if name == "NDArray":
        return _array_type()
    if name == "Symbol":
        from .symbol.symbol import Symbol
        return Symbol
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _State(threading.local):
    recording = False
    training = False


_STATE = _State()


def set_recording(is_recording: bool) -> bool:  # noqa: FBT001 - MXNet's signature
    """Turn recording on or off; returns the previous state."""
    prev, _STATE.recording = _STATE.recording, bool(is_recording)
    return prev


def set_training(train_mode: bool) -> bool:  # noqa: FBT001 - MXNet's signature
    """Turn training mode (dropout active, batch statistics) on or off; returns the previous."""
    prev, _STATE.training = _STATE.training, bool(train_mode)
    return prev


def is_recording() -> bool:
    """Whether operations are being recorded for a backward pass."""
    return _STATE.recording


def is_training() -> bool:
    """Whether operations run in training mode."""
    return _STATE.training


class _Scope:
    """Sets recording and/or training for a ``with`` block and restores them after."""

    def __init__(self, recording: bool | None, training: bool | None):
        self._enter = (recording, training)
        self._prev: tuple = (None, None)

    def __enter__(self):
        recording, training = self._enter
        self._prev = (set_recording(recording) if recording is not None else None,
                      set_training(training) if training is not None else None)
        return self

    def __exit__(self, *exc) -> None:
        recording, training = self._prev
        if recording is not None:
            set_recording(recording)
        if training is not None:
            set_training(training)


def record(train_mode: bool = True) -> _Scope:  # noqa: FBT001 - MXNet's signature
    """Record operations in the ``with`` block for :func:`backward` (training mode by
    default)."""
    return _Scope(True, train_mode)


def pause(train_mode: bool = False) -> _Scope:  # noqa: FBT001 - MXNet's signature
    """Stop recording inside a :func:`record` block."""
    return _Scope(False, train_mode)


def train_mode() -> _Scope:
    """Training mode without changing recording."""
    return _Scope(None, True)


def predict_mode() -> _Scope:
    """Prediction mode without changing recording."""
    return _Scope(None, False)


# ---------------------------------------------------------------- the tape

class Node:
    """One recorded executor call.

    ``inputs``: the NDArrays read (in the order ``run_backward`` returns their gradients);
    ``run_backward(out_grads)``: the gradients of the inputs (tensors or None) given the
    gradients of the outputs (tensors or None: no gradient reached that output);
    ``finish(ran, retained)``: runs once the whole backward pass is done (``ran``: whether
    this node's backward ran in it; ``retained``: whether the graph is kept for another
    backward) — gradient merging, releasing the executor for reuse.
    ``graph``: what :func:`get_symbol` composes, ``(symbol, input names, parameters)``
    (parameters: name -> (data, grad or None, grad_req)), or None (a ``Function``).
    """

    __slots__ = ("inputs", "num_outputs", "run_backward", "finish", "freed", "freed_head",
                 "where", "graph", "__weakref__")

    def __init__(self, inputs: Sequence, num_outputs: int,  # noqa: PLR0913
                 run_backward: Callable[[list], list], where: str,
                 finish: Callable[[bool, bool], None] | None = None, graph: tuple | None = None):
        self.inputs = list(inputs)
        self.num_outputs = num_outputs
        self.run_backward = run_backward
        self.finish = finish
        self.freed = False
        self.freed_head: frozenset = frozenset()  # outputs a freeing backward started at
        self.where = where
        self.graph = graph


def is_tracked(arr) -> bool:
    """Whether ``arr`` takes part in differentiation (recorded output or marked variable)."""
    if not hasattr(arr, "_ag_req"):
        return False
    return arr._chain is not None or arr._ag_node is not None or arr._ag_grad is not None


def attach(outputs: Sequence, node: Node) -> None:
    """Make ``outputs`` (NDArrays) the recorded outputs of ``node``."""
    for k, out in enumerate(outputs):
        out._ag_node = (node, k)


def mark_variables(variables, gradients, grad_reqs="write") -> None:
    """Mark NDArrays as variables whose gradients :func:`backward` writes into
    ``gradients`` (``grad_reqs``: 'write', 'add' or 'null', one or one per variable)."""
    from .ndarray.ndarray import NDArray
    if isinstance(variables, NDArray):
        variables, gradients = [variables], [gradients]
    reqs = [grad_reqs] * len(variables) if isinstance(grad_reqs, str) else list(grad_reqs)
    if not len(variables) == len(gradients) == len(reqs):
        raise MXNetError(f"mark_variables: {len(variables)} variables, {len(gradients)} "
                         f"gradients and {len(reqs)} grad_reqs must be as many")
    for var, grad, req in zip(variables, gradients, reqs):
        if req not in ("write", "add", "null"):
            raise MXNetError(f"mark_variables: grad_req must be 'write', 'add' or 'null', "
                             f"got {req!r}")
        var._ag_grad = None if req == "null" else grad
        var._ag_req = req
        var._ag_node = None  # a variable starts a new graph


def _heads(heads, head_grads):
    NDArray = _array_type()  # noqa: N806 - the class
    if isinstance(heads, NDArray):
        heads = [heads]
        head_grads = None if head_grads is None else (
            [head_grads] if isinstance(head_grads, NDArray) or head_grads is None
            else list(head_grads))
    heads = list(heads)
    head_grads = [None] * len(heads) if head_grads is None else list(head_grads)
    if len(head_grads) != len(heads):
        raise MXNetError(f"backward: {len(head_grads)} head gradients for {len(heads)} heads")
    for h, g in zip(heads, head_grads):
        if g is not None and tuple(g.shape) != tuple(h.shape):
            raise MXNetError(f"backward: head gradient of shape {tuple(g.shape)} for a head "
                             f"of shape {tuple(h.shape)}")
    return heads, head_grads


_ARRAY: list = []
_FILLED: dict = {}


def shared_filled(t: torch.Tensor, value: float) -> torch.Tensor:
    """A tensor like ``t`` filled with ``value``, shared per shape, dtype, device and value.
    Read only: default head gradients (ones) and outputs no gradient reached (zeros) are
    such tensors, and gradients are never updated in place on this path."""
    key = (t.shape, t.dtype, t.device, value)
    filled = _FILLED.get(key)
    if filled is None:
        if len(_FILLED) > 256:
            _FILLED.clear()
        filled = _FILLED[key] = torch.full_like(t, value)
    return filled


def _array_type():
    """NDArray (imported on first use: ndarray imports this module)."""
    if not _ARRAY:
        from .ndarray.ndarray import NDArray
        _ARRAY.append(NDArray)
    return _ARRAY[0]


def _order(heads) -> list[Node]:
    """Nodes the heads depend on, inputs' producers before their users."""
    order: list[Node] = []
    seen: set[int] = set()
    for head in heads:
        entry = head._ag_node
        if entry is None or id(entry[0]) in seen:
            continue
        stack = [(entry[0], 0)]
        seen.add(id(entry[0]))
        while stack:
            node, i = stack[-1]
            if i < len(node.inputs):
                stack[-1] = (node, i + 1)
                src = getattr(node.inputs[i], "_ag_node", None)  # inputs may be non-arrays
                if src is not None and src[0].freed and src[1] not in src[0].freed_head:
                    continue  # MXNet: an array of a graph an earlier backward freed is a
                    # constant in a new recording (the head of that backward is not)
                if src is not None and id(src[0]) not in seen:
                    seen.add(id(src[0]))
                    stack.append((src[0], 0))
            else:
                stack.pop()
                order.append(node)
    return order


def _add(table: dict, key, grad: torch.Tensor) -> None:
    have = table.get(key)
    table[key] = grad if have is None else have + grad  # never in place: grads are shared


def backward(heads, head_grads=None, retain_graph: bool = False,
             train_mode: bool = True) -> None:  # noqa: FBT001, ARG001 - MXNet's signature
    """Gradients of ``heads`` (recorded NDArrays) with respect to every marked variable and
    parameter they depend on; ``head_grads`` default to ones."""
    heads, head_grads = _heads(heads, head_grads)
    if not retain_graph:
        from . import deferred
        if deferred.run_heads(heads, head_grads):
            return  # the whole pass ran with the heads' chain
    for h in heads:
        if not is_tracked(h):
            raise MXNetError("Cannot differentiate node because it is not in a computational "
                             "graph. You need to set is_recording to true or use "
                             "autograd.record() to save computational graphs for backward. "
                             "If you want to differentiate the same graph twice, you need to "
                             "pass retain_graph=True to backward.")
    pending: dict = {}  # (id(node), k) -> gradient of that output
    leaves: dict = {}  # id(variable) -> (variable, gradient)
    for h, g in zip(heads, head_grads):
        grad = shared_filled(h._t, 1.0) if g is None else g._t
        if h._ag_node is not None:
            node, k = h._ag_node
            _add(pending, (id(node), k), grad)
        else:
            _add_leaf(leaves, h, grad)
    order = _order(heads)
    for node in order:
        if node.freed:
            raise MXNetError(f"backward: the graph of {node.where} was freed by an earlier "
                             "backward; pass retain_graph=True to differentiate it again")
    next_pass()
    ran: set[int] = set()
    for node in reversed(order):
        ograds = [pending.pop((id(node), k), None) for k in range(node.num_outputs)]
        if all(g is None for g in ograds):
            continue
        ran.add(id(node))
        for arr, grad in zip(node.inputs, node.run_backward(ograds)):
            if grad is None:
                continue
            src = getattr(arr, "_ag_node", None)
            if src is not None:
                _add(pending, (id(src[0]), src[1]), grad)
            elif getattr(arr, "_ag_grad", None) is not None:
                _add_leaf(leaves, arr, grad)
    for var, grad in leaves.values():
        _write_leaf(var, grad)
    head_outs: dict[int, set] = {}
    for h in heads:
        if h._ag_node is not None:
            head_outs.setdefault(id(h._ag_node[0]), set()).add(h._ag_node[1])
    for node in order:
        if node.finish is not None:
            node.finish(id(node) in ran, retain_graph)
        if not retain_graph:  # its closures go now, not at the next garbage collection
            node.freed = True
            node.freed_head = frozenset(head_outs.get(id(node), ()))
            node.run_backward = node.finish = None


def get_symbol(x):
    """The recorded computation of ``x`` as a Symbol: the recorded graphs composed, their
    inputs wired to the outputs that fed them. Arrays read from outside the recording become
    variables named ``var<N>`` (marked variables and parameters) or ``null<N>``, as MXNet
    names them.

    Examples
    --------
    >>> import symgraph as mx
    >>> x = mx.nd.ones((1,))
    >>> x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = x * x + 2 * x
    >>> len(get_symbol(y).list_arguments())
    1
    >>> get_symbol(mx.nd.ones((1,)))
    Traceback (most recent call last):
    ...
    symgraph.base.MXNetError: get_symbol: the NDArray is not part of a computational graph. \
Did you forget to turn on recording?
    """
    if getattr(x, "_ag_node", None) is None:
        raise MXNetError("get_symbol: the NDArray is not part of a computational graph. Did "
                         "you forget to turn on recording?")
    return _recorded_symbols([x])[0][0]


def _recorded_symbols(heads: list) -> tuple[list, dict]:
    """The recorded computation of each head as a Symbol, and the arrays the variables stand
    for (id(array) -> (Variable, array))."""
    leaves: dict = {}
    made: dict[int, list] = {}
    for node in _order(heads):
        made[id(node)] = _node_symbols(node, made, leaves)
    outs = []
    for h in heads:
        entry = h._ag_node
        outs.append(made[id(entry[0])][entry[1]] if entry is not None else
                    _leaf(leaves, h, getattr(h, "_ag_grad", None) is not None))
    return outs, leaves


def _node_symbols(node: Node, made: dict, leaves: dict) -> list:
    """The outputs of ``node``'s graph with its inputs substituted (a step of get_symbol)."""
    if node.graph is None:
        raise MXNetError(f"get_symbol: the recording holds {node.where}, a custom "
                         "autograd.Function, which has no symbolic form")
    symbol, names, params = node.graph
    subs = {}
    for name, arr in zip(names, node.inputs):
        src = getattr(arr, "_ag_node", None)
        subs[name] = made[id(src[0])][src[1]] if src is not None else \
            _leaf(leaves, arr, getattr(arr, "_ag_grad", None) is not None)
    for name in symbol.list_arguments() + symbol.list_auxiliary_states():
        if name not in subs:
            data, grad_arr, _ = params[name]
            subs[name] = _leaf(leaves, data, grad_arr is not None)
    composed = symbol(**subs)
    return [composed[k] for k in range(node.num_outputs)]


_LEAVES = [0]  # MXNet numbers get_symbol's variables across calls


def _leaf(leaves: dict, arr, marked: bool):
    if id(arr) not in leaves:
        from .symbol import Variable
        leaves[id(arr)] = (Variable(f"{'var' if marked else 'null'}{_LEAVES[0]}"), arr)
        _LEAVES[0] += 1
    return leaves[id(arr)][0]


_PASS = [0]


def pass_id() -> int:
    """Which backward pass is running (increases with every :func:`backward`)."""
    return _PASS[0]


def next_pass() -> None:
    """A backward pass starts."""
    _PASS[0] += 1


def _add_leaf(leaves: dict, var, grad: torch.Tensor) -> None:
    have = leaves.get(id(var))
    leaves[id(var)] = (var, grad if have is None else have[1] + grad)


def _write_leaf(var, grad: torch.Tensor) -> None:
    target = var._ag_grad._t
    if var._ag_req == "add":
        target.add_(grad.to(target.dtype))
    else:
        target.copy_(grad)
    var._fresh_grad = True


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph: bool = False,
         train_mode: bool = True):  # noqa: FBT001 - MXNet's signature
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
    from .ndarray.ndarray import NDArray
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
    from .cached_graph import CachedGraph
    from .compiler.autodiff import build_gradients
    from .compiler.composite import expand
    from .symbol import Group, zeros_like
    from .symbol.graph import IndexedGraph
    from .symbol.symbol import Symbol
    heads, head_grads = _heads(heads, head_grads)
    outs, leaves = _recorded_symbols(heads)
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
             zeros_like(leaves[id(v)][0]) for n, v in zip(wanted, variables)]
    symbol = Group(grads)
    arrays = {var.name: arr for var, arr in leaves.values()}
    for h, g, node in zip(heads, head_grads, built.head_grads):
        arrays[node.name] = g if g is not None else _array_type()(torch.ones_like(h._t))
    names = symbol.list_arguments()
    aux = {n: (arrays[n], None, "null") for n in symbol.list_auxiliary_states()}
    graph = CachedGraph(symbol, names, lambda ctx: aux, "autograd.grad(create_graph=True)")
    inputs = [arrays[n] for n in names]
    with _Scope(True, train_mode):
        return graph(inputs, inputs[0].context)


def _rename_created(ig, built) -> None:
    """Prefix the nodes a gradient pass created with ``grad_``: differentiating the gradient
    graph again names its nodes (and head-gradient variables) as the first pass did."""
    from .symbol.graph import dfs_post_order
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
        from .ndarray.ndarray import NDArray
        with pause():
            outputs = self.forward(*inputs)
        single = isinstance(outputs, NDArray)
        outs = [outputs] if single else list(outputs)
        if is_recording() and any(is_tracked(x) for x in inputs):
            def run_backward(ograds: list) -> list:
                # its own copies: user code may change them in place, and the gradients
                # handed in can be shared (default head gradients, executor buffers)
                grads = [NDArray(torch.zeros_like(o._t) if g is None else g.clone())
                         for o, g in zip(outs, ograds)]
                with pause():
                    got = self.backward(*grads)
                got = [got] if isinstance(got, NDArray) else list(got)
                if len(got) != len(inputs):
                    raise MXNetError(f"{type(self).__name__}.backward returned {len(got)} "
                                     f"gradients for {len(inputs)} inputs")
                return [g._t for g in got]
            attach(outs, Node(inputs, len(outs), run_backward, type(self).__name__))
        return outputs
