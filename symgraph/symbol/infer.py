"""Shape and dtype inference over an :class:`IndexedGraph`: the one engine behind
``Symbol.infer_shape``/``infer_type``, ``simple_bind``, the compiler's plan and bucketing.

Both kinds share :func:`infer`: every operator's rule sees what is known of its inputs (and
aux states), may complete them (weight shapes from data shapes), and gives its outputs,
until no rule changes anything. Conflicts raise ``ShapeError``/``DTypeError`` naming the
node, the op, the input and both shapes, the way MXNet words them.
"""
from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass

from ..base import DTypeError, MXNetError, ShapeError
from ..ops.base import MAX_NDIM, known, merge_shape
from .graph import IndexedGraph, Node


@dataclass(frozen=True)
class _Kind:
    """What differs between the shape pass and the dtype pass."""

    label: str
    error: type
    unknown: object
    rule: Callable[[Node], Callable]
    merge: Callable
    is_known: Callable


def _merge_type(a, b, what: str):
    if a is None:
        return b
    if b is None or a == b:
        return a
    raise DTypeError(f"Type inconsistent for {what}: Provided={a}, inferred type={b}")


SHAPE = _Kind("shape", ShapeError, (), lambda n: n.op.infer_shape, merge_shape, known)
DTYPE = _Kind("type", DTypeError, None, lambda n: n.op.infer_type, _merge_type,
              lambda t: t is not None)


def _slot_names(node: Node) -> list[str]:
    p = node.params
    return node.op.input_names(p) + node.op.aux_names(p)


def _describe_inputs(node: Node, values: list, label: str) -> str:
    names = _slot_names(node)
    return ", ".join(f"{names[i] if i < len(names) else i}={v}" for i, v in enumerate(values))


def _apply_rule(kind: _Kind, ig: IndexedGraph, nid: int, values: list) -> bool:
    """Run one node's rule; write completed inputs and outputs; return whether anything changed."""
    node = ig.nodes[nid]
    ins = ig.input_entries(nid)
    current = [values[e] for e in ins]
    try:
        result = kind.rule(node)(node.params, list(current))
    except MXNetError as err:
        raise kind.error(f"Error in {node.where}: {err} (inputs: "
                         f"{_describe_inputs(node, current, kind.label)})") from None
    base = ig.row_ptr[nid]
    backwards = kind is SHAPE and node.op.shape_from_outputs()
    if backwards and result is not None:
        current = list(result[0])
    if backwards and not all(known(s) for s in current):
        outs_now = [values[base + k] for k in range(node.num_outputs)]
        if result is not None:  # what the rule just gave counts as known too
            outs_now = [_refined(o, r) for o, r in zip(outs_now, list(result[1]) +
                                                      [()] * len(outs_now))]
        completed = backwards(node.params, list(current), outs_now)
        if completed is not None:
            result = (completed, result[1] if result is not None else [])
    if result is None:
        return False
    new_ins, outs = result
    if len(outs) == 1 and node.num_outputs > 1 and kind is DTYPE:
        outs = list(outs) * node.num_outputs  # one dtype stands for every output
    changed = False
    names = _slot_names(node)
    for slot, (e, new) in enumerate(zip(ins, new_ins)):
        src = node.inputs[slot][0]
        what = f"input '{names[slot] if slot < len(names) else slot}' ({src.name})"
        merged = _merge(kind, node, values[e], new, what)
        if merged != values[e]:
            values[e], changed = merged, True
    for k, new in enumerate(outs):
        merged = _merge(kind, node, values[base + k], new, f"output {k}")
        if merged != values[base + k]:
            values[base + k], changed = merged, True
    return changed


def _refined(old: tuple, new) -> tuple:
    """``old`` completed by a rule's ``new`` shape (a conflict is left to ``_merge``)."""
    try:
        return merge_shape(old, tuple(new), "output") if new else old
    except MXNetError:
        return old


def _merge(kind: _Kind, node: Node, old, new, what: str):
    try:
        return kind.merge(old, new, what)
    except MXNetError as err:
        raise kind.error(f"Error in {node.where}: {err}") from None


