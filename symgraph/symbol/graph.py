"""Graph nodes and the indexed view every pass works on.

A :class:`Node` is a variable (``op is None``) or an operator application whose
``inputs`` are ``(node, output_index)`` entries (regular inputs first, then aux
states, as MXNet orders them). :class:`IndexedGraph` numbers the nodes reachable from
a list of heads in MXNet's depth-first post-order, numbers every output entry, and
exposes the graph to networkx for analyses.
"""
from __future__ import annotations

from functools import cached_property

import networkx as nx

from ..attrs import Params, parse_params
from ..base import GraphError, MXNetError
from ..ops.base import OpDef

Entry = tuple["Node", int]


# Parsed params by (op, attribute items): nodes with the same attributes (the steps of an
# unrolled network, gradient nodes) share one immutable Params instead of parsing again
_PARSED: dict[tuple, Params] = {}
_MAX_PARSED = 4096
# bumped whenever a node's attributes change after it was built (``Node.reset_params``):
# cached indexings of symbols (``indexed``) are then rebuilt
_EPOCH = 0


def op_params(op: OpDef, attrs: dict[str, str], where: str) -> Params:
    """``op``'s parsed and checked params for these attribute strings (shared, immutable;
    an op parsing its own attributes gets fresh ones per node)."""
    if op.special.parse is not None:
        return op.special.parse(attrs, where)
    key = (op.name, tuple(attrs.items()))
    params = _PARSED.get(key)
    if params is None:
        params = parse_params(op.params, attrs, where)
        if op.check is not None:
            try:
                op.check(params)
            except MXNetError as err:
                raise type(err)(f"Error in {where}: {err}") from None
        if len(_PARSED) >= _MAX_PARSED:
            _PARSED.clear()
        _PARSED[key] = params
    return params


class Subgraphs(tuple):
    """A node's subgraph Symbols; equal only to itself (Symbol's ``==`` builds a node)."""

    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__


class Node:
    """A variable or an operator application in a symbol graph."""

    __slots__ = ("op", "name", "attrs", "inputs", "_params", "_nout", "_nreg",
                 "versions", "inner", "composite", "subgraphs", "__weakref__")

    def __init__(self, op: OpDef | None, name: str, attrs: dict[str, str] | None = None,
                 inputs: list[Entry] | None = None, params: Params | None = None):
        self.op = op
        self.name = name
        self.attrs: dict[str, str] = dict(attrs or {})
        self.inputs: list[Entry] = list(inputs or [])
        self._params = params
        self._nout: int | None = None
        self._nreg: int | None = None
        # input entry versions as a loaded JSON file gave them (None: count them when saving)
        self.versions: list[int] | None = None
        # made inside a composite op's expansion and giving none of its outputs: monitors
        # report the composite's outputs only, as MXNet reports the op's
        self.inner = False
        # the composite.Expansion this node was made in: monitors report the composite's
        # inputs and outputs, as MXNet reports the op's
        self.composite = None
        # the Symbols a control-flow node runs (MXNet's "subgraphs" JSON key); its params
        # carry them as ``_subgraphs``
        self.subgraphs: tuple = ()

    def set_subgraphs(self, subgraphs) -> None:
        """Attach the subgraph Symbols this node runs (params are parsed again)."""
        self.subgraphs = Subgraphs(subgraphs)
        self._params = None

    def with_inputs(self, inputs: list[Entry]) -> Node:
        """The same operator application reading ``inputs`` (a graph pass's copy: what the
        node stands for, ``inner``/``composite``, goes with it)."""
        new = Node(self.op, self.name, self.attrs, inputs, params=self._params)
        new.inner, new.composite = self.inner, self.composite
        new.subgraphs = self.subgraphs
        return new

    @property
    def is_variable(self) -> bool:
        return self.op is None

    @property
    def params(self) -> Params:
        """Parsed op parameters (cached; attributes are immutable once a node is built)."""
        if self._params is None:
            self._params = Params() if self.op is None else \
                op_params(self.op, self.attrs, self.where)
            if self.subgraphs:  # per node: equal attributes do not mean equal subgraphs
                self._params = Params({**self._params, "_subgraphs": self.subgraphs})
        return self._params

    def reset_params(self) -> None:
        """Forget the parsed parameters (after ``attrs`` changed); graphs indexed before
        are indexed again."""
        global _EPOCH
        self._params = self._nout = self._nreg = None
        _EPOCH += 1

    @property
    def where(self) -> str:
        """How error messages name this node."""
        if self.op is None:
            return f"variable {self.name}"
        return f"operator {self.name} ({self.op.name})"

    @property
    def num_outputs(self) -> int:
        if self._nout is None:
            self._nout = 1 if self.op is None else len(self.op.output_names(self.params))
        return self._nout

    @property
    def num_visible_outputs(self) -> int:
        return 1 if self.op is None else self.op.visible_outputs(self.params)

    def output_name(self, index: int) -> str:
        """MXNet's output naming: ``data`` for a variable, ``fc1_output`` for an op."""
        if self.op is None:
            return self.name
        name = self.op.output_names(self.params)[index]
        return f"{self.name}_{name}" if self.name else name

    def num_regular_inputs(self) -> int:
        if self._nreg is None:
            self._nreg = len(self.op.input_names(self.params)) if self.op else 0
        return self._nreg

    def __repr__(self) -> str:
        return f"<Node {self.name} op={self.op.name if self.op else 'null'}>"


