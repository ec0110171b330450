"""Bind-time graph rewrites: the first pass of plan building.

Ops declare rewrites (:class:`~symgraph.ops.base.Rewrite`, registered beside the op they
introduce, e.g. ``pick(log_softmax(x))`` -> ``_log_softmax_pick``). :func:`apply` walks the
graph of a symbol's heads inputs-first and tries each rule on the nodes of its root op. The
result is a new list of heads: replaced nodes are new, nodes downstream of them are copied,
and everything else is shared, so the user's symbol is never changed. Rules see the graph
as the user wrote it: how many readers an entry has, and its inferred shape and dtype.

Nothing here knows any op by name; ``config.graph_rewrites`` (``SYMGRAPH_REWRITES=0``)
turns the pass off.
"""
from __future__ import annotations

from ..ops.base import REWRITES, get_op
from ..symbol.graph import Entry, IndexedGraph, Node, dfs_post_order
from ..symbol.infer import infer_shapes, infer_types


class Context:
    """What a rule may ask about the original graph, and how it builds its node."""

    def __init__(self, heads: list[Entry], order: list[Node], shapes_in: dict,
                 dtypes_in: dict, fwd=None):
        self._uses: dict[tuple[int, int], int] = {}
        for node in order:
            for src, k in node.inputs:
                key = (id(src), k)
                self._uses[key] = self._uses.get(key, 0) + 1
        for src, k in heads:  # a head is read by the caller
            key = (id(src), k)
            self._uses[key] = self._uses.get(key, 0) + 1
        self._heads, self._shapes_in, self._dtypes_in = heads, shapes_in, dtypes_in
        self._fwd = fwd
        self.mapped: dict[int, Node] = {}

    def uses(self, entry: Entry) -> int:
        """Readers of ``entry`` in the user's graph (a head counts as one)."""
        return self._uses.get((id(entry[0]), entry[1]), 0)

    def _inferred(self):
        if self._fwd is None:  # inferred once, only when a rule asks
            ig = IndexedGraph(self._heads)
            names = {i: ig.nodes[i].name for i in ig.variable_ids}
            shapes = infer_shapes(ig, {i: self._shapes_in[n] for i, n in names.items()
                                       if n in self._shapes_in})
            dtypes = infer_types(ig, {i: self._dtypes_in[n] for i, n in names.items()
                                      if n in self._dtypes_in})
            self._fwd = (ig, shapes, dtypes)
        return self._fwd

    def shape(self, entry: Entry) -> tuple | None:
        ig, shapes, _ = self._inferred()
        return shapes[ig.entry_id(entry)]

    def dtype(self, entry: Entry) -> str | None:
        ig, _, dtypes = self._inferred()
        return dtypes[ig.entry_id(entry)]

    def node(self, op_name: str, like: Node, inputs: list[Entry]) -> Node:
        """A node of ``op_name`` with ``like``'s name and attributes, reading the rewritten
        counterparts of ``inputs`` (entries of the original graph)."""
        new = Node(get_op(op_name), like.name, like.attrs,
                   [(self.mapped[id(src)], k) for src, k in inputs])
        new.inner, new.composite = like.inner, like.composite  # it stands for ``like``
        return new

    def node_from(self, op_name: str, name: str, attrs: dict, inputs: list[Entry]) -> Node:
        """A node of ``op_name`` reading ``inputs``, entries of the rewritten graph (a rule
        folding a node into one an earlier rule made: ``mapped`` gives that one)."""
        return Node(get_op(op_name), name, attrs, list(inputs))


def candidates(order: list[Node]) -> bool:
    """Whether any node is the root of a registered rewrite (the cheap first check)."""
    return any(node.op is not None and node.op.name in REWRITES for node in order)


def apply(heads: list[Entry], shapes_in: dict, dtypes_in: dict, fwd=None) -> list[Entry]:
    """The heads of the rewritten graph (``heads`` itself when no rule applied).

    ``fwd``: ``(IndexedGraph(heads), shapes, dtypes)`` when the caller inferred them."""
    order = dfs_post_order(heads)
    if not candidates(order):
        return heads
    ctx = Context(heads, order, shapes_in, dtypes_in,
                  fwd[:3] if fwd is not None else None)
    changed = False
    for node in order:
        new = None
        if node.op is not None:
            for rule in REWRITES.get(node.op.name, ()):
                new = rule.apply(node, ctx)
                if new is not None:
                    break
        if new is None:
            inputs = [(ctx.mapped[id(src)], k) for src, k in node.inputs]
            if any(a[0] is not b[0] for a, b in zip(inputs, node.inputs)):
                new = node.with_inputs(inputs)
            else:
                new = node
        changed = changed or new is not node
        ctx.mapped[id(node)] = new
    if not changed:
        return heads
    return [(ctx.mapped[id(src)], k) for src, k in heads]
