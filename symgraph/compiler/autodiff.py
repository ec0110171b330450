"""Reverse-mode differentiation as a graph transformation.

Gradients are graph nodes: each op's gradient rule adds nodes of other registered ops,
fan-in is summed with ``add_n``, so backward graphs get the same inference and planning
as forward graphs. The result is a list of gradient entries, one per requested variable.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..attrs import to_attr_string
from ..base import GraphError
from ..ops.base import get_op
from ..symbol.graph import Entry, IndexedGraph, Node


class _Builder:
    """The :class:`~symgraph.ops.base.GradBuilder` handed to gradient rules."""

    def __init__(self):
        self.owner = ""
        self.count = 0
        self.created: list[Node] = []
        self.zero_ids: set[int] = set()  # ids of the nodes made by ``zeros``

    def _node(self, name: str, inputs, attrs) -> Node:
        op = get_op(name)
        node = Node(op, f"{self.owner}_backward{self.count}_{op.name}",
                    {k: to_attr_string(v) for k, v in attrs.items()})
        self.count += 1
        node.inputs = list(inputs)
        missing = len(op.input_names(node.params)) + len(op.aux_names(node.params))
        if missing != len(node.inputs):
            raise GraphError(f"gradient of {self.owner}: {name} takes {missing} inputs, "
                             f"got {len(node.inputs)}")
        self.created.append(node)
        return node

    def op(self, name: str, *inputs: Entry, **attrs) -> Entry:
        """Add a node of op ``name``; return its first output."""
        return (self._node(name, inputs, attrs), 0)

    def zeros(self, like: Entry) -> Entry:
        """A known-zero gradient like ``like`` (see :meth:`GradBuilder.zeros`)."""
        entry = self.op("zeros_like", like)
        self.zero_ids.add(id(entry[0]))
        return entry

    def multi(self, name: str, *inputs: Entry, **attrs) -> list[Entry]:
        """Add a node of op ``name``; return all of its outputs."""
        node = self._node(name, inputs, attrs)
        return [(node, i) for i in range(node.num_outputs)]


@dataclass
class Gradients:
    """The backward graph: head-gradient variables and one gradient entry per variable."""

    head_grads: list[Node | None]  # per head: the variable the head gradient is fed into
    grads: dict[int, Entry | None]  # forward variable node id -> gradient entry (None: zero)


def _sum(g: _Builder, parts: list[Entry]) -> Entry:
    if len(parts) == 1:
        return parts[0]
    return g.op("add_n", *parts, num_args=len(parts))


def _relevant(ig: IndexedGraph, wrt: list[int]) -> set[int]:
    """Node ids whose value depends on a variable we differentiate with respect to (one
    sweep in topological order: a node depends on one when any of its inputs does)."""
    out, node_id = set(wrt), ig.node_id
    for nid, node in enumerate(ig.nodes):
        if nid not in out and any(node_id[id(src)] in out for src, _ in node.inputs):
            out.add(nid)
    return out


def build_gradients(ig: IndexedGraph, wrt: list[int]) -> Gradients:
    """Add gradient nodes for ``d heads / d variables[wrt]`` to the graph of ``ig``."""
    g = _Builder()
    relevant = _relevant(ig, wrt)
    pending: dict[int, list[Entry]] = {}
    zero: dict[int, Entry] = {}  # entries only known-zero gradients reached so far
    head_grads: list[Node | None] = []
    for i, head in enumerate(ig.heads):
        node = Node(None, f"_head_grad{i}")
        head_grads.append(node)
        # an entry listed as several heads takes the last one's gradient (MXNet's Gradient
        # pass assigns per entry rather than summing)
        pending[ig.entry_id(head)] = [(node, 0)]
    for nid in reversed(range(len(ig.nodes))):
        node = ig.nodes[nid]
        if node.op is None or nid not in relevant:
            continue
        ograds = _output_grads(g, ig, nid, pending)
        if ograds is None:
            continue
        if node.op.gradient is None:
            raise GraphError(f"Error in {node.where}: operator {node.op.name} has no gradient; "
                             "mark its inputs grad_req='null' or wrap it in BlockGrad")
        g.owner, g.count = node.name, 0
        entries = [(node, k) for k in range(node.num_outputs)]
        in_grads = node.op.gradient(g, node.params, list(node.inputs), entries, ograds)
        for entry, grad in zip(node.inputs[:node.num_regular_inputs()], in_grads):
            if grad is None or ig.node_id[id(entry[0])] not in relevant:
                continue
            if id(grad[0]) in g.zero_ids:  # adds nothing; kept for a variable nothing else reaches
                zero.setdefault(ig.entry_id(entry), grad)
            else:
                pending.setdefault(ig.entry_id(entry), []).append(grad)
    grads = {}
    for nid in wrt:
        eid = ig.row_ptr[nid]
        parts = pending.get(eid) or ([zero[eid]] if eid in zero else None)
        g.owner, g.count = ig.nodes[nid].name, 0
        grads[nid] = _sum(g, parts) if parts else None
    return Gradients(head_grads, grads)


def _output_grads(g: _Builder, ig: IndexedGraph, nid: int, pending) -> list | None:
    """Summed gradients of a node's outputs; ``None`` when no gradient reaches the node."""
    node = ig.nodes[nid]
    base = ig.row_ptr[nid]
    parts = [pending.get(base + k) for k in range(node.num_outputs)]
    if not any(parts) and not node.op.loss:
        return None
    g.owner, g.count = node.name + "_ograd", 0
    out: list = []
    for k, p in enumerate(parts):
        if p:
            out.append(_sum(g, p))
        elif k < node.num_visible_outputs:
            out.append(g.op("zeros_like", (node, k)))
        else:
            out.append(None)
    return out
