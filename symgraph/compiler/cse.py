"""Common subexpression elimination, a bind-time pass (MXNet's ``MXNET_ELIMINATE_COMMON_EXPR``).

Two nodes applying the same operator with the same attributes to the same input entries
compute the same values, so the later one is replaced by the earlier. Operators that draw
random numbers or update aux states or inputs in place are never merged (each call differs).
When two heads become one entry, the later head keeps a node of its own so every output stays
a separate array (MXNet inserts a copy there; the node count is the same). The symbol itself never
changes; the plan runs the new heads.

>>> import symgraph as mx
>>> a, b = mx.sym.var('a'), mx.sym.var('b')
>>> net = (a + b) * (a + b)
>>> len(net.get_internals()), len(mx.sym.Symbol(eliminate(net._outputs)).get_internals())
(5, 4)
"""
from __future__ import annotations

from ..symbol.graph import Entry, Node, dfs_post_order


def _mergeable(node: Node) -> bool:
    op = node.op
    return op is not None and not op.hints.mutates_aux and not op.mutated_inputs(node.params) \
        and not op.draws_random(node.params)


def eliminate(heads: list[Entry]) -> list[Entry]:
    """The heads of the graph with common subexpressions merged (``heads`` itself when
    nothing merged)."""
    mapped: dict[int, Node] = {}
    seen: dict[tuple, Node] = {}
    changed = False
    for node in dfs_post_order(heads):
        inputs = [(mapped[id(src)], k) for src, k in node.inputs]
        new = node
        if any(a[0] is not b[0] for a, b in zip(inputs, node.inputs)):
            new = node.with_inputs(inputs)
        if _mergeable(node):
            # parsed params are shared by nodes of one op with equal attributes
            # (graph.op_params), so their identity stands for (op, attributes)
            key = (id(node.params), tuple((id(src), k) for src, k in inputs))
            new = seen.setdefault(key, new)
        changed = changed or new is not node
        mapped[id(node)] = new
    if not changed:
        return heads
    return _distinct_heads([(mapped[id(src)], k) for src, k in heads], heads)


def _distinct_heads(new: list[Entry], old: list[Entry]) -> list[Entry]:
    """A head merged into an earlier, originally different head is computed again by its
    own node (MXNet inserts a copy there): every output stays a separate array."""
    out: list[Entry] = []
    first: dict[tuple, Entry] = {}
    for entry, before in zip(new, old):
        key = (id(entry[0]), entry[1])
        if key in first and first[key] != before:
            merged = entry[0]
            entry = (Node(merged.op, before[0].name, before[0].attrs, list(merged.inputs),
                          params=merged._params), entry[1])
        else:
            first.setdefault(key, before)
        out.append(entry)
    return out
