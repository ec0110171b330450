"""Shape and dtype inference over an :class:`IndexedGraph`.

Both passes share one fixed-point loop: every operator's rule sees what is known of
its inputs (and aux states), may complete them (weight shapes from data shapes), and
gives its outputs. Conflicts raise ``ShapeError``/``DTypeError`` naming the node, the
op, the input and both shapes, the way MXNet words them.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..base import DTypeError, MXNetError, ShapeError
from ..ops.base import known, merge_shape
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


def _merge(kind: _Kind, node: Node, old, new, what: str):
    try:
        return kind.merge(old, new, what)
    except MXNetError as err:
        raise kind.error(f"Error in {node.where}: {err}") from None


def _run(kind: _Kind, ig: IndexedGraph, initial: dict[int, object]) -> list:
    values = [kind.unknown] * ig.num_entries
    for nid, value in initial.items():
        values[ig.row_ptr[nid]] = value
    op_ids = [i for i, n in enumerate(ig.nodes) if n.op is not None]
    for _ in range(len(op_ids) + 1):
        changed = False
        for nid in op_ids:
            changed |= _apply_rule(kind, ig, nid, values)
        if not changed:
            break
    return values


def infer_shapes(ig: IndexedGraph, initial: dict[int, tuple]) -> list[tuple]:
    """Shapes of every entry given known variable shapes ``{node id: shape}``; ``()`` = unknown."""
    return _run(SHAPE, ig, initial)


def infer_types(ig: IndexedGraph, initial: dict[int, str]) -> list:
    """Dtype names of every entry given known variable dtypes; ``None`` = unknown."""
    return _run(DTYPE, ig, initial)


def variable_values(ig: IndexedGraph, values: list, ids: list[int]) -> list:
    """The inferred values of the given variable nodes, in order."""
    return [values[ig.row_ptr[i]] for i in ids]


def head_values(ig: IndexedGraph, values: list) -> list:
    """The inferred values of the graph's heads, in order."""
    return [values[ig.entry_id(h)] for h in ig.heads]
