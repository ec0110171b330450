"""Lowering to kernels: which implementation each node runs, and elementwise fusion.

A node runs its op's Triton kernel when the backend asks for Triton on its device
(``config.backend`` 'triton', or 'auto' on CUDA), else its torch reference; under 'auto' an
op with ``hints.measured`` (convolutions) keeps whichever of the two its first call timed
faster. Elementwise
ops carry a Triton expression (``OpDef.expr``); with Triton enabled, chains of them fuse
into one generated kernel (``symgraph.kernels.elementwise``): a node joins the chain of an input's
producer when the output shapes and dtypes agree and no value the chain makes is needed
before the chain runs. Intermediate values of a chain never reach memory.
"""
from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from .. import config
from ..attrs import Params
from ..base import NAME_TO_TORCH, DeferredError
from ..sparse import dispatch
from ..symbol.graph import IndexedGraph, Node

_FLOATS = ("float16", "bfloat16", "float32", "float64")


def uses_triton(device: torch.device) -> bool:
    """Whether nodes on ``device`` run Triton kernels under the current backend."""
    backend = config.get().backend
    return backend == "triton" or (backend == "auto" and device.type == "cuda")


@dataclass
class Unit:
    """One launch of the plan: a single node, or a fused chain of elementwise nodes."""

    nodes: list[int]
    ins: list[int]
    aux: list[int]
    outs: list[int]
    fn: Callable
    params: object
    label: str
    node: object  # the Node, or a FusedNode for a chain
    inplace: tuple = ()


@dataclass
class FusedNode:
    """Stands in for the nodes of a fused chain (in debug_str and monitor callbacks)."""

    name: str
    members: list[Node]
    source: str
    expression: str
    out_names: list[str] = field(default_factory=list)
    op: None = None

    def output_name(self, k: int) -> str:
        return self.out_names[k]


def node_template(node: Node) -> str | None:
    """The node's Triton expression with its parameters filled in ({0}, {1} stay)."""
    tpl = node.op.triton_expr(node.params)
    if tpl is None:
        return None
    n = len(node.inputs)
    return tpl.format(*[f"{{{i}}}" for i in range(n)], **{k: repr(v) for k, v in
                                                          node.params.items()})


def used_inputs(template: str, n: int) -> list[int]:
    """Indices of the inputs a template reads (a loss head's label often is not)."""
    return [i for i in range(n) if f"{{{i}}}" in template]


def _broadcasts_to(shape: tuple, out: tuple) -> bool:
    if len(shape) > len(out):
        return False
    return all(d in (1, o) for d, o in zip(shape[::-1], out[::-1]))


def _fusible(graph: IndexedGraph, nid: int, shapes, dtypes) -> bool:
    node = graph.nodes[nid]
    out = graph.row_ptr[nid]
    if node.op.expr is None or node.num_outputs != 1 or dtypes[out] not in _FLOATS:
        return False
    template = node_template(node)
    if template is None:
        return False
    ins = graph.input_entries(nid)
    used = [ins[i] for i in used_inputs(template, len(ins))]
    return all(dtypes[s] == dtypes[out] and _broadcasts_to(shapes[s], shapes[out])
               for s in used)


class _Grouper:
    """Greedy vertical fusion over one step list (forward or backward)."""

    def __init__(self, layout, order: list[int], shapes, dtypes, users, position):
        self.layout, self.shapes, self.dtypes = layout, shapes, dtypes
        self.users, self.position = users, position
        self.group_of: dict[int, int] = {}  # node id -> index of its group
        self.groups: list[list[int]] = []
        for nid in order:
            self._place(nid)

    def _place(self, nid: int) -> None:
        graph = self.layout.graph
        if not _fusible(graph, nid, self.shapes, self.dtypes):
            self.groups.append([nid])
            return
        out = graph.row_ptr[nid]
        for slot in self.layout.ins[nid]:
            producer = self.layout.producer.get(slot)
            g = self.group_of.get(producer)
            if g is not None and self._can_join(g, nid, out):
                self.groups[g].append(nid)
                self.group_of[nid] = g
                return
        self.group_of[nid] = len(self.groups)
        self.groups.append([nid])

    def _can_join(self, g: int, nid: int, out: int) -> bool:
        graph, members = self.layout.graph, self.groups[g]
        first = graph.row_ptr[members[0]]
        if self.shapes[first] != self.shapes[out] or self.dtypes[first] != self.dtypes[out]:
            return False
        if not _fusible(graph, members[0], self.shapes, self.dtypes):
            return False
        here = self.position[nid]
        inside = set(members) | {nid}
        for m in members:  # the chain runs at nid's place: no outside user may come earlier
            for user in self.users.get(graph.row_ptr[m], ()):
                if user not in inside and self.position[user] < here:
                    return False
        return True


