"""The bind-time pipeline: ``build_plan`` runs the passes of ``PASSES`` in order, each a
function from one typed stage to the next, and returns the :class:`Plan` the executor runs.

    BindRequest
      -> expand_composites  composite ops replaced by registered primitives   (composite.py)
      -> apply_rewrites     rewrites declared by ops, e.g. pick(log_softmax)  (rewrite.py)
      -> eliminate_common   common subexpression elimination                  (cse.py)
      -> check_plannable    ops whose output shapes need values are refused
    GraphStage
      -> differentiate      backward nodes for the variables that need grads  (autodiff.py)
    Differentiated
      -> infer_entries      shape and dtype of every entry                    (symbol/infer.py)
    Typed
      -> infer_storage      storage type of every entry (row_sparse, csr)     (storage.py)
    Typed
      -> lay_out            views alias their inputs; forward/backward order  (layout.py)
    Laid
      -> lower              a launch unit per node or fused chain             (lowering.py)
    Lowered
      -> schedule           step lists with the slots each step frees, memory (schedule.py,
    Plan                                                                         memory.py)

Every stage prints a summary (``str``); ``build_plan(..., trace=fn)`` hands each pass's name
and result to ``fn`` (``Executor.debug_str(show_passes=True)`` prints them), and each pass can
be called alone on the previous stage.
"""
from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from .. import config
from ..base import NAME_TO_TORCH, ShapeError
from ..ops.base import known
from ..symbol.graph import Entry, IndexedGraph
from ..symbol.infer import DTYPE, SHAPE, infer, infer_shapes, infer_types
from . import composite, cse, rewrite, storage
from .autodiff import Gradients, build_gradients
from .layout import Layout
from .lowering import Unit, uses_triton
from .memory import MemoryPlan, plan_memory
from .schedule import LowerContext, Step, last_uses, steps, units
from .storage import StoragePlan


@dataclass
class BindRequest:
    """What a bind asks for: heads, the variables' shapes and dtypes, the variables that
    need gradients, the device; ``fwd`` = ``(IndexedGraph(heads), shapes, dtypes)`` when
    the caller inferred them already."""

    heads: list[Entry]
    shapes: dict[str, tuple]
    dtypes: dict[str, str]
    wrt: list[str]
    device: torch.device
    fwd: tuple | None = None
    stypes: dict[str, str] = field(default_factory=dict)  # sparse variables' storage types

    def __str__(self) -> str:
        return (f"{len(self.heads)} heads, {len(self.shapes)} input shapes, gradients for "
                f"{self.wrt}, device {self.device}")


@dataclass
class GraphStage:
    """The forward graph after the graph-level passes; ``values`` = its inferred (shapes,
    dtypes) while no pass has changed it."""

    request: BindRequest
    heads: list[Entry]
    values: tuple[list, list] | None = None
    graph: IndexedGraph | None = None

    def __post_init__(self):
        if self.graph is None:
            self.graph = IndexedGraph(self.heads)

    def changed(self, heads: list[Entry]) -> GraphStage:
        """This stage, or a new one (to be inferred again) when a pass made new heads."""
        return self if heads is self.heads else GraphStage(self.request, heads)

    def inferred(self) -> tuple | None:
        """``(graph, shapes, dtypes)`` while the forward graph's inference still holds."""
        return (self.graph, *self.values) if self.values is not None else None

    def __str__(self) -> str:
        ops = [n for n in self.graph.nodes if n.op is not None]
        return f"{len(ops)} op nodes, {len(self.graph.variable_ids)} variables"


@dataclass
class Differentiated:
    """Forward and backward nodes in one graph (heads first, then the gradients)."""

    stage: GraphStage
    graph: IndexedGraph
    grads: Gradients

    def __str__(self) -> str:
        n_fwd = len(self.stage.graph.nodes)
        return (f"{len(self.graph.nodes) - n_fwd} backward nodes for "
                f"{sum(g is not None for g in self.grads.grads.values())} gradients")


@dataclass
class Typed:
    """Every entry's shape and dtype (slot = entry id of the combined graph)."""

    diff: Differentiated
    shapes: list[tuple]
    dtypes: list[str]
    storage: StoragePlan = field(default_factory=StoragePlan)

    def __str__(self) -> str:
        g = self.diff.graph
        return "\n".join(f"  {n.name}: " + ", ".join(
            f"{'x'.join(map(str, self.shapes[g.row_ptr[i] + k])) or 'scalar'} "
            f"{self.dtypes[g.row_ptr[i] + k]}" for k in range(n.num_outputs))
            for i, n in enumerate(g.nodes))


