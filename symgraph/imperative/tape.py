"""The tape: recorded calls (:class:`Node`) and the backward pass over them.

Every differentiable computation under ``autograd.record()`` runs through a bound executor (a
block's graph, or a one-operator graph for NDArray arithmetic) and leaves a tape
:class:`Node` behind: the executor, the arrays it read and how many outputs it made. Each
output NDArray points at its node (``_ag_node``). :func:`run` walks the nodes that the
heads depend on in reverse order of recording, runs each executor's backward with the
gradients of its outputs, hands input gradients to the nodes that produced those inputs,
and writes the gradients of arrays marked with ``attach_grad``/:func:`mark_variables`.
A node keeps the graph it ran, so :func:`get_symbol` composes the recording into one Symbol.

>>> import symgraph as mx
>>> from symgraph.imperative import tape
>>> x = mx.nd.ones((1,))
>>> tape.is_tracked(x), x.attach_grad(), tape.is_tracked(x)
(False, None, True)
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ..base import MXNetError
from ..executor_storage import store
from ..ndarray.ndarray import NDArray
from ..ndarray.sparse_array import value_of
from ..sparse import formats
from ..symbol import Variable


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

    def __init__(self, inputs: Sequence, num_outputs: int,
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
    """Mark NDArrays as variables whose gradients :func:`run` writes into ``gradients``
    (``grad_reqs``: 'write', 'add' or 'null', one or one per variable)."""
    if isinstance(variables, NDArray):
        variables, gradients = [variables], [gradients]
    reqs = [grad_reqs] * len(variables) if isinstance(grad_reqs, str) else list(grad_reqs)
    if not len(variables) == len(gradients) == len(reqs):
        raise MXNetError(f"mark_variables: {len(variables)} variables, {len(gradients)} "
                         f"gradients and {len(reqs)} grad_reqs must be as many")
    for var, grad, req in zip(variables, gradients, reqs):
        var._mark(grad, req)


def heads_and_grads(heads, head_grads) -> tuple[list, list]:
    """The heads of a backward pass and their gradients (None: ones) as two lists."""
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


_FILLED: dict = {}


def shared_filled(t: torch.Tensor, value: float) -> torch.Tensor:
    """A tensor like ``t`` filled with ``value``, shared per shape, dtype, device and value.
    Read only: default head gradients (ones) and outputs no gradient reached (zeros) are
    such tensors, and gradients are never updated in place on this path."""
    return filled(t.shape, t.dtype, t.device, value)


def filled(shape, dtype: torch.dtype, device, value: float) -> torch.Tensor:
    """:func:`shared_filled` from a shape, dtype and device."""
    key = (tuple(shape), dtype, torch.device(device), value)
    got = _FILLED.get(key)
    if got is None:
        if len(_FILLED) > 256:
            _FILLED.clear()
        got = _FILLED[key] = torch.full(tuple(shape), value, dtype=dtype, device=device)
    return got


def nodes_of(heads) -> list[Node]:
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


def _sum(have, grad):
    """Two gradients (tensors or sparse values) added, never in place: grads are shared."""
    if have is None:
        return grad
    if isinstance(have, torch.Tensor) and isinstance(grad, torch.Tensor):
        return have + grad
    return formats.add(have, grad)


def _ones(head: NDArray) -> torch.Tensor:
    """The default gradient of ``head``: shared ones (dense, for a sparse head too)."""
    v = value_of(head)
    return filled(v.shape, v.dtype, v.device, 1.0)


def _add(table: dict, key, grad) -> None:
    table[key] = _sum(table.get(key), grad)


def run(heads: list, head_grads: list, retain_graph: bool) -> None:
    """The backward pass over the tape from ``heads`` (their gradients: NDArrays, or None
    for ones): marked variables get their gradients; the nodes' graphs are freed unless
    ``retain_graph``."""
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
        grad = _ones(h) if g is None else value_of(g)
        if h._ag_node is not None:
            node, k = h._ag_node
            _add(pending, (id(node), k), grad)
        else:
            _add_leaf(leaves, h, grad)
    order = nodes_of(heads)
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
    return recorded_symbols([x])[0][0]


def recorded_symbols(heads: list) -> tuple[list, dict]:
    """The recorded computation of each head as a Symbol, and the arrays the variables stand
    for (id(array) -> (Variable, array))."""
    leaves: dict = {}
    made: dict[int, list] = {}
    for node in nodes_of(heads):
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
        leaves[id(arr)] = (Variable(f"{'var' if marked else 'null'}{_LEAVES[0]}"), arr)
        _LEAVES[0] += 1
    return leaves[id(arr)][0]


_PASS = [0]


def pass_id() -> int:
    """Which backward pass is running (increases with every :func:`run`)."""
    return _PASS[0]


def next_pass() -> None:
    """A backward pass starts."""
    _PASS[0] += 1


def _add_leaf(leaves: dict, var, grad) -> None:
    have = leaves.get(id(var))
    leaves[id(var)] = (var, _sum(None if have is None else have[1], grad))


def _write_leaf(var, grad) -> None:
    """Write (or add) ``grad`` (a tensor or sparse value) into the variable's gradient array
    in that array's storage."""
    target = var._ag_grad
    if target._is_sparse or not isinstance(grad, torch.Tensor):
        store(target, grad, add=var._ag_req == "add")
    elif var._ag_req == "add":
        target._t.add_(grad.to(target._t.dtype))
    else:
        target._t.copy_(grad)
    var._fresh_grad = True