def group(layout, order: list[int], shapes, dtypes, users, position) -> list[list[int]]:
    """Fusion groups covering ``order``, each run where its last member stands."""
    groups = _Grouper(layout, order, shapes, dtypes, users, position).groups
    return sorted(groups, key=lambda g: position[g[-1]])


def fused_unit(layout, members: list[int], shapes, dtypes, users, keep: set[int]) -> Unit:
    """One generated kernel evaluating a chain; outputs are the values needed outside it."""
    from ..kernels.elementwise import Program, source_for
    graph = layout.graph
    member_set = set(members)
    names: dict[int, str] = {}
    ext: list[int] = []
    body = []
    for i, nid in enumerate(members):
        template = node_template(graph.nodes[nid])
        ops = []
        for slot in layout.ins[nid]:
            if slot not in names:
                names[slot] = f"x{len(ext)}"
                ext.append(slot)
            ops.append(names[slot])
        body.append((template, tuple(ops)))
        names[graph.row_ptr[nid]] = f"t{i}"
    outs = [graph.row_ptr[m] for m in members
            if graph.row_ptr[m] in keep or m == members[-1] or
            any(u not in member_set for u in users.get(graph.row_ptr[m], ()))]
    prog = Program(len(ext), tuple(body), tuple(names[s] for s in outs))
    shape, dtype = shapes[outs[-1]], NAME_TO_TORCH[dtypes[outs[-1]]]
    acc = "tl.float64" if dtype == torch.float64 else "tl.float32"
    kname, source = source_for(prog, len(shape), (True,) * len(ext), acc)
    nodes = [graph.nodes[m] for m in members]
    fused = FusedNode("+".join(n.name for n in nodes), nodes, source, prog.expression(),
                      [graph.nodes[layout.producer[s]].output_name(0) for s in outs])
    fallback = _chain_reference(graph, members, ext, outs, layout)
    return Unit(list(members), ext, [], outs, _launcher(prog, shape, dtype, fallback), None,
                f"fused:{kname} ({len(members)} ops)", fused)


def _launcher(prog, shape: tuple, dtype: torch.dtype, fallback: Callable) -> Callable:
    from ..kernels.elementwise import run

    def launch(p, ins, aux, rt):
        return run(prog, ins, shape, dtype)
    return guarded(launch, fallback, prog.expression())


def guarded(kernel: Callable, fallback: Callable, what: str) -> Callable:
    """A step that falls back to the torch reference, with a warning, if the kernel fails to
    compile or launch (checked on the first call; later calls pay nothing extra)."""
    state = {"fn": None}

    def first(p, ins, aux, rt):
        if state["fn"] is not None:
            return state["fn"](p, ins, aux, rt)
        gen = getattr(rt, "generator", None)
        drawn = gen.get_state() if gen is not None else None
        try:
            out = kernel(p, ins, aux, rt)
            state["fn"] = kernel
        except DeferredError:  # an error in the values (not positive definite...), not the kernel's
            state["fn"] = kernel
            raise
        except Exception as err:  # any compiler/launcher failure falls back
            cause = err.__cause__ or err.__context__
            why = f"{type(err).__name__}: {err}" + \
                (f" <- {type(cause).__name__}: {cause}" if cause is not None else "")
            warnings.warn(f"Triton kernel for {what} failed ({why}); "
                          "using the torch reference instead", RuntimeWarning, stacklevel=2)
            if drawn is not None:  # the reference draws the random numbers the kernel drew
                gen.set_state(drawn)
            state["fn"] = fallback
            out = fallback(p, ins, aux, rt)
        return out
    first.__name__ = getattr(kernel, "__name__", "kernel")
    return first