@dataclass
class Laid:
    """Slots after view aliasing, the forward and backward node orders, and the slots the
    plan must keep."""

    typed: Typed
    layout: Layout
    forward: list[int]
    backward: list[int]
    head_slots: list[int]
    grad_slot: dict[str, int | None]
    persistent: set[int]

    def __str__(self) -> str:
        return (f"{len(self.forward)} forward + {len(self.backward)} backward launches, "
                f"{len(self.layout.alias)} views aliased")


@dataclass
class Lowered:
    """Launch units (single nodes, fused chains, GEMM epilogues) per step list."""

    laid: Laid
    forward: list[Unit]
    backward: list[Unit]
    keep_forward: set[int]

    def __str__(self) -> str:
        return "\n".join(f"  {u.node.name}: {u.label}" for u in self.forward + self.backward)


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
    storage: StoragePlan = field(default_factory=StoragePlan)  # the sparse slots

    def __str__(self) -> str:
        return (f"{len(self.forward_train)} forward, {len(self.backward)} backward steps; "
                f"memory {self.memory}")


# ---------------------------------------------------------------- graph-level passes

def expand_composites(stage: GraphStage) -> GraphStage:
    """Composite ops (always: they have no kernel of their own) become primitives."""
    return stage.changed(composite.expand(stage.heads))


def apply_rewrites(stage: GraphStage) -> GraphStage:
    """The rewrites ops declare (``config.graph_rewrites``)."""
    if not config.get().graph_rewrites:
        return stage
    req = stage.request
    return stage.changed(rewrite.apply(stage.heads, req.shapes, req.dtypes, stage.inferred()))


def eliminate_common(stage: GraphStage) -> GraphStage:
    """Merge equal nodes (``MXNET_ELIMINATE_COMMON_EXPR``, on by default as in MXNet)."""
    if not config.env("MXNET_ELIMINATE_COMMON_EXPR"):
        return stage
    return stage.changed(cse.eliminate(stage.heads))


def check_plannable(stage: GraphStage) -> GraphStage:
    """Refuse ops whose output shapes depend on input values (a plan fixes every shape)."""
    for node in stage.graph.nodes:
        if node.op is not None and node.op.special.eager is not None:
            raise ShapeError(f"Error in {node.where}: the output shape of {node.op.name} "
                             "depends on its input values, which a bound graph cannot plan; "
                             "call it imperatively (mx.nd) instead")
    return stage


# ---------------------------------------------------------------- differentiate, infer

def differentiate(stage: GraphStage) -> Differentiated:
    """The combined graph: the heads plus the gradient nodes of the requested variables."""
    fwd = stage.graph
    by_name = {fwd.nodes[i].name: i for i in fwd.variable_ids}
    wrt_ids = [by_name[n] for n in stage.request.wrt]
    grads = build_gradients(fwd, wrt_ids) if wrt_ids else Gradients([], {})
    extra = [e for e in grads.grads.values() if e is not None]
    return Differentiated(stage, IndexedGraph(list(stage.heads) + extra), grads)


def infer_entries(diff: Differentiated) -> Typed:
    """Shapes and dtypes of every entry (head gradients like their heads); the forward
    nodes' values are reused when the forward graph was inferred already."""
    stage, graph, req = diff.stage, diff.graph, diff.stage.request
    fwd = stage.graph
    fwd_shapes, fwd_types = stage.values or _infer_forward(fwd, req)
    heads = fwd.heads
    shapes = infer(SHAPE, graph,
                   _initial(diff, req.shapes, [fwd_shapes[fwd.entry_id(h)] for h in heads]),
                   _settled(SHAPE, graph, fwd, fwd_shapes))
    dtypes = infer(DTYPE, graph,
                   _initial(diff, req.dtypes, [fwd_types[fwd.entry_id(h)] for h in heads]),
                   _settled(DTYPE, graph, fwd, fwd_types))
    for nid, node in enumerate(graph.nodes):
        for k in range(node.num_outputs):
            slot = graph.row_ptr[nid] + k
            if (not known(shapes[slot]) and not _empty_by_rule(graph, nid, k, shapes)) \
                    or dtypes[slot] is None:
                raise ShapeError(f"Error in {node.where}: cannot infer the shape/dtype of output "
                                 f"{k} (got shape {shapes[slot]}, dtype {dtypes[slot]}); "
                                 "give every input's shape at bind")
    return Typed(diff, shapes, dtypes)


