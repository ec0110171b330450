"""Pass: the storage type of every entry (MXNet's FInferStorageType over the graph).

Variables are dense unless bound with a sparse array (or a ``stype``); each op node's
outputs follow its storage rule (``OpDef.storage``) for its inputs' storage types. A node
with sparse inputs and no rule for them runs its dense forward on dense copies (storage
fallback); where such a copy would exceed ``Config.sparse_fallback_limit`` elements the bind
fails here, naming the node, rather than at the first step. Nodes that touch a sparse value
run through :func:`symgraph.sparse.dispatch.run` (never fused, never in the memory arena).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..sparse import dispatch
from ..sparse.formats import DEFAULT
from ..symbol.graph import IndexedGraph


@dataclass
class StoragePlan:
    """The sparse entries of a plan and the nodes that run through storage dispatch."""

    slots: dict[int, str] = field(default_factory=dict)  # slot -> stype (sparse slots only)
    nodes: set[int] = field(default_factory=set)  # node ids run by storage dispatch

    def stype(self, slot: int) -> str:
        return self.slots.get(slot, DEFAULT)

    def __str__(self) -> str:
        return f"{len(self.slots)} sparse entries, {len(self.nodes)} sparse launches"


def infer(graph: IndexedGraph, var_stypes: dict[str, str], shapes: list) -> StoragePlan:
    """The storage plan of ``graph`` with the variables of ``var_stypes`` sparse."""
    plan = StoragePlan()
    sparse_vars = {k: v for k, v in var_stypes.items() if v != DEFAULT}
    if not sparse_vars and not any(n.op is not None and n.op.storage is not None
                                   for n in graph.nodes):
        return plan
    for nid, node in enumerate(graph.nodes):
        row = graph.row_ptr[nid]
        if node.op is None:
            if node.name in sparse_vars:
                plan.slots[row] = sparse_vars[node.name]
            continue
        _infer_node(plan, graph, nid, shapes)
    return plan


def _infer_node(plan: StoragePlan, graph: IndexedGraph, nid: int, shapes: list) -> None:
    node = graph.nodes[nid]
    entries = graph.input_entries(nid)
    in_stypes = [plan.stype(s) for s in entries]
    sparse_in = any(s != DEFAULT for s in in_stypes)
    if node.op.storage is None and not sparse_in:
        return
    outs = dispatch.output_stypes(node.op, node.params, in_stypes)
    where = f"Error in operator {node.name} ({node.op.name})"
    if outs is None:
        if sparse_in:
            for slot, stype in zip(entries, in_stypes):
                if stype != DEFAULT:
                    dispatch.check_fallback(tuple(shapes[slot]), stype, where)
            plan.nodes.add(nid)
        return
    row = graph.row_ptr[nid]
    for k, stype in enumerate(outs[:node.num_outputs]):
        if stype != DEFAULT:
            plan.slots[row + k] = stype
    if sparse_in or any(s != DEFAULT for s in outs):
        plan.nodes.add(nid)
