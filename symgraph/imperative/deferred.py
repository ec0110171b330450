"""Recorded graph calls composed before they run.

Under ``autograd.record()`` a :class:`~symgraph.imperative.cached_graph.CachedGraph` call
(a Gluon block, or recorded NDArray arithmetic) does not run at once: it returns :class:`Pending`
arrays and joins a :class:`Chain` with the pending calls its inputs came from. When a value
is needed — an array's data is read, or ``backward`` starts — the chain is composed into one
Symbol (each call's graph with its inputs wired to the outputs of earlier calls; parameters
shared by name), bound once per chain structure and run as one executor, recorded as one
tape node. A network and its loss therefore run as one graph per step, as a ``Module`` does,
and nothing runs for outputs nobody reads. A chain keeps at most ``MAX_CALLS`` calls, and
calls that cannot share a graph (another context or training mode, the same auxiliary
states twice) start a new chain after running the old one.
"""
from __future__ import annotations

import weakref
from collections import OrderedDict

from ..ndarray.ndarray import NDArray
from ..symbol import Group, Variable
from ..symbol.op_api import invoke as symbol_op
from .cached_graph import CachedGraph
from .tape import is_tracked

MAX_CALLS = 16
_MAX_COMPOSED = 64  # composed graphs kept (least recently used dropped)
_COMPOSED: OrderedDict = OrderedDict()


class Chain:
    """Pending calls, in call order: ``(graph, inputs, params, outputs)``."""

    __slots__ = ("calls", "ctx", "training", "aux")

    def __init__(self, ctx, training: bool):
        self.calls: list[tuple] = []
        self.ctx, self.training = ctx, training
        self.aux: set[str] = set()


class Pending(NDArray):
    """An output of a recorded call that has not run; reading its data runs its chain.
    Its shape and dtype are known (from an earlier run of the same call signature)."""

    def __init__(self, chain: Chain, ctx, sig: tuple):  # no tensor yet
        self.__dict__["_chain"] = chain
        self.__dict__["_sig"] = sig
        self._ctx = ctx

    @property
    def shape(self) -> tuple:
        return self.__dict__["_sig"][0]

    @property
    def _t(self):
        if self.__dict__["_chain"] is not None:
            run(self.__dict__["_chain"])
        return self.__dict__["_value"]

    @_t.setter
    def _t(self, value) -> None:
        self.__dict__["_value"] = value

    @property
    def _ag_node(self):
        if self.__dict__["_chain"] is not None:
            run(self.__dict__["_chain"])
        return self.__dict__.get("_node")

    @_ag_node.setter
    def _ag_node(self, value) -> None:
        self.__dict__["_node"] = value

    @property
    def _chain(self):
        return self.__dict__["_chain"]


def _signature(inputs: list) -> tuple:
    return tuple([x.__dict__["_sig"] if x._chain is not None else
                  (tuple(x._t.shape), x._t.dtype) for x in inputs])


def call(graph, inputs: list, ctx, training: bool) -> list[NDArray]:
    """Add a recorded call of ``graph`` to the chain of its pending inputs (or a new one).

    A call signature (input shapes and dtypes) the graph has not run yet runs at once, so
    bad inputs fail at the call that gets them, as in MXNet, and the outputs' shapes become
    known for later calls."""
    params = graph.params(ctx)  # a deferred parameter raises here, where blocks expect it
    outs_sig = graph.signatures.get(_signature(inputs))
    if outs_sig is None:
        for x in inputs:
            if x._chain is not None:
                run(x._chain)
        return graph.run(inputs, ctx, training, params, record=True)
    aux = graph.aux_set
    chains = []
    for x in inputs:
        chain = x._chain
        if chain is not None and all(chain is not c for c in chains):
            chains.append(chain)
    chain = None
    for c in chains:
        if (c.ctx is not ctx and c.ctx != ctx) or c.training != training or c.aux & aux or \
                len(c.calls) >= MAX_CALLS or (chain is not None and c.aux & chain.aux):
            run(c)
        elif chain is None:
            chain = c
        else:  # two chains meet: one graph (neither reads the other's values)
            chain.calls += c.calls
            chain.aux |= c.aux
            for _, _, _, outs in c.calls:
                for o in outs:
                    o.__dict__["_chain"] = chain
    if chain is None:
        chain = Chain(ctx, training)
    outs = [Pending(chain, ctx, sig) for sig in outs_sig]
    chain.calls.append((graph, list(inputs), params, outs))
    chain.aux |= aux
    return outs


def run_heads(heads: list, head_grads: list) -> bool:
    """Run the chains of ``heads`` for a backward pass that frees the graph: their other
    outputs get no gradient in it, so their gradient computations are left out of the
    composed graph (no zero head gradients summed into it).

    The usual training step — every head an output of one chain whose inputs take no
    part in differentiation — is then the whole pass: the chain runs forward and backward
    at once, leaving no tape node, and True is returned."""
    head_ids = None
    for h in heads:
        chain = h._chain
        if chain is None:
            continue
        if head_ids is None:
            head_ids = {id(x): k for k, x in enumerate(heads)}
            if len(head_ids) == len(heads) and all(x._chain is chain for x in heads):
                return _run(chain, head_ids, head_grads)
        _run(chain, head_ids, None)
    return False