def _empty_by_rule(graph: IndexedGraph, nid: int, k: int, shapes: list) -> bool:
    """Output ``k`` of node ``nid`` has a 0 dim that its op's rule gives from fully known
    inputs (an empty split_v2 section): a real empty array. MXNet reads a 0 as unknown only
    in shapes given at its API; inference treats it so, and this tells the two apart."""
    node, shape = graph.nodes[nid], shapes[graph.row_ptr[nid] + k]
    ins = [shapes[e] for e in graph.input_entries(nid)]
    if node.op is None or not shape or not all(known(s) for s in ins):
        return False
    got = SHAPE.rule(node)(node.params, ins)
    return got is not None and k < len(got[1]) and tuple(got[1][k]) == tuple(shape)


def infer_storage(typed: Typed) -> Typed:
    """Storage types of every entry from the variables' (``BindRequest.stypes``) and the ops'
    storage rules; a dense fallback that would densify more than the limit fails here."""
    req = typed.diff.stage.request
    typed.storage = storage.infer(typed.diff.graph, req.stypes, typed.shapes)
    return typed


def _infer_forward(fwd: IndexedGraph, req: BindRequest) -> tuple[list, list]:
    names = [(i, fwd.nodes[i].name) for i in fwd.variable_ids]
    return (infer_shapes(fwd, {i: req.shapes[n] for i, n in names if n in req.shapes}),
            infer_types(fwd, {i: req.dtypes[n] for i, n in names if n in req.dtypes}))


def _initial(diff: Differentiated, given: dict[str, object], head_vals: list) -> dict:
    """Initial values of the combined graph: the given variables, head gradients as heads."""
    graph = diff.graph
    initial = {nid: given[graph.nodes[nid].name] for nid in graph.variable_ids
               if graph.nodes[nid].name in given}
    for hg, value in zip(diff.grads.head_grads, head_vals):
        if hg is not None and id(hg) in graph.node_id:
            initial[graph.node_id[id(hg)]] = value
    return initial


def _settled(kind, graph: IndexedGraph, fwd: IndexedGraph, fwd_values: list) -> dict:
    """The forward nodes' outputs in the combined graph, when forward inference knew every
    entry: the same rules on the same inputs, so the combined pass need not rerun them."""
    if not all(kind.is_known(v) for v in fwd_values):
        return {}
    row = fwd.row_ptr
    return {graph.node_id[id(node)]: fwd_values[row[i]:row[i + 1]]
            for i, node in enumerate(fwd.nodes) if node.op is not None}


# ---------------------------------------------------------------- layout, lowering, schedule

def lay_out(typed: Typed) -> Laid:
    """Alias views, split the launches into forward and backward, name the kept slots."""
    graph, stage = typed.diff.graph, typed.diff.stage
    layout = Layout(graph, [i for i, n in enumerate(graph.nodes) if n.op is not None],
                    typed.shapes, typed.dtypes, typed.storage.slots)
    fwd_ids = {graph.node_id[id(n)] for n in stage.graph.nodes}
    fwd = stage.graph
    grad_slot = {fwd.nodes[nid].name: (layout.resolve(graph.entry_id(e)) if e is not None
                                       else None) for nid, e in typed.diff.grads.grads.items()}
    return Laid(typed, layout,
                forward=[i for i in layout.order if i in fwd_ids],
                backward=[i for i in layout.order if i not in fwd_ids],
                head_slots=[layout.resolve(graph.entry_id(h)) for h in stage.heads],
                grad_slot=grad_slot,
                persistent={graph.row_ptr[i] for i in graph.variable_ids})


def lower(laid: Laid) -> Lowered:
    """A launch unit per node, fused chain or GEMM epilogue, for each step list."""
    typed = laid.typed
    if uses_triton(typed.diff.stage.request.device):  # generated kernels go to cache_dir
        config.point_kernel_caches_at_cache_dir()
    keep_forward = laid.persistent | set(laid.head_slots)
    ctx = LowerContext(
        device=typed.diff.stage.request.device, shapes=typed.shapes, dtypes=typed.dtypes,
        users=laid.layout.users(),
        position={nid: i for i, nid in enumerate(laid.forward + laid.backward)},
        keep=keep_forward | {s for s in laid.grad_slot.values() if s is not None},
        sparse_nodes=typed.storage.nodes)
    return Lowered(laid, units(laid.layout, laid.forward, ctx),
                   units(laid.layout, laid.backward, ctx), keep_forward)


