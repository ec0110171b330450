"""Composite operators: ops declared as a decomposition into registered ops.

An :class:`~symgraph.ops.base.OpDef` with ``decompose(b, p, ins) -> outs`` keeps its own
MXNet name, parameter schema and JSON form, but is never run as itself in a bound graph:
:func:`expand` (the first pass of plan building, always on: it is not an optimisation)
replaces each composite node by the nodes its decomposition builds, so the graph that is
differentiated, fused, planned and lowered holds registered primitives only. The same
decomposition gives the op's defaults for everything else:

- :func:`derived_shape` / :func:`derived_type`: inference over the expanded subgraph of one
  node (partial shapes included), so ``infer_shape`` on the user's graph works unexpanded;
- :func:`eager_forward`: the torch reference, each constituent op's forward in turn (the
  eager ``nd.X`` call and tests compare against it).

Nodes made by an expansion are named after the composite node (``gn0_mean``, with a count
when a tag repeats); the node giving output 0 takes the composite's own name, so monitors
and debug output still show ``gn0_output``. Decompositions must not depend on shapes (they
run on partially known inputs during inference): they use ``Reshape``'s special codes,
``*_like`` ops and axis parameters instead.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..attrs import to_attr_string
from ..base import GraphError
from ..ops.base import OpDef, Runtime, get_op
from ..symbol.graph import Entry, IndexedGraph, Node, dfs_post_order, op_params
from ..symbol.infer import infer_shapes, infer_types


class _GraphBuilder:
    """The builder a decomposition gets when it adds nodes to a graph."""

    def __init__(self, owner: str):
        self.owner = owner
        self.tags: dict[str, int] = {}
        self.created: list[Node] = []

    def multi(self, name: str, /, *inputs: Entry, **attrs) -> list[Entry]:
        """Add a node of op ``name`` (``name=`` in ``attrs`` tags its node name); all of
        its outputs. A composite inside a composite expands in place."""
        op = get_op(name)
        tag = str(attrs.pop("name", op.name))
        count = self.tags.get(tag, 0)
        self.tags[tag] = count + 1
        node = Node(op, f"{self.owner}_{tag}{count or ''}",
                    {k: to_attr_string(v) for k, v in attrs.items()}, list(inputs))
        want = len(op.input_names(node.params)) + len(op.aux_names(node.params))
        if want != len(node.inputs):
            raise GraphError(f"decomposition of {self.owner}: {name} takes {want} inputs, "
                             f"got {len(node.inputs)}")
        if op.decompose is not None:
            outs, created = _decomposed(node)
            self.created.extend(created)
            return outs
        self.created.append(node)
        return [(node, i) for i in range(node.num_outputs)]

    def op(self, name: str, /, *inputs: Entry, **attrs) -> Entry:
        """Add a node of op ``name``; its first output."""
        return self.multi(name, *inputs, **attrs)[0]


def _decomposed(node: Node) -> tuple[list[Entry], list[Node]]:
    """The output entries a composite node's decomposition builds, and the nodes made."""
    b = _GraphBuilder(node.name)
    outs = list(node.op.decompose(b, node.params, list(node.inputs)))
    if len(outs) != node.num_outputs:
        raise GraphError(f"decomposition of {node.where} gives {len(outs)} outputs, the op "
                         f"has {node.num_outputs}")
    return outs, b.created


@dataclass(frozen=True)
class Expansion:
    """What the nodes of one composite node's expansion stand for: the composite node (over
    the expanded graph's entries) and the entries giving its outputs, in order."""

    node: Node
    outputs: list

    def output_index(self, entry) -> int | None:
        """Which of the composite's outputs ``entry`` (node, index) is (None: none). Nodes
        are matched by name: graph passes after the expansion copy them."""
        node, k = entry
        return next((j for j, (n, i) in enumerate(self.outputs)
                     if n.name == node.name and i == k), None)