def dfs_post_order(heads: list[Entry]) -> list[Node]:
    """Nodes reachable from ``heads`` in MXNet's DFS post-order (inputs before users)."""
    order: list[Node] = []
    visited: set[int] = set()
    for head, _ in heads:
        if id(head) in visited:
            continue
        stack: list[tuple[Node, int]] = [(head, 0)]
        visited.add(id(head))
        while stack:
            node, i = stack[-1]
            if i < len(node.inputs):
                stack[-1] = (node, i + 1)
                child = node.inputs[i][0]
                if id(child) not in visited:
                    visited.add(id(child))
                    stack.append((child, 0))
            else:
                stack.pop()
                order.append(node)
    return order


class IndexedGraph:
    """Nodes numbered in DFS post-order, with output entries numbered per node."""

    def __init__(self, heads: list[Entry]):
        self.heads = list(heads)
        self.nodes = dfs_post_order(self.heads)
        self.node_id = {id(n): i for i, n in enumerate(self.nodes)}
        self.row_ptr = [0]
        for n in self.nodes:
            self.row_ptr.append(self.row_ptr[-1] + n.num_outputs)
        self.aux_ids = self._aux_ids()

    @property
    def num_entries(self) -> int:
        return self.row_ptr[-1]

    def entry_id(self, entry: Entry) -> int:
        node, index = entry
        return self.row_ptr[self.node_id[id(node)]] + index

    def input_entries(self, nid: int) -> tuple[int, ...]:
        """Entry ids of node ``nid``'s inputs."""
        return self._in_entries[nid]

    @cached_property
    def _in_entries(self) -> list[tuple[int, ...]]:
        # tuples of ints: the garbage collector stops tracking them (bound plans keep graphs)
        row, node_id = self.row_ptr, self.node_id
        return [tuple([row[node_id[id(src)]] + k for src, k in n.inputs]) for n in self.nodes]

    def _aux_ids(self) -> set[int]:
        aux: set[int] = set()
        for n in self.nodes:
            if n.op is None:
                continue
            for node, _ in n.inputs[n.num_regular_inputs():]:
                if node.op is not None:
                    raise GraphError(f"Error in {n.where}: auxiliary state input must be a "
                                     f"variable, got the output of {node.where}")
                aux.add(self.node_id[id(node)])
        return aux

    @cached_property
    def variable_ids(self) -> list[int]:
        return [i for i, n in enumerate(self.nodes) if n.op is None]

    @cached_property
    def argument_ids(self) -> list[int]:
        return [i for i in self.variable_ids if i not in self.aux_ids]

    @cached_property
    def aux_state_ids(self) -> list[int]:
        return [i for i in self.variable_ids if i in self.aux_ids]

    def to_networkx(self) -> nx.MultiDiGraph:
        """The graph as networkx: node ids with ``node`` data, edges labelled by slots."""
        g = nx.MultiDiGraph()
        for i, n in enumerate(self.nodes):
            g.add_node(i, node=n, name=n.name, op=n.op.name if n.op else "null")
        for i, n in enumerate(self.nodes):
            for slot, (src, index) in enumerate(n.inputs):
                g.add_edge(self.node_id[id(src)], i, slot=slot, index=index)
        return g


def indexed(owner, heads: list[Entry]) -> IndexedGraph:
    """``IndexedGraph(heads)``, cached on ``owner`` (an object with an ``_ig`` slot) while
    its heads and every node's attributes stay as they were."""
    key = (_EPOCH, tuple(heads))
    cached = owner._ig
    if cached is not None and cached[0] == key:
        return cached[1]
    ig = IndexedGraph(heads)
    owner._ig = (key, ig)
    return ig
