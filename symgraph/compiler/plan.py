"""The bound plan: schedule, backward graph, value lifetimes and memory reuse, built once.

``build_plan`` turns a symbol's heads plus the variables that need gradients into one
combined graph (forward + backward nodes), infers every entry's shape and dtype, picks
an implementation per node, and lays out three flat step lists (training forward,
inference forward, backward). Each step is a tuple the executor's hot loop unpacks;
a step also lists the value slots to drop after it, so memory follows the planned
lifetimes. :class:`MemoryPlan` assigns storage blocks to values with disjoint lifetimes
(in place where an op allows it) and reports planned against naive bytes.
"""
from __future__ import annotations

import bisect
import functools
import gc
import heapq
from dataclasses import dataclass, field

import torch

from .. import config
from ..base import NAME_TO_TORCH, MXNetError, ShapeError
from ..ops.base import known
from ..symbol.graph import IndexedGraph
from ..symbol.infer import DTYPE, SHAPE, _apply_rule, infer_shapes, infer_types
from . import composite, cse, rewrite
from .autodiff import Gradients, build_gradients
from .lowering import (
    Unit,
    epilogue_pairs,
    epilogue_unit,
    fused_unit,
    group,
    single_unit,
    uses_triton,
)

# (fn, params, input slots, aux slots, output slots, slots to free, node)
Step = tuple


@dataclass
class MemoryPlan:
    """Storage blocks assigned to intermediate values."""

    naive_bytes: int = 0
    planned_bytes: int = 0
    block_of: dict[int, int] = field(default_factory=dict)  # slot -> block id
    block_bytes: list[int] = field(default_factory=list)


@dataclass
class Plan:
    """Everything the executor needs to run forward and backward without the graph."""

    graph: IndexedGraph
    shapes: list[tuple]
    dtypes: list[str]
    var_slot: dict[str, int]
    head_slots: list[int]
    head_grad_slots: list[int | None]
    grad_slot: dict[str, int | None]
    forward_train: list[Step]
    forward_infer: list[Step]
    backward: list[Step]
    memory: MemoryPlan
    impl: dict[str, str]  # node name -> implementation label
    # view outputs (no launch) -> the slot holding their value (monitors report the views)
    alias: dict[int, int] = field(default_factory=dict)


def _combined(heads, wrt_ids: list[int], fwd: IndexedGraph):
    grads: Gradients = build_gradients(fwd, wrt_ids) if wrt_ids else Gradients([], {})
    extra = [e for e in grads.grads.values() if e is not None]
    return IndexedGraph(list(heads) + extra), grads


def _var_initial(graph: IndexedGraph, fwd: IndexedGraph, known_vals: dict[str, object],
                 head_vals: list, grads: Gradients) -> dict[int, object]:
    initial = {}
    for nid in graph.variable_ids:
        node = graph.nodes[nid]
        if node.name in known_vals:
            initial[nid] = known_vals[node.name]
    for hg, value in zip(grads.head_grads, head_vals):
        if hg is not None and id(hg) in graph.node_id:
            initial[graph.node_id[id(hg)]] = value
    return initial


def _infer_all(graph, fwd, shapes_in, dtypes_in, grads, fwd_values=None):
    """Shapes and dtypes of every entry of the combined graph (heads' grads like the heads);
    ``fwd_values`` = the forward graph's inferred (shapes, dtypes) when already known."""
    if fwd_values is None:
        fwd_values = (
            infer_shapes(fwd, {i: shapes_in[fwd.nodes[i].name] for i in fwd.variable_ids
                               if fwd.nodes[i].name in shapes_in}),
            infer_types(fwd, {i: dtypes_in[fwd.nodes[i].name] for i in fwd.variable_ids
                              if fwd.nodes[i].name in dtypes_in}))
    fwd_shapes, fwd_types = fwd_values
    head_shapes = [fwd_shapes[fwd.entry_id(h)] for h in fwd.heads]
    head_types = [fwd_types[fwd.entry_id(h)] for h in fwd.heads]
    shapes = sweep_infer(SHAPE, graph, _var_initial(graph, fwd, shapes_in, head_shapes, grads),
                         _settled(SHAPE, graph, fwd, fwd_shapes))
    dtypes = sweep_infer(DTYPE, graph, _var_initial(graph, fwd, dtypes_in, head_types, grads),
                         _settled(DTYPE, graph, fwd, fwd_types))
    for nid, node in enumerate(graph.nodes):
        for k in range(node.num_outputs):
            slot = graph.row_ptr[nid] + k
            if not known(shapes[slot]) or dtypes[slot] is None:
                raise ShapeError(f"Error in {node.where}: cannot infer the shape/dtype of output "
                                 f"{k} (got shape {shapes[slot]}, dtype {dtypes[slot]}); "
                                 "give every input's shape at bind")
    return shapes, dtypes