def expand(heads: list[Entry], keep: Callable[[OpDef], bool] | None = None) -> list[Entry]:
    """The heads of the graph with every composite node replaced by its decomposition
    (``heads`` itself when there is none); the user's graph is not changed. ``keep(op)``
    True leaves that op's nodes whole (an exporter with a direct translation of it)."""
    order = dfs_post_order(heads)

    def expands(n: Node) -> bool:
        return n.op is not None and n.op.decompose is not None and not (keep and keep(n.op))
    if not any(expands(n) for n in order):
        return heads
    mapped: dict[int, list[Entry]] = {}
    for node in order:
        if node.op is None:
            mapped[id(node)] = [(node, 0)]
            continue
        inputs = [mapped[id(src)][k] for src, k in node.inputs]
        if not expands(node):
            same = all(a[0] is b[0] and a[1] == b[1] for a, b in zip(inputs, node.inputs))
            new = node if same else node.with_inputs(inputs)
            mapped[id(node)] = [(new, k) for k in range(node.num_outputs)]
            continue
        stand_in = Node(node.op, node.name, node.attrs, inputs, params=node._params)
        outs, created = _decomposed(stand_in)
        visible = {id(n) for n, _ in outs}
        expansion = Expansion(stand_in, outs)
        for made in created:
            made.inner = id(made) not in visible
            made.composite = expansion
        first = outs[0][0]
        if first in created and first.num_outputs == 1:
            first.name = node.name  # monitors and debug output show the composite's name
        mapped[id(node)] = outs
    return [mapped[id(src)][k] for src, k in heads]


# ---------------------------------------------------------------- derived rules

_SUBGRAPHS: dict[tuple, tuple] = {}
_MAX_SUBGRAPHS = 1024


def _subgraph(op: OpDef, p, n_inputs: int):
    """(graph, input variable ids, output entries) of one node's expansion (memoised)."""
    key = (op.name, id(p), n_inputs)
    hit = _SUBGRAPHS.get(key)
    if hit is not None and hit[0] is p:
        return hit[1]
    variables = [Node(None, f"in{i}") for i in range(n_inputs)]
    node = Node(op, op.name, {}, [(v, 0) for v in variables], params=p)
    outs = expand([(node, k) for k in range(node.num_outputs)])
    ig = IndexedGraph(outs + [(v, 0) for v in variables])
    built = (ig, [ig.node_id[id(v)] for v in variables], outs)
    if len(_SUBGRAPHS) >= _MAX_SUBGRAPHS:
        _SUBGRAPHS.clear()
    _SUBGRAPHS[key] = (p, built)
    return built


def _derived(op: OpDef, infer: Callable, unknown) -> Callable:
    def rule(p, values: list):
        ig, var_ids, outs = _subgraph(op, p, len(values))
        start = {nid: v for nid, v in zip(var_ids, values) if v != unknown}
        got = infer(ig, start)
        ins = [got[ig.row_ptr[nid]] for nid in var_ids]
        out_values = [got[ig.entry_id(e)] for e in outs]
        if all(v == unknown for v in out_values) and ins == list(values):
            return None
        return ins, out_values
    return rule


def derived_shape(op: OpDef) -> Callable:
    """``op``'s shape rule: inference over its expanded subgraph."""
    return _derived(op, infer_shapes, ())


def derived_type(op: OpDef) -> Callable:
    """``op``'s dtype rule: inference over its expanded subgraph."""
    return _derived(op, infer_types, None)


# ---------------------------------------------------------------- eager reference

class _EagerBuilder:
    """The builder a decomposition gets when it runs on tensors (each op's forward)."""

    def __init__(self, owner: str, rt: Runtime):
        self.owner, self.rt = owner, rt

    def multi(self, name: str, /, *inputs: torch.Tensor, **attrs) -> list[torch.Tensor]:
        op = get_op(name)
        attrs.pop("name", None)
        p = op_params(op, {k: to_attr_string(v) for k, v in attrs.items()},
                      f"operator {self.owner}")
        if op.hints.reads_out_shape:
            shapes = op.infer_shape(p, [tuple(t.shape) for t in inputs])[1]
            p = type(p)({**p, "_out_shape": tuple(shapes[0])})
        n_reg = len(op.input_names(p))
        return list(op.forward(p, list(inputs[:n_reg]), list(inputs[n_reg:]), self.rt))

    def op(self, name: str, /, *inputs: torch.Tensor, **attrs) -> torch.Tensor:
        return self.multi(name, *inputs, **attrs)[0]


def eager_forward(op: OpDef) -> Callable:
    """``op``'s torch reference: its decomposition run with each constituent's forward."""
    def forward(p, ins, aux, rt):
        return list(op.decompose(_EagerBuilder(op.name, rt), p, list(ins) + list(aux)))
    return forward