def time_call(call: Callable[[], object], device: torch.device, reps: int = 3) -> float:
    """Median seconds of ``call()`` over ``reps`` runs (CUDA events on a GPU)."""
    times = []
    for _ in range(reps):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                enable_timing=True)
            start.record()
            call()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def measured(kernel: Callable, reference: Callable) -> Callable:
    """A step of an op with ``hints.measured`` under backend 'auto': its first call runs and
    times the Triton kernel and the torch reference (cuDNN for convolutions) on the real
    inputs, keeps the faster for every later call, and records the choice in ``chosen``
    (``debug_str`` shows it)."""
    state: dict = {"fn": None}

    def first(p, ins, aux, rt):
        if state["fn"] is not None:
            return state["fn"](p, ins, aux, rt)
        device = ins[0].device if ins else torch.device("cpu")
        times = {}
        for name, fn in (("triton", kernel), ("torch", reference)):
            fn(p, ins, aux, rt)  # compiles, autotunes
            times[name] = time_call(lambda fn=fn: fn(p, ins, aux, rt), device)
        pick = min(times, key=times.get)
        state["fn"] = kernel if pick == "triton" else reference
        first.chosen = (f"{pick} ({times['triton'] * 1e3:.3f} ms triton, "
                        f"{times['torch'] * 1e3:.3f} ms torch)")
        return state["fn"](p, ins, aux, rt)
    first.chosen = None
    first.__name__ = getattr(kernel, "__name__", "measured")
    return first


def _chain_reference(graph: IndexedGraph, members: list[int], ext: list[int],
                     outs: list[int], layout) -> Callable:
    """Run a fused chain's member ops one by one with their torch references."""
    def reference(p, ins, aux, rt):
        values = dict(zip(ext, ins))
        for nid in members:
            node = graph.nodes[nid]
            args = [values.get(s) for s in layout.ins[nid]]
            values[graph.row_ptr[nid]] = node.op.forward(node.params, args, [], rt)[0]
        return tuple(values[s] for s in outs)
    return reference


def _params_for(node: Node, outs: list[int], read: Callable[[int], bool] | None, shapes):
    """The node's params, telling an op that can skip them which outputs nobody reads, and
    an op that asks for it its inferred output shape."""
    extra = {}
    if node.op.hints.reads_out_shape:
        extra["_out_shape"] = tuple(shapes[outs[0]])
    if read is not None and node.op.hints.skips_unused_outputs:
        needed = tuple(read(s) for s in outs)
        if not all(needed):
            extra["_needed"] = needed
    if not extra:
        return node.params
    return Params({**node.params, **extra})


# (op name, id(params), input shapes, output shapes) -> (params, prepared forward or None):
# prepared forwards hold no per-node state, so the steps of an unrolled network, and
# buckets, share them (fewer closures to build and for the garbage collector to track)
_PREPARED: dict[tuple, tuple] = {}
_MAX_PREPARED = 1 << 14


def _prepared(op, params, in_shapes: tuple, out_shapes: tuple):
    key = (op.name, id(params), in_shapes, out_shapes)
    hit = _PREPARED.get(key)
    if hit is None or hit[0] is not params:
        if len(_PREPARED) >= _MAX_PREPARED:
            _PREPARED.clear()
        hit = _PREPARED[key] = (params, op.prepare(params, list(in_shapes), list(out_shapes)))
    return hit[1]


def _slots(layout, nid: int) -> tuple:
    """(node, input slots (regular then aux), number of regular inputs, output slots)."""
    graph = layout.graph
    node = graph.nodes[nid]
    return (node, layout.ins[nid], node.num_regular_inputs(),
            list(range(graph.row_ptr[nid], graph.row_ptr[nid + 1])))