def _settled(kind, graph: IndexedGraph, fwd: IndexedGraph, fwd_values: list) -> dict:
    """The forward nodes' outputs in the combined graph, when forward inference knew every
    entry: the same rules on the same inputs, so the combined pass need not rerun them."""
    if not all(kind.is_known(v) for v in fwd_values):
        return {}
    row = fwd.row_ptr
    return {graph.node_id[id(node)]: fwd_values[row[i]:row[i + 1]]
            for i, node in enumerate(fwd.nodes) if node.op is not None}


def sweep_infer(kind, graph: IndexedGraph, initial: dict[int, object],
                settled: dict[int, list] | None = None) -> list:
    """What ``infer_shapes``/``infer_types`` (``kind`` SHAPE/DTYPE) return, mostly in one pass.

    The fixed-point loop runs every rule until a pass changes nothing: at least two passes.
    In topological order one pass suffices unless a rule refines an entry that an earlier
    node saw incomplete (only those can change what an earlier rule gives), so the pass
    watches such entries and, when one changes, ``_settle`` re-runs the rules around it
    (an MXNet RNN cell's begin state takes its batch size that way). A node meeting fully
    known inputs calls its rule directly (the common case at bind: every variable known);
    the others, conflicts included, go through ``infer``'s rule application and messages.
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
    return outs


class _Layout:
    """Value slots per node after alias elimination.

    A ``view`` op (Reshape, Flatten, identity, ...) whose output has its input's shape and
    dtype needs no kernel: its output slot becomes an alias of the input slot and the node
    leaves the schedule. Aux (mutated) inputs are never aliased.
    """

    def __init__(self, graph: IndexedGraph, order: list[int], shapes, dtypes):
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
            if node.op.view and ins and ins[0] not in aux_slots and \
                    shapes[out] == shapes[ins[0]] and dtypes[out] == dtypes[ins[0]]:
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


def _units(layout: _Layout, order: list[int], ctx: dict) -> list[Unit]:
    """Launch units for one step list: fused chains where Triton is on, else single nodes."""
    device, shapes, dtypes = ctx["device"], ctx["shapes"], ctx["dtypes"]
    users, keep = ctx["users"], ctx["keep"]

    def read(slot: int) -> bool:
        return slot in keep or bool(users.get(slot))
    if not (uses_triton(device) and config.get().fusion):
        return [single_unit(layout, nid, device, shapes, dtypes, read) for nid in order]
    pairs = epilogue_pairs(layout, order, ctx["users"], ctx["keep"])
    paired = set(pairs) | set(pairs.values())
    rest = [nid for nid in order if nid not in paired]
    groups = group(layout, rest, shapes, dtypes, ctx["users"], ctx["position"])
    placed = [(ctx["position"][g[-1]],
               single_unit(layout, g[0], device, shapes, dtypes, read) if len(g) == 1 else
               fused_unit(layout, g, shapes, dtypes, ctx["users"], ctx["keep"]))
              for g in groups]
    placed += [(ctx["position"][a], epilogue_unit(layout, a, p)) for a, p in pairs.items()]
    return [unit for _, unit in sorted(placed, key=lambda pu: pu[0])]


def _last_uses(units: list[Unit]) -> dict[int, int]:
    last: dict[int, int] = {}
    for pos, unit in enumerate(units):
        for s in unit.ins + unit.aux:
            last[s] = pos
        for s in unit.outs:
            last.setdefault(s, pos)
    return last


def _steps(units: list[Unit], keep: set[int], last_use: dict, impl: dict) -> list[Step]:
    steps = []
    for pos, u in enumerate(units):
        impl[u.node.name] = u.label
        ins, aux, outs = tuple(u.ins), tuple(u.aux), tuple(u.outs)
        frees = tuple({s: None for s in ins + aux + outs
                       if s not in keep and last_use.get(s, pos) == pos})
        steps.append((u.fn, u.params, ins, aux, outs, frees, u.node))
    return steps


def gc_paused(fn):
    """Run ``fn`` with the cyclic garbage collector paused.

    A bind makes many containers that live for the bind only. Collections during it would
    promote them to the old generation, whose growth triggers full collections (each
    traverses every object of the process: ~100 ms with torch loaded) every few binds.
    Reference counting frees the temporaries; what the bind keeps is collected as usual
    afterwards, so a bind's garbage-collector cost follows what it keeps, not what it makes.
    """
    @functools.wraps(fn)
    def paused(*args, **kwargs):
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()
    return paused


def build_plan(heads, shapes_in: dict[str, tuple], dtypes_in: dict[str, str],
               wrt: list[str], device: torch.device, fwd=None) -> Plan:
    """Build the plan for ``heads`` with gradients for the variables named in ``wrt``.

    ``fwd``: ``(IndexedGraph(heads), its shapes, its dtypes)`` when the caller inferred them.
    """
    expanded = composite.expand(heads)  # always: composite ops have no kernel of their own
    if expanded is not heads:
        heads, fwd = expanded, None
    if config.get().graph_rewrites:
        rewritten = rewrite.apply(heads, shapes_in, dtypes_in, fwd)
        if rewritten is not heads:  # a new graph: its shapes are inferred again below
            heads, fwd = rewritten, None
    if config.env_flag("MXNET_ELIMINATE_COMMON_EXPR", "1") != "0":
        merged = cse.eliminate(heads)
        if merged is not heads:
            heads, fwd = merged, None
    fwd, fwd_values = (fwd[0], fwd[1:]) if fwd is not None else (IndexedGraph(heads), None)
    for node in fwd.nodes:
        if node.op is not None and node.op.eager is not None:
            raise ShapeError(f"Error in {node.where}: the output shape of {node.op.name} "
                             "depends on its input values, which a bound graph cannot plan; "
                             "call it imperatively (mx.nd) instead")
    by_name = {fwd.nodes[i].name: i for i in fwd.variable_ids}
    graph, grads = _combined(heads, [by_name[n] for n in wrt], fwd)
    shapes, dtypes = _infer_all(graph, fwd, shapes_in, dtypes_in, grads, fwd_values)
    fwd_ids = {graph.node_id[id(n)] for n in fwd.nodes}
    layout = _Layout(graph, [i for i, n in enumerate(graph.nodes) if n.op is not None],
                     shapes, dtypes)
    f_order = [i for i in layout.order if i in fwd_ids]
    b_order = [i for i in layout.order if i not in fwd_ids]
    persistent = {graph.row_ptr[i] for i in graph.variable_ids}
    head_slots = [layout.resolve(graph.entry_id(h)) for h in heads]
    grad_slot = {fwd.nodes[nid].name: (layout.resolve(graph.entry_id(e)) if e is not None
                                       else None) for nid, e in grads.grads.items()}
    keep_fwd = persistent | set(head_slots)
    ctx = {"device": device, "shapes": shapes, "dtypes": dtypes, "users": layout.users(),
           "position": {nid: i for i, nid in enumerate(f_order + b_order)},
           "keep": keep_fwd | {s for s in grad_slot.values() if s is not None}}
    f_units, b_units = _units(layout, f_order, ctx), _units(layout, b_order, ctx)
    impl: dict[str, str] = {}
    train_last = _last_uses(f_units + b_units)
    fwd_produced = {s for u in f_units for s in u.outs}
    keep_bwd = persistent | fwd_produced | {s for s in grad_slot.values() if s is not None}
    shift = {s: p - len(f_units) for s, p in train_last.items()}
    return Plan(
        graph=graph, shapes=shapes, dtypes=dtypes,
        var_slot={graph.nodes[i].name: graph.row_ptr[i] for i in graph.variable_ids},
        head_slots=head_slots,
        head_grad_slots=[graph.row_ptr[graph.node_id[id(h)]] if h is not None and
                         id(h) in graph.node_id else None for h in grads.head_grads],
        grad_slot=grad_slot,
        forward_train=_steps(f_units, keep_fwd, train_last, impl),
        forward_infer=_steps(f_units, keep_fwd, _last_uses(f_units), impl),
        backward=_steps(b_units, keep_bwd, shift, impl),
        memory=plan_memory(f_units + b_units, shapes, dtypes, keep_fwd),
        impl=impl, alias=layout.alias)


def _nbytes(shape: tuple, dtype: str) -> int:
    n = 1
    for d in shape:
        n *= d
    return n * NAME_TO_TORCH[dtype].itemsize


def plan_memory(units: list[Unit], shapes, dtypes, persistent: set[int]) -> MemoryPlan:
    """Greedy best-fit storage assignment over value lifetimes (in place where ops allow)."""
    mem = MemoryPlan()
    last = _last_uses(units)
    free = _FreeBlocks(mem)  # blocks available for reuse
    for pos, unit in enumerate(units):
        ins = unit.ins + unit.aux
        dying = [s for s in ins if s not in persistent and last.get(s) == pos and s in mem.block_of]
        for k, slot in enumerate(unit.outs):
            size = _nbytes(shapes[slot], dtypes[slot])
            mem.naive_bytes += size
            donor = next((ins[i] for o, i in unit.inplace if o == k and i < len(ins) and
                          ins[i] in dying and mem.block_bytes[mem.block_of[ins[i]]] >= size),
                         None)
            if donor is not None:  # in place: the output takes over its dying input's block
                mem.block_of[slot] = mem.block_of[donor]
                dying.remove(donor)
                continue
            mem.block_of[slot] = free.take(size)
        for s in dying:
            free.release(mem.block_of[s])
        for slot in unit.outs:  # outputs nobody reads die at once
            if last.get(slot) == pos and slot not in dying and slot not in persistent:
                free.release(mem.block_of[slot])
    mem.planned_bytes = sum(mem.block_bytes)
    return mem


class _FreeBlocks:
    """Free storage blocks ordered by (size, release order): best fit is a bisection.

    ``take(size)``: the smallest free block that fits (the earliest released among equal
    sizes); else the largest free block, grown to ``size``; else a new block.
    """

    def __init__(self, mem: MemoryPlan):
        self.mem, self.order, self.count = mem, [], 0

    def release(self, block: int) -> None:
        self.count += 1
        bisect.insort(self.order, (self.mem.block_bytes[block], self.count, block))

    def take(self, size: int) -> int:
        mem, order = self.mem, self.order
        at = bisect.bisect_left(order, (size, 0, 0))
        if at == len(order) and order:  # nothing fits: grow the largest (earliest released)
            at = bisect.bisect_left(order, (order[-1][0], 0, 0))
            block = order.pop(at)[2]
            mem.block_bytes[block] = size
            return block
        if at < len(order):
            return order.pop(at)[2]
        mem.block_bytes.append(size)
        return len(mem.block_bytes) - 1


def bind_outputs(plan: Plan, targets: dict[int, torch.Tensor]) -> set[int]:
    """Make backward steps write the given slots straight into the given tensors.

    A step qualifies when it runs the torch reference, has a single output, its op's
    ``prepare`` accepts ``out`` and the target matches the slot's shape and dtype. Returns
    the slots placed this way.
    """
    placed: set[int] = set()
    for i, step in enumerate(plan.backward):
        fn, p, ins, aux, outs, frees, node = step
        out = targets.get(outs[0]) if len(outs) == 1 else None
        # only reference steps: a Triton step keeps its kernel
        if out is None or node.op is None or node.op.prepare is None or \
                not plan.impl.get(node.name, "").startswith("torch:"):
            continue
        if tuple(out.shape) != plan.shapes[outs[0]] or \
                out.dtype != NAME_TO_TORCH[plan.dtypes[outs[0]]]:
            continue
        into = node.op.prepare(p, [plan.shapes[s] for s in ins + aux], [plan.shapes[outs[0]]],
                               out)
        if into is None:
            continue
        plan.backward[i] = (into, p, ins, aux, outs, tuple(f for f in frees if f != outs[0]),
                            node)
        placed.add(outs[0])
    return placed