def schedule(lowered: Lowered) -> Plan:
    """The three step lists (training forward, inference forward, backward) with the slots
    each step frees, and the memory plan over the training lifetimes."""
    laid = lowered.laid
    typed, graph = laid.typed, laid.typed.diff.graph
    f_units, b_units, keep_fwd = lowered.forward, lowered.backward, lowered.keep_forward
    impl: dict[str, str] = {}
    train_last = last_uses(f_units + b_units)
    grads = {s for s in laid.grad_slot.values() if s is not None}
    keep_bwd = laid.persistent | {s for u in f_units for s in u.outs} | grads
    shift = {s: p - len(f_units) for s, p in train_last.items()}
    head_grads = typed.diff.grads.head_grads
    return Plan(
        graph=graph, shapes=typed.shapes, dtypes=typed.dtypes,
        var_slot={graph.nodes[i].name: graph.row_ptr[i] for i in graph.variable_ids},
        head_slots=laid.head_slots,
        head_grad_slots=[graph.row_ptr[graph.node_id[id(h)]] if h is not None and
                         id(h) in graph.node_id else None for h in head_grads],
        grad_slot=laid.grad_slot,
        forward_train=steps(f_units, keep_fwd, train_last, impl),
        forward_infer=steps(f_units, keep_fwd, last_uses(f_units), impl),
        backward=steps(b_units, keep_bwd, shift, impl),
        memory=plan_memory(f_units + b_units, typed.shapes, typed.dtypes,
                           keep_fwd | set(typed.storage.slots)),
        impl=impl, alias=laid.layout.alias, storage=typed.storage)


PASSES: tuple[Callable, ...] = (
    expand_composites, apply_rewrites, eliminate_common, check_plannable,  # GraphStage
    differentiate,  # -> Differentiated
    infer_entries,  # -> Typed
    infer_storage,  # -> Typed (storage types filled in)
    lay_out,  # -> Laid
    lower,  # -> Lowered
    schedule,  # -> Plan
)


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
               wrt: list[str], device: torch.device, fwd=None,
               trace: Callable[[str, object], None] | None = None,
               stypes: dict[str, str] | None = None) -> Plan:
    """Run ``PASSES`` on ``heads`` with gradients for the variables named in ``wrt``.

    ``fwd``: ``(IndexedGraph(heads), its shapes, its dtypes)`` when the caller inferred them.
    ``trace(pass name, result)`` sees every stage. ``stypes``: the storage types of the
    variables that are not dense.
    """
    request = BindRequest(list(heads), shapes_in, dtypes_in, list(wrt), device, fwd,
                          dict(stypes or {}))
    state = GraphStage(request, request.heads, fwd[1:] if fwd is not None else None,
                       fwd[0] if fwd is not None else None)
    for run in PASSES:
        state = run(state)
        if trace is not None:
            trace(run.__name__, state)
    return state


def bind_outputs(plan: Plan, targets: dict[int, torch.Tensor]) -> set[int]:
    """Make backward steps write the given slots straight into the given tensors.

    A step qualifies when it runs the torch reference, has a single output, its op's
    ``prepare`` accepts ``out`` and the target matches the slot's shape and dtype. Returns
    the slots placed this way.
    """
    placed: set[int] = set()
    for i, step in enumerate(plan.backward):
        out = targets.get(step.outs[0]) if len(step.outs) == 1 else None
        node = step.node
        # only reference steps: a Triton step keeps its kernel
        if out is None or node.op is None or node.op.prepare is None or \
                not plan.impl.get(node.name, "").startswith("torch:"):
            continue
        slot = step.outs[0]
        if tuple(out.shape) != plan.shapes[slot] or out.dtype != NAME_TO_TORCH[plan.dtypes[slot]]:
            continue
        into = node.op.prepare(step.params, [plan.shapes[s] for s in step.ins + step.aux],
                               [plan.shapes[slot]], out)
        if into is None:
            continue
        plan.backward[i] = step._replace(fn=into, frees=tuple(f for f in step.frees if f != slot))
        placed.add(slot)
    return placed