def single_unit(layout, nid: int, device: torch.device, shapes, dtypes,
                read: Callable[[int], bool] | None = None) -> Unit:
    """A unit for one node: its Triton kernel, a generated kernel, or its torch reference.

    ``read(slot)`` says whether anything reads an output (ops may then skip the others).
    """
    graph = layout.graph
    node, ins, n_reg, outs = _slots(layout, nid)
    op = node.op
    params = _params_for(node, outs, read, shapes)
    fn, label = op.forward, f"torch:{op.name}"
    if op.hints.view:  # a reshape: metadata only, no kernel launch on any backend
        fn, label = op.forward, f"view:{op.name}"
    elif uses_triton(device):
        if op.kernel is not None:
            fn = guarded(op.kernel, op.forward, f"{op.name} ({node.name})")
            label = f"triton:{getattr(op.kernel, '__name__', op.name)}"
            if op.hints.measured and config.get().backend == "auto":
                fn, label = measured(fn, op.forward), f"auto:{label[7:]}|torch"
        elif _fusible(graph, nid, shapes, dtypes):
            return fused_unit(layout, [nid], shapes, dtypes, {}, set())
    elif op.prepare is not None:
        fn = _prepared(op, params, tuple([shapes[s] for s in ins]),
                       tuple([shapes[s] for s in outs])) or fn
    return Unit([nid], ins[:n_reg], ins[n_reg:], outs, fn, params, label, node, op.hints.inplace)


def storage_unit(layout, nid: int, shapes, read: Callable[[int], bool] | None = None) -> Unit:
    """A unit for a node that touches sparse values: its sparse kernel or, where it has
    none for these storage types, its dense forward on dense copies (storage dispatch)."""
    node, ins, n_reg, outs = _slots(layout, nid)
    op = node.op
    where = f"operator {node.name} ({op.name})"

    def run(p, ins_v, aux_v, rt):
        return dispatch.run(op, p, [*ins_v, *aux_v], len(ins_v), rt, where)
    return Unit([nid], ins[:n_reg], ins[n_reg:], outs, run, _params_for(node, outs, read, shapes),
                f"sparse:{op.name}", node)


def epilogue_pairs(layout, order: list[int], users, keep: set[int]) -> dict[int, int]:
    """``{activation node: producer node}`` where an activation folds into the epilogue of the
    op computing its input (the producer's value is read by nothing else and kept nowhere)."""
    graph = layout.graph
    in_order = set(order)
    pairs: dict[int, int] = {}
    for nid in order:
        node = graph.nodes[nid]
        act = node.op.activation_name(node.params)
        if act is None:
            continue
        src = layout.ins[nid][0]
        prod = layout.producer.get(src)
        if prod is None or prod not in in_order or users.get(src) != [nid] or src in keep:
            continue
        pnode = graph.nodes[prod]
        if pnode.op.hints.epilogue is None or pnode.num_outputs != 1:
            continue
        if pnode.op.hints.epilogue(pnode.params, act) is not None:
            pairs[nid] = prod
    return pairs


def epilogue_unit(layout, act_nid: int, prod: int) -> Unit:
    """The producer and its activation as one launch writing the activation's output."""
    graph = layout.graph
    pnode, anode = graph.nodes[prod], graph.nodes[act_nid]
    act = anode.op.activation_name(anode.params)
    kernel_fn = pnode.op.hints.epilogue(pnode.params, act)

    def reference(p, ins, aux, rt):
        mid = pnode.op.forward(pnode.params, ins, aux, rt)
        return anode.op.forward(anode.params, [mid[0]], [], rt)
    n_reg = pnode.num_regular_inputs()
    ins = layout.ins[prod]
    fn, label = guarded(kernel_fn, reference, f"{pnode.name}+{anode.name}"), \
        f"triton:{kernel_fn.__name__}"
    if pnode.op.hints.measured and config.get().backend == "auto":
        fn, label = measured(fn, reference), f"auto:{kernel_fn.__name__}|torch"
    return Unit([prod, act_nid], ins[:n_reg], ins[n_reg:], [graph.row_ptr[act_nid]], fn,
                pnode.params, label, _Pair(f"{pnode.name}+{anode.name}", pnode, anode))


@dataclass
class _Pair:
    """Stands in for a producer + activation launch in debug_str and monitors."""

    name: str
    producer: Node
    act: Node
    op: None = None

    def output_name(self, k: int) -> str:
        return self.act.output_name(k)