def infer(kind: _Kind, graph: IndexedGraph, initial: dict[int, object],
          settled: dict[int, list] | None = None) -> list:
    """Every entry's value (``kind`` SHAPE or DTYPE) from the ``initial`` variable values:
    the fixed point of all rules, reached mostly in one pass.

    In topological order one pass suffices unless a rule refines an entry that an earlier
    node saw incomplete (only those can change what an earlier rule gives), so the pass
    watches such entries and, when one changes, ``_settle`` re-runs the rules around it
    (an MXNet RNN cell's begin state takes its batch size that way). A node meeting fully
    known inputs calls its rule directly (the common case at bind: every variable known);
    the others, conflicts included, go through ``_apply_rule`` and its messages.
    ``settled``: node id -> output values already inferred for these inputs (not rerun).
    """
    values = [kind.unknown] * graph.num_entries
    row = graph.row_ptr
    for nid, value in initial.items():
        values[row[nid]] = value
    settled = settled or {}
    for nid, outs in settled.items():
        values[row[nid]:row[nid + 1]] = outs
    is_known, unknown = kind.is_known, kind.unknown
    memo = _MEMO.setdefault(kind.label, {})
    if len(memo) > _MAX_MEMO:
        memo.clear()
    watched: set[int] = set()
    dirty: set[int] = set()
    for nid, node in enumerate(graph.nodes):
        if node.op is None or nid in settled:
            continue
        ins = graph.input_entries(nid)
        base, n_out = row[nid], row[nid + 1] - row[nid]
        current = tuple([values[e] for e in ins])
        params = node.params
        key = (id(params), current)
        hit = memo.get(key)
        if hit is None or hit[0] is not params:
            hit = _direct(kind, node, current, n_out)
            if hit is not None:
                memo[key] = hit = (params, hit)
        if hit is not None and all(values[base + k] == unknown for k in range(n_out)):
            values[base:base + n_out] = hit[1]
            continue
        touched = list(ins) + list(range(base, base + n_out))
        before = [values[e] for e in touched]
        _apply_rule(kind, graph, nid, values)
        dirty.update(e for e, b in zip(touched, before) if e in watched and values[e] != b)
        watched.update(e for e in touched if not is_known(values[e]))
    if dirty:
        _settle(kind, graph, values, dirty)
    return values


def _settle(kind, graph: IndexedGraph, values: list, dirty: set[int]) -> None:
    """Finish a sweep whose later rules refined entries that earlier nodes saw incomplete.

    A worklist over the nodes next to (producing or reading) a refined entry, lowest node
    id first as the loop's passes go, re-running rules until nothing changes. Rules only
    ever refine values (a conflict raises), so this reaches the loop's fixed point while
    re-running only the rules whose inputs or outputs moved.
    """
    row = graph.row_ptr
    adjacent: dict[int, list[int]] = {}
    for nid, node in enumerate(graph.nodes):
        if node.op is not None:
            for e in graph.input_entries(nid) + tuple(range(row[nid], row[nid + 1])):
                adjacent.setdefault(e, []).append(nid)
    heap = sorted({n for e in dirty for n in adjacent.get(e, ())})
    queued = set(heap)
    while heap:
        nid = heapq.heappop(heap)
        queued.discard(nid)
        touched = graph.input_entries(nid) + tuple(range(row[nid], row[nid + 1]))
        before = [values[e] for e in touched]
        _apply_rule(kind, graph, nid, values)
        for e, b in zip(touched, before):
            if values[e] != b:
                for n in adjacent[e]:
                    if n != nid and n not in queued:
                        heapq.heappush(heap, n)
                        queued.add(n)


# (kind name) -> {(id(params), input values): (params, output values)}: the rule's result
# for fully known inputs; the steps of an unrolled network and their gradient nodes meet
# the same (params, inputs) many times
_MEMO: dict[str, dict] = {}
_MAX_MEMO = 1 << 16


def _direct(kind, node, current: tuple, n_out: int) -> tuple | None:
    """``node``'s rule run on fully known inputs: its ``n_out`` (fully known) outputs, or
    None when that does not apply (the general path then runs the rule with messages)."""
    if not all(kind.is_known(v) for v in current):
        return None
    try:
        result = kind.rule(node)(node.params, list(current))
    except MXNetError:
        return None  # the general path raises it with its message
    if result is None or tuple(result[0]) != current:
        return None
    outs = tuple(tuple(o) for o in result[1]) if kind is SHAPE else tuple(result[1])
    if kind is DTYPE and len(outs) == 1 and n_out > 1:
        outs = outs * n_out  # one dtype stands for every output
    if len(outs) != n_out or not all(kind.is_known(o) for o in outs):
        return None
    if kind is SHAPE and not all(len(o) <= MAX_NDIM and min(o, default=0) >= 0 for o in outs):
        return None  # an invalid shape: the general path's merge raises naming the node
    return outs


def infer_shapes(ig: IndexedGraph, initial: dict[int, tuple]) -> list[tuple]:
    """Shapes of every entry given known variable shapes ``{node id: shape}``; ``()`` = unknown."""
    return infer(SHAPE, ig, initial)


def infer_types(ig: IndexedGraph, initial: dict[int, str]) -> list:
    """Dtype names of every entry given known variable dtypes; ``None`` = unknown."""
    return infer(DTYPE, ig, initial)


def variable_values(ig: IndexedGraph, values: list, ids: list[int]) -> list:
    """The inferred values of the given variable nodes, in order."""
    return [values[ig.row_ptr[i]] for i in ids]


def head_values(ig: IndexedGraph, values: list) -> list:
    """The inferred values of the graph's heads, in order."""
    return [values[ig.entry_id(h)] for h in ig.heads]