def run(chain: Chain) -> None:
    """Compose, bind (once per structure) and run a chain; its arrays get their values."""
    _run(chain, None, None)


def _run(chain: Chain, heads: dict | None, head_grads: list | None) -> bool:
    """:func:`run`, where ``heads`` (id -> index, or None: any output) are the only outputs
    that will get gradients; with ``head_grads`` (one per head: NDArray or None) also the
    backward, when the chain's inputs take no part in differentiation (True if so)."""
    if not chain.calls:
        return False
    calls, chain.calls = chain.calls, []
    flat = [o for _, _, _, outs in calls for o in outs]
    mask = None if heads is None else tuple(id(o) in heads for o in flat)
    position = {id(o): (i, k) for i, (_, _, _, outs) in enumerate(calls)
                for k, o in enumerate(outs)}
    external: list = []
    where: dict[int, int] = {}
    wiring = []
    for graph, inputs, _, _ in calls:
        wires = []
        for x in inputs:
            if id(x) in position:
                wires.append(("p",) + position[id(x)])
            else:
                if id(x) not in where:
                    where[id(x)] = len(external)
                    external.append(x)
                wires.append(("x", where[id(x)]))
        wiring.append((graph, tuple(wires)))
    graph, params = _composed(wiring, len(external), mask, tuple(p for _, _, p, _ in calls))
    if head_grads is not None and not any(is_tracked(x) for x in external):
        grads = {}
        for k, o in enumerate(flat):
            if id(o) in heads:
                given = head_grads[heads[id(o)]]
                grads[k] = None if given is None else given._t
        results = graph.run_with_backward(external, chain.ctx, chain.training, params, grads)
        done = True
    else:
        results = graph.run(external, chain.ctx, chain.training, params, record=True)
        done = False
    for pending, value in zip(flat, results):
        pending.__dict__["_value"] = value._t
        pending.__dict__["_node"] = value._ag_node
        pending.__dict__["_chain"] = None
    return done


def _composed(wiring: list, n_external: int, mask: tuple | None, parts: tuple) -> tuple:
    """The CachedGraph of a chain's structure (composed once, least recently used dropped)
    and the calls' parameter mappings merged (kept while the calls hand the same ones)."""
    key = (tuple((id(g), w) for g, w in wiring), n_external, mask)
    composed = _COMPOSED.get(key)
    if composed is None:
        # weak: a dead block's graph takes its composed graphs (and their buffers) with it
        drop = _dropper(key)
        composed = (_compose(wiring, n_external, mask),
                    [weakref.ref(g, drop) for g, _ in wiring], [(), None])
        _COMPOSED[key] = composed
        while len(_COMPOSED) > _MAX_COMPOSED:
            _COMPOSED.popitem(last=False)
    else:
        _COMPOSED.move_to_end(key)
    kept = composed[2]
    if len(kept[0]) == len(parts) and all(a is b for a, b in zip(kept[0], parts)):
        return composed[0], kept[1]  # the calls' mappings are those of the last run
    params = {}
    for p in parts:
        params.update(p)
    kept[:] = [parts, params]
    return composed[0], params


def _dropper(key: tuple):
    """A weak-reference callback forgetting the composed graph ``key``."""
    def drop(_ref) -> None:
        _COMPOSED.pop(key, None)
    return drop


def _compose(wiring: list, n_external: int, mask: tuple | None):
    """One CachedGraph for a chain's structure; outputs ``mask`` marks False pass through
    ``BlockGrad``."""
    names = [f"__deferred_input{k}" for k in range(n_external)]
    ext = [Variable(n) for n in names]
    shared: dict[str, object] = {}
    outs: list[list] = []
    for graph, wires in wiring:
        subs = {}
        for name, wire in zip(graph.input_names, wires):
            subs[name] = ext[wire[1]] if wire[0] == "x" else outs[wire[1]][wire[2]]
        for name in graph._arg_names:
            if name not in subs:  # a parameter: one variable however many calls use it
                subs[name] = shared.setdefault(name, Variable(name))
        composed = graph.symbol(**subs)
        outs.append([composed[k] for k in range(len(composed.list_outputs()))])
    flat = [s for o in outs for s in o]
    if mask is not None:
        flat = [s if keep else symbol_op("BlockGrad", [s], {}, name=f"__deferred_nograd{k}")
                for k, (s, keep) in enumerate(zip(flat, mask))]
    where = "recorded calls of " + ", ".join(g.where for g, _ in wiring)
    return CachedGraph(Group(flat), names, _no_params, where)


def _no_params(ctx) -> dict:
    """A composed graph's parameters come with each run (``CachedGraph.run``)."""
    return {}
