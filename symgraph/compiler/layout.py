"""Pass: value slots per node after alias elimination (``Layout``).

A ``view`` op (Reshape, Flatten, identity, ...) whose output has its input's shape and dtype
needs no kernel: its output slot becomes an alias of the input slot and the node leaves the
schedule. Aux (mutated) inputs and sparse values are never aliased.
"""
from __future__ import annotations

from ..symbol.graph import IndexedGraph


class Layout:
    """Which slot each node reads and writes once views are aliases of their inputs."""

    def __init__(self, graph: IndexedGraph, order: list[int], shapes, dtypes,
                 sparse: dict[int, str] | None = None):
        self.graph = graph
        self.alias: dict[int, int] = {}
        self.ins: dict[int, list[int]] = {}
        self.producer: dict[int, int] = {}  # slot -> node id that computes it
        self.order: list[int] = []
        aux_slots = {graph.row_ptr[i] for i in graph.aux_state_ids}
        for nid in order:
            node = graph.nodes[nid]
            ins = [self.resolve(e) for e in graph.input_entries(nid)]
            self.ins[nid] = ins
            out = graph.row_ptr[nid]
            if node.op.hints.view and ins and ins[0] not in aux_slots and \
                    shapes[out] == shapes[ins[0]] and dtypes[out] == dtypes[ins[0]] and \
                    not (sparse and (ins[0] in sparse or out in sparse)):
                self.alias[out] = ins[0]
            else:
                self.order.append(nid)
                for k in range(node.num_outputs):
                    self.producer[out + k] = nid

    def resolve(self, slot: int) -> int:
        return self.alias.get(slot, slot)

    def users(self) -> dict[int, list[int]]:
        """slot -> node ids that read it."""
        out: dict[int, list[int]] = {}
        for nid in self.order:
            for s in self.ins[nid]:
                out.setdefault(s, []).append(nid)
        return out
